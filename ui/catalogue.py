"""The presets as the app sees them: read once per server process, shared by every session (pure lookups).

A preset id that comes from the client (a widget, the URL) is only ever looked up here
(``calculator.inputs.presets.scenario_preset``); it is never opened as a file.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import streamlit as st

from calculator import DEFAULT_SCENARIO, Scenario, load_scenario, preset_problems, scenario_preset, scenario_presets
from ui import keys
from ui.fields import scenario_flat

DEFAULT_PRESET = DEFAULT_SCENARIO  # one source: calculator.inputs.presets


# Presets are read once per server process (calculator.inputs.presets caches the files) and these lookups are
# remembered per process, shared by every session. Plain ``functools`` caches, not ``st.cache_data``: that one hashes
# the arguments and unpickles a copy of the value on every call, ~0.25 ms each, and the Estimate page made 13 such
# calls a rerun (a preset name per option of the preset list, the preset's scenario 3 times; issue #18). The values
# are immutable (tuples, str, frozen Scenario), so sharing them is safe. A preset file that cannot be read is left
# out and reported (preset_file_problems). ``clear()`` forgets them all (tests that point RLPLAN_PRESETS_DIR
# elsewhere).


@functools.cache
def preset_ids() -> tuple[str, ...]:
    return tuple(sorted(scenario_presets(strict=False)))


@functools.lru_cache(maxsize=1024)  # called with option ids; bounded all the same
def preset_name(preset_id: str) -> str:
    data = scenario_presets(strict=False).get(preset_id, {})
    return str(data.get("name") or preset_id)


@functools.cache
def preset_file_problems() -> tuple[str, ...]:
    """One message per preset file that was skipped (it names the file); empty when all loaded."""
    return tuple(preset_problems())


@functools.lru_cache(maxsize=256)  # an unknown id raises, and a raise is not remembered
def preset_scenario(preset_id: str) -> Scenario:
    """The validated scenario of a preset (raises InputError for an unknown or broken preset). The id is
    looked up in the catalogue (``scenario_preset``), never opened as a file: it comes from the client."""
    return load_scenario(scenario_preset(preset_id))


@functools.lru_cache(maxsize=256)
def preset_flat(preset_id: str) -> Mapping[str, Any]:
    """The preset's scenario as dotted field paths -> values (``ui.fields.scenario_flat``), read-only: the URL and
    the widget checks compare against it on every rerun (raises as :func:`preset_scenario`)."""
    return MappingProxyType(scenario_flat(preset_scenario(preset_id)))


def clear() -> None:
    """Forget every remembered preset lookup (the calculator's own file cache is ``presets.clear_cache``)."""
    for f in (preset_ids, preset_name, preset_file_problems, preset_scenario, preset_flat):
        f.cache_clear()


def default_preset() -> str:
    ids = preset_ids()
    return DEFAULT_PRESET if DEFAULT_PRESET in ids else (ids[0] if ids else "")


def base_scenario() -> Scenario | None:
    """The preset the inputs started from (the exports say "based on preset X" once the inputs differ)."""
    try:
        return preset_scenario(st.session_state.get(keys.PRESET) or default_preset())
    except Exception:  # an unreadable preset: the exports keep the scenario's own name
        return None
