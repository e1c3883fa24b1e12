"""One problem verl would raise (calculator/verl/checks/problem.py): a frozen, typed record whose message ends with
the verl (or engine) source location it quotes, in the form the wheel test looks up."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from calculator import load_scenario
from calculator.verl import checks as C
from calculator.verl.checks import ConfigProblem, check_config
from tests.verl.checks import test_algorithm, test_batch, test_parallel
from tests.verl.checks.cases import patch

SOURCE = re.compile(r"^(verl|vllm|sglang|megatron)/[\w/]+\.py:[\w.]+")


def test_problem_is_frozen_and_typed():
    p = ConfigProblem(rule="r", severity="error", message="m [verl/x.py:f]", source="verl/x.py:f")
    with pytest.raises(ValidationError):
        p.severity = "warning"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="severity"):
        ConfigProblem(rule="r", severity="fatal", message="m", source="s")  # type: ignore[arg-type]


def test_every_quoted_source_has_the_looked_up_form():
    sources = [getattr(C, name) for name in dir(C) if name.startswith("SRC_")]
    assert len(sources) == 13
    for src in sources:
        for part in src.split("; "):
            assert SOURCE.match(part), part


def test_messages_end_with_their_source():
    """Over every bad config of the rule tables: each problem found ends with `` [source]``."""
    seen = 0
    for module in (test_algorithm, test_batch, test_parallel):
        for preset, overrides, raw, *_ in module.BAD:
            s = load_scenario(preset, overrides=overrides)
            for key, value in raw.items():
                s = patch(s, key, value)
            for p in check_config(s):
                assert p.message.endswith(f" [{p.source}]"), p.message[-200:]
                seen += 1
    assert seen >= 35
