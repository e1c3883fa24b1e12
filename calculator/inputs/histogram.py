"""``data.response_length_histogram``: measured response lengths as text, parsed with the bounds of
``calculator.inputs.limits`` (used by the scenario's validation and by ``calculator.timing.rollout``)."""

from __future__ import annotations

from typing import Any

from calculator.inputs.backends import MAX_COUNT
from calculator.inputs.limits import MAX_HISTOGRAM_BINS


def parse_histogram(text: Any, max_length: Any) -> list[tuple[int, float]]:
    """``data.response_length_histogram`` as (length, count) pairs; a ValueError names the field and the rule."""
    where = "data.response_length_histogram"
    if not isinstance(text, str):
        raise ValueError(f"{where} must be text 'length:count, length:count, ...', got {type(text).__name__}")
    top = max_length if isinstance(max_length, int) and not isinstance(max_length, bool) else MAX_COUNT
    parts = [p.strip() for p in text.replace(";", ",").split(",") if p.strip()]
    if not parts or len(parts) > MAX_HISTOGRAM_BINS:
        raise ValueError(f"{where} needs 1 to {MAX_HISTOGRAM_BINS} 'length:count' bins, got {len(parts)}")
    bins = []
    for p in parts:
        length_text, sep, count_text = p.partition(":")
        try:
            length, count = int(length_text), float(count_text)
        except ValueError:
            raise ValueError(f"{where}: bin {p[:40]!r} is not 'length:count' (integer length, number count)") from None
        if not sep or not 1 <= length <= top or not 0 <= count < 1e15:
            raise ValueError(f"{where}: bin {p[:40]!r} needs 1 <= length <= max_response_length ({top}), count >= 0")
        bins.append((length, count))
    if sum(c for _, c in bins) <= 0:
        raise ValueError(f"{where}: the counts add up to 0")
    return sorted(bins)


__all__ = ["parse_histogram"]
