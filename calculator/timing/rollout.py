"""Rollout time of one synchronous step: vLLM prefill + decode on each replica, and the reward model.

Every replica (``rollout TP`` GPUs) serves ``sequences_per_replica`` requests at once (verl's agent
loop submits the whole batch, balanced over replicas); all replicas are alike, so the phase lasts as
long as one replica. Per replica:

prefill (compute-bound)
    S·P tokens x (2·N_active + causal attention at length P) / (TP x peak x prefill_mfu x GEMM efficiency
    of a step of ``max_num_batched_tokens`` tokens, ``flops.gemm_efficiency``).
    Left out: prefix-cache hits between the n samples of a prompt (vLLM only reuses blocks computed
    in an earlier step; the n copies are usually scheduled together), recompute after preemption.

decode (one step = one token for every running sequence; each kernel class at its own roofline, one after
    another: a step's GEMMs and its attention do not overlap)
    step(b, c) = max(weights/GPU / HBM', b·2·N_active / F)             (weight GEMMs)
               + b·c·max(kv_bytes_per_token_per_GPU / HBM', 2·layers·(q_dim + o_dim) / TP / F)   (attention)
               + b·V·10 B / HBM'                                        (sampler logits)
               + TP all-reduce(b)
    HBM' = HBM x decode_hbm_efficiency, F = TP x peak x prefill_mfu; weights/GPU (MoE: dense part + the experts the
    b tokens touch, E·(1-(1-k/E)^b)); sampler: bf16 logits, fp32 copy, fp32 probabilities over the full vocab.
    On a GPU with a low ridge point (H20: 37 FLOP/B) the GEMMs of a large batch are compute-bound while the
    attention over long contexts stays bandwidth-bound, so the two add up.
    TP all-reduce = 2 per layer x (latency + 2(TP-1)/TP · b·h·2 B / NVLink) (vLLM custom all-reduce)
    host launch (``host_launch``): a step without a CUDA graph (``enforce_eager``, or a batch above the
        largest captured size min(2 x max_num_seqs, 512, max_num_batched_tokens)) lasts at least
        layers x ``eager_decode_host_us_per_layer``: vLLM issues every layer's kernels from Python and
        waits for the sampled tokens each step. With graphs one replay issues the step. Prefill steps (and
        the reward model's, eager by default in verl) pay the same when their GPU work is shorter.

concurrency C = min(max_num_seqs, KV blocks // blocks per sequence at the mean lengths) (the
report's ``max_concurrent_sequences_per_replica``). A synchronous step ends when the LAST response
ends, so the decode is modelled in two parts:

    steady part (S > C): the batch stays full at C while requests wait; it decodes (S-C)·R̄ tokens
        in (S-C)·R̄/C steps at a mean context P + E[R²]/(2R̄) (length-biased: long sequences stay
        in the batch longer);
    last wave: C (or S) sequences decode together while their batch shrinks as they finish; the
        longest runs to max_response_length with a batch of one.

Response lengths: ``calculator.timing.lengths`` (a log-normal with mean R̄ = ``data.mean_response_length``,
clipped at R_max with ``data.response_clip_ratio`` of the responses reaching it; with thousands of
responses per step at least one reaches the max, so the last wave always ends at R_max with a batch of one).
The last wave is integrated over ``GRID_POINTS`` response positions (midpoint rule). The time spent past the
mean length is reported as ``long_tail``: more replicas shorten the steady part, never the longest response.

engine CPU time (``engine_host``): every engine step (prefill or decode) also pays vLLM V1's scheduler, input
preparation, sampler and output bookkeeping on the CPU, serial with the GPU work:
``decode_step_host_us`` + ``decode_step_host_us_per_seq`` x running sequences.
TP all-reduce latency: vLLM's custom all-reduce inside a node, NCCL (``tp_allreduce_internode_latency_us``)
when the TP group spans nodes. Eager host time per layer follows the layer's kernel count
(``kernels_per_layer``: MoE and MLA layers issue more kernels than a dense one).

vLLM DP / EP (``rollout.data_parallel_size``, ``expert_parallel_size``): a replica spans TP x DP GPUs; each DP
rank decodes its 1/DP of the replica's sequences with its own KV cache, in lockstep with the others. With
``enable_expert_parallel`` (EP = TP x DP, verl rollout.yaml) each GPU holds E / EP routed experts and reads those
the tokens of ALL DP ranks chose; every MoE layer adds a dispatch (all-gather) and a combine (reduce-scatter) of
the other ranks' hidden states over the EP group (``ep_all_to_all``: latency as a TP all-reduce, in node or
across nodes, + (DP-1) x b x h x 2 B per collective). Without EP, vLLM's MoE runs expert-TP (every GPU a 1/TP
slice of every expert).

Left out: chunked-prefill interference with decode beyond adding the prefill time, preemption and recompute
when the KV cache fills, speculative decoding, EP load imbalance across ranks at decode, the TP all-reduce that
EP's combine may replace, detokenisation and rule-based reward on CPU.
"""

from __future__ import annotations

import functools
import math

from calculator.inputs.histogram import parse_histogram
from calculator.inputs.scenario import Scenario
from calculator.memory.context import Context
from calculator.memory.engine import SAMPLER_BYTES_PER_LOGIT, max_concurrent_sequences
from calculator.model.architecture import Architecture
from calculator.resolve.engines import EngineSettings
from calculator.timing.flops import (
    PhaseTime,
    attention_flops_per_token,
    collective_bytes_per_s,
    fmt_s,
    forward_flops_per_token,
    gemm_efficiency,
    hbm_bytes_per_s,
    matmul_params,
    peak_flops,
    per_architecture,
    total_params,
)
from calculator.timing.lengths import HistogramLengths, LengthDistribution, fit_lengths

GRID_POINTS = 48  # positions sampled along the last wave (midpoint rule)
ALLREDUCES_PER_LAYER = 2  # after attention (o_proj) and after the MLP (down_proj), Megatron-style TP


# ---- response-length distribution ----------------------------------------------------------------


def length_distribution(s: Scenario, mean: float) -> LengthDistribution | HistogramLengths:
    """The measured histogram if the scenario has one, else the clipped log-normal of
    ``calculator.timing.lengths`` with this mean."""
    top = float(s.data.max_response_length)
    if s.data.response_length_histogram:
        bins = parse_histogram(s.data.response_length_histogram, s.data.max_response_length)
        return HistogramLengths(bins=tuple(bins), top=top)
    return fit_lengths(mean, top, s.data.response_clip_ratio)


# ---- kernels per decoder layer (eager host time) ---------------------------------------------------

# Kernels one decode step launches per decoder layer, counted from vLLM's model code (vLLM 0.11-0.24):
# dense layer (vllm/model_executor/models/llama.py): fused add+RMSNorm, qkv_proj, rotary, attention, o_proj,
#   fused add+RMSNorm, gate_up_proj, SiluAndMul, down_proj = 9.
# MoE MLP instead of the dense MLP's 3 (qwen3_moe.py / deepseek_v2.py + fused_moe/fused_moe.py): router gate
#   GEMM, topk_softmax (or grouped top-k), moe_align_block_size, fused_moe w13, SiluAndMul, fused_moe w2,
#   moe_sum = 7; a shared expert adds its own gate_up, act, down (and a sigmoid gate + mul for Qwen2-MoE).
# MLA attention instead of qkv/rotary/attention/o (4) (deepseek_v2.py DeepseekV2MLAAttention): q_a_proj,
#   q_a_layernorm, q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm, rotary, W_UK absorb bmm, MLA attention,
#   W_UV bmm, o_proj = 10.
DENSE_LAYER_KERNELS = 9
MOE_MLP_KERNELS = 7
SHARED_EXPERT_KERNELS = 3
MLA_EXTRA_KERNELS = 10 - 4


def kernels_per_layer(arch: Architecture) -> tuple[float, float]:
    """(kernels of a dense decoder layer, of an MoE layer) of this architecture in one decode step."""
    dense = DENSE_LAYER_KERNELS + (MLA_EXTRA_KERNELS if arch.is_mla else 0)
    moe = dense - 3 + MOE_MLP_KERNELS
    if arch.shared_expert_intermediate_size:
        moe += SHARED_EXPERT_KERNELS + (2 if arch.shared_expert_gate else 0)
    return float(dense), float(moe)


# ---- one decode step -----------------------------------------------------------------------------


@per_architecture
def _expert_params(arch: Architecture) -> int:
    return arch.num_moe_layers * arch.num_experts * arch.expert_params()


def host_step_seconds(s: Scenario, arch: Architecture) -> float:
    """CPU time to issue one engine step's layers without a CUDA graph: ``eager_decode_host_us_per_layer`` is
    the cost of a dense layer's 9 kernels; other layer types cost in proportion to their kernel count
    (``kernels_per_layer``: a Qwen3-MoE layer 13, a DeepSeek-V3 MoE layer with MLA 22)."""
    dense_k, moe_k = kernels_per_layer(arch)
    kernels = arch.num_dense_layers * dense_k + arch.num_moe_layers * moe_k
    return kernels / DENSE_LAYER_KERNELS * s.efficiency.eager_decode_host_us_per_layer * 1e-6


def engine_step_host_seconds(s: Scenario, batch: float) -> float:
    """CPU time of one engine step outside the forward (vLLM V1 scheduler, input preparation, sampler and output
    bookkeeping), serial with the GPU work: ``decode_step_host_us`` + ``decode_step_host_us_per_seq`` x batch."""
    e = s.efficiency
    return (e.decode_step_host_us + e.decode_step_host_us_per_seq * batch) * 1e-6


def tp_allreduce_latency_s(s: Scenario, tp: int) -> float:
    """Fixed cost of one small TP all-reduce: the in-node custom all-reduce, or NCCL across nodes when the TP group
    is larger than a node (``tp_allreduce_internode_latency_us``)."""
    e = s.efficiency
    us = e.tp_allreduce_latency_us if tp <= s.hardware.gpus_per_node else e.tp_allreduce_internode_latency_us
    return us * 1e-6


def _chunked_forward(
    s: Scenario, es: EngineSettings, arch: Architecture, tokens: float, gpu_s: float
) -> tuple[float, float]:
    """(GEMM-efficiency slowdown, exposed host launch) of a prefill-only forward over ``tokens`` tokens that
    take ``gpu_s`` at the configured MFU: the engine runs it in steps of ``max_num_batched_tokens`` tokens,
    each at the GEMM efficiency of its size; steps above the captured sizes (or all, with enforce_eager) run
    without a CUDA graph and last at least the host time of issuing them."""
    if tokens <= 0:
        return 0.0, 0.0
    m = min(float(es.max_num_batched_tokens), tokens)
    steps = tokens / m
    slow = gpu_s / gemm_efficiency(s, m) - gpu_s
    per_step = (gpu_s + slow) / steps
    launch = steps * max(0.0, host_step_seconds(s, arch) - per_step) if m > es.largest_capture else 0.0
    return slow, launch


class DecodeStep:
    """Seconds of one decode step of one replica, split into (memory-or-compute, all-reduce, host launch)."""

    def __init__(self, ctx: Context) -> None:
        s = ctx.s
        arch = ctx.actor.arch
        es = ctx.r.rollout
        self.arch = arch
        self.tp = es.tp
        self.dp = es.data_parallel
        # vLLM enable_expert_parallel: the routed experts are split over EP = TP x DP ranks (as in the memory model)
        self.ep = es.tp * es.data_parallel if es.expert_parallel and arch.is_moe else es.tp
        self.wbytes = es.weight_bytes_per_param
        self.experts = _expert_params(arch)
        self.dense = total_params(arch) - self.experts
        self.kv_per_token = ctx.rollout.kv_bytes_per_token_per_gpu
        self.hbm = hbm_bytes_per_s(s, ctx.gpu)
        self.flops = peak_flops(ctx.gpu) * s.efficiency.prefill_mfu * self.tp
        self.n_active = matmul_params(ctx.actor)
        self.latency_s = tp_allreduce_latency_s(s, self.tp)
        self.nvlink = collective_bytes_per_s(s, ctx.gpu, self.tp)
        # Per-token constants of ``seconds`` (hot loop: evaluated GRID_POINTS + 1 times per estimate).
        self.sampler_per_seq = arch.vocab_size * SAMPLER_BYTES_PER_LOGIT
        self.attn_per_ctx = attention_flops_per_token(arch, 1.0, causal=False)
        self.comm_fixed = ALLREDUCES_PER_LAYER * arch.num_layers * self.latency_s if self.tp > 1 else 0.0
        self.comm_per_seq = (
            ALLREDUCES_PER_LAYER * arch.num_layers * 2 * (self.tp - 1) / self.tp * arch.hidden_size * 2 / self.nvlink
        )
        # Batches above the largest captured size (every batch with enforce_eager) launch layer by layer.
        self.graph_top = es.largest_capture
        self.host_s = host_step_seconds(s, arch)
        self.s = s
        # EP across DP ranks: per MoE layer a dispatch (all-gather of the other DP ranks' tokens) and a combine
        # (reduce-scatter) over the EP group (vLLM all2all backend allgather_reducescatter).
        self.a2a_fixed = self.a2a_per_seq = 0.0
        if self.ep > self.tp:
            bw = collective_bytes_per_s(s, ctx.gpu, self.ep)
            self.a2a_fixed = 2 * arch.num_moe_layers * tp_allreduce_latency_s(s, self.ep)
            self.a2a_per_seq = 2 * arch.num_moe_layers * (self.dp - 1) * arch.hidden_size * 2 / bw
        self.attn_per_token_ctx = max(self.kv_per_token / self.hbm, self.attn_per_ctx / self.flops)
        self.dense_weight_bytes = self.dense * self.wbytes / self.tp

    def ep_seconds(self, b: float) -> float:
        """Expert-parallel dispatch + combine of one step with ``b`` sequences per DP rank (0 without EP)."""
        return self.a2a_fixed + b * self.a2a_per_seq if self.ep > self.tp else 0.0

    def weight_bytes(self, b: float) -> float:
        """Weights read per step per GPU; MoE reads only the experts some token of the batch chose."""
        if not self.experts:
            return self.dense_weight_bytes
        a = self.arch
        # with EP every rank serves the tokens of all DP ranks for its E / EP experts
        tokens = b * self.dp if self.ep > self.tp else b
        touched = 1.0 - (1.0 - a.num_experts_per_tok / a.num_experts) ** tokens
        return (self.dense / self.tp + self.experts * touched / self.ep) * self.wbytes

    def seconds(self, b: float, context: float) -> tuple[float, float, float, float]:
        """(memory/compute-bound part, TP all-reduce part, exposed host launch, engine host time) of one step with
        ``b`` running sequences whose mean context is ``context`` tokens. Without a CUDA graph the forward lasts
        max(GPU time, host time): vLLM waits for the sampled tokens every step, so the CPU cannot run ahead; the
        engine's scheduler / sampler CPU time (``engine_step_host_seconds``) adds to every step."""
        # Per kernel class, each at its own roofline (they run one after another, not overlapped): the weight
        # GEMMs, the attention over the KV cache, the sampler's full-vocab logits (memory-bound).
        hbm = self.hbm
        gemms = max(self.weight_bytes(b) / hbm, b * 2.0 * self.n_active / self.flops)
        body = gemms + b * context * self.attn_per_token_ctx + b * self.sampler_per_seq / hbm
        comm = (self.comm_fixed + b * self.comm_per_seq if self.tp > 1 else 0.0) + self.ep_seconds(b)
        launch = max(0.0, self.host_s - body - comm) if b > self.graph_top else 0.0
        return body, comm, launch, engine_step_host_seconds(self.s, b)


def concurrency(ctx: Context) -> int:
    """Sequences one replica runs at once: KV blocks at the mean lengths, capped by max_num_seqs."""
    return max_concurrent_sequences(ctx.rollout, ctx.r.rollout.max_num_seqs, ctx.r.lengths.sequence)


@functools.lru_cache(maxsize=256)
def _last_wave_grid(dist: LengthDistribution | HistogramLengths) -> tuple[tuple[float, float], ...]:
    """(t, P(R > t)) at the ``GRID_POINTS`` midpoints of [0, longest]: a pure function of the (frozen, hashable)
    distribution, which a sweep over GPUs, TP or batch settings shares (issue #18)."""
    dt = dist.longest / GRID_POINTS
    return tuple(((j + 0.5) * dt, dist.survival((j + 0.5) * dt)) for j in range(GRID_POINTS))


def _decode(
    step: DecodeStep, dist: LengthDistribution | HistogramLengths, seqs: int, wave: int, prompt: float
) -> dict[str, float]:
    """Seconds of the steady part and the last wave (module docstring), by term."""
    mean_r = dist.mean
    steady_steps = (seqs - wave) * mean_r / wave
    steady_ctx = prompt + dist.second_moment() / (2 * mean_r)
    body, comm, launch, host = step.seconds(wave, steady_ctx)
    a2a = step.ep_seconds(wave)
    out = {
        "decode": steady_steps * body,
        "long_tail": 0.0,
        "tp_allreduce": steady_steps * (comm - a2a),
        "ep_all_to_all": steady_steps * a2a,
        "host_launch": steady_steps * launch,
        "engine_host": steady_steps * host,
        "steady_steps": steady_steps,
        "steady_ctx": steady_ctx,
    }
    # Last wave: `wave` sequences finishing one by one; the longest reaches max_response_length.
    decode, tail, comm_s, a2a_s = out["decode"], 0.0, out["tp_allreduce"], out["ep_all_to_all"]
    launch_s, host_s = out["host_launch"], out["engine_host"]
    dt = dist.longest / GRID_POINTS
    # ``step.seconds`` and ``step.ep_seconds`` inlined with the same float operations in the same order (this loop
    # runs GRID_POINTS times per estimate: issue #18); tests/timing/test_rollout.py compares it with the calls.
    hbm, n_active, attn, sampler = step.hbm, step.n_active, step.attn_per_token_ctx, step.sampler_per_seq
    tp_comm, ep_on, graph_top, launch_host = step.tp > 1, step.ep > step.tp, step.graph_top, step.host_s
    e = step.s.efficiency
    host_us, host_us_seq = e.decode_step_host_us, e.decode_step_host_us_per_seq
    for t, surv in _last_wave_grid(dist):
        b = max(1.0, wave * surv)
        gemms = max(step.weight_bytes(b) / hbm, b * 2.0 * n_active / step.flops)
        body = gemms + b * (prompt + t) * attn + b * sampler / hbm
        a2a = step.a2a_fixed + b * step.a2a_per_seq if ep_on else 0.0
        comm = (step.comm_fixed + b * step.comm_per_seq if tp_comm else 0.0) + a2a
        if t < mean_r:
            decode += body * dt
        else:
            tail += body * dt
        comm_s += (comm - a2a) * dt
        a2a_s += a2a * dt
        launch_s += (max(0.0, launch_host - body - comm) if b > graph_top else 0.0) * dt
        host_s += ((host_us + host_us_seq * b) * 1e-6) * dt
    out.update(
        decode=decode,
        long_tail=tail,
        tp_allreduce=comm_s,
        ep_all_to_all=a2a_s,
        host_launch=launch_s,
        engine_host=host_s,
    )
    return out


def rollout_time(ctx: Context) -> PhaseTime:
    """Prefill + decode of one replica's share of the step (module docstring)."""
    s = ctx.s
    step = DecodeStep(ctx)
    ln = ctx.r.lengths
    prompt = ln.prompt
    dist = length_distribution(s, float(ln.response))
    seqs = -(-ctx.r.sequences_per_replica // step.dp)  # each vLLM DP rank serves its share with its own KV cache
    c_kv = concurrency(ctx)
    prefill_flops = seqs * prompt * forward_flops_per_token(ctx.actor, prompt)
    prefill_s = prefill_flops / step.flops
    es = ctx.r.rollout
    prefill_slow, launch_s = _chunked_forward(s, es, ctx.actor.arch, seqs * prompt, prefill_s)
    prefill_steps = math.ceil(seqs * prompt / max(es.max_num_batched_tokens, 1))
    wave = min(seqs, max(1, c_kv))
    d = _decode(step, dist, seqs, wave, prompt)
    lengths_text = dist.describe()  # in the long-tail note and the formula
    terms = {
        "prefill": prefill_s + prefill_slow,
        "decode": d["decode"],
        "long_tail": d["long_tail"],
        "tp_allreduce": d["tp_allreduce"],
        "ep_all_to_all": d["ep_all_to_all"],
        "host_launch": launch_s + d["host_launch"],
        "engine_host": d["engine_host"] + prefill_steps * engine_step_host_seconds(s, 0),
    }
    full_step_ms = sum(step.seconds(wave, d["steady_ctx"])) * 1e3
    notes = {
        "engine_host": f"{d['steady_steps']:.0f} full-batch steps x ({s.efficiency.decode_step_host_us:g} us + "
        f"{s.efficiency.decode_step_host_us_per_seq:g} us x {wave} sequences) of vLLM scheduler/sampler CPU time, plus "
        f"the shrinking last wave and {prefill_steps} prefill steps",
        "long_tail": f"decode past the mean response ({dist.mean:,.0f} tokens) while the last wave of {wave} empties; "
        f"lengths: {lengths_text}",
        "ep_all_to_all": f"EP {step.ep} over TP {step.tp} x DP {step.dp}: per MoE layer a dispatch (all-gather) and a "
        f"combine (reduce-scatter) of the other DP ranks' tokens, {fmt_s(step.a2a_fixed)} latency per step + "
        f"{step.a2a_per_seq * 1e6:.3g} us per sequence",
        "tp_allreduce": f"2 all-reduces per layer x {ctx.actor.arch.num_layers} layers per step, latency "
        f"{step.latency_s * 1e6:g} us"
        + (" (TP group spans nodes)" if step.tp > s.hardware.gpus_per_node else "")
        + " + bytes over the TP group",
    }
    return PhaseTime(
        terms=terms,
        formula=_rollout_formula(
            ctx, step, dist, seqs, wave, prefill_s + prefill_slow, d, full_step_ms, c_kv, lengths_text
        ),
        model_flops=prefill_flops * ctx.r.num_replicas,
        extra={
            "concurrency": float(c_kv),
            "full_batch_step_s": full_step_ms / 1e3,
            "steady_steps": d["steady_steps"],
        },
        notes=notes,
    )


def _rollout_formula(
    ctx: Context,
    step: DecodeStep,
    dist: LengthDistribution | HistogramLengths,
    seqs: int,
    wave: int,
    prefill_s: float,
    d: dict[str, float],
    full_step_ms: float,
    c_kv: int,
    lengths_text: str,
) -> str:
    """The rollout's formula text; ``c_kv`` is ``concurrency(ctx)`` and ``lengths_text`` ``dist.describe()``."""
    s = ctx.s
    w_gib = step.weight_bytes(wave) / 2**30
    note = "" if c_kv > 0 else " KV cache holds no full sequence: time shown for one sequence at a time."
    launch_s = d["host_launch"]
    return (
        f"{ctx.r.num_replicas} replicas x TP {step.tp}; {seqs} sequences per replica, "
        f"concurrency {c_kv} (KV {ctx.rollout.kv_tokens:,} tokens, max_num_seqs {ctx.r.rollout.max_num_seqs}). "
        f"Prefill {seqs} x {ctx.r.lengths.prompt} tokens at {s.efficiency.prefill_mfu:.0%} of {step.tp} x "
        f"{ctx.gpu.training_tflops:g} TFLOPS = {fmt_s(prefill_s)}. Decode step at batch {wave}: max(("
        f"{w_gib:.2f} GiB weights + KV {wave} x {d['steady_ctx']:.0f} tok x {step.kv_per_token:,} B) / "
        f"({ctx.gpu.hbm_bandwidth_gb_per_s:g} GB/s x {s.efficiency.decode_hbm_efficiency:.0%}), compute) = "
        f"{full_step_ms:.2f} ms incl. TP all-reduce, host launch and engine CPU time; {d['steady_steps']:.0f} "
        f"full-batch steps, then a last wave of {wave} to {dist.longest:.0f} tokens (response lengths: {lengths_text}): "
        f"decode {fmt_s(d['decode'])}, long tail past the mean {fmt_s(d['long_tail'])}, "
        f"all-reduce {fmt_s(d['tp_allreduce'])}, engine CPU {fmt_s(d['engine_host'])}"
        + (
            f"; steps without a CUDA graph (batch > {step.graph_top}) wait for the host to issue "
            f"{ctx.actor.arch.num_layers} layers ({fmt_s(step.host_s)} per step): {fmt_s(launch_s)}"
            if launch_s
            else ""
        )
        + "."
        + note
    )


def reward_time(ctx: Context) -> PhaseTime:
    """A model reward served by a vLLM engine on the same GPUs: one forward (prefill) over the prompt
    and response of every generated sequence, spread over all GPUs, at ``prefill_mfu``. Left out:
    the engine's wake-up and the CPU scoring around it."""
    s = ctx.s
    assert ctx.reward is not None
    ln = ctx.r.lengths
    tokens = ctx.r.num_sequences_generated * ln.sequence
    flops = tokens * forward_flops_per_token(ctx.reward, ln.sequence)
    rate = peak_flops(ctx.gpu) * s.efficiency.prefill_mfu * s.hardware.num_gpus
    sec = flops / rate
    es = ctx.r.reward
    assert es is not None
    replicas = max(1, s.hardware.num_gpus // es.tp)
    slow, launch = _chunked_forward(s, es, ctx.reward.arch, tokens / replicas, sec)
    formula = (
        f"{tokens:,} tokens x {forward_flops_per_token(ctx.reward, ln.sequence) / 1e9:.1f} GFLOP/token / "
        f"({s.hardware.num_gpus} GPUs x {ctx.gpu.training_tflops:g} TFLOPS x {s.efficiency.prefill_mfu:.0%}) "
        f"= {fmt_s(sec)}, + {fmt_s(slow)} for steps of {min(es.max_num_batched_tokens, tokens):,} tokens"
        + (f", + {fmt_s(launch)} host launch (enforce_eager)" if launch else "")
    )
    terms = {"compute": sec, "gemm_small_batch": slow, "host_launch": launch}
    return PhaseTime(terms=terms, formula=formula, model_flops=flops)


def decode_step_seconds(ctx: Context, batch: int, context_tokens: float) -> float:
    """One decode step of one replica (memory/compute part + TP all-reduce + exposed host launch), for tests
    and the UI."""
    return sum(DecodeStep(ctx).seconds(batch, context_tokens))
