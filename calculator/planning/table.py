"""The plan as a flat table: one :class:`PlanTableRow` per GPU type (what a sortable table or a CSV
shows), sortable by any column, and how its cells are written."""

from __future__ import annotations

from typing import Any, Literal

from calculator.errors import InputError
from calculator.planning.rows import FrozenModel, Plan
from calculator.planning.settings import Setting, format_verl_value

PlanColumn = Literal[
    "gpu",
    "gpu_name",
    "min_gpus",
    "min_settings",
    "recommended_gpus",
    "recommended_settings",
    "peak_gib_per_gpu",
    "step_s",
    "tokens_per_s",
    "cost_per_step_usd",
    "cost_per_million_tokens_usd",
    "hourly_price_usd",
    "note",
]


class PlanTableRow(FrozenModel):
    """One row of the recommended-hardware table, flat (what a sortable table or a CSV shows)."""

    gpu: str
    gpu_name: str
    min_gpus: int | None
    min_settings: str
    recommended_gpus: int | None
    recommended_settings: str
    peak_gib_per_gpu: float | None
    step_s: float | None
    tokens_per_s: float | None
    cost_per_step_usd: float | None
    cost_per_million_tokens_usd: float | None
    hourly_price_usd: float
    note: str


def _settings_text(settings: dict[str, Setting]) -> str:
    return " ".join(f"{k}={format_verl_value(v)}" for k, v in settings.items()) or "(as configured)"


def plan_table(p: Plan, sort_by: PlanColumn | None = None, descending: bool = False) -> list[PlanTableRow]:
    """The plan as flat rows, in the plan's order or sorted by one column (empty values last)."""
    out = []
    for r in p.rows:
        rec = r.recommended
        out.append(
            PlanTableRow(
                gpu=r.gpu,
                gpu_name=r.gpu_name,
                min_gpus=r.min_gpus,
                min_settings=_settings_text(r.min_settings) if r.min_gpus is not None else "",
                recommended_gpus=rec.num_gpus if rec else None,
                recommended_settings=_settings_text(rec.settings) if rec else "",
                peak_gib_per_gpu=rec.peak_gib_per_gpu if rec else None,
                step_s=rec.step_s if rec else None,
                tokens_per_s=rec.tokens_per_s if rec else None,
                cost_per_step_usd=rec.cost_per_step if rec else None,
                cost_per_million_tokens_usd=rec.cost_per_million_tokens if rec else None,
                hourly_price_usd=r.hourly_price_usd,
                note=r.note,
            )
        )
    if sort_by is not None:
        if sort_by not in PlanTableRow.model_fields:
            raise InputError(f"sort_by: unknown column {sort_by!r} (columns: {', '.join(PlanTableRow.model_fields)})")
        present = [r for r in out if getattr(r, sort_by) is not None]
        missing = [r for r in out if getattr(r, sort_by) is None]
        present.sort(key=lambda r: getattr(r, sort_by), reverse=descending)
        out = present + missing
    return out


# Decimal places of the float columns in text output (other columns: 6).
DIGITS = {
    "peak_gib_per_gpu": 2,
    "step_s": 1,
    "tokens_per_s": 0,
    "cost_per_step_usd": 4,
    "cost_per_million_tokens_usd": 3,
    "hourly_price_usd": 2,
}


def format_cell(value: Any, digits: int) -> str:
    """A table cell as text: empty for no value, floats to ``digits`` places."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def md_escape(text: str) -> str:
    """Text safe inside one Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


__all__ = ["DIGITS", "PlanColumn", "PlanTableRow", "format_cell", "md_escape", "plan_table"]
