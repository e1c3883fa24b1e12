"""Typed ``--set`` values and dotted keys (calculator/inputs/overrides.py): YAML scalars with the float forms YAML 1.1
misses, hostile values kept as text within a CPU-time bound, and ``a.b.c`` keys set into nested mappings."""

from __future__ import annotations

import pytest

from calculator.errors import InputError
from calculator.inputs.overrides import parse_value, set_dotted
from tests.support.hostile import BOMB_VALUE
from tests.support.limits import run_cpu_bounded


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("8", 8),
        ("-1", -1),
        ("0.9", 0.9),
        ("1e-6", 1e-6),  # YAML 1.1 reads this as a string (no dot): parse_value makes it a float
        ("1E3", 1000.0),
        ("true", True),
        ("null", None),
        ("", None),
        ("[1, 2]", [1, 2]),
        ("{a: 1}", {"a": 1}),
        ('"8"', "8"),  # quoted: stays a string
        ("abc", "abc"),
        ("fp8", "fp8"),
        ("e", "e"),  # a lone e is not a number
        ("E", "E"),
        ("1.5.3", "1.5.3"),  # looks numeric, is not
        ("qwen2.5-7b", "qwen2.5-7b"),  # a preset id with a dot and an e
        ("a: [unclosed", "a: [unclosed"),  # not valid YAML: the text itself
    ],
)
def test_parse_value_types(text: str, value: object) -> None:
    got = parse_value(text)
    assert got == value and type(got) is type(value)


def test_hostile_values_stay_text() -> None:
    """--set / Hydra values: a YAML bomb or a deep value stays plain text instead of being built."""
    assert parse_value(BOMB_VALUE) == BOMB_VALUE
    deep = "[" * 50_000 + "]" * 50_000
    assert parse_value(deep) == deep


def test_hostile_values_within_a_cpu_bound() -> None:
    """Both hostile values take a few CPU-milliseconds here; building the bomb would need 43 million values."""
    run_cpu_bounded(
        """
        assert parse_value(BOMB_VALUE) == BOMB_VALUE
        assert parse_value("[" * 50_000 + "]" * 50_000).startswith("[[[")
        assert parse_value("8") == 8
        """,
        setup="""
        from calculator.inputs.overrides import parse_value
        from tests.support.hostile import BOMB_VALUE
        """,
        cpu_s=3,
    )


def test_set_dotted_creates_nested_mappings() -> None:
    data: dict = {"a": None, "x": {"y": 1}}
    set_dotted(data, "a.b.c", 1)
    set_dotted(data, "x.z", 2)
    set_dotted(data, "x.y", 3)  # a leaf is overwritten
    set_dotted(data, "top", 4)
    assert data == {"a": {"b": {"c": 1}}, "x": {"y": 3, "z": 2}, "top": 4}


def test_set_dotted_refuses_to_go_through_a_value() -> None:
    data = {"a": {"b": 1}}
    with pytest.raises(InputError, match=r"a\.b: is a value, cannot set a\.b\.c"):
        set_dotted(data, "a.b.c", 2)
    assert data == {"a": {"b": 1}}  # unchanged
