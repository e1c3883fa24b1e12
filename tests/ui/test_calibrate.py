"""AppTest of the Calibrate page: a pasted log gives the phase bars and fitted values, the profile applies to
the inputs and saves into the team directory under a generated name, and the OOM panel explains a real message."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs

import pytest
from streamlit.testing.v1 import AppTest

from tests.calibration.test_compare import synthetic_log
from tests.support.app_fields import field_value
from tests.support.paths import ROOT
from ui import keys, profiles

APP = str(ROOT / "app.py")
PAGE = "ui/pages/calibrate.py"
FIXTURES = ROOT / "tests" / "calibration" / "fixtures"


def open_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception
    return at


def test_log_gives_bars_fitted_values_and_applies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLPLAN_PRESETS_DIR", str(tmp_path))
    at = open_page()
    at.text_area(key=keys.CAL_LOG_TEXT).input(synthetic_log()).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.get("plotly_chart"), "no phase chart"
    phases = at.dataframe[0].value
    assert {"predicted s", "measured s", "ratio", "fitted s", "residual"} <= set(phases.columns)
    refused = [c.value for c in at.caption if c.value.startswith("efficiency.")]  # "field: why it was not fitted"
    assert refused and all(": " in r for r in refused)
    assert any(c.value.startswith("Host RAM per node") for c in at.caption)
    fitted = at.dataframe[1].value
    assert "efficiency.train_mfu" in fitted.index
    assert fitted.loc["efficiency.train_mfu", "value"] == pytest.approx(0.25, rel=0.04)
    at.button(key=keys.CAL_SAVE).click().run()
    assert not at.exception
    saved = list((tmp_path / "calibrations").glob("*.yaml"))
    assert len(saved) == 1 and saved[0].name.startswith("qwen2-5-7b-h100-80gbx8-")
    at.button(key=keys.CAL_APPLY).click().run()
    assert not at.exception
    assert field_value(at, "efficiency.train_mfu") == pytest.approx(0.25, rel=0.04)
    # the sidebar selector now shows it, and the page's URL carries it (a shareable link)
    assert at.session_state[keys.CAL_ACTIVE] == saved[0].stem + profiles.FROM_LINK
    assert profiles.read_link(at.query_params["cal"])[1]["efficiency.train_mfu"] == pytest.approx(0.25, rel=0.04)
    # the saved profile is offered by the team selector
    assert at.selectbox(key=keys.CAL_PROFILE).options == [saved[0].stem]
    at.session_state[keys.field_key("efficiency.train_mfu")] = 0.35
    at.button(key=keys.CAL_PROFILE_APPLY).click().run()
    assert not at.exception
    assert field_value(at, "efficiency.train_mfu") == pytest.approx(0.25, rel=0.04)


def test_bad_log_is_a_message_not_a_traceback() -> None:
    at = open_page()
    at.text_area(key=keys.CAL_LOG_TEXT).input("nothing to see here").run()
    assert not at.exception
    assert any("no step metrics found" in e.value for e in at.error)


def test_oom_panel_explains_a_real_message() -> None:
    at = open_page()
    at.text_area(key=keys.CAL_OOM_TEXT).input((FIXTURES / "torch_old_log_prob_entropy.txt").read_text()).run()
    assert not at.exception
    assert any(m.value == "old_log_prob" for m in at.metric)
    assert any(m.value == "13.91 GiB" for m in at.metric)


def test_page_runs_in_chinese() -> None:
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params["lang"] = "zh"
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert any("校准" in m.value for m in at.markdown)


def test_links_apply_the_fitted_profile_on_estimate_and_planner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RLPLAN_PRESETS_DIR", raising=False)
    at = open_page()
    at.text_area(key=keys.CAL_LOG_TEXT).input(synthetic_log()).run()
    assert not at.exception
    links = {p.proto.label: p.proto.query_string for p in at.get("page_link")}
    assert set(links) == {"Estimate", "Planner"}
    code = parse_qs(links["Estimate"])["cal"][0]
    label, fitted = profiles.read_link(code)  # the link round-trips through ui/linkcodec.py
    assert label.startswith("qwen2-5-7b-h100-80gbx8-") and label.endswith(profiles.FROM_LINK)
    assert fitted["efficiency.train_mfu"] == pytest.approx(0.25, rel=0.04)
    # opening that link in a new session applies the fitted values to the inputs
    fresh = AppTest.from_file(APP, default_timeout=90)
    fresh.query_params["cal"] = code
    fresh.run()
    assert not fresh.exception
    assert field_value(fresh, "efficiency.train_mfu") == fitted["efficiency.train_mfu"]


def test_save_with_a_typed_name_is_sanitised_and_asks_before_overwriting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLPLAN_PRESETS_DIR", str(tmp_path))
    at = open_page()
    at.text_area(key=keys.CAL_LOG_TEXT).input(synthetic_log()).run()
    at.text_input(key=keys.CAL_NAME).input("../../My Team: H100 run!").run()
    at.button(key=keys.CAL_SAVE).click().run()
    assert not at.exception
    saved = tmp_path / "calibrations" / "my-team-h100-run.yaml"
    assert [p.name for p in (tmp_path / "calibrations").iterdir()] == [saved.name]  # nothing outside, one file
    saved.write_text("edited by hand\n")
    at.button(key=keys.CAL_SAVE).click().run()  # same name again: asks, does not overwrite
    assert not at.exception
    assert any("already exists" in w.value for w in at.warning)
    assert saved.read_text() == "edited by hand\n"
    at.button(key=keys.CAL_OVERWRITE).click().run()  # confirmed
    assert not at.exception
    assert "kind: rlplan-calibration" in saved.read_text()
