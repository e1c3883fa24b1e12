"""The scenario field values an AppTest session holds (``ui.field_values``): a field's widget key exists only
while its widget is drawn, the session's value of every field lives in one dict."""

from __future__ import annotations

from typing import Any

from streamlit.testing.v1 import AppTest

from ui import keys


def field_value(at: AppTest, path: str) -> Any:
    """The session's value of scenario field ``path`` (a dotted path or a ``keys.field_key`` widget key)."""
    return at.session_state[keys.FIELD_VALUES][keys.field_of_key(path) or path]


def field_values(at: AppTest) -> dict[str, Any]:
    return dict(at.session_state[keys.FIELD_VALUES])
