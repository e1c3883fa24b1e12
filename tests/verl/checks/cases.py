"""Shared by the rule tests of calculator/verl/checks/: a bad config is caught with verl's message (and the verl
source location in it), the same config fixed as the message says passes."""

from __future__ import annotations

from typing import Any

from calculator import load_scenario
from calculator.inputs.scenario import Scenario
from calculator.verl.checks import check_config

GRPO = "qwen2.5-7b-grpo-8xh100"  # 8 GPUs, train 1024, n 5, mini 256, micro 16, log-prob micro 32, KL loss
PPO = "qwen2.5-7b-ppo-8xh100"


def patch(s: Any, key: str, value: Any) -> Any:
    """Set a nested field without validation (for configs the Scenario validator already refuses)."""
    head, _, rest = key.partition(".")
    if not rest:
        return s.model_copy(update={head: value})
    return s.model_copy(update={head: patch(getattr(s, head), rest, value)})


def rules(s: Scenario) -> dict[str, list[str]]:
    """rule -> messages of every problem check_config finds."""
    out: dict[str, list[str]] = {}
    for p in check_config(s):
        out.setdefault(p.rule, []).append(p.message)
    return out


def bad_id(case: tuple) -> str:
    return f"{case[3]}-{'-'.join(f'{k}={v}' for k, v in {**case[1], **case[2]}.items())}"[:90]


def assert_caught(
    preset: str, overrides: dict[str, Any], raw: dict[str, Any], rule: str, severity: str, fragment: str
) -> None:
    s = load_scenario(preset, overrides=overrides)
    for key, value in raw.items():
        s = patch(s, key, value)
    problems = [p for p in check_config(s) if p.rule == rule]
    assert problems, (rule, rules(s))
    assert any(fragment in p.message for p in problems), [p.message for p in problems]
    assert all(p.severity == severity for p in problems)
    assert all(p.source and (p.source in p.message) for p in problems)


def assert_passes(preset: str, overrides: dict[str, Any], rule: str) -> None:
    s = load_scenario(preset, overrides=overrides)
    assert rule not in rules(s), rules(s)[rule]
