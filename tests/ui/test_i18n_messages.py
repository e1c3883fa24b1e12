"""Every message id the calculator can emit (advisor levers, verl check rules) has both languages in
ui/i18n_messages.py, and the dashboard shows them in Chinese (issue 13 item 14)."""

from __future__ import annotations

import re

from calculator import estimate, load_scenario
from calculator.planning.levers import LEVERS
from tests.support.paths import ROOT
from tests.ui.test_app import run_app
from ui.i18n_messages import CHECKS, LEVERS_ZH, check_text, lever_title

# The advisor's levers built inside advisor.py (not in the LEVERS table).
ADVISOR_LEVERS = set(re.findall(r'Lever\(\s*"([a-z_]+)"', (ROOT / "calculator/planning/advisor.py").read_text()))


def _rules() -> set[str]:
    """Every rule id passed to ``_p(...)`` in calculator/verl/checks (read from the source: a new rule fails here)."""
    rules: set[str] = set()
    for path in (ROOT / "calculator/verl/checks").glob("*.py"):
        rules |= set(re.findall(r'_p\(\s*"([a-z_0-9]+)"', path.read_text()))
    return rules


def test_every_check_rule_has_both_languages() -> None:
    rules = _rules()
    assert len(rules) >= 20  # the scan found the rules
    for lang in ("en", "zh"):
        assert rules - set(CHECKS[lang]) == set(), lang
    assert set(CHECKS["en"]) == set(CHECKS["zh"])


def test_every_advisor_lever_has_chinese() -> None:
    ids = set(LEVERS) | ADVISOR_LEVERS
    assert {"searched_settings", "searched_min_gpus", "combined"} <= ADVISOR_LEVERS
    assert ids - set(LEVERS_ZH) == set()


def test_lever_titles_keep_their_numbers() -> None:
    assert lever_title("searched_settings", "Fastest fitting settings at 32 GPUs (planner search)", "zh") == (
        "32 块 GPU 下最快的可行设置（规划器搜索）"
    )
    assert lever_title("param_offload", "Offload the actor's parameters", "en") == "Offload the actor's parameters"
    assert check_text("micro_batch_required", "[critic] Please set ...", "zh").startswith("**缺少 verl 要求的")


def test_chinese_page_shows_chinese_advice_and_checks() -> None:
    params = {"lang": "zh", "hardware.gpu": "a100-40gb", "rollout.gpu_memory_utilization": "0.9", "rollout.n": "1"}
    r = estimate(
        load_scenario(
            "qwen2.5-7b-grpo-8xh100",
            overrides={"hardware.gpu": "a100-40gb", "rollout.gpu_memory_utilization": 0.9, "rollout.n": 1},
        )
    )
    assert r.checks, "the scenario must trip a verl check"
    at = run_app(params)
    shown = [m.value for m in at.markdown] + [e.value for e in at.error] + [w.value for w in at.warning]
    assert any(CHECKS["zh"][c.rule] in text for c in r.checks for text in shown)
    assert any(zh in text for zh in LEVERS_ZH.values() for text in shown)
