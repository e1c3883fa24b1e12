"""bash ``$(( ... ))``: integer arithmetic over a whitelist of ``ast`` nodes (never ``eval``), 64-bit like bash.

Only integers and ``+ - * / % **`` and parentheses; names are looked up among the script's variables by the
caller (``lookup``). Expressions longer than ``MAX_ARITH_CHARS`` and results outside 64-bit signed integers stay
unresolved, so a crafted expression cannot grow an integer without bound.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable

from calculator.inputs.limits import MAX_ARITH_CHARS


class ArithUnresolved(Exception):
    """The expression cannot be evaluated (the message is what to report)."""


_ARITH_NAME = re.compile(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)|\b([A-Za-z_]\w*)\b")
_INT_TEXT = re.compile(r"\s*-?\d+\s*")


class _ArithError(Exception):
    """An operation bash would refuse or that leaves 64-bit integers."""


def _int64(v: int) -> int:
    # bash arithmetic is 64-bit signed: anything larger is refused, so a crafted expression cannot grow
    # an integer without bound (denial of service on a shared server).
    if not -(2**63) <= v < 2**63:
        raise _ArithError
    return v


def _trunc_div(a: int, b: int) -> int:  # bash truncates toward zero; exact integer arithmetic
    if not b:
        raise _ArithError
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _mod(a: int, b: int) -> int:
    return a - b * _trunc_div(a, b)


def _pow(a: int, b: int) -> int:
    if 0 <= b <= 64 and (abs(a) <= 1 or abs(a).bit_length() * b <= 64):
        return a**b
    raise _ArithError


_BINOPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: _trunc_div,
    ast.FloorDiv: _trunc_div,
    ast.Mod: _mod,
    ast.Pow: _pow,
}


def _eval_int(node: ast.AST) -> int:
    """An ``ast`` of integers and + - * / % ** ( ) only; anything else raises _ArithError."""
    if isinstance(node, ast.Expression):
        return _eval_int(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return _int64(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        v = _eval_int(node.operand)
        return _int64(-v if isinstance(node.op, ast.USub) else v)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _int64(_BINOPS[type(node.op)](_eval_int(node.left), _eval_int(node.right)))
    raise _ArithError


def evaluate(expr: str, lookup: Callable[[str], str]) -> str:
    """bash ``$(( expr ))`` as decimal text; ``lookup(name)`` gives a variable's value (it may raise). Raises
    ArithUnresolved for anything that is not integer arithmetic within bounds."""
    if len(expr) > MAX_ARITH_CHARS:
        raise ArithUnresolved(expr)

    def sub(m: re.Match[str]) -> str:
        value = lookup(m.group(1) or m.group(2) or m.group(3))
        if not _INT_TEXT.fullmatch(value):
            raise ArithUnresolved(value)
        return value.strip()

    text = _ARITH_NAME.sub(sub, expr)
    if len(text) > MAX_ARITH_CHARS:
        raise ArithUnresolved(expr)
    try:
        return str(_eval_int(ast.parse(text.strip().replace("/", "//").replace("////", "//"), mode="eval")))
    except (SyntaxError, ValueError, RecursionError, _ArithError):
        raise ArithUnresolved(expr) from None
