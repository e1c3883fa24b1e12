"""Calibration profiles: validated like presets, saved and read back, applied as overrides, team directory."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from calculator import load_scenario
from calculator.calibration.compare import calibrate
from calculator.calibration.logs import parse_log
from calculator.calibration.measured import summarize
from calculator.calibration.profile import (
    load_profile,
    make_profile,
    profile_from_text,
    profile_overrides,
    profile_yaml,
    team_profiles,
)
from calculator.errors import InputError
from calculator.inputs.readers import write_new_text_file
from tests.calibration.test_compare import synthetic_log


@pytest.fixture(scope="module")
def profile_text() -> str:
    s = load_scenario("qwen2.5-7b-grpo-8xh100")
    c = calibrate(s, summarize(parse_log(synthetic_log())))
    return profile_yaml(make_profile(s, c, log_name="/tmp/run.log", today=dt.date(2026, 11, 24)))


def test_round_trip_and_overrides(profile_text: str) -> None:
    p = profile_from_text(profile_text)
    assert p.id.startswith("qwen2-5-7b-h100-80gbx8-2026-11-24-")
    assert p.source.log == "run.log" and p.source.num_gpus == 8
    s = load_scenario("qwen2.5-7b-grpo-8xh100", profile_overrides(p))
    assert s.efficiency.train_mfu == pytest.approx(p.fitted["efficiency.train_mfu"])


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"efficiency.train_mfu": 2.0}, "outside"),
        ({"hardware.num_gpus": 4}, "not a calibrated field"),
    ],
)
def test_bad_fitted_values_are_refused(profile_text: str, patch: dict[str, float], message: str) -> None:
    import yaml

    data = yaml.safe_load(profile_text)
    data["fitted"].update(patch)
    with pytest.raises(InputError, match=message):
        profile_from_text(yaml.safe_dump(data))


def test_team_directory_lookup_by_id(profile_text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLPLAN_PRESETS_DIR", str(tmp_path))
    p = profile_from_text(profile_text)
    write_new_text_file(tmp_path / "calibrations", f"{p.id}.yaml", profile_text, "profile")
    (tmp_path / "calibrations" / "broken.yaml").write_text("kind: other\n")
    profiles, problems = team_profiles()
    assert list(profiles) == [p.id] and len(problems) == 1
    assert load_profile(p.id) == p
    with pytest.raises(InputError, match="no such file nor team profile"):
        load_profile("nope")


@pytest.mark.parametrize("name", ["../x.yaml", ".hidden", "a/b.yaml", ""])
def test_writer_refuses_paths(tmp_path: Path, name: str) -> None:
    with pytest.raises(InputError, match="plain file name"):
        write_new_text_file(tmp_path, name, "x")


def test_writer_never_overwrites(tmp_path: Path) -> None:
    write_new_text_file(tmp_path, "a.yaml", "1")
    with pytest.raises(InputError, match="already exists"):
        write_new_text_file(tmp_path, "a.yaml", "2")
    assert (tmp_path / "a.yaml").read_text() == "1"


def test_overwrite_needs_the_flag_and_never_follows_a_link(
    profile_text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from calculator.calibration.profile import save_team_profile, team_profile_exists

    monkeypatch.setenv("RLPLAN_PRESETS_DIR", str(tmp_path))
    p = profile_from_text(profile_text)
    path = save_team_profile(p)
    assert team_profile_exists(p.id) and not team_profile_exists("../" + p.id)
    with pytest.raises(InputError, match="already exists"):
        save_team_profile(p)
    path.write_text("old\n")
    save_team_profile(p, overwrite=True)
    assert profile_from_text(path.read_text()).id == p.id
    # a planted symbolic link is not replaced through: O_EXCL refuses it, the target is untouched
    target = tmp_path / "target.txt"
    target.write_text("keep\n")
    path.unlink()
    path.symlink_to(target)
    with pytest.raises(InputError, match="already exists"):
        save_team_profile(p, overwrite=True)
    assert target.read_text() == "keep\n"


def test_a_typed_name_becomes_a_plain_id() -> None:
    s = load_scenario("qwen2.5-7b-grpo-8xh100")
    c = calibrate(s, summarize(parse_log(synthetic_log())))
    assert make_profile(s, c, name="../../etc/passwd").id == "etc-passwd"
    assert make_profile(s, c, name="x" * 500).id == "x" * 40
    assert make_profile(s, c, name="!!!").id == "run"


def test_a_profile_records_the_source_runs_settings_and_lengths(profile_text: str) -> None:
    p = profile_from_text(profile_text)
    assert p.source.lengths == {"mean_prompt_length": 300, "mean_response_length": 500}  # the synthetic log's
    assert "actor_rollout_ref.rollout.n=5" in p.source.launch and "trainer.n_gpus_per_node=8" in p.source.launch
    bad = profile_text.replace("  launch:\n", "  launch:\n  - not a setting\n", 1)
    with pytest.raises(InputError, match="key=value"):
        profile_from_text(bad)
