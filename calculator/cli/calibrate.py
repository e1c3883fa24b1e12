"""``python -m calculator calibrate`` and ``explain-oom`` (DESIGN.md 6.5, issue 16).

    python -m calculator calibrate [SCENARIO] [estimate's options] --log run.log [--log-format console|jsonl|csv]
        [--warmup-steps N] [--save profile.yaml [--overwrite]] [--json]
    python -m calculator explain-oom [SCENARIO] [estimate's options] --traceback error.txt [--json]

Every other command that takes a scenario also takes ``--calibration FILE|ID`` (a saved profile; see
:mod:`calculator.calibration.profile`). Bad input exits 2 with one line per problem (``calculator.cli.main``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from calculator.calibration.compare import Calibration, calibrate, calibration_json
from calculator.calibration.explain import OomExplanation, explain_oom, explanation_json
from calculator.calibration.logs import parse_log
from calculator.calibration.measured import summarize
from calculator.calibration.profile import make_profile, profile_yaml
from calculator.cli.scenario import scenario_from_args
from calculator.cli.terminal import one_line, out
from calculator.errors import InputError
from calculator.inputs.limits import MAX_LOG_BYTES, MAX_TRACEBACK_BYTES
from calculator.inputs.readers import read_file_text, write_new_text_file

ScenarioFromArgs = Callable[[argparse.Namespace], tuple[Any, list[str]]]


def _f(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def format_calibration(c: Calibration) -> str:
    lines = [
        f"steps used: {len(c.steps_used)} (warm-up dropped: {', '.join(map(str, c.warmup_steps)) or 'none'}); "
        f"lengths: {', '.join(f'{k} {v}' for k, v in c.lengths.items()) or 'scenario defaults'}",
        "",
        f"{'phase':<15} {'predicted s':>11} {'measured s':>11} {'ratio':>6} {'fitted s':>9}",
    ]
    for p in c.phases:
        lines.append(
            f"{p.name:<15} {_f(p.predicted_s):>11} {_f(p.measured_s):>11} {_f(p.ratio, 2):>6} {_f(p.fitted_s):>9}"
        )
    lines.append(
        f"{'step':<15} {_f(c.step['predicted_s']):>11} {_f(c.step['measured_s']):>11} {'':>6} "
        f"{_f(c.step.get('fitted_s')):>9}"
    )
    lines += ["", "gaps:"] + [f"  {p.name}: {one_line(p.explanation)}" for p in c.phases]
    m = c.memory
    lines += [
        "",
        f"memory (trainer, {m.phase}): allocated predicted {m.predicted_gib:.2f} GiB vs logged {_f(m.measured_gib, 2)}; "
        f"reserved predicted {m.predicted_reserved_gib:.2f} vs logged {_f(m.measured_reserved_gib, 2)}",
        f"host: predicted {_f(c.host.predicted_gib)} GiB vs logged {_f(c.host.measured_gib)} GiB ({c.host.note})",
        "",
        "fitted (value +- uncertainty, default):",
    ]
    for d in c.fitted_detail:
        bound = " [at bound]" if d.at_bound else ""
        lines.append(f"  {d.field} = {d.value:.4g} +- {d.uncertainty:.2g} (default {d.default:.4g}){bound}")
    for k, v in c.fitted.items():
        if k not in {d.field for d in c.fitted_detail}:
            lines.append(f"  {k} = {v:.4g} (from memory)")
    lines += ["refused:"] + [f"  {k}: {one_line(v)}" for k, v in c.refused.items()]
    lines += ["residuals after fit: " + ", ".join(f"{k} {v:+.1%}" for k, v in c.residuals.items())]
    if c.unmodelled_s:
        lines.append("not modelled (s): " + ", ".join(f"{k} {v:.1f}" for k, v in c.unmodelled_s.items()))
    lines += [f"note: {one_line(n)}" for n in c.notes]
    return "\n".join(lines)


def format_explanation(e: OomExplanation) -> str:
    lines = [
        one_line(e.summary),
        f"phase: {e.phase}; failed allocation: {_f(e.allocation_gib, 2)} GiB; matched component: {e.component} "
        f"({_f(e.matched_gib, 2)} GiB predicted)",
    ]
    if e.resident_gib:
        lines.append(
            f"resident in {e.phase} (predicted, GiB): " + ", ".join(f"{k} {v:.2f}" for k, v in e.resident_gib.items())
        )
    if e.event.allocated_by_pytorch_gib is not None:
        lines.append(
            f"message: {e.event.allocated_by_pytorch_gib:.2f} GiB allocated by PyTorch, "
            f"{_f(e.event.reserved_unallocated_gib, 2)} GiB reserved but unallocated, {_f(e.event.free_gib, 2)} free "
            f"of {_f(e.event.total_gib, 2)}"
        )
    lines.append("fixes (ranked):")
    for f in e.fixes:
        lines.append(f"  {f.rank}. {one_line(f.title)}: {' '.join(f.verl_overrides)}")
    lines += [f"note: {one_line(n)}" for n in e.notes]
    return "\n".join(lines)


def calibrate_main(args: argparse.Namespace, scenario_from_args: ScenarioFromArgs) -> int:
    scenario, _ = scenario_from_args(args)
    text = read_file_text(args.log, f"--log {args.log}", max_bytes=MAX_LOG_BYTES)
    measured = summarize(parse_log(text, f"--log {args.log}", fmt=args.log_format), args.warmup_steps)
    result = calibrate(scenario, measured)
    if args.save:
        profile = make_profile(scenario, result, log_name=args.log)
        save = Path(args.save)
        try:  # through the bounded writer: a plain file name, never through a symbolic link
            write_new_text_file(
                save.parent, save.name, profile_yaml(profile), f"--save {args.save}", replace=args.overwrite
            )
        except InputError as err:
            hint = "" if args.overwrite else " (add --overwrite to replace it)"
            raise InputError([p + (hint if p.endswith("already exists") else "") for p in err.problems]) from None
    if args.json:
        out(json.dumps(calibration_json(result), indent=2))
    else:
        out(format_calibration(result) + (f"\nprofile written: {args.save}" if args.save else ""))
    return 0


def explain_main(args: argparse.Namespace, scenario_from_args: ScenarioFromArgs) -> int:
    scenario, _ = scenario_from_args(args)
    what = f"--traceback {args.traceback}"
    result = explain_oom(scenario, read_file_text(args.traceback, what, max_bytes=MAX_TRACEBACK_BYTES), what)
    out(json.dumps(explanation_json(result), indent=2) if args.json else format_explanation(result))
    return 0


def run(args: argparse.Namespace) -> int:
    """``calibrate`` or ``explain-oom`` (``calculator.cli.main.COMMANDS``)."""
    from_args = scenario_from_args
    return calibrate_main(args, from_args) if args.command == "calibrate" else explain_main(args, from_args)
