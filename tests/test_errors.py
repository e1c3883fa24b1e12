"""The calculator's one input error (calculator/errors.py): one line per problem, each naming the field, offending
values echoed abbreviated."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from calculator import load_scenario
from calculator.errors import InputError, from_validation_error
from calculator.inputs.scenario import Scenario

BASE = "qwen2.5-7b-grpo-8xh100"


def test_input_error_holds_one_line_per_problem():
    one = InputError("a: bad")
    assert one.problems == ["a: bad"] and str(one) == "a: bad"
    two = InputError(["a: bad", "b: worse"])
    assert two.problems == ["a: bad", "b: worse"] and str(two) == "a: bad; b: worse"
    assert isinstance(two, ValueError)  # callers that catch ValueError still catch it


def _problems(**overrides) -> list[str]:
    with pytest.raises(InputError) as info:
        load_scenario(BASE, overrides=overrides)
    return info.value.problems


def test_messages_name_the_field_and_the_value():
    assert _problems(**{"hardware.num_gpus": 0}) == [
        "hardware.num_gpus: Input should be greater than or equal to 1 (got 0)"
    ]
    assert _problems(**{"rollout.name": "trt"}) == ["rollout.name: allowed values are 'vllm' or 'sglang' (got 'trt')"]


def test_unknown_field_is_named_without_its_value():
    with pytest.raises(ValidationError) as info:
        Scenario(name="x", nope={"a": 1})
    assert from_validation_error(info.value).problems == ["nope: unknown field"]
    assert from_validation_error(info.value, prefix="scenario.").problems == ["scenario.nope: unknown field"]


def test_several_problems_are_all_reported():
    problems = _problems(**{"hardware.num_gpus": 0, "rollout.n": 0})
    assert len(problems) == 2
    assert {p.split(":")[0] for p in problems} == {"hardware.num_gpus", "rollout.n"}


def test_huge_values_are_abbreviated():
    (problem,) = _problems(**{"hardware.num_gpus": "x" * 100_000})
    assert problem.startswith("hardware.num_gpus: Input should be a valid integer")
    assert "..." in problem and len(problem) < 400
