"""Explain a real OOM (``python -m calculator explain-oom``): the phase, the predicted component whose size matches
the failed allocation, what else the model says was resident, and the advisor's ranked fixes.

Matching: in the phase the stack names, the candidate sizes are the phase's components (GiB per GPU, as
``estimate()`` gives them) and, when the failing frame is a logits function (``entropy_from_logits``,
``logprobs_from_logits``...), the fp32 copy of the logits those functions allocate (DESIGN.md 4.4: the softmax of
``tokens x V`` in fp32 is twice the bf16 logits component). The match is the candidate closest to the allocation
on a log scale. Engine start failures match the rollout engine's figures (``startup_required_gib``, the KV
cache); a Ray host kill matches the node's RAM. Fixes come from :func:`calculator.planning.advisor.advise`; when
the model thinks the scenario fits but the run failed, the advisor is asked for a margin that excludes the
predicted peak, so that it ranks the changes that lower it.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict

from calculator.calibration.compare import host_ram_gib
from calculator.calibration.oom_parse import OomEvent, parse_oom
from calculator.errors import InputError
from calculator.inputs.scenario import Scenario
from calculator.loading import load_scenario
from calculator.planning.advisor import advise
from calculator.planning.fit import DEFAULT_MARGIN
from calculator.report.estimate import estimate
from calculator.report.models import PhaseOut, Report

MAX_FIXES = 8


class Fix(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    rank: int
    lever: str
    title: str
    fits: bool
    peak_gib_per_gpu: float
    added_step_s: float | None
    verl_overrides: list[str]
    phase_gib_after: float | None = None


class OomExplanation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    phase: str
    component: str
    allocation_gib: float | None
    matched_gib: float | None
    fixes: list[Fix]
    event: OomEvent
    resident_gib: dict[str, float]
    predicted_phase_gib: float | None
    usable_memory_gib: float
    summary: str
    advice_status: str
    notes: list[str]


def _candidates(phase: PhaseOut, logits_function: str | None) -> dict[str, float]:
    cands = {k: v for k, v in phase.components.items() if v > 0}
    if logits_function:
        for k, v in phase.components.items():
            if k.endswith("_logits") and v > 0:
                cands[f"{k} (fp32 copy in {logits_function})"] = 2 * v
    return cands


def _closest(cands: dict[str, float], target: float) -> tuple[str, float] | None:
    if not cands or target <= 0:
        return None
    return min(cands.items(), key=lambda kv: abs(math.log(kv[1] / target)))


def _match(report: Report, event: OomEvent) -> tuple[str, float | None, PhaseOut | None]:
    """(component, its predicted GiB, the phase) for the event."""
    ro = report.rollout
    if event.kind == "vllm_startup_free_memory":
        return "rollout_startup_required (gpu_memory_utilization x total)", ro.startup_required_gib, None
    if event.kind in ("vllm_kv_below_max_model_len", "vllm_no_kv_cache", "sglang_no_kv_cache"):
        return "kv_cache", ro.kv_cache_gib_per_gpu, None
    if event.kind == "vllm_wake_up_oom":
        rollout = next((p for p in report.phases if p.name == "rollout"), None)
        engine = (ro.weights_gib_per_gpu + ro.kv_cache_gib_per_gpu) if ro else None
        return "rollout_weights + kv_cache (mapped back at wake_up)", engine, rollout
    if event.kind == "host_oom":
        return "host_ram_per_node", host_ram_gib(report), None
    phase = next((p for p in report.phases if p.name == event.phase), None)
    if phase is None:
        phase = max(report.phases, key=lambda p: p.total_gib)
    hit = _closest(_candidates(phase, event.logits_function), event.allocation_gib or 0.0)
    return (hit[0], hit[1], phase) if hit else ("unknown", None, phase)


def _phase_after(scenario: Scenario, changes: dict[str, Any], phase: str) -> float | None:
    """The failed phase's predicted GiB per GPU once a fix is applied."""
    try:
        report = estimate(load_scenario(scenario, changes))
    except InputError:
        return None
    return next((p.total_gib for p in report.phases if p.name == phase), None)


def _fixes(scenario: Scenario, report: Report, event: OomEvent) -> tuple[list[Fix], str, list[str]]:
    notes: list[str] = []
    if event.kind == "host_oom":
        notes.append(
            "host RAM: the advisor ranks GPU-memory changes; lower host memory by turning off param/optimizer "
            "offload (actor_rollout_ref.actor.fsdp_config.param_offload / optimizer_offload), fewer data-loader "
            "workers, or more RAM per node"
        )
        return [], "host", notes
    advice = advise(scenario)
    if advice.status == "fits":
        usable = report.peak.usable_memory_gib
        margin = min(max(1 - 0.95 * report.peak.gib_per_gpu / usable, DEFAULT_MARGIN), 0.9)
        notes.append(
            f"the model predicts a peak of {report.peak.gib_per_gpu:.1f} GiB of {usable:.1f} usable, but the run "
            f"failed: fixes are ranked for a {margin:.0%} margin, i.e. for lowering that peak"
        )
        advice = advise(scenario, margin=margin)
    before = next((p.total_gib for p in report.phases if p.name == event.phase), None)
    fixes: list[Fix] = []
    for s in advice.suggestions:
        after = _phase_after(scenario, dict(s.native_changes), event.phase) if before is not None else None
        lowers = after is not None and before is not None and after < before - 0.01
        if not (lowers if event.kind == "cuda_oom" and before is not None else s.helps):
            continue
        fixes.append(
            Fix(
                rank=len(fixes) + 1,
                lever=s.lever,
                title=s.title,
                fits=s.fits,
                peak_gib_per_gpu=s.peak_gib_per_gpu,
                added_step_s=s.added_step_s,
                verl_overrides=list(s.verl_overrides),
                phase_gib_after=after,
            )
        )
        if len(fixes) >= MAX_FIXES:
            break
    if event.kind == "cuda_oom" and before is not None:
        notes.append(f"fixes kept in the advisor's order if they lower {event.phase} ({before:.1f} GiB predicted)")
    return fixes, advice.status, notes


def _summary(event: OomEvent, phase: str, component: str, matched: float | None) -> str:
    alloc = f"{event.allocation_gib:.2f} GiB" if event.allocation_gib is not None else "an allocation"
    pred = f"{matched:.2f} GiB predicted" if matched is not None else "no predicted size"
    what = {
        "cuda_oom": f"{alloc} failed in {phase}",
        "vllm_startup_free_memory": f"vLLM could not start: it needs {alloc} free at start",
        "vllm_kv_below_max_model_len": "vLLM's KV cache cannot hold one max_model_len sequence",
        "vllm_no_kv_cache": "vLLM has no memory left for the KV cache",
        "vllm_wake_up_oom": f"vLLM could not map its weights and KV cache back at wake_up in {phase}",
        "sglang_no_kv_cache": "SGLang has no memory left for its KV pool (mem_fraction_static)",
        "host_oom": f"Ray killed a worker for host memory ({alloc} used on the node) in {phase}",
    }[event.kind]
    return f"{what}; closest predicted component: {component} ({pred})"


def explain_oom(scenario: Scenario, text: str, what: str = "traceback") -> OomExplanation:
    """Parse ``text`` and explain the OOM against ``scenario``'s prediction."""
    event = parse_oom(text, what)
    report = estimate(scenario)
    component, matched, phase = _match(report, event)
    phase_name = event.phase or (phase.name if phase else "unknown")
    resident = {}
    if phase is not None:
        resident = {k: round(v, 3) for k, v in sorted(phase.components.items(), key=lambda kv: -kv[1]) if v > 0}
    fixes, status, notes = _fixes(scenario, report, event)
    if event.phase is None and phase is not None:
        notes.append(f"no verl function in the stack names the phase; the predicted peak phase {phase.name} is used")
    elif event.kind == "cuda_oom" and phase is not None and phase.name != event.phase:
        notes.append(
            f"the scenario has no {event.phase} phase (roles: {', '.join(report.roles)}); compared with its largest "
            f"phase {phase.name}: check that the scenario matches the run"
        )
    return OomExplanation(
        phase=phase_name,
        component=component,
        allocation_gib=event.allocation_gib,
        matched_gib=matched,
        fixes=fixes,
        event=event,
        resident_gib=resident,
        predicted_phase_gib=phase.total_gib if phase is not None else None,
        usable_memory_gib=report.peak.usable_memory_gib,
        summary=_summary(event, phase_name, component, matched),
        advice_status=status,
        notes=notes,
    )


def explanation_json(e: OomExplanation) -> dict[str, Any]:
    return e.model_dump(mode="json")
