"""Algorithm and model rules (calculator/verl/checks/algorithm.py): group estimators with one sample, critic
settings without a critic, KL twice, vLLM's LoRA rank limit; each catches a bad config with the message and passes
the fixed one."""

from __future__ import annotations

from typing import Any

import pytest

from tests.verl.checks.cases import GRPO, PPO, assert_caught, assert_passes, bad_id

# (preset, native overrides, raw patches, rule, severity, fragment of verl's message)
BAD: list[tuple[str, dict[str, Any], dict[str, Any], str, str, str]] = [
    (GRPO, {"rollout.n": 1}, {}, "group_estimator_n1", "warning", "the advantage is the raw reward"),
    (
        GRPO,
        {"rollout.n": 1, "algorithm.adv_estimator": "grpo_passk"},
        {},
        "group_estimator_n1",
        "error",
        "Pass@k requires at least 2 samples per group",
    ),
    (
        GRPO,
        {"rollout.n": 1, "algorithm.adv_estimator": "rloo_vectorized"},
        {},
        "group_estimator_n1",
        "warning",
        "all advantages are 0",
    ),
    (
        GRPO,
        {"critic.ppo_micro_batch_size_per_gpu": 8, "critic.fsdp.param_offload": True},
        {},
        "critic_settings_without_critic",
        "warning",
        "critic settings (critic.ppo_micro_batch_size_per_gpu, critic.fsdp) have no effect",
    ),
    (
        PPO,
        {"critic.enable": False},
        {},
        "gae_without_critic",
        "warning",
        "computes advantages from the critic's values",
    ),
    (
        GRPO,
        {"algorithm.use_kl_in_reward": True},
        {},
        "kl_twice",
        "warning",
        "NOTICE: You have both enabled in-reward kl and kl loss.",
    ),
    (GRPO, {"model.lora_rank": 1024}, {}, "lora_rank_vllm", "error", "lora_rank must be less than or equal to 512"),
]

# The same configs, fixed as the message says: the rule passes.
GOOD: list[tuple[str, dict[str, Any], str]] = [
    (GRPO, {"rollout.n": 2}, "group_estimator_n1"),
    (GRPO, {"algorithm.adv_estimator": "reinforce_plus_plus", "rollout.n": 1}, "group_estimator_n1"),
    (PPO, {"critic.ppo_micro_batch_size_per_gpu": 8}, "critic_settings_without_critic"),
    (PPO, {}, "gae_without_critic"),
    (GRPO, {"model.lora_rank": 512}, "lora_rank_vllm"),
]


@pytest.mark.parametrize(("preset", "overrides", "raw", "rule", "severity", "fragment"), BAD, ids=map(bad_id, BAD))
def test_bad_config_is_caught(preset, overrides, raw, rule, severity, fragment):
    assert_caught(preset, overrides, raw, rule, severity, fragment)


@pytest.mark.parametrize(("preset", "overrides", "rule"), GOOD)
def test_good_config_passes(preset, overrides, rule):
    assert_passes(preset, overrides, rule)
