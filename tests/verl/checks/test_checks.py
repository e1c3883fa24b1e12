"""verl 0.9.1's own config checks (calculator/verl/checks/): each rule catches a bad config with verl's
message and passes a good one; estimate() reports them as warnings."""

from __future__ import annotations

from typing import Any

import pytest

from calculator import estimate, load_scenario
from calculator.inputs.presets import scenario_presets
from calculator.inputs.scenario import Scenario
from calculator.verl.checks import check_config, padded_batch


def patch(s: Any, key: str, value: Any) -> Any:
    """Set a nested field without validation (for configs the Scenario validator already refuses)."""
    head, _, rest = key.partition(".")
    if not rest:
        return s.model_copy(update={head: value})
    return s.model_copy(update={head: patch(getattr(s, head), rest, value)})


GRPO = "qwen2.5-7b-grpo-8xh100"  # 8 GPUs, train 1024, n 5, mini 256, micro 16, log-prob micro 32, KL loss
PPO = "qwen2.5-7b-ppo-8xh100"


def rules(s: Scenario) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in check_config(s):
        out.setdefault(p.rule, []).append(p.message)
    return out


def test_presets_have_no_verl_errors():
    for pid in scenario_presets():
        errors = [p for p in check_config(load_scenario(pid)) if p.severity == "error"]
        assert not errors, (pid, errors)


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
        PPO,
        {"actor.strategy": "megatron", "critic.megatron.tensor_model_parallel_size": 3},
        {},
        "megatron_world_size",
        "error",
        "critic: world size 8 is not divisible by tensor_model_parallel_size (3)",
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
    (
        PPO,
        {"critic.ppo_max_token_len_per_gpu": 8192},
        {},
        "critic_v1_batching",
        "warning",
        "runs the critic engine with dynamic batching and a 32768-token budget per GPU",
    ),
]


def _bad_id(case) -> str:
    return f"{case[3]}-{'-'.join(f'{k}={v}' for k, v in {**case[1], **case[2]}.items())}"[:90]


@pytest.mark.parametrize(("preset", "overrides", "raw", "rule", "severity", "fragment"), BAD, ids=map(_bad_id, BAD))
def test_bad_config_is_caught(preset, overrides, raw, rule, severity, fragment):
    s = load_scenario(preset, overrides=overrides)
    for key, value in raw.items():
        s = patch(s, key, value)
    problems = [p for p in check_config(s) if p.rule == rule]
    assert problems, (rule, rules(s))
    assert any(fragment in p.message for p in problems), [p.message for p in problems]
    assert all(p.severity == severity for p in problems)
    assert all(p.source and (p.source in p.message) for p in problems)


# The same configs, fixed as the message says: the rule passes.
GOOD: list[tuple[str, dict[str, Any], str]] = [
    (GRPO, {"data.train_batch_size": 1024, "rollout.n": 1}, "real_train_batch_size"),
    (GRPO, {"data.train_batch_size": 1023, "rollout.n": 8}, "real_train_batch_size"),
    (GRPO, {"data.train_batch_size": 512}, "train_batch_ge_mini"),
    (GRPO, {"actor.ppo_mini_batch_size": 8, "rollout.n": 1}, "mini_batch_dp"),
    (GRPO, {"actor.ppo_micro_batch_size_per_gpu": 40}, "micro_divides_mini"),
    (GRPO, {"rollout.log_prob_micro_batch_size_per_gpu": 64}, "log_prob_micro_divides_batch"),
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
    (GRPO, {"rollout.tensor_model_parallel_size": 4}, "rollout_tp_heads"),
    (
        GRPO,
        {"hardware.num_gpus": 16, "rollout.tensor_model_parallel_size": 4, "rollout.data_parallel_size": 4},
        "rollout_replica_nodes",
    ),
    (GRPO, {"rollout.expert_parallel_size": 2}, "rollout_ep"),
    (GRPO, {"rollout.n": 2}, "group_estimator_n1"),
    (GRPO, {"algorithm.adv_estimator": "reinforce_plus_plus", "rollout.n": 1}, "group_estimator_n1"),
    (PPO, {"critic.ppo_micro_batch_size_per_gpu": 8}, "critic_settings_without_critic"),
    (PPO, {}, "gae_without_critic"),
    (GRPO, {"model.lora_rank": 512}, "lora_rank_vllm"),
    (GRPO, {"actor.ulysses_sequence_parallel_size": 4}, "ulysses_heads"),
    (GRPO, {"actor.ulysses_sequence_parallel_size": 2}, "ulysses_remove_padding"),
    (PPO, {"critic.ulysses_sequence_parallel_size": 2}, "ulysses_world"),
    (GRPO, {}, "critic_v1_batching"),
]


@pytest.mark.parametrize(("preset", "overrides", "rule"), GOOD)
def test_good_config_passes(preset, overrides, rule):
    s = load_scenario(preset, overrides=overrides)
    assert rule not in rules(s), rules(s)[rule]


def test_padded_batch_follows_v1_trainer():
    s = load_scenario(GRPO, overrides={"data.train_batch_size": 1000, "rollout.n": 3, "actor.ppo_mini_batch_size": 8})
    # lcm(dp 8, mini 8 x 3 = 24) = 24; 3000 -> 3000 (already a multiple of 24)
    assert padded_batch(s) == 3000
    s = load_scenario(GRPO, overrides={"data.train_batch_size": 1001, "rollout.n": 1, "actor.ppo_mini_batch_size": 7})
    assert padded_batch(s) == 1008  # lcm(8, 7) = 56


def test_estimate_reports_problems_as_warnings():
    s = load_scenario(GRPO, overrides={"actor.ppo_micro_batch_size_per_gpu": 48})
    r = estimate(s)
    assert any(w.startswith("verl: data size must be divisible") for w in r.warnings)
