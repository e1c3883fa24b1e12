"""The planner's search space (calculator/planning/space.py): the GPU-count ladder, knob vectors and the scenario a
point of the space stands for."""

from __future__ import annotations

from dataclasses import replace

import pytest

from calculator import load_scenario
from calculator.planning.search import GpuSearch
from calculator.planning.space import gpu_count_ladder

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
