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


def _engine_cannot_start():
    """Qwen2.5-32B on the split's 2-GPU rollout pool at TP 1: the bf16 weights (~61 GiB) leave vLLM's
    0.8 x 79.1 GiB budget no room for a KV cache."""
    d = split_scenario("one_step_off").model_dump()
    d["model"]["path"] = "qwen2.5-32b"
    d["rollout"]["tensor_model_parallel_size"] = 1
    return Scenario.model_validate(d)


def test_split_verdict_has_reasons_and_no_step_when_the_engine_cannot_start():
    r = estimate(_engine_cannot_start())
    assert not r.peak.fits and r.peak.reasons  # one verdict source: fits == (reasons == [])
    assert not r.rollout.starts and r.rollout.start_reasons
    assert all(x in r.peak.reasons for x in r.rollout.start_reasons)
    assert r.time is not None and r.time.step_s is None and r.time.reason
    assert r.time.phases_s["rollout"] is None if "rollout" in r.time.phases_s else True


@pytest.mark.parametrize("mode", ["one_step_off", "fully_async"])
def test_split_fits_iff_no_reasons(mode):
    r = estimate(split_scenario(mode))
    assert r.peak.fits == (r.peak.reasons == []) and r.peak.fits
    assert r.peak.worst_case_fits == (r.peak.worst_case_reasons == [])


def test_split_pool_over_memory_is_a_named_reason():
    d = split_scenario("one_step_off").model_dump()
    d["model"].update(path="qwen2.5-32b", enable_gradient_checkpointing=False)  # 4 x 2,600-token activations
    d["rollout"]["tensor_model_parallel_size"] = 2
    r = estimate(Scenario.model_validate(d))
    assert not r.peak.fits
    assert any(x.startswith("trainer pool: peak") and "actor_activations" in x for x in r.peak.reasons)


def test_split_host_ram_per_pool():
    r = estimate(split_scenario("one_step_off"))
    assert r.pools is not None and r.host is not None
    roll, train = (p.host for p in r.pools)
    assert roll is not None and train is not None
    # rollout pool node: 2 GPUs x 1 process (the engine, awake: no weight backup) x 4 GiB + 32 GiB node baseline
    assert roll.components == {"process_baseline": 8.0, "node_baseline": 32.0}
    # trainer pool node: 6 GPUs x (2 processes - the rollout one) x 4 GiB; the ref is the actor itself (no KL)
    assert train.components["process_baseline"] == 6 * 1 * 4.0
    assert "rollout_weight_backup" not in train.components
    assert r.host.total_gib_per_node == max(roll.total_gib_per_node, train.total_gib_per_node)


def test_split_host_ram_is_a_fit_criterion():
    s = split_scenario("one_step_off")
    s = s.model_copy(update={"hardware": s.hardware.model_copy(update={"host_ram_gib_per_node": 40})})
    r = estimate(Scenario.model_validate(s.model_dump()))
    assert not r.peak.fits and any(x.startswith("host RAM:") for x in r.peak.reasons)


@pytest.mark.parametrize("mode", ["one_step_off", "fully_async"])
def test_split_time_carries_the_colocated_overheads_with_formulas(mode):
    r = estimate(split_scenario(mode))
    t = r.time
    assert t is not None
    for phase in ("update_actor",):
        assert {"dispatch", "dp_straggler"} <= set(t.terms_s[phase])
        assert {"dispatch", "dp_straggler"} <= set(t.term_formulas[phase])
    assert set(t.term_formulas["weight_sync"]) == set(t.terms_s["weight_sync"])
