"""ui/cache.py: the process-wide estimate and figure caches keyed by the scenario's canonical JSON."""

from __future__ import annotations

import threading

import pytest

from calculator import estimate, load_scenario
from ui import cache, figures
from ui.cache import BoundedLru


def test_lru_is_bounded_and_keeps_the_recently_used():
    lru = BoundedLru(2)
    made: list[str] = []

    def make(v: str):
        return lambda: made.append(v) or v

    assert lru.get_or_make("a", make("a")) == "a"
    assert lru.get_or_make("b", make("b")) == "b"
    assert lru.get_or_make("a", make("a2")) == "a"  # hit: refreshed, not recomputed
    assert lru.get_or_make("c", make("c")) == "c"  # evicts b, the least recently used
    assert len(lru) == 2 and made == ["a", "b", "c"]
    assert lru.get_or_make("b", make("b2")) == "b2"  # b was evicted: computed again
    assert (lru.hits, lru.misses) == (1, 4)


def test_lru_from_many_threads_stays_bounded_and_consistent():
    lru = BoundedLru(8)

    def work(i: int) -> None:
        for j in range(200):
            k = (i + j) % 16
            assert lru.get_or_make(k, lambda k=k: k * k) == k * k

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(lru) == 8


def test_a_key_being_made_is_made_once_and_the_others_wait_for_it():
    """Sessions missing the same new scenario together: one computes, the rest wait and get the same object."""
    lru = BoundedLru(8)
    started, release = threading.Event(), threading.Event()
    calls: list[int] = []

    def slow() -> object:
        calls.append(1)
        started.set()
        release.wait(10)
        return object()

    got: list[object] = []
    first = threading.Thread(target=lambda: got.append(lru.get_or_make("k", slow)))
    first.start()
    assert started.wait(10)
    others = [threading.Thread(target=lambda: got.append(lru.get_or_make("k", slow))) for _ in range(4)]
    for t in others:
        t.start()
    while lru.waits < 4:  # all four are waiting for the first one's value
        threading.Event().wait(0.01)
    release.set()
    for t in [first, *others]:
        t.join(10)
    assert len(calls) == 1 and len(got) == 5 and all(v is got[0] for v in got)
    assert (lru.misses, lru.hits, lru.waits) == (1, 4, 4)


def test_a_failed_computation_is_not_stored_and_a_waiter_computes_it_again():
    lru = BoundedLru(8)
    started, release = threading.Event(), threading.Event()

    def failing() -> int:
        started.set()
        release.wait(10)
        raise ValueError("boom")

    errors: list[Exception] = []
    values: list[int] = []

    def first() -> None:
        try:
            lru.get_or_make("k", failing)
        except ValueError as exc:
            errors.append(exc)

    t1 = threading.Thread(target=first)
    t1.start()
    assert started.wait(10)
    t2 = threading.Thread(target=lambda: values.append(lru.get_or_make("k", lambda: 7)))
    t2.start()
    while lru.waits < 1:
        threading.Event().wait(0.01)
    release.set()
    t1.join(10)
    t2.join(10)
    assert [str(e) for e in errors] == ["boom"] and values == [7] and lru.get_or_make("k", lambda: 8) == 7


def test_a_waiter_gives_up_after_wait_s_and_computes_it_itself(monkeypatch):
    monkeypatch.setattr(cache, "WAIT_S", 0.05)
    lru = BoundedLru(8)
    started, release = threading.Event(), threading.Event()

    def stuck() -> str:
        started.set()
        release.wait(10)
        return "slow"

    t = threading.Thread(target=lambda: lru.get_or_make("k", stuck))
    t.start()
    assert started.wait(10)
    assert lru.get_or_make("k", lambda: "own") == "own"  # did not wait for the stuck one
    release.set()
    t.join(10)
    assert lru.get_or_make("k", lambda: "again") == "slow"


def test_estimate_is_shared_by_equal_scenarios_and_equals_the_calculator():
    cache.CACHE.clear()
    a = load_scenario("qwen2.5-7b-grpo-8xh100", overrides={"rollout.n": 7})
    b = load_scenario("qwen2.5-7b-grpo-8xh100", overrides={"rollout.n": 7})  # equal, another object
    assert a is not b and cache.scenario_key(a) == cache.scenario_key(b)
    ra = cache.cached_estimate(a)
    assert cache.cached_estimate(b) is ra
    assert ra == estimate(a)
    c = load_scenario("qwen2.5-7b-grpo-8xh100", overrides={"rollout.n": 6})
    assert cache.scenario_key(c) != cache.scenario_key(a)
    assert cache.cached_estimate(c).rollout.sequences_per_replica != ra.rollout.sequences_per_replica


@pytest.mark.parametrize("worst", [False, True])
def test_figures_are_cached_per_scenario_language_and_case(worst):
    cache.CACHE.clear()
    s = load_scenario("qwen2.5-7b-grpo-8xh100")
    key = cache.scenario_key(s)
    report = cache.cached_estimate(s, key)
    fig = cache.cached_figure("memory", key, lambda: figures.memory_figure(report, lang="en", worst=worst), "en", worst)
    again = cache.cached_figure("memory", key, lambda: pytest.fail("recomputed"), "en", worst)
    assert again is fig
    assert fig.to_json() == figures.memory_figure(report, lang="en", worst=worst).to_json()
    zh = cache.cached_figure("memory", key, lambda: figures.memory_figure(report, lang="zh", worst=worst), "zh", worst)
    assert zh is not fig


def test_chart_spec_is_the_figures_dict_made_once_and_streamlit_sends_the_same_bytes():
    """``st.plotly_chart`` reads ``to_dict()`` of what it is given and serialises it: the spec of a cached figure gives
    the very dict the figure would, made once per figure object (not per rerun)."""
    import plotly.io
    import plotly.tools

    report = estimate(load_scenario("qwen2.5-7b-grpo-8xh100"))
    for fig in (figures.memory_figure(report), figures.role_figure(report, worst=True)):
        spec = cache.chart_spec(fig)
        assert cache.chart_spec(fig) is spec  # made once
        assert spec.to_dict() == fig.to_dict()
        sent = plotly.tools.return_figure_from_figure_or_data(spec, validate_figure=True)  # what Streamlit does
        direct = plotly.tools.return_figure_from_figure_or_data(fig, validate_figure=True)
        assert plotly.io.to_json(sent, validate=False) == plotly.io.to_json(direct, validate=False)
    other = figures.memory_figure(report)
    assert cache.chart_spec(other) is not cache.chart_spec(fig)  # per figure object, never shared by equality


def test_a_scenario_is_validated_once_per_preset_and_overrides_unless_they_are_huge():
    from calculator.inputs.presets import get_model
    from ui import state

    preset = "qwen2.5-7b-grpo-8xh100"
    cache.CACHE.clear()
    small = {"hardware.num_gpus": 16}
    first = state._validated(preset, small)
    assert state._validated(preset, dict(small)) is first  # equal overrides: the same frozen Scenario
    assert first == load_scenario(preset, overrides=small)
    assert state._validated(preset, {"hardware.num_gpus": 8}) is not first
    # a pasted config.json can be 2 MiB: such overrides are validated every time, never held in the LRU
    config = {**get_model("qwen2.5-7b").config, "padding": "x" * state.MAX_CACHED_OVERRIDES_CHARS}
    huge = {"model.config": config}
    entries = len(cache.CACHE)
    a, b = state._validated(preset, huge), state._validated(preset, huge)
    assert a is not b and a == b and len(cache.CACHE) == entries
