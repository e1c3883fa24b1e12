"""AppTest: the Planner page of a Megatron run shows the layout it chose (column and settings) and says which
layouts it searches; an FSDP run has no layout column (calculator.planning.layout_search)."""

from __future__ import annotations

from calculator import load_scenario, plan
from tests.ui.test_app import run_app
from ui import keys
from ui.i18n import tr
from ui.state import DEFAULT_PRESET

MOE = {"model.path": "qwen3-30b-a3b", "actor.strategy": "megatron"}


def _planner(params: dict[str, str] | None = None):
    at = run_app(params)
    at.switch_page("ui/pages/planner.py").run()
    at.multiselect(key=keys.PLAN_GPUS).set_value(["h100-80gb"]).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_megatron_plan_shows_the_chosen_layout():
    at = _planner(MOE)
    table = at.dataframe[0].value
    want = plan(load_scenario(DEFAULT_PRESET, overrides=MOE), gpus=["h100-80gb"]).rows[0].recommended
    m = want.megatron_layout
    text = (
        f"TP {m.tensor_model_parallel_size} · PP {m.pipeline_model_parallel_size} · EP {m.expert_model_parallel_size}"
    )
    assert table[tr("en", "plan.layout")].iloc[0] == text
    assert "actor_rollout_ref.actor.megatron.tensor_model_parallel_size" in table[tr("en", "plan.settings")].iloc[0]
    assert tr("en", "plan.layouts_searched") in [c.value for c in at.caption]


def test_fsdp_plan_has_no_layout_column():
    at = _planner()
    assert tr("en", "plan.layout") not in at.dataframe[0].value.columns
    assert tr("en", "plan.layouts_searched") not in [c.value for c in at.caption]
