"""The presets as the app sees them: read once per server process, shared by every session (pure lookups).

A preset id that comes from the client (a widget, the URL) is only ever looked up here
(``calculator.inputs.presets.scenario_preset``); it is never opened as a file.
"""

from __future__ import annotations

import streamlit as st

from calculator import DEFAULT_SCENARIO, Scenario, load_scenario, preset_problems, scenario_preset, scenario_presets
from ui import keys

DEFAULT_PRESET = DEFAULT_SCENARIO  # one source: calculator.inputs.presets


# Presets are read once per server process (calculator.inputs.presets caches the files; these caches are shared by
# every session). A preset file that cannot be read is left out and reported (preset_file_problems).


@st.cache_data(show_spinner=False)
def preset_ids() -> list[str]:
    return sorted(scenario_presets(strict=False))


@st.cache_data(show_spinner=False)
def preset_name(preset_id: str) -> str:
    data = scenario_presets(strict=False).get(preset_id, {})
    return str(data.get("name") or preset_id)


@st.cache_data(show_spinner=False)
def preset_file_problems() -> list[str]:
    """One message per preset file that was skipped (it names the file); empty when all loaded."""
    return preset_problems()


@st.cache_data(show_spinner=False)
def preset_scenario(preset_id: str) -> Scenario:
    """The validated scenario of a preset (raises InputError for an unknown or broken preset). The id is
    looked up in the catalogue (``scenario_preset``), never opened as a file: it comes from the client."""
    return load_scenario(scenario_preset(preset_id))


def default_preset() -> str:
    ids = preset_ids()
    return DEFAULT_PRESET if DEFAULT_PRESET in ids else (ids[0] if ids else "")


def base_scenario() -> Scenario | None:
    """The preset the inputs started from (the exports say "based on preset X" once the inputs differ)."""
    try:
        return preset_scenario(st.session_state.get(keys.PRESET) or default_preset())
    except Exception:  # an unreadable preset: the exports keep the scenario's own name
        return None
