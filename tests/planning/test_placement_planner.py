import pytest

from calculator import load_scenario, plan
from calculator.errors import InputError
from calculator.inputs.scenario import Scenario
from calculator.planning.placement import search_split, split_candidates
from tests.support.placement import split_scenario


def _base() -> Scenario:
    # the split scenario's model and batch, colocated on 16 GPUs (2 nodes x 8)
    d = split_scenario().model_dump()
    d["hardware"] = {"num_gpus": 16, "gpus_per_node": 8}
    d["placement"] = {"mode": "colocated"}
    return Scenario.model_validate(d)


def test_candidates_keep_the_total_and_verl_layouts():
    cands = split_candidates(_base(), "one_step_off")
    assert cands
    for s in cands:
        p = s.placement
        assert s.hardware.num_gpus + p.rollout_num_gpus == 16
        assert s.rollout.tensor_model_parallel_size <= p.rollout_n_gpus_per_node
        # shared nodes (trainer.nnodes = rollout.nnodes) or whole nodes (n_gpus_per_node equal)
        shared = s.hardware.num_nodes == p.rollout_nnodes
        assert shared or s.hardware.gpus_per_node == p.rollout_n_gpus_per_node == 8
        assert s.data.train_batch_size * s.rollout.n % s.hardware.num_gpus == 0  # verl's batch geometry


def test_search_split_finds_a_fitting_split():
    best, n = search_split(_base(), "one_step_off", 0.1)
    assert best is not None and n > 0
    assert best.report.peak.fits and best.report.pools is not None


def test_plan_placement_rows_carry_the_rollout_pool():
    p = plan(load_scenario("qwen2.5-7b-grpo-8xh100"), gpus=["h100-80gb"], placement="one_step_off")
    d = p.model_dump(mode="json")
    assert d["placement"] == "one_step_off"
    split = d["rows"][0]["split"]
    assert split is not None
    assert {"rollout.nnodes", "rollout.n_gpus_per_node", "actor_rollout_ref.hybrid_engine"} <= set(split["settings"])
    assert split["settings"]["actor_rollout_ref.hybrid_engine"] is False


def test_colocated_plan_json_unchanged():
    d = plan(load_scenario("qwen2.5-7b-grpo-8xh100"), gpus=["h100-80gb"]).model_dump(mode="json")
    assert "placement" not in d and "split" not in d["rows"][0]


def test_bad_placement_is_named():
    with pytest.raises(InputError, match="placement: must be one of colocated, one_step_off, fully_async"):
        plan(load_scenario("qwen2.5-7b-grpo-8xh100"), gpus=["h100-80gb"], placement="split")


def test_search_split_applies_the_whole_fit_rule():
    """A split whose nodes lack host RAM does not fit (criterion 6 of calculator.planning.fit), as for colocated rows."""
    base = _base()
    low = base.model_copy(update={"hardware": base.hardware.model_copy(update={"host_ram_gib_per_node": 16})})
    best, n = search_split(low, "one_step_off", 0.1)
    assert best is None and n > 0
