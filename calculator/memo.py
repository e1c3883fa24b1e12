"""Remember a pure function's result for the last argument it saw, by identity (issue #18).

One estimate asks for the same derived value of the same frozen object several times (verl's config checks
re-derive each role's trainer plan; the planner builds a candidate's context to test its KV cache, then
estimates the same candidate). ``last_by_identity`` keeps one (argument, result) pair and answers from it when
called again with the very same object (``is``, not ``==``): no hashing, no growth, and a new object (even an
equal one) is always computed afresh. Only for pure functions of one frozen argument whose result is itself
frozen (it is shared between the callers). The pair is one tuple, replaced whole, so concurrent callers
(Streamlit sessions run in threads) see either the old or the new pair, never half of one.

A remembered result may read presets (a scenario names its GPU and model by id): ``forget_all`` drops every
remembered pair, and ``calculator.inputs.presets.clear_cache`` calls it, so a scenario estimated again after the
presets were reloaded reads the new ones.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

A = TypeVar("A")
R = TypeVar("R")

_NOTHING = object()
_ALL: list[list[tuple[object, object]]] = []  # every memo's one-pair slot, for forget_all


def last_by_identity(fn: Callable[[A], R]) -> Callable[[A], R]:
    """``fn`` with its last (argument, result) pair remembered by the argument's identity."""
    last: list[tuple[object, object]] = [(_NOTHING, None)]
    _ALL.append(last)

    @functools.wraps(fn)
    def remembered(arg: A) -> R:
        seen, out = last[0]
        if seen is arg:
            return out  # type: ignore[return-value]
        result = fn(arg)
        last[0] = (arg, result)
        return result

    return remembered


def forget_all() -> None:
    """Drop every memo's remembered pair (the presets they may have read changed)."""
    for last in _ALL:
        last[0] = (_NOTHING, None)


__all__ = ["forget_all", "last_by_identity"]
