from calculator.inputs.scenario import Scenario
from calculator.verl.checks import check_config
from tests.support.placement import split_scenario


def _rules(s: Scenario) -> set[str]:
    return {p.rule for p in check_config(s)}


def test_colocated_has_no_placement_rules():
    assert not {r for r in _rules(Scenario()) if r.startswith("placement")}


def test_gpu_split_rule():
    # n = 4 divides the 12 trainer GPUs: fine
    assert "placement_gpu_split" not in _rules(split_scenario())
    # n = 5: 12 % 5 != 0 and 5 x 96 = 480 = 12 x 40: still fine (the second condition)
    d = split_scenario().model_dump()
    d["rollout"]["n"] = 5
    assert "placement_gpu_split" not in _rules(Scenario.model_validate(d))
    # n = 5, batch 97: 12 % 5 and 485 % 12 = 5: the samples cannot be spread evenly
    d["data"]["train_batch_size"] = 97
    assert "placement_gpu_split" in _rules(Scenario.model_validate(d))


def test_one_step_off_is_vllm_only():
    d = split_scenario().model_dump()
    d["rollout"]["name"] = "sglang"
    problems = [p for p in check_config(Scenario.model_validate(d)) if p.rule == "placement_engine"]
    assert problems and problems[0].severity == "error"


def test_fully_async_staleness_rules():
    assert "placement_staleness" in _rules(split_scenario("fully_async", staleness_threshold=1.5))
    assert "placement_partial" in _rules(split_scenario("fully_async", staleness_threshold=0.0, partial_rollout=True))
    assert not {"placement_staleness", "placement_partial"} & _rules(split_scenario("fully_async"))
