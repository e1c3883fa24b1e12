"""Host (CPU) RAM per node (DESIGN.md 4.9): what the offload flags, the forced reference offload, Megatron's
CPU optimizer and the rollout engine's sleep put in host memory, against the node's RAM.

Per GPU (times the GPUs of a node):
- a trained role's offloaded state (verl 0.9.1 ``workers/engine/*`` ``to("cpu")``): ``param_offload`` keeps its
  params on the host (FSDP: the master shard; Megatron: the bf16 params in a pinned ``cpu_data`` buffer,
  ``utils/megatron_utils.py`` ``offload_megatron_model_to_cpu``; the grad buffer is freed, not copied);
  ``optimizer_offload`` its GPU optimizer state; FSDP2 ``offload_policy`` params, grads and optimizer;
- Megatron's CPU optimizer fraction (pinned fp32 master, pinned grad copy, CPU Adam moments:
  ``calculator.memory.training.megatron_optimizer_bytes``), whatever the offload flags;
- the reference model: FSDP forward-only engines are forced to CPU offload (its sharded master, ``model_dtype``);
  a Megatron ref with ``param_offload`` keeps its bf16 params there;
- the rollout engine's weight backup while asleep at level 1 (vLLM ``CuMemAllocator`` backs the "weights" pool up
  to pinned CPU memory: LoRA adapters or ``layered_summon``, verl ``vllm_async_server.py`` ``_resolve_sleep_level``)
  and SGLang's weight backup (``release_memory_occupation``);
- every GPU process's baseline RSS (``overheads.host_process_gib``, an assumption).
Per node: ``overheads.host_node_baseline_gib`` (OS, raylet, driver, dataloader; an assumption).
Usable: node RAM x ``overheads.host_usable_fraction`` (Ray's memory monitor kills workers above 95 %).
Left out: checkpoint saving (a full state copy on the host), Ray's object store (/dev/shm, grows with the batch),
the model load at init (rank 0 materialises the whole HF model on the host once), the pinned host allocator's
rounding of each block up to a power of two.
"""

from __future__ import annotations

from dataclasses import dataclass

from calculator.inputs.hardware import host_ram_gib_per_node
from calculator.memory.context import Context
from calculator.memory.training import TrainingState
from calculator.resolve.roles import TrainerPlan
from calculator.units import GIB_BYTES, format_gib


@dataclass(frozen=True)
class HostMemory:
    """Host RAM of one node: named components (bytes per node) against the node's RAM."""

    components: dict[str, int]
    formulas: dict[str, str]
    ram_bytes: int
    usable_bytes: int

    @property
    def total_bytes(self) -> int:
        return sum(self.components.values())

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.usable_bytes


def _offloaded(st: TrainingState, plan: TrainerPlan) -> tuple[int, str]:
    """Per-GPU bytes a trained role keeps on the host while idle (its compute loads them back)."""
    b, parts = 0, []
    if plan.cpu_offload_policy:
        b = st.params.bytes + st.grads.bytes + st.optimizer.bytes
        parts.append("FSDP2 offload_policy: params + grads + optimizer")
    else:
        if plan.param_offload:
            b += st.params.bytes
            parts.append("param_offload: params")
        if plan.optimizer_offload:
            b += st.optimizer.bytes
            parts.append("optimizer_offload: optimizer state")
    return b, " + ".join(parts)


def _per_gpu(ctx: Context, pool: str | None) -> list[tuple[str, int, str]]:
    """Per-GPU host components of a colocated node (``pool`` None) or of one pool's node of a split placement:
    the trainer pool holds the trained roles and the ref but no engine; the rollout pool holds the engine,
    awake for the whole run (``calculator.memory.pools``), so it backs nothing up."""
    r = ctx.r
    if pool == "rollout":
        b = int(ctx.s.overheads.host_process_gib * GIB_BYTES)
        return [("process_baseline", b, f"1 process (the engine) x {ctx.s.overheads.host_process_gib} GiB RSS")]
    out: list[tuple[str, int, str]] = []
    roles = [("actor", ctx.actor_state, r.actor)]
    if ctx.critic_state is not None and r.critic is not None:
        roles.append(("critic", ctx.critic_state, r.critic))
    for name, st, plan in roles:
        b, f = _offloaded(st, plan)
        out.append((f"{name}_offloaded", b, f))
        out.append((f"{name}_cpu_optimizer", st.host_optimizer.bytes, st.host_optimizer.formula))
    if ctx.ref_separate and r.ref is not None:
        if r.ref.is_megatron:
            b = 0 if r.ref_on_gpu else ctx.ref_state.params.bytes if ctx.ref_state else 0
            f = "Megatron ref with param_offload: bf16 params"
        else:
            mb = 4 if ctx.s.ref.fsdp_config.model_dtype == "fp32" else 2
            n = ctx.actor_shard_size if not r.actor.is_megatron else ctx.s.hardware.num_gpus
            b = ctx.actor.num_params * mb // max(1, n)
            f = f"FSDP ref forced to CPU offload: {ctx.actor.num_params:,} params x {mb} B / {n} GPUs"
        out.append(("ref_offloaded", b, f))
    procs = r.num_processes
    if pool is None:
        out.append(_engine_backup(ctx))
    else:
        procs -= 1  # no rollout process on the trainer pool's GPUs (calculator.memory.pools._trainer_phase)
    b = int(procs * ctx.s.overheads.host_process_gib * GIB_BYTES)
    out.append(("process_baseline", b, f"{procs} processes x {ctx.s.overheads.host_process_gib} GiB RSS"))
    return out


def _engine_backup(ctx: Context) -> tuple[str, int, str]:
    s = ctx.s
    if not s.rollout.free_cache_engine:
        return ("rollout_weight_backup", 0, "engine never sleeps")
    w = ctx.rollout.weights_bytes
    if ctx.r.rollout.engine == "sglang":
        return ("rollout_weight_backup", w, "SGLang asleep: weights backed up to CPU")
    if s.model.lora_rank or s.rollout.layered_summon:
        return ("rollout_weight_backup", w, "vLLM sleep level 1 (LoRA / layered_summon): weights in pinned CPU memory")
    return ("rollout_weight_backup", 0, "vLLM sleep level 2: weights discarded")


def host_memory(ctx: Context, pool: str | None = None) -> HostMemory:
    """Host RAM of one node: colocated (``pool`` None) or of the ``"trainer"`` / ``"rollout"`` pool of a split
    placement, with that pool's context (its hardware is the pool's GPUs)."""
    s = ctx.s
    gpn = min(s.hardware.gpus_per_node, s.hardware.num_gpus)
    comps: dict[str, int] = {}
    formulas: dict[str, str] = {}
    for name, b, f in _per_gpu(ctx, pool):
        if b > 0:
            comps[name] = b * gpn
            formulas[name] = f"{gpn} GPUs x {format_gib(b)}: {f}"
    base = int(s.overheads.host_node_baseline_gib * GIB_BYTES)
    comps["node_baseline"] = base
    formulas["node_baseline"] = f"OS, raylet, driver, dataloader: {s.overheads.host_node_baseline_gib} GiB"
    ram = int(host_ram_gib_per_node(s.hardware.gpu, s.hardware.host_ram_gib_per_node) * GIB_BYTES)
    return HostMemory(comps, formulas, ram, int(ram * s.overheads.host_usable_fraction))


def host_reason(host: HostMemory) -> str | None:
    """The fit verdict's line for host RAM, or None when it fits."""
    if host.fits:
        return None
    return (
        f"host RAM: {format_gib(host.total_bytes)} per node needed, {format_gib(host.usable_bytes)} usable "
        f"({format_gib(host.ram_bytes)} x Ray's memory threshold): offload less, or use nodes with more RAM "
        "(hardware.host_ram_gib_per_node)"
    )
