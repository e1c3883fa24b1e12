"""Command line (DESIGN.md 6.1): ``estimate`` and ``presets``; exit 2 with one line per input problem."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from calculator.cli.export import export_main
from calculator.cli.plan import add_plan_parsers, plan_main
from calculator.cli.terminal import err, one_line, out
from calculator.errors import InputError
from calculator.inputs.overrides import parse_value
from calculator.inputs.presets import gpu_presets, model_presets, preset_problems, read_mapping_file, scenario_presets
from calculator.loading import load_scenario_with_warnings
from calculator.model.sizes import approximate_model, parse_size
from calculator.report.estimate import estimate
from calculator.report.models import Report
from calculator.units import format_count
from calculator.verl import native_field_exists, read_verl_file, verl_to_native


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
    add_plan_parsers(sub, _add_scenario_options)
    pp = sub.add_parser("presets", help="list model, GPU or scenario presets")
    pp.add_argument("kind", nargs="?", choices=["models", "gpus", "scenarios"], default="models")
    pp.add_argument("--json", action="store_true")
    return parser


def _model_overrides(model: str) -> tuple[dict[str, Any], list[str]]:
    """``--model``: a preset id, a config.json path, or a size (``70B``, ``30B-A3B``) approximated from the closest
    model family, as the dashboard does (``calculator.model.sizes``)."""
    if model.endswith(".json") or Path(model).is_file():
        return {"model.config": read_mapping_file(model, f"--model {model}")}, []
    if model in model_presets(strict=False):
        return {"model.path": model, "model.config": None}, []
    try:
        spec = parse_size(model)
    except ValueError:
        return {"model.path": model, "model.config": None}, []  # unknown id: load_scenario names the presets
    approx = approximate_model(spec)
    note = (
        f"--model {model}: approximated as {approx.base_name} with {approx.num_layers} layers "
        f"({approx.total_params / 1e9:.1f}B total, {approx.active_params / 1e9:.1f}B active, "
        f"{approx.error_fraction:.1%} from the size)"
    )
    return {"model.config": approx.config}, [note]


def _set_items(items: list[str]) -> tuple[dict[str, Any], list[str]]:
    """``--set KEY=VALUE``: a native dotted field (value typed by the field), or a verl key
    (``actor_rollout_ref.rollout.n=8``) passed to the verl importer as an override."""
    native: dict[str, Any] = {}
    verl: list[str] = []
    for item in items:
        if "=" not in item:
            raise InputError(f"--set {item!r}: expected KEY=VALUE")
        key, _, value = item.partition("=")
        key = key.strip()
        if native_field_exists(key):
            native[key] = parse_value(value, key)
        elif verl_to_native(key) is not None:
            verl.append(f"{key}={value}")
        else:
            raise InputError(
                f"--set {one_line(key)}: not a scenario field (e.g. rollout.n) nor a verl key rlplan models "
                "(e.g. actor_rollout_ref.rollout.n)"
            )
    return native, verl


def scenario_from_args(args: argparse.Namespace) -> tuple[Any, list[str]]:
    overrides, notes = _model_overrides(args.model) if args.model else ({}, [])
    if args.gpu:
        overrides["hardware.gpu"] = args.gpu
    if args.num_gpus is not None:
        overrides["hardware.num_gpus"] = args.num_gpus
    if args.gpus_per_node is not None:
        overrides["hardware.gpus_per_node"] = args.gpus_per_node
    native, verl_set = _set_items(args.set)
    overrides.update(native)
    verl_text = [read_verl_file(f) for f in args.verl] + (["\n".join(verl_set)] if verl_set else [])
    scenario, load_notes = load_scenario_with_warnings(args.scenario, overrides, verl_text or None)
    return scenario, [f"preset skipped: {p}" for p in preset_problems()] + notes + load_notes


def format_report(r: Report) -> str:
    lines = [
        f"{one_line(r.model.name)}: {format_count(r.model.total_params)} params ({format_count(r.model.active_params)} active), "
        f"KV {r.model.kv_cache_bytes_per_token} B/token",
        f"{r.hardware.num_gpus} x {one_line(r.hardware.gpu_name)} ({r.hardware.usable_memory_gib} GiB usable), "
        f"roles: {', '.join(r.roles)}",
        "",
        f"{'phase':<15} {'GiB/GPU':>8}  largest components",
    ]
    for p in r.phases:
        top = sorted(p.components.items(), key=lambda kv: -kv[1])[:4]
        lines.append(f"{p.name:<15} {p.total_gib:>8.2f}  " + ", ".join(f"{k} {v:.2f}" for k, v in top))
    pk = r.peak
    verdict = "fits" if pk.fits else "DOES NOT FIT"
    lines += [
        "",
        f"peak: {pk.gib_per_gpu:.2f} GiB in {pk.phase} -> {verdict} (headroom {pk.headroom_gib:.2f} GiB); "
        f"worst case (max lengths) {pk.worst_case_gib_per_gpu:.2f} GiB in {pk.worst_case_phase}",
        f"rollout: {r.rollout.num_replicas} replicas, KV {r.rollout.kv_cache_gib_per_gpu:.2f} GiB/GPU = "
        f"{r.rollout.kv_cache_tokens_per_replica} tokens/replica, concurrency {r.rollout.max_concurrent_sequences_per_replica}"
        f" vs {r.rollout.sequences_per_replica} sequences per replica",
    ]
    if r.time is not None:
        lines.append(f"step: {r.time.step_s:.1f} s, {r.time.tokens_per_s:,.0f} tokens/s")
    for w in r.warnings:
        lines.append(f"warning: {one_line(w)}")
    return "\n".join(lines)


def report_json(r: Report) -> dict[str, Any]:
    return r.model_dump(mode="json")


def _presets(kind: str, as_json: bool) -> str:
    if kind == "models":
        rows = [
            {
                "id": m.id,
                "name": m.name,
                "family": m.family,
                "total_params": m.architecture.total_params(),
                "active_params": m.architecture.active_params(),
                "hf_repo": m.hf_repo,
            }
            for m in model_presets().values()
        ]
    elif kind == "gpus":
        rows = [
            {
                "id": g.id,
                "name": g.name,
                "usable_memory_gib": g.usable_memory_gib,
                "memory_gb": g.memory_gb,
                "bf16_dense_tflops": g.training_tflops,
                "hbm_bandwidth_gbps": g.hbm_bandwidth_gb_per_s,  # contract key (DESIGN.md 6.1): GB/s
                "hourly_price_usd": g.hourly_price_usd,
            }
            for g in gpu_presets().values()
        ]
    else:
        rows = [
            {"id": k, "name": v.get("name", k), "description": v.get("description", "")}
            for k, v in scenario_presets().items()
        ]
    rows.sort(key=lambda r: r["id"])
    if as_json:
        return json.dumps(rows, indent=2)
    return "\n".join(f"{one_line(r['id']):<32} {one_line(r['name'])}" for r in rows)


def _silence_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so that the interpreter's final flush stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (captured by a test)
        pass


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.command == "presets":
            out(_presets(args.kind, args.json))
            return 0
        if args.command == "export":
            return export_main(args, scenario_from_args)
        if args.command in ("plan", "advise", "tradeoffs"):
            return plan_main(args, scenario_from_args)
        scenario, notes = scenario_from_args(args)
        report = estimate(scenario, extra_warnings=notes)
        if args.json:
            out(json.dumps(report_json(report), indent=2))
        else:
            out(format_report(report))
        return 1 if args.check and not report.peak.fits else 0
    except InputError as error:
        for problem in error.problems:
            err(f"error: {problem}")
        return 2
    except RecursionError:
        err("error: input nested too deeply")
        return 2
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly, as other CLI tools do
        _silence_stdout()
        return 1
