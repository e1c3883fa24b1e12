"""The calibration profile in the dashboard: the ``cal`` link parameter round-trips through ui/linkcodec.py, a
profile id from a URL is only ever looked up among the listed team profiles (never a path), fitted values from a
link are checked like a profile file's, and the sidebar selector applies a profile to the inputs of every page."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from calculator import InputError, load_scenario
from calculator.calibration.profile import CalibrationProfile, ProfileSource, save_team_profile
from tests.support.app_fields import field_value
from tests.support.paths import ROOT
from ui import keys, linkcodec, profiles

APP = str(ROOT / "app.py")
FITTED = {"efficiency.train_mfu": 0.25, "efficiency.forward_mfu": 0.3}


def team_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pid: str = "team-h100") -> CalibrationProfile:
    monkeypatch.setenv("RLPLAN_PRESETS_DIR", str(tmp_path))
    p = CalibrationProfile(
        id=pid,
        created=dt.date(2026, 11, 24),
        source=ProfileSource(model="qwen2.5-7b", gpu="h100-80gb", num_gpus=8, verl_version="0.9.1"),
        fitted=FITTED,
    )
    save_team_profile(p)
    return p


def test_link_round_trips_with_its_own_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RLPLAN_PRESETS_DIR", raising=False)
    code = profiles.link_code("run-1", FITTED)
    assert code is not None and code.startswith("v1.") and len(code) <= linkcodec.MAX_LINK_PARAM_CHARS
    assert profiles.read_link(code) == ("run-1" + profiles.FROM_LINK, FITTED)


def test_a_team_id_takes_the_team_files_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    team_profile(tmp_path, monkeypatch)
    code = linkcodec.pack({"id": "team-h100"})  # no values in the link: the listed file's are used
    assert profiles.read_link(code) == ("team-h100", FITTED)
    forged = linkcodec.pack({"id": "team-h100", "fitted": {"efficiency.train_mfu": 0.9}})
    assert profiles.read_link(forged) == ("team-h100", FITTED)  # the file wins over the link


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        ({"id": "../../etc/passwd"}, "letters, digits"),
        ({"id": "/tmp/x.yaml"}, "letters, digits"),
        ({"id": "unknown"}, "no team profile 'unknown'"),
        ({"id": "x", "fitted": {"model.path": 1.0}}, "not a calibrated field"),
        ({"id": "x", "fitted": {"efficiency.train_mfu": 5.0}}, "outside"),
        ({"id": "x", "fitted": {"efficiency.train_mfu": "0.3"}}, "must be a number"),
        ({"id": "x", "fitted": []}, "must be a mapping"),
        (["not", "a", "mapping"], "not a profile"),
    ],
)
def test_bad_links_are_refused(payload: object, why: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    team_profile(tmp_path, monkeypatch)
    with pytest.raises(InputError, match=why):
        profiles.read_link(linkcodec.pack(payload))


def test_oversized_or_foreign_codes_are_refused() -> None:
    with pytest.raises(InputError, match="not a profile"):
        profiles.read_link("v1." + "A" * (linkcodec.MAX_LINK_PARAM_CHARS + 1))
    with pytest.raises(InputError, match="not a profile"):
        profiles.read_link("team-h100")  # a bare name is not a packed parameter


def fresh(query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_link_applies_the_profile_to_the_estimate_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RLPLAN_PRESETS_DIR", raising=False)
    at = fresh({"cal": profiles.link_code("run-1", FITTED)})  # the app opens on Estimate
    for path, value in FITTED.items():
        assert field_value(at, path) == value
    assert at.selectbox(key=keys.CAL_SELECT).value == "run-1" + profiles.FROM_LINK
    assert "cal" in at.query_params  # the page's own URL keeps the profile while its values are in place
    at.switch_page("ui/pages/planner.py").run()  # the same inputs on the Planner page
    assert not at.exception
    assert field_value(at, "efficiency.train_mfu") == 0.25


def test_a_dotted_url_value_wins_over_the_link() -> None:
    at = fresh({"cal": profiles.link_code("run-1", FITTED), "efficiency.train_mfu": "0.4"})
    assert field_value(at, "efficiency.train_mfu") == 0.4
    assert field_value(at, "efficiency.forward_mfu") == 0.3


def test_a_bad_link_is_reported_not_applied() -> None:
    default = load_scenario("qwen2.5-7b-grpo-8xh100").efficiency.train_mfu
    at = fresh({"cal": linkcodec.pack({"id": "../secrets"})})
    assert field_value(at, "efficiency.train_mfu") == default
    assert any("link parameter cal" in p for p in at.session_state[keys.URL_PROBLEMS])


def test_sidebar_selector_applies_and_clears(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    team_profile(tmp_path, monkeypatch)
    at = fresh()
    box = at.selectbox(key=keys.CAL_SELECT)
    assert box.options == [profiles.TEXT["en"]["none"], "team-h100"]
    preset = {k: field_value(at, k) for k in FITTED}
    box.select("team-h100").run()
    assert not at.exception
    assert {k: field_value(at, k) for k in FITTED} == FITTED
    at.selectbox(key=keys.CAL_SELECT).select(profiles.NONE).run()
    assert {k: field_value(at, k) for k in FITTED} == preset
    assert "cal" not in at.query_params
