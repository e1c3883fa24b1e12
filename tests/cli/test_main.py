"""The CLI contract (DESIGN.md 6.1/6.2) and bad input: exit 2, one line naming the field, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import calculator
import calculator.verl
from calculator.cli.main import main
from calculator.inputs.presets import model_presets
from tests.support.paths import ROOT

PRESET = "qwen2.5-7b-grpo-8xh100"


def run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "calculator", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_estimate_json_contract_keys(capsys):
    assert main(["estimate", "qwen2.5-7b-grpo-8xh100", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert set(r["model"]) >= {"name", "total_params", "active_params", "kv_cache_bytes_per_token"}
    assert set(r["hardware"]) >= {"gpu", "usable_memory_gib", "num_gpus", "gpus_per_node"}
    assert set(r["peak"]) >= {"phase", "gib_per_gpu", "fits", "headroom_gib", "worst_case_gib_per_gpu"}
    assert set(r["rollout"]) >= {
        "num_replicas",
        "kv_cache_gib_per_gpu",
        "kv_cache_tokens_per_replica",
        "max_concurrent_sequences_per_replica",
        "sequences_per_replica",
    }
    assert isinstance(r["warnings"], list)
    names = [p["name"] for p in r["phases"]]
    order = [
        "rollout",
        "reward",
        "old_log_prob",
        "ref_log_prob",
        "critic_values",
        "update_critic",
        "update_actor",
        "weight_sync",
    ]
    assert names == [n for n in order if n in names]
    for p in r["phases"]:
        assert sum(p["components"].values()) == pytest.approx(p["total_gib"], abs=1e-9)
    assert r["peak"]["gib_per_gpu"] == max(p["total_gib"] for p in r["phases"])


def test_estimate_any_config_json(tmp_path, capsys):
    """Model and hardware keys for a config.json given by path."""
    cfg = dict(model_presets()["qwen3-8b"].config)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert (
        main(
            [
                "estimate",
                "--model",
                str(path),
                "--gpu",
                "h100-80gb",
                "--num-gpus",
                "8",
                "--set",
                "actor.use_dynamic_bsz=true",
                "--json",
            ]
        )
        == 0
    )
    r = json.loads(capsys.readouterr().out)
    assert r["model"]["total_params"] == model_presets()["qwen3-8b"].architecture.total_params()
    assert r["hardware"] == {**r["hardware"], "gpu": "h100-80gb", "num_gpus": 8, "usable_memory_gib": 79.22}


def test_presets_json(capsys):
    for kind in ("models", "gpus", "scenarios"):
        assert main(["presets", kind, "--json"]) == 0
        rows = json.loads(capsys.readouterr().out)
        assert rows and all("id" in r and "name" in r for r in rows)
        if kind == "gpus":
            assert all("usable_memory_gib" in r for r in rows)
        if kind == "models":
            assert all(isinstance(r["total_params"], int) for r in rows)


def test_verl_file_import(tmp_path, capsys):
    script = tmp_path / "run.sh"
    script.write_text(
        "set -x\npython3 -m verl.trainer.main_ppo \\\n  algorithm.adv_estimator=grpo \\\n"
        "  actor_rollout_ref.rollout.n=16 \\\n  trainer.n_gpus_per_node=8 trainer.nnodes=2 \\\n"
        "  data.train_files=$HOME/data/train.parquet \\\n  actor_rollout_ref.actor.made_up_key=3\n"
    )
    assert main(["estimate", "qwen2.5-7b-grpo-8xh100", "--verl", str(script), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["hardware"]["num_gpus"] == 16
    assert any("made_up_key" in w for w in r["warnings"])


BAD = [
    (["estimate", "qwen2.5-7b-grpo-8xh100", "--num-gpus", "0"], "hardware.num_gpus"),
    (["estimate", "qwen2.5-7b-grpo-8xh100", "--num-gpus", "-4"], "hardware.num_gpus"),
    (["estimate", "qwen2.5-7b-grpo-8xh100", "--set", "rollout.n=0"], "rollout.n"),
    (["estimate", "qwen2.5-7b-grpo-8xh100", "--gpu", "h1000"], "hardware.gpu"),
    (["estimate", "qwen2.5-7b-grpo-8xh100", "--model", "llama-9000"], "model.path"),
    (["estimate", "qwen2.5-7b-grpo-8xh100", "--model", "/nonexistent/config.json"], "config.json"),
    (["estimate", "no-such-scenario"], "scenario"),
    (["estimate", "qwen2.5-7b-grpo-8xh100", "--set", "nokeyvalue"], "--set"),
    (["estimate", "qwen2.5-7b-grpo-8xh100", "--num-gpus", "eight"], "arguments"),
    (["bogus"], "arguments"),
]


@pytest.mark.parametrize(("args", "field"), BAD)
def test_bad_input_exit_2(args, field):
    p = run(args)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert lines and all(line.startswith("error: ") for line in lines)
    assert field in p.stderr


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{not json", "not valid"),
        ('{"model_type": "bert", "hidden_size": 8}', "not supported; supported"),
        ('{"model_type": "llama", "hidden_size": 64}', "num_hidden_layers"),
        ("[1, 2, 3]", "must be a mapping"),
        ("", "must be a mapping"),
    ],
)
def test_bad_config_json(tmp_path, content, needle):
    path = tmp_path / "config.json"
    path.write_text(content)
    p = run(["estimate", "qwen2.5-7b-grpo-8xh100", "--model", str(path)])
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert needle in p.stderr


def test_scenario_yaml_not_a_mapping(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("- just\n- a list\n")
    p = run(["estimate", str(path)])
    assert p.returncode == 2 and "must be a mapping" in p.stderr and "Traceback" not in p.stderr


def test_human_output():
    p = run(["estimate", "qwen2.5-7b-grpo-8xh100"])
    assert p.returncode == 0 and "peak:" in p.stdout and "rollout:" in p.stdout


# ---- issue 13 items 1, 2 and 4: defaults that run, typed --set, verl keys and sizes, --check ------------------


def test_bare_estimate_starts_from_the_grpo_default_scenario(capsys):
    """Issue 13 item 1: a newcomer's first command runs on a complete GRPO scenario and fits."""
    assert main(["estimate", "--model", "qwen2.5-7b", "--gpu", "h100-80gb", "--num-gpus", "8", "--check"]) == 0
    out = capsys.readouterr().out
    assert "-> fits" in out and "Please set at least one" not in out


def test_unset_micro_batch_is_a_verl_warning_with_the_assumed_value(capsys, tmp_path):
    """A script without micro-batches estimates (verl would refuse: its message, and the value rlplan used) and
    the missing micro-batch is no fit reason (``--check`` exits 0)."""
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo actor_rollout_ref.rollout.n=4\n")
    argv = ["estimate", "--verl", str(script), "--model", "qwen2.5-7b", "--gpu", "h100-80gb", "--num-gpus", "8"]
    assert main([*argv, "--check"]) == 0
    out = capsys.readouterr().out
    assert "why: verl rejects" not in out
    assert "Please set at least one of 'actor.ppo_micro_batch_size'" in out
    assert "estimated with actor.ppo_micro_batch_size_per_gpu = 1" in out


def test_set_values_are_typed_by_their_field(capsys):
    assert main(["estimate", PRESET, "--set", "verl_version=0.6", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verl_version"] == "0.6"
    assert main(["estimate", PRESET, "--set", 'verl_version="0.8"', "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verl_version"] == "0.8"


def test_set_takes_verl_keys(capsys):
    assert main(["estimate", PRESET, "--set", "actor_rollout_ref.rollout.n=8", "--json"]) == 0
    with_verl = json.loads(capsys.readouterr().out)
    assert main(["estimate", PRESET, "--set", "rollout.n=8", "--json"]) == 0
    assert with_verl == json.loads(capsys.readouterr().out)
    assert with_verl["rollout"]["sequences_per_replica"] == 1024 * 8 // 4


def test_set_unknown_key_names_both_vocabularies(capsys):
    assert main(["estimate", PRESET, "--set", "actor_rollout_ref.nope=1"]) == 2
    err = capsys.readouterr().err
    assert "not a scenario field" in err and "actor_rollout_ref.rollout.n" in err


def test_model_takes_a_size(capsys):
    assert main(["estimate", PRESET, "--model", "70B", "--num-gpus", "32", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert 65e9 < report["model"]["total_params"] < 75e9
    assert any(w.startswith("--model 70B: approximated as") for w in report["warnings"])


@pytest.mark.parametrize(
    ("model", "preset", "note"),
    [
        ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b", "the same architecture"),
        ("/models/Qwen3-30B-A3B-Instruct-2507", "qwen3-30b-a3b", "later release"),
        ("meta-llama/Llama-3.1-8B", "llama3.1-8b", "the same architecture"),
    ],
)
def test_model_takes_a_hugging_face_repo_or_checkpoint_path(model, preset, note, capsys):
    """``--model`` reads a repo id or checkpoint path as verl's model.path does (calculator.inputs.presets
    ``model_id_for_path``), and says which preset it used."""
    assert main(["estimate", PRESET, "--model", model, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["model"]["total_params"] == model_presets()[preset].architecture.total_params()
    assert any(w.startswith(f"--model {model}: the model preset {preset}") and note in w for w in report["warnings"])
    assert main(["estimate", PRESET, "--model", "Qwen/Qwen2.5-7B-Instruct-AWQ"]) == 2  # quantised: other weights
    assert "unknown model" in capsys.readouterr().err


@pytest.mark.parametrize(("model", "code"), [("qwen2.5-7b", 0), ("llama3.1-70b", 1)])
def test_check_is_a_launch_guard(model, code, capsys):
    """exit 1 when it does not fit, 0 when it fits (DESIGN.md 6.5)."""
    assert main(["estimate", PRESET, "--model", model, "--num-gpus", "8", "--check"]) == code
    assert ("DOES NOT FIT" in capsys.readouterr().out) == bool(code)


# Parsed from presets/<kind>/catalogue.json (calculator.inputs.catalogue): no command below reads a YAML text.
_NO_YAML = ["yaml", "calculator.inputs.yaml_text"]


def _imported_of(code: str, modules: list[str]) -> list[str]:
    """Which of ``modules`` a fresh interpreter running ``code`` imported, sorted (shipped presets only)."""
    code += f"\nimport sys\nprint(sorted(m for m in {modules!r} if m in sys.modules), file=sys.stderr)"
    env = {k: v for k, v in os.environ.items() if k != "RLPLAN_PRESETS_DIR"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, env=env)
    return json.loads(done.stderr.strip().splitlines()[-1].replace("'", '"'))


@pytest.mark.parametrize(
    ("argv", "not_imported"),
    [
        (
            ["presets"],
            ["calculator.memory.phases", "calculator.planning.planner", "calculator.verl.export"]
            + ["calculator.report.models", "calculator.inputs.scenario", *_NO_YAML],
        ),
        (["presets", "scenarios", "--json"], ["calculator.report.models", "calculator.inputs.scenario", *_NO_YAML]),
        (
            ["estimate", "qwen2.5-7b-grpo-8xh100"],
            ["calculator.planning.planner", "calculator.planning.tradeoff", "calculator.verl.export"]
            + ["calculator.calibration.profile", "calculator.verl.imports", *_NO_YAML],
        ),
        (["estimate", "qwen2.5-7b-grpo-8xh100", "--json"], ["calculator.planning.planner", *_NO_YAML]),
    ],
)
def test_commands_import_only_what_they_run(argv, not_imported):
    """Start-up is import time (issue #18): a fresh interpreter running ``presets`` never imports the memory
    model nor the Report's pydantic classes, ``estimate`` never the planner or the verl exporter, and neither
    PyYAML (the shipped presets come parsed from presets/<kind>/catalogue.json; if this fails after a preset file
    changed, run ``python -m tools.preset_catalogue --write``)."""
    code = f"from calculator.cli.main import main\nassert main({argv!r}) == 0"
    assert _imported_of(code, not_imported) == []


def test_building_the_parser_imports_no_model():
    """``--help`` and an argument error need the parser only: no pydantic (``calculator.errors`` names
    pydantic's ValidationError for its type only)."""
    code = "from calculator.cli.parsers import build_parser\nbuild_parser()"
    assert _imported_of(code, ["pydantic", "calculator.inputs.presets", *_NO_YAML]) == []


def test_reading_a_yaml_text_loads_pyyaml_on_first_use(tmp_path):
    """The other side of the laziness: a scenario file in YAML is still read (PyYAML loaded by name)."""
    path = tmp_path / "s.yaml"
    path.write_text("base: qwen2.5-7b-grpo-8xh100\n")
    code = f"from calculator.inputs.readers import read_mapping_file\nassert read_mapping_file({str(path)!r})['base']"
    assert _imported_of(code, _NO_YAML) == sorted(_NO_YAML)


def test_lazy_public_api_names_every_export():
    """``calculator`` and ``calculator.verl`` load names on first use: the lazy table and ``__all__`` agree."""
    assert set(calculator._EXPORTS) == set(calculator.__all__)
    assert set(calculator.verl._EXPORTS) == set(calculator.verl.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        calculator.nope  # noqa: B018
