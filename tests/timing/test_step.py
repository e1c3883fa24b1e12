"""Step time, phase by phase (calculator/timing/step.py): each training-side time term checked by hand from its
formula and the preset facts (tests/support/qwen7b_h100.py), and invariants (hypothesis): phases add up, more GPUs
never slow a fixed update, checkpointing costs the recompute share, offload never makes a step faster. The
rollout's terms are in tests/timing/test_rollout.py, FLOP counts and link bandwidths in tests/timing/test_flops.py."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from calculator import estimate, load_scenario
from calculator.memory.phases import active_phases
from calculator.report.estimate import build_context
from calculator.timing.flops import attention_flops_per_token
from calculator.timing.step import phase_times, step_time
from tests.support.qwen7b_h100 import (
    BASE,
    EDGE,
    EFF_DECODE,
    EFF_FWD,
    EFF_NVLINK,
    EFF_PCIE,
    EFF_TRAIN,
    H100_HBM,
    H100_NVLINK_UNI,
    H100_PCIE5,
    H100_TFLOPS,
    HEAD_DIM,
    HEADS,
    HOST_TRAIN_S,
    LAYERS,
    N_MM,
    P7,
    gemm_eff,
    times,
)
from tests.support.strategies import scenario_dicts


def test_old_log_prob_compute_and_gather_by_hand():
    s, t = times()
    seq = 512 + 600
    micro_tokens, n_micro = 32 * seq, 5120 // 8 // 32  # log_prob micro-batch 32 per GPU, 640 seqs per GPU
    fpt = 2 * N_MM + attention_flops_per_token(build_context(s).actor.arch, seq, causal=True)
    assert fpt == 2 * N_MM + LAYERS * 2 * HEADS * HEAD_DIM * seq
    compute = n_micro * micro_tokens * fpt / (H100_TFLOPS * EFF_FWD)
    terms = t["old_log_prob"].terms
    assert terms["compute"] == pytest.approx(compute, rel=1e-9)
    assert terms["gemm_small_batch"] == pytest.approx(compute * (1 / gemm_eff(micro_tokens) - 1), rel=1e-9)
    gather = P7 * 2 * 7 / 8 / (H100_NVLINK_UNI * EFF_NVLINK)  # bf16 all-gather per micro-batch
    assert gather < compute / n_micro  # hidden under compute, except the first unit's (root + layer 0)
    assert terms["fsdp_comm"] == pytest.approx(n_micro * EDGE * gather, rel=1e-9)
    assert terms["host_overhead"] == 0.0  # 28 layers x 0.5 ms of launches hide under ~0.7 s of compute


def test_update_actor_compute_by_hand_and_recompute_share():
    s, t = times()
    seq = 512 + 600
    tokens_per_gpu = 1024 * 5 * seq / 8
    attn = LAYERS * 2 * HEADS * HEAD_DIM * seq
    executed = (8 * N_MM + 4 * attn) * tokens_per_gpu  # 6N + 2N recompute, attention 3x + 1x
    assert t["update_actor"].terms["compute"] == pytest.approx(executed / (H100_TFLOPS * EFF_TRAIN), rel=1e-9)
    _, t_off = times({"model.enable_gradient_checkpointing": False})
    assert t["update_actor"].terms["compute"] / t_off["update_actor"].terms["compute"] == pytest.approx(8 / 6)


def test_fsdp_comm_exposed_when_micro_batches_are_tiny():
    """Micro-batch of 1 short sequence: its GEMMs (M = 100 rows) run at 100 / (100 + 128) of the large-M rate,
    and per micro-batch 2 bf16 all-gathers + an fp32 reduce-scatter still exceed that compute: the excess is
    what the phase shows as fsdp_comm."""
    ov = {"actor.ppo_micro_batch_size_per_gpu": 1, "data.mean_response_length": 50, "data.mean_prompt_length": 50}
    s, t = times(ov)
    comm = (2 * P7 * 2 + P7 * 4) * 7 / 8 / (H100_NVLINK_UNI * EFF_NVLINK)
    tokens = 100
    cmp = tokens * (8 * N_MM + 4 * LAYERS * 2 * HEADS * HEAD_DIM * tokens) / (H100_TFLOPS * EFF_TRAIN)
    gpu = cmp / gemm_eff(tokens)
    n_micro = 1024 * 5 // 8  # every sequence its own micro-batch, 4 mini-batches x 160
    terms = t["update_actor"].terms
    assert terms["compute"] == pytest.approx(n_micro * cmp, rel=1e-9)
    assert terms["gemm_small_batch"] == pytest.approx(n_micro * (gpu - cmp), rel=1e-9)
    assert comm - gpu > EDGE * comm  # comm-bound: the excess, not the pipeline fill, is exposed
    assert terms["fsdp_comm"] == pytest.approx(n_micro * (comm - gpu), rel=1e-9)
    assert 3 * LAYERS * HOST_TRAIN_S < comm  # launches (fwd, bwd, recompute) hide under the collectives
    assert terms["host_overhead"] == 0.0


def test_host_launches_bound_tiny_micro_batches_of_a_small_model():
    """Qwen2.5-0.5B, one 24-token sequence per micro-batch on one GPU (no FSDP traffic): the GPU work of a
    micro-batch is far shorter than issuing 24 layers x 3 passes, so the micro-batch lasts the host time."""
    ov = {
        "model.path": "qwen2.5-0.5b",
        "hardware.num_gpus": 1,
        "rollout.tensor_model_parallel_size": 1,
        "actor.ppo_micro_batch_size_per_gpu": 1,
        "data.train_batch_size": 16,
        "actor.ppo_mini_batch_size": 16,
        "rollout.n": 2,
        "data.max_prompt_length": 16,
        "data.max_response_length": 8,
        "data.mean_response_length": 8,
    }
    s, t = times(ov)
    terms = t["update_actor"].terms
    n_micro = 32
    layers = build_context(s).actor.arch.num_layers
    gpu = (terms["compute"] + terms["gemm_small_batch"]) / n_micro
    assert terms["fsdp_comm"] == 0.0
    assert terms["host_overhead"] == pytest.approx(n_micro * (3 * layers * HOST_TRAIN_S - gpu), rel=1e-9)


def test_ref_streams_fp32_shard_over_pcie():
    """verl >= 0.8 forces the FSDP reference model to CPU offload: each micro-batch copies the fp32 shard in."""
    ov = {"ref.log_prob_micro_batch_size_per_gpu": 1, "data.mean_response_length": 50, "data.mean_prompt_length": 50}
    s, t = times(ov)
    h2d = P7 * 4 / 8 / (H100_PCIE5 * EFF_PCIE)
    gather = P7 * 2 * 7 / 8 / (H100_NVLINK_UNI * EFF_NVLINK)
    tokens = 100
    cmp = tokens * (2 * N_MM + LAYERS * 2 * HEADS * HEAD_DIM * tokens) / (H100_TFLOPS * EFF_FWD)
    n = 1024 * 5 // 8
    terms = t["ref_log_prob"].terms
    exposed = n * (h2d + gather - cmp / gemm_eff(tokens))
    assert terms["param_stream_pcie"] + terms["fsdp_comm"] == pytest.approx(exposed, rel=1e-9)
    assert terms["param_stream_pcie"] / terms["fsdp_comm"] == pytest.approx(h2d / gather, rel=1e-9)
    _, t_old = times({**ov, "verl_version": "0.6"})  # old verl: bf16 ref resident on GPU, no streaming
    assert t_old["ref_log_prob"].terms["param_stream_pcie"] == 0.0


def test_param_and_optimizer_offload_pcie_by_hand():
    _, t = times({"actor.fsdp_config.param_offload": True, "actor.fsdp_config.optimizer_offload": True})
    params = 2 * P7 * 4 / 8 / (H100_PCIE5 * EFF_PCIE)  # fp32 shard in and out
    adam = 2 * P7 * 8 / 8 / (H100_PCIE5 * EFF_PCIE)  # two fp32 moments in and out
    assert t["old_log_prob"].terms["offload_pcie"] == pytest.approx(params, rel=1e-9)
    assert t["update_actor"].terms["offload_pcie"] == pytest.approx(params + adam, rel=1e-9)
    assert t["weight_sync"].terms["offload_pcie"] == pytest.approx(params, rel=1e-9)


def test_fsdp2_offload_policy_runs_adamw_on_cpu():
    _, t = times({"actor.strategy": "fsdp2", "actor.fsdp_config.offload_policy": True})
    terms = t["update_actor"].terms
    assert "optimizer_step" not in terms
    # 4 mini-batches; each node (8 GPUs, one FSDP group) updates all P7 params at 1e9 params/s.
    assert terms["optimizer_step_cpu"] == pytest.approx(4 * P7 / 1e9, rel=1e-9)


def test_weight_sync_by_hand():
    _, t = times()
    gather = P7 * 4 * 7 / 8 / (H100_NVLINK_UNI * EFF_NVLINK)  # fp32 full_tensor() over 8 GPUs
    copies = (2 * P7 * 4 + P7 * 2 / 2) / (H100_HBM * EFF_DECODE)  # bucket write + read, vLLM bf16 shard
    assert t["weight_sync"].terms["gather"] == pytest.approx(gather, rel=1e-9)
    assert t["weight_sync"].terms["bucket_copies"] == pytest.approx(copies, rel=1e-9)


def test_megatron_pipeline_bubble():
    ov = {
        "actor.strategy": "megatron",
        "actor.megatron.pipeline_model_parallel_size": 4,
        "hardware.num_gpus": 8,
    }
    _, t = times(ov)
    terms = t["old_log_prob"].terms
    # TP 1: the bubble is (pp - 1) stage-times of one micro-batch; compute is n_micro of them.
    n_micro = 5120 // 2 // 32  # DP = 8 / 4 = 2 ranks, 32 sequences per micro-batch
    stage_terms = ("compute", "gemm_small_batch", "tp_ep_comm", "host_overhead")
    per_stage = sum(terms[k] for k in stage_terms)
    assert terms["pipeline_bubble"] / per_stage == pytest.approx(3 / n_micro, rel=1e-9)


def test_throughput_and_mfu_definitions():
    r = estimate(load_scenario(BASE))
    t = r.time
    tokens = 1024 * 5 * (512 + 600)
    assert t.tokens_per_s == pytest.approx(tokens / t.step_s)
    assert t.tokens_per_s_per_gpu == pytest.approx(tokens / t.step_s / 8)
    # MFU counts model FLOPs (no recompute): compute-bound update with ckpt reads train_mfu x 6/8, times the
    # GEMM efficiency of 16 x 1112 tokens; the FSDP pipeline fill takes ~1% more.
    assert t.update_mfu == pytest.approx(EFF_TRAIN * 6 / 8 * gemm_eff(16 * 1112), rel=0.015)
    assert set(t.details) >= set(t.phases_s)


SCENARIO_VARIANTS = [
    {},
    {"algorithm.adv_estimator": "gae", "critic.ppo_micro_batch_size_per_gpu": 8},
    {"reward_model.enable": True},
    {"model.lora_rank": 32},
    {"actor.strategy": "megatron", "actor.megatron.tensor_model_parallel_size": 2},
    {"actor.use_kl_loss": False},
]


@pytest.mark.parametrize("ov", SCENARIO_VARIANTS)
def test_phase_names_are_the_memory_phases_and_terms_add_up(ov):
    s = load_scenario(BASE, overrides=ov)
    ctx = build_context(s)
    t = step_time(ctx)
    assert list(t.phases_s) == active_phases(ctx)
    assert list(t.phases_s) == [p.name for p in estimate(s).phases]
    for p, sec in t.phases_s.items():
        assert sum(t.terms_s[p].values()) == pytest.approx(sec, rel=1e-12)
        assert all(v >= 0 for v in t.terms_s[p].values())
    assert t.step_s == pytest.approx(sum(t.phases_s.values()), rel=1e-12)


# ---- properties ----------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario_dicts())
def test_phases_sum_to_step_and_are_finite(d):
    from calculator.errors import InputError

    try:
        s = load_scenario(d)
    except InputError:
        assume(False)
    r = estimate(s)
    assert r.time is not None and (r.time.step_s is None) == (not r.rollout.starts)  # no time when it cannot run
    t = _raw_time(s)  # the timing model itself, also where the report shows no time
    assert math.isfinite(t.step_s) and t.step_s > 0
    assert t.step_s == pytest.approx(sum(t.phases_s.values()), rel=1e-9)
    for p in t.phases_s:
        assert sum(t.terms_s[p].values()) == pytest.approx(t.phases_s[p], rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    model=st.sampled_from(["qwen2.5-0.5b", "qwen2.5-7b", "llama3.1-8b"]),
    micro=st.sampled_from([1, 2, 8, 32]),
    mean_resp=st.integers(16, 2048),
    ckpt=st.booleans(),
    dyn=st.booleans(),
)
def test_more_gpus_never_slow_the_update_of_a_fixed_batch_on_one_node(model, micro, mean_resp, ckpt, dyn):
    """Same batch on 2, 4, 8 GPUs of one node: the update never gets slower. From 1 to 2 GPUs FSDP starts
    gathering weights for every micro-batch; that can cost more than it saves when micro-batches are
    comm-bound (a real effect), so 1 -> 2 is checked only when the 2-GPU update hides its communication."""
    ov = {
        "model.path": model,
        "data.train_batch_size": 64,
        "rollout.n": 8,
        "actor.ppo_mini_batch_size": 16,
        "actor.ppo_micro_batch_size_per_gpu": micro,
        "actor.use_dynamic_bsz": dyn,
        "data.max_response_length": 2048,
        "data.mean_response_length": mean_resp,
        "model.enable_gradient_checkpointing": ckpt,
        "rollout.tensor_model_parallel_size": 1,
    }
    upd = {}
    for g in (1, 2, 4, 8):
        s = load_scenario(BASE, overrides={**ov, "hardware.num_gpus": g})
        upd[g] = phase_times(build_context(s))["update_actor"]
    assert upd[2].seconds >= upd[4].seconds * (1 - 1e-9)
    assert upd[4].seconds >= upd[8].seconds * (1 - 1e-9)
    if upd[2].terms["fsdp_comm"] == 0:
        assert upd[1].seconds >= upd[2].seconds * (1 - 1e-9)


@settings(max_examples=40, deadline=None)
@given(scenario_dicts())
def test_checkpointing_adds_the_recompute_share(d):
    """Recompute adds 2N + 1 attention forward to 6N + 3 attention: compute x 8/6 exactly. The update grows
    by at most 3/2: recompute also re-issues a forward's kernels (3 passes of host launches instead of 2),
    which is what a launch-bound micro-batch pays. (Activation offload is held off: without checkpointing it
    copies every layer's activations, which can make checkpointing the faster option, a real effect.)"""
    from calculator.errors import InputError

    d["model"]["lora_rank"] = 0
    d["model"]["enable_activation_offload"] = False
    try:
        on = load_scenario(d, overrides={"model.enable_gradient_checkpointing": True})
        off = load_scenario(d, overrides={"model.enable_gradient_checkpointing": False})
    except InputError:
        assume(False)
    t_on = phase_times(build_context(on))["update_actor"]
    t_off = phase_times(build_context(off))["update_actor"]
    assert t_on.terms["compute"] == pytest.approx(t_off.terms["compute"] * 8 / 6, rel=1e-9)
    assert t_off.seconds <= t_on.seconds * (1 + 1e-9)
    assert t_on.seconds <= t_off.seconds * 3 / 2 * (1 + 1e-9) + 1e-9
    if t_on.terms["host_overhead"] == 0 and t_on.terms["ulysses_all_to_all"] == 0:
        assert t_on.seconds <= t_off.seconds * 8 / 6 * (1 + 1e-9) + 1e-9


OFFLOADS = [
    {"actor.fsdp_config.param_offload": True},
    {"actor.fsdp_config.optimizer_offload": True},
    {"model.enable_activation_offload": True},
    {"actor.strategy": "fsdp2", "actor.fsdp_config.offload_policy": True},
]


@settings(max_examples=40, deadline=None)
@given(scenario_dicts(), st.sampled_from(OFFLOADS))
def test_offload_never_makes_a_step_faster(d, offload):
    """With vLLM the KV budget is total x util whatever the trainer holds, so offload only adds copies.
    (SGLang sizes its pool from free memory: there offload can enlarge the KV cache and speed the rollout,
    see test_sglang_offload_can_speed_up_the_rollout.)"""
    from calculator.errors import InputError

    d["rollout"]["name"] = "vllm"
    d["actor"]["fsdp_config"] = {"param_offload": False, "optimizer_offload": False, "offload_policy": False}
    d["model"]["enable_activation_offload"] = False
    d["actor"]["strategy"] = "fsdp2" if "actor.strategy" in offload else d["actor"]["strategy"]
    try:
        base = load_scenario(d)
        off = load_scenario(d, overrides=offload)
    except InputError:
        assume(False)
    # the timing model (the report has no step time where the engine cannot start)
    assert _raw_time(off).step_s >= _raw_time(base).step_s * (1 - 1e-12)


def _raw_time(s):
    """The timing model's step time (calculator.timing.step.step_time), before the report nulls a step that
    cannot run."""
    from calculator.report.estimate import build_context
    from calculator.timing.step import step_time

    return step_time(build_context(s))


# ---- per-micro-batch costs -------------------------------------------------------------------------


def test_partial_last_micro_batch_is_not_charged_as_full():
    """64 GPUs: a mini-batch of 256 x 5 sequences gives each rank 20, run as micro-batches of 16 + 4. The
    update computes those 20 sequences' tokens, at the GEMM efficiency of the mean micro-batch (10 sequences)."""
    s, t = times({"hardware.num_gpus": 64})
    seq = 512 + 600
    tokens_per_gpu = 1024 * 5 * seq / 64
    attn = LAYERS * 2 * HEADS * HEAD_DIM * seq
    compute = (8 * N_MM + 4 * attn) * tokens_per_gpu / (H100_TFLOPS * EFF_TRAIN)
    terms = t["update_actor"].terms
    assert terms["compute"] == pytest.approx(compute, rel=1e-9)
    assert terms["gemm_small_batch"] == pytest.approx(compute * (1 / gemm_eff(10 * seq) - 1), rel=1e-9)


MICRO_BATCH_CASES = [
    {},  # the reference: 7B, 1112-token sequences
    {"data.mean_response_length": 50, "data.mean_prompt_length": 50},  # comm-bound micro-batches
    {"model.path": "qwen2.5-0.5b", "data.mean_response_length": 30, "data.mean_prompt_length": 20},  # launch-bound
    {"model.enable_gradient_checkpointing": False, "hardware.num_gpus": 32},
    {"actor.ulysses_sequence_parallel_size": 2},
]


@pytest.mark.parametrize("ov", MICRO_BATCH_CASES)
def test_update_time_per_token_falls_with_micro_batch_size(ov):
    """Same batch, micro-batches of 1, 2, 4 ... 64 sequences: the update never gets slower. Each micro-batch
    pays a pipeline fill of FSDP traffic and the host's kernel launches, and its GEMMs are more efficient the
    more tokens it holds; the per-token work is the same."""
    upd = []
    for micro in (1, 2, 4, 8, 16, 32, 64):
        _, t = times({**ov, "actor.ppo_micro_batch_size_per_gpu": micro})
        upd.append(t["update_actor"].seconds)
    assert all(a >= b * (1 - 1e-12) for a, b in zip(upd, upd[1:], strict=False)), upd
    assert upd[0] > upd[-1] * 1.02  # and one sequence per micro-batch costs visibly more


@settings(max_examples=40, deadline=None)
@given(scenario_dicts())
def test_larger_micro_batches_never_slow_the_update(d):
    """Doubling the micro-batch at a fixed batch never slows update_actor. (Activation offload is held off: its
    copies hide under compute, and bigger micro-batches compute faster per token, so they hide less.)"""
    from calculator.errors import InputError

    d["model"]["enable_activation_offload"] = False
    d["actor"]["use_dynamic_bsz"] = False
    micro = d["actor"]["ppo_micro_batch_size_per_gpu"]
    try:
        small = load_scenario(d)
        big = load_scenario(d, overrides={"actor.ppo_micro_batch_size_per_gpu": 2 * micro})
    except InputError:
        assume(False)
    t_small = phase_times(build_context(small))["update_actor"]
    t_big = phase_times(build_context(big))["update_actor"]
    assert t_big.seconds <= t_small.seconds * (1 + 1e-9)


def test_planner_does_not_pick_one_sequence_per_micro_batch_for_the_reference():
    """The fastest configuration the planner finds for the reference scenario at 8 to 64 H100s keeps the
    configured micro-batch (16): one sequence per micro-batch is ~10% slower (GEMMs of 1,112 rows), not free."""
    from calculator.planning.planner import plan
    from calculator.planning.search import GpuSearch

    s = load_scenario(BASE)
    srch = GpuSearch(s, "h100-80gb", max_gpus=64, margin=0.05, allow_lora=False)
    for n in (8, 16, 32, 64):
        ev = srch.at_count(n)
        assert ev is not None
        opt = srch.batch_options[ev.knobs.batch]
        assert (opt.kind, opt.value) != ("fixed", 1), (n, opt.label)
    rec = plan(s, gpus=["h100-80gb"]).rows[0].recommended
    assert rec is not None
    assert rec.settings.get("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu") != 1


def test_more_gpus_cost_more_gpu_seconds_per_step():
    """The reference scenario at 8, 16, 32, 64 H100s: every doubling costs more GPU-seconds per step (the
    rollout's per-replica long tail and prefill, smaller micro-batches per rank, fixed per-micro-batch costs)."""
    gpu_s = []
    for n in (8, 16, 32, 64):
        s = load_scenario(BASE, overrides={"hardware.num_gpus": n})
        gpu_s.append(estimate(s).time.step_s * n)
    assert gpu_s == sorted(gpu_s) and len(set(gpu_s)) == 4
    assert gpu_s[-1] > gpu_s[0] * 1.05


# ---- Megatron recompute --------------------------------------------------------------------------

MEGATRON = {"actor.strategy": "megatron", "actor.megatron.tensor_model_parallel_size": 2}


def _meg_update(**recompute):
    ov = {**MEGATRON, **{f"actor.megatron.{k}": v for k, v in recompute.items()}}
    return times(ov)[1]["update_actor"].terms


def test_megatron_full_recompute_adds_a_forward():
    none = _meg_update()
    full = _meg_update(recompute_granularity="full", recompute_method="uniform", recompute_num_layers=1)
    assert full["compute"] / none["compute"] == pytest.approx(8 / 6, rel=1e-9)
    assert full["tp_ep_comm"] / none["tp_ep_comm"] == pytest.approx(3 / 2, rel=1e-9)  # forward collectives again


def test_megatron_selective_recompute_adds_the_core_attention_only():
    seq = 512 + 600
    attn = LAYERS * 2 * HEADS * HEAD_DIM * seq
    none = _meg_update()
    sel = _meg_update(recompute_granularity="selective")
    assert sel["compute"] / none["compute"] == pytest.approx((6 * N_MM + 4 * attn) / (6 * N_MM + 3 * attn), rel=1e-9)
    assert sel["tp_ep_comm"] == pytest.approx(none["tp_ep_comm"], rel=1e-12)


def test_megatron_block_recompute_covers_its_layers_per_stage():
    """block: the first recompute_num_layers layers of each pipeline stage (28 layers / PP 2 = 14 per stage)."""
    pp = {"pipeline_model_parallel_size": 2}
    none = _meg_update(**pp)
    full = _meg_update(recompute_granularity="full", recompute_method="uniform", recompute_num_layers=2, **pp)
    half = _meg_update(recompute_granularity="full", recompute_method="block", recompute_num_layers=7, **pp)
    all_ = _meg_update(recompute_granularity="full", recompute_method="block", recompute_num_layers=14, **pp)
    assert all_["compute"] == pytest.approx(full["compute"], rel=1e-12)
    assert half["compute"] - none["compute"] == pytest.approx((full["compute"] - none["compute"]) / 2, rel=1e-9)


@pytest.mark.parametrize(
    "fields,ok",
    [
        ({"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1}, True),
        ({"recompute_granularity": "full", "recompute_num_layers": 1}, False),  # no method
        ({"recompute_granularity": "full", "recompute_method": "block"}, False),  # no layer count
        ({"recompute_granularity": "selective"}, True),
        ({"recompute_granularity": "selective", "recompute_method": "uniform"}, True),
        ({"recompute_granularity": "selective", "recompute_num_layers": 2}, False),
        ({"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 0}, False),
        ({"recompute_method": "block", "recompute_num_layers": 3}, True),  # ignored without a granularity
    ],
)
def test_megatron_recompute_fields_follow_megatron_core_rules(fields, ok):
    from calculator.errors import InputError

    ov = {**MEGATRON, **{f"actor.megatron.{k}": v for k, v in fields.items()}}
    if ok:
        load_scenario(BASE, overrides=ov)
    else:
        with pytest.raises(InputError, match="recompute"):
            load_scenario(BASE, overrides=ov)
