"""Calibration profiles in the dashboard: the sidebar's profile selector (every page: Estimate, Planner...) and the
link parameter ``cal`` that applies a profile when a page opens.

A profile reaches the scenario only as values of the calibrated efficiency fields, set into the same widgets a user
types into (``ui.state``); anything typed afterwards wins. The selector offers the team's profiles
(``team_profiles()``: the YAML files listed in ``$RLPLAN_PRESETS_DIR/calibrations/``, read by the calculator's
bounded readers) and the one a link brought.

The link parameter is ``cal=<ui/linkcodec pack of {"id": ..., "fitted": {...}}>`` (bounded like every packed
parameter). Its ``id`` is looked up among the listed team profiles only, as a dictionary key: a name from a URL never
becomes a path. Its ``fitted`` values (an unsaved profile) are checked like a profile file's
(``validate_fitted``: calibrated fields only, each inside its bounds). Anything else is reported and ignored.
"""

from __future__ import annotations

import os
import re
from typing import Any

import streamlit as st

from calculator import InputError, team_profiles, validate_fitted
from ui import field_values, keys, linkcodec, state
from ui.text import md

PARAM = "cal"
NONE = ""
FROM_LINK = " (unsaved)"  # a profile known only from a link or the Calibrate page, not a team file
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")

TEXT = {
    "en": {
        "label": "Calibration profile",
        "none": "none (cited defaults)",
        "help": "Fitted efficiencies of a real run (Calibrate page); applied to every page's inputs.",
        "active": "Applied: {values}",
        "bad_link": "link parameter cal: {why}; ignored",
    },
    "zh": {
        "label": "校准配置档",
        "none": "无（引用的默认值）",
        "help": "真实运行拟合出的效率（校准页）；应用到所有页面的输入。",
        "active": "已应用：{values}",
        "bad_link": "链接参数 cal：{why}；已忽略",
    },
}


def t(key: str, **values: object) -> str:
    text = TEXT.get(state.lang(), TEXT["en"])[key]
    return text.format(**values) if values else text


@st.cache_data(ttl=3, show_spinner=False, max_entries=4)
def team_fitted(presets_dir: str) -> dict[str, dict[str, float]]:
    """The team's profiles (id -> fitted values), read at most every 3 s per directory: the selector and the URL
    ask on every rerun of every page. ``presets_dir`` is only the cache key (the value of ``RLPLAN_PRESETS_DIR``)."""
    profiles, _ = team_profiles()
    return {pid: dict(p.fitted) for pid, p in sorted(profiles.items())}


def _team() -> dict[str, dict[str, float]]:
    return team_fitted(os.environ.get("RLPLAN_PRESETS_DIR", ""))


def link_code(profile_id: str, fitted: dict[str, float]) -> str | None:
    """The ``cal`` parameter for a profile (None when it would not fit in a link)."""
    return linkcodec.pack({"id": profile_id, "fitted": {k: round(float(v), 6) for k, v in fitted.items()}})


def read_link(code: object) -> tuple[str, dict[str, float]]:
    """(label, fitted values) of a ``cal`` parameter: a listed team profile by id, else the link's own fitted
    values, checked. Raises :class:`InputError` with the reason otherwise."""
    data = linkcodec.unpack(code)
    if not isinstance(data, dict):
        raise InputError("not a profile packed by this app")
    pid = data.get("id")
    if not isinstance(pid, str) or not _ID_RE.match(pid):
        raise InputError("the profile id must be letters, digits, '.', '_' or '-'")
    team = _team()
    if pid in team:  # a dictionary lookup among the listed files: the id is never a path
        return pid, dict(team[pid])
    if "fitted" not in data:
        raise InputError(f"no team profile {pid!r} in $RLPLAN_PRESETS_DIR/calibrations")
    return pid + FROM_LINK, validate_fitted(data["fitted"], "fitted")


def _set_fields(fitted: dict[str, float], keep: tuple[str, ...] = ()) -> None:
    for path, value in fitted.items():
        if path not in keep:
            field_values.put(path, value)


def apply_link() -> None:
    """Apply the ``cal`` parameter once per distinct value (``app.py``, every run, after the URL's fields): fields
    the URL also gives as dotted parameters keep the URL's value."""
    ss = st.session_state
    code = st.query_params.get(PARAM)
    if not code or code == ss.get(keys.CAL_LINK_SEEN):
        return
    ss[keys.CAL_LINK_SEEN] = code
    try:
        label, fitted = read_link(code)
    except InputError as err:
        ss[keys.URL_PROBLEMS] = list(ss.get(keys.URL_PROBLEMS) or []) + [t("bad_link", why="; ".join(err.problems))]
        return
    _set_fields(fitted, keep=tuple(k for k in st.query_params if k in fitted))
    remember(label, fitted, linked=label.endswith(FROM_LINK))


def _choices() -> dict[str, dict[str, float]]:
    out = dict(_team())
    out.update(st.session_state.get(keys.CAL_LINKED) or {})
    return out


def remember(label: str, fitted: dict[str, float], *, linked: bool) -> None:
    """Mark ``label`` as the applied profile (a callback: before the selector is drawn); ``linked`` adds an unsaved
    profile to the selector's choices."""
    ss = st.session_state
    if linked:
        ss.setdefault(keys.CAL_LINKED, {})[label] = dict(fitted)
    ss[keys.CAL_ACTIVE] = label
    ss[keys.CAL_SELECT] = label


def on_select() -> None:
    """The selector changed: set the profile's fields, or the preset's values for ``none``."""
    ss = st.session_state
    label = ss.get(keys.CAL_SELECT, NONE)
    choices = _choices()
    if label in choices:
        _set_fields(choices[label])
        ss[keys.CAL_ACTIVE] = label
        return
    previous = choices.get(ss.get(keys.CAL_ACTIVE, NONE), {})
    try:
        base = state.preset_scenario(ss.get(keys.PRESET) or state.default_preset())
    except InputError:
        base = None
    if base is not None:
        for path in previous:
            obj: Any = base
            for part in path.split("."):
                obj = getattr(obj, part)
            field_values.put(path, obj)
    ss[keys.CAL_ACTIVE] = NONE


def active_fitted() -> tuple[str, dict[str, float]] | None:
    """The applied profile while the inputs still hold all of its values (a value typed since ends it)."""
    label = st.session_state.get(keys.CAL_ACTIVE, NONE)
    fitted = _choices().get(label) if label else None
    if not fitted:
        return None
    if any(field_values.get(k) != v for k, v in fitted.items()):
        return None
    return label, fitted


def url_param() -> dict[str, str]:
    """``{"cal": code}`` for the page's URL while a profile is applied (``state.url_params``)."""
    active = active_fitted()
    if active is None:
        return {}
    code = link_code(active[0].removesuffix(FROM_LINK), active[1])
    return {PARAM: code} if code else {}


def render_selector() -> None:
    """The sidebar's profile selector (shown when there is a profile to choose)."""
    choices = _choices()
    if not choices:
        return
    ss = st.session_state
    options = [NONE, *choices]
    if ss.get(keys.CAL_SELECT) not in options:
        ss[keys.CAL_SELECT] = NONE
    st.selectbox(
        t("label"),
        options,
        format_func=lambda o: t("none") if o == NONE else o,
        key=keys.CAL_SELECT,
        on_change=on_select,
        help=t("help"),
    )
    active = active_fitted()
    if active is not None:
        st.caption(md(t("active", values=", ".join(f"{k.split('.')[-1]}={v:g}" for k, v in active[1].items()))))
