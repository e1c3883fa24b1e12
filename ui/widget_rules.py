"""Widget values are user input: what every widget key may hold, checked before anything reads it.

A client can send any value for any widget: Streamlit passes a select-box value that is not one of the options
through as a string (a path in the preset box), and an integer input may receive NaN (reading it then raises on
every later run). :func:`sanitize_widgets` checks every value at the start of every run (app.py) and of every
callback (which run before the script): a choice must be one of the widget's options, a number finite and
within the field's bounds, a text no longer than its box. Anything else is reset: to the preset's value for a
scenario field, to the rule's default, else to the widget's own default. :func:`widget_rules` is the one place
the allowed values are listed.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import streamlit as st

from calculator import ALGORITHMS, MAX_INPUT_BYTES, InputError, Scenario, algorithm_for
from calculator import model_families as families
from ui import field_values, keys
from ui.catalogue import default_preset, preset_flat, preset_ids, preset_scenario
from ui.fields import FieldSpec, coerce, field, widget_fields
from ui.i18n import LANGS
from ui.options import gpu_ids, model_ids

MAX_CONFIG_BYTES = MAX_INPUT_BYTES  # an uploaded or pasted config.json (real ones are a few KiB)
MAX_TEXT_CHARS = 200  # one-line text inputs (a model size, a name): they travel in the page's URL
MODEL_SOURCES = ("preset", "size", "config")
VIEW_CASES = ("expected", "worst")


@dataclass(frozen=True)
class Rule:
    """The values one widget key may hold."""

    options: Callable[[], Sequence[Any]] | None = None  # a choice: one of these (compared by type and value)
    nullable: bool = False  # None (no selection) is allowed too
    multi: bool = False  # a list of distinct options (multiselect)
    max_chars: int | None = None  # a text
    number: FieldSpec | None = None  # a number of this field's kind and bounds
    default: Callable[[], Any] | None = None  # what a refused value is replaced by (else the widget's default)

    def accepts(self, value: Any) -> bool:
        if value is None:
            return self.nullable or (self.number is not None and self.number.nullable) or self.max_chars is not None
        if self.number is not None:
            return _number_ok(self.number, value)
        if self.max_chars is not None:
            return isinstance(value, str) and len(value) <= self.max_chars
        if self.options is None:
            return True
        allowed = list(self.options())
        if self.multi:
            items = list(value) if isinstance(value, list | tuple) else [None]
            return len(set(map(repr, items))) == len(items) and all(_one_of(v, allowed) for v in items)
        return _one_of(value, allowed)


def _one_of(value: Any, allowed: Sequence[Any]) -> bool:
    return any(type(value) is type(o) and value == o for o in allowed)


def _number_ok(spec: FieldSpec, value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if (spec.kind == "int" and not isinstance(value, int)) or not math.isfinite(value):
        return False
    return (spec.min_value is None or value >= spec.min_value) and (spec.max_value is None or value <= spec.max_value)


def _field_rule(spec: FieldSpec) -> Rule:
    if spec.path == "hardware.gpu":
        return Rule(gpu_ids)
    if spec.path in ("critic.model_path", "reward_model.model_path"):
        return Rule(model_ids, nullable=True)
    if spec.kind == "bool":
        return Rule(lambda: (True, False), nullable=spec.nullable)
    if spec.kind == "choice":
        return Rule(lambda: spec.choices, nullable=spec.nullable)
    if spec.kind in ("int", "float"):
        return Rule(number=spec)
    return Rule(max_chars=MAX_TEXT_CHARS)


@functools.cache
def widget_rules() -> Mapping[str, Rule]:
    """Every widget key whose value the app reads, with what it may hold (the one place they are listed). Made once
    per process (the rules hold no session's data: their callables read the lists and the session when called)."""
    rules = {
        keys.LANG: Rule(lambda: LANGS, default=lambda: "en"),
        keys.PRESET: Rule(preset_ids, default=default_preset),
        keys.MODEL_SOURCE: Rule(lambda: MODEL_SOURCES, default=lambda: "preset"),
        keys.MODEL_PATH: Rule(model_ids, default=lambda: _preset_now().model.path),
        keys.MODEL_SIZE_FAMILY: Rule(lambda: families(True) + families(False)),
        keys.MODEL_SIZE: Rule(max_chars=MAX_TEXT_CHARS),
        keys.ALGO: Rule(lambda: [a.label for a in ALGORITHMS], default=lambda: algorithm_for(_preset_now())),
        keys.CONFIG_PASTE: Rule(max_chars=MAX_CONFIG_BYTES + 1),
        keys.VERL_IMPORT_TEXT: Rule(max_chars=MAX_INPUT_BYTES + 1),
        keys.VIEW_CASE: Rule(lambda: VIEW_CASES, nullable=True),
        keys.PLAN_GPUS: Rule(gpu_ids, multi=True),
    }
    for path in widget_fields():
        spec = field(path)
        if spec is not None:
            rules[keys.field_key(path)] = _field_rule(spec)
    return MappingProxyType(rules)


_UNREADABLE = object()


def _read(key: str) -> Any:
    """The widget's value, None when absent, ``_UNREADABLE`` when Streamlit cannot even deserialize it."""
    try:
        return st.session_state[key] if key in st.session_state else None
    except Exception:  # e.g. int(NaN) in Streamlit's own number-input deserializer
        return _UNREADABLE


def _preset_id_now() -> str:
    """The selected preset (the default one when the selection is not a preset)."""
    preset = st.session_state.get(keys.PRESET)
    return preset if preset in preset_ids() else default_preset()


def _preset_now() -> Scenario:
    """The scenario of the selected preset (the default one when the selection is not a preset)."""
    return preset_scenario(_preset_id_now())


def _preset_value(spec: FieldSpec) -> Any:
    """The selected preset's value of a scenario field (the field's default when the preset cannot be read)."""
    try:
        value = preset_flat(_preset_id_now()).get(spec.path)
    except InputError:
        value = spec.default
    return coerce(spec, value)


def _reset(key: str, rule: Rule | None = None) -> None:
    """Put a widget back to a valid value: the preset's for a scenario field, the rule's default, else the
    widget's own default."""
    path = keys.field_of_key(key)
    spec = field(path) if path else None
    if spec is not None:
        st.session_state[key] = _preset_value(spec)
        return
    if rule is not None and rule.default is not None:
        try:
            st.session_state[key] = rule.default()
            return
        except InputError:  # the default preset itself is broken: fall back to the widget's default
            pass
    try:
        del st.session_state[key]
    except Exception:  # already gone, or a state Streamlit keeps elsewhere: nothing left to reset
        pass


def _session_keys() -> list[str] | None:
    """Every key of the session, None when Streamlit cannot list them (listing reads every value)."""
    try:
        return list(st.session_state.keys())
    except Exception:
        return None


def sanitize_widgets() -> list[str]:
    """Check every widget value against :func:`widget_rules` (and that every value can be read at all); reset
    the ones that fail. Returns the keys that were reset."""
    reset: list[str] = []
    rules = widget_rules()
    ordered = [keys.PRESET, *(k for k in rules if k != keys.PRESET)]  # fields are reset to the preset's values
    # Only the keys the session holds: an absent one passes anyway (``_read`` gives None), and asking Streamlit
    # for one costs an exception. When the keys cannot be listed, every rule's key is asked for.
    present = _session_keys()
    if present is not None:
        held = set(present)
        ordered = [k for k in ordered if k in held]
    for key in ordered:
        value = _read(key)
        if value is not _UNREADABLE and (value is None or rules[key].accepts(value)):
            continue
        limit = rules[key].max_chars
        if limit is not None and isinstance(value, str):
            st.session_state[key] = value[:limit]  # a text longer than its box: cut where the browser would
        else:
            _reset(key, rules[key])
        reset.append(key)
    # Keys of widgets without a rule (any page) whose value Streamlit cannot deserialize; a key with a rule was read
    # above (an unreadable one is reset there). Listing the keys reads every value, so the listing above serves
    # again while nothing was reset (issue #18: three listings per rerun were ~8% of the Estimate page's CPU).
    listing = present if not reset and present is not None else _session_keys()
    for key in [k for k in listing or [] if k not in rules and _read(k) is _UNREADABLE]:
        _reset(key)
        reset.append(key)
    # The field widgets' checked values into the field values.
    field_values.sync_from_widgets(listing if not reset and listing is not None else _session_keys())
    # The values of fields not on screen too: an option list can change under a session (presets reloaded).
    values = field_values.values()
    for path, value in list(values.items()):
        rule, spec = rules.get(keys.field_key(path)), field(path)
        if rule is not None and spec is not None and value is not None and not rule.accepts(value):
            values[path] = _preset_value(spec)
            reset.append(keys.field_key(path))
    return reset
