"""Export (calculator/verl/export.py): the launch command is valid bash that passes exactly the overrides, grouped
with headers; only non-defaults and the keys a launch needs; Megatron's keys; nested YAML."""

from __future__ import annotations

import shutil
import subprocess

import yaml

from calculator import load_scenario
from calculator import verl as V


def test_command_is_valid_bash_and_passes_exactly_the_overrides(tmp_path):
    bash = shutil.which("bash")
    assert bash is not None, "bash is a prerequisite of this test (and of every verl launch script)"
    s = load_scenario(
        "qwen2.5-7b-grpo-8xh100",
        overrides={"model.target_modules": "attention", "model.lora_rank": 16, "ref.log_prob_use_dynamic_bsz": None},
    )
    cmd = V.format_overrides(s)
    script = tmp_path / "run.sh"
    script.write_text('python3() { printf "%s\\n" "$@"; }\n' + cmd)
    out = subprocess.run([bash, str(script)], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[:2] == ["-m", "verl.trainer.main_ppo"]
    expected = [f"{k}={V.hydra_value(v)}" for k, v in V.export_overrides(s)]
    assert out[2:] == expected
    assert "actor_rollout_ref.model.target_modules=[q_proj,k_proj,v_proj,o_proj]" in out


def test_command_layout():
    s = load_scenario("qwen2.5-7b-ppo-8xh100")
    text = V.format_overrides(s)
    lines = text.splitlines()
    launch = lines.index(f"{V.LAUNCH} \\")
    assert all(line.startswith("#") for line in lines[:launch])
    body = lines[launch + 1 :]
    assert all(line.endswith(" \\") for line in body[:-1]) and not body[-1].endswith("\\")
    groups = [line.strip().strip("`# \\") for line in body if line.strip().startswith("`#")]
    assert groups == [g for g in V.GROUPS if g in groups] and {"data", "actor", "rollout", "critic", "trainer"} <= set(
        groups
    )
    for key in (
        "actor_rollout_ref.rollout.name=vllm",
        "trainer.n_gpus_per_node=8",
        "trainer.nnodes=1",
        "actor_rollout_ref.model.path=",
        "critic.model.path=",
        "data.max_prompt_length=",
    ):
        assert key in text


def test_only_non_defaults_and_required_keys():
    s = load_scenario(
        "qwen2.5-7b-grpo-8xh100", overrides={"rollout.gpu_memory_utilization": 0.5, "rollout.temperature": 0.7}
    )
    keys = dict(V.export_overrides(s))
    assert "actor_rollout_ref.rollout.gpu_memory_utilization" not in keys  # = verl's default
    assert keys["actor_rollout_ref.rollout.temperature"] == 0.7
    assert "actor_rollout_ref.actor.ppo_epochs" not in keys
    assert keys["actor_rollout_ref.rollout.name"] == "vllm"  # required: no verl default


def test_megatron_export():
    s = load_scenario(
        "qwen2.5-7b-grpo-8xh100",
        overrides={
            "actor.strategy": "megatron",
            "actor.megatron.tensor_model_parallel_size": 4,
            "actor.megatron.param_offload": True,
            "actor.fsdp_config.param_offload": True,  # no such key under Megatron: a # rlplan line
        },
    )
    pairs = V.export_overrides(s)
    keys = [k for k, _ in pairs]
    assert keys[keys.index("model_engine")] == "model_engine" and dict(pairs)["model_engine"] == "megatron"
    assert dict(pairs)["actor_rollout_ref.actor.megatron.tensor_model_parallel_size"] == 4
    assert not any("fsdp_config" in k for k in keys)
    assert ("actor.fsdp_config.param_offload", True) in V.export_scenario(s).rlplan
    assert "model_engine: megatron" in V.export_yaml(s)


def test_yaml_is_nested_with_headers():
    s = load_scenario("qwen2.5-7b-ppo-8xh100")
    text = V.export_yaml(s)
    data = yaml.safe_load(text)
    assert data["actor_rollout_ref"]["rollout"]["name"] == "vllm"
    assert text.count("\nactor_rollout_ref:") == 1
    assert "# critic" in text and "  # rollout" in text
