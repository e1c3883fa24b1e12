"""The first index where a monotone predicate holds, found by galloping from a guess (issue #18).

The planner's minimum GPU count is the first count of the ladder at which some searched configuration fits;
fitting is monotone along the ladder (``calculator.planning.search``: the most-saving configuration's memory
never grows with the count). :func:`first_true` finds that index with O(log d) probes, where d is the distance
from ``start`` to the answer (Bentley & Yao, "An almost optimal algorithm for unbounded searching", 1976):
exponential steps away from ``start`` until the predicate changes, then bisection. With ``start = 0`` it is the
exponential search from the bottom. For a monotone predicate the answer is the same from every start, and the
same as a linear scan (tests/planning/test_gallop.py); a good start only saves probes.
"""

from __future__ import annotations

from collections.abc import Callable


def _bisect(bad: int, good: int, ok: Callable[[int], bool]) -> int:
    """The first true index in ``(bad, good]``, ``ok(good)`` being true and ``bad`` false (or -1)."""
    while good - bad > 1:
        mid = (bad + good) // 2
        if ok(mid):
            good = mid
        else:
            bad = mid
    return good


def first_true(n: int, ok: Callable[[int], bool], start: int = 0) -> int | None:
    """The smallest ``i`` in ``range(n)`` with ``ok(i)``, for ``ok`` false then true along the range; None when
    ``ok`` is false everywhere. Probes ``start`` first (clipped to the range), then gallops down or up."""
    if n <= 0:
        return None
    start = min(max(start, 0), n - 1)
    if ok(start):
        good, bad, step = start, -1, 1
        while good > 0:
            i = max(0, good - step)
            if not ok(i):
                bad = i
                break
            good, step = i, step * 2
        return _bisect(bad, good, ok)
    bad, step = start, 1
    while bad < n - 1:
        i = min(n - 1, bad + step)
        if ok(i):
            return _bisect(bad, i, ok)
        bad, step = i, step * 2
    return None


__all__ = ["first_true"]
