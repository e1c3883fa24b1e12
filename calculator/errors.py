"""The one error type the calculator raises for bad input, with one message per problem."""

from __future__ import annotations

import reprlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the type only: `python -m calculator --help` and argument errors never import pydantic
    from pydantic import ValidationError

# Offending values are echoed abbreviated: an input can be any JSON or YAML value, however large.
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxdict, _REPR.maxlist, _REPR.maxtuple = 2, 4, 4, 4
_REPR.maxstring, _REPR.maxother, _REPR.maxlong = 120, 120, 40


class InputError(ValueError):
    """Invalid user input. ``problems`` holds one line per problem, each naming the field."""

    def __init__(self, problems: list[str] | str):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("; ".join(self.problems))


def _loc(loc: tuple) -> str:
    return ".".join(str(p) for p in loc if not isinstance(p, int) or True)


def from_validation_error(err: ValidationError, prefix: str = "") -> InputError:
    """Turn pydantic's error into one line per problem: ``field.path: message (got value)``."""
    problems = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e.get("loc", ()))
        field = f"{prefix}{loc}" if loc else prefix.rstrip(".") or "scenario"
        msg = e.get("msg", "invalid")
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        if e.get("type") == "extra_forbidden":
            msg = "unknown field"
        elif e.get("type") == "literal_error":
            msg = msg.replace("Input should be", "allowed values are")
        got = e.get("input")
        if e.get("type") not in ("extra_forbidden", "value_error", "missing") and not isinstance(got, dict):
            msg += f" (got {_REPR.repr(got)})"
        problems.append(f"{field}: {msg}")
    return InputError(problems)
