"""Memory of each pool of a split placement (DESIGN.md 4.10): the same phase walk, seen from each pool.

Rollout pool (``rollout.nnodes`` x ``rollout.n_gpus_per_node`` GPUs): the engine is always awake
(``free_cache_engine: False`` in verl's recipe configs) with its full ``gpu_memory_utilization`` budget, no
trainer state, one process (the engine) plus the weight-sync communicator. Phases:
- ``rollout``: the awake engine (weights, KV cache, profiled activations, non-torch memory, CUDA graphs);
- ``weight_sync``: the awake engine plus the receive buffer: one_step_off broadcasts tensor by tensor
  (``sync_rollout_weights``: ``torch.empty(shape, dtype)`` per tensor, dtype of the actor's parameters, then
  ``load_weights``), so the largest tensor in the master dtype; fully_async's checkpoint engine (default on)
  receives into one bucket of ``max(device_buffer_size_M = 4096 MiB, largest tensor)`` (docs/advance/fully_async.md,
  ``checkpoint_engine``: rollout rank 1 x bucket, trainer rank 2 x bucket without overlap).
Trainer pool (``trainer.nnodes`` x ``trainer.n_gpus_per_node``): the colocated walk of the trainer's phases
(``calculator.memory.phases``) with the engine's components removed, no rollout process, and the weight sync
sending over NCCL instead of the CUDA-IPC bucket. fully_async with ``use_rollout_log_probs`` has no
``old_log_prob`` pass.

Left out: the checkpoint engine's ``overlap_broadcast_and_consume`` (3 x / 2 x bucket), the rollout pool's
validation runs, a reward model on its own pool.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from calculator.memory.context import Context, build_context
from calculator.memory.engine import EngineBudget, engine_budget
from calculator.memory.phases import phase_memory
from calculator.names import Comp, Phase, Process, Role
from calculator.report.models import Component, PhaseMemory
from calculator.resolve.placement import PlacementPlan
from calculator.resolve.resolved import resolve
from calculator.units import GIB_BYTES, MIB_BYTES

CHECKPOINT_ENGINE_BUFFER_MIB = 4096  # async_training.checkpoint_engine.device_buffer_size_M (fully_async yaml)
_RUNTIME = (Comp.CUDA_CONTEXT, Comp.NCCL_BUFFERS)


@dataclass(frozen=True)
class PoolMemory:
    name: str
    num_gpus: int
    expected: list[PhaseMemory]
    worst: list[PhaseMemory]
    starts: bool  # the rollout engine starts (always True for the trainer pool)
    start_note: str
    ctx: Context  # the pool's context (the rollout pool's has the no-trainer engine budget)
    startup_free_bytes: int = 0  # rollout pool: free memory when the engine starts (only the runtime resident)
    startup_required_bytes: int = 0  # rollout pool: vLLM's util x total


def _runtime(ctx: Context, processes: int, what: str, tp_comm: bool) -> list[Component]:
    ov = ctx.s.overheads
    nccl = int(ov.trainer_nccl_gib * GIB_BYTES)
    f = f"NCCL communicators {ov.trainer_nccl_gib} GiB ({what})"
    if tp_comm:
        nccl += int(ov.vllm_tp_comm_gib * GIB_BYTES)
        f += f" + rollout TP communicators {ov.vllm_tp_comm_gib} GiB"
    ctx_b = int(processes * ov.cuda_context_gib * GIB_BYTES)
    kw = {"role": Role.RUNTIME, "torch_allocated": False, "process": Process.NONE}
    return [
        Component(
            name=Comp.CUDA_CONTEXT, bytes=ctx_b, formula=f"{processes} process(es) x {ov.cuda_context_gib} GiB", **kw
        ),
        Component(name=Comp.NCCL_BUFFERS, bytes=nccl, formula=f, **kw),
    ]


def _largest_tensor_bytes(ctx: Context) -> tuple[int, str]:
    lt = ctx.actor.arch.largest_tensor_params()
    mb = 2 if ctx.r.actor.is_megatron or ctx.s.actor.fsdp_config.model_dtype != "fp32" else 4
    return lt * mb, f"largest parameter {lt:,} x {mb} B (actor parameter dtype)"


def _sync_buffers(ctx: Context, mode: str, side: str) -> list[Component]:
    """The weight-sync buffer on one GPU of ``side`` (module docstring)."""
    lt_bytes, lt_f = _largest_tensor_bytes(ctx)
    if mode == "fully_async":
        bucket = max(CHECKPOINT_ENGINE_BUFFER_MIB * MIB_BYTES, lt_bytes)
        copies = 2 if side == "trainer" else 1
        f = f"checkpoint engine: {copies} x max({CHECKPOINT_ENGINE_BUFFER_MIB} MiB, {lt_f})"
        return [Component(name=Comp.SYNC_BUCKET, role=Role.SYNC, bytes=copies * bucket, formula=f)]
    f = f"per-tensor NCCL broadcast buffer: {lt_f}"
    proc = Process.ROLLOUT if side == "rollout" else Process.TRAINER
    return [Component(name=Comp.SYNC_FULL_TENSOR, role=Role.SYNC, bytes=lt_bytes, formula=f, process=proc)]


def rollout_budget(ctx: Context) -> EngineBudget:
    """The engine's budget on a GPU it has alone (SGLang sizes from free memory: only the runtime is there)."""
    r = ctx.r
    ov = ctx.s.overheads
    runtime = int(ov.cuda_context_gib * GIB_BYTES + ov.trainer_nccl_gib * GIB_BYTES)
    return engine_budget(
        r.actor_arch,
        r.rollout,
        r.gpu.usable_memory_bytes,
        ov,
        r.actor_arch.total_params(),
        trainer_resident_bytes=runtime,
        graphs_in_budget=r.behaviour.vllm_cudagraph_in_budget,
    )


def _engine_only(pm: PhaseMemory) -> list[Component]:
    return [c for c in pm.components if c.process == Process.ROLLOUT and c.role is not Role.SYNC]


def rollout_pool(plan: PlacementPlan) -> PoolMemory:
    base = build_context(resolve(plan.rollout.scenario))
    ctx = replace(base, rollout=rollout_budget(base))
    engine = _engine_only(phase_memory(ctx, Phase.ROLLOUT, worst=False))
    runtime = _runtime(ctx, 1, "rollout engine + weight-sync group", ctx.r.rollout.tp > 1)
    gen = PhaseMemory(name=Phase.ROLLOUT, components=tuple(c for c in engine + runtime if c.bytes > 0))
    sync = engine + _sync_buffers(ctx, plan.mode, "rollout") + runtime
    phases = [gen, PhaseMemory(name=Phase.WEIGHT_SYNC, components=tuple(c for c in sync if c.bytes > 0))]
    usable = ctx.gpu.usable_memory_bytes
    free = usable - sum(c.bytes for c in runtime)
    need = int(usable * ctx.r.rollout.gpu_memory_utilization)
    enough = ctx.r.rollout.engine == "sglang" or free >= need
    holds = ctx.rollout.kv_tokens >= ctx.r.rollout.max_model_len
    note = (
        f"free at start {free / GIB_BYTES:.1f} GiB vs util x total {need / GIB_BYTES:.1f} GiB; "
        f"KV {ctx.rollout.kv_tokens:,} tokens vs max_model_len {ctx.r.rollout.max_model_len:,}"
    )
    return PoolMemory("rollout", plan.rollout.num_gpus, phases, phases, enough and holds, note, ctx, free, need)


def _trainer_phase(ctx: Context, plan: PlacementPlan, phase: Phase, worst: bool) -> PhaseMemory:
    pm = phase_memory(ctx, phase, worst)
    keep = [
        c
        for c in pm.components
        if c.process != Process.ROLLOUT and c.name not in _RUNTIME and c.name != Comp.SYNC_BUCKET
    ]
    if phase is Phase.WEIGHT_SYNC:
        keep += _sync_buffers(ctx, plan.mode, "trainer")
    procs = ctx.r.num_processes - 1  # no rollout process on the trainer's GPUs
    keep += _runtime(ctx, procs, "trainer + weight-sync group", False)
    return PhaseMemory(name=phase, components=tuple(c for c in keep if c.bytes > 0))


def trainer_phases(plan: PlacementPlan) -> list[Phase]:
    ctx_phases = resolve(plan.trainer.scenario).phases
    skip = {Phase.ROLLOUT} | (set() if plan.old_log_prob_on_trainer else {Phase.OLD_LOG_PROB})
    return [p for p in ctx_phases if p not in skip]


def trainer_pool(plan: PlacementPlan) -> PoolMemory:
    ctx = build_context(resolve(plan.trainer.scenario))
    phases = trainer_phases(plan)
    expected = [_trainer_phase(ctx, plan, p, False) for p in phases]
    worst = [_trainer_phase(ctx, plan, p, True) for p in phases]
    return PoolMemory("trainer", plan.trainer.num_gpus, expected, worst, True, "", ctx)


__all__ = ["PoolMemory", "rollout_budget", "rollout_pool", "trainer_phases", "trainer_pool"]
