"""OOM advisor (issue #6, DESIGN.md 1 Q5): what to change when a scenario does not fit, each change
computed by ``estimate()`` on the modified scenario, ranked by what it costs.

    from calculator.planning.advisor import advise
    advice = advise(load_scenario("qwen2.5-7b-grpo-8xh100", overrides={"hardware.gpu": "a100-40gb"}))
    advice.suggestions[0].verl_overrides   # ["trainer.n_gpus_per_node=8", ..., "actor_rollout_ref...=true"]

Levers: the seeds' checklist in its order (seed 000: a) smaller rollout batch, b) shorter lengths,
c) gradient checkpointing, d) offload, e) more sharding, f) more GPUs) plus what verl adds (lower
``gpu_memory_utilization``, rollout TP, fused kernels, entropy chunking / checkpointing, dynamic
batch token budget, smaller micro-batches, Ulysses SP, CUDA graphs off, ``free_cache_engine``,
``max_model_len`` capped, LoRA). A lever with a size (a utilization, a TP, a budget) is tried from
the mildest value to the strongest; the mildest that fits is kept, else the strongest valid one.

Ranking (issue 13 item 7): the options that fit first, then those that bring the scenario closer to fitting,
then the rest. Within each, first the changes that keep the experiment and the hardware ("settings"), then
more GPUs of the same type ("hardware": same experiment, more money), then changes to the experiment
("workload": smaller batch, fewer responses, shorter lengths, LoRA instead of full fine-tuning). Within a
group, by the changed scenario's step time (estimate's ``time.step_s``: the same order as the time the change
adds, and still defined when the current scenario cannot run and has no step time; an option without one goes
last), then by the lever's mechanism class (0 none, 1 small, 2 medium, 3 large), then by the peak it leaves.
``added_step_s`` is null when either step time is. The first suggestion, when it fits, is ``first_fit``. ``combined`` stacks the settings
changes in rank order, keeping each one that lowers a failing figure, until the scenario fits.

The levers and the candidate changes of each are in ``calculator.planning.levers``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from calculator.errors import InputError
from calculator.inputs.scenario import Scenario
from calculator.loading import load_scenario
from calculator.planning.fit import DEFAULT_MARGIN, FitCheck, batch_geometry_problem, fit_check, parallel_problem
from calculator.planning.layout_search import LayoutCaches, search_gpu_layouts
from calculator.planning.levers import LEVERS, Lever, Tier, lever_candidates
from calculator.planning.placement_advice import placement_hint
from calculator.planning.planner import DEFAULT_MAX_GPUS, check_plan_inputs, resolve_scenario
from calculator.planning.search import GpuSearch
from calculator.planning.settings import Setting, native_diff, settings_diff, verl_override_lines
from calculator.planning.space import Evaluation
from calculator.report.estimate import estimate
from calculator.report.models import Report
from calculator.resolve.architectures import resolve_architectures

TIER_ORDER: dict[str, int] = {"settings": 0, "hardware": 1, "workload": 2}
TIME_COST_LABELS = ("none", "small", "medium", "large")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Suggestion(_Frozen):
    """One change, with the memory and time ``estimate()`` gives for the changed scenario."""

    lever: str = Field(description="Stable id of the lever.")
    title: str
    tier: Tier
    changes_experiment: bool = Field(description="True when the training run itself changes (workload, LoRA).")
    source: str = Field(description="Where the lever comes from: the seeds' checklist item, or verl.")
    explanation: str
    native_changes: dict[str, Setting] = Field(description="Scenario fields changed (rlplan's own names).")
    settings: dict[str, Setting] = Field(description="verl override keys -> new values.")
    verl_overrides: list[str] = Field(description="key=value lines for a launch script, cluster shape included.")
    num_gpus: int
    peak_gib_per_gpu: float
    peak_phase: str
    worst_case_gib_per_gpu: float
    saving_gib: float = Field(description="Expected peak before minus after, GiB per GPU.")
    step_s: float | None
    added_step_s: float | None = Field(description="Step time after minus before; null without a time model.")
    time_cost: Literal["none", "small", "medium", "large"] = Field(description="Mechanism class of the time cost.")
    fits: bool
    helps: bool = Field(description="Fits, or lowers a figure that fails; false = no effect on what fails.")
    fit: FitCheck
    first_fit: bool = False
    rank: int = 0


class Advice(_Frozen):
    """What to change for one scenario, ranked."""

    scenario: str
    gpu: str
    num_gpus: int
    margin: float
    status: Literal["fits", "within_margin", "does_not_fit"] = Field(
        description="within_margin: fits the usable memory but not the safety margin."
    )
    base: FitCheck
    base_step_s: float | None
    verl_problems: list[str] = Field(description="verl/vLLM startup rules the scenario breaks, if any.")
    suggestions: list[Suggestion]
    first_fit: str | None = Field(description="Lever id of the first suggestion (in rank order) that fits.")
    combined: Suggestion | None = Field(description="Settings changes stacked in rank order until it fits.")
    ranking: str
    placement_hint: str | None = Field(
        default=None,
        description="Whether separate rollout and trainer pools would help a generation-bound step "
        "(calculator.planning.placement_advice); None when generation does not dominate.",
    )
    elapsed_s: float


RANKING = (
    "options that fit first, then those that bring it closer to fitting, then the rest; within each, settings "
    "changes (same experiment, same GPUs) first, then more GPUs, then changes to the experiment (batch, "
    "responses per prompt, lengths, LoRA); then by step time (an option whose engine cannot start has none and "
    "goes last), then by the peak left"
)


@dataclass(frozen=True)
class _Tried:
    changes: dict[str, Any]
    scenario: Scenario
    report: Report
    fit: FitCheck


def _try(s: Scenario, changes: dict[str, Any], margin: float) -> _Tried | None:
    """Estimate ``s`` with ``changes``; None when the change is invalid for the scenario, verl or vLLM."""
    try:
        new = load_scenario(s, overrides=changes)
    except InputError:
        return None
    if batch_geometry_problem(new) or parallel_problem(new, resolve_architectures(new)[0]):
        return None
    report = estimate(new)
    return _Tried(changes, new, report, fit_check(report, new, margin))


def _pick(s: Scenario, lever: str, candidates: list[dict[str, Any]], margin: float) -> _Tried | None:
    """The mildest candidate that fits, else the one with the lowest peak."""
    tried = []
    for ch in candidates:
        t = _try(s, ch, margin)
        if t is None:
            continue
        if t.fit.fits:
            return t
        tried.append(t)
        if (
            lever == "more_gpus"
            and len(tried) >= 4
            and tried[-1].fit.peak_gib_per_gpu >= tried[-2].fit.peak_gib_per_gpu
        ):
            break  # more GPUs no longer lower the peak (the rollout engine's share is fixed)
    return min(tried, key=lambda t: (t.fit.peak_gib_per_gpu, t.fit.worst_case_gib_per_gpu)) if tried else None


def _fewest(s: Scenario, srch: GpuSearch, margin: float, max_gpus: int) -> Evaluation | None:
    """The fastest configuration found at the smallest count that fits, as ``plan`` finds it (a Megatron actor's
    layouts too: calculator.planning.layout_search), or None."""
    if srch.megatron:
        caches = LayoutCaches.for_scenario(s)
        return search_gpu_layouts(
            s, s.hardware.gpu, max_gpus=max_gpus, margin=margin, allow_lora=False, caches=caches
        ).minimum
    first, _ = srch.min_count()
    return srch.relax(first) if first is not None else None


def _planned(s: Scenario, margin: float, max_gpus: int) -> list[tuple[Lever, _Tried]]:
    """The planner's search on this GPU type: the fastest fitting settings at the current GPU count, or
    else the fewest GPUs that fit with the fastest settings found there (LoRA not searched)."""
    srch = GpuSearch(s, s.hardware.gpu, max_gpus=max_gpus, margin=margin, allow_lora=False)
    n = s.hardware.num_gpus
    ev = srch.at_count(n) if srch.is_valid_count(n) else None
    if ev is None:
        ev = _fewest(s, srch, margin, max_gpus)
        if ev is None:
            return []
    layouts = " and the Megatron TP / PP / EP layout" if srch.megatron else ""
    if ev.knobs.num_gpus == n:
        lever = Lever(
            "searched_settings",
            f"Settings found by the planner's search at {n} GPUs",
            "settings",
            2,
            "planner",
            "The planner's search over offload, checkpointing, fused kernels, entropy chunking, batch sizing, "
            f"Ulysses SP, rollout TP{layouts} and gpu_memory_utilization at this GPU count.",
        )
    else:
        lever = Lever(
            "searched_min_gpus",
            f"{ev.knobs.num_gpus} GPUs with searched settings (fewest that fit)",
            "hardware",
            0,
            "planner",
            "The planner's smallest GPU count of this type at which some searched setting fits, with the "
            f"fastest settings found there{' (the Megatron TP / PP / EP layout searched too)' if layouts else ''}.",
        )
    return [(lever, _Tried(native_diff(s, ev.scenario), ev.scenario, ev.report, ev.fit))]


def _name_fastest(ranked: list[tuple[Suggestion, Lever]]) -> list[tuple[Suggestion, Lever]]:
    """Call the planner's searched settings the fastest fitting ones only when no other fitting option at the
    same GPU count is faster (the search relaxes greedily, one lever at a time: a single change can beat it)."""
    out = []
    for sug, lv in ranked:
        if lv.lever == "searched_settings" and sug.fits and sug.step_s is not None:
            rivals = [x.step_s for x, _ in ranked if x.fits and x.num_gpus == sug.num_gpus and x.step_s is not None]
            if sug.step_s <= min(rivals):
                sug = sug.model_copy(
                    update={"title": f"Fastest fitting settings at {sug.num_gpus} GPUs (planner search)"}
                )
        out.append((sug, lv))
    return out


def _suggestion(s: Scenario, base: Report, lever: Lever, t: _Tried, base_fit: FitCheck) -> Suggestion:
    settings = settings_diff(s, t.scenario)
    step = t.report.time.step_s if t.report.time is not None else None
    base_step = base.time.step_s if base.time is not None else None
    hw = t.scenario.hardware
    return Suggestion(
        lever=lever.lever,
        title=lever.title,
        tier=lever.tier,
        changes_experiment=lever.changes_experiment,
        source=lever.source,
        explanation=lever.explanation,
        native_changes=dict(t.changes),
        settings=settings,
        verl_overrides=verl_override_lines(settings, hw.num_gpus, hw.gpus_per_node),
        num_gpus=hw.num_gpus,
        peak_gib_per_gpu=t.fit.peak_gib_per_gpu,
        peak_phase=t.fit.peak_phase,
        worst_case_gib_per_gpu=t.fit.worst_case_gib_per_gpu,
        saving_gib=base.peak.gib_per_gpu - t.fit.peak_gib_per_gpu,
        step_s=step,
        added_step_s=step - base_step if step is not None and base_step is not None else None,
        time_cost=TIME_COST_LABELS[lever.time_class],  # type: ignore[arg-type]
        fits=t.fit.fits,
        helps=t.fit.fits or _improves(t.fit, base_fit),
        fit=t.fit,
    )


def _rank_key(sug: Suggestion, time_class: int) -> tuple[Any, ...]:
    """Fitting options first, then those that help, then the rest; within each, by tier, then by step time
    (the changed scenario's ``time.step_s``: the same order as the time added, and defined when the current
    scenario has no step time because its engine cannot start; an option without one goes last), then by the
    lever's mechanism class, the overshoot and the peak."""
    step = sug.step_s if sug.step_s is not None else math.inf
    return (
        not sug.fits,
        not sug.helps,
        TIER_ORDER[sug.tier],
        step,
        time_class,
        sug.fit.overshoot_gib,
        sug.peak_gib_per_gpu,
    )


def _improves(new: FitCheck, cur: FitCheck) -> bool:
    """The change brings the scenario closer to fitting: less overshoot (GiB over the limits, summed over
    phases, plus the startup and KV shortfalls)."""
    return new.overshoot_gib < cur.overshoot_gib - 1e-6


def _combined(
    s: Scenario, base: Report, ranked: list[tuple[Suggestion, Lever]], margin: float
) -> tuple[Suggestion, Lever] | None:
    """Stack the settings changes in rank order, keeping each that lowers a failing figure, until it fits."""
    changes: dict[str, Any] = {}
    used: list[Lever] = []
    cur = _try(s, {}, margin)
    if cur is None:
        return None
    base_fit = cur.fit
    for sug, lv in ranked:
        if lv.tier != "settings" or lv.lever == "searched_settings":
            continue
        t = _try(s, {**changes, **sug.native_changes}, margin)
        if t is None or not _improves(t.fit, cur.fit):
            continue
        changes, cur = {**changes, **sug.native_changes}, t
        used.append(lv)
        if t.fit.fits:
            break
    if len(used) < 2:
        return None  # a single lever is already in the list
    combo = Lever(
        "combined",
        "Combined: " + "; ".join(lv.title[0].lower() + lv.title[1:] for lv in used),
        "settings",
        max(lv.time_class for lv in used),
        "verl + seeds",
        "The settings changes ranked above, stacked in rank order; each is kept only if it lowers a figure "
        "that still fails.",
    )
    return _suggestion(s, base, combo, cur, base_fit), combo


def advise(
    scenario: Scenario | str | dict[str, Any], margin: float = DEFAULT_MARGIN, max_gpus: int = DEFAULT_MAX_GPUS
) -> Advice:
    """Ranked changes that would make ``scenario`` fit (empty when it already fits within the margin).
    Raises :class:`InputError` on bad input."""
    t0 = time.perf_counter()
    check_plan_inputs(max_gpus, margin)
    s = resolve_scenario(scenario)
    base = estimate(s)
    base_fit = fit_check(base, s, margin)
    problems = [p for p in (batch_geometry_problem(s), parallel_problem(s, resolve_architectures(s)[0])) if p]
    if base_fit.fits:
        status = "fits"
    elif (
        base.peak.gib_per_gpu <= base_fit.usable_memory_gib
        and base_fit.worst_case_fits
        and (base_fit.engine_starts and base_fit.kv_holds_max_model_len)
        and not base_fit.verl_errors
    ):
        status = "within_margin"
    else:
        status = "does_not_fit"
    ranked: list[tuple[Suggestion, Lever]] = []
    combined = None
    if status != "fits":
        picked = [(LEVERS[k], _pick(s, k, c, margin)) for k, c in lever_candidates(s, max_gpus).items()]
        for lever, t in picked + _planned(s, margin, max_gpus):
            if t is not None:
                ranked.append((_suggestion(s, base, lever, t, base_fit), lever))
        ranked.sort(key=lambda x: _rank_key(x[0], x[1].time_class))
        combo = _combined(s, base, ranked, margin)
        if combo is not None:
            combined = combo[0]
            if combined.fits:  # a stack that fits competes with the single changes
                ranked.append(combo)
                ranked.sort(key=lambda x: _rank_key(x[0], x[1].time_class))
        ranked = _name_fastest(ranked)
    first = next((i for i, (sug, _) in enumerate(ranked) if sug.fits), None)
    suggestions = [sug.model_copy(update={"rank": i + 1, "first_fit": i == first}) for i, (sug, _) in enumerate(ranked)]
    return Advice(
        scenario=s.name,
        gpu=s.hardware.gpu,
        num_gpus=s.hardware.num_gpus,
        margin=margin,
        status=status,  # type: ignore[arg-type]
        base=base_fit,
        base_step_s=base.time.step_s if base.time is not None else None,
        verl_problems=problems,
        suggestions=suggestions,
        first_fit=suggestions[first].lever if first is not None else None,
        combined=next((x for x in suggestions if x.lever == "combined"), combined),
        ranking=RANKING,
        placement_hint=placement_hint(base),
        elapsed_s=time.perf_counter() - t0,
    )


__all__ = ["Advice", "Suggestion", "advise"]
