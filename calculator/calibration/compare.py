"""Prediction beside measurement for one run, and the fitted efficiency values (``python -m calculator calibrate``).

The prediction is ``estimate()`` of the run's scenario with the logged mean lengths (``prompt_length/mean``,
``response_length/mean``: the model's ``data.mean_*_length``), so that a run whose responses were shorter than
the configured maximum is not blamed on the efficiencies. Memory: verl logs the trainer process's
``torch.cuda.max_memory_allocated()`` / ``max_memory_reserved()`` (GiB, ``perf/max_memory_*_gb``); the model's
counterpart is the largest ``trainer_allocated`` of any phase and, for reserved, that phase's trainer tensors plus
its ``fragmentation`` component. The fragmentation constant is fitted from the logged reserved - allocated gap:
``overheads.fragmentation_fraction = (reserved - allocated) / transient``, where ``transient`` is the trainer's
transient bytes of that phase (the fragmentation component over the current fraction, calculator/memory/phases.py).
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from calculator.calibration.fit import FIT_PARAMS, FitParam, FitResult, fit
from calculator.calibration.measured import Measured
from calculator.errors import InputError
from calculator.inputs.scenario import Scenario
from calculator.loading import load_scenario
from calculator.names import PHASE_ORDER, Comp
from calculator.report.estimate import estimate
from calculator.report.models import Report
from calculator.resolve.resolved import resolve

FRAGMENTATION_FIELD = "overheads.fragmentation_fraction"
GAP_TO_EXPLAIN = 0.10  # a phase more than 10 % off gets its mechanism terms spelled out
MAX_ALLOCATED_MISMATCH = 0.25  # fragmentation is fitted only when the allocated peak is predicted within 25 %


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PhaseComparison(_Frozen):
    name: str
    predicted_s: float | None = Field(description="Prediction with the cited defaults (null: no such phase).")
    measured_s: float = Field(description="Median over the kept steps.")
    measured_mad_s: float
    ratio: float | None = Field(description="measured / predicted.")
    fitted_s: float | None = Field(description="Prediction with the fitted values.")
    terms_s: dict[str, float] = Field(description="The prediction's mechanism terms (seconds).")
    explanation: str


class MemoryComparison(_Frozen):
    predicted_gib: float = Field(description="Largest trainer allocated memory of any phase (max_memory_allocated).")
    measured_gib: float | None = Field(description="perf/max_memory_allocated_gb (median).")
    predicted_reserved_gib: float
    measured_reserved_gib: float | None = Field(description="perf/max_memory_reserved_gb (median).")
    phase: str
    predicted_gpu_peak_gib: float = Field(description="Whole-GPU peak (both processes), for reference.")


class HostComparison(_Frozen):
    predicted_gib: float | None
    measured_gib: float | None = Field(description="perf/cpu_memory_used_gb: used RAM of the node (median).")
    note: str


class FittedValue(_Frozen):
    field: str
    default: float
    value: float
    uncertainty: float
    at_bound: bool
    drives: list[str]


class Calibration(_Frozen):
    phases: list[PhaseComparison]
    step: dict[str, float | None]
    memory: MemoryComparison
    host: HostComparison
    fitted: dict[str, float]
    fitted_detail: list[FittedValue]
    refused: dict[str, str]
    residuals: dict[str, float] = Field(description="Per phase, measured / fitted prediction - 1.")
    residuals_before: dict[str, float] = Field(description="Per phase, measured / default prediction - 1.")
    unmodelled_s: dict[str, float] = Field(description="verl timers with no phase in the model (median s).")
    lengths: dict[str, int]
    steps_used: list[int]
    warmup_steps: list[int]
    notes: list[str]


def with_lengths(scenario: Scenario, measured: Measured) -> tuple[Scenario, dict[str, int], list[str]]:
    """The scenario with the logged mean lengths (clamped to the configured maxima)."""
    overrides: dict[str, Any] = {}
    notes: list[str] = []
    for kind, stat in (("prompt", measured.mean_prompt_length), ("response", measured.mean_response_length)):
        if stat is None:
            notes.append(f"the log has no {kind}_length/mean: the scenario's mean {kind} length is used")
            continue
        top = getattr(scenario.data, f"max_{kind}_length")
        value = max(1, min(round(stat.median), top))
        if value != round(stat.median):
            notes.append(f"logged {kind}_length/mean {stat.median:.0f} is above data.max_{kind}_length {top}")
        overrides[f"data.mean_{kind}_length"] = value
    scen = load_scenario(scenario, overrides) if overrides else scenario
    return scen, {k.removeprefix("data."): int(v) for k, v in overrides.items()}, notes


def predictor(scenario: Scenario) -> Any:
    """theta (field -> value) -> predicted seconds per phase."""

    def predict(theta: dict[str, float]) -> dict[str, float]:
        report = estimate(load_scenario(scenario, theta) if theta else scenario)
        if report.time is None:
            raise InputError("calibrate: the scenario has no step-time model (time section missing)")
        return {p: (v or 0.0) for p, v in report.time.phases_s.items()}

    return predict


def _field_value(scenario: Scenario, dotted: str) -> float:
    obj: Any = scenario
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return float(obj)


def _explain(name: str, pred: float | None, meas: float, terms: dict[str, float], drivers: list[str]) -> str:
    if pred is None or pred <= 0:
        return "the model has no such phase for this scenario (e.g. a rule-based reward runs on CPU)"
    ratio = meas / pred
    if abs(math.log(ratio)) < math.log1p(GAP_TO_EXPLAIN):
        return f"within {GAP_TO_EXPLAIN:.0%} ({ratio:.2f}x)"
    top = sorted(((k, v) for k, v in terms.items() if v > 0), key=lambda kv: -kv[1])[:3]
    parts = ", ".join(f"{k} {v:.1f} s ({v / pred:.0%})" for k, v in top) or "no term breakdown"
    side = "slower" if ratio > 1 else "faster"
    driven = f"; fields that scale it: {', '.join(drivers)}" if drivers else ""
    return (
        f"measured {ratio:.2f}x the prediction ({side} by {abs(meas - pred):.1f} s); predicted terms: {parts}{driven}"
    )


def _memory(report: Report, measured: Measured) -> MemoryComparison:
    peak = max(report.phases, key=lambda p: p.trainer_allocated_gib)
    frag = peak.components.get(Comp.FRAGMENTATION.value, 0.0)
    return MemoryComparison(
        predicted_gib=peak.trainer_allocated_gib,
        measured_gib=measured.allocated_gib.median if measured.allocated_gib else None,
        predicted_reserved_gib=peak.trainer_allocated_gib + frag,
        measured_reserved_gib=measured.reserved_gib.median if measured.reserved_gib else None,
        phase=peak.name,
        predicted_gpu_peak_gib=report.peak.gib_per_gpu,
    )


def host_ram_gib(report: Report) -> float | None:
    """The report's predicted host RAM used per node (DESIGN.md 6.5 ``host.total_gib_per_node``: offloaded state,
    process and node baselines; ``ram_gib_per_node`` is the node's capacity, not a prediction), None in a build
    without the host model."""
    return _host_field(report, "total_gib_per_node")


def host_components_gib(report: Report) -> dict[str, float]:
    """The predicted host RAM per node by component (``host.components``), empty without the host model."""
    host = getattr(report, "host", None)
    comps = host.get("components") if isinstance(host, dict) else getattr(host, "components", None)
    return {str(k): float(v) for k, v in (comps or {}).items() if isinstance(v, int | float)}


def _host_field(report: Report, name: str) -> float | None:
    host = getattr(report, "host", None)
    value = host.get(name) if isinstance(host, dict) else getattr(host, name, None)
    return float(value) if isinstance(value, int | float) else None


def _host(report: Report, measured: Measured) -> HostComparison:
    predicted = host_ram_gib(report)
    note = (
        "perf/cpu_memory_used_gb is the node's used RAM (psutil), all processes included"
        if predicted is not None
        else "this build has no host-memory model; the logged value is shown alone"
    )
    used = measured.host_used_gib.median if measured.host_used_gib else None
    return HostComparison(predicted_gib=predicted, measured_gib=used, note=note)


def fragmentation_fit(scenario: Scenario, memory: MemoryComparison) -> tuple[float | None, str]:
    """(``overheads.fragmentation_fraction`` from the logged reserved - allocated gap, how) or (None, why not).
    Refused when the predicted allocated peak is more than ``MAX_ALLOCATED_MISMATCH`` from the logged one: the gap is
    divided by the predicted transient tensors, which are then not the run's (the scenario does not match it)."""
    if memory.measured_gib is None or memory.measured_reserved_gib is None:
        return None, "the log has no perf/max_memory_allocated_gb and perf/max_memory_reserved_gb"
    mismatch = memory.predicted_gib / memory.measured_gib - 1 if memory.measured_gib > 0 else math.inf
    if abs(mismatch) > MAX_ALLOCATED_MISMATCH:
        return None, (
            f"the predicted allocated peak ({memory.predicted_gib:.1f} GiB) is {mismatch:+.0%} off the logged "
            f"{memory.measured_gib:.1f} GiB: the scenario does not match the run's memory (check the launch script), "
            "so its transient tensors cannot scale the logged reserved - allocated gap"
        )
    current = scenario.overheads.fragmentation_fraction
    frag_gib = memory.predicted_reserved_gib - memory.predicted_gib
    if frag_gib <= 0 and current > 0 and resolve(scenario).trainer_expandable_segments:
        return None, (
            f"verl {scenario.verl_version} runs the trainer's passes with expandable segments: the logged reserved - "
            "allocated gap is cached pages the allocator unmaps before it reports an OOM, not memory lost to "
            "fragmentation (calculator/memory/phases.py _fragmentation)"
        )
    if current <= 0 or frag_gib <= 0:
        return None, "the scenario predicts no fragmentation term to scale (fragmentation_fraction 0)"
    transient_gib = frag_gib / current
    gap = max(memory.measured_reserved_gib - memory.measured_gib, 0.0)
    value = min(max(gap / transient_gib, 0.0), 1.0)
    return value, f"reserved - allocated {gap:.2f} GiB over {transient_gib:.2f} GiB of transient trainer tensors"


def fit_fragmentation(scenario: Scenario, memory: MemoryComparison) -> tuple[float, str] | None:
    """:func:`fragmentation_fit` as (value, how), or None when it is refused."""
    value, how = fragmentation_fit(scenario, memory)
    return None if value is None else (value, how)


def _fitted_detail(result: FitResult, theta0: dict[str, float], params: tuple[FitParam, ...]) -> list[FittedValue]:
    out = []
    for fp in params:
        if fp.field not in result.values:
            continue
        v = result.values[fp.field]
        out.append(
            FittedValue(
                field=fp.field,
                default=theta0[fp.field],
                value=v,
                uncertainty=result.uncertainty.get(fp.field, 0.0),
                at_bound=math.isclose(v, fp.lower, rel_tol=1e-6) or math.isclose(v, fp.upper, rel_tol=1e-6),
                drives=list(fp.phases),
            )
        )
    return out


def calibrate(scenario: Scenario, measured: Measured, params: tuple[FitParam, ...] = FIT_PARAMS) -> Calibration:
    """Compare the run's measured phases with the prediction and fit the identifiable efficiency fields."""
    scen, lengths, notes = with_lengths(scenario, measured)
    report = estimate(scen)
    if report.time is None:
        raise InputError("calibrate: the scenario has no step-time model (time section missing)")
    theta0 = {fp.field: _field_value(scen, fp.field) for fp in params}
    result = fit(
        predictor(scen),
        theta0,
        {p: s.median for p, s in measured.phases_s.items()},
        {p: s.rel_sem for p, s in measured.phases_s.items()},
        params,
    )
    drivers = {p: [fp.field for fp in params if p in fp.phases and fp.field in result.values] for p in PHASE_ORDER}
    phases = []
    for name, stat in measured.phases_s.items():
        pred = report.time.phases_s.get(name)
        after = result.predicted_after_s.get(name)
        terms = dict(report.time.terms_s.get(name, {}))
        phases.append(
            PhaseComparison(
                name=name,
                predicted_s=pred,
                measured_s=stat.median,
                measured_mad_s=stat.mad,
                ratio=stat.median / pred if pred else None,
                fitted_s=after if after else None,
                terms_s=terms,
                explanation=_explain(name, pred, stat.median, terms, drivers.get(name, [])),
            )
        )
    memory = _memory(report, measured)
    fitted = {f: v for f, v in result.values.items()}
    refused = dict(result.refused)
    frag, how = fragmentation_fit(scen, memory)
    if frag is not None:
        fitted[FRAGMENTATION_FIELD] = frag
        notes.append(f"{FRAGMENTATION_FIELD}: {how}")
    else:
        refused[FRAGMENTATION_FIELD] = how
    return Calibration(
        phases=phases,
        step={
            "predicted_s": report.time.step_s,
            "measured_s": measured.step_s.median if measured.step_s else None,
            "fitted_s": sum(result.predicted_after_s.values()),
        },
        memory=memory,
        host=_host(report, measured),
        fitted=fitted,
        fitted_detail=_fitted_detail(result, theta0, params),
        refused=refused,
        residuals=_residuals(measured, result.predicted_after_s),
        residuals_before=_residuals(measured, result.predicted_before_s),
        unmodelled_s={k: s.median for k, s in measured.other_s.items()},
        lengths=lengths,
        steps_used=list(measured.steps_used),
        warmup_steps=list(measured.warmup_steps),
        notes=list(measured.notes) + notes,
    )


def _residuals(measured: Measured, predicted: dict[str, float]) -> dict[str, float]:
    return {p: s.median / predicted[p] - 1 for p, s in measured.phases_s.items() if predicted.get(p, 0.0) > 0}


def calibration_json(c: Calibration) -> dict[str, Any]:
    """The JSON of ``calibrate --json`` (DESIGN.md 6.5 keys first; extra keys beside them)."""
    return c.model_dump(mode="json")
