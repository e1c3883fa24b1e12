"""The report's ``time`` section from per-phase timings, for a colocated step (``calculator.timing.step``) and a
split one (``calculator.timing.pools``)."""

from __future__ import annotations

from calculator.memory.context import Context
from calculator.report.models import TimeOut
from calculator.timing.flops import PhaseTime, peak_flops


def time_report(
    ctx: Context,
    phases_s: dict[str, float],
    *,
    num_gpus: int,
    update: PhaseTime | None,
    update_gpus: int,
    details: dict[str, str],
    terms_s: dict[str, dict[str, float]],
    term_formulas: dict[str, dict[str, str]] | None = None,
    step_s: float | None = None,
) -> TimeOut:
    """The report's ``time``: tokens per second count every trained sequence
    at its mean length over the step (per GPU: over ``num_gpus``); the update's MFU is its model FLOPs over its
    seconds x the GPU's peak x the ``update_gpus`` that run it. ``step_s`` defaults to the sum of the phases."""
    step = sum(phases_s.values()) if step_s is None else step_s
    tokens = ctx.r.num_sequences_trained * ctx.r.lengths.sequence
    mfu = (
        update.model_flops / (update.seconds * peak_flops(ctx.gpu) * update_gpus)
        if update is not None and update.seconds
        else 0.0
    )
    return TimeOut(
        step_s=step,
        phases_s=phases_s,
        tokens_per_s=tokens / step if step else 0.0,
        tokens_per_s_per_gpu=tokens / step / num_gpus if step else 0.0,
        update_mfu=mfu,
        details=details,
        terms_s=terms_s,
        term_formulas=term_formulas or {},
    )


__all__ = ["time_report"]
