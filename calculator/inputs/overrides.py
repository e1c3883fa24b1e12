"""Typed override values and dotted keys: the native ``--set`` / ``overrides`` channel of the input layer."""

from __future__ import annotations

import types
import typing
from typing import Any, Literal

from calculator.errors import InputError
from calculator.inputs.presets import read_yaml_text
from calculator.inputs.scenario import Scenario


def _is_text(annotation: Any) -> bool:
    """``str``, a ``Literal`` with a string choice, or a union (``X | None``) holding one."""
    origin = typing.get_origin(annotation)
    if annotation is str:
        return True
    if origin is Literal:
        return any(isinstance(v, str) for v in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return any(_is_text(a) for a in typing.get_args(annotation))
    return False


def _takes_text(key: str | None) -> bool:
    """Whether the scenario field ``key`` holds text (``verl_version``, ``model.path``, a choice)."""
    model: Any = Scenario
    annotation: Any = None
    for part in (key or "").split("."):
        fields = getattr(model, "model_fields", None)
        if not fields or part not in fields:
            return False
        annotation = model = fields[part].annotation
    return _is_text(annotation)


def parse_value(text: str, key: str | None = None) -> Any:
    """A ``--set`` / override value, typed by the field it sets: a text field (``verl_version``, ``model.path``,
    a choice) keeps ``0.6`` as the text "0.6"; otherwise the YAML scalar: 8 -> int, true -> bool, null -> None,
    1e-6 -> float. Text that is not valid YAML, or is refused by the bounded loader, stays text."""
    try:
        value = read_yaml_text(text, "value")
    except InputError:
        return text
    if _takes_text(key) and isinstance(value, str | int | float) and not isinstance(value, bool):
        return value if isinstance(value, str) else text.strip()
    if isinstance(value, str):
        try:
            return float(value) if any(ch in value for ch in ".eE") and value.lower() not in ("e",) else value
        except ValueError:
            return value
    return value


def set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    """Set ``a.b.c`` in a nested dict, creating mappings on the way; a non-mapping on the path is an error."""
    parts = key.split(".")
    node = data
    for i, part in enumerate(parts[:-1]):
        nxt = node.get(part)
        if nxt is None:
            nxt = {}
            node[part] = nxt
        if not isinstance(nxt, dict):
            raise InputError(f"{'.'.join(parts[: i + 1])}: is a value, cannot set {key}")
        node = nxt
    node[parts[-1]] = value
