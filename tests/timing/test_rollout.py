"""Rollout time (calculator/timing/rollout.py): decode and prefill steps by hand (memory- vs compute-bound, MoE
experts touched, eager launches vs CUDA graphs), the response-length distribution, the long tail, and the reward
model's engine; the invariant that enforce_eager never speeds up a rollout unless it buys KV cache."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings

from calculator import estimate, load_scenario
from calculator.report.estimate import build_context
from calculator.timing.lengths import fit_lengths
from calculator.timing.rollout import decode_step_seconds, length_distribution
from calculator.timing.step import phase_times
from tests.support.qwen7b_h100 import (
    BASE,
    EFF_DECODE,
    EFF_NVLINK,
    EFF_PREFILL,
    H100_HBM,
    H100_NVLINK_UNI,
    H100_TFLOPS,
    HEAD_DIM,
    HEADS,
    HOST_EAGER_S,
    KV_HEADS,
    LAYERS,
    N_MM,
    P7,
    H,
    V,
    gemm_eff,
    times,
)
from tests.support.strategies import scenario_dicts


def test_decode_step_by_hand():
    """Qwen2.5-7B, vLLM TP 2 on H100, 64 running sequences at a 1000-token context."""
    s = load_scenario(BASE)
    ctx = build_context(s)
    b, c, tp = 64, 1000, 2
    kv_per_token_per_gpu = 2 * LAYERS * (KV_HEADS // tp) * HEAD_DIM * 2  # 28,672 B
    hbm, f = H100_HBM * EFF_DECODE, tp * H100_TFLOPS * EFF_PREFILL
    # each kernel class at its own roofline: weight GEMMs, attention over the KV cache, sampler logits
    gemms = max(P7 * 2 / tp / hbm, b * 2 * N_MM / f)
    attention = max(b * c * kv_per_token_per_gpu / hbm, b * 2 * LAYERS * (HEADS * HEAD_DIM * 2) * c / f)
    sampler = b * V * 10 / hbm
    allreduce = 2 * LAYERS * (8e-6 + 2 * (tp - 1) / tp * b * H * 2 / (H100_NVLINK_UNI * EFF_NVLINK))
    engine_cpu = 300e-6 + 10e-6 * b  # decode_step_host_us + decode_step_host_us_per_seq x batch
    expected = gemms + attention + sampler + allreduce + engine_cpu
    assert P7 * 2 / tp / hbm > b * 2 * N_MM / f  # the GEMMs are bandwidth-bound at this batch
    assert decode_step_seconds(ctx, b, c) == pytest.approx(expected, rel=1e-9)
    assert expected == pytest.approx(4.596e-3 + 0.94e-3, rel=1e-3)


def test_decode_becomes_compute_bound_at_large_batch():
    s = load_scenario(BASE)
    ctx = build_context(s)
    per_token = [decode_step_seconds(ctx, b, 500) / b for b in (1, 16, 256, 1024)]
    assert per_token == sorted(per_token, reverse=True)  # batching amortises the weight reads


def test_prefill_by_hand():
    s, t = times()
    seqs, prompt = 1024 * 5 // 4, 512  # 4 replicas of TP 2; the preset has no mean prompt: max 512
    flops = seqs * prompt * (2 * N_MM + LAYERS * 2 * HEADS * HEAD_DIM * prompt)
    step_tokens = 8192  # max_num_batched_tokens: the engine prefills in steps of this size
    expected = flops / (2 * H100_TFLOPS * EFF_PREFILL) / gemm_eff(step_tokens)
    assert t["rollout"].terms["prefill"] == pytest.approx(expected, rel=1e-9)
    assert expected / (seqs * prompt / step_tokens) > LAYERS * HOST_EAGER_S  # a step outlasts its launches
    assert t["rollout"].terms["host_launch"] == 0.0


def test_moe_decode_reads_only_touched_experts_at_small_batch():
    s = load_scenario(BASE, overrides={"model.path": "qwen3-30b-a3b", "rollout.tensor_model_parallel_size": 4})
    ctx = build_context(s)
    from calculator.timing.rollout import DecodeStep

    step = DecodeStep(ctx)
    arch = ctx.actor.arch
    assert step.weight_bytes(1) < step.weight_bytes(8) < step.weight_bytes(1024)
    full = (step.dense + step.experts) * 2 / 4
    assert step.weight_bytes(1024) == pytest.approx(full, rel=1e-6)  # a big batch touches every expert
    one = (step.dense + step.experts * arch.num_experts_per_tok / arch.num_experts) * 2 / 4
    assert step.weight_bytes(1) == pytest.approx(one, rel=1e-9)


@pytest.mark.parametrize("mean,top", [(100, 1000), (300, 1000), (500, 1000), (800, 1000), (1000, 1000)])
def test_response_length_distribution_has_the_mean_and_reaches_the_max(mean, top):
    n = 20000
    d = fit_lengths(mean, top, 0.01)
    integral = sum(d.survival((i + 0.5) * top / n) for i in range(n)) * top / n
    assert integral == pytest.approx(mean, rel=2e-3)  # E[R] = integral of the survival function
    m2 = sum(2 * ((i + 0.5) * top / n) * d.survival((i + 0.5) * top / n) for i in range(n)) * top / n
    assert m2 == pytest.approx(d.second_moment(), rel=5e-3)
    assert d.survival(top * 0.999) > 0 and d.survival(top) == 0


def test_long_tail_grows_with_max_response_at_fixed_mean():
    _, short = times({"data.max_response_length": 1024, "data.mean_response_length": 600})
    _, long = times({"data.max_response_length": 8192, "data.mean_response_length": 600})
    assert long["rollout"].terms["long_tail"] > 3 * short["rollout"].terms["long_tail"]


def test_sglang_offload_can_speed_up_the_rollout():
    """SGLang's static pool is a share of FREE memory: offloading the actor frees memory before the engine
    sizes its KV cache, so more sequences run at once and the rollout gets faster (a real trade-off)."""
    ov = {
        "rollout.name": "sglang",
        "hardware.gpu": "l40s-48gb",
        "hardware.num_gpus": 1,
        "rollout.tensor_model_parallel_size": 1,
        "data.train_batch_size": 64,
        "actor.ppo_mini_batch_size": 16,
        "actor.ppo_micro_batch_size_per_gpu": 1,
        "model.path": "qwen2.5-1.5b",
        "rollout.max_num_seqs": 1024,
        "data.max_response_length": 4096,
        "data.mean_response_length": 2048,
    }
    on = estimate(load_scenario(BASE, overrides={**ov, "actor.fsdp_config.param_offload": True}))
    off = estimate(load_scenario(BASE, overrides=ov))
    assert on.rollout.kv_cache_tokens_per_replica > off.rollout.kv_cache_tokens_per_replica
    assert on.rollout.max_concurrent_sequences_per_replica > off.rollout.max_concurrent_sequences_per_replica
    assert on.time.phases_s["rollout"] < off.time.phases_s["rollout"]


def test_eager_decode_step_by_hand():
    """enforce_eager: a decode step lasts max(GPU time, 28 layers x 0.4 ms of host launches): at batch 1 the
    host is the bottleneck; at batch 512 with 2,000-token contexts the GPU work covers the launches."""
    s = load_scenario(BASE, overrides={"rollout.enforce_eager": True})
    g = load_scenario(BASE)
    ctx_s, ctx_g = build_context(s), build_context(g)
    host = LAYERS * HOST_EAGER_S
    assert decode_step_seconds(ctx_g, 1, 1000) < host
    engine_cpu = 300e-6 + 10e-6  # the engine's own CPU time per step at batch 1 (both modes)
    assert decode_step_seconds(ctx_s, 1, 1000) == pytest.approx(host + engine_cpu, rel=1e-12)
    big = decode_step_seconds(ctx_g, 512, 2000)
    assert big > host and decode_step_seconds(ctx_s, 512, 2000) == pytest.approx(big, rel=1e-12)


def test_batches_above_the_captured_sizes_launch_layer_by_layer():
    """vLLM captures batches up to min(2 x max_num_seqs, 512, max_num_batched_tokens): max_num_seqs 1024 lets a
    decode batch exceed 512, and those steps pay the host launches even without enforce_eager."""
    s = load_scenario(BASE, overrides={"rollout.max_num_seqs": 1024, "model.path": "qwen2.5-0.5b"})
    ctx = build_context(s)
    from calculator.timing.rollout import DecodeStep

    step = DecodeStep(ctx)
    assert step.graph_top == 512
    assert step.seconds(512, 100)[2] == 0.0
    body, comm, launch, _ = step.seconds(513, 100)
    assert launch == pytest.approx(max(0.0, 24 * HOST_EAGER_S - body - comm), rel=1e-12) and launch > 0


def test_eager_rollout_is_slower_at_small_batch():
    s = {"data.train_batch_size": 8, "rollout.n": 2, "actor.ppo_mini_batch_size": 8}
    _, graphs = times(s)
    _, eager = times({**s, "rollout.enforce_eager": True})
    assert graphs["rollout"].terms["host_launch"] == 0.0
    assert eager["rollout"].seconds > 1.5 * graphs["rollout"].seconds
    assert eager["rollout"].seconds - eager["rollout"].terms["host_launch"] == pytest.approx(
        graphs["rollout"].seconds, rel=1e-9
    )


@settings(max_examples=40, deadline=None)
@given(scenario_dicts())
def test_enforce_eager_never_speeds_up_the_rollout_unless_it_buys_kv(d):
    """enforce_eager frees the CUDA-graph pool for KV: when that does not raise the concurrency (KV is not the
    bottleneck), the rollout is never faster without graphs."""
    from calculator.errors import InputError
    from calculator.timing.rollout import concurrency

    try:
        g = load_scenario(d, overrides={"rollout.enforce_eager": False})
        e = load_scenario(d, overrides={"rollout.enforce_eager": True})
    except InputError:
        assume(False)
    ctx_g, ctx_e = build_context(g), build_context(e)
    assume(concurrency(ctx_g) == concurrency(ctx_e))
    assert phase_times(ctx_e)["rollout"].seconds >= phase_times(ctx_g)["rollout"].seconds * (1 - 1e-12)


def test_reward_engine_pays_eager_launches_only_for_small_steps():
    """The reward model's engine runs eager (verl default): with 8,192-token steps the GPU work covers the
    launches; with 128-token steps each step waits for the host."""
    base = {"reward_model.enable": True}
    _, big = times(base)
    _, small = times({**base, "reward_model.rollout.max_num_batched_tokens": 128})
    _, graphs = times(
        {
            **base,
            "reward_model.rollout.max_num_batched_tokens": 128,
            "reward_model.rollout.enforce_eager": False,
        }
    )
    assert big["reward"].terms["host_launch"] == 0.0
    assert small["reward"].terms["host_launch"] > 0.0
    assert graphs["reward"].terms["host_launch"] == 0.0  # 128 <= the largest captured size
    assert small["reward"].terms["gemm_small_batch"] > big["reward"].terms["gemm_small_batch"]


def test_eager_host_time_follows_the_kernel_count_of_each_layer_type():
    """Dense layer 9 kernels; Qwen3-MoE layer 9 - 3 + 7 = 13; DeepSeek-V3: MLA adds 6 (15 per dense layer), its
    MoE layer 15 - 3 + 7 + 3 (shared expert) = 22. At 400 us per 9 kernels: Qwen3-30B-A3B 48 x 13/9 x 0.4 ms =
    27.7 ms; DeepSeek-V3 (3 dense + 58 MoE layers) (45 + 1276) / 9 x 0.4 ms = 58.7 ms per eager step."""
    from calculator.inputs.presets import model_presets
    from calculator.timing.rollout import host_step_seconds, kernels_per_layer

    models = model_presets()
    s = load_scenario(BASE)
    qwen_moe, dsv3, dense = (models[m].architecture for m in ("qwen3-30b-a3b", "deepseek-v3", "qwen2.5-7b"))
    assert kernels_per_layer(dense)[0] == 9  # (no MoE layers: the second value is unused)
    assert kernels_per_layer(qwen_moe) == (9, 13)
    assert kernels_per_layer(dsv3) == (15, 22)
    assert host_step_seconds(s, dense) == pytest.approx(LAYERS * HOST_EAGER_S)
    assert host_step_seconds(s, qwen_moe) == pytest.approx(48 * 13 / 9 * 400e-6)
    assert host_step_seconds(s, dsv3) == pytest.approx((3 * 15 + 58 * 22) / 9 * 400e-6)


def test_engine_cpu_time_per_step_grows_with_the_batch():
    """decode_step_host_us 300 + 10 us x 256 sequences = 2.86 ms per step, whatever the model."""
    from calculator.timing.rollout import engine_step_host_seconds

    s = load_scenario(BASE)
    assert engine_step_host_seconds(s, 256) == pytest.approx(2.86e-3)
    assert engine_step_host_seconds(s, 0) == pytest.approx(0.3e-3)


def test_tp_allreduce_latency_jumps_when_the_group_spans_nodes():
    """In a node vLLM's custom all-reduce (8 us); a TP group larger than the node runs NCCL over the NIC (25 us)."""
    from calculator.timing.rollout import tp_allreduce_latency_s

    s = load_scenario(BASE)
    assert tp_allreduce_latency_s(s, 8) == pytest.approx(8e-6)
    assert tp_allreduce_latency_s(s, 16) == pytest.approx(25e-6)


def test_rollout_long_tail_does_not_shrink_with_more_gpus():
    """More replicas cut the sequences per replica, but the last wave still decodes the longest response one token
    at a time: the long tail stays while the steady part shrinks."""
    ov = {"data.max_response_length": 8192, "data.mean_response_length": 1500}
    _, t8 = times(ov)
    _, t32 = times({**ov, "hardware.num_gpus": 32})
    tail8, tail32 = t8["rollout"].terms["long_tail"], t32["rollout"].terms["long_tail"]
    assert tail32 > 0.5 * tail8
    assert t32["rollout"].seconds > t8["rollout"].seconds / 4  # far from linear scaling


def _moe_rollout(tp: int, dp: int, ep: int):  # type: ignore[no-untyped-def]
    ov = {
        "model.path": "qwen3-30b-a3b",
        "rollout.tensor_model_parallel_size": tp,
        "rollout.data_parallel_size": dp,
        "rollout.expert_parallel_size": ep,
    }
    return build_context(load_scenario(BASE, overrides=ov))


def test_expert_parallel_decode_by_hand():
    """Qwen3-30B-A3B on 8 x H100, vLLM TP 2 x DP 4 with EP 8: each GPU holds 128 / 8 = 16 routed experts and reads
    those the 4 DP ranks' tokens chose; per MoE layer (48) a dispatch + combine over the 8 GPUs: latency 2 x 48 x
    8 us = 0.768 ms per step, and (4 - 1) x 2048 hidden x 2 B per sequence each over NVLink 450 GB/s x 0.75."""
    from calculator.timing.rollout import DecodeStep

    ctx = _moe_rollout(2, 4, 8)
    step = DecodeStep(ctx)
    assert (step.tp, step.dp, step.ep) == (2, 4, 8)
    assert step.ep_seconds(0) == pytest.approx(2 * 48 * 8e-6, rel=1e-12)
    per_seq = 2 * 48 * 3 * 2048 * 2 / (H100_NVLINK_UNI * EFF_NVLINK)
    assert step.ep_seconds(10) - step.ep_seconds(0) == pytest.approx(10 * per_seq, rel=1e-9)
    a = ctx.actor.arch
    touched = 1 - (1 - 8 / 128) ** (4 * 16)  # 16 sequences per DP rank, 4 ranks
    expected = (step.dense / 2 + step.experts * touched / 8) * 2
    assert step.weight_bytes(16) == pytest.approx(expected, rel=1e-12)
    assert a.num_experts == 128
    terms = phase_times(ctx)["rollout"].terms
    assert terms["ep_all_to_all"] > 0
    # without EP there is no all-to-all, and every GPU holds a 1/TP slice of every expert
    plain = DecodeStep(_moe_rollout(2, 4, 1))
    assert plain.ep == 2 and plain.ep_seconds(16) == 0.0


def test_vllm_dp_ranks_split_the_replicas_sequences():
    """A replica of TP 2 x DP 4 = 8 GPUs serves 1024 x 5 / 1 replica = 5,120 sequences; each DP rank decodes its
    1,280 with its own KV cache, so the rollout is close to that of 4 replicas of TP 2 (DP 1), not 4x longer."""
    dp4 = phase_times(_moe_rollout(2, 4, 1))["rollout"].seconds
    dp1 = phase_times(_moe_rollout(2, 1, 1))["rollout"].seconds
    assert dp4 == pytest.approx(dp1, rel=0.05)


def test_compute_bound_gemms_and_bandwidth_bound_attention_add_up_on_h20():
    """Qwen2.5-7B, TP 2 on H20 (148 TFLOPS, 4.0 TB/s), 512 sequences at a 4,000-token context: the weight GEMMs are
    compute-bound (512 x 2 x N / (2 x 148e12 x 0.5)) and the attention reads 512 x 4,000 x 28,672 B of KV at
    4.0 TB/s x 0.7; they run one after the other, so the step is their sum (plus sampler, all-reduce, CPU)."""
    s = load_scenario(BASE, overrides={"hardware.gpu": "h20-96gb"})
    ctx = build_context(s)
    from calculator.timing.rollout import DecodeStep

    step = DecodeStep(ctx)
    b, c = 512, 4000
    f, hbm = 2 * 148e12 * EFF_PREFILL, 4000e9 * EFF_DECODE
    gemms = b * 2 * N_MM / f
    assert gemms > P7 * 2 / 2 / hbm  # compute-bound GEMMs
    kv = b * c * 2 * LAYERS * (KV_HEADS // 2) * HEAD_DIM * 2 / hbm
    assert kv > b * c * 2 * LAYERS * (HEADS * HEAD_DIM * 2) / f  # bandwidth-bound attention
    body, *_ = step.seconds(b, c)
    assert body == pytest.approx(gemms + kv + b * V * 10 / hbm, rel=1e-9)


def _decode_by_calls(step, dist, seqs, wave, prompt):  # type: ignore[no-untyped-def]
    """The last wave summed through ``DecodeStep.seconds`` / ``ep_seconds``: what ``_decode`` inlines."""
    from calculator.timing.rollout import GRID_POINTS, _last_wave_grid

    mean_r = dist.mean
    steady_steps = (seqs - wave) * mean_r / wave
    body, comm, launch, host = step.seconds(wave, prompt + dist.second_moment() / (2 * mean_r))
    a2a = step.ep_seconds(wave)
    acc = [steady_steps * body, 0.0, steady_steps * (comm - a2a), steady_steps * a2a, steady_steps * launch]
    acc.append(steady_steps * host)
    dt = dist.longest / GRID_POINTS
    for t, surv in _last_wave_grid(dist):
        b = max(1.0, wave * surv)
        body, comm, launch, host = step.seconds(b, prompt + t)
        a2a = step.ep_seconds(b)
        acc[0 if t < mean_r else 1] += body * dt
        acc[2] += (comm - a2a) * dt
        acc[3] += a2a * dt
        acc[4] += launch * dt
        acc[5] += host * dt
    return acc


@pytest.mark.parametrize(
    "ctx_of",
    [
        lambda: build_context(load_scenario(BASE)),
        lambda: build_context(load_scenario(BASE, overrides={"rollout.enforce_eager": True})),
        lambda: build_context(load_scenario(BASE, overrides={"rollout.max_num_seqs": 1024})),
        lambda: _moe_rollout(2, 4, 8),
        lambda: _moe_rollout(2, 4, 1),
    ],
    ids=["dense", "eager", "above-captured", "moe-ep", "moe-expert-tp"],
)
def test_inlined_last_wave_equals_the_step_calls(ctx_of):  # type: ignore[no-untyped-def]
    """``_decode`` inlines ``DecodeStep.seconds`` in its loop (issue #18): bit for bit the same sums."""
    from calculator.timing.rollout import DecodeStep, _decode, concurrency

    ctx = ctx_of()
    step = DecodeStep(ctx)
    dist = length_distribution(ctx.s, float(ctx.r.lengths.response))
    seqs = -(-ctx.r.sequences_per_replica // step.dp)
    for wave in sorted({1, 7, min(seqs, max(1, concurrency(ctx))), seqs}):
        d = _decode(step, dist, seqs, wave, ctx.r.lengths.prompt)
        got = [d[k] for k in ("decode", "long_tail", "tp_allreduce", "ep_all_to_all", "host_launch", "engine_host")]
        assert got == _decode_by_calls(step, dist, seqs, wave, ctx.r.lengths.prompt)
