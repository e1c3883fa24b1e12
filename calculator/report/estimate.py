"""``estimate(scenario) -> Report``: memory per phase, peak, rollout capacity, step time and warnings."""

from __future__ import annotations

from calculator.inputs.presets import get_gpu
from calculator.inputs.scenario import Scenario
from calculator.memory import phases as memory
from calculator.memory.engine import BLOCK_SIZE_TOKENS
from calculator.report.models import (
    HardwareInfo,
    ModelInfo,
    PeakOut,
    PhaseMemory,
    PhaseOut,
    Report,
    RolloutOut,
)
from calculator.report.warnings import collect_warnings
from calculator.resolve import batching
from calculator.resolve.architectures import model_name, resolve_architectures
from calculator.timing.step import step_time
from calculator.units import GIB_BYTES, ceil_div
from calculator.verl.checks import check_config


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


def build_context(s: Scenario) -> memory.Context:
    actor, critic, reward = resolve_architectures(s)
    return memory.build_context(s, get_gpu(s.hardware.gpu), actor, critic, reward)


def estimate(scenario: Scenario, *, with_time: bool = True, extra_warnings: list[str] | None = None) -> Report:
    """Memory per phase, peak, rollout capacity, step time and warnings for one scenario."""
    s = scenario
    ctx = build_context(s)
    gpu = ctx.gpu
    arch = ctx.actor.arch
    expected = memory.all_phases(ctx, worst=False)
    worst = memory.all_phases(ctx, worst=True)
    usable = gpu.usable_memory_bytes
    peak = max(expected, key=lambda p: p.total_bytes)
    wpeak = max(worst, key=lambda p: p.total_bytes)
    trainer_peak = max(p.trainer_allocated_bytes for p in expected)

    rb = ctx.rollout
    ln = batching.lengths(s, worst=False)
    lw = batching.lengths(s, worst=True)
    blocks = rb.num_blocks

    def concurrency(seq_len: int) -> int:
        per_seq_blocks = ceil_div(max(seq_len, 1), BLOCK_SIZE_TOKENS)
        return min(s.rollout.max_num_seqs, blocks // per_seq_blocks)

    startup_free = memory.startup_free_bytes(ctx)
    required = int(usable * s.rollout.gpu_memory_utilization)
    starts = memory.engine_starts(ctx)
    rollout = RolloutOut(
        engine=s.rollout.name,
        num_replicas=batching.rollout_replicas(s),
        kv_cache_gib_per_gpu=max(0, rb.kv_cache_bytes) / GIB_BYTES,
        kv_cache_tokens_per_replica=rb.kv_tokens,
        max_concurrent_sequences_per_replica=concurrency(ln.sequence),
        max_concurrent_sequences_per_replica_at_max_len=concurrency(lw.sequence),
        sequences_per_replica=batching.sequences_per_replica(s),
        budget_gib_per_gpu=rb.budget_bytes / GIB_BYTES,
        weights_gib_per_gpu=rb.weights_bytes / GIB_BYTES,
        activation_gib_per_gpu=rb.activation_bytes / GIB_BYTES,
        non_torch_gib_per_gpu=rb.non_torch_bytes / GIB_BYTES,
        cuda_graphs_gib_per_gpu=rb.cuda_graph_bytes / GIB_BYTES,
        startup_free_gib=startup_free / GIB_BYTES,
        startup_required_gib=required / GIB_BYTES,
        starts=starts,
        formulas=rb.formulas,
    )
    phases_out = [_phase_out(p) for p in expected]
    peak_out = PeakOut(
        phase=peak.name,
        gib_per_gpu=peak.total_bytes / GIB_BYTES,
        fits=peak.total_bytes <= usable and starts,
        headroom_gib=(usable - peak.total_bytes) / GIB_BYTES,
        worst_case_gib_per_gpu=wpeak.total_bytes / GIB_BYTES,
        worst_case_phase=wpeak.name,
        worst_case_fits=wpeak.total_bytes <= usable and starts,
        trainer_peak_allocated_gib=trainer_peak / GIB_BYTES,
        usable_memory_gib=gpu.usable_memory_gib,
    )
    time = step_time(s, ctx) if with_time else None
    warnings = list(extra_warnings or []) + collect_warnings(s, ctx, expected, worst, rollout, peak_out)
    warnings += [f"verl: {p.message}" for p in check_config(s)]
    return Report(
        model=ModelInfo(
            name=model_name(s),
            total_params=arch.total_params(),
            active_params=arch.active_params(),
            kv_cache_bytes_per_token=arch.kv_cache_bytes_per_token(2 if s.rollout.kv_cache_dtype == "auto" else 1),
        ),
        hardware=HardwareInfo(
            gpu=gpu.id,
            usable_memory_gib=gpu.usable_memory_gib,
            num_gpus=s.hardware.num_gpus,
            gpus_per_node=s.hardware.gpus_per_node,
            gpu_name=gpu.name,
            num_nodes=s.hardware.num_nodes,
        ),
        phases=phases_out,
        peak=peak_out,
        rollout=rollout,
        time=time,
        warnings=warnings,
        roles=[
            r
            for r in (
                "actor",
                "rollout",
                "ref" if ctx.ref_separate else "",
                "critic" if ctx.critic else "",
                "reward" if ctx.reward else "",
            )
            if r
        ],
        worst_case_phases=[_phase_out(p) for p in worst],
        verl_version=s.verl_version,
    )
