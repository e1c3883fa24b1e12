"""``calibrate`` / ``explain-oom`` / ``--calibration`` on the command line (exit codes, JSON shapes, one-line errors)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calculator.cli.main import main
from tests.calibration.test_compare import synthetic_log

FIXTURES = Path(__file__).resolve().parents[1] / "calibration" / "fixtures"


def test_calibrate_json_save_and_apply(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "run.log"
    log.write_text(synthetic_log())
    prof = tmp_path / "p.yaml"
    assert main(["calibrate", "qwen2.5-7b-grpo-8xh100", "--log", str(log), "--save", str(prof), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [p["name"] for p in data["phases"]] == ["rollout", "old_log_prob", "ref_log_prob", "update_actor"]
    assert data["fitted"]["efficiency.train_mfu"] == pytest.approx(0.25, rel=0.04)
    assert prof.read_text().startswith("# rlplan calibration profile")
    assert main(["estimate", "qwen2.5-7b-grpo-8xh100", "--calibration", str(prof), "--json"]) == 0
    calibrated = json.loads(capsys.readouterr().out)
    assert main(["estimate", "qwen2.5-7b-grpo-8xh100", "--json"]) == 0
    default = json.loads(capsys.readouterr().out)
    assert calibrated["time"]["phases_s"]["update_actor"] > default["time"]["phases_s"]["update_actor"] * 1.3
    assert main(["advise", "qwen2.5-7b-grpo-8xh100", "--calibration", str(prof), "--json"]) == 0
    capsys.readouterr()


def test_calibrate_text_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "run.log"
    log.write_text(synthetic_log())
    assert main(["calibrate", "qwen2.5-7b-grpo-8xh100", "--log", str(log)]) == 0
    text = capsys.readouterr().out
    assert "predicted s" in text and "efficiency.train_mfu = 0.2" in text and "refused:" in text


def test_explain_oom_json(capsys: pytest.CaptureFixture[str]) -> None:
    tb = FIXTURES / "torch_old_log_prob_entropy.txt"
    assert main(["explain-oom", "qwen2.5-7b-grpo-8xh100", "--traceback", str(tb), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"phase", "component", "allocation_gib", "matched_gib", "fixes"} <= set(data)
    assert data["phase"] == "old_log_prob" and data["allocation_gib"] == 13.91


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["calibrate", "qwen2.5-7b-grpo-8xh100", "--log", "/nonexistent.log"], "file not found"),
        (["explain-oom", "qwen2.5-7b-grpo-8xh100", "--traceback", "/dev/zero"], "not a regular file"),
        (["estimate", "qwen2.5-7b-grpo-8xh100", "--calibration", "no-such-profile"], "no such file nor team profile"),
        (["calibrate", "qwen2.5-7b-grpo-8xh100"], "--log"),
        (["calibrate", "qwen2.5-7b-grpo-8xh100", "--log", "/dev/urandom"], "not a regular file"),
        (["estimate", "qwen2.5-7b-grpo-8xh100", "--calibration", "/dev/zero"], "not a regular file"),
    ],
)
def test_bad_input_exits_2_with_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


PROFILE = """kind: rlplan-calibration
id: slow-cluster
created: 2026-11-24
source: {model: qwen2.5-7b, gpu: h100-80gb, num_gpus: 8, verl_version: 0.9.1}
fitted: {efficiency.train_mfu: 0.1, efficiency.decode_hbm_efficiency: 0.3}
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["estimate"],
        ["advise"],
        ["tradeoffs"],
        ["plan", "--gpus", "h100-80gb", "--max-gpus", "16"],
    ],
)
def test_every_planning_command_takes_a_profile(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue 16: estimate, plan, advise and tradeoffs take --calibration; the fitted (slower) efficiencies change
    # their time figures, so the JSON differs from the defaults'
    prof = tmp_path / "p.yaml"
    prof.write_text(PROFILE)
    cmd = [argv[0], "qwen2.5-7b-grpo-8xh100", *argv[1:], "--json"]
    assert main(cmd) == 0
    default = capsys.readouterr().out
    assert main([*cmd, "--calibration", str(prof)]) == 0
    calibrated = capsys.readouterr().out
    assert json.loads(calibrated) != json.loads(default)


def test_a_team_profile_is_found_by_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "calibrations").mkdir()
    (tmp_path / "calibrations" / "slow-cluster.yaml").write_text(PROFILE)
    monkeypatch.setenv("RLPLAN_PRESETS_DIR", str(tmp_path))
    assert main(["estimate", "qwen2.5-7b-grpo-8xh100", "--calibration", "slow-cluster", "--json"]) == 0
    capsys.readouterr()


def test_save_never_overwrites_without_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "run.log"
    log.write_text(synthetic_log())
    prof = tmp_path / "p.yaml"
    prof.write_text("mine\n")
    argv = ["calibrate", "qwen2.5-7b-grpo-8xh100", "--log", str(log), "--save", str(prof), "--json"]
    assert main(argv) == 2
    assert "already exists (add --overwrite to replace it)" in capsys.readouterr().err
    assert prof.read_text() == "mine\n"
    assert main([*argv, "--overwrite"]) == 0
    assert prof.read_text().startswith("# rlplan calibration profile")
