"""The OOM advisor's levers (calculator/planning/levers.py): a consistent catalogue, and the candidate changes of the
reference scenario by hand (only levers that apply, mildest first); every candidate is a valid scenario, and a lever
once applied is no longer offered."""

from __future__ import annotations

import pytest

from calculator import load_scenario
from calculator.inputs.presets import scenario_presets
from calculator.planning.levers import LEVERS, lever_candidates
from calculator.planning.space import LORA_RANK

BASE = "qwen2.5-7b-grpo-8xh100"  # 8 H100, util 0.6, micro 16, prompt 512 + mean response 600 (max 1024), n 5


def test_catalogue_is_consistent():
    for key, lv in LEVERS.items():
        assert lv.lever == key and lv.title and lv.source and lv.explanation
        assert lv.tier in ("settings", "hardware", "workload") and 0 <= lv.time_class <= 3
        assert lv.changes_experiment == (lv.tier == "workload"), key  # only workload levers change the experiment


@pytest.fixture(scope="module")
def reference() -> dict:
    return lever_candidates(load_scenario(BASE), max_gpus=64)


def test_reference_candidates_by_hand(reference: dict):
    assert reference["cap_max_model_len"] == [{"rollout.max_model_len": 512 + 1024}]
    assert reference["gpu_memory_utilization"] == [{"rollout.gpu_memory_utilization": u} for u in (0.5, 0.4, 0.3)]
    assert reference["rollout_tp"] == [{"rollout.tensor_model_parallel_size": 4}]  # 8 would not divide 28 heads
    assert [c["actor.ppo_micro_batch_size_per_gpu"] for c in reference["micro_batch"]] == [8, 4, 2, 1]
    # dynamic-batch budgets below today's 16 x (512 + 600) = 17,792 tokens, never below one 1,536-token sequence
    assert [c["actor.ppo_max_token_len_per_gpu"] for c in reference["token_budget"]] == [16384, 8192, 4096, 2048]
    assert reference["ulysses_sp"] == [{"actor.ulysses_sequence_parallel_size": x} for x in (2, 4)]
    assert [c["hardware.num_gpus"] for c in reference["more_gpus"]] == [16, 24, 32, 40, 48, 56, 64]
    assert reference["fewer_responses"] == [{"rollout.n": 2}]  # GRPO needs two responses per group
    assert reference["smaller_rollout_batch"][0] == {"data.train_batch_size": 512, "actor.ppo_mini_batch_size": 256}
    assert reference["shorter_responses"][0] == {"data.max_response_length": 512, "data.mean_response_length": 512}
    assert reference["lora"] == [{"model.lora_rank": LORA_RANK}]


def test_levers_that_do_not_apply_are_absent(reference: dict):
    """free_cache_engine is already on, no critic, no entropy term, FSDP1 full sharding, no no_sync."""
    for lever in ("free_cache_engine", "critic_param_offload", "critic_optimizer_offload", "entropy_checkpointing",
                  "offload_policy", "full_shard", "no_sync_off", "gradient_checkpointing"):  # fmt: skip
        assert lever not in reference, lever
    assert set(reference) <= set(LEVERS)


@pytest.mark.parametrize("preset", sorted(scenario_presets()))
def test_every_candidate_is_a_valid_scenario(preset: str):
    s = load_scenario(preset)
    candidates = lever_candidates(s, max_gpus=64)
    assert candidates and set(candidates) <= set(LEVERS)
    for changes in candidates.values():
        for change in changes:
            assert load_scenario(s, overrides=change) != s  # valid (else InputError) and a real change


@pytest.mark.parametrize("lever", ["fused_kernels", "entropy_chunking", "enforce_eager", "param_offload", "lora"])
def test_an_applied_lever_is_no_longer_offered(reference: dict, lever: str):
    s = load_scenario(BASE, overrides=reference[lever][0])
    assert lever not in lever_candidates(s, max_gpus=64)


def test_megatron_parallel_lever_offers_ep_tp_pp_that_megatron_accepts():
    """Qwen3-30B-A3B on 8 GPUs under Megatron at TP 1 / PP 1 / EP 1: EP 2 and 4 (128 experts; 8 GPUs divisible by
    ETP 1 x EP x PP 1), TP 2 and 4 (4 KV heads), PP 2 and 4 (48 layers), the two next sizes of each; none for FSDP,
    and none above the GPU count (EP 16 does not divide 8 GPUs)."""
    from calculator import load_scenario
    from calculator.planning.levers import lever_candidates

    grpo = {"algorithm.adv_estimator": "grpo"}  # no critic (test below for one)
    s = load_scenario(None, overrides={"model.path": "qwen3-30b-a3b", "actor.strategy": "megatron", **grpo})
    got = lever_candidates(s, 64)["megatron_parallel"]
    assert got == [
        {"actor.megatron.expert_model_parallel_size": 2},
        {"actor.megatron.expert_model_parallel_size": 4},
        {"actor.megatron.tensor_model_parallel_size": 2},
        {"actor.megatron.tensor_model_parallel_size": 4},
        {"actor.megatron.pipeline_model_parallel_size": 2},
        {"actor.megatron.pipeline_model_parallel_size": 4},
    ]
    assert "megatron_parallel" not in lever_candidates(
        load_scenario(None, overrides={"model.path": "qwen3-30b-a3b"}), 64
    )


def test_megatron_parallel_lever_moves_a_critic_that_follows_the_actor():
    """PPO with a Megatron critic of the actor's model and layout: each candidate sets both roles' sizes (as the
    planner's layouts do, ``calculator.planning.layouts.critic_follows_actor``); a critic with its own TP keeps it."""
    s = load_scenario(
        None, overrides={"model.path": "qwen3-30b-a3b", "actor.strategy": "megatron", "algorithm.adv_estimator": "gae"}
    )
    got = lever_candidates(s, 64)["megatron_parallel"]
    assert got and all(
        change[key.replace("actor.", "critic.")] == value
        for change in got
        for key, value in change.items()
        if key.startswith("actor.")
    )
    own = load_scenario(s, overrides={"critic.megatron.tensor_model_parallel_size": 2})
    assert all(
        not any(k.startswith("critic.") for k in change) for change in lever_candidates(own, 64)["megatron_parallel"]
    )
