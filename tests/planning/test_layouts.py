"""Megatron layouts (calculator.planning.layouts): the list the planner searches, its bounds and order, and that no
layout Megatron-core would reject is ever proposed, by the planner's list or by the advisor's lever."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calculator import load_scenario
from calculator.inputs.presets import model_presets
from calculator.planning.layouts import (
    Layout,
    candidate_layouts,
    layout_of,
    layout_problem,
    parallelism_key,
    with_layout,
)
from calculator.planning.levers import lever_candidates
from calculator.resolve.architectures import resolve_architectures

BASE = "qwen2.5-7b-grpo-8xh100"
MOE = {"model.path": "qwen3-30b-a3b", "actor.strategy": "megatron"}


def _megatron_core_accepts(lay: Layout, arch, gpus_per_node: int, num_gpus: int, vpp: int | None) -> bool:
    """Megatron-core's start-up rules written out independently of layouts.layout_problem (sources there)."""
    etp = lay.etp or lay.tp
    return (
        lay.tp <= gpus_per_node
        and arch.num_attention_heads % lay.tp == 0
        and arch.num_kv_heads % lay.tp == 0
        and arch.num_layers % lay.pp == 0
        and (vpp is None or (lay.pp > 1 and (arch.num_layers // lay.pp) % vpp == 0))
        and (lay.ep == 1 or (arch.is_moe and arch.num_experts % lay.ep == 0))
        and num_gpus % (lay.tp * lay.pp * lay.cp) == 0
        and num_gpus % (etp * lay.ep * lay.pp) == 0
    )


def test_moe_list_is_bounded_and_ordered():
    """Qwen3-30B-A3B (48 layers, 32 heads, 4 KV heads, 128 experts) on 8-GPU nodes, up to 1024 GPUs: TP 1/2/4
    (8 does not divide 4 KV heads) x PP 1/2/4/8/16 (all divide 48) x EP 1..128 (8 powers of two) = 3 x 5 x 8 = 120
    layouts; with TP = 2^a, PP = 2^b, EP = 2^c the smallest world is 2^(a+b+c), and a+b+c > 10 (over 1024) for
    1 + 2 + 3 triples at 11, 1 + 2 at 12, 1 at 13 = 10 of them: 110 layouts, the scenario's TP 1 PP 1 EP 1 first."""
    s = load_scenario(BASE, overrides=MOE)
    arch = resolve_architectures(s)[0]
    got = candidate_layouts(s, arch, 1024)
    assert len(got) == 110 and len(set(got)) == 110
    assert got[0] == Layout(1, 1, 1)
    keys = [parallelism_key(lay) for lay in got[1:]]
    assert keys == sorted(keys)
    # TP x PP x EP = 2: EP first (less PP, then less TP), then TP, then PP
    assert got[1:4] == [Layout(1, 1, 2), Layout(2, 1, 1), Layout(1, 2, 1)]
    assert all(lay.tp in (1, 2, 4) and lay.pp <= 16 and lay.ep <= 128 for lay in got)
    # up to 8 GPUs: 2^(a+b+c) <= 8, C(3+3, 3) = 20 triples with a+b+c <= 3, minus TP 8 (a = 3): 19, the own included
    assert len(candidate_layouts(s, arch, 8)) == 19


def test_scenario_layout_first_and_its_cp_etp_kept():
    s = load_scenario(
        BASE,
        overrides={
            **MOE,
            "actor.megatron.tensor_model_parallel_size": 2,
            "actor.megatron.expert_model_parallel_size": 8,
            "actor.megatron.context_parallel_size": 2,
            "actor.megatron.expert_tensor_parallel_size": 1,
        },
    )
    got = candidate_layouts(s, resolve_architectures(s)[0], 64)
    assert got[0] == Layout(2, 1, 8, cp=2, etp=1) == layout_of(s)
    assert all(lay.cp == 2 and lay.etp == 1 for lay in got)
    assert all(lay.min_world <= 64 for lay in got)
    # min_world = lcm(TP x PP x CP, ETP x EP x PP): TP 2 PP 1 CP 2 -> 4; ETP 1 x EP 8 -> 8; lcm 8
    assert got[0].min_world == 8


def test_dense_model_has_only_ep_1():
    """Qwen2.5-7B: 28 layers (PP 1/2/4), 28 heads and 4 KV heads (TP 1/2/4): 3 x 3 = 9 layouts, EP 1."""
    s = load_scenario(BASE, overrides={"actor.strategy": "megatron"})
    got = candidate_layouts(s, resolve_architectures(s)[0], 1024)
    assert len(got) == 9 and {lay.ep for lay in got} == {1}
    assert layout_problem(Layout(1, 1, 2), resolve_architectures(s)[0], 8) is not None


def test_virtual_pipeline_needs_pp_above_1_and_divisible_stages():
    """VPP 2 on 48 layers: PP 1 is rejected (interleaving needs PP > 1); PP 16 gives 3 layers per stage, not
    divisible by 2; PP 2 / 4 / 8 give 24 / 12 / 6."""
    s = load_scenario(
        BASE,
        overrides={
            **MOE,
            "actor.megatron.pipeline_model_parallel_size": 2,
            "actor.megatron.virtual_pipeline_model_parallel_size": 2,
        },
    )
    got = candidate_layouts(s, resolve_architectures(s)[0], 1024)
    assert {lay.pp for lay in got} == {2, 4, 8}


def test_with_layout_sets_the_actor_keys_only():
    s = load_scenario(BASE, overrides=MOE)
    t = with_layout(s, Layout(4, 2, 8))
    m = t.actor.megatron
    assert (m.tensor_model_parallel_size, m.pipeline_model_parallel_size, m.expert_model_parallel_size) == (4, 2, 8)
    assert t.critic == s.critic and t.rollout == s.rollout


_MODELS = sorted(model_presets())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=st.sampled_from(_MODELS),
    num_gpus=st.sampled_from([1, 2, 4, 8, 16, 24, 32, 48, 64, 128, 256]),
    per_node=st.sampled_from([4, 8]),
    vpp=st.sampled_from([None, 2]),
)
def test_no_proposed_layout_is_rejected_by_megatron_core(model, num_gpus, per_node, vpp):
    """Over model presets, GPU counts and node sizes: every layout of the planner's list that fits the GPU count,
    and every layout the advisor's megatron_parallel lever proposes, passes Megatron-core's rules."""
    overrides = {
        "model.path": model,
        "actor.strategy": "megatron",
        "hardware.num_gpus": num_gpus,
        "hardware.gpus_per_node": min(per_node, num_gpus),
        "rollout.tensor_model_parallel_size": 1,
    }
    if vpp and num_gpus > 1:  # the scenario's own PP 2 must divide the GPUs (Scenario rule)
        overrides |= {
            "actor.megatron.pipeline_model_parallel_size": 2,
            "actor.megatron.virtual_pipeline_model_parallel_size": 2,
        }
    s = load_scenario(BASE, overrides=overrides)
    arch = resolve_architectures(s)[0]
    gpn = s.hardware.gpus_per_node
    for lay in candidate_layouts(s, arch, num_gpus)[1:]:
        assert lay.min_world <= num_gpus
        assert _megatron_core_accepts(
            lay, arch, gpn, lay.min_world, s.actor.megatron.virtual_pipeline_model_parallel_size
        )
    own = layout_of(s)
    for change in lever_candidates(s, num_gpus).get("megatron_parallel", []):
        ((key, value),) = change.items()
        attr = {"tensor": "tp", "pipeline": "pp", "expert": "ep"}[key.split(".")[-1].split("_")[0]]
        lay = Layout(**{**own.__dict__, attr: value})
        assert _megatron_core_accepts(lay, arch, gpn, num_gpus, s.actor.megatron.virtual_pipeline_model_parallel_size)


@pytest.mark.parametrize("tp", [3, 16])
def test_layout_problem_names_the_rule(tp):
    s = load_scenario(BASE, overrides=MOE)
    why = layout_problem(Layout(tp, 1, 1), resolve_architectures(s)[0], 8)
    assert why is not None and f"TP {tp}" in why
