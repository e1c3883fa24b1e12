"""``python -m calculator plan``, ``advise`` and ``tradeoffs`` (DESIGN.md 6.4): argument parsing and text output.

    python -m calculator plan [SCENARIO] [estimate's options] [--gpus ID,ID,...] [--max-gpus N]
        [--margin 0.10] [--allow-lora] [--format table|csv|markdown] [--json]
    python -m calculator advise [SCENARIO] [estimate's options] [--margin 0.10] [--max-gpus N] [--json]
    python -m calculator tradeoffs [SCENARIO] [estimate's options] [--json]

Bad input exits 2 with one line per problem naming the field (handled by ``calculator.cli.main.main``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from calculator.cli.scenario import scenario_from_args
from calculator.cli.terminal import one_line, out
from calculator.errors import InputError
from calculator.inputs.display import scenario_title
from calculator.inputs.scenario import Scenario
from calculator.loading import load_scenario
from calculator.planning.advisor import Advice, advise
from calculator.planning.formats import plan_to_csv, plan_to_markdown
from calculator.planning.planner import plan
from calculator.planning.rows import Plan
from calculator.planning.settings import format_verl_value
from calculator.planning.table import plan_table
from calculator.planning.tradeoff import pareto_front, tradeoff_sweep
from calculator.report.estimate import estimate


def _gpu_list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [g.strip() for g in text.split(",") if g.strip()]


def _f(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def format_plan(p: Plan) -> str:
    lines = [
        f"{one_line(p.model)}: GPUs that fit with a {p.margin:.0%} margin (searched up to {p.max_gpus} GPUs, "
        f"{p.num_estimates} estimates in {p.elapsed_s:.2f} s)",
        "",
        f"{'GPU':<18} {'min':>5} {'rec':>5} {'peak GiB':>9} {'step s':>9} {'tokens/s':>10} {'USD/step':>9} "
        f"{'USD/Mtok':>9}",
    ]
    for r in plan_table(p):
        lines.append(
            f"{r.gpu:<18} {r.min_gpus or '-':>5} {r.recommended_gpus or '-':>5} {_f(r.peak_gib_per_gpu, 1):>9} "
            f"{_f(r.step_s, 1):>9} {_f(r.tokens_per_s, 0):>10} {_f(r.cost_per_step_usd, 3):>9} "
            f"{_f(r.cost_per_million_tokens_usd, 3):>9}"
        )
    lines += ["", "recommended settings (verl overrides besides trainer.n_gpus_per_node / nnodes):"]
    for row in p.rows:
        rec = row.recommended
        if rec is None:
            lines.append(f"  {row.gpu}: {row.note}")
            continue
        text = " ".join(f"{k}={format_verl_value(v)}" for k, v in rec.settings.items()) or "as configured"
        lines.append(f"  {row.gpu} x {rec.num_gpus}: {text}")
        if row.note:  # e.g. a Megatron layout other than the scenario's (calculator.planning.rows.layout_note)
            lines.append(f"    {one_line(row.note)}")
    lines += split_lines(p)
    lines += ["", f"rules: {p.rules}", "prices: hourly_price_usd of the GPU presets (editable examples)"]
    return "\n".join(lines)


def split_lines(p: Plan) -> list[str]:
    """``plan --placement``: each GPU type's best split beside its colocated recommendation."""
    if p.placement is None:
        return []
    lines = ["", f"{p.placement} split of the same GPUs (rollout pool + trainer pool) vs colocated:"]
    for row in p.rows:
        rec, split = row.recommended, row.split
        if rec is None:
            continue
        if split is None:
            lines.append(f"  {row.gpu} x {rec.num_gpus}: no split fits (colocated step {_f(rec.step_s, 1)} s)")
            continue
        keys = ("rollout.nnodes", "rollout.n_gpus_per_node", "actor_rollout_ref.rollout.tensor_model_parallel_size")
        shape = " ".join(f"{k}={split.settings[k]}" for k in keys if k in split.settings)
        lines.append(
            f"  {row.gpu} x {split.num_gpus}: step {_f(split.step_s, 1)} s vs colocated x {rec.num_gpus} {_f(rec.step_s, 1)} s, "
            f"USD/step {_f(split.cost_per_step, 3)} vs {_f(rec.cost_per_step, 3)}; {shape}"
        )
    return lines


def format_advice(a: Advice, title: str | None = None) -> str:
    """The advice as text; ``title`` (the scenario's display name, ``scenario_title``) replaces ``a.scenario``."""
    b = a.base
    lines = [
        f"{one_line(title or a.scenario)}: {a.num_gpus} x {one_line(a.gpu)}, peak {b.peak_gib_per_gpu:.1f} GiB ({b.peak_phase}), worst case "
        f"{b.worst_case_gib_per_gpu:.1f} GiB, limit {b.limit_gib_per_gpu:.1f} GiB ({a.margin:.0%} margin) -> {a.status}",
    ]
    lines += [f"  {one_line(reason)}" for reason in b.reasons]
    lines += [f"  verl would reject: {one_line(p)}" for p in a.verl_problems]
    if a.placement_hint:
        lines.append(f"  placement: {one_line(a.placement_hint)}")
    if not a.suggestions:
        lines.append("nothing to change" if a.status == "fits" else "no lever applies")
        return "\n".join(lines)
    lines += ["", f"{'#':>3}   {'fits':<5} {'peak GiB':>8} {'+step s':>8}  change ({a.ranking})"]
    for s in a.suggestions:
        mark = "*" if s.first_fit else " "
        lines.append(
            f"{s.rank:>3} {mark} {('yes' if s.fits else 'no'):<5} {s.peak_gib_per_gpu:>8.1f} "
            f"{_f(s.added_step_s, 1):>8}  [{s.tier}] {s.title}" + ("" if s.helps else " (does not help)")
        )
        if not s.fits:  # "no" always says why (e.g. the worst case when the peak is below the limit)
            lines.append(f"{'':>9}why not: {one_line('; '.join(s.fit.reasons))}")
    first = next((s for s in a.suggestions if s.first_fit), None)
    if first is not None:
        lines += ["", f"first change that fits (#{first.rank}, {first.title}): verl overrides"]
        lines += [f"  {line}" for line in first.verl_overrides]
    return "\n".join(lines)


def tradeoffs_json(scenario: Any) -> dict[str, Any]:
    """DESIGN.md 6.5: ``{"points": [...], "front": [...], "elapsed_s": float}`` (elapsed: the sweep and front)."""
    t0 = time.perf_counter()
    points = tradeoff_sweep(scenario)
    front = pareto_front(points)
    elapsed = time.perf_counter() - t0
    return {
        "points": [p.model_dump(mode="json") for p in points],
        "front": [p.model_dump(mode="json") for p in front],
        "elapsed_s": elapsed,
    }


def format_tradeoffs(data: dict[str, Any]) -> str:
    points, front = data["points"], data["front"]
    lines = [
        f"{len(points)} settings swept in {data['elapsed_s']:.2f} s; {sum(p['fits'] for p in points)} fit; "
        f"Pareto front (fits, no other point both smaller and faster): {len(front)} points",
        "",
        f"{'peak GiB':>9} {'step s':>9} {'tok/s/GPU':>10}  settings",
    ]
    for p in front:
        mark = " (current)" if p["is_current"] else ""
        lines.append(
            f"{p['peak_gib_per_gpu']:>9.1f} {p['step_s']:>9.1f} {p['tokens_per_s_per_gpu']:>10,.0f}  {p['label']}{mark}"
        )
    return "\n".join(lines)


def plan_main(args: argparse.Namespace, scenario_from_args: Callable[[argparse.Namespace], Any]) -> int:
    """Run ``plan`` or ``advise`` for parsed arguments; InputError propagates to ``cli.main``."""
    scenario, _notes = scenario_from_args(args)
    if args.command == "tradeoffs":
        data = tradeoffs_json(scenario)
        out(json.dumps(data, indent=2) if args.json else format_tradeoffs(data))
        return 0
    if args.command == "plan":
        p = plan(
            scenario,
            gpus=_gpu_list(args.gpus),
            max_gpus=args.max_gpus,
            margin=args.margin,
            allow_lora=args.allow_lora,
            placement=args.placement,
        )
        if args.json:
            out(json.dumps(p.model_dump(mode="json"), indent=2))
        elif args.format == "csv":
            out(plan_to_csv(p), end="")
        elif args.format == "markdown":
            out(plan_to_markdown(p), end="")
        else:
            out(format_plan(p))
        return 0
    a = advise(scenario, margin=args.margin, max_gpus=args.max_gpus)
    out(json.dumps(a.model_dump(mode="json"), indent=2) if args.json else format_advice(a, _title(args, scenario)))
    return 0


def run(args: argparse.Namespace) -> int:
    return plan_main(args, scenario_from_args)


def _title(args: argparse.Namespace, scenario: Scenario) -> str:
    """The preset's name while nothing was changed, else the model and GPUs in use "(based on preset X)"."""
    try:
        base = load_scenario(args.scenario)
        if args.scenario is None:
            base = base.model_copy(update={"name": ""})  # the built-in defaults are no preset to name
    except InputError:
        return scenario.name
    r = estimate(scenario, with_time=False)
    hw = r.hardware
    return scenario_title(scenario, base, model_name=r.model.name, num_gpus=hw.num_gpus, gpu_name=hw.gpu_name)
