from calculator.inputs.scenario import Scenario
from calculator.resolve.placement import node_count, prompts_per_sync, resolve_placement
from tests.support.placement import split_scenario


def test_colocated_has_no_pools():
    assert resolve_placement(Scenario()) is None


def test_pools_share_nodes_when_both_fit_in_one():
    # trainer 6 + rollout 2 GPUs per node <= 8: max(2 trainer nodes, 2 rollout nodes) = 2 nodes
    n, shared, note = node_count(split_scenario())
    assert (n, shared) == (2, True) and "max(2, 2) = 2" in note


def test_pools_on_separate_nodes_add_up():
    # trainer 8 + rollout 8 GPUs per node > 8: 1 + 2 = 3 nodes
    s = Scenario.model_validate({"placement": {"mode": "one_step_off", "rollout_nnodes": 2}})
    assert node_count(s)[:2] == (3, False)


def test_pool_views():
    plan = resolve_placement(split_scenario())
    assert plan is not None
    assert (plan.rollout.num_gpus, plan.trainer.num_gpus) == (4, 12)
    assert plan.rollout.scenario.hardware.num_gpus == 4
    assert plan.rollout.scenario.rollout.free_cache_engine is False  # recipe config: the engine never sleeps
    assert plan.trainer.scenario.hardware.num_gpus == 12
    assert plan.old_log_prob_on_trainer


def test_fully_async_prompts_per_sync():
    # trigger 4 x require 2 x ppo_mini_batch_size 24 = 192 prompts between two syncs
    s = split_scenario("fully_async", trigger_parameter_sync_step=4, require_batches=2)
    assert prompts_per_sync(s) == 192
    plan = resolve_placement(s)
    assert plan is not None and plan.trainer.scenario.data.train_batch_size == 192
    assert not plan.old_log_prob_on_trainer  # use_rollout_log_probs: the engine's log-probs


def test_split_validates_rollout_tp_against_its_own_pool():
    # TP 2 x DP 1 must divide the rollout pool (4 GPUs), not the trainer's 12 -- and TP 8 does not
    try:
        Scenario.model_validate({**split_scenario().model_dump(), "rollout": {"tensor_model_parallel_size": 8}})
    except ValueError as e:
        assert "placement rollout GPUs" in str(e)
    else:
        raise AssertionError("TP 8 on a 4-GPU rollout pool must be refused")
