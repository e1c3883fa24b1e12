"""Step time of a split placement (DESIGN.md 4.10): generation on the rollout pool overlaps training.

one_step_off (verl ``verl/experimental/one_step_off_policy/ray_trainer.py``, docs/advance/one_step_off.md): each
step waits for the previous generation (``wait_prev_gen``), syncs the weights, launches the next generation and
trains on the batch it got. Generation (the whole batch, long tail included: ``calculator.timing.rollout``, on the
rollout pool's replicas) runs beside training, so

    step = max(generation, training) + weight_sync,   wait_prev_gen = max(0, generation - training)

which is verl's own identity "step ≈ wait_prev_gen + old_log_prob + update_actor" (+ the sync, ~0.1-0.3 s there).

fully_async (docs/advance/fully_async.md "Supported Modes"): the rollouter streams samples; the trainer syncs
every ``trigger_parameter_sync_step`` local updates of ``require_batches x ppo_mini_batch_size`` prompts. A step
here is one sync period. Streaming keeps the engine's batch full, so generation costs the prefill plus
``S x R̄ / C`` full-batch decode steps (no last wave); what the long tail still costs depends on the mode:
- ``staleness_threshold = 0`` (modes 1, 2): the period's samples are generated as one synchronous batch (long
  tail included); training of all but the last local update overlaps it:
  ``step = max(generation, generation_stream / k + training x (k-1)/k) + training / k + sync`` (k = updates);
- ``staleness_threshold > 0`` without ``partial_rollout`` (mode 3): at a sync the rollouter waits for its
  in-flight requests: the last wave's part past the mean length (the rollout model's ``long_tail`` term);
- with ``partial_rollout`` (mode 4): in-flight requests are interrupted and resumed after the sync: no drain.
  ``step = max(generation_stream + drain, training) + sync``.
verl's ``timing_s/gen`` of the fully-async trainer (time waiting for samples) is ``wait_prev_gen`` here.

Weight sync between pools: the trainer gathers each parameter whole (``full_tensor()``, ring all-gather over its
FSDP group), rank 0 broadcasts it over NCCL to every rollout rank (one_step_off: tensor by tensor,
``collective.broadcast``; fully_async: the checkpoint engine packs 4 GiB buckets), and vLLM loads it
(``load_weights``: one HBM copy of ``P x w / TP``). Bandwidth: NVLink when both pools fit in one node, else
the nodes' NICs (``calculator.timing.flops.collective_bytes_per_s``'s fabric rule). Each broadcast call also
costs ``BROADCAST_CALL_S`` of host/NCCL launch latency.

Generation and each trainer pass carry the same per-phase costs as a colocated step
(``calculator.timing.overheads.add_overheads``: dispatch, the data-parallel straggler, MoE grouped GEMM and
load imbalance), each with its formula in ``time.term_formulas``.

Left out: the sleep/resume of the engine at a sync, the re-prefill of interrupted partial rollouts, Megatron's
per-expert parameter generation (fully_async.md: sync time is dominated by it for MoE models: 15.8 s for
Qwen3-30B-A3B on 16+16 ranks, far above this bandwidth model), staleness as a limit on how far generation may
run ahead (steady state only), validation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from calculator.inputs.placement import PlacementSection
from calculator.memory.context import Context
from calculator.memory.pools import CHECKPOINT_ENGINE_BUFFER_MIB, PoolMemory
from calculator.names import Phase
from calculator.report.models import TimeOut
from calculator.resolve.placement import PlacementPlan
from calculator.timing.flops import (
    GB,
    PhaseTime,
    collective_bytes_per_s,
    fmt_s,
    hbm_bytes_per_s,
    ring_fraction,
    total_params,
)
from calculator.timing.overheads import add_overheads, num_weight_tensors
from calculator.timing.rollout import rollout_time
from calculator.timing.step import PHASE_TIMERS
from calculator.timing.summary import time_report
from calculator.units import MIB_BYTES

# One NCCL broadcast call issued from Python (ray.util.collective + load_weights per tensor): fully_async.md's
# checkpoint-engine ablation, Qwen2.5-Math-7B 4+4 ranks without the checkpoint engine: 0.12 s for 339 tensors of
# which ~0.05 s is 15 GB at NVLink speed: (0.12 - 0.05) / 339 ≈ 0.2 ms per call.
BROADCAST_CALL_S = 0.2e-3
CHECKPOINT_BUCKET_BYTES = CHECKPOINT_ENGINE_BUFFER_MIB * MIB_BYTES  # the bucket calculator.memory.pools charges
WAIT = "wait_prev_gen"


@dataclass(frozen=True)
class Span:
    pool: str
    name: str
    start_s: float
    end_s: float


@dataclass(frozen=True)
class PoolTiming:
    step_s: float
    generation_s: float  # the rollout pool's busy time per step
    training_s: float
    sync_s: float
    wait_s: float
    drain_s: float
    generation: PhaseTime
    trainer: dict[str, PhaseTime]
    sync: PhaseTime
    timeline: list[Span]
    formula: str


def _broadcast_bytes_per_s(ctx: Context, plan: PlacementPlan) -> float:
    s, gpu = ctx.s, ctx.gpu
    intra = gpu.intra_node_gb_per_s * GB * s.efficiency.nvlink_efficiency
    if plan.num_nodes == 1:
        return intra
    fabric = gpu.inter_node_gb_per_s * GB * s.placement.physical_gpus_per_node * s.efficiency.network_efficiency
    return min(intra, fabric)


def sync_time(ctx: Context, roll: Context, plan: PlacementPlan) -> PhaseTime:
    """NCCL weight sync trainer -> rollout pool (module docstring)."""
    s = ctx.s
    arch = ctx.actor.arch
    p = total_params(arch)
    megatron = ctx.r.actor.is_megatron
    mb = 2 if megatron or s.actor.fsdp_config.model_dtype != "fp32" else 4
    group = plan.trainer.num_gpus
    if megatron:
        m = s.actor.megatron
        group = m.tensor_model_parallel_size * m.pipeline_model_parallel_size
    gather = p * mb * ring_fraction(group) / collective_bytes_per_s(s, ctx.gpu, group)
    bw = _broadcast_bytes_per_s(ctx, plan)
    broadcast = p * mb / bw
    if plan.mode == "fully_async":
        calls = math.ceil(p * mb / CHECKPOINT_BUCKET_BYTES)
        how = f"{calls} checkpoint-engine buckets of 4 GiB"
    else:
        calls = num_weight_tensors(arch)
        how = f"{calls} per-tensor broadcasts"
    launch = calls * BROADCAST_CALL_S
    load = p * roll.r.rollout.weight_bytes_per_param / roll.r.rollout.tp / hbm_bytes_per_s(s, ctx.gpu)
    terms = {"gather": gather, "broadcast": broadcast, "call_latency": launch, "load_weights": load}
    notes = {
        "gather": f"{p:,} params x {mb} B x (g-1)/g over the trainer's group of {group} GPUs",
        "broadcast": f"{p:,} params x {mb} B / {bw / GB:.0f} GB/s (NVLink in one node, else the nodes' NICs)",
        "call_latency": f"{how} x {BROADCAST_CALL_S * 1e3:g} ms per call",
        "load_weights": f"{p:,} params x {roll.r.rollout.weight_bytes_per_param} B / rollout TP "
        f"{roll.r.rollout.tp} / HBM bandwidth",
    }
    f = (
        f"{p:,} params x {mb} B: full_tensor gather over {group} GPUs {fmt_s(gather)}, broadcast to the rollout pool "
        f"at {bw / GB:.0f} GB/s {fmt_s(broadcast)}, {how} x {BROADCAST_CALL_S * 1e3:g} ms {fmt_s(launch)}, "
        f"vLLM load {fmt_s(load)}"
    )
    return PhaseTime(terms=terms, formula=f, notes=notes)


def _stream_seconds(gen: PhaseTime, roll: Context) -> float:
    """Generation with the engine's batch kept full (streaming): prefill + S·R̄/C full-batch steps."""
    seqs = roll.r.sequences_per_replica
    wave = max(1.0, min(float(seqs), gen.extra.get("concurrency", 1.0)))
    steps = seqs * float(roll.r.lengths.response) / wave
    return gen.terms["prefill"] + steps * gen.extra.get("full_batch_step_s", 0.0)


def overlap_step(
    mode: str,
    p: PlacementSection,
    *,
    generation_s: float,
    stream_s: float,
    long_tail_s: float,
    train_s: float,
    sync_s: float,
) -> tuple[float, float, str]:
    """(step, rollout busy time, formula) of one steady-state step from the two sides' times (module docstring).
    ``generation_s``: the whole batch generated synchronously (long tail included); ``stream_s``: the same
    samples with the engine's batch kept full; ``long_tail_s``: the part of the last wave past the mean."""
    if mode == "one_step_off":
        return max(generation_s, train_s) + sync_s, generation_s, "step = max(generation, training) + sync"
    k = p.trigger_parameter_sync_step
    if p.staleness_threshold == 0:
        body = max(generation_s, stream_s / k + train_s * (k - 1) / k)
        f = f"staleness 0: step = max(generation, stream/{k} + training x {k - 1}/{k}) + training/{k} + sync"
        return body + train_s / k + sync_s, generation_s, f
    drain = 0.0 if p.partial_rollout else long_tail_s
    how = "partial rollout: no drain" if p.partial_rollout else "drain in-flight requests (long tail)"
    f = f"streaming ({how}): step = max(generation stream + drain, training) + sync"
    return max(stream_s + drain, train_s) + sync_s, stream_s + drain, f


def _timeline(trainer: dict[str, PhaseTime], sync: float, gen_busy: float, step: float) -> list[Span]:
    spans = [Span("rollout", Phase.WEIGHT_SYNC, 0.0, sync), Span("trainer", Phase.WEIGHT_SYNC, 0.0, sync)]
    spans.append(Span("rollout", "generate next batch", sync, sync + gen_busy))
    t = sync
    for name, pt in trainer.items():
        spans.append(Span("trainer", name, t, t + pt.seconds))
        t += pt.seconds
    if step > t + 1e-9:
        spans.append(Span("trainer", WAIT, t, step))
    return spans


def pool_timing(plan: PlacementPlan, trainer_pool: PoolMemory, rollout_pool: PoolMemory) -> PoolTiming:
    ctx, roll = trainer_pool.ctx, rollout_pool.ctx
    # The same per-phase costs as a colocated step (``calculator.timing.overheads``: dispatch, the data-parallel
    # straggler, MoE grouped GEMM and imbalance); the weight sync is the pools' own NCCL broadcast (``sync_time``).
    gen = add_overheads(roll, Phase.ROLLOUT, rollout_time(roll))
    phases = [Phase(pm.name) for pm in trainer_pool.expected if pm.name != Phase.WEIGHT_SYNC]
    trainer = {p: add_overheads(ctx, p, PHASE_TIMERS[p](ctx)) for p in phases}
    train = sum(t.seconds for t in trainer.values())
    sync = sync_time(ctx, roll, plan)
    step, busy, f = overlap_step(
        plan.mode,
        roll.s.placement,
        generation_s=gen.seconds,
        stream_s=_stream_seconds(gen, roll),
        long_tail_s=gen.terms.get("long_tail", 0.0),
        train_s=train,
        sync_s=sync.seconds,
    )
    wait = max(0.0, step - train - sync.seconds)
    drain = busy - _stream_seconds(gen, roll) if plan.mode == "fully_async" else 0.0
    formula = (
        f"{plan.mode}: {f}; generation {fmt_s(busy)} on {plan.rollout.num_gpus} GPUs, training {fmt_s(train)} on "
        f"{plan.trainer.num_gpus} GPUs, sync {fmt_s(sync.seconds)}, trainer waits {fmt_s(wait)}"
    )
    timeline = _timeline(trainer, sync.seconds, busy, step)
    return PoolTiming(step, busy, train, sync.seconds, wait, max(0.0, drain), gen, trainer, sync, timeline, formula)


def time_out(plan: PlacementPlan, pt: PoolTiming, trainer_pool: PoolMemory) -> TimeOut:
    """The report's ``time`` of a split step: ``phases_s`` = the trainer's critical path (wait + its passes + sync),
    summing to ``step_s``; generation runs hidden beside it (``details["rollout"]``)."""
    ctx = trainer_pool.ctx
    phases_s = {WAIT: pt.wait_s, **{p: t.seconds for p, t in pt.trainer.items()}, Phase.WEIGHT_SYNC: pt.sync_s}
    terms = {WAIT: {"exposed_generation": pt.wait_s}, **{p: dict(t.terms) for p, t in pt.trainer.items()}}
    terms[Phase.WEIGHT_SYNC] = dict(pt.sync.terms)
    details = {WAIT: pt.formula, "rollout": pt.generation.formula, **{p: t.formula for p, t in pt.trainer.items()}}
    details[Phase.WEIGHT_SYNC] = pt.sync.formula
    notes = {p: dict(t.notes) for p, t in pt.trainer.items() if t.notes}
    if pt.sync.notes:
        notes[Phase.WEIGHT_SYNC] = dict(pt.sync.notes)
    notes[WAIT] = {"exposed_generation": pt.formula}
    return time_report(
        ctx,
        phases_s,
        num_gpus=plan.trainer.num_gpus + plan.rollout.num_gpus,
        update=pt.trainer.get(Phase.UPDATE_ACTOR),
        update_gpus=plan.trainer.num_gpus,
        details=details,
        terms_s=terms,
        step_s=pt.step_s,
        term_formulas=notes,
    )


__all__ = [
    "BROADCAST_CALL_S",
    "PoolTiming",
    "Span",
    "num_weight_tensors",
    "overlap_step",
    "pool_timing",
    "sync_time",
    "time_out",
]
