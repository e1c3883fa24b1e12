"""The scenario field values of a session: one dict under one session key, and a widget key for a field only
while its widget is drawn (issue #18).

Why: Streamlit's number input, select box and radio copy the whole session state each time one is drawn
(``SessionState.filtered_state``, read by ``number_input.py``, ``selectbox.py`` and ``radio.py`` in streamlit
1.67), so each one costs time in proportion to the number of session keys. With one persisted widget key per
scenario field (200 fields, most of them in closed sections) the session held ~230 keys, each copy took ~0.6 ms
and the Estimate page drew 26 such widgets per rerun: about a third of the rerun's CPU.

How:

- :func:`values` is the session's ``{dotted path: value}`` of the scenario fields. It is a plain session value,
  not a widget key, so it survives page switches and closed sections.
- :func:`widget_key` is called right before a field's widget is drawn and sets the widget's key from the dict.
  Streamlit drops a widget's key at the end of a run that did not draw it (field widgets do not set
  ``persist_state``).
- :func:`sync_from_widgets` copies the values of the field widgets on screen into the dict.
  ``ui.widget_rules.sanitize_widgets`` calls it once it has checked every widget value, at the start of every
  run and every callback, so the dict only ever receives checked values.
- :func:`put` sets a field (presets, links, profiles, the advisor's changes, a new algorithm's recipe) in the
  dict, and in its widget key when the widget is on screen so that the widget shows the new value. The callers
  run where Streamlit allows writing a widget's key (in callbacks, or before the widget is drawn).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import streamlit as st

from ui import keys
from ui.fields import widget_fields


def values() -> dict[str, Any]:
    """The session's field values by dotted path (the dict itself: writes go through :func:`put`)."""
    ss = st.session_state
    if keys.FIELD_VALUES not in ss:
        ss[keys.FIELD_VALUES] = {}
    return ss[keys.FIELD_VALUES]


def get(path: str, default: Any = None) -> Any:
    return values().get(path, default)


def put(path: str, value: Any) -> None:
    """Set field ``path`` (an already checked value) in the dict and, when its widget is on screen, in the widget."""
    values()[path] = value
    key = keys.field_key(path)
    if key in st.session_state:
        st.session_state[key] = value


def widget_key(path: str, default: Any) -> str:
    """The widget key of field ``path``, set to the dict's value (``default`` when the dict has none): call right
    before drawing the field's widget. Set on every run, not only when Streamlit lost the key: after a page switch
    the widget is drawn under a new element id, which would start from the widget's default while the old id's
    value is still under the key (the dict already holds the user's latest value: ``sync_from_widgets``)."""
    key = keys.field_key(path)
    st.session_state[key] = values().setdefault(path, default)
    return key


def sync_from_widgets(held: Iterable[str] | None = None) -> None:
    """Copy the values of the field widgets on screen into the dict (after ``sanitize_widgets`` checked them).
    ``held``: the session's keys when the caller has them (asking Streamlit for an absent key costs an exception)."""
    ss = st.session_state
    vals = values()
    if held is None:
        held = [k for k in map(keys.field_key, widget_fields()) if k in ss]
    fields = set(widget_fields())
    for key in held:
        path = keys.field_of_key(key)
        if path in fields:
            vals[path] = ss[key]


__all__ = ["get", "put", "sync_from_widgets", "values", "widget_key"]
