"""Galloping search (calculator/planning/gallop.py): for any monotone predicate and any start it returns what a
linear scan returns, within the probe bound of an unbounded search from the start."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from calculator.planning.gallop import first_true


@given(st.integers(0, 300), st.data())
def test_first_true_is_the_linear_scan_from_any_start(n, data):
    answer = data.draw(st.integers(0, n), label="first true index (n = none)")
    start = data.draw(st.integers(-3, n + 3), label="start")
    probed: list[int] = []

    def ok(i: int) -> bool:
        assert 0 <= i < n, "probes stay in the range"
        probed.append(i)
        return i >= answer

    linear = next((i for i in range(n) if i >= answer), None)
    assert first_true(n, ok, start) == linear
    # Bentley-Yao: about 2 log2(distance) + 2 probes (gallop, then bisect the last step).
    distance = abs(min(max(start, 0), max(n - 1, 0)) - (answer if answer < n else n - 1)) + 1
    assert len(probed) <= 2 * math.ceil(math.log2(distance + 1)) + 3


def test_a_start_on_the_answer_costs_two_probes():
    """Start at the answer: it holds, one step down does not."""
    probed: list[int] = []
    assert first_true(100, lambda i: probed.append(i) or i >= 40, 40) == 40
    assert probed == [40, 39]


def test_from_the_bottom_it_is_the_exponential_search():
    """start = 0 probes 0, 1, 3, 7, ... then bisects (what the planner did before it had a guess)."""
    probed: list[int] = []
    assert first_true(64, lambda i: probed.append(i) or i >= 10, 0) == 10
    assert probed[:4] == [0, 1, 3, 7] and probed[4] == 15


def test_empty_and_all_false():
    assert first_true(0, lambda i: True) is None
    assert first_true(5, lambda i: False, 2) is None
