"""Advisor hint (issue 17): when generation dominates a colocated step, would separate rollout and trainer pools
help? A separate function the advisor can call (``placement_hint(report)``).

The reasoning (docs/advance/one_step_off.md "Dynamic Resource Tuning"; fully_async.md "Background"):
- a split overlaps generation of step k+1 with training of step k, so it hides at most min(generation, training)
  per step: it pays when both sides are of comparable length;
- generation longer than training because of the long tail (the last wave's time past the mean length, decoded
  at a small batch): more rollout GPUs cannot shorten it ("High wait_prev_gen + long-tail sequences -> optimize
  stopping criteria (resource increase won't help)"); fully_async with ``partial_rollout`` trims it instead;
- generation longer because of volume (uniform lengths): more rollout GPUs do shorten it.
"""

from __future__ import annotations

from calculator.names import Phase
from calculator.report.models import Report

DOMINANT_SHARE = 0.5  # generation above this share of the step is "dominant"
TAIL_SHARE = 0.5  # the long tail above this share of generation is "tail-bound"


def placement_hint(report: Report) -> str | None:
    """One sentence for a colocated report whose generation dominates the step; None otherwise."""
    t = report.time
    if t is None or report.pools is not None or not t.step_s:
        return None
    gen = t.phases_s.get(Phase.ROLLOUT, 0.0)
    if gen <= DOMINANT_SHARE * t.step_s:
        return None
    train = t.step_s - gen
    tail = t.terms_s.get(Phase.ROLLOUT, {}).get("long_tail", 0.0)
    hidden = min(gen, train)
    head = f"generation is {gen / t.step_s:.0%} of the step ({gen:.0f} s of {t.step_s:.0f} s)"
    if tail > TAIL_SHARE * gen:
        return (
            f"{head}, {tail:.0f} s of it the long tail past the mean length: more rollout GPUs cannot shorten that "
            f"tail. A split (one_step_off) hides at most {hidden:.0f} s per step behind training; fully_async with "
            "partial_rollout also trims the tail (try `plan --placement fully_async`)."
        )
    return (
        f"{head}, mostly volume rather than a long tail: more rollout GPUs shorten it. A split (one_step_off) "
        f"overlaps it with training and hides at most {hidden:.0f} s per step; compare with "
        "`plan --placement one_step_off`."
    )


__all__ = ["placement_hint"]
