"""Reading a bash launch script: logical lines, shell variables, ``$(( ... ))``, ``key=value`` tokens.

A verl launch is a bash script ending in ``python3 -m verl.trainer.main_ppo key=value ...``. Shell
variables are resolved from assignments in the same script (``VAR=v``, ``export VAR=v``,
``${VAR:-default}`` and the other ``${VAR<op>word}`` forms, ``${VAR//pattern/word}`` with a literal pattern,
integer ``$(( ... ))`` evaluated over a whitelist of ``ast`` nodes, never ``eval``). The script is read as run
without arguments: ``${1:-vllm}`` is its default, a bare ``$1`` is unresolved. As bash does, a quoted string
spanning lines is one line, and an unquoted expansion on a command line is split into words
(``python3 -m ... $ACTOR_CONFIG``). Command substitutions, backticks, special parameters and
variables the script does not set cannot be resolved: they become sentinels, and the overrides that use
them are reported and ignored. Nothing is ever executed. A ``${...}`` that is not a shell parameter is a
Hydra interpolation and is kept for :mod:`calculator.verl.interpolate`. ``# rlplan: key=<json>`` comment
lines (written by export) are collected for the importer.

Bounded (``calculator.inputs.limits``): the work is linear in the script and in what it expands to.
Brackets are matched once per line (a stack, not a scan per ``${``), words are split in one pass (not
``shlex``, whose token building is quadratic), and one :class:`_Budget` per script caps the bytes expansion
produces (``MAX_EXPANDED_BYTES``), each variable (``MAX_VARIABLE_BYTES``), the expansions
(``MAX_EXPANSION_STEPS``), their nesting (``MAX_SHELL_DEPTH``) and the distinct overrides
(``MAX_OVERRIDE_KEYS``). Over a bound, the whole script is refused with one :class:`InputError` line.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from calculator.errors import InputError
from calculator.inputs.limits import (
    MAX_OVERRIDE_KEYS,
    MAX_SHELL_DEPTH,
    MAX_VARIABLE_BYTES,
)
from calculator.inputs.readers import size_text
from calculator.verl.arith import ArithUnresolved, evaluate
from calculator.verl.keys import IGNORED_PREFIXES
from calculator.verl.placement_keys import ENTRY_KEY, ENTRY_MODULES
from calculator.verl.shellcond import Branches, evaluate_test
from calculator.verl.shellstate import _SENTINEL_RE, SCRIPT, _Budget, _lookup, _ShellState, _Unresolved
from calculator.verl.shellwords import _logical_lines, _pairs, remove_quotes, split_words

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PARAM = re.compile(r"([A-Za-z_][A-Za-z0-9_]*|[1-9])(?:(:?[-=+?])(.*))?", re.S)
_SUBST = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(//?)([^/]*)/(.*)", re.S)  # ${VAR//pattern/word}
_PLAIN = re.compile(r"[^'\"\\`$]+")  # characters the expander copies as they are
_ASSIGN_PREFIXES = ("export", "local", "readonly", "declare", "typeset")


def _arith(expr: str, st: _ShellState) -> str:
    """``$(( expr ))`` with the script's variables (:mod:`calculator.verl.arith`)."""
    try:
        return evaluate(expr, lambda name: _lookup(name, st))
    except ArithUnresolved as exc:
        raise _Unresolved(str(exc)) from None


# ----------------------------------------------------------------------------- expansion of one line


class _Expander:
    """Shell expansion of one logical line (quote-aware); unresolvable parts become sentinels.

    Works on windows ``[lo, hi)`` of the line, so that a ``${VAR:-word}`` expands its word in place; the
    line's brackets are matched once, lazily, and a match outside the window counts as unclosed."""

    def __init__(self, line: str, st: _ShellState, *, split: bool = False) -> None:
        self.line = line
        self.st = st
        self.split = split  # field splitting of unquoted expansions (a command line; not an assignment)
        self._brackets: dict[str, dict[int, int]] = {}

    def close(self, i: int, open_: str, hi: int) -> int:
        if open_ not in self._brackets:
            self._brackets[open_] = _pairs(self.line, open_, ")" if open_ == "(" else "}")
        j = self._brackets[open_].get(i, -1)
        return j if j < hi else -1

    def expand(self, lo: int, hi: int, *, quote: bool = False, depth: int = 0) -> str:
        """The window expanded. With ``quote``, expanded values are re-quoted so that the word splitter keeps
        each one a single word."""
        if depth > MAX_SHELL_DEPTH:
            raise self.st.budget.refuse(f"${{...}} nested more than {MAX_SHELL_DEPTH} levels")
        out: list[str] = []
        in_double = [False]
        i = lo
        while i < hi:
            i = self._one(i, hi, out, in_double, quote, depth)
        return "".join(out)

    def _one(self, i: int, hi: int, out: list[str], in_double: list[bool], quote: bool, depth: int) -> int:
        """Consume what starts at ``i``; return where the next thing starts."""
        line, grow = self.line, self.st.budget.grow
        m = _PLAIN.match(line, i, hi)
        if m:
            out.append(m.group())
            grow(m.end() - i)
            return m.end()
        c = line[i]
        if c == "'" and not in_double[0]:
            j = line.find("'", i + 1, hi)
            j = hi - 1 if j < 0 else j
            out.append(line[i : j + 1])
            grow(j + 1 - i)
            return j + 1
        if c == "\\" and i + 1 < hi:
            out.append(line[i : i + 2])
            grow(2)
            return i + 2
        if c == '"':
            in_double[0] = not in_double[0]
        elif c == "`":
            return self._backtick(i, hi, out)
        elif c == "$" and i + 1 < hi:
            nxt = self._dollar(i, hi, out, in_double[0], quote, depth)
            if nxt is not None:
                return nxt
        out.append(c)
        grow(1)
        return i + 1

    def _backtick(self, i: int, hi: int, out: list[str]) -> int:
        self.st.budget.step()
        j = self.line.find("`", i + 1, hi)
        j = hi - 1 if j < 0 else j
        body = self.line[i + 1 : j]
        if not body.lstrip().startswith("#"):  # `# group` markers of exported commands expand to nothing
            out.append(self._mark(f"`{body}`"))
        return j + 1

    def _mark(self, what: str) -> str:
        sentinel = self.st.mark(what)
        self.st.budget.grow(len(sentinel))
        return sentinel

    def _emit(self, value: str, out: list[str], in_double: bool, quote: bool) -> None:
        if not quote:
            piece = value
        elif in_double:
            piece = re.sub(r'(["\\$`])', r"\\\1", value)
        elif not self.split:  # the value of an assignment: never split
            piece = shlex.quote(value) if value else "''"
        else:  # unquoted in a command: bash splits the value into words at blanks (IFS), each kept as it is
            piece = " ".join(shlex.quote(w) for w in value.split())
            piece = (" " if value[:1].isspace() else "") + piece + (" " if value[-1:].isspace() and piece else "")
        self.st.budget.grow(len(piece))
        out.append(piece)

    def _dollar(self, i: int, hi: int, out: list[str], in_double: bool, quote: bool, depth: int) -> int | None:
        """A ``$`` construct at ``i``: the index after it, or None when the ``$`` is a plain character."""
        line = self.line
        try:
            if line.startswith("$((", i, hi):
                self.st.budget.step()
                j = self.close(i + 1, "(", hi)
                if j < 0:
                    raise _Unresolved(line[i:hi])
                self._emit(_arith(line[i + 3 : j - 1], self.st), out, in_double, quote)
                return j + 1
            if line.startswith("$(", i, hi):
                self.st.budget.step()
                j = self.close(i + 1, "(", hi)
                out.append(self._mark(line[i : (j + 1 if j > 0 else hi)]))
                return (j + 1) if j > 0 else hi
            if line.startswith("${", i, hi):
                return self._brace(i, hi, out, in_double, quote, depth)
            m = _NAME.match(line, i + 1, hi)
            if m:
                self.st.budget.step()
                self._emit(self.st.value(m.group(0)), out, in_double, quote)
                return m.end()
            if line[i + 1] in "@*#?$!0123456789-":
                out.append(self._mark(line[i : i + 2]))
                return i + 2
            return None
        except _Unresolved as exc:
            out.append(self._mark(str(exc)))
            return self._skip(i, hi)

    def _brace(self, i: int, hi: int, out: list[str], in_double: bool, quote: bool, depth: int) -> int:
        self.st.budget.step()
        j = self.close(i + 1, "{", hi)
        if j < 0:
            out.append(self.line[i:hi])
            self.st.budget.grow(hi - i)
            return hi
        value = self._param(i + 2, j, depth)
        if value is None:
            out.append(self.line[i : j + 1])  # Hydra interpolation: kept for the resolver
            self.st.budget.grow(j + 1 - i)
        else:
            self._emit(value, out, in_double, quote)
        return j + 1

    def _skip(self, i: int, hi: int) -> int:
        """After a construct that could not be resolved: the index after it."""
        if self.line.startswith("${", i, hi) or self.line.startswith("$((", i, hi):
            j = self.close(i + 1, "{" if self.line[i + 1] == "{" else "(", hi)
            return (j + 1) if j > 0 else hi
        m = _NAME.match(self.line, i + 1, hi)
        return m.end() if m else i + 1

    def _param(self, lo: int, hi: int, depth: int) -> str | None:
        """``${...}`` contents: a shell parameter (expanded) or None when it is a Hydra interpolation."""
        m = _PARAM.fullmatch(self.line, lo, hi)
        if not m:
            return self._substitute(lo, hi, depth)
        name, op = m.group(1), m.group(2)
        env = self.st.env
        if op is None:
            return self.st.value(name)
        have = name in env and env[name] is not None and (env[name] != "" or not op.startswith(":"))
        if op[-1] in "-=":
            if have:
                return env[name]
            value = remove_quotes(self.expand(m.start(3), hi, depth=depth + 1))
            if op.endswith("="):
                self.st.set_raw(name, value)
            return value
        if op.endswith("+"):
            return remove_quotes(self.expand(m.start(3), hi, depth=depth + 1)) if have else ""
        return _lookup(name, self.st)  # ${VAR:?msg}

    def _substitute(self, lo: int, hi: int, depth: int) -> str | None:
        """``${VAR//pattern/word}`` (every match) or ``${VAR/pattern/word}`` (the first) with a literal pattern;
        None when the ``${...}`` is not one (a Hydra interpolation). A glob pattern is not resolved."""
        m = _SUBST.fullmatch(self.line, lo, hi)
        if not m:
            return None
        name, op, pattern = m.group(1), m.group(2), m.group(3)
        if not pattern or any(c in pattern for c in "*?[\\$"):
            raise _Unresolved(f"${{{name}{op}{pattern}/...}}: a glob pattern is not resolved")
        value = _lookup(name, self.st)
        word = remove_quotes(self.expand(m.start(4), hi, depth=depth + 1))
        out = value.replace(pattern, word) if op == "//" else value.replace(pattern, word, 1)
        if len(out) > MAX_VARIABLE_BYTES:
            raise self.st.budget.refuse(f"${{{name}{op}...}} would hold more than {size_text(MAX_VARIABLE_BYTES)}")
        return out


_ASSIGNMENT_LINE = re.compile(r"\s*(?:(?:export|local|readonly|declare|typeset)\s+(?:-\w+\s+)*)?[A-Za-z_]\w*=")


def _expand(text: str, st: _ShellState, *, quote: bool = False) -> str:
    """Shell expansion of one logical line (quote-aware). Unresolvable parts become a sentinel. With
    ``quote``, an unquoted expansion on a command line is split into words (``python3 -m ... $ACTOR_CONFIG``),
    the value of an assignment is not (bash splits neither ``A=$B`` nor ``export A=$B``)."""
    split = quote and not _ASSIGNMENT_LINE.match(text)
    return _Expander(text, st, split=split).expand(0, len(text), quote=quote)


# ----------------------------------------------------------------------------- the script


_RLPLAN_LINE = re.compile(r"^\s*#\s*rlplan:\s*([A-Za-z_][\w.]*)\s*=\s*(.*?)\s*$")


@dataclass
class _Parsed:
    overrides: dict[str, str] = field(default_factory=dict)  # verl key (+/~ stripped) -> raw, in script order
    rlplan: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    engine: str | None = None

    @property
    def order(self) -> list[str]:
        return list(self.overrides)


def _is_override_key(key: str) -> bool:
    bare = key.lstrip("+~")
    return (
        bool(bare) and ("." in bare or bare == "model_engine" or key != bare) and bool(re.fullmatch(r"[\w.@/-]+", bare))
    )


def _assignments(words: list[str]) -> list[str] | None:
    """The ``NAME=value`` words when the line is only assignments (``export A=1 B=2``), else None."""
    prefixed = words[0] in _ASSIGN_PREFIXES
    body = words[1:] if prefixed else words
    body = [w for w in body if not (w.startswith("-") and prefixed)]
    assignments = [w for w in body if "=" in w and _NAME.fullmatch(w.split("=", 1)[0])]
    return assignments if body and len(assignments) == len(body) else None


def _assign_words(assignments: list[str], st: _ShellState, p: _Parsed) -> None:
    for w in assignments:
        name, _, value = w.partition("=")
        if name == "model_engine":
            _add_override(p, name, value, st)
        st.assign(name, value)


def _config_name(words: list[str], i: int, p: _Parsed, st: _ShellState) -> None:
    """``--config-name``: verl's ``ppo_megatron_trainer`` selects Megatron. A config of the user's own (verl's
    examples/sglang_multiturn/config/gsm8k_multiturn_megatron_grpo.yaml: ``defaults: [ppo_megatron_trainer]``) is
    not read: a note says so, and a name with "megatron" in it is read as Megatron."""
    w = words[i]
    cfg = w.split("=", 1)[1] if "=" in w else (words[i + 1] if i + 1 < len(words) else "")
    name = cfg.rsplit("/", 1)[-1].removesuffix(".yaml")
    if name == "ppo_megatron_trainer":
        _add_override(p, "model_engine", "megatron", st)
    elif name and name != "ppo_trainer" and not st.reasons(name):
        megatron = "megatron" in name.lower()
        if megatron:
            _add_override(p, "model_engine", "megatron", st)
        p.notes.append(
            f"--config-name={name}: a config of the script's own, not read (its defaults and settings are not "
            f"known here; only the command line's overrides are){'; read as Megatron from its name' if megatron else ''}"
        )


def _command_words(words: list[str], st: _ShellState, p: _Parsed) -> None:
    """The ``key=value`` overrides of a command line (``--config-name`` picks Megatron)."""
    for i, w in enumerate(words):
        if w == "-m" and i + 1 < len(words) and words[i + 1] in ENTRY_MODULES:  # which trainer (placement)
            _add_override(p, ENTRY_KEY, words[i + 1], st)
            continue
        if w.startswith("--config-name"):
            _config_name(words, i, p, st)
            continue
        if w.startswith("-") or "=" not in w:
            continue
        key, _, value = w.partition("=")
        if not _is_override_key(key):
            continue
        lost = st.reasons(w)
        if lost and _model_path_tail(key, value, st, p):
            continue
        if lost:
            bare = key.lstrip("+~")
            if not any(bare.startswith(prefix) for prefix in IGNORED_PREFIXES):  # not modelled anyway
                names = "; ".join(dict.fromkeys(lost))
                p.notes.append(f"verl override {bare}: value has an unresolved shell variable ({names}); ignored")
            continue
        if key.startswith("~"):
            p.notes.append(f"verl override {key}: deleting a key is not modelled; ignored")
            continue
        _add_override(p, key, value, st)


_MODEL_PATH_KEYS = frozenset(
    ("actor_rollout_ref.model.path", "critic.model.path", "reward_model.model.path", "reward.reward_model.model_path")
)


def _model_path_tail(key: str, value: str, st: _ShellState, p: _Parsed) -> bool:
    """A model path whose directory is unresolved (``$HOME/models/Qwen3-8B``) but whose last component is
    literal: read the model from that component (with a note). False when the name itself is unresolved."""
    bare = key.lstrip("+")
    tail = _SENTINEL_RE.split(value)[-1].rstrip("/")
    if bare not in _MODEL_PATH_KEYS or "/" not in tail or not tail.rsplit("/", 1)[1]:
        return False
    names = "; ".join(dict.fromkeys(st.reasons(value)))
    p.notes.append(
        f"verl override {bare}: the directory has an unresolved shell variable ({names}); the model is read from "
        f"the path's last component {tail.rsplit('/', 1)[1]!r}"
    )
    _add_override(p, key, tail, st)
    return True


def _words_of(line: str, st: _ShellState) -> list[str]:
    expanded = _expand(line, st, quote=True)
    try:
        return split_words(expanded)
    except ValueError:
        return expanded.split()


def _parse_script(text: str) -> _Parsed:
    st = _ShellState()
    p = _Parsed()
    branches = Branches()
    if "\x00" in text:
        raise InputError(f"{SCRIPT}: refused: contains a NUL byte (binary data, not a script)")
    for lineno, raw_line in enumerate(_logical_lines(text), 1):
        st.budget.lineno = lineno
        line = raw_line.strip()
        if not line:
            continue
        m = _RLPLAN_LINE.match(line)
        if m:
            p.rlplan.append((m.group(1), m.group(2)))
            continue
        if line.startswith("#"):
            continue
        if branches.line(line, lambda cond: evaluate_test(_words_of(cond, st))) or not branches.active:
            continue
        words = _words_of(line, st)
        if not words:
            continue
        assignments = _assignments(words)
        if assignments is not None:
            _assign_words(assignments, st, p)
        else:
            _command_words(words, st, p)
    p.notes += branches.notes
    return p


def _add_override(p: _Parsed, key: str, value: Any, st: _ShellState | None = None) -> None:
    bare = key.lstrip("+")
    p.overrides.pop(bare, None)  # a later setting wins and moves to the end (dict order: O(1), not list.remove)
    p.overrides[bare] = value
    if len(p.overrides) > MAX_OVERRIDE_KEYS:
        raise (st.budget if st else _Budget()).refuse(f"more than {MAX_OVERRIDE_KEYS:,} distinct overrides")


def tokenize_overrides(text: str) -> list[str]:
    """``key=value`` override tokens of a launch script after shell expansion (comments, the command
    words and shell variable assignments dropped; unresolved values left out)."""
    p = _parse_script(text)
    return [f"{k}={v}" for k, v in p.overrides.items()]
