"""Terminal lines for a split placement (the report's ``pools`` and ``placement``); none when colocated."""

from __future__ import annotations

from calculator.report.models import Report


def placement_lines(r: Report) -> list[str]:
    if r.pools is None:
        return []
    lines = []
    pl = r.placement
    if pl is not None:
        lines.append(
            f"placement: {pl.mode}, rollout {pl.rollout_num_gpus} GPUs + trainer {pl.trainer_num_gpus} GPUs "
            f"on {pl.num_nodes} node(s) ({pl.nodes_rule})"
        )
        lines.append(
            f"overlap: generation {pl.generation_s:.1f} s beside training {pl.training_s:.1f} s; "
            f"weight sync {pl.weight_sync_s:.2f} s, trainer waits {pl.wait_s:.1f} s"
        )
    for p in r.pools:
        verdict = "fits" if p.peak.fits else "DOES NOT FIT"
        lines.append(
            f"{p.name} pool: {p.num_gpus} GPUs, peak {p.peak.gib_per_gpu:.2f} GiB in {p.peak.phase} -> {verdict}"
        )
    return lines
