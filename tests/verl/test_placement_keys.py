"""Placement keys (DESIGN.md 4.10): verl's recipe keys and entry modules, import and export round trip."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from calculator import load_scenario
from calculator import verl as V
from calculator.errors import InputError
from calculator.inputs.scenario import Scenario
from tests.verl.test_verl import rich_scenarios

SCRIPTS = Path(__file__).parents[1] / "reference" / "placement_scripts"


def _script(name: str) -> str:
    return (SCRIPTS / name).read_text()


def test_one_step_off_script_imports_the_pools():
    natives, notes = V.import_verl_text(_script("one_step_off_policy__dapo_7b_math_fsdp2_4_12.sh"))
    # NNODES=2, NGPUS_PER_NODE=8, n_gpus_rollout=2 -> trainer 2 x 6, rollout 2 x 2
    assert natives["placement.mode"] == "one_step_off"
    assert natives["hardware.num_gpus"] == 12 and natives["hardware.gpus_per_node"] == 6
    assert natives["placement.rollout_nnodes"] == 2 and natives["placement.rollout_n_gpus_per_node"] == 2
    assert not any("rollout.nnodes" in n for n in notes)  # read, not "not modelled"


def test_fully_async_script_imports_streaming_batches():
    natives, notes = V.import_verl_text(_script("fully_async_policy__dapo_7b_math_fsdp2_16_16.sh"))
    assert natives["placement.mode"] == "fully_async"
    assert natives["placement.require_batches"] == 4 and natives["placement.trigger_parameter_sync_step"] == 4
    assert natives["placement.partial_rollout"] is True
    # train_prompt_bsz=0 (verl asserts it): prompts per sync = 4 x 4 x 32 = 512
    assert natives["data.train_batch_size"] == 512
    assert natives["data.gen_batch_size"] is None
    assert any("train_batch_size=0 is not used" in n for n in notes)


def test_entry_module_alone_selects_the_recipe():
    natives, notes = V.import_verl_text("python3 -m recipe.one_step_off_policy.main_ppo data.train_batch_size=64")
    assert natives["placement.mode"] == "one_step_off"
    assert any("hybrid_engine=False" in n for n in notes)


def test_hybrid_engine_false_without_entry_module():
    natives, _ = V.import_verl_text("python3 -m verl.trainer.main_ppo actor_rollout_ref.hybrid_engine=False")
    assert natives["placement.mode"] == "one_step_off"
    natives, _ = V.import_verl_yaml(
        {"actor_rollout_ref": {"hybrid_engine": False}, "async_training": {"require_batches": 2}}
    )
    assert natives["placement.mode"] == "fully_async" and natives["placement.require_batches"] == 2


def test_colocated_export_is_unchanged_and_uses_main_ppo():
    text = V.format_overrides(Scenario())
    assert "verl.trainer.main_ppo" in text
    assert "hybrid_engine" not in text and "rollout.nnodes" not in text and "async_training" not in text


@pytest.mark.parametrize(
    ("mode", "module"),
    [
        ("one_step_off", "python3 -m verl.experimental.one_step_off_policy.main_ppo"),
        ("fully_async", "python3 -m verl.experimental.fully_async_policy.fully_async_main"),
    ],
)
def test_split_export_writes_the_recipe(mode, module):
    s = Scenario.model_validate({"placement": {"mode": mode, "rollout_nnodes": 2}})
    text = V.format_overrides(s)
    assert module in text and "actor_rollout_ref.hybrid_engine=false" in text and "rollout.nnodes=2" in text
    assert ("async_training.staleness_threshold" in text) is (mode == "fully_async")
    if mode == "fully_async":  # fully_async_rollouter.py asserts both
        assert "data.train_batch_size=0" in text and "data.gen_batch_size=1" in text


_PLACEMENTS = st.fixed_dictionaries(
    {
        "mode": st.sampled_from(["colocated", "one_step_off", "fully_async"]),
        "rollout_nnodes": st.sampled_from([1, 2]),
        "rollout_n_gpus_per_node": st.sampled_from([2, 4, 8]),
        "physical_gpus_per_node": st.sampled_from([8, 16]),
        "staleness_threshold": st.sampled_from([0.0, 0.1, 0.5]),
        "trigger_parameter_sync_step": st.sampled_from([1, 4]),
        "require_batches": st.sampled_from([1, 2]),
        "partial_rollout": st.booleans(),
        "use_rollout_log_probs": st.booleans(),
    }
)


@st.composite
def placed(draw) -> Scenario:
    d = draw(rich_scenarios()).model_dump(mode="python")
    d["placement"] = draw(_PLACEMENTS)
    try:
        return Scenario(**d)
    except ValidationError:
        assume(False)
        raise


SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow]
)


@SETTINGS
@given(placed())
def test_round_trip_command(s: Scenario):
    assert load_scenario(None, verl_overrides=V.format_overrides(s)) == s


@SETTINGS
@given(placed())
def test_round_trip_yaml(s: Scenario):
    assert load_scenario(None, verl_overrides=V.export_yaml(s)) == s


@SETTINGS
@given(placed(), placed())
def test_round_trip_overrides_onto_a_base(s: Scenario, base: Scenario):
    exp = V.export_scenario(s, base)
    text = V.format_overrides(exp, "overrides")
    assert load_scenario(base, overrides=dict(exp.rlplan), verl_overrides=text) == s


def test_bad_recipe_values_are_messages_not_tracebacks():
    text = (
        "python3 -m verl.experimental.fully_async_policy.fully_async_main data.train_batch_size=0 "
        "async_training.require_batches=abc rollout.nnodes=$UNSET"
    )
    with pytest.raises(InputError) as err:
        load_scenario(None, verl_overrides=text)
    assert any("require_batches" in p for p in err.value.problems)
