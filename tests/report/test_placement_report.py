import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calculator import estimate
from calculator.inputs.scenario import Scenario
from tests.support.placement import split_scenario
from tests.test_fuzz import check_invariants


def test_colocated_report_has_no_pools_key():
    d = json.loads(json.dumps(estimate(Scenario()).model_dump(mode="json")))
    assert "pools" not in d and "placement" not in d


@pytest.mark.parametrize("mode", ["one_step_off", "fully_async"])
def test_split_report(mode):
    r = estimate(split_scenario(mode))
    d = r.model_dump(mode="json")
    assert [p["name"] for p in d["pools"]] == ["rollout", "trainer"]
    assert [p["num_gpus"] for p in d["pools"]] == [4, 12]
    for pool in r.pools or []:
        for ph in pool.phases:
            assert ph.total_bytes == sum(c.bytes for c in ph.details)
    assert r.peak.fits == all(p.peak.fits for p in r.pools or [])
    names = [p.name for p in r.phases]
    assert names[:2] == ["rollout", "weight_sync (rollout pool)"] and names[-1] == "weight_sync"
    assert r.peak.phase in names and r.peak.worst_case_phase in names
    assert r.time is not None
    assert sum(r.time.phases_s.values()) == pytest.approx(r.time.step_s)
    assert "wait_prev_gen" in r.time.phases_s and "rollout" not in r.time.phases_s  # generation is hidden
    assert r.placement is not None and r.placement.num_nodes == 2
    assert r.rollout.num_replicas == 2  # 4 rollout GPUs / TP 2


def test_pool_that_does_not_fit_says_why():
    s = split_scenario(
        "one_step_off",
    ).model_copy(update={"rollout": split_scenario().rollout.model_copy(update={"gpu_memory_utilization": 0.999})})
    r = estimate(Scenario.model_validate(s.model_dump()))
    assert not r.peak.fits
    assert any(w.startswith("rollout pool (4 GPUs) does not fit") for w in r.warnings)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    mode=st.sampled_from(["one_step_off", "fully_async"]),
    r_gpn=st.sampled_from([1, 2, 4, 8]),
    r_nodes=st.integers(1, 3),
    trainer=st.sampled_from([1, 2, 4, 8, 16]),
    staleness=st.sampled_from([0.0, 0.3]),
    partial=st.booleans(),
    log_probs=st.booleans(),
)
def test_split_invariants(mode, r_gpn, r_nodes, trainer, staleness, partial, log_probs):
    d = {
        "model": {"path": "qwen2.5-0.5b"},
        "hardware": {"num_gpus": trainer},
        "algorithm": {"adv_estimator": "grpo"},
        "rollout": {"n": 4, "tensor_model_parallel_size": 1},
        "placement": {
            "mode": mode,
            "rollout_n_gpus_per_node": r_gpn,
            "rollout_nnodes": r_nodes,
            "staleness_threshold": staleness,
            "partial_rollout": partial,
            "use_rollout_log_probs": log_probs,
        },
    }
    r = estimate(Scenario.model_validate(d))
    check_invariants(r)
    assert r.time is not None
    assert sum(r.time.phases_s.values()) == pytest.approx(r.time.step_s)
    assert r.placement is not None and r.placement.wait_s >= 0
