"""What the dashboard knows about the scenario's fields: kinds, bounds, help text, flattening.

Pure (no streamlit): everything here is read from ``Scenario.model_fields`` (and the nested
sections' ``model_fields``), so a field added to the calculator shows up in the app with its
``description`` as help text and its ``Field(ge=..., le=...)`` limits as widget bounds.
"""

from __future__ import annotations

import functools
import json
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

import annotated_types
from pydantic import BaseModel

from calculator import InputError, Scenario, read_json_text, read_yaml_text

Kind = Literal["bool", "int", "float", "choice", "str", "dict"]

# Fields the sidebar never shows as plain widgets (the model is chosen by its own control, the
# algorithm by a recipe picker; name and description are labels).
SPECIAL_FIELDS = ("name", "description", "model.path", "model.config", "algorithm.adv_estimator")
MAX_SCALAR_CHARS = 100  # the text of one URL / override value of a number, boolean or null field


@dataclass(frozen=True)
class FieldSpec:
    """One leaf field of the scenario: ``path`` is the dotted name (``actor.fsdp_config.param_offload``)."""

    path: str
    kind: Kind
    nullable: bool
    default: Any
    description: str
    choices: tuple[Any, ...] = ()
    min_value: float | None = None
    max_value: float | None = None
    exclusive_min: bool = False

    @property
    def leaf(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def section(self) -> str:
        return self.path.split(".", 1)[0] if "." in self.path else ""


def _unwrap_optional(ann: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(ann)) == 2:
            return args[0], True
    return ann, False


def _spec(path: str, info: Any) -> FieldSpec:
    ann, nullable = _unwrap_optional(info.annotation)
    choices: tuple[Any, ...] = ()
    if typing.get_origin(ann) is Literal:
        kind: Kind = "choice"
        choices = typing.get_args(ann)
    elif ann is bool:
        kind = "bool"
    elif ann is int:
        kind = "int"
    elif ann is float:
        kind = "float"
    elif ann is str:
        kind = "str"
    else:
        kind = "dict"
    lo = hi = None
    exclusive = False
    for meta in info.metadata:
        if isinstance(meta, annotated_types.Ge):
            lo = meta.ge
        elif isinstance(meta, annotated_types.Gt):
            lo, exclusive = meta.gt, True
        elif isinstance(meta, annotated_types.Le):
            hi = meta.le
        elif isinstance(meta, annotated_types.Lt):
            hi = meta.lt
    return FieldSpec(
        path=path,
        kind=kind,
        nullable=nullable,
        default=info.default,
        description=info.description or "",
        choices=choices,
        min_value=lo,
        max_value=hi,
        exclusive_min=exclusive,
    )


def _walk(model: type[BaseModel], prefix: str = "") -> typing.Iterator[FieldSpec]:
    for name, info in model.model_fields.items():
        ann, _ = _unwrap_optional(info.annotation)
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            yield from _walk(ann, f"{prefix}{name}.")
        else:
            yield _spec(f"{prefix}{name}", info)


@functools.cache
def all_fields() -> dict[str, FieldSpec]:
    """Every leaf field of :class:`Scenario`, by dotted path, in declaration order."""
    return {f.path: f for f in _walk(Scenario)}


def field(path: str) -> FieldSpec | None:
    return all_fields().get(path)


def widget_fields() -> list[str]:
    """Fields that get a generic widget (everything but the special ones and free-form mappings)."""
    return [p for p, f in all_fields().items() if p not in SPECIAL_FIELDS and f.kind != "dict"]


# ----------------------------------------------------------------------------- flattening


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mapping -> ``{"a.b.c": value}``; the value of a free-form mapping field (model.config) stays whole."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        spec = field(path)
        if isinstance(value, dict) and not (spec is not None and spec.kind == "dict"):
            out.update(flatten(value, f"{path}."))
        else:
            out[path] = value
    return out


def scenario_flat(s: Scenario) -> dict[str, Any]:
    return flatten(s.model_dump(mode="python"))


def coerce(spec: FieldSpec, value: Any) -> Any:
    """A validated value in the Python type its widget needs (ints for int fields, floats for floats)."""
    if value is None:
        return None
    if spec.kind == "bool":
        return bool(value)
    if spec.kind == "float":
        return float(value)
    if spec.kind == "int" and not isinstance(value, bool):
        return int(value)
    return value


# ----------------------------------------------------------------------------- URL encoding


def encode_value(value: Any) -> str:
    """A field value as URL text: true/false/null, numbers as Python writes them, mappings as compact JSON."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return str(value)


def decode_value(spec: FieldSpec, text: str) -> Any:
    """Inverse of :func:`encode_value`, by the field's kind: strings stay strings ("0.9" is a version)."""
    if spec.kind == "dict":
        if text in ("", "null"):
            return None
        try:
            return read_json_text(text, "value")
        except InputError as err:
            raise ValueError(err.problems[0].removeprefix("value: ")) from None
    if text == "null" and spec.nullable:
        return None
    if spec.kind in ("str",) or (spec.kind == "choice" and all(isinstance(c, str) for c in spec.choices)):
        return text
    if len(text) > MAX_SCALAR_CHARS:  # a number, a boolean or null is a few characters
        raise ValueError(f"{len(text):,} characters is too long for a {spec.kind} value")
    try:
        value = read_yaml_text(text, "value")
    except InputError:
        raise ValueError(f"cannot read {text[:80]!r}") from None
    if spec.kind == "float" and isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            pass
    return value


def diff_flat(current: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """Entries of ``current`` that differ from ``base`` (keys of both, in ``current``'s order)."""
    return {k: v for k, v in current.items() if base.get(k, object()) != v}


def settings_diff(flats: list[dict[str, Any]]) -> list[str]:
    """Dotted keys whose value is not the same in every one of the flattened scenarios."""
    keys: list[str] = []
    for flat in flats:
        keys += [k for k in flat if k not in keys]
    return [k for k in keys if len({encode_value(f.get(k)) for f in flats}) > 1]
