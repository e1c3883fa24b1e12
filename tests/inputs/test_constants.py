"""Named engine constants and efficiencies (calculator/inputs/constants.py): the cited defaults, their bounds (one
boundary test per kind of limit), a description with a source for every field, and each value reaching the estimate
through ``overheads.*`` / ``efficiency.*`` exactly as the formula says."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from calculator import estimate, load_scenario
from calculator.inputs.constants import EfficiencyConfig, OverheadConfig
from calculator.units import GIB_BYTES

BASE = "qwen2.5-7b-grpo-8xh100"


def test_defaults_are_the_cited_values():
    o, e = OverheadConfig(), EfficiencyConfig()
    assert (o.cuda_context_gib, o.trainer_nccl_gib, o.fragmentation_fraction, o.vllm_non_torch_gib) == (
        0.5,
        0.5,
        0.1,
        0.25,
    )
    assert (o.vllm_tp_comm_gib, o.vllm_cuda_graph_per_graph_mib, o.sglang_reserved_gib) == (0.5, 4.0, 1.0)
    assert (e.train_mfu, e.forward_mfu, e.prefill_mfu, e.decode_hbm_efficiency) == (0.35, 0.35, 0.5, 0.7)
    assert (e.pcie_efficiency, e.nvlink_efficiency, e.network_efficiency) == (0.8, 0.75, 0.7)
    assert (e.tp_allreduce_latency_us, e.gemm_half_saturation_tokens) == (8.0, 128.0)
    assert (e.train_host_us_per_layer_pass, e.eager_decode_host_us_per_layer, e.cpu_adam_params_per_s) == (
        500.0,
        400.0,
        1e9,
    )


@pytest.mark.parametrize("model", [OverheadConfig, EfficiencyConfig])
def test_every_constant_says_where_it_comes_from(model):
    for name, field in model.model_fields.items():
        assert field.description and len(field.description) > 40, name


@pytest.mark.parametrize(
    ("model", "field", "bad", "good"),
    [
        (OverheadConfig, "cuda_context_gib", -0.1, 0.0),  # ge=0
        (OverheadConfig, "fragmentation_fraction", 1.01, 1.0),  # le=1
        (OverheadConfig, "vllm_cuda_graph_per_graph_mib", 0.5, 1.0),  # ge=1 (vLLM's own floor)
        (EfficiencyConfig, "train_mfu", 0.0, 1.0),  # gt=0, le=1
        (EfficiencyConfig, "train_host_us_per_layer_pass", -1.0, 0.0),  # ge=0: no launch cost is allowed
        (EfficiencyConfig, "cpu_adam_params_per_s", 1e14, 1e13),  # le=1e13
    ],
)
def test_bounds(model, field: str, bad: float, good: float):
    with pytest.raises(ValidationError, match=field):
        model(**{field: bad})
    assert getattr(model(**{field: good}), field) == good


@pytest.mark.parametrize("model", [OverheadConfig, EfficiencyConfig])
def test_no_infinity_or_nan(model):
    name = next(iter(model.model_fields))
    for value in (math.inf, math.nan):
        with pytest.raises(ValidationError):
            model(**{name: value})


def _component(report, phase: str, name: str) -> int:
    return next(c.bytes for p in report.phases if p.name == phase for c in p.details if c.name == name)


def test_overheads_reach_the_estimate():
    """cuda_context: two processes per GPU x the value; nccl_buffers: the trainer's value + the rollout's TP
    communicator (TP 2 in the reference scenario)."""
    base = estimate(load_scenario(BASE))
    more = estimate(
        load_scenario(BASE, overrides={"overheads.cuda_context_gib": 1.0, "overheads.trainer_nccl_gib": 1.0})
    )
    assert _component(base, "update_actor", "cuda_context") == 2 * GIB_BYTES // 2
    assert _component(more, "update_actor", "cuda_context") == 2 * GIB_BYTES
    assert _component(base, "update_actor", "nccl_buffers") == GIB_BYTES // 2 + GIB_BYTES // 2
    assert _component(more, "update_actor", "nccl_buffers") == GIB_BYTES + GIB_BYTES // 2


def test_efficiency_reaches_the_estimate():
    """The update's compute term is FLOPs / (peak x train_mfu): doubling train_mfu halves it exactly."""
    base = estimate(load_scenario(BASE)).time
    fast = estimate(load_scenario(BASE, overrides={"efficiency.train_mfu": 0.7})).time
    assert fast.terms_s["update_actor"]["compute"] == pytest.approx(base.terms_s["update_actor"]["compute"] / 2)
    assert fast.phases_s["rollout"] == base.phases_s["rollout"]  # the rollout does not train
