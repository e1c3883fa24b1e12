"""OOM advisor (issue #6): the highlighted suggestion fits when applied, figures match a fresh estimate,
ranking rules, statuses, bad input."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from calculator import InputError, estimate, load_scenario
from calculator.inputs.scenario import Scenario
from calculator.planning.advisor import TIER_ORDER, TIME_COST_LABELS, advise
from calculator.planning.fit import fit_check
from tests.support.strategies import scenario_dicts

BASE = "qwen2.5-7b-grpo-8xh100"
MARGIN = 0.10
NOT_FITTING = {
    "a100-40gb": {"hardware.gpu": "a100-40gb"},
    "rtx4090": {"hardware.gpu": "rtx4090-24gb"},
    "32b-on-h100": {"model.path": "qwen2.5-32b"},
    # PPO as the sidebar switch gives it: the critic micro-batch = the actor's (calculator.role_settings).
    "ppo-l40s": {
        "hardware.gpu": "l40s-48gb",
        "algorithm.adv_estimator": "gae",
        "rollout.n": 1,
        "critic.ppo_micro_batch_size_per_gpu": 16,
    },
    "long-responses": {"data.max_response_length": 8192, "data.mean_response_length": 4000},
}


@pytest.fixture(scope="module", params=list(NOT_FITTING), ids=list(NOT_FITTING))
def case(request):
    s = load_scenario(BASE, overrides=NOT_FITTING[request.param])
    return s, advise(s, margin=MARGIN)


def _apply_native(s: Scenario, changes: dict) -> Scenario:
    return load_scenario(s, overrides=changes)


def test_scenarios_do_not_fit(case):
    _, a = case
    assert a.status != "fits" and a.suggestions
    assert not a.base.fits and a.base.reasons


def test_first_fit_really_fits_when_applied(case):
    s, a = case
    first = [x for x in a.suggestions if x.first_fit]
    assert len(first) == 1, "every case here has a change that fits"
    sug = first[0]
    assert a.first_fit == sug.lever and sug.fits
    # by the scenario's own fields
    new = _apply_native(s, sug.native_changes)
    assert fit_check(estimate(new), new, MARGIN).fits
    # by the verl overrides a user would paste (rlplan-only fields such as mean lengths excepted)
    if not any(k.startswith(("data.mean_", "overheads.", "efficiency.")) for k in sug.native_changes):
        pasted = load_scenario(s, verl_overrides=sug.verl_overrides)
        report = estimate(pasted)
        assert fit_check(report, pasted, MARGIN).fits
        assert report.peak.gib_per_gpu == pytest.approx(sug.peak_gib_per_gpu, rel=1e-9)


def test_every_suggestion_matches_a_fresh_estimate(case):
    s, a = case
    base_peak = estimate(s).peak.gib_per_gpu
    for sug in a.suggestions:
        new = _apply_native(s, sug.native_changes)
        r = estimate(new)
        assert r.peak.gib_per_gpu == pytest.approx(sug.peak_gib_per_gpu, rel=1e-9), sug.lever
        assert r.peak.worst_case_gib_per_gpu == pytest.approx(sug.worst_case_gib_per_gpu, rel=1e-9)
        assert sug.saving_gib == pytest.approx(base_peak - sug.peak_gib_per_gpu)
        assert fit_check(r, new, MARGIN).fits == sug.fits
        assert sug.step_s == (r.time.step_s if r.time is not None else None)
        if sug.step_s is not None and a.base_step_s is not None:
            assert sug.added_step_s == pytest.approx(sug.step_s - a.base_step_s)
        else:  # no delta against a step that cannot run (issue 13 item 6)
            assert sug.added_step_s is None


def test_ranking_rules(case):
    """Issue 13 item 7: options that fit first, then those that help, then the rest; within each group settings,
    then more GPUs, then workload changes; within a tier by step time (none last)."""
    _, a = case
    assert [x.rank for x in a.suggestions] == list(range(1, len(a.suggestions) + 1))
    groups = [(not x.fits, not x.helps) for x in a.suggestions]
    assert groups == sorted(groups), "options that fit first, then those that help, then the rest"
    for group in set(groups):
        members = [x for x in a.suggestions if (not x.fits, not x.helps) == group]
        tiers = [TIER_ORDER[x.tier] for x in members]
        assert tiers == sorted(tiers), "settings, then more GPUs, then workload changes"
        for tier in TIER_ORDER:
            steps = [x.step_s for x in members if x.tier == tier]
            timed = [t for t in steps if t is not None]
            assert steps == timed + [None] * (len(steps) - len(timed)), "an option without a step time goes last"
            assert timed == sorted(timed), "within a tier: by step time"
            if a.base_step_s is not None:
                added = [x.added_step_s for x in members if x.tier == tier and x.added_step_s is not None]
                assert added == sorted(added), "step time order is the order of the time added"
    for x in a.suggestions:
        assert x.changes_experiment == (x.tier == "workload")
        assert x.fits <= x.helps
    assert a.suggestions[0].fits and a.suggestions[0].first_fit


def test_fastest_fitting_title_is_the_fastest_fitting_option(case):
    """Issue 13 item 10: 'Fastest fitting settings' is never slower than another fitting option at its count."""
    _, a = case
    for x in a.suggestions:
        if x.title.startswith("Fastest fitting settings"):
            rivals = [y.step_s for y in a.suggestions if y.fits and y.num_gpus == x.num_gpus and y.step_s is not None]
            assert x.fits and x.step_s <= min(rivals)


def test_workload_changes_are_labelled(case):
    _, a = case
    for x in a.suggestions:
        if x.tier == "workload":
            assert any(
                k.startswith(("data.", "rollout.n", "model.lora_rank", "actor.ppo_mini")) for k in x.native_changes
            )


def test_fitting_scenario_needs_no_advice():
    a = advise(load_scenario(BASE))
    assert a.status == "fits" and a.suggestions == [] and a.first_fit is None and a.combined is None


def test_within_margin_status():
    s = load_scenario(BASE)
    peak = estimate(s).peak.gib_per_gpu
    margin = 1 - (peak - 1.0) / 79.22  # fits the usable memory but not the margin
    a = advise(s, margin=margin)
    assert a.status == "within_margin"
    assert a.first_fit is not None


def test_without_step_time_ranks_by_mechanism(monkeypatch):
    import calculator.planning.advisor as adv
    import calculator.planning.search as ps
    import calculator.planning.space as space

    real = adv.estimate
    monkeypatch.setattr(adv, "estimate", lambda s, **kw: real(s, **kw).model_copy(update={"time": None}))
    monkeypatch.setattr(ps, "estimate", lambda s, **kw: real(s, **kw).model_copy(update={"time": None}))
    monkeypatch.setattr(space, "with_step_time", lambda report, s: report)  # no time model for fitting ones either
    a = advise(load_scenario(BASE, overrides={"hardware.gpu": "a100-40gb"}))
    assert a.base_step_s is None
    for fits in (True, False):
        for tier in TIER_ORDER:
            classes = [
                TIME_COST_LABELS.index(x.time_cost)
                for x in a.suggestions
                if x.helps and x.fits == fits and x.tier == tier
            ]
            assert classes == sorted(classes)
    assert all(x.step_s is None and x.added_step_s is None for x in a.suggestions)


@pytest.mark.parametrize(("kwargs", "field"), [({"margin": 1.2}, "margin"), ({"max_gpus": 0}, "max_gpus")])
def test_bad_input(kwargs, field):
    with pytest.raises(InputError) as err:
        advise(load_scenario(BASE), **kwargs)
    assert err.value.problems[0].startswith(f"{field}:")


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(scenario_dicts())
def test_first_fit_on_random_scenarios(d):
    s = Scenario(**d)
    a = advise(s, margin=MARGIN, max_gpus=64)
    if a.status == "fits":
        assert not a.suggestions
        return
    for sug in a.suggestions:
        if sug.first_fit:
            new = load_scenario(s, overrides=sug.native_changes)
            assert fit_check(estimate(new), new, MARGIN).fits


def test_megatron_moe_advice_searches_the_layout_like_plan():
    """Qwen3-30B-A3B under Megatron at TP 1 / PP 1 / EP 1 on 8 x H100 fits with no setting of its own layout (every GPU
    holds the whole model's bf16 params and grads); the planner's search, with layouts (as ``plan``), fits at these
    8 GPUs, and its verl overrides (after the launch script's model_engine=megatron) estimate a fit."""
    s = load_scenario(BASE, overrides={"model.path": "qwen3-30b-a3b", "actor.strategy": "megatron"})
    a = advise(s)
    sug = next(x for x in a.suggestions if x.lever == "searched_settings")
    assert sug.fits and sug.num_gpus == 8
    assert "actor_rollout_ref.actor.megatron.tensor_model_parallel_size" in sug.settings
    again = load_scenario(s, verl_overrides=["model_engine=megatron", *sug.verl_overrides])
    assert fit_check(estimate(again), again, a.margin).fits
