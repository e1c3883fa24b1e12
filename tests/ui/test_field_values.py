"""The session's scenario field values (ui/field_values.py): one dict holds every field, a field's widget key
exists only while its widget is drawn, and no value is lost to a closed section or a page switch."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from calculator import load_scenario
from tests.support.app_fields import field_value, field_values
from tests.support.paths import ROOT
from ui import keys
from ui.fields import scenario_flat, widget_fields
from ui.state import DEFAULT_PRESET

APP = str(ROOT / "app.py")


def _run(open_sections: tuple[str, ...] = ()) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for name in open_sections:
        at.session_state[keys.section_key(name)] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _field_keys(at: AppTest) -> set[str]:
    return {k for k in at.session_state.keys() if keys.field_of_key(k) is not None}


def test_the_session_holds_every_field_once_and_a_widget_key_only_for_the_widgets_drawn() -> None:
    at = _run()
    values = field_values(at)
    preset = scenario_flat(load_scenario(DEFAULT_PRESET))
    assert set(values) == set(widget_fields())
    assert all(values[p] == preset[p] for p in values if p in preset)
    drawn = {w.key for kind in (at.number_input, at.selectbox, at.toggle, at.text_input) for w in kind}
    # model.path has its own persisted widget (not a generic field); every other fld: key is a widget on screen
    assert _field_keys(at) - {keys.MODEL_PATH} <= drawn
    # Streamlit's widgets copy the whole session state when drawn (the module docstring): the key count must not
    # grow with the scenario's fields
    assert len(list(at.session_state.keys())) < len(widget_fields()) // 4


def test_a_value_survives_its_section_closing_and_a_page_switch() -> None:
    at = _run(open_sections=("batch",))
    at.number_input(key=keys.GROUP_SIZE).set_value(8).run()
    at.session_state[keys.section_key("batch")] = False
    at.run()
    assert keys.GROUP_SIZE not in _field_keys(at)  # not drawn: Streamlit dropped the widget key
    assert field_value(at, "rollout.n") == 8
    at.number_input(key=keys.NUM_GPUS).set_value(16).run()  # on screen on every page
    # Compare draws no inputs (every field widget key is dropped); the others draw the sidebar under their own
    # element ids, where a widget must show the session's value, not its default.
    for page in ("ui/pages/compare.py", "ui/pages/verl_io.py", "ui/pages/compare.py", "ui/pages/estimate.py"):
        at.switch_page(page).run()
        assert not at.exception, [e.value for e in at.exception]
        if page.endswith("compare.py"):
            assert not _field_keys(at) - {keys.MODEL_PATH}
        else:
            assert at.number_input(key=keys.NUM_GPUS).value == 16, page
        assert field_value(at, "hardware.num_gpus") == 16
        assert field_value(at, "rollout.n") == 8
    at.session_state[keys.section_key("batch")] = True
    at.run()
    assert at.number_input(key=keys.GROUP_SIZE).value == 8


def test_a_forged_value_is_reset_before_it_reaches_the_field_values() -> None:
    at = _run()  # the Lengths and Rollout sections are closed: these keys reach no widget, only the session
    at.session_state[keys.field_key("data.max_response_length")] = "1024; rm -rf /"  # not a number
    at.session_state[keys.field_key("rollout.name")] = "/dev/zero"  # not one of the options
    at.run()
    assert not at.exception
    preset = load_scenario(DEFAULT_PRESET)
    assert field_value(at, "data.max_response_length") == preset.data.max_response_length
    assert field_value(at, "rollout.name") == preset.rollout.name


def test_a_stored_value_no_longer_allowed_is_reset() -> None:
    """The dict's values are checked at every run too (an option list can change under a session: presets
    reloaded), not only those of the widgets on screen."""
    at = _run()  # the Rollout section is closed
    at.session_state[keys.FIELD_VALUES]["rollout.name"] = "an engine that is gone"
    at.run()
    assert not at.exception
    assert field_value(at, "rollout.name") == load_scenario(DEFAULT_PRESET).rollout.name
