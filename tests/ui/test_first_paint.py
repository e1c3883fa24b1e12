"""The Estimate page's first visit in two runs (ui/first_paint.py): a browser's first run stops after the memory
chart and mounts the chart-drawn trigger; the next run renders the whole page; clients without JavaScript
(AppTest here, the scripted websocket clients) get the whole page at once."""

from __future__ import annotations

import dataclasses

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.paths import ROOT
from ui import cache, first_paint, keys, state
from ui.state import DEFAULT_PRESET

APP = str(ROOT / "app.py")


def page_counts(at: AppTest) -> dict[str, int]:
    return {
        "charts": len(at.get("plotly_chart")),
        "tables": len(at.dataframe),
        "downloads": len(at.get("download_button")),
        "metrics": len(at.metric),
    }


def test_without_a_browser_the_whole_page_comes_in_one_run() -> None:
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    counts = page_counts(at)
    # memory by component, by role, step time; breakdown, rollout budget, host RAM; YAML/JSON/Markdown + 3 PNGs
    assert counts["charts"] == 3
    assert counts["tables"] >= 2
    assert counts["downloads"] >= 3
    assert at.session_state[keys.FIRST_SCREEN_DONE] is True  # a later browser trigger could not split it again


def test_a_browser_first_run_stops_after_the_memory_chart_then_the_next_run_renders_everything(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    whole = page_counts(AppTest.from_file(APP, default_timeout=60).run())  # one run, no browser
    monkeypatch.setattr(first_paint, "_is_browser", lambda: True)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    first = page_counts(at)
    assert first["charts"] == 1  # the memory chart only: the role and step-time charts come with the next run
    assert first["tables"] == 0 and first["downloads"] == 0
    assert first["metrics"] >= 5  # the headline is part of the first screen
    assert not at.sidebar.selectbox and not at.sidebar.number_input  # the inputs come with the next run
    chart = at.get("plotly_chart")[0]
    assert chart.proto.id.endswith(keys.CHART_MEMORY)

    at.run()  # what the browser's trigger does: a plain rerun
    assert not at.exception
    assert page_counts(at) == whole


def test_a_widget_change_before_the_trigger_renders_the_whole_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first screen's own widget (mean / max lengths) reruns the page: everything, inputs included."""
    monkeypatch.setattr(first_paint, "_is_browser", lambda: True)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert len(at.get("plotly_chart")) == 1
    assert not at.sidebar.selectbox  # the inputs come with the second run too
    at.button_group(key=keys.VIEW_CASE).set_value("worst").run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == 3 and len(at.dataframe) >= 2
    assert at.selectbox(key=keys.PRESET).value == DEFAULT_PRESET


def test_no_chart_to_wait_for_shows_the_inputs_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The calculator failing on the first run: the error and the inputs to fix it, no trigger to wait for."""

    def failing_estimate(*args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(first_paint, "_is_browser", lambda: True)
    monkeypatch.setattr(cache, "cached_estimate", failing_estimate)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert any("boom" in e.value for e in at.error)
    assert at.selectbox(key=keys.PRESET).value == DEFAULT_PRESET
    assert not at.get("plotly_chart")


def test_a_first_run_without_a_scenario_is_not_split_and_neither_is_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs that build no scenario: the problems and the inputs at once; once fixed, the page comes whole
    (the sidebar never disappears for a run)."""
    real = state.build_scenario
    calls = {"n": 0}

    def first_call_has_no_scenario() -> state.Built:
        calls["n"] += 1
        built = real()
        if calls["n"] > 1:
            return built
        return dataclasses.replace(built, scenario=None, problems=["hardware.num_gpus: a test problem"])

    monkeypatch.setattr(first_paint, "_is_browser", lambda: True)
    monkeypatch.setattr(state, "build_scenario", first_call_has_no_scenario)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert at.selectbox(key=keys.PRESET).value == DEFAULT_PRESET
    assert not at.get("plotly_chart")
    at.run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == 3 and at.selectbox(key=keys.PRESET).value == DEFAULT_PRESET


@pytest.mark.parametrize(
    ("agent", "browser"),
    [
        ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", True),
        ("Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", True),
        ("Python/3.11 websockets/13.1", False),  # tests/system/stclient.py, benchmarks/bench_load.py
        ("", False),
        (None, False),
    ],
)
def test_is_browser_agent(agent: str | None, browser: bool) -> None:
    assert first_paint.is_browser_agent(agent) is browser


def test_trigger_name_is_the_one_the_script_sends() -> None:
    assert f'setTriggerValue("{first_paint.TRIGGER}", true)' in first_paint.CHART_DRAWN_JS
    assert f"}}, {first_paint.FALLBACK_S * 1000});" in first_paint.CHART_DRAWN_JS
