"""Hydra values and interpolations: ``${key}``, relative ``${.key}`` and ``${oc.select:key,default}``.

verl's config is OmegaConf/Hydra: a value may interpolate another key (verl 0.9.1
``_generated_ppo_trainer.yaml``: ``ref.log_prob_use_dynamic_bsz:
${oc.select:actor_rollout_ref.actor.use_dynamic_bsz,false}``). ``_Resolver`` resolves them against a flat
``{dotted key: value}`` config (the imported settings over verl's defaults). ``oc.env`` and other
resolvers, ``???`` (required) values, unknown keys and cycles raise ``_Unresolved``; the importer reports
the key and ignores it. Command-line values are parsed in Hydra's override grammar (close to YAML flow).

Bounded (``calculator.inputs.limits``): one :class:`_Budget` per resolver counts the resolutions
(``MAX_INTERPOLATION_STEPS``), the characters scanned and built (``MAX_INTERPOLATED_BYTES``: ``a: ${b}${b}``,
``b: ${c}${c}`` ... doubles on each level) and the depth (``MAX_INTERPOLATION_DEPTH``). Over a bound the
resolution fails like any unresolvable one, the budget stays spent (every later resolution fails at once),
and the importer refuses the whole input (``_Resolver.refusal``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from calculator.inputs.limits import MAX_INTERPOLATED_BYTES, MAX_INTERPOLATION_DEPTH, MAX_INTERPOLATION_STEPS
from calculator.inputs.overrides import parse_value
from calculator.inputs.readers import size_text
from calculator.verl.defaults import _MISSING
from calculator.verl.shell import _pairs, _Unresolved


def _parse_scalar(text: str) -> Any:
    return parse_value(text)


def _hydra_parse(raw: Any) -> Any:
    """A value from the command line in Hydra's grammar (close to YAML flow); interpolations kept."""
    if not isinstance(raw, str):
        return raw
    text = raw.strip()
    if "${" in text:
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            return text[1:-1]
        return text
    if text == "":
        return ""
    return _parse_scalar(text)


def _split_top(text: str, sep: str = ",") -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


class _OverBudget(_Unresolved):
    """A resolution stopped by the budget (handled like an unresolvable value, and remembered)."""


@dataclass
class _Budget:
    steps: int = 0
    scanned_bytes: int = 0
    exceeded: str = ""  # the first bound reached; once set, every later resolution fails at once

    def _over(self, why: str) -> _OverBudget:
        self.exceeded = self.exceeded or why
        return _OverBudget(self.exceeded)

    def step(self, depth: int) -> None:
        self.steps += 1
        if self.exceeded:
            raise _OverBudget(self.exceeded)
        if self.steps > MAX_INTERPOLATION_STEPS:
            raise self._over(f"more than {MAX_INTERPOLATION_STEPS:,} interpolations")
        if depth > MAX_INTERPOLATION_DEPTH:
            raise self._over(f"interpolations nested more than {MAX_INTERPOLATION_DEPTH} levels")

    def scan(self, n: int) -> None:
        self.scanned_bytes += n
        if self.scanned_bytes > MAX_INTERPOLATED_BYTES:
            raise self._over(f"interpolation would scan or build more than {size_text(MAX_INTERPOLATED_BYTES)}")


class _Resolver:
    """Resolves Hydra interpolations against a flat ``{dotted key: value}`` config, within a budget."""

    def __init__(self, flat: dict[str, Any]):
        self.flat = flat
        self.budget = _Budget()

    @property
    def refusal(self) -> str:
        """Why the budget stopped resolution ('' when it never did)."""
        return self.budget.exceeded

    def _abs(self, ref: str, at: str) -> str:
        if not ref.startswith("."):
            return ref
        dots = len(ref) - len(ref.lstrip("."))
        parent = at.split(".")[:-dots]
        return ".".join([*parent, ref[dots:]])

    def value(self, key: str, stack: tuple[str, ...] = ()) -> Any:
        if key in stack:
            raise _Unresolved(f"interpolation cycle at {key}")
        if key not in self.flat:
            raise _Unresolved(f"{key} is not a known verl key")
        v = self.flat[key]
        if v == _MISSING:
            raise _Unresolved(f"{key} is ??? (required, not set)")
        return self.resolve(v, key, (*stack, key))

    def resolve(self, v: Any, at: str, stack: tuple[str, ...] = (), depth: int = 0) -> Any:
        if not isinstance(v, str) or "${" not in v:
            return v
        self.budget.step(len(stack) + depth)
        text = v.strip()
        self.budget.scan(len(text))
        pairs = _pairs(text, "{", "}")  # brackets matched once per text: linear, not a scan per ${
        start = text.find("${")
        end = pairs.get(start + 1, -1)
        if start == 0 and end == len(text) - 1:
            return self._interp(text[2:-1], at, stack, depth)
        out, i = [], 0
        while True:
            start = text.find("${", i)
            if start < 0:
                out.append(text[i:])
                break
            end = pairs.get(start + 1, -1)
            if end < 0:
                raise _Unresolved(text)
            out.append(text[i:start])
            piece = str(self._interp(text[start + 2 : end], at, stack, depth))
            self.budget.scan(len(piece))
            out.append(piece)
            i = end + 1
        return "".join(out)

    def _interp(self, inner: str, at: str, stack: tuple[str, ...], depth: int) -> Any:
        self.budget.step(len(stack) + depth)
        inner = inner.strip()
        if inner.startswith("oc.select:"):
            args = _split_top(inner[len("oc.select:") :])
            ref = self._abs(args[0].strip(), at)
            try:
                return self.value(ref, stack)
            except _Unresolved:
                if len(args) < 2:
                    return None
                return self.resolve(_hydra_parse(",".join(args[1:]).strip()), at, stack, depth + 1)
        if inner.startswith("oc.env:"):
            raise _Unresolved(f"${{{inner}}} reads the environment at launch")
        if re.match(r"^[\w.]+:", inner):
            raise _Unresolved(f"${{{inner}}}: resolver not modelled")
        return self.value(self._abs(inner, at), stack)
