"""``python -m calculator export`` (DESIGN.md 6.4): print a scenario's verl settings."""

from __future__ import annotations

import json
import shlex
from typing import Any

from calculator.cli.scenario import scenario_from_args
from calculator.cli.terminal import err, out
from calculator.loading import load_scenario
from calculator.verl.checks import check_config
from calculator.verl.export import export_scenario, export_yaml, format_overrides


def export_main(args: Any, scenario_from_args: Any) -> int:
    """``python -m calculator export``: print the settings; import notes, verl's config problems and the
    settings ``--format overrides`` cannot carry go to stderr."""
    scenario, notes = scenario_from_args(args)
    for note in notes:
        err(f"warning: {note}")
    for problem in check_config(scenario):
        err(f"verl {problem.severity}: {problem.message}")
    if args.format == "yaml":
        out(export_yaml(scenario), end="")
        return 0
    if args.format == "command":
        out(format_overrides(scenario, "command"), end="")
        return 0
    base = load_scenario(args.scenario) if args.scenario else None
    exp = export_scenario(scenario, base)
    out(format_overrides(exp, "overrides"), end="")
    if exp.rlplan:
        lost = " ".join("--set " + shlex.quote(f"{k}={json.dumps(v)}") for k, v in exp.rlplan)
        err(f"note: not verl settings, give them again with the same base scenario: {lost}")
    return 0


def run(args: Any) -> int:
    return export_main(args, scenario_from_args)
