"""Batch-size rules (calculator/verl/checks/batch.py): train / mini / micro batches against the data-parallel
sizes, dynamic-batching token budgets, the critic's V1 batching; each catches a bad config with verl's message and
passes the fixed one."""

from __future__ import annotations

from typing import Any

import pytest

from tests.verl.checks.cases import GRPO, PPO, assert_caught, assert_passes, bad_id

# (preset, native overrides, raw patches, rule, severity, fragment of verl's message)
BAD: list[tuple[str, dict[str, Any], dict[str, Any], str, str, str]] = [
    (
        GRPO,
        {"data.train_batch_size": 1023, "rollout.n": 1},
        {},
        "real_train_batch_size",
        "error",
        "real_train_batch_size (1023) must be divisible by minimal possible batch size (8)",
    ),
    (
        GRPO,
        {
            "actor.strategy": "megatron",
            "actor.megatron.tensor_model_parallel_size": 2,
            "data.train_batch_size": 3,
            "rollout.n": 4,
            "actor.ppo_mini_batch_size": 3,
        },
        {},
        "real_train_batch_size",
        "error",
        "minimal possible batch size (64)",
    ),
    (
        GRPO,
        {"actor.strategy": "megatron"},
        {"actor.megatron.tensor_model_parallel_size": 3},
        "megatron_world_size",
        "error",
        "n_gpus (8) must be divisible by model_parallel_size (3) times context_parallel_size (1)",
    ),
    (
        GRPO,
        {"data.train_batch_size": 128},
        {},
        "train_batch_ge_mini",
        "error",
        "train_batch_size (128) must be >= actor.ppo_mini_batch_size (256)",
    ),
    (
        GRPO,
        {"actor.ppo_mini_batch_size": 3, "rollout.n": 2},
        {},
        "mini_batch_dp",
        "error",
        "Got mini_batch_size=6 and self.engine.get_data_parallel_size()=8",
    ),
    (
        GRPO,
        {"actor.ppo_micro_batch_size_per_gpu": 48},
        {},
        "micro_divides_mini",
        "error",
        "data size must be divisible by force_group_size * micro_batch_size_per_gpu: each GPU's mini-batch holds 160",
    ),
    (
        GRPO,
        {"rollout.log_prob_micro_batch_size_per_gpu": 48},
        {},
        "log_prob_micro_divides_batch",
        "error",
        "log-probs for 640 sequences (5120 after padding / DP 8), not a multiple of rollout.log_prob_micro_batch_size_per_gpu (48)",
    ),
    (
        GRPO,
        {"ref.log_prob_micro_batch_size_per_gpu": 48},
        {},
        "log_prob_micro_divides_batch",
        "error",
        "ref.log_prob_micro_batch_size_per_gpu (48)",
    ),
    (
        # The Megatron ref shares the actor's layout: DP = 8 GPUs / TP 2 = 4 ranks of 1280 sequences each.
        GRPO,
        {
            "actor.strategy": "megatron",
            "actor.megatron.tensor_model_parallel_size": 2,
            "ref.log_prob_micro_batch_size_per_gpu": 48,
        },
        {},
        "log_prob_micro_divides_batch",
        "error",
        "log-probs for 1280 sequences (5120 after padding / DP 4), not a multiple of ref.log_prob_micro_batch_size_per_gpu",
    ),
    (
        GRPO,
        {"rollout.log_prob_micro_batch_size_per_gpu": None},
        {},
        "micro_batch_required",
        "error",
        "[actor_rollout_ref.rollout] Please set at least one of 'actor_rollout_ref.rollout.log_prob_micro_batch_size'",
    ),
    (
        GRPO,
        {"ref.log_prob_micro_batch_size_per_gpu": None},
        {},
        "micro_batch_required",
        "error",
        "[actor_rollout_ref.ref] Please set at least one of",
    ),
    (
        GRPO,
        {
            "actor.use_dynamic_bsz": True,
            "ref.log_prob_use_dynamic_bsz": False,
            "ref.log_prob_micro_batch_size_per_gpu": None,
        },
        {},
        "micro_batch_required",
        "error",
        "[actor] Please set at least one of 'actor.ppo_micro_batch_size' or 'actor.ppo_micro_batch_size_per_gpu'",
    ),
    (
        PPO,
        {"critic.use_dynamic_bsz": False},
        {},
        "micro_batch_required",
        "error",
        "[critic] Please set at least one of 'critic.micro_batch_size' or 'critic.micro_batch_size_per_gpu'.",
    ),
    (
        GRPO,
        {"actor.use_dynamic_bsz": True, "rollout.log_prob_use_dynamic_bsz": False},
        {},
        "dynamic_bsz_mismatch",
        "error",
        "self.config.actor.use_dynamic_bsz == self.config.rollout.log_prob_use_dynamic_bsz",
    ),
    (
        GRPO,
        {"actor.use_dynamic_bsz": True, "actor.ppo_max_token_len_per_gpu": 1024},
        {},
        "dynamic_token_budget",
        "error",
        "max_token_len must be greater than the sequence length. Got max_token_len=1024 and max_seq_len=1536",
    ),
    (
        GRPO,
        {"actor.use_dynamic_bsz": True, "rollout.log_prob_max_token_len_per_gpu": 1000},
        {},
        "dynamic_token_budget",
        "error",
        "rollout.log_prob_max_token_len_per_gpu (1000)",
    ),
    (
        PPO,
        {
            "data.max_prompt_length": 16384,
            "data.max_response_length": 20000,
            "data.mean_prompt_length": None,
            "data.mean_response_length": None,
        },
        {},
        "dynamic_token_budget",
        "error",
        "critic.ppo_infer_max_token_len_per_gpu (V1 critic) (32768)",
    ),
    (
        PPO,
        {"critic.ppo_max_token_len_per_gpu": 8192},
        {},
        "critic_v1_batching",
        "warning",
        "runs the critic engine with dynamic batching and a 32768-token budget per GPU",
    ),
]

# The same configs, fixed as the message says: the rule passes.
GOOD: list[tuple[str, dict[str, Any], str]] = [
    (GRPO, {"data.train_batch_size": 1024, "rollout.n": 1}, "real_train_batch_size"),
    (GRPO, {"data.train_batch_size": 1023, "rollout.n": 8}, "real_train_batch_size"),
    (GRPO, {"data.train_batch_size": 512}, "train_batch_ge_mini"),
    (GRPO, {"actor.ppo_mini_batch_size": 8, "rollout.n": 1}, "mini_batch_dp"),
    (GRPO, {"actor.ppo_micro_batch_size_per_gpu": 40}, "micro_divides_mini"),
    (GRPO, {"rollout.log_prob_micro_batch_size_per_gpu": 64}, "log_prob_micro_divides_batch"),
    (
        # 1280 sequences per Megatron ref rank (DP 4) divide by 256; the FSDP count (DP 8, 640) would not.
        GRPO,
        {
            "actor.strategy": "megatron",
            "actor.megatron.tensor_model_parallel_size": 2,
            "ref.log_prob_micro_batch_size_per_gpu": 256,
        },
        "log_prob_micro_divides_batch",
    ),
    (GRPO, {"actor.use_dynamic_bsz": True, "ref.log_prob_micro_batch_size_per_gpu": None}, "micro_batch_required"),
    (GRPO, {"actor.use_dynamic_bsz": True}, "dynamic_bsz_mismatch"),
    (GRPO, {"actor.use_dynamic_bsz": True, "actor.ppo_max_token_len_per_gpu": 1536}, "dynamic_token_budget"),
    (
        GRPO,
        {
            "actor.use_dynamic_bsz": True,
            "actor.ulysses_sequence_parallel_size": 2,
            "actor.ppo_max_token_len_per_gpu": 768,
        },
        "dynamic_token_budget",
    ),
    (GRPO, {}, "critic_v1_batching"),
]


@pytest.mark.parametrize(("preset", "overrides", "raw", "rule", "severity", "fragment"), BAD, ids=map(bad_id, BAD))
def test_bad_config_is_caught(preset, overrides, raw, rule, severity, fragment):
    assert_caught(preset, overrides, raw, rule, severity, fragment)


@pytest.mark.parametrize(("preset", "overrides", "rule"), GOOD)
def test_good_config_passes(preset, overrides, rule):
    assert_passes(preset, overrides, rule)
