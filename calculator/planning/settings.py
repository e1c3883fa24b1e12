"""verl settings of a planned configuration: which native fields changed, as verl override keys, and the
cluster shape as ``key=value`` lines for a launch script (``calculator.verl`` owns the key mapping)."""

from __future__ import annotations

from typing import Any

from calculator.inputs.scenario import Scenario
from calculator.verl import native_to_verl_items

Setting = bool | int | float | str | None  # the value of one verl override


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in data.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out |= _flatten(v, key + ".")
        else:
            out[key] = v
    return out


def _native_fields(s: Scenario) -> dict[str, Any]:
    return _flatten(s.model_dump(mode="json", exclude={"name": True, "description": True, "model": {"config"}}))


def native_diff(base: Scenario, changed: Scenario) -> dict[str, Setting]:
    """Native dotted fields whose values differ between two scenarios (new values)."""
    a, b = _native_fields(base), _native_fields(changed)
    return {key: b[key] for key in sorted(b) if a.get(key) != b[key]}


def settings_diff(base: Scenario, changed: Scenario) -> dict[str, Setting]:
    """verl override keys whose values differ between two scenarios. The cluster shape
    (``hardware.*``) is left to :func:`cluster_overrides`; rlplan-only fields have no verl key."""
    out: dict[str, Setting] = {}
    for key, value in native_diff(base, changed).items():
        if key.startswith("hardware."):
            continue
        for verl_key, verl_value in native_to_verl_items(key, value, changed):
            out[verl_key] = verl_value
    return out


def format_verl_value(value: Setting) -> str:
    """A value as Hydra reads it on a command line."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def cluster_overrides(num_gpus: int, gpus_per_node: int) -> dict[str, int]:
    """``hardware.num_gpus`` as verl spells it: GPUs per node x nodes (one partial node below a node)."""
    if num_gpus <= gpus_per_node:
        return {"trainer.n_gpus_per_node": num_gpus, "trainer.nnodes": 1}
    return {"trainer.n_gpus_per_node": gpus_per_node, "trainer.nnodes": num_gpus // gpus_per_node}


def verl_override_lines(settings: dict[str, Setting], num_gpus: int, gpus_per_node: int) -> list[str]:
    """``key=value`` lines for a launch script: the cluster shape, then the settings."""
    items = {**cluster_overrides(num_gpus, gpus_per_node), **settings}
    return [f"{k}={format_verl_value(v)}" for k, v in items.items()]


__all__ = [
    "Setting",
    "cluster_overrides",
    "format_verl_value",
    "native_diff",
    "settings_diff",
    "verl_override_lines",
]
