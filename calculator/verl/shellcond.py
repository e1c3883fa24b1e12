"""``if`` / ``elif`` / ``else`` / ``fi`` in a launch script: which branch bash would run, when the test is resolvable.

verl's scripts pick their settings with simple tests on variables they set themselves
(``examples/gspo_trainer/run_qwen30b_gspo.sh``: ``backend=megatron`` then ``if [[ $backend == "megatron" ]]; then
CONFIG_NAME=ppo_megatron_trainer ... else CONFIG_NAME=ppo_trainer ... fi``). Reading every branch in order lets the
last one win, whatever the test says. :class:`Branches` follows the tests bash would evaluate: ``[ a = b ]``,
``[[ a == b ]]``, ``!=``, the integer comparisons ``-eq -ne -lt -le -gt -ge``, ``-n`` / ``-z``. A test it cannot
decide (an unresolved variable, a glob pattern, ``&&``, a file test) makes every branch of that ``if`` read, as before,
and a note says so. Only multi-line ``if`` blocks are followed (a one-line ``if ...; then ...; fi`` is a command line).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

_IF = re.compile(r"(?:el)?if\s+(.*?)\s*(?:;\s*then)?\s*$", re.S)
_KEYWORD_LINE = re.compile(r"\s*(else|fi|then)\s*;?\s*(#.*)?$", re.S)  # a trailing comment is allowed
_INT_OPS: dict[str, Callable[[int, int], bool]] = {
    "-eq": lambda a, b: a == b,
    "-ne": lambda a, b: a != b,
    "-lt": lambda a, b: a < b,
    "-le": lambda a, b: a <= b,
    "-gt": lambda a, b: a > b,
    "-ge": lambda a, b: a >= b,
}


def evaluate_test(words: list[str]) -> bool | None:
    """The value of ``[ ... ]`` / ``[[ ... ]]`` given its expanded words (brackets included); None when undecidable."""
    if len(words) < 2 or (words[0], words[-1]) not in (("[", "]"), ("[[", "]]")):
        return None
    body = words[1:-1]
    if any("\x00" in w for w in body):  # an unresolved part (a sentinel of calculator.verl.shellstate)
        return None
    if len(body) == 2 and body[0] in ("-n", "-z"):
        return (body[1] != "") == (body[0] == "-n")
    if len(body) != 3:
        return None
    a, op, b = body
    if op in ("=", "==", "!="):
        if words[0] == "[[" and any(c in b for c in "*?["):
            return None  # a glob pattern
        return (a == b) == (op != "!=")
    if op in _INT_OPS:
        try:
            return _INT_OPS[op](int(a), int(b))
        except ValueError:
            return None
    return None


@dataclass
class _Frame:
    outer: bool  # the lines around this if are read
    decided: bool  # every test so far was decidable
    taken: bool = False  # a branch's test was true
    active: bool = False  # the current branch is read


@dataclass
class Branches:
    """The ``if`` blocks open at the current line; ``active`` says whether bash would run it."""

    frames: list[_Frame] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return not self.frames or self.frames[-1].active

    def line(self, line: str, test: Callable[[str], bool | None]) -> bool:
        """Consume ``line`` when it is ``if`` / ``elif`` / ``else`` / ``fi`` / ``then`` (True); ``test`` evaluates
        a condition's text. False for any other line."""
        head = line.split(None, 1)[0] if line.split() else ""
        if head in ("if", "elif") and not re.search(r"\bfi\s*$", line):
            cond = _IF.match(line)
            value = test(cond.group(1)) if cond else None
            if value is None and self.active:
                self.notes.append(f"shell test not resolved ({line[:80]}); every branch of that if is read")
            if head == "if":
                self.frames.append(_Frame(outer=self.active, decided=value is not None))
                self._branch(value)
            elif self.frames and self.frames[-1].taken and self.frames[-1].decided:
                self.frames[-1].active = False  # an earlier test was true
            elif self.frames:
                self.frames[-1].decided &= value is not None
                self._branch(value)
            return True
        if _KEYWORD_LINE.match(line):
            if head == "else" and self.frames:
                f = self.frames[-1]
                f.active = f.outer and (not f.taken or not f.decided)
            elif head.startswith("fi") and self.frames:  # "fi" or "fi;"
                self.frames.pop()
            return True
        return False

    def _branch(self, value: bool | None) -> None:
        f = self.frames[-1]
        f.active = f.outer and (not f.decided or (value is True and not f.taken))
        f.taken |= value is True
