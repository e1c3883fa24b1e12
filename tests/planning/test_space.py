"""The planner's search space (calculator/planning/space.py): the GPU-count ladder, knob vectors and the scenario a
point of the space stands for."""

from __future__ import annotations

from dataclasses import replace

import pytest

from calculator import estimate, load_scenario
from calculator.planning.search import GpuSearch
from calculator.planning.space import (
    CRITIC_BUDGET_FACTOR,
    BatchOption,
    batch_options_for,
    batch_overrides,
    build_scenario,
    gpu_count_ladder,
    knobs_of,
)
from calculator.resolve.architectures import resolve_architectures

BASE = "qwen2.5-7b-grpo-8xh100"
MARGIN = 0.10


@pytest.fixture(scope="module")
def base():
    return load_scenario(BASE)


def test_ladder_powers_of_two_then_whole_nodes():
    ladder = gpu_count_ladder(8, 1024)
    assert ladder[:6] == [1, 2, 4, 8, 16, 24]
    assert ladder[-1] == 1024 and all(n % 8 == 0 for n in ladder[3:])
    assert gpu_count_ladder(6, 20) == [1, 2, 4, 6, 12, 18]
    assert gpu_count_ladder(8, 4) == [1, 2, 4]


def test_knobs_round_trip_through_build(base):
    """A knob vector and its scenario agree (what the search varies is what the estimate sees)."""
    srch = GpuSearch(base, "h100-80gb", max_gpus=64, margin=MARGIN, allow_lora=True)
    k = replace(srch.frontier(8)[0], param_offload=True, ulysses_sp=2)
    s = srch.build(k)
    assert s is not None
    assert s.actor.fsdp_config.param_offload and s.actor.fsdp_config.optimizer_offload
    assert s.actor.ulysses_sequence_parallel_size == 2
    assert s.rollout.tensor_model_parallel_size == k.rollout_tp
    assert s.model.lora_rank == 64
    assert s.rollout.max_model_len == s.data.max_prompt_length + s.data.max_response_length
    assert not s.actor.use_dynamic_bsz and s.actor.ppo_micro_batch_size_per_gpu == 1
    assert s.rollout.log_prob_micro_batch_size_per_gpu == 1 and s.ref.log_prob_micro_batch_size_per_gpu == 1


def test_batch_options_of_the_reference(base):
    """As configured (16 x (512 + 600) = 17,792 tokens per micro-batch), the token budgets below that, then one
    sequence per micro-batch."""
    opts = batch_options_for(base)
    assert opts[0] == BatchOption("configured") and opts[0].label == "as configured"
    assert [o.value for o in opts[1:-1]] == [16384, 8192, 4096, 2048, 1024, 512]
    assert opts[-1] == BatchOption("fixed", 1) and opts[-1].label == "1 sequence(s) per micro-batch"
    assert BatchOption("dynamic", 4096).label == "token budget 4096"


def test_megatron_batch_options_leave_out_budgets_below_the_longest_sequence(base):
    """Megatron cannot raise Ulysses SP, so a token budget below max prompt + max response (512 + 1,024 = 1,536
    tokens here) could never be built: 1,024 and 512 are left out, 2,048 and up stay. FSDP keeps them (SP can
    make them valid)."""
    meg = base.model_copy(update={"actor": base.actor.model_copy(update={"strategy": "megatron"})})
    meg = meg.model_copy(update={"data": meg.data.model_copy(update={"max_response_length": 1024})})
    assert [o.value for o in batch_options_for(meg)[1:-1]] == [16384, 8192, 4096, 2048]
    fsdp = meg.model_copy(update={"actor": meg.actor.model_copy(update={"strategy": "fsdp"})})
    assert [o.value for o in batch_options_for(fsdp)[1:-1]] == [16384, 8192, 4096, 2048, 1024, 512]


def test_batch_overrides_cap_explicit_log_prob_sizes_and_give_the_critic_twice_the_budget():
    """PPO preset: log-prob and critic micro-batches unset; with fixed micro-batches verl requires them
    (validate_config, CriticConfig.__post_init__), so the planner sets them to its size; critic budget 32,768."""
    s = load_scenario("qwen2.5-7b-ppo-8xh100")
    assert batch_overrides(s, BatchOption("configured")) == {}
    dyn = batch_overrides(s, BatchOption("dynamic", 4096))
    assert dyn["actor.use_dynamic_bsz"] is True and dyn["actor.ppo_max_token_len_per_gpu"] == 4096
    assert dyn["critic.ppo_max_token_len_per_gpu"] == CRITIC_BUDGET_FACTOR * 4096 == 8192  # capped, below 32,768
    assert dyn["rollout.log_prob_max_token_len_per_gpu"] is None
    fixed = batch_overrides(s, BatchOption("fixed", 2))
    assert fixed["actor.use_dynamic_bsz"] is False and fixed["actor.ppo_micro_batch_size_per_gpu"] == 2
    assert fixed["rollout.log_prob_micro_batch_size_per_gpu"] == fixed["ref.log_prob_micro_batch_size_per_gpu"] == 2
    assert (
        fixed["critic.ppo_micro_batch_size_per_gpu"] == 2 and fixed["critic.forward_micro_batch_size_per_gpu"] is None
    )
    fixed_scenario = load_scenario(s, overrides=fixed)
    assert not [p for p in estimate(fixed_scenario).checks if p.severity == "error"]
    grpo = load_scenario(BASE)  # log-prob micro-batches set to 32: capped at the new size, never raised
    assert batch_overrides(grpo, BatchOption("fixed", 2))["rollout.log_prob_micro_batch_size_per_gpu"] == 2
    assert batch_overrides(grpo, BatchOption("fixed", 64))["rollout.log_prob_micro_batch_size_per_gpu"] == 32
    assert load_scenario(s, overrides=dyn).actor.use_dynamic_bsz
    assert not load_scenario(s, overrides=fixed).actor.use_dynamic_bsz


def test_knobs_of_a_scenario_build_the_same_scenario(base):
    """The base's own knobs, built again, give back the base (nothing is changed that the knobs do not say)."""
    arch = resolve_architectures(base)[0]
    k = knobs_of(base)
    assert (k.num_gpus, k.rollout_tp, k.gpu_memory_utilization, k.batch, k.lora) == (8, 2, 0.6, 0, False)
    assert build_scenario(base, k, batch_options_for(base), arch) == base


def test_rejected_points_build_nothing(base):
    arch = resolve_architectures(base)[0]
    options = batch_options_for(base)
    k = knobs_of(base)
    assert build_scenario(base, replace(k, rollout_tp=8), options, arch) is None  # 28 heads / TP 8
    assert build_scenario(base, replace(k, num_gpus=3), options, arch) is None  # TP 2 does not divide 3 GPUs
