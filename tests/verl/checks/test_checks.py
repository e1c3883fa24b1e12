"""verl 0.9.1's own config checks (calculator/verl/checks/__init__.py, ``check_config``): the shipped presets raise
no error, every rule of the rule modules is exercised by a bad config in its test file, problems come errors
first and once each, and estimate() reports them as warnings. The rules themselves: tests/verl/checks/test_batch.py,
test_parallel.py, test_algorithm.py; the raw-key rules: test_raw.py."""

from __future__ import annotations

import re

import pytest

from calculator import estimate, load_scenario
from calculator.inputs.presets import scenario_presets
from calculator.verl.checks import check_config
from tests.support.paths import ROOT
from tests.verl.checks import test_algorithm, test_batch, test_parallel
from tests.verl.checks.cases import GRPO

RULE_TESTS = {"algorithm": test_algorithm, "batch": test_batch, "parallel": test_parallel}


def test_presets_have_no_verl_errors():
    for pid in scenario_presets():
        errors = [p for p in check_config(load_scenario(pid)) if p.severity == "error"]
        assert not errors, (pid, errors)


@pytest.mark.parametrize("module", sorted(RULE_TESTS))
def test_every_rule_has_a_bad_config(module: str) -> None:
    """Each rule a module can emit is caught at least once by the BAD table of its test file."""
    source = (ROOT / "calculator" / "verl" / "checks" / f"{module}.py").read_text()
    emitted = set(re.findall(r'_p\(\s*"(\w+)"', source))
    assert emitted, module
    covered = {case[3] for case in RULE_TESTS[module].BAD}
    assert emitted <= covered, f"rules of {module}.py without a bad config: {sorted(emitted - covered)}"


def test_errors_first_and_each_message_once():
    s = load_scenario(GRPO, overrides={"actor.ppo_micro_batch_size_per_gpu": 48, "rollout.n": 1})
    problems = check_config(s)
    assert [(p.severity, p.rule) for p in problems] == [
        ("error", "micro_divides_mini"),
        ("warning", "group_estimator_n1"),
    ]
    assert len({p.message for p in problems}) == len(problems)


def test_estimate_reports_problems_as_warnings():
    s = load_scenario(GRPO, overrides={"actor.ppo_micro_batch_size_per_gpu": 48})
    r = estimate(s)
    assert any(w.startswith("verl: data size must be divisible") for w in r.warnings)
