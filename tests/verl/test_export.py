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


def test_layered_summon_writes_a_real_load_format_and_reads_back():
    # verl raises at the first LoRA sync when vLLM starts from dummy weights with layered_summon on
    # (utils/fsdp_utils.py collect_lora_params, every release 0.5.0-0.9.1): the export adds load_format.
    s = load_scenario("qwen2.5-7b-grpo-8xh100", overrides={"model.lora_rank": 32, "rollout.layered_summon": True})
    keys = dict(V.export_overrides(s))
    assert keys["actor_rollout_ref.rollout.layered_summon"] is True
    assert keys["actor_rollout_ref.rollout.load_format"] == "safetensors"
    natives, notes = V.import_verl_text(V.format_overrides(s))
    assert natives["rollout.layered_summon"] is True
    assert not [n for n in notes if "layered_summon" in n or "load_format" in n]  # read, no error, no warning
    assert load_scenario("qwen2.5-7b-grpo-8xh100", verl_overrides=V.format_overrides(s, style="overrides")) == s
    plain = dict(V.export_overrides(load_scenario("qwen2.5-7b-grpo-8xh100", overrides={"model.lora_rank": 32})))
    assert "actor_rollout_ref.rollout.load_format" not in plain  # verl's default (dummy) otherwise


def test_grad_offload_is_exported_per_release():
    # megatron.grad_offload is in the 0.5.0-0.9.0 Megatron configs and absent from 0.9.1's (Hydra refuses it):
    # 0.9.0 writes the key, 0.9.1 keeps it as a # rlplan line (resolve/versions.py megatron_grad_offload_key).
    over = {"actor.strategy": "megatron", "actor.megatron.grad_offload": True}
    old = load_scenario("qwen2.5-7b-grpo-8xh100", overrides={**over, "verl_version": "0.9.0"})
    new = load_scenario("qwen2.5-7b-grpo-8xh100", overrides={**over, "verl_version": "0.9.1"})
    assert dict(V.export_overrides(old))["actor_rollout_ref.actor.megatron.grad_offload"] is True
    assert not any("grad_offload" in k for k, _ in V.export_overrides(new))
    assert ("actor.megatron.grad_offload", True) in V.export_scenario(new).rlplan
    natives, _ = V.import_verl_text(V.format_overrides(new))
    assert natives["actor.megatron.grad_offload"] is True  # restored from the # rlplan line


def test_megatron_lora_is_exported_as_the_model_lora_dict_per_release():
    """Megatron LoRA is model.lora.rank from verl 0.7.0 (model.lora_rank would train every parameter there); the
    0.6 Megatron config has no model.lora (Hydra would refuse it): a # rlplan line, read back on import."""
    over = {"actor.strategy": "megatron", "model.lora_rank": 32}
    new = load_scenario("qwen2.5-7b-grpo-8xh100", overrides=over)
    items = dict(V.export_overrides(new))
    assert items["actor_rollout_ref.model.lora.rank"] == 32 and "actor_rollout_ref.model.lora_rank" not in items
    assert V.import_verl_text(V.format_overrides(new))[0]["model.lora_rank"] == 32
    old = load_scenario("qwen2.5-7b-grpo-8xh100", overrides={**over, "verl_version": "0.6"})
    assert not any("lora" in k for k, _ in V.export_overrides(old))
    assert ("model.lora_rank", 32) in V.export_scenario(old).rlplan
    fsdp = dict(V.export_overrides(load_scenario("qwen2.5-7b-grpo-8xh100", overrides={"model.lora_rank": 32})))
    assert fsdp["actor_rollout_ref.model.lora_rank"] == 32
