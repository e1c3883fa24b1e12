"""Parallelism rules (calculator/verl/checks/parallel.py): rollout TP / DP / EP against the GPUs and the model's
heads, Ulysses SP, Megatron world sizes; each catches a bad config with verl's message and passes the fixed one."""

from __future__ import annotations

from typing import Any

import pytest

from tests.verl.checks.cases import GRPO, PPO, assert_caught, assert_passes, bad_id

# (preset, native overrides, raw patches, rule, severity, fragment of verl's message)
BAD: list[tuple[str, dict[str, Any], dict[str, Any], str, str, str]] = [
    (
        GRPO,
        {"actor.strategy": "megatron", "model.lora_rank": 32, "verl_version": "0.6"},
        {},
        "megatron_lora_release",
        "warning",
        "verl 0.6 has no Megatron LoRA (model.lora arrived in 0.7.0)",
    ),
    (
        PPO,
        {"actor.strategy": "megatron", "critic.megatron.tensor_model_parallel_size": 3},
        {},
        "megatron_world_size",
        "error",
        "critic: world size 8 is not divisible by tensor_model_parallel_size (3)",
    ),
    (
        GRPO,
        {"actor.strategy": "megatron", "actor.megatron.pipeline_model_parallel_size": 8},
        {},
        "megatron_layer_split",
        "error",
        "actor: 28 layers are not divisible by PP 8",
    ),
    (
        GRPO,
        {},
        {"rollout.tensor_model_parallel_size": 3},
        "rollout_tp_gpus",
        "error",
        "rollout world_size: 8 is not divisible by infer_world_size: 3",
    ),
    (
        GRPO,
        {"hardware.num_gpus": 24, "rollout.tensor_model_parallel_size": 4, "rollout.data_parallel_size": 3},
        {},
        "rollout_replica_nodes",
        "error",
        "world_size 12 must be divisible by gpus_per_node 8",
    ),
    (
        GRPO,
        {"rollout.tensor_model_parallel_size": 8},
        {},
        "rollout_tp_heads",
        "error",
        "Total number of attention heads (28) must be divisible by tensor parallel size (8)",
    ),
    (
        GRPO,
        {
            "hardware.num_gpus": 14,
            "hardware.gpus_per_node": 14,
            "rollout.tensor_model_parallel_size": 14,
            "data.train_batch_size": 1064,
            "actor.ppo_mini_batch_size": 266,
        },
        {},
        "rollout_tp_heads",
        "error",
        "4 KV heads cannot be split over or replicated across rollout TP 14",
    ),
    (
        GRPO,
        {"rollout.expert_parallel_size": 4},
        {},
        "rollout_ep",
        "error",
        "expert_parallel_size must be equal to tensor_model_parallel_size * data_parallel_size",
    ),
    (
        # Qwen2.5-7B preset: max_position_embeddings 131072; verl 0.7.1+ raises above it
        GRPO,
        {"rollout.max_model_len": 200000, "data.max_prompt_length": 1024},
        {},
        "max_model_len_above_max_position",
        "error",
        "max_model_len (200000) should be less than or equal to max_position_embeddings (131072)",
    ),
    (
        GRPO,
        {},
        {"actor.ulysses_sequence_parallel_size": 2, "model.use_remove_padding": False},
        "ulysses_remove_padding",
        "error",
        "When using sequence parallelism for actor/ref policy, you must enable `use_remove_padding`.",
    ),
    (
        PPO,
        {"critic.ulysses_sequence_parallel_size": 2, "model.use_remove_padding": False},
        {},
        "ulysses_remove_padding",
        "error",
        "(critic Ulysses SP 2",
    ),
    (
        GRPO,
        {"actor.ulysses_sequence_parallel_size": 8},
        {},
        "ulysses_heads",
        "error",
        "num_attention_heads 28 must be divisible by ulysses_sp_size 8",
    ),
    (
        GRPO,
        {
            "hardware.num_gpus": 14,
            "hardware.gpus_per_node": 14,
            "rollout.tensor_model_parallel_size": 2,
            "actor.ulysses_sequence_parallel_size": 14,
            "data.train_batch_size": 1064,
        },
        {},
        "ulysses_heads",
        "error",
        "num_key_value_heads 4 must be divisible by ulysses_sp_size 14",
    ),
    (
        PPO,
        {"critic.ulysses_sequence_parallel_size": 3},
        {},
        "ulysses_world",
        "error",
        "critic Ulysses SP 3 does not divide the 8 GPUs",
    ),
]

# The same configs, fixed as the message says: the rule passes.
GOOD: list[tuple[str, dict[str, Any], str]] = [
    (GRPO, {"rollout.tensor_model_parallel_size": 4}, "rollout_tp_heads"),
    (
        GRPO,
        {"hardware.num_gpus": 16, "rollout.tensor_model_parallel_size": 4, "rollout.data_parallel_size": 4},
        "rollout_replica_nodes",
    ),
    (GRPO, {"rollout.expert_parallel_size": 2}, "rollout_ep"),
    (GRPO, {"rollout.max_model_len": 131072}, "max_model_len_above_max_position"),
    # verl 0.6 (sync SPMD) passes the value to vLLM without this check
    (GRPO, {"rollout.max_model_len": 200000, "verl_version": "0.6"}, "max_model_len_above_max_position"),
    (GRPO, {"actor.ulysses_sequence_parallel_size": 4}, "ulysses_heads"),
    (GRPO, {"actor.ulysses_sequence_parallel_size": 2}, "ulysses_remove_padding"),
    (PPO, {"critic.ulysses_sequence_parallel_size": 2}, "ulysses_world"),
    # 28 layers on PP 8: 3 on each of the first 7 stages and 7 on the last (num_layers_in_last_pipeline_stage)
    (
        GRPO,
        {
            "actor.strategy": "megatron",
            "actor.megatron.pipeline_model_parallel_size": 8,
            "actor.megatron.num_layers_in_last_pipeline_stage": 7,
        },
        "megatron_layer_split",
    ),
    (GRPO, {"actor.strategy": "megatron", "actor.megatron.pipeline_model_parallel_size": 4}, "megatron_layer_split"),
]


@pytest.mark.parametrize(("preset", "overrides", "raw", "rule", "severity", "fragment"), BAD, ids=map(bad_id, BAD))
def test_bad_config_is_caught(preset, overrides, raw, rule, severity, fragment):
    assert_caught(preset, overrides, raw, rule, severity, fragment)


@pytest.mark.parametrize(("preset", "overrides", "rule"), GOOD)
def test_good_config_passes(preset, overrides, rule):
    assert_passes(preset, overrides, rule)


def test_megatron_lora_on_a_release_without_it_is_a_warning():
    """verl 0.5 / 0.6 have no Megatron LoRA (model.lora arrived in 0.7.0): a warning naming the choices; 0.7.0
    and later run it."""
    from calculator import load_scenario
    from calculator.verl.checks import check_config

    over = {"actor.strategy": "megatron", "model.lora_rank": 32}
    for version, expected in (("0.5", True), ("0.6", True), ("0.7.0", False), ("0.9.1", False)):
        s = load_scenario("qwen2.5-7b-grpo-8xh100", overrides={**over, "verl_version": version})
        hits = [p for p in check_config(s) if p.rule == "megatron_lora_release"]
        assert bool(hits) == expected, version
        assert all(p.severity == "warning" and "0.7.0" in p.message for p in hits)
