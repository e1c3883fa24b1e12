"""Rollout time of one synchronous step: vLLM prefill + decode on each replica, and the reward model.

Every replica (``rollout TP`` GPUs) serves ``sequences_per_replica`` requests at once (verl's agent
loop submits the whole batch, balanced over replicas); all replicas are alike, so the phase lasts as
long as one replica. Per replica:

prefill (compute-bound)
    S·P tokens x (2·N_active + causal attention at length P) / (TP x peak x prefill_mfu x GEMM efficiency
    of a step of ``max_num_batched_tokens`` tokens, ``flops.gemm_efficiency``).
    Left out: prefix-cache hits between the n samples of a prompt (vLLM only reuses blocks computed
    in an earlier step; the n copies are usually scheduled together), recompute after preemption.

decode (one step = one token for every running sequence; bandwidth-bound, compute-bound at large batch)
    step(b, c) = max(bytes(b, c) / (HBM x decode_hbm_efficiency),
                     FLOPs(b, c) / (TP x peak x prefill_mfu))  +  TP all-reduce(b)
    bytes   = weights/GPU (MoE: dense part + the experts the b tokens touch, E·(1-(1-k/E)^b))
              + KV read of the running batch b·c·kv_bytes_per_token_per_GPU
              + sampler logits b·V·10 B (bf16 logits, fp32 copy, fp32 probabilities; full vocab)
    FLOPs   = b·(2·N_active + 2·c·layers·(q_dim + o_dim)) / TP
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

Response lengths: mean R̄ (``data.mean_response_length``) and max R_max; the assumed distribution
has both and the step always contains one max-length response (RL batches of thousands usually
have a non-zero clip ratio): uniform on [2R̄-R_max, R_max] when R̄ >= R_max/2, else
R = R_max·U^k with k = R_max/R̄ - 1 (U uniform; a long tail: with R̄ = R_max/10, 7% exceed R_max/2).
The last wave is integrated over 24 response positions (midpoint rule). The time spent past the
mean length is reported as ``long_tail``.

Left out: vLLM scheduler/CPU overhead per step outside the forward (input preparation, sampling
bookkeeping; with graphs and without), chunked-prefill
interference with decode beyond adding the prefill time, preemption and recompute when the KV
cache fills, speculative decoding, engine wake-up/sleep, detokenisation and rule-based reward on CPU.
"""

from __future__ import annotations

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

GRID_POINTS = 24  # positions sampled along the last wave (midpoint rule; within 0.1% of 2000 points)
ALLREDUCES_PER_LAYER = 2  # after attention (o_proj) and after the MLP (down_proj), Megatron-style TP


# ---- response-length distribution ----------------------------------------------------------------


def survival(t: float, mean: float, top: float) -> float:
    """P(response length > t) under the assumed distribution (module docstring)."""
    if t >= top:
        return 0.0
    if mean >= top:
        return 1.0
    if 2 * mean >= top:
        lo = 2 * mean - top
        return 1.0 if t <= lo else 1.0 - (t - lo) / (top - lo)
    k = top / mean - 1.0
    return 1.0 - (max(t, 0.0) / top) ** (1.0 / k)


def second_moment(mean: float, top: float) -> float:
    """E[R²] of the assumed distribution."""
    if mean >= top:
        return top * top
    if 2 * mean >= top:
        lo = 2 * mean - top
        return (lo * lo + lo * top + top * top) / 3.0
    k = top / mean - 1.0
    return top * top / (2 * k + 1)


# ---- one decode step -----------------------------------------------------------------------------


@per_architecture
def _expert_params(arch: Architecture) -> int:
    return arch.num_moe_layers * arch.num_experts * arch.expert_params()


def host_step_seconds(s: Scenario, arch: Architecture) -> float:
    """CPU time to issue one engine step's layers without a CUDA graph (``eager_decode_host_us_per_layer``)."""
    return arch.num_layers * s.efficiency.eager_decode_host_us_per_layer * 1e-6


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
        self.wbytes = es.weight_bytes_per_param
        self.experts = _expert_params(arch)
        self.dense = total_params(arch) - self.experts
        self.kv_per_token = ctx.rollout.kv_bytes_per_token_per_gpu
        self.hbm = hbm_bytes_per_s(s, ctx.gpu)
        self.flops = peak_flops(ctx.gpu) * s.efficiency.prefill_mfu * self.tp
        self.n_active = matmul_params(ctx.actor)
        self.latency_s = s.efficiency.tp_allreduce_latency_us * 1e-6
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

    def weight_bytes(self, b: float) -> float:
        """Weights read per step per GPU; MoE reads only the experts some token of the batch chose."""
        if not self.experts:
            return self.dense * self.wbytes / self.tp
        a = self.arch
        touched = 1.0 - (1.0 - a.num_experts_per_tok / a.num_experts) ** b
        return (self.dense + self.experts * touched) * self.wbytes / self.tp

    def seconds(self, b: float, context: float) -> tuple[float, float, float]:
        """(memory/compute-bound part, TP all-reduce part, exposed host launch) of one step with ``b``
        running sequences whose mean context is ``context`` tokens. Without a CUDA graph the step lasts
        max(GPU time, host time): vLLM waits for the sampled tokens every step, so the CPU cannot run ahead."""
        mem = self.weight_bytes(b) + b * (context * self.kv_per_token + self.sampler_per_seq)
        flops = b * (2.0 * self.n_active + self.attn_per_ctx * context)
        body = max(mem / self.hbm, flops / self.flops)
        comm = self.comm_fixed + b * self.comm_per_seq if self.tp > 1 else 0.0
        launch = max(0.0, self.host_s - body - comm) if b > self.graph_top else 0.0
        return body, comm, launch


def concurrency(ctx: Context) -> int:
    """Sequences one replica runs at once: KV blocks at the mean lengths, capped by max_num_seqs."""
    return max_concurrent_sequences(ctx.rollout, ctx.r.rollout.max_num_seqs, ctx.r.lengths.sequence)


def rollout_time(ctx: Context) -> PhaseTime:
    """Prefill + decode of one replica's share of the step (module docstring)."""
    s = ctx.s
    step = DecodeStep(ctx)
    ln = ctx.r.lengths
    prompt, mean_r, top_r = ln.prompt, float(ln.response), float(s.data.max_response_length)
    seqs = ctx.r.sequences_per_replica
    c_kv = concurrency(ctx)
    cap = max(1, c_kv)
    prefill_flops = seqs * prompt * forward_flops_per_token(ctx.actor, prompt)
    prefill_s = prefill_flops / step.flops
    es = ctx.r.rollout
    prefill_slow, launch_s = _chunked_forward(s, es, ctx.actor.arch, seqs * prompt, prefill_s)
    prefill_s += prefill_slow

    # Steady part: the batch is full while requests wait.
    wave = min(seqs, cap)
    steady_steps = (seqs - wave) * mean_r / wave
    steady_ctx = prompt + second_moment(mean_r, top_r) / (2 * mean_r)
    body, comm, launch = step.seconds(wave, steady_ctx)
    decode_s, comm_s = steady_steps * body, steady_steps * comm
    launch_s += steady_steps * launch
    # Last wave: `wave` sequences finishing one by one; the longest reaches max_response_length.
    tail_s = 0.0
    dt = top_r / GRID_POINTS
    for j in range(GRID_POINTS):
        t = (j + 0.5) * dt
        b = max(1.0, wave * survival(t, mean_r, top_r))
        body, comm, launch = step.seconds(b, prompt + t)
        if t < mean_r:
            decode_s += body * dt
        else:
            tail_s += body * dt
        comm_s += comm * dt
        launch_s += launch * dt
    terms = {
        "prefill": prefill_s,
        "decode": decode_s,
        "long_tail": tail_s,
        "tp_allreduce": comm_s,
        "host_launch": launch_s,
    }
    w_gib = step.weight_bytes(wave) / 2**30
    full_step_ms = sum(step.seconds(wave, steady_ctx)) * 1e3
    note = "" if c_kv > 0 else " KV cache holds no full sequence: time shown for one sequence at a time."
    formula = (
        f"{ctx.r.num_replicas} replicas x TP {step.tp}; {seqs} sequences per replica, "
        f"concurrency {c_kv} (KV {ctx.rollout.kv_tokens:,} tokens, max_num_seqs {ctx.r.rollout.max_num_seqs}). "
        f"Prefill {seqs} x {prompt} tokens at {s.efficiency.prefill_mfu:.0%} of {step.tp} x "
        f"{ctx.gpu.training_tflops:g} TFLOPS = {fmt_s(prefill_s)}. Decode step at batch {wave}: max(("
        f"{w_gib:.2f} GiB weights + KV {wave} x {steady_ctx:.0f} tok x {step.kv_per_token:,} B) / "
        f"({ctx.gpu.hbm_bandwidth_gb_per_s:g} GB/s x {s.efficiency.decode_hbm_efficiency:.0%}), compute) = "
        f"{full_step_ms:.2f} ms incl. TP all-reduce and host launch; {steady_steps:.0f} full-batch steps, then a last wave "
        f"of {wave} to {top_r:.0f} tokens (mean {mean_r:.0f}): decode {fmt_s(decode_s)}, "
        f"long tail past the mean {fmt_s(tail_s)}, all-reduce {fmt_s(comm_s)}"
        + (
            f"; steps without a CUDA graph (batch > {step.graph_top}) wait for the host to issue "
            f"{ctx.actor.arch.num_layers} layers ({fmt_s(step.host_s)} per step): {fmt_s(launch_s)}"
            if launch_s
            else ""
        )
        + "."
        + note
    )
    flops_total = prefill_flops * ctx.r.num_replicas
    return PhaseTime(
        terms=terms,
        formula=formula,
        model_flops=flops_total,
        extra={"concurrency": float(c_kv), "full_batch_step_s": full_step_ms / 1e3, "steady_steps": steady_steps},
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
