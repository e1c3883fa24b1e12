"""The trade-off sweep as trainer settings x engine settings: each side computed once, then combined.

The sweep's axes fall on two sides. The rollout engine's settings (``ENGINE_KEYS``: rollout TP and
``gpu_memory_utilization``) decide the engine's components (weights, KV cache, profiled activations,
non-torch memory, CUDA graphs: ``calculator.memory.phases._engine``), the rollout communicators in
``nccl_buffers``, the rollout's seconds and whether vLLM starts; the trainer's settings (checkpointing,
offload, fused kernels, token budget) decide everything else. So with T trainer combinations and E engine
combinations the sweep evaluates T + E scenarios instead of T x E (a 1,920-point sweep: 104), and each
point is, phase by phase:

    bytes(t, e)   = bytes(t, e0) - engine bytes(t, e0) + engine bytes(t0, e)
    seconds(t, e) = seconds(t0, e) for the engine's phases (rollout, reward), seconds(t, e0) for the trainer's,
                    and the weight sync (param offload x rollout TP) timed on the pair
    starts(t, e)  = vLLM's start check with the engine of e and the trainer memory of t at start-up

with the same integer bytes and the same float operations in the same order as ``estimate()``, so every
point is identical to evaluating it alone (``sweep.full_sweep``). The split is checked where it is used:
three cross points are also evaluated alone and, if one differs (a future mechanism couples the two
sides), the whole sweep falls back to ``full_sweep``. SGLang sizes its pool from the memory the trainer
holds (``engine.engine_budget``), which couples the sides: SGLang scenarios use ``full_sweep``.
tests/planning/test_sweep_combine.py compares every point with ``full_sweep``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel

from calculator.inputs.scenario import Scenario
from calculator.memory import phases as memory
from calculator.names import Comp, Phase, Process
from calculator.planning.sweep import (
    Evaluated,
    TradeoffPoint,
    apply_settings,
    evaluate,
    full_sweep,
    is_current,
    point_label,
    point_of,
    sweep_settings,
)
from calculator.timing.overheads import add_overheads
from calculator.timing.step import PHASE_TIMERS
from calculator.units import GIB_BYTES

ENGINE_KEYS = frozenset({"rollout.tensor_model_parallel_size", "rollout.gpu_memory_utilization"})
ENGINE_TIMED = frozenset({Phase.ROLLOUT, Phase.REWARD})  # seconds depend on the engine's settings only
PAIR_TIMED = frozenset({Phase.WEIGHT_SYNC})  # seconds depend on both sides

Items = tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class _Side:
    """One side's evaluation, with each phase's bytes split into engine-side and the rest."""

    ev: Evaluated
    engine_bytes: tuple[int, ...]
    rest_bytes: tuple[int, ...]


def _engine_side(c: Any) -> bool:
    return c.process == Process.ROLLOUT or c.name == Comp.NCCL_BUFFERS


def _side(ev: Evaluated) -> _Side:
    engine = tuple(sum(c.bytes for c in p.components if _engine_side(c)) for p in ev.phases)
    rest = tuple(p.total_bytes - e for p, e in zip(ev.phases, engine, strict=True))
    return _Side(ev, engine, rest)


class _Combiner:
    """Combines sides into points, caching what several pairs share."""

    def __init__(self) -> None:
        self._sync_s: dict[tuple[int, int, int], float] = {}
        self._starts: dict[tuple[int, int], bool] = {}

    def _pair_seconds(self, t: _Side, e: _Side, name: Phase) -> float:
        """The weight sync on the pair: the trainer side's context with the engine side's rollout settings
        (``timing.step._weight_sync`` reads the rollout's TP and weight bytes per parameter: the cache key)."""
        es = e.ev.ctx.r.rollout
        key = (id(t), es.tp, es.weight_bytes_per_param)
        if key not in self._sync_s:
            pair = replace(t.ev.ctx, r=replace(t.ev.ctx.r, rollout=es))
            self._sync_s[key] = add_overheads(pair, name, PHASE_TIMERS[name](pair)).seconds  # as step.phase_times
        return self._sync_s[key]

    def _seconds(self, t: _Side, e: _Side) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, secs in t.ev.time.phases_s.items():
            if name in ENGINE_TIMED:
                secs = e.ev.time.phases_s[name]
            elif name in PAIR_TIMED:
                secs = self._pair_seconds(t, e, Phase(name))
            out[name] = secs
        return out

    def _engine_starts(self, t: _Side, e: _Side) -> bool:
        """vLLM's start check with the engine side's context and the trainer side's memory at start-up."""
        held = t.ev.ctx.startup_trainer_bytes
        key = (held, id(e))
        if key not in self._starts:
            self._starts[key] = memory.engine_starts(replace(e.ev.ctx, startup_trainer_bytes=held))
        return self._starts[key]

    def point(self, t: _Side, e: _Side, settings: dict[str, Any], current: bool) -> TradeoffPoint:
        """The point of trainer side ``t`` with engine side ``e`` (see the module docstring)."""
        peak, peak_name = -1, ""
        for p, rest, eng in zip(t.ev.phases, t.rest_bytes, e.engine_bytes, strict=True):
            total = rest + eng
            if total > peak:  # the first phase at the maximum, as max() in estimate()
                peak, peak_name = total, p.name
        ctx = t.ev.ctx
        step = sum(self._seconds(t, e).values())
        tokens = ctx.r.num_sequences_trained * ctx.r.lengths.sequence  # as timing.step.step_time
        g = ctx.s.hardware.num_gpus
        starts = self._engine_starts(t, e)
        # verl's checks and host RAM per side: a check reads one side's settings (rollout TP, or the trainer's
        # batches and offload); host RAM moves with the trainer's offload flags. The cross-point check of
        # tradeoff_sweep falls back to the full sweep if a pair disagrees with its own estimate.
        ok = t.ev.accepted and e.ev.accepted and t.ev.host_fits
        return TradeoffPoint(
            label=point_label(settings),
            settings=settings,
            peak_gib_per_gpu=peak / GIB_BYTES,
            peak_phase=peak_name,
            step_s=step if starts else None,
            tokens_per_s_per_gpu=tokens / step / g if step and starts else 0.0,
            fits=peak <= ctx.gpu.usable_memory_bytes and starts and ok,
            usable_memory_gib=ctx.gpu.usable_memory_gib,
            is_current=current,
        )


class _Sides:
    """Evaluations of the trainer and engine sides, each computed once."""

    def __init__(self, s: Scenario, first: dict[str, Any]) -> None:
        self.s = s
        self.t0 = {k: v for k, v in first.items() if k not in ENGINE_KEYS}
        self.e0 = {k: v for k, v in first.items() if k in ENGINE_KEYS}
        self.trainer: dict[Items, _Side] = {}
        self.engine: dict[Items, _Side] = {}
        self.sections: dict[tuple[int, str], BaseModel] = {}

    def evaluate_settings(self, settings: dict[str, Any]) -> _Side:
        s = self.s if is_current(self.s, settings) else apply_settings(self.s, settings, self.sections)
        return _side(evaluate(s))

    def pair(self, settings: dict[str, Any]) -> tuple[_Side, _Side]:
        tk = tuple((k, v) for k, v in settings.items() if k not in ENGINE_KEYS)
        ek = tuple((k, v) for k, v in settings.items() if k in ENGINE_KEYS)
        if tk not in self.trainer:
            self.trainer[tk] = self.evaluate_settings({**dict(tk), **self.e0})
        if ek not in self.engine:
            self.engine[ek] = self.evaluate_settings({**self.t0, **dict(ek)})
        return self.trainer[tk], self.engine[ek]


def _same_phases(t: _Side, e: _Side) -> bool:
    return [p.name for p in t.ev.phases] == [p.name for p in e.ev.phases]


def tradeoff_sweep(s: Scenario) -> list[TradeoffPoint]:
    """Every combination of :func:`calculator.planning.sweep.sweep_settings`, in that order; the current
    scenario's point is flagged. Identical to ``full_sweep(s)`` (see the module docstring)."""
    grid = sweep_settings(s)
    if s.rollout.name == "sglang" or len(grid) < 8:
        return full_sweep(s)
    sides = _Sides(s, grid[0])
    combiner = _Combiner()
    points = []
    for settings in grid:
        t, e = sides.pair(settings)
        if not _same_phases(t, e):
            return full_sweep(s)
        points.append(combiner.point(t, e, settings, is_current(s, settings)))
    for i in (len(grid) // 3, len(grid) // 2, len(grid) - 1):  # cross points, evaluated alone
        settings = grid[i]
        alone = point_of(sides.evaluate_settings(settings).ev, settings, points[i].is_current)
        if alone != points[i]:
            return full_sweep(s)
    return points
