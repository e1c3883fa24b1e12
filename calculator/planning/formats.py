"""The plan table as text: CSV (one column per :class:`PlanTableRow` field) and GitHub Markdown."""

from __future__ import annotations

import csv
import io

from calculator.planning.rows import Plan
from calculator.planning.table import DIGITS, PlanTableRow, format_cell, md_escape, plan_table


def plan_to_csv(p: Plan) -> str:
    """The table as CSV (header = PlanTableRow field names; empty cell = no value)."""
    buf = io.StringIO()
    fields = list(PlanTableRow.model_fields)
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(fields)
    for row in plan_table(p):
        w.writerow([format_cell(getattr(row, f), DIGITS.get(f, 6)) for f in fields])
    return buf.getvalue()


_MD_HEADERS = {
    "gpu": "GPU",
    "min_gpus": "min GPUs",
    "min_settings": "settings at min",
    "recommended_gpus": "recommended GPUs",
    "recommended_settings": "recommended settings",
    "peak_gib_per_gpu": "peak GiB/GPU",
    "step_s": "step s",
    "tokens_per_s": "tokens/s",
    "cost_per_step_usd": "USD/step",
    "cost_per_million_tokens_usd": "USD/M tokens",
    "hourly_price_usd": "USD/GPU-h",
    "note": "note",
}


def plan_to_markdown(p: Plan) -> str:
    """The table as GitHub Markdown, with the scenario, margin and rules above it."""
    cols = list(_MD_HEADERS)
    lines = [
        f"**{p.model}** ({p.scenario}), margin {p.margin:.0%}, up to {p.max_gpus} GPUs"
        + ("" if p.has_step_time else " (no step-time model: costs not computed)"),
        "",
        "| " + " | ".join(_MD_HEADERS[c] for c in cols) + " |",
        "|" + "|".join("---:" if c in DIGITS or c.endswith("gpus") else "---" for c in cols) + "|",
    ]
    for row in plan_table(p):
        cells = []
        for c in cols:
            v = getattr(row, c)
            cells.append(md_escape(f"`{v}`" if c.endswith("settings") and v else format_cell(v, DIGITS.get(c, 6))))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Rules: {p.rules} Prices are editable examples."]
    return "\n".join(lines) + "\n"


__all__ = ["plan_to_csv", "plan_to_markdown"]
