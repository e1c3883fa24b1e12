"""Reading a bash launch script: logical lines, shell variables, ``$(( ... ))``, ``key=value`` tokens.

A verl launch is a bash script ending in ``python3 -m verl.trainer.main_ppo key=value ...``. Shell
variables are resolved from assignments in the same script (``VAR=v``, ``export VAR=v``,
``${VAR:-default}`` and the other ``${VAR<op>word}`` forms, integer ``$(( ... ))`` evaluated over a
whitelist of ``ast`` nodes, never ``eval``). Command substitutions, backticks, special parameters and
variables the script does not set cannot be resolved: they become sentinels, and the overrides that use
them are reported and ignored. A ``${...}`` that is not a shell parameter is a Hydra interpolation and is
kept for :mod:`calculator.verl.interpolate`. ``# rlplan: key=<json>`` comment lines (written by export)
are collected for the importer.
"""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from calculator.verl.keys import IGNORED_PREFIXES


class _Unresolved(Exception):
    pass


_SENTINEL_RE = re.compile("\x00U(\\d+)\x00")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN_PREFIXES = ("export", "local", "readonly", "declare", "typeset")


@dataclass
class _ShellState:
    env: dict[str, str | None] = field(default_factory=dict)  # None = assigned but not resolvable
    why: dict[str, str] = field(default_factory=dict)  # variable -> what made it unresolvable
    unresolved: list[str] = field(default_factory=list)

    def mark(self, what: str) -> str:
        """A placeholder for an unresolvable part of a word; ``reasons`` recovers ``what``."""
        self.unresolved.append(what)
        return f"\x00U{len(self.unresolved) - 1}\x00"

    def reasons(self, word: str) -> list[str]:
        return [self.unresolved[int(i)] for i in _SENTINEL_RE.findall(word)]


def _match_close(text: str, start: int, open_: str, close: str) -> int:
    """Index of the bracket closing the one at ``start`` (nesting-aware), or -1."""
    depth = 0
    i = start
    while i < len(text):
        if text.startswith(open_, i):
            depth += 1
            i += len(open_)
            continue
        if text.startswith(close, i):
            depth -= 1
            if depth == 0:
                return i
            i += len(close)
            continue
        i += 1
    return -1


def _lookup(name: str, st: _ShellState) -> str:
    if name in st.env:
        if st.env[name] is not None:
            return st.env[name]  # type: ignore[return-value]
        raise _Unresolved(f"${name} <- {st.why.get(name, 'an unresolved value')}")
    raise _Unresolved(f"${name}: not set in the script")


MAX_ARITH_CHARS = 256  # longer $(( )) expressions are reported as unresolved, not evaluated


def _arith(expr: str, st: _ShellState) -> str:
    """bash ``$(( ... ))`` with integers and + - * / % ** ( ) only; names are looked up in the script."""

    def sub(m: re.Match[str]) -> str:
        value = _lookup(m.group(1) or m.group(2) or m.group(3), st)
        if not re.fullmatch(r"\s*-?\d+\s*", value):
            raise _Unresolved(value)
        return value.strip()

    text = re.sub(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)|\b([A-Za-z_]\w*)\b", sub, expr)

    def bounded(v: int) -> int:
        # bash arithmetic is 64-bit signed: anything larger is refused, so a crafted expression cannot grow
        # an integer without bound (denial of service on a shared server).
        if not -(2**63) <= v < 2**63:
            raise _Unresolved(expr)
        return v

    def trunc_div(a: int, b: int) -> int:  # bash truncates toward zero; exact integer arithmetic
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b > 0) else -q

    def ev(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return bounded(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            v = ev(node.operand)
            return bounded(-v if isinstance(node.op, ast.USub) else v)
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Add):
                return bounded(a + b)
            if isinstance(node.op, ast.Sub):
                return bounded(a - b)
            if isinstance(node.op, ast.Mult):
                return bounded(a * b)
            if isinstance(node.op, ast.Div | ast.FloorDiv) and b:
                return bounded(trunc_div(a, b))
            if isinstance(node.op, ast.Mod) and b:
                return bounded(a - b * trunc_div(a, b))
            if isinstance(node.op, ast.Pow) and 0 <= b <= 64 and (abs(a) <= 1 or abs(a).bit_length() * b <= 64):
                return bounded(a**b)
        raise _Unresolved(expr)

    if len(text) > MAX_ARITH_CHARS:
        raise _Unresolved(expr)
    try:
        return str(ev(ast.parse(text.strip().replace("/", "//").replace("////", "//"), mode="eval")))
    except (SyntaxError, ValueError, RecursionError):
        raise _Unresolved(expr) from None


def _expand_param(inner: str, st: _ShellState) -> str | None:
    """``${...}`` contents: a shell parameter (expanded) or None when it is a Hydra interpolation."""
    m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-=+?])(.*))?", inner, re.S)
    if not m:
        return None
    name, op, word = m.group(1), m.group(2), m.group(3)
    if op is None:
        return _lookup(name, st)
    have = name in st.env and st.env[name] is not None and (st.env[name] != "" or not op.startswith(":"))
    if op.endswith("-") or op.endswith("="):
        if have:
            return st.env[name]  # type: ignore[return-value]
        value = _expand(word, st)
        if op.endswith("="):
            st.env[name] = value
        return value
    if op.endswith("+"):
        return _expand(word, st) if have else ""
    return _lookup(name, st)  # ${VAR:?msg}


def _expand(text: str, st: _ShellState, *, quote: bool = False) -> str:
    """Shell expansion of one logical line (quote-aware). Unresolvable parts become a sentinel.
    With ``quote``, expanded values are re-quoted so that shlex keeps each one a single word."""
    out: list[str] = []
    i, n = 0, len(text)
    in_double = False

    def emit(value: str) -> None:
        if not quote:
            out.append(value)
        elif in_double:
            out.append(re.sub(r'(["\\$`])', r"\\\1", value))
        else:
            out.append(shlex.quote(value) if value else "''")

    while i < n:
        c = text[i]
        if c == "'" and not in_double:
            j = text.find("'", i + 1)
            j = n - 1 if j < 0 else j
            out.append(text[i : j + 1])
            i = j + 1
            continue
        if c == "\\" and i + 1 < n:
            out.append(text[i : i + 2])
            i += 2
            continue
        if c == '"':
            in_double = not in_double
            out.append(c)
            i += 1
            continue
        if c == "`":
            j = text.find("`", i + 1)
            j = n - 1 if j < 0 else j
            body = text[i + 1 : j]
            if not body.lstrip().startswith("#"):
                out.append(st.mark(f"`{body}`"))
            i = j + 1
            continue
        if c == "$" and i + 1 < n:
            try:
                if text.startswith("$((", i):
                    j = _match_close(text, i + 1, "(", ")")
                    if j < 0:
                        raise _Unresolved(text[i:])
                    emit(_arith(text[i + 3 : j - 1], st))
                    i = j + 1
                    continue
                if text.startswith("$(", i):
                    j = _match_close(text, i + 1, "(", ")")
                    out.append(st.mark(text[i : (j + 1 if j > 0 else n)]))
                    i = (j + 1) if j > 0 else n
                    continue
                if text.startswith("${", i):
                    j = _match_close(text, i + 1, "{", "}")
                    if j < 0:
                        out.append(text[i:])
                        break
                    inner = text[i + 2 : j]
                    value = _expand_param(inner, st)
                    if value is None:
                        out.append(text[i : j + 1])  # Hydra interpolation: kept for the resolver
                    else:
                        emit(value)
                    i = j + 1
                    continue
                m = _NAME.match(text, i + 1)
                if m:
                    emit(_lookup(m.group(0), st))
                    i = m.end()
                    continue
                if text[i + 1] in "@*#?$!0123456789-":
                    out.append(st.mark(text[i : i + 2]))
                    i += 2
                    continue
            except _Unresolved as exc:
                out.append(st.mark(str(exc)))
                # skip the construct we failed on
                if text.startswith("${", i):
                    j = _match_close(text, i + 1, "{", "}")
                    i = (j + 1) if j > 0 else n
                elif text.startswith("$((", i):
                    j = _match_close(text, i + 1, "(", ")")
                    i = (j + 1) if j > 0 else n
                else:
                    m = _NAME.match(text, i + 1)
                    i = m.end() if m else i + 1
                continue
        out.append(c)
        i += 1
    return "".join(out)


def _logical_lines(text: str) -> list[str]:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return re.sub(r"\\\n", " ", text).split("\n")


_RLPLAN_LINE = re.compile(r"^\s*#\s*rlplan:\s*([A-Za-z_][\w.]*)\s*=\s*(.*?)\s*$")


@dataclass
class _Parsed:
    overrides: dict[str, str] = field(default_factory=dict)  # verl key (with +/~ prefix stripped) -> raw
    order: list[str] = field(default_factory=list)
    rlplan: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    engine: str | None = None


def _is_override_key(key: str) -> bool:
    bare = key.lstrip("+~")
    return (
        bool(bare) and ("." in bare or bare == "model_engine" or key != bare) and bool(re.fullmatch(r"[\w.@/-]+", bare))
    )


def _parse_script(text: str) -> _Parsed:
    st = _ShellState()
    p = _Parsed()
    for raw_line in _logical_lines(text):
        line = raw_line.strip()
        if not line:
            continue
        m = _RLPLAN_LINE.match(line)
        if m:
            p.rlplan.append((m.group(1), m.group(2)))
            continue
        if line.startswith("#"):
            continue
        expanded = _expand(line, st, quote=True)
        try:
            words = shlex.split(expanded, comments=True)
        except ValueError:
            words = expanded.split()
        if not words:
            continue
        body = words[1:] if words[0] in _ASSIGN_PREFIXES else words
        body = [w for w in body if not (w.startswith("-") and words[0] in _ASSIGN_PREFIXES)]
        assignments = [w for w in body if "=" in w and _NAME.fullmatch(w.split("=", 1)[0])]
        if body and len(assignments) == len(body):
            for w in assignments:
                name, _, value = w.partition("=")
                if name == "model_engine":
                    _add_override(p, name, value)
                lost = st.reasons(value)
                st.env[name] = None if lost else value
                if lost:
                    st.why[name] = "; ".join(dict.fromkeys(r.split(" <- ")[-1] for r in lost))
            continue
        for i, w in enumerate(words):
            if w.startswith("--config-name"):
                cfg = w.split("=", 1)[1] if "=" in w else (words[i + 1] if i + 1 < len(words) else "")
                if cfg.endswith("ppo_megatron_trainer") or cfg.endswith("ppo_megatron_trainer.yaml"):
                    _add_override(p, "model_engine", "megatron")
                continue
            if w.startswith("-") or "=" not in w:
                continue
            key, _, value = w.partition("=")
            if not _is_override_key(key):
                continue
            lost = st.reasons(w)
            if lost:
                bare = key.lstrip("+~")
                if not any(bare.startswith(prefix) for prefix in IGNORED_PREFIXES):  # not modelled anyway
                    names = "; ".join(dict.fromkeys(lost))
                    p.notes.append(f"verl override {bare}: value has an unresolved shell variable ({names}); ignored")
                continue
            if key.startswith("~"):
                p.notes.append(f"verl override {key}: deleting a key is not modelled; ignored")
                continue
            _add_override(p, key, value)
    return p


def _add_override(p: _Parsed, key: str, value: Any) -> None:
    bare = key.lstrip("+")
    if bare in p.overrides:
        p.order.remove(bare)
    p.overrides[bare] = value
    p.order.append(bare)


def tokenize_overrides(text: str) -> list[str]:
    """``key=value`` override tokens of a launch script after shell expansion (comments, the command
    words and shell variable assignments dropped; unresolved values left out)."""
    p = _parse_script(text)
    return [f"{k}={v}" for k, v in ((k, p.overrides[k]) for k in p.order)]
