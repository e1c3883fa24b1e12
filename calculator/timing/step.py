"""Step time of a colocated, synchronous verl step, phase by phase (DESIGN.md 5).

The phases run one after another on the same GPUs (verl 0.9 ``trainer_mode: sync``, hybrid
engine), so ``step_s`` is their sum. Each phase is split into mechanisms (``TimeOut.terms_s``).

Worked example (Qwen2.5-7B, 8 x H100, FSDP, micro-batch 16 x 1112 tokens, ckpt on, train_mfu 0.35):
one micro-batch holds 17,792 tokens; forward + backward + recompute cost (6 + 2) x 7.07e9 matmul
weights + attention = 1.02e15 FLOPs, i.e. 2.9 s at 989 TFLOPS x 0.35, / 0.993 GEMM efficiency at
M = 17,792 rows (M / (M + 128)) = 2.93 s. FSDP gathers the bf16 weights twice (forward, backward:
2 x 15.2 GB x 7/8) and reduce-scatters fp32 grads (30.5 GB x 7/8): 53 GB per micro-batch at
450 GB/s x 0.75 = 0.16 s, hidden under the compute (FSDP prefetches the next unit while the current one
computes, so a micro-batch costs max(compute, communication)) except the pipeline fill: the root unit
(embedding + LM head, 1.09 B params) and one layer (0.23 B) of one gather and of the reduce-scatter,
17% of 40 GB = 20 ms. The host issues 28 layers x 3 passes x 0.5 ms = 42 ms of launches, hidden too.
With one sequence per micro-batch (1,112 rows) the same tokens take 11% longer (GEMM efficiency 0.90)
and pay 16x the fill: per-micro-batch costs are what make small micro-batches slow.

Assumptions, per phase:
- rollout, reward: ``calculator.timing.rollout``.
- every training-side pass, per micro-batch: compute at the phase's MFU x the GEMM efficiency of its
  mean token count M (``gemm_efficiency``: M / (M + ``gemm_half_saturation_tokens``); the MFUs are the
  large-M rates; a rank's last, partial micro-batch is not padded), shown as ``compute`` (at the MFU) +
  ``gemm_small_batch``; FSDP traffic exposed beyond that compute, and never less than the pipeline fill
  (``throughput_engine.fsdp_io``); host launches (``train_host_us_per_layer_pass`` x layers x passes)
  exposed beyond all the GPU work of the micro-batch (``host_overhead``).
- old_log_prob / ref_log_prob / critic_values: forward FLOPs (2·N + attention, ``calculator.timing.flops``)
  at ``forward_mfu``; FSDP all-gathers bf16 weights per micro-batch, overlapped with compute. The
  reference model under FSDP is a forward-only engine forced to CPU offload (verl >= 0.8,
  ``transformer_impl.py`` CPUOffload / CPUOffloadPolicy): every micro-batch copies its fp32 shard
  host->device (4 B x P / N over PCIe) before the all-gather; copy + gather overlap compute.
- update_actor / update_critic: ``ppo_epochs`` x mini-batches x micro-batches; executed FLOPs
  6·N (+2·N recompute) + attention, at ``train_mfu``; per micro-batch FSDP all-gathers bf16 weights
  in forward and again in backward (``reshard_after_forward``), reduce-scatters fp32 grads
  (``reduce_dtype`` fp32; once per mini-batch with ``use_no_sync_for_gradient_accumulation``);
  HSDP adds an all-reduce across replicas. Overlap as above. AdamW step per mini-batch: memory-bound,
  8 tensors (p, g, m, v read; p, m, v written; grad norm) per local param over HBM. Megatron:
  TP/SP collectives (4 per layer per pass, exposed), EP all-to-all, CP ring-attention hops beyond the attention
  they overlap (``backend.cp_ring_seconds``), pipeline bubble
  (pp-1)/(m+pp-1), DP reduce-scatter + all-gather per mini-batch (``throughput_engine``). verl's
  Megatron engine recomputes only with ``override_transformer_config.recompute_granularity``
  (``megatron.recompute_*``; ``model.enable_gradient_checkpointing`` is an FSDP setting): full adds a
  forward of the recomputed layers (and its TP collectives), selective the core attention only
  (``throughput_engine.megatron_recompute``).
  ``train_mfu`` applies to the EXECUTED FLOPs (recompute included); ``TimeOut.update_mfu`` and verl's
  ``perf/mfu/actor`` count model FLOPs without recompute, so with checkpointing a compute-bound
  update reports ~0.75 x train_mfu. Calibrate train_mfu from verl's MFU x 8/6 when checkpointing.
- offload: ``param_offload`` / ``optimizer_offload`` copy the role's shard (params in model dtype,
  AdamW moments 8 B/param) in and out over PCIe once per phase that uses it (verl's engine
  ``train_mode``/``eval_mode`` contexts). FSDP2 ``offload_policy``: the shard is copied in for each
  all-gather and grads copied out per micro-batch, and AdamW runs on the host CPU
  (``cpu_adam_params_per_s``). ``enable_activation_offload``: checkpointed activations go out during
  forward and back during backward on side streams (verl ``AsyncDoubleBufferGroupOffloadHandler``);
  only the part longer than the forward / backward compute is exposed.
- weight_sync: each fp32 parameter gathered whole over the FSDP group (``full_tensor()``), written to
  the 2 GiB CUDA-IPC bucket and loaded by vLLM (HBM traffic 2 x 4 B x P + 2 B x P / TP). LoRA
  (``lora.merge`` false, verl's default) sends only the adapters once the base has been synced.

Every phase then gets the costs of ``calculator.timing.overheads`` (driver dispatch, data-parallel stragglers,
MoE grouped GEMM and load imbalance, weight-sync per-tensor cost, engine wake-up / sleep, LoRA base restore).

Left out: element-wise kernels (entropy, log-softmax), the advantage computation, checkpoint saving,
validation, data loading; host work between micro-batches (verl's per-micro-batch metric syncs) beyond the
launches.
"""

from __future__ import annotations

from collections.abc import Callable

from calculator.memory.context import Context
from calculator.model import activations as acts
from calculator.model.architecture import Architecture
from calculator.model.roles import RoleModel, policy_role, trainable_adapter_params
from calculator.names import Phase, Role
from calculator.report.models import TimeOut
from calculator.resolve.batching import PassBatch
from calculator.resolve.roles import TrainerPlan
from calculator.timing.backend import (
    OPTIMIZER_STEP_TENSORS,
    FsdpIo,
    TrainingEngine,
    fsdp_io,
    host_seconds,
    megatron_dp_seconds,
    megatron_pass,
    megatron_recompute,
    ulysses_seconds,
)
from calculator.timing.flops import (
    FULL_RECOMPUTE,
    NO_RECOMPUTE,
    PhaseTime,
    Recompute,
    achieved_fraction,
    collective_bytes_per_s,
    fmt_s,
    forward_flops_per_token,
    gemm_efficiency,
    hbm_bytes_per_s,
    pcie_bytes_per_s,
    peak_flops,
    per_architecture,
    ring_fraction,
    total_params,
    train_flops_per_token,
)
from calculator.timing.overheads import add_overheads
from calculator.timing.rollout import reward_time, rollout_time
from calculator.timing.summary import time_report


@per_architecture
def _all_layers_saved(arch: Architecture) -> int:
    """Activation bytes per token that every layer saves without checkpointing (what offload copies)."""
    return acts.all_layers_saved_bytes_per_token(arch)


def _micro_tokens(ctx: Context, pb: PassBatch, sp: int) -> float:
    """Mean tokens per micro-batch on one GPU: the rank's real tokens over its micro-batches, split over SP.
    (``PassBatch.tokens_per_gpu`` is the largest micro-batch, which memory needs; a rank with 20 sequences
    in micro-batches of 16 runs 16 + 4, not 2 x 16.)"""
    if not pb.sequences_per_gpu:
        return 0.0
    return pb.sequences_per_gpu * ctx.r.trained_seq_len / pb.num_micro_batches / max(sp, 1)


def _split_io(io: FsdpIo, extra_host: float, t_gpu: float) -> tuple[float, float]:
    """(exposed collective, exposed host copy) seconds of one micro-batch: what the GPU work ``t_gpu`` of the
    same micro-batch cannot hide (FSDP prefetches the next unit while one computes, so a micro-batch lasts
    max(compute, traffic)), and never less than the pipeline fill ``io.fill``; split pro rata."""
    host = io.host + extra_host
    total = io.comm + host
    if not total:
        return 0.0, 0.0
    exposed = max(total - t_gpu, io.fill)
    return exposed * io.comm / total, exposed * host / total


def _forward_phase(
    ctx: Context,
    r: TrainingEngine,
    pb: PassBatch,
    *,
    sp: int,
    stream_fp32: bool,
    resident_offload: bool,
) -> PhaseTime:
    """A forward-only pass over the whole batch (log-prob, values); ``sp`` = its Ulysses degree."""
    s = ctx.s
    L = float(ctx.r.trained_seq_len)
    fpt = forward_flops_per_token(r.role, L)
    frac = achieved_fraction(s, ctx.gpu, s.efficiency.forward_mfu)
    rate = peak_flops(ctx.gpu) * frac
    m = _micro_tokens(ctx, pb, sp)
    tokens_total = m * pb.num_micro_batches * s.hardware.num_gpus
    if r.megatron:
        terms = megatron_pass(ctx, r, pb, L, fpt, frac, passes=1)
        f = f"Megatron forward: {pb.num_micro_batches} micro-batches/rank of ~{pb.tokens_per_gpu:,} tokens"
    else:
        eff = gemm_efficiency(s, m, ctx.gpu)
        t_cmp = m * fpt / rate
        t_gpu = t_cmp / eff
        io = fsdp_io(ctx, r, gathers=1, grads=False)
        stream = r.params * 4 / r.n / pcie_bytes_per_s(s, ctx.gpu) if stream_fp32 else 0.0
        io = io._replace(fill=io.fill + r.edge * stream)
        comm, host = _split_io(io, stream, t_gpu)
        a2a = ulysses_seconds(ctx, r.role, m, sp, 1)
        launch = max(0.0, host_seconds(s, r.role, 1) - (t_gpu + comm + host + a2a))
        n = pb.num_micro_batches
        terms = {
            "compute": n * t_cmp,
            "gemm_small_batch": n * (t_gpu - t_cmp),
            "fsdp_comm": n * comm,
            "param_stream_pcie": n * host,
            "ulysses_all_to_all": n * a2a,
            "host_overhead": n * launch,
        }
        f = (
            f"{n} micro-batches x {m:,.0f} tokens x {fpt / 1e9:.1f} GFLOP/token / "
            f"({ctx.gpu.training_tflops:g} TFLOPS x {frac:.0%} (forward_mfu {s.efficiency.forward_mfu:.0%} at H100's "
            f"balance, roofline) x GEMM efficiency {eff:.0%} "
            f"at {m:,.0f} tokens) = {fmt_s(n * t_gpu)}; per micro-batch all-gather {fmt_s(io.comm)}"
            + (f" + fp32 shard over PCIe {fmt_s(stream)} (forced CPU offload)" if stream_fp32 else "")
            + f" overlapped with compute (exposed {fmt_s(comm + host)}); host issues "
            f"{r.role.arch.num_layers} layers in {fmt_s(host_seconds(s, r.role, 1))}"
        )
    if resident_offload:
        terms["offload_pcie"] = r.offload_seconds(optimizer=False)
    return PhaseTime(terms=terms, formula=f, model_flops=tokens_total * fpt, notes=_megatron_notes(r))


def _update_phase(
    ctx: Context,
    r: TrainingEngine,
    pb: PassBatch,
    *,
    epochs: int,
    num_mini: int,
    recompute: Recompute,
) -> PhaseTime:
    """ppo_epochs x mini-batches of forward + backward + optimizer step."""
    s = ctx.s
    L = float(ctx.r.trained_seq_len)
    executed, model = train_flops_per_token(s, r.role, L, recompute=recompute)
    frac = achieved_fraction(s, ctx.gpu, s.efficiency.train_mfu)
    rate = peak_flops(ctx.gpu) * frac
    rounds = epochs * num_mini
    passes = 2.0 + recompute.matmul  # forward, backward, and the recomputed share of a forward
    sp = r.plan.sp
    m = _micro_tokens(ctx, pb, sp)
    if r.megatron:
        per = megatron_pass(ctx, r, pb, L, executed, frac, passes=passes)
        terms = {k: rounds * v for k, v in per.items()}
        terms["dp_comm"] = rounds * megatron_dp_seconds(ctx, r)
        assert r.dp_split is not None
        opt_params = r.dp_split.sharded if r.meg.use_distributed_optimizer else r.local
        rc = r.meg.recompute_granularity
        f = (
            f"Megatron: {rounds} mini-batches x {pb.num_micro_batches} micro-batches, executed "
            f"{executed / 1e9:.1f} GFLOP/token (recompute: {rc or 'none'}"
            + (f", {recompute.matmul:.0%} of the layers" if rc == "full" else "")
            + ")"
        )
    else:
        ckpt = recompute.any
        n = pb.num_micro_batches
        eff = gemm_efficiency(s, m, ctx.gpu)
        t_cmp = m * executed / rate
        t_gpu = t_cmp / eff
        gathers = 2 if r.fsdp.reshard_after_forward else 1
        io = fsdp_io(ctx, r, gathers=gathers, grads=True)
        if r.fsdp.use_no_sync_for_gradient_accumulation:  # one reduce-scatter per mini-batch
            rs = r.trainable * 4 * ring_fraction(r.n) / collective_bytes_per_s(s, ctx.gpu, r.n)
            io = io._replace(comm=io.comm + rs / n)
        comm, host = _split_io(io, 0.0, t_gpu)
        act = 0.0
        if s.model.enable_activation_offload:
            a = r.role.arch
            sp_extra = a.num_layers * acts.ulysses_extra_bytes_per_token(a, sp)  # Ulysses' second attention output
            per_tok = (
                a.num_layers * acts.checkpoint_input_bytes_per_token(a) if ckpt else _all_layers_saved(a) + sp_extra
            )
            copy = per_tok * m / pcie_bytes_per_s(s, ctx.gpu)
            fwd_share = forward_flops_per_token(r.role, L) / executed
            act = max(0.0, copy - t_gpu * fwd_share) + max(0.0, copy - t_gpu * (1 - fwd_share))
        a2a = ulysses_seconds(ctx, r.role, m, sp, passes)
        dispatch = host_seconds(s, r.role, passes)
        launch = max(0.0, dispatch - (t_gpu + comm + host + act + a2a))
        terms = {
            "compute": rounds * n * t_cmp,
            "gemm_small_batch": rounds * n * (t_gpu - t_cmp),
            "fsdp_comm": rounds * n * comm,
            "cpu_offload_pcie": rounds * n * host,
            "activation_offload": rounds * n * act,
            "ulysses_all_to_all": rounds * n * a2a,
            "host_overhead": rounds * n * launch,
        }
        opt_params = r.trainable / r.n
        f = (
            f"{epochs} epoch(s) x {num_mini} mini-batches x {n} micro-batches x {m:,.0f} tokens x "
            f"{executed / 1e9:.1f} GFLOP/token ({'6N+2N recompute' if ckpt else '6N'} + attention) / "
            f"({ctx.gpu.training_tflops:g} TFLOPS x {frac:.0%} (train_mfu {s.efficiency.train_mfu:.0%} at H100's "
            f"balance, roofline) x GEMM efficiency {eff:.0%}); "
            f"per micro-batch FSDP {gathers} bf16 all-gather(s) + fp32 reduce-scatter {fmt_s(io.comm)}, overlapped: "
            f"exposed {fmt_s(comm + host)}; host issues {r.role.arch.num_layers} layers x {passes:g} passes in "
            f"{fmt_s(dispatch)}"
        )
    terms.update({k: rounds * v for k, v in _optimizer_step(ctx, r, opt_params).items()})
    terms["offload_pcie"] = r.offload_seconds(optimizer=True)
    tokens_total = m * pb.num_micro_batches * rounds * s.hardware.num_gpus
    return PhaseTime(terms=terms, formula=f, model_flops=tokens_total * model, notes=_megatron_notes(r))


def _megatron_notes(r: TrainingEngine) -> dict[str, str]:
    """Formula of the context-parallel term (Megatron with CP > 1), for ``time.term_formulas``."""
    if not r.megatron or r.meg.context_parallel_size <= 1:
        return {}
    cp = r.meg.context_parallel_size
    return {
        "cp_ring_attention": f"CP {cp} ring attention: per layer {cp - 1} hops of the local K and V chunk (2 x kv_dim / TP "
        "x 2 B per token) over the CP group, forward + recomputed forward + backward (K, V and grads); only the hop time "
        "beyond one block of the local attention it overlaps is charged (backend.cp_ring_seconds)"
    }


def _optimizer_step(ctx: Context, r: TrainingEngine, opt_params: float) -> dict[str, float]:
    """Seconds of one optimizer step: on the host CPU (FSDP2 offload_policy), split CPU/GPU (Megatron
    optimizer_cpu_offload) or on the GPU, memory-bound over HBM."""
    s = ctx.s
    if r.cpu_policy:
        node_params = r.trainable * min(s.hardware.gpus_per_node, s.hardware.num_gpus) / r.n
        return {"optimizer_step_cpu": node_params / s.efficiency.cpu_adam_params_per_s}
    if r.megatron and r.meg.optimizer_cpu_offload:
        return _megatron_cpu_optimizer(ctx, r, opt_params)
    per = OPTIMIZER_STEP_TENSORS.get(s.actor.optim.optimizer, 8) * (4 if r.megatron else r.mb)
    return {"optimizer_step": opt_params * per / hbm_bytes_per_s(s, ctx.gpu)}


def _megatron_cpu_optimizer(ctx: Context, r: TrainingEngine, opt_params: float) -> dict[str, float]:
    """One Megatron optimizer step with ``optimizer_cpu_offload`` (Megatron-core HybridDeviceOptimizer): the
    offloaded fraction f of each rank's shard is stepped by torch's CPU Adam on the node's host CPUs (all ranks of
    a node share them: ``cpu_adam_params_per_s`` per node), after copying its fp32 grads down and before copying
    the updated fp32 params up over PCIe (4 + 4 B per param); the rest steps on the GPU at HBM speed."""
    s = ctx.s
    f = r.meg.optimizer_offload_fraction
    node = f * opt_params * min(s.hardware.gpus_per_node, s.hardware.num_gpus)
    per = OPTIMIZER_STEP_TENSORS.get(s.actor.optim.optimizer, 8) * 4
    return {
        "optimizer_step_cpu": node / s.efficiency.cpu_adam_params_per_s,
        "optimizer_offload_pcie": f * opt_params * (4 + 4) / pcie_bytes_per_s(s, ctx.gpu),
        "optimizer_step": (1 - f) * opt_params * per / hbm_bytes_per_s(s, ctx.gpu),
    }


def _actor(ctx: Context) -> TrainingEngine:
    return TrainingEngine(ctx, ctx.actor, ctx.r.actor)


def _critic(ctx: Context) -> TrainingEngine:
    assert ctx.critic is not None and ctx.r.critic is not None
    return TrainingEngine(ctx, ctx.critic, ctx.r.critic)


def _old_log_prob(ctx: Context) -> PhaseTime:
    p = ctx.r.passes[Phase.OLD_LOG_PROB]
    return _forward_phase(ctx, _actor(ctx), p.expected, sp=p.sp, stream_fp32=False, resident_offload=True)


def _ref_log_prob(ctx: Context) -> PhaseTime:
    """The ref's forward: the actor with adapters off under LoRA; else its own engine, which keeps no optimizer,
    is forced to CPU offload under FSDP (streams its fp32 shards: ``Resolved.ref_streams_weights``) and stays
    on the GPU under Megatron unless offloaded."""
    r = ctx.r
    p = r.passes[Phase.REF_LOG_PROB]
    if r.ref is None:  # LoRA: the actor with adapters disabled
        return _forward_phase(ctx, _actor(ctx), p.expected, sp=p.sp, stream_fp32=False, resident_offload=True)
    ref = policy_role(Role.REF, ctx.actor.arch)
    engine = TrainingEngine(ctx, ref, r.ref)
    if engine.megatron:
        return _forward_phase(ctx, engine, p.expected, sp=p.sp, stream_fp32=False, resident_offload=True)
    engine.p_off = False
    return _forward_phase(ctx, engine, p.expected, sp=p.sp, stream_fp32=r.ref_streams_weights, resident_offload=False)


def _critic_values(ctx: Context) -> PhaseTime:
    p = ctx.r.passes[Phase.CRITIC_VALUES]
    return _forward_phase(ctx, _critic(ctx), p.expected, sp=p.sp, stream_fp32=False, resident_offload=True)


def _recompute(plan: TrainerPlan, role: RoleModel) -> Recompute:
    """FSDP: ``enable_gradient_checkpointing`` recomputes every layer; Megatron: ``recompute_granularity``."""
    if plan.is_megatron:
        return megatron_recompute(plan.megatron, role.arch)
    return FULL_RECOMPUTE if plan.gradient_checkpointing else NO_RECOMPUTE


def _update_actor(ctx: Context) -> PhaseTime:
    r = ctx.r
    return _update_phase(
        ctx,
        _actor(ctx),
        r.passes[Phase.UPDATE_ACTOR].expected,
        epochs=r.actor_update_epochs,
        num_mini=r.actor_mini_batches,
        recompute=_recompute(r.actor, ctx.actor),
    )


def _update_critic(ctx: Context) -> PhaseTime:
    r = ctx.r
    assert r.critic is not None and ctx.critic is not None
    return _update_phase(
        ctx,
        _critic(ctx),
        r.passes[Phase.UPDATE_CRITIC].expected,
        epochs=r.critic_update_epochs,
        num_mini=r.critic_mini_batches,
        recompute=_recompute(r.critic, ctx.critic),
    )


def _weight_sync(ctx: Context) -> PhaseTime:
    """Full parameters gathered per tensor and pushed through the CUDA-IPC bucket into vLLM."""
    s = ctx.s
    r = _actor(ctx)
    p = total_params(ctx.actor.arch)
    tp_roll = ctx.r.rollout.tp
    wbytes = ctx.r.rollout.weight_bytes_per_param
    if r.megatron:
        group = r.meg.tensor_model_parallel_size * r.meg.pipeline_model_parallel_size
        mb, gather_group = 2, group
    else:
        mb, gather_group = r.mb, r.n
    what = f"{p:,} params"
    if s.model.lora_rank:  # verl LoRA (merge=false): after the first step only the adapters are sent
        p = trainable_adapter_params(ctx.actor.arch, s.model.lora_rank, s.model.target_modules, ctx.r.actor.is_megatron)
        what, wbytes = f"LoRA adapters {p:,} params (base synced once)", mb
    gather = p * mb * ring_fraction(gather_group) / collective_bytes_per_s(s, ctx.gpu, gather_group)
    copies = (2 * p * mb + p * wbytes / tp_roll) / hbm_bytes_per_s(s, ctx.gpu)
    load = 0.0
    if r.p_off and not r.megatron:
        load = p * mb / r.n * (1 if r.strategy == "fsdp2" else 2) / pcie_bytes_per_s(s, ctx.gpu)
    elif r.p_off:
        load = 2 * r.local * 2 / pcie_bytes_per_s(s, ctx.gpu)
    terms = {"gather": gather, "bucket_copies": copies, "offload_pcie": load}
    f = (
        f"{what} x {mb} B gathered whole over {gather_group} GPUs ({fmt_s(gather)}) + bucket write/read and "
        f"vLLM load {fmt_s(copies)} + param offload {fmt_s(load)}"
    )
    return PhaseTime(terms=terms, formula=f)


PHASE_TIMERS: dict[Phase, Callable[[Context], PhaseTime]] = {
    Phase.ROLLOUT: rollout_time,
    Phase.REWARD: reward_time,
    Phase.OLD_LOG_PROB: _old_log_prob,
    Phase.REF_LOG_PROB: _ref_log_prob,
    Phase.CRITIC_VALUES: _critic_values,
    Phase.UPDATE_CRITIC: _update_critic,
    Phase.UPDATE_ACTOR: _update_actor,
    Phase.WEIGHT_SYNC: _weight_sync,
}


def phase_times(ctx: Context) -> dict[str, PhaseTime]:
    """PhaseTime of every phase that occurs (``Resolved.phases``), in step order."""
    return {p: add_overheads(ctx, p, PHASE_TIMERS[p](ctx)) for p in ctx.r.phases}


def step_time(ctx: Context) -> TimeOut:
    """Seconds per phase, step time, throughput and the actor update's MFU."""
    times = phase_times(ctx)
    g = ctx.s.hardware.num_gpus
    return time_report(
        ctx,
        {p: t.seconds for p, t in times.items()},
        num_gpus=g,
        update=times.get(Phase.UPDATE_ACTOR),
        update_gpus=g,
        details={p: t.formula for p, t in times.items()},
        terms_s={p: dict(t.terms) for p, t in times.items()},
        term_formulas={p: dict(t.notes) for p, t in times.items() if t.notes},
    )


__all__ = ["PHASE_TIMERS", "phase_times", "step_time"]
