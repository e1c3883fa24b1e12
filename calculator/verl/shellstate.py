"""The state of reading one launch script: shell variables, unresolved parts (sentinels) and the work budget.

Split from :mod:`calculator.verl.shell` (which expands and reads the lines). A value that cannot be resolved
(a command substitution, a variable the script does not set) becomes a sentinel ``\\x00U<n>\\x00`` inside the
expanded text; ``_ShellState.reasons`` names what each one stands for. An assigned variable with an unresolved
part keeps that partial value (``_ShellState.partial``): a model path ``$HOME/models/Qwen3-8B`` still ends in its
model's name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from calculator.errors import InputError
from calculator.inputs.limits import MAX_EXPANDED_BYTES, MAX_EXPANSION_STEPS, MAX_VARIABLE_BYTES
from calculator.inputs.readers import size_text

SCRIPT = "verl launch script"  # how refusals name the input
MAX_REASON_CHARS = 200  # an unresolved construct is quoted this long in the import notes (display only)


class _Unresolved(Exception):
    pass


_SENTINEL_RE = re.compile("\x00U(\\d+)\x00")


@dataclass
class _Budget:
    """The work one script may cause; over a bound the script is refused (an InputError naming the line)."""

    steps: int = 0
    expanded_bytes: int = 0
    lineno: int = 0

    def refuse(self, why: str) -> InputError:
        return InputError(f"{SCRIPT}: refused at line {self.lineno}: {why}")

    def step(self) -> None:
        self.steps += 1
        if self.steps > MAX_EXPANSION_STEPS:
            raise self.refuse(f"more than {MAX_EXPANSION_STEPS:,} shell expansions")

    def grow(self, n: int) -> None:
        self.expanded_bytes += n
        if self.expanded_bytes > MAX_EXPANDED_BYTES:
            raise self.refuse(f"shell expansion would produce more than {size_text(MAX_EXPANDED_BYTES)}")


@dataclass
class _ShellState:
    env: dict[str, str | None] = field(default_factory=dict)  # None = assigned but not resolvable
    why: dict[str, str] = field(default_factory=dict)  # variable -> what made it unresolvable
    unresolved: list[str] = field(default_factory=list)
    budget: _Budget = field(default_factory=_Budget)
    partial: dict[str, str] = field(default_factory=dict)  # unresolvable variable -> its value with sentinels

    def mark(self, what: str) -> str:
        """A placeholder for an unresolvable part of a word; ``reasons`` recovers ``what``."""
        if len(what) > MAX_REASON_CHARS:
            what = what[: MAX_REASON_CHARS - 1] + "…"
        self.unresolved.append(what)
        return f"\x00U{len(self.unresolved) - 1}\x00"

    def reasons(self, word: str) -> list[str]:
        return [self.unresolved[int(i)] for i in _SENTINEL_RE.findall(word)]

    def set_raw(self, name: str, value: str) -> None:
        """``${VAR:=word}``: the value as expanded (unresolved parts stay sentinels inside it)."""
        if len(value) > MAX_VARIABLE_BYTES:
            raise self.budget.refuse(f"shell variable {name} would hold more than {size_text(MAX_VARIABLE_BYTES)}")
        self.env[name] = value

    def assign(self, name: str, value: str) -> None:
        """``NAME=value``: a value with an unresolved part makes the variable unresolvable (and says why)."""
        self.set_raw(name, value)
        lost = self.reasons(value)
        self.env[name] = None if lost else value
        self.partial.pop(name, None)
        if lost:
            self.why[name] = "; ".join(dict.fromkeys(r.split(" <- ")[-1] for r in lost))
            self.partial[name] = value

    def value(self, name: str) -> str:
        """``$NAME`` in a word: its value; for a variable with an unresolved part, that partial value with each
        unresolved part re-marked as coming through ``$NAME`` (the literal rest is kept: a model path
        ``$HOME/models/Qwen3-8B`` still ends in its name, a group of overrides keeps its resolved ones)."""
        if name not in self.partial:
            return _lookup(name, self)
        return _SENTINEL_RE.sub(
            lambda m: self.mark(f"${name} <- {self.unresolved[int(m.group(1))].split(' <- ')[-1]}"), self.partial[name]
        )


def _lookup(name: str, st: _ShellState) -> str:
    if name in st.env:
        if st.env[name] is not None:
            return st.env[name]  # type: ignore[return-value]
        raise _Unresolved(f"${name} <- {st.why.get(name, 'an unresolved value')}")
    if name.isdigit():  # ${1:-vllm}: the script is read as run without arguments, so the default applies
        raise _Unresolved(f"${name}: a positional argument (the script is read as run without arguments)")
    raise _Unresolved(f"${name}: not set in the script")
