"""``estimate(scenario) -> Report``: memory per phase, peak, rollout capacity, step time and warnings."""

from __future__ import annotations

from dataclasses import replace

from calculator.inputs.scenario import Scenario
from calculator.memo import last_by_identity
from calculator.memory import phases as memory
from calculator.memory.context import Context
from calculator.memory.context import build_context as memory_context
from calculator.memory.engine import replica_concurrent_sequences
from calculator.memory.host import HostMemory, host_memory
from calculator.names import Phase, Role
from calculator.report.models import (
    HardwareInfo,
    HostOut,
    ModelInfo,
    PeakOut,
    PhaseMemory,
    PhaseOut,
    Report,
    RolloutOut,
    TimeOut,
)
from calculator.report.pools import SplitParts, combined_peak, pool_warnings, split_parts
from calculator.report.verdict import Verdict, split_verdict, verdict
from calculator.report.warnings import collect_warnings
from calculator.resolve.architectures import model_name
from calculator.resolve.resolved import Source, resolve
from calculator.timing.step import step_time
from calculator.units import GIB_BYTES
from calculator.verl.checks import check_config
from calculator.verl.checks.problem import ConfigProblem


def _phase_out(p: PhaseMemory) -> PhaseOut:
    comps: dict[str, float] = {}
    for c in p.components:
        comps[c.name] = comps.get(c.name, 0.0) + c.bytes / GIB_BYTES
    return PhaseOut(
        name=p.name,
        total_gib=p.total_bytes / GIB_BYTES,
        components=comps,
        total_bytes=p.total_bytes,
        trainer_allocated_gib=p.trainer_allocated_bytes / GIB_BYTES,
        details=list(p.components),
    )


@last_by_identity
def build_context(s: Scenario) -> Context:
    """The memory model's context of ``s``: the scenario resolved once, with role sizes and engine budgets
    (remembered for the last scenario object: the planner tests a candidate's KV cache, then estimates it)."""
    return memory_context(resolve(s))


def _concurrency(ctx: Context, seq_len: int) -> int:
    return replica_concurrent_sequences(ctx.rollout, ctx.r.rollout.max_num_seqs, seq_len)


def rollout_out(ctx: Context) -> RolloutOut:
    r, rb = ctx.r, ctx.rollout
    return RolloutOut(
        engine=r.rollout.engine,
        num_replicas=r.num_replicas,
        kv_cache_gib_per_gpu=max(0, rb.kv_cache_bytes) / GIB_BYTES,
        kv_cache_tokens_per_replica=rb.kv_tokens_per_replica,
        max_concurrent_sequences_per_replica=_concurrency(ctx, r.lengths.sequence),
        max_concurrent_sequences_per_replica_at_max_len=_concurrency(ctx, r.worst_lengths.sequence),
        sequences_per_replica=r.sequences_per_replica,
        budget_gib_per_gpu=rb.budget_bytes / GIB_BYTES,
        weights_gib_per_gpu=rb.weights_bytes / GIB_BYTES,
        activation_gib_per_gpu=rb.activation_bytes / GIB_BYTES,
        non_torch_gib_per_gpu=rb.non_torch_bytes / GIB_BYTES,
        cuda_graphs_gib_per_gpu=rb.cuda_graph_bytes / GIB_BYTES,
        startup_free_gib=memory.startup_free_bytes(ctx) / GIB_BYTES,
        startup_required_gib=memory.startup_required_bytes(ctx) / GIB_BYTES,
        starts=memory.engine_starts(ctx),
        max_model_len=r.rollout.max_model_len,
        engines_per_replica=rb.data_parallel,
        kv_cache_tokens_per_engine=rb.kv_tokens,
        formulas=rb.formulas,
    )


def host_out(host: HostMemory) -> HostOut:
    return HostOut(
        ram_gib_per_node=host.ram_bytes / GIB_BYTES,
        usable_ram_gib_per_node=host.usable_bytes / GIB_BYTES,
        fits=host.fits,
        components={k: v / GIB_BYTES for k, v in host.components.items()},
        total_gib_per_node=host.total_bytes / GIB_BYTES,
        formulas=host.formulas,
    )


def peak_out(ctx: Context, expected: list[PhaseMemory], worst: list[PhaseMemory], v: Verdict) -> PeakOut:
    """The peak phases and the verdict: fits exactly when no criterion of ``calculator.report.verdict`` fails."""
    usable = ctx.gpu.usable_memory_bytes
    peak = max(expected, key=lambda p: p.total_bytes)
    wpeak = max(worst, key=lambda p: p.total_bytes)
    return PeakOut(
        phase=peak.name,
        gib_per_gpu=peak.total_bytes / GIB_BYTES,
        fits=not v.reasons,
        headroom_gib=(usable - peak.total_bytes) / GIB_BYTES,
        worst_case_gib_per_gpu=wpeak.total_bytes / GIB_BYTES,
        worst_case_phase=wpeak.name,
        worst_case_fits=not v.worst_case_reasons,
        trainer_peak_allocated_gib=max(p.trainer_allocated_bytes for p in expected) / GIB_BYTES,
        usable_memory_gib=ctx.gpu.usable_memory_gib,
        reasons=v.reasons,
        worst_case_reasons=v.worst_case_reasons,
    )


def no_step(t: TimeOut, reason: str | None) -> TimeOut:
    """``t``, or no time (``step_s`` and the rollout entry null, ``reason`` set) when the rollout engine cannot
    start: a step that cannot run has no duration (DESIGN.md 6.5)."""
    if reason is None:
        return t
    phases_s: dict[str, float | None] = dict(t.phases_s)
    phases_s[Phase.ROLLOUT] = None
    terms = {p: v for p, v in t.terms_s.items() if p != Phase.ROLLOUT}
    details = {**t.details, Phase.ROLLOUT: reason}
    return t.model_copy(
        update=dict(
            step_s=None,
            phases_s=phases_s,
            tokens_per_s=0.0,
            tokens_per_s_per_gpu=0.0,
            update_mfu=t.update_mfu,
            details=details,
            terms_s=terms,
            reason=reason,
        )
    )


def time_out(ctx: Context, reason: str | None) -> TimeOut:
    """Step time of a colocated run (``no_step`` when the engine cannot start)."""
    return no_step(step_time(ctx), reason)


def split_time(t: TimeOut | None, reason: str | None) -> TimeOut | None:
    """Step time of a split run (``calculator.timing.pools``; ``no_step`` when its engine cannot start)."""
    return None if t is None else no_step(t, reason)


def _model_info(ctx: Context) -> ModelInfo:
    arch = ctx.actor.arch
    return ModelInfo(
        name=model_name(ctx.s),
        total_params=arch.total_params(),
        active_params=arch.active_params(),
        kv_cache_bytes_per_token=arch.kv_cache_bytes_per_token(ctx.r.rollout.kv_dtype_bytes),
    )


def _hardware_info(ctx: Context) -> HardwareInfo:
    hw, gpu = ctx.s.hardware, ctx.gpu
    return HardwareInfo(
        gpu=gpu.id,
        usable_memory_gib=gpu.usable_memory_gib,
        num_gpus=hw.num_gpus,
        gpus_per_node=hw.gpus_per_node,
        gpu_name=gpu.name,
        num_nodes=hw.num_nodes,
    )


def _roles(ctx: Context) -> list[str]:
    r = ctx.r
    present = {Role.REF: r.has_separate_ref, Role.CRITIC: r.has_critic, Role.REWARD: r.has_reward_model}
    return [Role.ACTOR, Role.ROLLOUT] + [role for role, on in present.items() if on]


def _split_report(ctx: Context, split: SplitParts, warnings: list[str]) -> Report:
    """A split placement's report (``calculator.report.pools``): pools, overlapped time, the engine on its pool.
    The colocated warning rules do not apply (they read one shared GPU); the pools' verdicts
    (``calculator.report.verdict.split_verdict``), verl's checks and the assumed values do. ``host`` is the
    fuller of the two pools' nodes; each pool carries its own."""
    roll_ctx = replace(split.rollout.ctx, startup_trainer_bytes=0)
    rollout = rollout_out(roll_ctx).model_copy(
        update={
            "starts": split.rollout.starts,
            "startup_free_gib": split.rollout.startup_free_bytes / GIB_BYTES,
            "startup_required_gib": split.rollout.startup_required_bytes / GIB_BYTES,
        }
    )
    hosts = {"rollout": host_memory(roll_ctx, "rollout"), "trainer": host_memory(split.trainer.ctx, "trainer")}
    checks = check_config(ctx.r)
    pm = [(p.name, p.expected, p.worst) for p in (split.rollout, split.trainer)]
    v = split_verdict(pm, roll_ctx, rollout, checks, list(hosts.values()))
    rollout = rollout.model_copy(update={"start_reasons": v.start_reasons})
    pools = [p.model_copy(update={"host": host_out(hosts[p.name])}) for p in split.pools]
    peak = combined_peak(pools).model_copy(
        update={
            "fits": not v.reasons,
            "worst_case_fits": not v.worst_case_reasons,
            "reasons": v.reasons,
            "worst_case_reasons": v.worst_case_reasons,
        }
    )
    warnings += pool_warnings(split) + [f"verl: {p.message}" for p in checks]
    warnings += [f"estimated with {d.key} = {d.value}: {d.note}" for d in ctx.r.decisions if d.source is Source.ASSUMED]
    fuller = max(hosts.values(), key=lambda h: h.total_bytes / max(1, h.usable_bytes))
    return Report(
        model=_model_info(ctx),
        hardware=_hardware_info(ctx),
        phases=[_phase_out(p) for p in split.phases],
        peak=peak,
        rollout=rollout,
        time=split_time(split.time, v.time_reason),
        host=host_out(fuller),
        warnings=warnings,
        roles=_roles(ctx),
        worst_case_phases=[_phase_out(p) for p in split.worst],
        verl_version=ctx.s.verl_version,
        checks=checks,
        decisions=[d.text() for d in ctx.r.decisions] + [f"placement: {split.plan.note}"],
        pools=pools,
        placement=split.placement,
    )


def _warnings(
    ctx: Context,
    expected: list[PhaseMemory],
    worst: list[PhaseMemory],
    rollout: RolloutOut,
    peak: PeakOut,
    checks: list[ConfigProblem],
    extra: list[str] | None,
) -> list[str]:
    """The report's warning lines, verl's config checks as 'verl: ...' lines and the values rlplan assumed."""
    warnings = list(extra or []) + collect_warnings(ctx, expected, worst, rollout, peak)
    warnings += [f"verl: {p.message}" for p in checks]
    warnings += [f"estimated with {d.key} = {d.value}: {d.note}" for d in ctx.r.decisions if d.source is Source.ASSUMED]
    return warnings


def estimate(
    scenario: Scenario,
    *,
    with_time: bool = True,
    extra_warnings: list[str] | None = None,
    with_warnings: bool = True,
) -> Report:
    """Memory per phase, peak, rollout capacity, step time and warnings for one scenario.

    ``with_warnings=False`` leaves ``warnings`` and ``decisions`` empty (every number and the verdict are the
    same; verl's checks still run, they are a fit criterion): the planner estimates hundreds of candidates and
    reads neither."""
    ctx = build_context(scenario)
    split = split_parts(scenario, _phase_out, with_time)
    if split is not None:
        return _split_report(ctx, split, list(extra_warnings or []))
    expected, worst = memory.expected_and_worst(ctx)
    rollout = rollout_out(ctx)
    host = host_memory(ctx)
    checks = check_config(ctx.r)
    v = verdict(ctx, expected, worst, rollout, checks, host)
    rollout = rollout.model_copy(update={"start_reasons": v.start_reasons})
    peak = peak_out(ctx, expected, worst, v)
    warnings = _warnings(ctx, expected, worst, rollout, peak, checks, extra_warnings) if with_warnings else []
    phases = [_phase_out(p) for p in expected]
    # A phase whose worst case cannot differ is the same record in both walks (``expected_and_worst``): one PhaseOut.
    same = {id(p): out for p, out in zip(expected, phases, strict=True)}
    return Report(
        model=_model_info(ctx),
        hardware=_hardware_info(ctx),
        phases=phases,
        peak=peak,
        rollout=rollout,
        time=time_out(ctx, v.time_reason) if with_time else None,
        host=host_out(host),
        warnings=warnings,
        roles=_roles(ctx),
        worst_case_phases=[same.get(id(p)) or _phase_out(p) for p in worst],
        verl_version=scenario.verl_version,
        checks=checks,
        decisions=[d.text() for d in ctx.r.decisions] if with_warnings else [],
    )
