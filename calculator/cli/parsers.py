"""The command line's argument parser (DESIGN.md 6.1, 6.4, 6.5). It imports nothing of the calculator but the
planner's defaults, so that building it costs no model import: each command imports what it runs
(``calculator.cli.main``)."""

from __future__ import annotations

import argparse
from typing import Any

from calculator.errors import InputError
from calculator.planning.defaults import DEFAULT_MARGIN, DEFAULT_MAX_GPUS


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # exit 2 with one line, no usage dump
        raise InputError(f"arguments: {message}")


def _add_scenario_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", nargs="?", help="scenario preset id or YAML path")
    p.add_argument("--model", help="model preset id or path to an HF config.json")
    p.add_argument("--gpu", help="GPU preset id")
    p.add_argument("--num-gpus", type=int, help="GPUs in the pool")
    p.add_argument("--gpus-per-node", type=int, help="GPUs per node")
    p.add_argument("--verl", action="append", default=[], metavar="FILE", help="launch script with verl overrides")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="native dotted field")
    p.add_argument("--json", action="store_true", help="print the JSON report")
    p.add_argument("--calibration", metavar="FILE|ID", help="apply a calibration profile (see calibrate --save)")


def _add_plan_parsers(sub: Any) -> None:
    """Register the ``plan`` and ``advise`` subcommands on the CLI's subparsers."""
    pp = sub.add_parser("plan", help="fewest GPUs and recommended configuration per GPU type")
    _add_scenario_options(pp)
    pp.add_argument("--gpus", metavar="ID,ID,...", help="GPU preset ids to plan for (default: all presets)")
    pp.add_argument("--max-gpus", type=int, default=DEFAULT_MAX_GPUS, help="largest GPU count searched")
    pp.add_argument("--margin", type=float, default=DEFAULT_MARGIN, help="safety margin, fraction of usable memory")
    pp.add_argument("--allow-lora", action="store_true", help="let the search switch to LoRA (rank 64)")
    pp.add_argument("--format", choices=["table", "csv", "markdown"], default="table", help="text output format")
    pp.add_argument(
        "--placement",
        choices=["colocated", "one_step_off", "fully_async"],
        default=None,
        help="also search the split of the recommended GPUs into rollout and trainer pools (verl's recipes); "
        "default: the scenario's placement.mode",
    )
    ap = sub.add_parser("advise", help="ranked changes that make a scenario fit (OOM advisor)")
    _add_scenario_options(ap)
    ap.add_argument("--margin", type=float, default=DEFAULT_MARGIN, help="safety margin, fraction of usable memory")
    ap.add_argument("--max-gpus", type=int, default=DEFAULT_MAX_GPUS, help="largest GPU count tried")
    tp = sub.add_parser("tradeoffs", help="memory / time sweep of the optimisation toggles and its Pareto front")
    _add_scenario_options(tp)


def _add_calibrate_parsers(sub: Any) -> None:
    """Register ``calibrate`` and ``explain-oom`` (issue 16; ``calculator.cli.calibrate``)."""
    cp = sub.add_parser("calibrate", help="compare a verl run's log with the prediction and fit efficiencies")
    _add_scenario_options(cp)
    cp.add_argument("--log", required=True, metavar="FILE", help="verl console log, metrics JSONL or wandb CSV")
    cp.add_argument("--log-format", choices=["console", "jsonl", "csv"], help="log format (default: detected)")
    cp.add_argument("--warmup-steps", type=int, help="first timed steps to drop (default 1 when >= 3 steps)")
    cp.add_argument("--save", metavar="FILE", help="write the fitted values as a calibration profile (YAML)")
    cp.add_argument("--overwrite", action="store_true", help="let --save replace an existing file")
    ep = sub.add_parser("explain-oom", help="explain a real out-of-memory error against the prediction")
    _add_scenario_options(ep)
    ep.add_argument("--traceback", required=True, metavar="FILE", help="the error text (PyTorch, vLLM, SGLang, Ray)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m calculator", description="rlplan: GPU memory and time for verl RL runs")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    est = sub.add_parser("estimate", help="memory per phase, peak, rollout capacity")
    _add_scenario_options(est)
    est.add_argument(
        "--check",
        action="store_true",
        help="launch guard: exit 1 when the run does not fit (peak over the usable memory or the rollout engine "
        "cannot start), 0 when it fits, 2 on bad input",
    )
    ep = sub.add_parser("export", help="the verl launch settings of a scenario (DESIGN.md 6.4)")
    _add_scenario_options(ep)
    ep.add_argument(
        "--format",
        choices=["command", "overrides", "yaml"],
        default="command",
        help="command: a launch command with '# rlplan:' lines (default); overrides: key=value lines, verl keys "
        "only; yaml: a nested verl config fragment",
    )
    _add_plan_parsers(sub)
    _add_calibrate_parsers(sub)
    pp = sub.add_parser("presets", help="list model, GPU or scenario presets")
    pp.add_argument("kind", nargs="?", choices=["models", "gpus", "scenarios"], default="models")
    pp.add_argument("--json", action="store_true")
    return parser
