"""``python -m calculator export`` (calculator/cli/export.py): every format reads back through ``estimate --verl``,
verl's problems go to stderr, a bad format exits 2."""

from __future__ import annotations

import json
import subprocess
import sys

from calculator import load_scenario
from tests.support.paths import ROOT


def run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "calculator", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def test_cli_export_formats_round_trip(tmp_path):
    args = ["export", "qwen2.5-7b-ppo-8xh100", "--gpu", "a100-80gb", "--set", "rollout.n=2", "--num-gpus", "16"]
    for fmt in ("command", "yaml"):
        p = run([*args, "--format", fmt])
        assert p.returncode == 0, p.stderr
        f = tmp_path / f"out.{fmt}"
        f.write_text(p.stdout)
        q = run(["estimate", "--verl", str(f), "--json"])
        assert q.returncode == 0, q.stderr
        r = json.loads(q.stdout)
        assert r["hardware"]["gpu"] == "a100-80gb" and r["hardware"]["num_gpus"] == 16
    p = run([*args, "--format", "overrides"])
    assert p.returncode == 0
    assert all("=" in line and not line.startswith("#") for line in p.stdout.splitlines())
    assert "hardware.gpu" in p.stderr  # not a verl setting: said on stderr
    f = tmp_path / "o.txt"
    f.write_text(p.stdout)
    a = load_scenario(
        "qwen2.5-7b-ppo-8xh100", overrides={"hardware.gpu": "a100-80gb", "rollout.n": 2, "hardware.num_gpus": 16}
    )
    b = load_scenario("qwen2.5-7b-ppo-8xh100", overrides={"hardware.gpu": "a100-80gb"}, verl_overrides=p.stdout)
    assert a == b


def test_cli_export_reports_verl_problems():
    p = run(["export", "qwen2.5-7b-grpo-8xh100", "--set", "actor.ppo_micro_batch_size_per_gpu=48"])
    assert p.returncode == 0
    assert "verl error" in p.stderr and "micro_batch_size_per_gpu" in p.stderr


def test_cli_export_bad_input_exit_2():
    p = run(["export", "qwen2.5-7b-grpo-8xh100", "--format", "toml"])
    assert p.returncode == 2 and p.stderr.startswith("error: ")
