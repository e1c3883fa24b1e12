"""AppTest: the placement selector (sidebar), the pools and timeline on Estimate, Compare's "colocated vs split",
and the split column of the Planner (issue 17)."""

from __future__ import annotations

import json

from calculator import estimate, load_scenario
from tests.ui.test_app import qp, run_app
from ui import keys
from ui.placement import ptr
from ui.state import DEFAULT_PRESET

SPLIT = {"placement.mode": "one_step_off", "hardware.num_gpus": "4", "placement.rollout_n_gpus_per_node": "4"}


def _markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_selector_switches_to_a_split_and_back():
    at = run_app()
    assert ptr("en", "title") not in _markdown(at)  # colocated: no pools section
    at.selectbox(key=keys.field_key("placement.mode")).set_value("one_step_off").run()
    at.number_input(key=keys.field_key("hardware.num_gpus")).set_value(4).run()
    at.number_input(key=keys.field_key("placement.rollout_n_gpus_per_node")).set_value(4).run()
    assert not at.exception, [e.value for e in at.exception]
    assert ptr("en", "title") in _markdown(at)
    assert qp(at, "placement.mode") == "one_step_off"


def test_estimate_shows_pools_timeline_and_comparison():
    at = run_app(SPLIT)
    assert not at.exception
    s = load_scenario(DEFAULT_PRESET, overrides={k: int(v) if v.isdigit() else v for k, v in SPLIT.items()})
    r = estimate(s)
    assert r.pools is not None
    pools = at.dataframe[0].value
    assert list(pools[ptr("en", "pool")]) == ["rollout", "trainer"]
    assert list(pools[ptr("en", "gpus")]) == [4, 4]
    timeline = next(c for c in at.get("plotly_chart") if "seconds into the step" in c.proto.spec)
    spec = json.loads(timeline.proto.spec)
    assert {t["y"][0] for t in spec["data"]} == {"rollout", "trainer"}
    comparison = at.dataframe[1].value
    assert list(comparison[ptr("en", "layout")]) == ["colocated x 8", "one_step_off (4 + 4)"]
    assert comparison[ptr("en", "step")].iloc[1] == round(r.time.step_s, 1)


def test_compare_quick_colocated_vs_split():
    at = run_app()
    at.switch_page("ui/pages/compare.py").run()
    at.pills(key=keys.CMP_QUICK).set_value("placement").run()
    assert not at.exception, [e.value for e in at.exception]
    # two columns (colocated, split), each with its peak and its step time (issue 13 item 13)
    assert [m.label for m in at.metric].count("Peak / GPU") == 2 and len(at.metric) == 4


def test_planner_shows_the_split():
    at = run_app(SPLIT)
    at.switch_page("ui/pages/planner.py").run()
    at.multiselect(key=keys.PLAN_GPUS).set_value(["h100-80gb"]).run()
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value
    assert ptr("en", "split_col") in table.columns
    assert "rollout" in str(table[ptr("en", "split_col")].iloc[0]) or ptr("en", "no_split") in str(
        table[ptr("en", "split_col")].iloc[0]
    )
