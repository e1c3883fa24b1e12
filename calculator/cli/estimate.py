"""``python -m calculator estimate``: memory per phase, peak, rollout capacity, step time (text or JSON)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from calculator.cli.placement import placement_lines
from calculator.cli.scenario import scenario_from_args
from calculator.cli.terminal import one_line, out
from calculator.planning.placement_advice import placement_hint
from calculator.report.estimate import estimate
from calculator.report.models import Report
from calculator.units import format_count


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
    lines += ["", *verdict_lines(r), *rollout_lines(r), *host_lines(r), *placement_lines(r)]
    for w in r.warnings:
        lines.append(f"warning: {one_line(w)}")
    return "\n".join(lines)


def verdict_lines(r: Report) -> list[str]:
    """The verdict with its reasons (``peak.reasons``, one source for every view)."""
    pk = r.peak
    worst = f"worst case (max lengths) {pk.worst_case_gib_per_gpu:.2f} GiB in {pk.worst_case_phase}"
    if pk.fits:
        lines = [f"peak: {pk.gib_per_gpu:.2f} GiB in {pk.phase} -> fits (headroom {pk.headroom_gib:.2f} GiB); {worst}"]
        return lines + [f"at max lengths it does not fit: {one_line(x)}" for x in pk.worst_case_reasons]
    lines = [
        f"peak: {pk.gib_per_gpu:.2f} GiB in {pk.phase} (memory headroom {pk.headroom_gib:.2f} GiB) -> DOES NOT FIT "
        f"({len(pk.reasons)} reason{'s' if len(pk.reasons) != 1 else ''}); {worst}"
    ]
    return lines + [f"why: {one_line(x)}" for x in pk.reasons]


def rollout_lines(r: Report) -> list[str]:
    ro = r.rollout
    lines = [
        f"rollout: {ro.num_replicas} replicas, KV {ro.kv_cache_gib_per_gpu:.2f} GiB/GPU = "
        f"{ro.kv_cache_tokens_per_replica} tokens/replica, concurrency {ro.max_concurrent_sequences_per_replica}"
        f" vs {ro.sequences_per_replica} sequences per replica",
    ]
    if r.time is not None and r.time.step_s is None:
        lines.append("step: no step time, the step cannot run (the rollout engine cannot start; see why:)")
    elif r.time is not None:
        lines.append(f"step: {r.time.step_s:.1f} s, {r.time.tokens_per_s:,.0f} tokens/s")
        hint = placement_hint(r)
        if hint:
            lines.append(f"placement: {hint}")
    return lines


def host_lines(r: Report) -> list[str]:
    """Host RAM per node (DESIGN.md 4.9); a failure is also one of ``peak.reasons``."""
    h = r.host
    if h is None:
        return []
    verdict = "fits" if h.fits else "DOES NOT FIT"
    return [
        f"host RAM: {h.total_gib_per_node:.1f} GiB/node of {h.usable_ram_gib_per_node:.1f} usable "
        f"({h.ram_gib_per_node:g} GiB node) -> {verdict}"
    ]


def report_json(r: Report) -> dict[str, Any]:
    return r.model_dump(mode="json")


def run(args: argparse.Namespace) -> int:
    """Exit 0, or 1 with ``--check`` when the run does not fit; InputError propagates to ``cli.main``."""
    scenario, notes = scenario_from_args(args)
    report = estimate(scenario, extra_warnings=notes)
    if args.json:
        out(json.dumps(report_json(report), indent=2))
    else:
        out(format_report(report))
    return 1 if args.check and not report.peak.fits else 0
