"""Planner for split placements (``plan --placement one_step_off|fully_async``, DESIGN.md 4.10 and 6.5): for the
GPUs of the best colocated configuration, how many go to rollout and how many to training.

Searched, on the same total GPU count N as the colocated recommendation (so the two rows compare like for like),
and on 2N when no split of N fits:
- the rollout share R of N: ``SPLIT_FRACTIONS`` of N (rounded to a multiple of the rollout TP), the trainer gets
  T = N - R. Within one node both pools share it; on several nodes R is spread over every node (verl's
  "resource-constrained" layout: ``trainer.nnodes = rollout.nnodes``, GPUs per node split) when it divides
  evenly, else given whole nodes ("resource-abundant" layout: ``n_gpus_per_node`` equal, nodes split) —
  docs/advance/one_step_off.md "Resource Configuration Strategies";
- the rollout TP: ``ROLLOUT_TPS`` dividing R and the node;
- the trainer's settings: the colocated recommendation's, and the same with param / optimizer offload off (the
  trainer no longer shares its GPUs with the engine) or on (its pool is smaller).
Each candidate must fit (``calculator.planning.fit.fit_check``: both pools, the engine starts on its pool) and pass
verl's batch geometry for the trainer's GPUs. The cheapest fitting split is chosen (cost per step = step_s x GPUs x
hourly price / 3600; on equal N the fastest).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from calculator.errors import InputError
from calculator.inputs.scenario import Scenario
from calculator.planning.fit import batch_geometry_problem, fit_check
from calculator.planning.rows import RecommendedConfig, config_entry
from calculator.planning.settings import Setting, format_verl_value, settings_diff
from calculator.report.estimate import estimate
from calculator.report.models import Report
from calculator.verl.placement_keys import placement_items

SPLIT_FRACTIONS = (0.125, 0.25, 0.375, 0.5, 0.625, 0.75)
ROLLOUT_TPS = (1, 2, 4, 8)
SPLIT_MODES = ("one_step_off", "fully_async")


@dataclass(frozen=True)
class SplitEvaluation:
    scenario: Scenario
    report: Report

    @property
    def step_s(self) -> float:
        return self.report.time.step_s if self.report.time is not None else float("inf")


def _layouts(n: int, gpn: int, r: int) -> list[dict[str, int]]:
    """(trainer GPUs / GPUs per node, rollout nnodes / GPUs per node) for R rollout GPUs out of N."""
    t = n - r
    if n <= gpn:
        return [{"t": t, "t_gpn": t, "r_nodes": 1, "r_gpn": r}]
    nodes = n // gpn
    out = []
    if r % nodes == 0 and t % nodes == 0:  # share every node
        out.append({"t": t, "t_gpn": t // nodes, "r_nodes": nodes, "r_gpn": r // nodes})
    if r % gpn == 0 and t % gpn == 0:  # whole nodes each
        out.append({"t": t, "t_gpn": gpn, "r_nodes": r // gpn, "r_gpn": gpn})
    return out


def _candidate(base: Scenario, mode: str, lay: dict[str, int], tp: int, offload: bool | None) -> Scenario | None:
    d = base.model_dump(mode="python")
    d["hardware"].update(num_gpus=lay["t"], gpus_per_node=lay["t_gpn"])
    d["placement"].update(
        mode=mode,
        rollout_nnodes=lay["r_nodes"],
        rollout_n_gpus_per_node=lay["r_gpn"],
        physical_gpus_per_node=base.hardware.gpus_per_node,
    )
    d["rollout"].update(tensor_model_parallel_size=tp, data_parallel_size=1)
    if offload is not None:
        d["actor"]["fsdp_config"].update(param_offload=offload, optimizer_offload=offload)
    try:
        s = Scenario.model_validate(d)
    except (ValidationError, ValueError):
        return None
    return None if batch_geometry_problem(s) else s


def split_candidates(base: Scenario, mode: str, n: int | None = None) -> list[Scenario]:
    """Every split of ``n`` GPUs (default: ``base``'s) the search tries (module docstring)."""
    n, gpn = n or base.hardware.num_gpus, base.hardware.gpus_per_node
    out: list[Scenario] = []
    seen: set[str] = set()
    for r in sorted({max(1, round(n * f)) for f in SPLIT_FRACTIONS}):
        if r >= n:
            continue
        for lay in _layouts(n, gpn, r):
            for tp in ROLLOUT_TPS:
                if r % tp or tp > lay["r_gpn"]:
                    continue
                for offload in (None, False, True):
                    s = _candidate(base, mode, lay, tp, offload)
                    key = s.model_dump_json() if s is not None else ""
                    if s is not None and key not in seen:
                        seen.add(key)
                        out.append(s)
    return out


def _cost_key(ev: SplitEvaluation) -> tuple[float, float]:
    return ev.step_s * (ev.scenario.hardware.num_gpus + ev.scenario.placement.rollout_num_gpus), ev.step_s


def search_split(base: Scenario, mode: str, margin: float) -> tuple[SplitEvaluation | None, int]:
    """The cheapest fitting split (step x GPUs; ties to the shorter step) of ``base``'s GPU count N, or of 2N when
    no split of N fits, and how many estimates it took."""
    if mode not in SPLIT_MODES:
        raise InputError(f"placement: must be one of colocated, {', '.join(SPLIT_MODES)} (got {mode!r})")
    best: SplitEvaluation | None = None
    count = 0
    for n in (base.hardware.num_gpus, 2 * base.hardware.num_gpus):
        found, tried = _best_of(split_candidates(base, mode, n), margin)
        best, count = found, count + tried
        if best is not None:
            break
    return best, count


def _best_of(candidates: list[Scenario], margin: float) -> tuple[SplitEvaluation | None, int]:
    best: SplitEvaluation | None = None
    count = 0
    for s in candidates:
        r = estimate(s)
        count += 1
        if not fit_check(r, s, margin).fits:  # the same rule as colocated rows (calculator.planning.fit)
            continue
        ev = SplitEvaluation(s, r)
        if best is None or _cost_key(ev) < _cost_key(best):
            best = ev
    return best, count


def split_config(ev: SplitEvaluation, base: Scenario, price: float) -> RecommendedConfig:
    """The chosen split as a planner entry: settings carry ``rollout.nnodes`` / ``rollout.n_gpus_per_node``."""
    s, r = ev.scenario, ev.report
    settings: dict[str, Setting] = settings_diff(base, s)
    settings |= {k: v for _, k, v in placement_items(s, base, []) if not k.startswith("data.")}
    pl = r.placement
    total = s.hardware.num_gpus + s.placement.rollout_num_gpus
    hw = s.hardware
    shape = {"trainer.n_gpus_per_node": min(hw.num_gpus, hw.gpus_per_node), "trainer.nnodes": hw.num_nodes}
    lines = [f"{k}={format_verl_value(v)}" for k, v in {**shape, **settings}.items()]
    step = r.time.step_s if r.time is not None else None
    return config_entry(
        r,
        s,
        settings,
        lines,
        price,
        step=step,
        num_gpus=total,
        num_nodes=pl.num_nodes if pl is not None else hw.num_nodes,
        gpus_per_node=s.placement.physical_gpus_per_node,
    )


def split_row_fields(colocated: Any, base: Scenario, mode: str, margin: float, price: float) -> tuple[Any, int]:
    """(the split's RecommendedConfig or None, estimates) for a GPU type whose colocated recommendation is
    ``colocated`` (an Evaluation, or None when nothing fits)."""
    if colocated is None:
        return None, 0
    ev, count = search_split(colocated.scenario, mode, margin)
    return (split_config(ev, base, price) if ev is not None else None), count


__all__ = ["ROLLOUT_TPS", "SPLIT_FRACTIONS", "SPLIT_MODES", "search_split", "split_candidates", "split_row_fields"]
