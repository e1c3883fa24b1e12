"""Hostile inputs through the dashboard, in-process with AppTest (issue 12, items 1, 2, 3, 6).

Session state set from outside stands in for a forged widget value (the raw-websocket version of each case is
in ``tests/system/test_forged_widgets.py``); an audit hook records every file the process opens under the
test's canary directory. Each case must leave the page running, say what was refused, and open nothing.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from urllib.parse import urlencode

import plotly.graph_objects as go
import pytest
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.testing.v1 import AppTest

from calculator.inputs.limits import MAX_INPUT_BYTES
from tests.security.hostile import ROOT, shell_cases, small_config
from ui import hardening, keys
from ui.export import plain_text, safe_figure, safe_markup
from ui.i18n import tr
from ui.state import MAX_LINK_CONFIG_CHARS

APP = str(ROOT / "app.py")
PEAK = tr("en", "metric.peak")
_WATCHED: list[str] = []  # canary directories whose opens are recorded
_OPENED: list[str] = []


def _hook(event: str, args: tuple) -> None:
    if event == "open" and _WATCHED and isinstance(args[0], str):
        path = os.path.abspath(args[0])
        if any(path.startswith(w) for w in _WATCHED):
            _OPENED.append(path)


sys.addaudithook(_hook)  # an audit hook cannot be removed: it records only while a test watches a directory


@pytest.fixture()
def canary(tmp_path: Path):  # noqa: ANN201 - a fixture
    (tmp_path / "secret.yaml").write_text("secret_line_one: 1\nsecret_line_two: 2\n")
    os.mkfifo(tmp_path / "pipe.yaml")
    _WATCHED.append(str(tmp_path))
    _OPENED.clear()
    yield tmp_path
    _WATCHED.remove(str(tmp_path))


def run_app(params: dict[str, str] | None = None, page: str | None = None, state: dict | None = None) -> AppTest:
    """Run the app with every sidebar section open; ``state``: session values set before the first run (a
    forged widget value: AppTest itself can only send the options a widget offers)."""
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in (params or {}).items():
        at.query_params[k] = v
    for name in keys.LAZY_SECTIONS:
        at.session_state[keys.section_key(name)] = True
    for k, v in (state or {}).items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    if page:
        at.switch_page(page).run()
        assert not at.exception, [e.value for e in at.exception]
    return at


def shown(at: AppTest) -> str:
    return " ".join(e.value for e in [*at.error, *at.warning, *at.info, *at.caption, *at.markdown])


# ----------------------------------------------------------------------------- item 1


@pytest.mark.parametrize("name", ["secret.yaml", "pipe.yaml"])
@pytest.mark.parametrize("key", [keys.PRESET, keys.MODEL_PATH, keys.GPU])
def test_a_forged_path_in_a_select_box_is_never_opened(canary: Path, name: str, key: str) -> None:
    at = run_app(state={key: str(canary / name)})
    assert not at.exception, [e.value for e in at.exception]
    assert PEAK in {m.label for m in at.metric}  # reset to a valid option: the headline renders
    assert "secret_line" not in shown(at)
    assert _OPENED == [], _OPENED


def test_a_path_in_the_url_is_never_opened(canary: Path) -> None:
    at = run_app({"preset": str(canary / "secret.yaml"), "hardware.gpu": str(canary / "pipe.yaml")})
    assert "secret_line" not in shown(at)
    assert _OPENED == [], _OPENED


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (keys.MODEL_SOURCE, "../../etc"),
        (keys.ALGO, "<img src=x>"),
        (keys.LANG, "../../etc/passwd"),
        (keys.field_key("rollout.name"), "/dev/zero"),
        (keys.field_key("actor.fsdp_config.param_offload"), "yes"),
        (keys.field_key("hardware.num_gpus"), 10**9),
        (keys.field_key("rollout.n"), True),
        (keys.MODEL_SIZE, "7B" * 10_000),
        (keys.PLAN_GPUS, ["h100-80gb"] * 5000),
    ],
    ids=lambda v: repr(v)[:30],
)
def test_a_forged_value_is_reset_to_an_allowed_one(key: str, value: object) -> None:
    at = run_app(state={key: value})
    assert not at.exception, [e.value for e in at.exception]
    assert PEAK in {m.label for m in at.metric}


# ----------------------------------------------------------------------------- item 2: pasted scripts, bounded

BOUNDED = {c.name: c for c in shell_cases() if c.refusal and len(c.text) < MAX_INPUT_BYTES}


@pytest.mark.parametrize("name", ["doubling-15-lines", "backticks-1MiB", "expansion-4MiB", "nested-interpolation-yaml"])
def test_verl_page_refuses_over_the_bounds(name: str) -> None:
    case = BOUNDED[name]
    at = run_app(page="ui/pages/verl_io.py")
    at.text_area(key=keys.VERL_IMPORT_TEXT).set_value(case.text).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(case.refusal in e.value for e in at.error), [e.value[:300] for e in at.error]


def test_compare_page_refuses_over_the_bounds() -> None:
    at = run_app(state={keys.cmp_base(0): "__current__", keys.cmp_overrides(0): BOUNDED["doubling-15-lines"].text})
    at.switch_page("ui/pages/compare.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("would hold more than 64 KiB" in e.value for e in at.error), [e.value[:300] for e in at.error]


@pytest.mark.parametrize("text", ["actor_rollout_ref:\n  rollout: !!python/object/apply:os.system ['id']\n"])
def test_verl_page_refuses_a_python_tag(text: str) -> None:
    at = run_app(page="ui/pages/verl_io.py")
    at.text_area(key=keys.VERL_IMPORT_TEXT).set_value(text).run()
    assert any("could not determine a constructor" in e.value for e in at.error), [e.value for e in at.error]


# ----------------------------------------------------------------------------- item 6: config.json and the URL


def _paste(at: AppTest, cfg: dict | str) -> None:
    at.radio(key=keys.MODEL_SOURCE).set_value("config").run()
    at.text_area(key=keys.CONFIG_PASTE).set_value(cfg if isinstance(cfg, str) else json.dumps(cfg)).run()
    assert not at.exception, [e.value for e in at.exception]


def test_hidden_size_below_the_heads_names_the_field() -> None:
    at = run_app()
    _paste(at, {**small_config(), "hidden_size": 8})
    errors = " ".join(e.value for e in at.error)
    assert "head\\_dim" in errors or "head_dim" in errors, errors
    assert "ValidationError" not in errors and "pydantic" not in errors, errors


def test_a_long_integer_does_not_leak_pythons_advice() -> None:
    at = run_app()
    _paste(at, json.dumps(small_config())[:-1] + ', "hidden_size": ' + "9" * 5000 + "}")
    errors = " ".join(e.value for e in at.error)
    assert "4,300 digits" in errors and "set_int_max_str_digits" not in errors, errors[:500]


def test_a_large_config_is_not_written_into_the_link() -> None:
    """A 1 MB model.config was written back into the address bar (proxies cut URLs near 8 KB)."""
    cfg = {**small_config(), "padding": "x" * 1_000_000}
    at = run_app()
    _paste(at, cfg)
    assert "model.config" not in at.query_params
    assert any(tr("en", "model.config_not_in_link", kib=MAX_LINK_CONFIG_CHARS // 1024) in c.value for c in at.caption)
    small = run_app()
    _paste(small, small_config())
    assert "model.config" in small.query_params  # a real one still travels in the link
    assert len(urlencode({"model.config": small.query_params["model.config"][0]})) < MAX_LINK_CONFIG_CHARS


def test_non_finite_widget_values_are_dropped_from_the_message() -> None:
    """The hook behind the NaN fix: Streamlit's own deserializer raised int(nan) before the app's script ran."""
    state = ClientState()
    for wid, value in (("a", float("nan")), ("b", 3.0), ("c", float("inf"))):
        w = state.widget_states.widgets.add()
        w.id = wid
        w.double_value = value
    w = state.widget_states.widgets.add()
    w.id = "d"
    w.double_array_value.data.extend([1.0, float("-inf")])
    assert hardening.drop_non_finite(state) == 3
    assert [w.id for w in state.widget_states.widgets] == ["b"]


# ----------------------------------------------------------------------------- item 3: figure text


def test_figure_text_keeps_only_the_builders_tags() -> None:
    evil = '<span style="background:url(http://evil.example/x)">m</span><a href="http://evil.example">l</a>'
    fig = go.Figure(go.Bar(x=[evil], y=[1], name=evil), layout=dict(title=dict(text=f"<b>ok</b> {evil}")))
    fig.add_annotation(text=evil)
    text = json.dumps(safe_figure(fig).to_plotly_json())
    assert "<span" not in text and "<a " not in text and "<b>ok</b>" in text
    assert safe_markup("<br><b>x</b><i>y</i>") == "<br><b>x</b><i>y</i>"
    assert plain_text("<b style=x>") == "&lt;b style=x&gt;"
