"""Python API entry: ``load_scenario`` (DESIGN.md 6.3): a preset id, a YAML path, a mapping or a Scenario,
with verl Hydra overrides and native dotted overrides applied, validated into a :class:`Scenario`."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from pydantic import ValidationError

# calculator.verl loads its names on first use: a preset without --set / --verl never imports verl's readers.
from calculator import verl as verl_api
from calculator.errors import InputError, from_validation_error
from calculator.inputs.overrides import set_dotted
from calculator.inputs.presets import get_gpu, read_mapping_file, scenario_presets
from calculator.inputs.scenario import Scenario
from calculator.resolve.architectures import resolve_architectures


def _base_mapping(source: str | Path | dict[str, Any] | Scenario | None) -> dict[str, Any]:
    if source is None:
        return {}
    if isinstance(source, Scenario):
        return source.model_dump(mode="python")
    if isinstance(source, dict):
        return copy.deepcopy(source)
    text = str(source)
    presets = scenario_presets(strict=False)  # a broken team file must not take the others down
    if text in presets:
        return copy.deepcopy(presets[text])
    p = Path(text)
    if p.suffix.lower() in (".yaml", ".yml", ".json") or p.exists():
        return read_mapping_file(p, f"scenario file {p.name}")
    raise InputError(f"scenario: unknown scenario preset or file {text!r} (presets: {', '.join(sorted(presets))})")


def load_scenario_with_warnings(
    source: str | Path | dict[str, Any] | Scenario | None = None,
    overrides: dict[str, Any] | None = None,
    verl_overrides: list[str] | str | None = None,
) -> tuple[Scenario, list[str]]:
    """Build a validated scenario; also return the warnings of the verl import (unknown keys...)."""
    data = _base_mapping(source)
    notes: list[str] = []
    if verl_overrides:
        notes += verl_api.apply_verl_overrides(data, verl_overrides, (overrides or {}).get("verl_version"))
    for key, value in (overrides or {}).items():
        set_dotted(data, key, value)
    try:
        scenario = Scenario(**data)
    except ValidationError as err:
        raise from_validation_error(err) from None
    except TypeError as err:
        raise InputError(f"scenario: {err}") from None
    resolve_architectures(scenario)  # unknown model ids are input errors, reported here
    get_gpu(scenario.hardware.gpu)
    return scenario, notes


def load_scenario(
    source: str | Path | dict[str, Any] | Scenario | None = None,
    overrides: dict[str, Any] | None = None,
    verl_overrides: list[str] | str | None = None,
) -> Scenario:
    """A scenario preset id, a YAML path, a mapping or a Scenario, with native dotted ``overrides`` and
    verl Hydra ``verl_overrides`` applied (verl first, then native). Raises :class:`InputError`."""
    return load_scenario_with_warnings(source, overrides, verl_overrides)[0]
