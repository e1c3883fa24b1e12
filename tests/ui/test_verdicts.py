"""AppTest: the dashboard's verdict, metrics, rollout card, advisor and Compare columns tell the same story as
``peak.reasons`` (issue 13 items 5-8; calculator/report/verdict.py is the one source)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from calculator import advise, estimate, load_scenario, role_settings
from tests.ui.test_app import run_app
from ui import keys
from ui.i18n import tr
from ui.state import DEFAULT_PRESET
from ui.text import md

# Item 5: the 70B model on 32 x H200 from the 7B preset (memory fits, the KV cache is short of max_model_len).
ITEM5 = {"model.path": "llama3.1-70b", "hardware.num_gpus": "32", "hardware.gpu": "h200-141gb"}
ITEM5_OVERRIDES = {"model.path": "llama3.1-70b", "hardware.num_gpus": 32, "hardware.gpu": "h200-141gb"}
# Item 6: a 70B model on 8 x H100 at util 0.6: the rollout engine has no KV cache at all.
NO_KV = {"model.path": "llama3.1-70b"}


def _metric(at: AppTest, key: str):
    return next(m for m in at.metric if m.label == tr("en", key))


def _headline_errors(at: AppTest) -> list[str]:
    head = tr("en", "head.not_fit", n=0).split(" (")[0]  # "Does not fit"
    return [e.value for e in at.error if head in e.value]


def test_item5_headline_metrics_and_card_name_the_kv_reason() -> None:
    r = estimate(load_scenario(DEFAULT_PRESET, overrides=ITEM5_OVERRIDES))
    at = run_app(ITEM5)
    heads = _headline_errors(at)
    assert len(heads) == 1
    assert tr("en", "head.not_fit", n=len(r.peak.reasons)) in heads[0]
    for reason in r.peak.reasons:  # every reason, from the one source
        assert md(reason, limit=1000) in heads[0]
    assert md("KV cache holds 107,648 tokens per replica < max_model_len 131,072") in heads[0]
    assert "free at startup" not in heads[0]  # never the false "129.59 < 83.88"
    peak = _metric(at, "metric.peak")
    assert peak.delta == tr("en", "metric.memory_headroom", headroom=r.peak.headroom_gib)  # not a bare "+29.28"
    step = _metric(at, "metric.step_time")
    assert step.value == "—" and step.delta == tr("en", "metric.no_start")
    assert _metric(at, "metric.concurrency").delta == tr("en", "metric.no_start")  # no waves
    card = [e.value for e in at.error if e.value.startswith("- ") and "KV cache holds" in e.value]
    assert card == [f"- {md(x, limit=1000)}" for x in [r.rollout.start_reasons[0]]]
    texts = [m.value for m in at.markdown]
    assert any(tr("en", "est.step_time_none") in t for t in texts)


def test_no_kv_cache_shows_no_step_time_and_no_negative_advisor_delta() -> None:
    r = estimate(load_scenario(DEFAULT_PRESET, overrides=NO_KV))
    assert r.time.step_s is None and r.rollout.kv_cache_tokens_per_replica == 0
    at = run_app(NO_KV)
    assert _metric(at, "metric.step_time").value == "—"
    assert "waves" not in _metric(at, "metric.concurrency").delta
    advice = advise(load_scenario(DEFAULT_PRESET, overrides=NO_KV))
    assert all(s.added_step_s is None for s in advice.suggestions)  # no delta against a null step time
    texts = [m.value for m in at.markdown]
    assert not any(t.startswith(("-", "+")) and t.endswith(" s") for t in texts)


def test_fits_shows_success_and_no_reasons() -> None:
    at = run_app()
    r = estimate(load_scenario(DEFAULT_PRESET))
    assert r.peak.fits and not _headline_errors(at)
    assert any(tr("en", "head.fits", **_fits_values(r)) == s.value for s in at.success)


def _fits_values(r) -> dict:
    p = r.peak
    return dict(peak=p.gib_per_gpu, usable=r.hardware.usable_memory_gib, phase=p.phase, headroom=p.headroom_gib)


def test_switching_to_ppo_fills_the_critic_micro_batch_and_compare_agrees() -> None:
    """Item 8: the algorithm switch gives the critic the actor's micro-batch; verl accepts the config, the headline
    and Compare's PPO column say the same."""
    at = run_app()
    at.selectbox(key=keys.ALGO).set_value("PPO").run()
    assert not at.exception
    actor_micro = at.number_input(key=keys.field_key("actor.ppo_micro_batch_size_per_gpu")).value
    assert at.number_input(key=keys.field_key("critic.ppo_micro_batch_size_per_gpu")).value == actor_micro
    ppo = load_scenario(DEFAULT_PRESET, overrides={"algorithm.adv_estimator": "gae"})
    r = estimate(load_scenario(ppo, overrides=role_settings(ppo)))
    assert r.peak.fits and not any(x.startswith("verl rejects") for x in r.peak.reasons)
    assert not _headline_errors(at)
    assert _metric(at, "metric.peak").value == f"{r.peak.gib_per_gpu:.2f} GiB"
    at.switch_page("ui/pages/compare.py").run()
    assert not at.exception
    ppo_col = at.metric[0]  # quick comparison ppo_grpo: PPO first
    assert ppo_col.value == f"{r.peak.gib_per_gpu:.2f} GiB"
    assert any(tr("en", "cmp.fits") in c.value for c in at.caption)


def test_advisor_lists_fitting_options_first_and_all_are_reachable() -> None:
    """Item 7: the header count is what can be shown, options that fit come first, 'show all' reaches the rest."""
    overrides = {"hardware.gpu": "a100-40gb"}
    advice = advise(load_scenario(DEFAULT_PRESET, overrides=overrides))
    n, n_fit = len(advice.suggestions), sum(s.fits for s in advice.suggestions)
    assert n > 6 and n_fit >= 1
    at = run_app(overrides)
    title = tr("en", "adv.title", n=n, fit=n_fit)
    assert any(e.label == title for e in at.expander)
    apply = [b for b in at.button if b.key and b.key.startswith("adv_apply_")]
    assert len(apply) == 6
    rows = [m.value for m in at.markdown if m.value.startswith((":green[", ":orange[", ":grey["))]
    assert [r.split("  \n")[0] for r in rows[: min(n_fit, 6)]] == [
        ":green[:material/check_circle:] **" + s.title + "**" for s in advice.suggestions[: min(n_fit, 6)]
    ]
    first = advice.suggestions[0]  # its figures on the row's second line
    assert f"{tr('en', 'adv.peak_after')} {first.peak_gib_per_gpu:.2f} GiB" in rows[0]
    at.toggle(key="adv_show_all").set_value(True).run()
    assert not at.exception
    assert len([b for b in at.button if b.key and b.key.startswith("adv_apply_")]) == n


def test_host_ram_card_shows_the_reports_numbers() -> None:
    """The Estimate page's host RAM card (calculator.memory.host) shows the report's total, usable and node RAM,
    and turns into a block when host RAM is what does not fit (the headline names it from peak.reasons)."""
    low = {"hardware.host_ram_gib_per_node": "64"}
    for params, fits in (({}, True), (low, False)):
        over = {k: float(v) for k, v in params.items()}
        r = estimate(load_scenario(DEFAULT_PRESET, overrides=over))
        h = r.host
        assert h is not None and h.fits is fits
        at = run_app(params)
        title = tr(
            "en", "est.host_title", total=h.total_gib_per_node, usable=h.usable_ram_gib_per_node, ram=h.ram_gib_per_node
        )
        mark = ":material/check_circle: " if fits else ":material/block: "
        assert f"{mark}**{title}**" in [m.value for m in at.markdown]
        if not fits:
            assert any("host RAM:" in e for e in _headline_errors(at))
