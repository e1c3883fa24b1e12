"""CLI for split placements: ``estimate`` prints the pools and the overlap, ``--json`` has ``pools`` / ``placement``,
``export`` writes the recipe's entry module and keys, ``plan --placement`` shows the split beside colocated."""

from __future__ import annotations

import json

from tests.cli.test_export import run

SPLIT = [
    "qwen2.5-7b-grpo-8xh100",
    "--set",
    "placement.mode=one_step_off",
    "--set",
    "hardware.num_gpus=4",
    "--set",
    "placement.rollout_n_gpus_per_node=4",
]


def test_estimate_text_and_json():
    p = run(["estimate", *SPLIT])
    assert p.returncode == 0, p.stderr
    assert "placement: one_step_off, rollout 4 GPUs + trainer 4 GPUs on 1 node(s)" in p.stdout
    assert "rollout pool: 4 GPUs" in p.stdout and "trainer pool: 4 GPUs" in p.stdout
    d = json.loads(run(["estimate", *SPLIT, "--json"]).stdout)
    assert [x["name"] for x in d["pools"]] == ["rollout", "trainer"]
    assert d["placement"]["mode"] == "one_step_off" and d["placement"]["timeline"]


def test_export_writes_the_recipe(tmp_path):
    p = run(["export", *SPLIT])
    assert p.returncode == 0, p.stderr
    assert "python3 -m verl.experimental.one_step_off_policy.main_ppo" in p.stdout
    f = tmp_path / "run.sh"
    f.write_text(p.stdout)
    d = json.loads(run(["estimate", "--verl", str(f), "--json"]).stdout)
    assert [x["num_gpus"] for x in d["pools"]] == [4, 4]


def test_plan_placement():
    p = run(["plan", "qwen2.5-7b-grpo-8xh100", "--gpus", "h100-80gb", "--placement", "one_step_off"])
    assert p.returncode == 0, p.stderr
    assert "one_step_off split of the same GPUs" in p.stdout
    bad = run(["plan", "qwen2.5-7b-grpo-8xh100", "--placement", "split"])
    assert bad.returncode == 2 and "placement" in bad.stderr


def test_estimate_text_says_when_a_split_would_help(capsys):
    """Qwen2.5-0.5B with 8,000-token mean responses: generation is about two thirds of the step, so the text
    output carries the advisor's placement hint (calculator.planning.placement_advice), which the advisor repeats."""
    from calculator import advise, load_scenario
    from calculator.cli.main import main
    from calculator.inputs.presets import DEFAULT_SCENARIO

    args = ["model.path=qwen2.5-0.5b", "data.max_response_length=16384", "data.mean_response_length=8000"]
    assert main(["estimate", *[x for a in args for x in ("--set", a)]]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("placement: "))
    assert "generation is" in line and "one_step_off" in line
    a = advise(load_scenario(DEFAULT_SCENARIO, dict(a.split("=") for a in args)))
    assert a.placement_hint is not None and a.placement_hint in line
