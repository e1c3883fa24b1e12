"""The report of a split placement (DESIGN.md 4.10, 6.5 ``pools``): each pool's phases, peak and fit verdict, the
overlapped step time and its timeline.

The report's top-level ``phases`` are the rollout pool's phases (``rollout``, ``weight_sync (rollout pool)``)
followed by the trainer pool's phases (each on its own GPUs, per GPU); ``peak`` is the higher of the two pools' peaks and fits only when both pools
fit; ``rollout`` describes the engine on the rollout pool; ``time.phases_s`` is the trainer's critical path
(``calculator.timing.pools.time_out``). ``pools`` holds each pool on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from calculator.inputs.scenario import Scenario
from calculator.memory.pools import PoolMemory, rollout_pool, trainer_pool
from calculator.names import Phase
from calculator.report.models import PeakOut, PhaseMemory, PlacementOut, PoolOut, SpanOut, TimeOut
from calculator.resolve.placement import PlacementPlan, resolve_placement
from calculator.timing.pools import pool_timing, time_out
from calculator.units import GIB_BYTES


@dataclass(frozen=True)
class SplitParts:
    plan: PlacementPlan
    rollout: PoolMemory
    trainer: PoolMemory
    phases: list[PhaseMemory]
    worst: list[PhaseMemory]
    pools: list[PoolOut]
    placement: PlacementOut | None
    time: TimeOut | None


def _peak(pool: PoolMemory, usable: int, usable_gib: float) -> PeakOut:
    peak = max(pool.expected, key=lambda p: p.total_bytes)
    wpeak = max(pool.worst, key=lambda p: p.total_bytes)
    return PeakOut(
        phase=peak.name,
        gib_per_gpu=peak.total_bytes / GIB_BYTES,
        fits=peak.total_bytes <= usable and pool.starts,
        headroom_gib=(usable - peak.total_bytes) / GIB_BYTES,
        worst_case_gib_per_gpu=wpeak.total_bytes / GIB_BYTES,
        worst_case_phase=wpeak.name,
        worst_case_fits=wpeak.total_bytes <= usable and pool.starts,
        trainer_peak_allocated_gib=max(p.trainer_allocated_bytes for p in pool.expected) / GIB_BYTES,
        usable_memory_gib=usable_gib,
    )


ROLLOUT_POOL_SYNC = "weight_sync (rollout pool)"


def top_level_name(pool: str, phase: str) -> str:
    """A pool's phase as the report's top-level phases name it: only the rollout pool's weight sync is renamed
    (the trainer pool has one too)."""
    return ROLLOUT_POOL_SYNC if pool == "rollout" and phase == Phase.WEIGHT_SYNC else phase


def combined_peak(pools: list[PoolOut]) -> PeakOut:
    """The higher pool's peak; fits only when every pool fits (both verdicts stay in ``pools``)."""
    hi = max(pools, key=lambda p: p.peak.gib_per_gpu)
    whi = max(pools, key=lambda p: p.peak.worst_case_gib_per_gpu)
    return hi.peak.model_copy(
        update={
            "phase": top_level_name(hi.name, hi.peak.phase),
            "fits": all(p.peak.fits for p in pools),
            "worst_case_gib_per_gpu": whi.peak.worst_case_gib_per_gpu,
            "worst_case_phase": top_level_name(whi.name, whi.peak.worst_case_phase),
            "worst_case_fits": all(p.peak.worst_case_fits for p in pools),
            "trainer_peak_allocated_gib": max(p.peak.trainer_peak_allocated_gib for p in pools),
        }
    )


def split_parts(scenario: Scenario, phase_out, with_time: bool) -> SplitParts | None:  # type: ignore[no-untyped-def]
    """Everything a split placement changes in the report; None when colocated. ``phase_out`` turns a
    ``PhaseMemory`` into the report's ``PhaseOut`` (``calculator.report.estimate._phase_out``)."""
    plan = resolve_placement(scenario)
    if plan is None:
        return None
    roll, train = rollout_pool(plan), trainer_pool(plan)
    gpu = train.ctx.gpu
    pools = [
        PoolOut(
            name=pm.name,  # type: ignore[arg-type]
            num_gpus=pm.num_gpus,
            phases=[phase_out(p) for p in pm.expected],
            peak=_peak(pm, gpu.usable_memory_bytes, gpu.usable_memory_gib),
        )
        for pm in (roll, train)
    ]
    gen = [replace(p, name=top_level_name("rollout", p.name)) for p in roll.expected]
    phases = gen + train.expected
    worst = gen + train.worst
    time = placement = None
    if with_time:
        pt = pool_timing(plan, train, roll)
        time = time_out(plan, pt, train)
        placement = PlacementOut(
            mode=plan.mode,
            num_nodes=plan.num_nodes,
            nodes_rule=plan.note,
            rollout_num_gpus=plan.rollout.num_gpus,
            trainer_num_gpus=plan.trainer.num_gpus,
            generation_s=pt.generation_s,
            training_s=pt.training_s,
            weight_sync_s=pt.sync_s,
            wait_s=pt.wait_s,
            drain_s=pt.drain_s,
            timeline=[SpanOut(pool=s.pool, name=s.name, start_s=s.start_s, end_s=s.end_s) for s in pt.timeline],
        )
    return SplitParts(plan, roll, train, phases, worst, pools, placement, time)


def pool_warnings(parts: SplitParts) -> list[str]:
    """One line per pool that does not fit, with its numbers; the engine's start check on its own pool."""
    out = []
    for pool in parts.pools:
        pk = pool.peak
        if not pk.fits:
            out.append(
                f"{pool.name} pool ({pool.num_gpus} GPUs) does not fit: {pk.phase} needs {pk.gib_per_gpu:.1f} GiB per GPU "
                f"of {pk.usable_memory_gib:.1f} GiB usable"
            )
    if not parts.rollout.starts:
        out.append(f"rollout engine cannot start on its pool: {parts.rollout.start_note}")
    return out


__all__ = ["pool_warnings", "SplitParts", "combined_peak", "split_parts"]
