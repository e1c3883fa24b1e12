"""``python -m calculator plan`` and ``advise`` (calculator/cli/plan.py): JSON, text, CSV and Markdown output, and
exit 2 with one line per input problem."""

from __future__ import annotations

import json
import subprocess
import sys

from calculator.cli.main import main
from tests.support.paths import ROOT

BASE = "qwen2.5-7b-grpo-8xh100"


def test_cli_plan_json(capsys):
    assert main(["plan", BASE, "--gpus", "h100-80gb,a100-80gb", "--max-gpus", "64", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert sorted(r["gpu"] for r in d["rows"]) == ["a100-80gb", "h100-80gb"]
    assert isinstance(d["elapsed_s"], float)


def test_cli_plan_text_csv_markdown(capsys):
    assert main(["plan", BASE, "--gpus", "h100-80gb", "--max-gpus", "64"]) == 0
    assert "h100-80gb" in capsys.readouterr().out
    assert main(["plan", BASE, "--gpus", "h100-80gb", "--max-gpus", "64", "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("gpu,gpu_name,min_gpus")
    assert main(["plan", BASE, "--gpus", "h100-80gb", "--max-gpus", "64", "--format", "markdown"]) == 0
    assert "| GPU |" in capsys.readouterr().out


def test_cli_plan_bad_input_exits_2_one_line_per_problem():
    r = subprocess.run(
        [sys.executable, "-m", "calculator", "plan", BASE, "--gpus", "nope,h100-80gb", "--margin", "1.5"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("error: ") for line in lines)
    assert any("margin:" in line for line in lines) and any("gpus:" in line for line in lines)
    assert "Traceback" not in r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "calculator", "plan", BASE, "--max-gpus", "many"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "--max-gpus" in r.stderr


def test_advice_json_and_cli(capsys):
    assert main(["advise", BASE, "--gpu", "a100-40gb", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert {"status", "base", "suggestions", "first_fit", "combined"} <= set(d)
    top = d["suggestions"][0]
    assert {"lever", "settings", "verl_overrides", "peak_gib_per_gpu", "step_s", "fits", "first_fit"} <= set(top)
    assert main(["advise", BASE, "--gpu", "a100-40gb"]) == 0
    out = capsys.readouterr().out
    assert "first change that fits" in out and "actor_rollout_ref." in out


def test_cli_advise_bad_input_exits_2(capsys):
    assert main(["advise", BASE, "--margin", "-1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: margin:")


def test_cli_tradeoffs_json_and_text(capsys):
    """DESIGN.md 6.5: {"points", "front", "elapsed_s"}; the front is feasible points sorted by peak memory,
    each faster than the one before; the current scenario is one of the points."""
    assert main(["tradeoffs", BASE, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"points", "front", "elapsed_s"} and data["elapsed_s"] > 0
    assert sum(p["is_current"] for p in data["points"]) == 1
    front = data["front"]
    assert front and all(p["fits"] for p in front) and all(p in data["points"] for p in front)
    assert [p["peak_gib_per_gpu"] for p in front] == sorted(p["peak_gib_per_gpu"] for p in front)
    assert all(a["step_s"] > b["step_s"] for a, b in zip(front, front[1:], strict=False))
    assert main(["tradeoffs", BASE]) == 0
    text = capsys.readouterr().out
    assert f"{len(data['points'])} settings swept" in text and front[0]["label"] in text
    assert main(["tradeoffs", BASE, "--set", "rollout.n=0"]) == 2


def test_advise_header_names_the_model_and_gpus_in_use() -> None:
    """Issue 13 item 12: a 70B/H200 scenario from the 7B/H100 preset is not titled with the preset's name."""
    import subprocess
    import sys

    args = ["advise", "qwen2.5-7b-grpo-8xh100", "--model", "llama3.1-70b", "--gpu", "h200-141gb", "--num-gpus", "32"]
    res = subprocess.run([sys.executable, "-m", "calculator", *args], capture_output=True, text=True, check=False)
    first = res.stdout.splitlines()[0]
    assert first.startswith("Llama-3.1-70B, 32 x H200-SXM-141GB (based on preset Qwen2.5-7B GRPO, 8 x H100):"), first
