"""Why a scenario does not fit: ``peak.reasons`` (DESIGN.md 6.5), computed once here and read by every view.

A run **fits** (``peak.fits``) when all of these hold; each failed one is one line of ``peak.reasons`` with its
numbers and a fix:

1. the expected peak (mean lengths) is at most the usable memory;
2. vLLM starts: the memory free when it starts is at least ``gpu_memory_utilization x total``
   (``vllm/v1/worker/utils.py`` ``request_memory``; SGLang has no such check);
3. the engine has memory for a KV cache at all (budget - weights - activations - non-torch - CUDA graphs > 0);
4. the KV cache holds one ``max_model_len`` sequence (vLLM: ``vllm/v1/core/kv_cache_utils.py``
   ``check_enough_kv_cache_memory``; the memory model applies the same rule to SGLang's pool);
5. verl accepts the config: no check of ``calculator.verl.checks`` with severity ``error`` (verl raises
   before or during the first step; each message cites the verl 0.9.1 function that raises), except a missing
   micro-batch the estimate assumed (``calculator.verl.checks.problem.ASSUMED_RULES``: a warning with the value);
6. host RAM per node fits (``calculator.memory.host``: what the node's processes hold against the node's RAM x
   Ray's memory-monitor threshold; Ray kills a worker above it).

``peak.worst_case_reasons`` does the same for ``worst_case_fits`` (every sequence at max length): criterion 1
with the worst-case peak, then 2-6. Left out: the planner's safety margin (the planner
and the advisor apply it, ``calculator.planning.fit``).
"""

from __future__ import annotations

from dataclasses import dataclass

from calculator.memory.context import Context
from calculator.memory.engine import EngineBudget
from calculator.memory.host import HostMemory, host_reason
from calculator.memory.residency import RESIDENCY, Use
from calculator.names import Phase, Strategy
from calculator.report.models import PhaseMemory, RolloutOut
from calculator.resolve.resolved import Resolved
from calculator.resolve.roles import TrainerPlan
from calculator.units import GIB_BYTES
from calculator.verl.checks.problem import ConfigProblem, rejections

# The plain fix for a phase over the limit, by its largest component (name suffix or name). A trained role's
# params / grads / optimizer get the fix of that role's engine (``_state_fix``).
_FIX_BY_COMPONENT: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("_activations",),
        "use smaller micro-batches / token budgets (ppo_micro_batch_size_per_gpu, ppo_max_token_len_per_gpu), "
        "gradient checkpointing or Ulysses sequence parallelism",
    ),
    (("_logits", "_entropy"), "set model.use_fused_kernels=true or use smaller micro-batches"),
    (  # the reward model's own vLLM engine (before "kv_cache", which its name also ends with)
        ("reward_kv_cache", "reward_params", "reward_activations"),
        "lower reward_model.rollout.gpu_memory_utilization or raise reward_model.rollout.tensor_model_parallel_size",
    ),
    (
        ("rollout_weights", "kv_cache", "rollout_activations", "rollout_non_torch", "cuda_graphs"),
        "lower rollout.gpu_memory_utilization or raise rollout.tensor_model_parallel_size",
    ),
)
_FIX_DEFAULT = "use more GPUs (the advisor ranks the changes)"
_SECTIONS = {"actor": ("actor.fsdp_config", "actor.megatron"), "critic": ("critic.fsdp", "critic.megatron")}


def _state_fix(plan: TrainerPlan, kind: str, phase: str) -> str:
    """The fix for a trained role's ``params`` / ``grads`` / ``optimizer`` over the limit, in that role's own
    engine keys, skipping what is already on. ``*_offload`` moves state to CPU only while the role is idle: verl
    loads params back for the role's passes and the optimizer for its update (``calculator.memory.phases.role_state``),
    so there only a CPU optimizer step (Megatron ``optimizer_cpu_offload``; FSDP2 ``offload_policy``, which keeps
    params, grads and optimizer on CPU throughout) or more GPUs lowers it."""
    role = str(plan.role)
    section = _SECTIONS[role][1 if plan.is_megatron else 0]
    more = "more GPUs or more model parallelism (TP / PP / EP)" if plan.is_megatron else "more GPUs"
    row = RESIDENCY[Phase(phase)]
    use = row.actor if role == "actor" else row.critic
    if kind == "optimizer":
        needed, flag = use is Use.UPDATE, "optimizer_offload"
        already = plan.optimizer_offload
    else:
        needed, flag = use is not Use.IDLE, "param_offload"
        already = plan.param_offload
    if not needed and not already:
        return f"offload the {kind} while the {role} is idle ({section}.{flag}=true) or use {more}"
    if (
        plan.is_megatron
        and kind == "optimizer"
        and not (plan.megatron.optimizer_cpu_offload and plan.megatron.optimizer_offload_fraction >= 1)
    ):
        return f"step the optimizer on the CPU ({section}.optimizer_cpu_offload=true) or use {more}"
    if plan.strategy is Strategy.FSDP2 and not plan.cpu_offload_policy:
        return f"keep the {role}'s params, grads and optimizer on the CPU ({section}.offload_policy=true) or use {more}"
    return f"use {more}"


def _megatron_activation_fix(plan: TrainerPlan) -> str:
    """A Megatron role's activations: its own levers (Megatron-core activation recompute, TP / CP split the tokens),
    not FSDP's gradient checkpointing and Ulysses SP, which verl's Megatron config does not have."""
    section = _SECTIONS[str(plan.role)][1]
    recompute = (
        f"activation recompute ({section}.recompute_granularity=full, recompute_method=uniform), "
        if plan.megatron.recompute_granularity != "full"
        else ""
    )
    return (
        "use smaller micro-batches / token budgets (ppo_micro_batch_size_per_gpu, ppo_max_token_len_per_gpu), "
        f"{recompute}or more tensor / context parallelism ({section}.tensor_model_parallel_size, context_parallel_size)"
    )


def _gib(b: float) -> str:
    return f"{b / GIB_BYTES:.2f} GiB"


def memory_fix(phase: PhaseMemory, r: Resolved | None = None) -> str:
    """The plain instruction for a phase over the limit, chosen by its largest component (for a trained role's
    state, in that role's engine keys: ``_state_fix``, with ``r`` the resolved plan)."""
    if not phase.components:
        return _FIX_DEFAULT
    top = max(phase.components, key=lambda c: c.bytes).name
    role, _, kind = top.partition("_")
    plan = {"actor": r.actor, "critic": r.critic}.get(role) if r is not None else None
    if plan is not None and kind in ("params", "grads", "optimizer"):
        return _state_fix(plan, kind, str(phase.name))
    if plan is not None and kind == "activations" and plan.is_megatron:
        return _megatron_activation_fix(plan)
    for names, fix in _FIX_BY_COMPONENT:
        if top.endswith(names):
            return fix
    if top.endswith(("_params", "_grads", "_optimizer")):
        return (
            "shard over more GPUs or offload the role's state while it is idle (*.param_offload / *.optimizer_offload)"
        )
    return _FIX_DEFAULT


def _memory_reason(label: str, phase: PhaseMemory, usable: int, r: Resolved) -> str:
    top = max(phase.components, key=lambda c: c.bytes).name if phase.components else "-"
    return (
        f"{label} {_gib(phase.total_bytes)} per GPU in {phase.name} > usable {_gib(usable)} (over by "
        f"{_gib(phase.total_bytes - usable)}; largest component {top}). Fix: {memory_fix(phase, r)}."
    )


def _startup_reasons(ctx: Context, ro: RolloutOut) -> list[str]:
    """Criteria 2-4: the rollout engine starts and holds one max_model_len sequence."""
    rb, rs = ctx.rollout, ctx.r.rollout
    out: list[str] = []
    if ro.startup_free_gib < 0:
        out.append(
            f"the trainer does not fit before the rollout engine starts: its model shards, CUDA contexts and NCCL "
            f"buffers at start-up exceed the usable {ctx.gpu.usable_memory_gib} GiB by {-ro.startup_free_gib:.2f} GiB "
            f"(torch runs out of memory at init). Fix: {startup_trainer_fix(ctx.r)}."
        )
    elif rs.engine == "vllm" and ro.startup_free_gib < ro.startup_required_gib:
        out.append(
            f"the rollout engine cannot start: {ro.startup_free_gib:.2f} GiB free at startup < "
            f"gpu_memory_utilization {rs.gpu_memory_utilization} x {ctx.gpu.usable_memory_gib} GiB = "
            f"{ro.startup_required_gib:.2f} GiB required (the trainer's model shards are resident). Fix: lower "
            f"rollout.gpu_memory_utilization{startup_offload_fix(ctx.r)}."
        )
    if rb.kv_cache_bytes <= 0:
        out.append(
            f"the rollout engine has no memory for a KV cache: budget {_gib(rb.budget_bytes)} - weights "
            f"{_gib(rb.weights_bytes)} - activations {_gib(rb.activation_bytes)} - non-torch "
            f"{_gib(rb.non_torch_bytes)} - CUDA graphs {_gib(rb.cuda_graph_bytes)} <= 0. Fix: raise "
            "rollout.gpu_memory_utilization or rollout.tensor_model_parallel_size, or use more GPUs."
        )
    elif rb.kv_tokens < rs.max_model_len:
        engine = "vLLM refuses to start" if rs.engine == "vllm" else "SGLang's pool cannot hold one request"
        out.append(
            f"KV cache holds {rb.kv_tokens:,} tokens per {_unit(rb)} < max_model_len {rs.max_model_len:,}: {engine}. "
            f"Fix: set rollout.max_model_len={ctx.r.worst_lengths.sequence} (prompt + response), raise "
            "rollout.gpu_memory_utilization or rollout.tensor_model_parallel_size."
        )
    return out


def startup_offload_fix(r: Resolved) -> str:
    """The second fix of a vLLM start-up refusal: offload the actor's parameters before vLLM starts, in the actor's
    engine keys; nothing when they already are (what is left at start-up is CUDA contexts and NCCL buffers, which
    more GPUs do not shrink)."""
    a = r.actor
    if a.params_offloaded_when_idle:
        return ""
    return f" or set {_SECTIONS['actor'][1 if a.is_megatron else 0]}.param_offload=true"


def startup_trainer_fix(r: Resolved) -> str:
    """The fix when the trainer's start-up state alone exceeds the GPU: offload the actor's parameters (if not yet),
    or shard them further: over more GPUs (FSDP), over more TP / PP ranks (Megatron, whose params and grad buffer
    data parallelism does not shard)."""
    shard = (
        "raise actor.megatron.tensor_model_parallel_size or pipeline_model_parallel_size"
        if r.actor.is_megatron
        else "use more GPUs"
    )
    fix = startup_offload_fix(r).removeprefix(" or ")
    return f"{fix} or {shard}" if fix else shard


def _verl_reasons(checks: list[ConfigProblem]) -> list[str]:
    """Criterion 5: verl's checks that raise (the message carries verl's fix and source)."""
    return [f"verl rejects the config: {p.message}" for p in rejections(checks)]


@dataclass(frozen=True)
class Verdict:
    """Failed criteria at the mean lengths (``reasons``) and at max lengths (``worst_case_reasons``)."""

    reasons: list[str]
    worst_case_reasons: list[str]
    start_reasons: list[str]  # criteria 2-4 only (the rollout engine), also in both lists above
    time_reason: str | None  # why the step cannot run (no step time), None when it can


def _assemble(
    mem: list[str], wmem: list[str], startup: list[str], checks: list[ConfigProblem], hosts: list[HostMemory]
) -> Verdict:
    host_lines = [line for line in (host_reason(h) for h in hosts) if line]
    rest = startup + _verl_reasons(checks) + host_lines
    return Verdict(
        reasons=mem + rest,
        worst_case_reasons=wmem + rest,
        start_reasons=startup,
        time_reason=" ".join(startup) if startup else None,
    )


def _over(label: str, phases: list[PhaseMemory], usable: int, r: Resolved) -> list[str]:
    peak = max(phases, key=lambda p: p.total_bytes)
    return [_memory_reason(label, peak, usable, r)] if peak.total_bytes > usable else []


def verdict(
    ctx: Context,
    expected: list[PhaseMemory],
    worst: list[PhaseMemory],
    rollout: RolloutOut,
    checks: list[ConfigProblem],
    host: HostMemory | None = None,
) -> Verdict:
    """Every failed fit criterion of the module docstring, in that order, with numbers and a fix."""
    usable = ctx.gpu.usable_memory_bytes
    return _assemble(
        _over("peak", expected, usable, ctx.r),
        _over("worst case (every sequence at max length)", worst, usable, ctx.r),
        _startup_reasons(ctx, rollout),
        checks,
        [host] if host is not None else [],
    )


def split_verdict(
    pools: list[tuple[str, list[PhaseMemory], list[PhaseMemory]]],
    rollout_ctx: Context,
    rollout: RolloutOut,
    checks: list[ConfigProblem],
    hosts: list[HostMemory],
) -> Verdict:
    """The same criteria for a split placement (``calculator.report.pools``): criterion 1 for each pool's
    ``(name, expected, worst)`` phases on its own GPUs, 2-4 for the engine on the rollout pool (``rollout``
    carries that pool's start-up numbers), 5 once, 6 for each pool's nodes."""
    usable = rollout_ctx.gpu.usable_memory_bytes
    r = rollout_ctx.r
    mem = [line for name, exp, _ in pools for line in _over(f"{name} pool: peak", exp, usable, r)]
    wmem = [
        line
        for name, _, worst in pools
        for line in _over(f"{name} pool: worst case (every sequence at max length)", worst, usable, r)
    ]
    return _assemble(mem, wmem, _startup_reasons(rollout_ctx, rollout), checks, hosts)


def _unit(rb: EngineBudget) -> str:
    """What the KV check counts: one engine; a replica of several vLLM DP ranks holds several such caches."""
    return "replica" if rb.data_parallel == 1 else f"engine (each of the replica's {rb.data_parallel} DP ranks)"


__all__ = ["Verdict", "memory_fix", "split_verdict", "startup_offload_fix", "startup_trainer_fix", "verdict"]
