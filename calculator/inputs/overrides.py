"""Typed override values and dotted keys: the native ``--set`` / ``overrides`` channel of the input layer."""

from __future__ import annotations

from typing import Any

from calculator.errors import InputError
from calculator.inputs.presets import read_yaml_text


def parse_value(text: str) -> Any:
    """A ``--set`` / override value as YAML scalar: 8 -> int, true -> bool, null -> None, 1e-6 -> float.
    Text that is not valid YAML, or is refused by the bounded loader (alias bombs, deep nesting), stays text."""
    try:
        value = read_yaml_text(text, "value")
    except InputError:
        return text
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
