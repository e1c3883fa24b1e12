"""calculator.memo: the last result by identity, never by equality."""

from __future__ import annotations

from calculator import load_scenario
from calculator.memo import last_by_identity
from calculator.report.estimate import build_context
from calculator.resolve.resolved import resolve


def test_same_object_answers_from_memory_and_new_object_recomputes():
    calls: list[object] = []

    @last_by_identity
    def f(x: list[int]) -> int:
        calls.append(x)
        return sum(x)

    a, b = [1, 2], [1, 2]  # equal, not identical
    assert f(a) == 3 and f(a) == 3
    assert len(calls) == 1  # the second call with the same object did not recompute
    assert f(b) == 3
    assert len(calls) == 2  # an equal but new object is computed afresh
    assert f(a) == 3
    assert len(calls) == 3  # only the last pair is kept
    assert f.__name__ == "f"


def test_resolve_and_context_are_shared_only_for_the_same_scenario():
    s = load_scenario("qwen2.5-7b-grpo-8xh100")
    assert resolve(s) is resolve(s)
    assert build_context(s) is build_context(s)
    copy = s.model_copy()
    assert resolve(copy) is not resolve(s)
    assert resolve(copy) == resolve(s)
