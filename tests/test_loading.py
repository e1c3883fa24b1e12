"""The Python API entry (calculator/loading.py, DESIGN.md 6.3): a preset id, a YAML path, a mapping or a Scenario,
with verl overrides applied first and native dotted overrides second; unknown presets, models and GPUs are input
errors; the verl import's notes come back as warnings."""

from __future__ import annotations

import pytest
import yaml

from calculator import load_scenario
from calculator.errors import InputError
from calculator.loading import load_scenario_with_warnings

BASE = "qwen2.5-7b-grpo-8xh100"


def test_load_scenario_sources(tmp_path):
    s = load_scenario("qwen2.5-7b-grpo-8xh100")
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(s.model_dump(mode="json")))
    assert load_scenario(str(path)) == s
    assert load_scenario(s.model_dump()) == s
    assert load_scenario(s) == s
    with pytest.raises(InputError, match="unknown scenario preset or file"):
        load_scenario("no-such-scenario")


def test_api_contract_example():
    """DESIGN.md 6.3 verbatim."""
    s = load_scenario(
        "qwen2.5-7b-grpo-8xh100",
        overrides={"data.mean_response_length": 300},
        verl_overrides=["actor_rollout_ref.rollout.n=8"],
    )
    assert s.rollout.n == 8 and s.data.mean_response_length == 300


def test_native_overrides_apply_after_verl_overrides():
    s = load_scenario(BASE, overrides={"rollout.n": 3}, verl_overrides="actor_rollout_ref.rollout.n=8")
    assert s.rollout.n == 3


def test_the_source_is_not_modified():
    data = load_scenario(BASE).model_dump()
    before = yaml.safe_dump(data)
    load_scenario(data, overrides={"rollout.n": 3, "hardware.num_gpus": 16})
    assert yaml.safe_dump(data) == before  # deep-copied, not changed in place


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"hardware.gpu": "nope"}, "hardware.gpu: unknown GPU 'nope' (known: a100-40gb"),
        ({"model.path": "nope"}, "model.path: unknown model 'nope' (known: "),
        ({"hardware.num_gpus.x": 1}, "hardware.num_gpus: is a value, cannot set hardware.num_gpus.x"),
    ],
)
def test_unknown_names_are_input_errors(overrides: dict, message: str):
    with pytest.raises(InputError) as info:
        load_scenario(BASE, overrides=overrides)
    assert str(info.value).startswith(message), str(info.value)[:200]


def test_warnings_of_the_verl_import_are_returned():
    s, notes = load_scenario_with_warnings(BASE, verl_overrides=["actor_rollout_ref.actor.made_up_key=3"])
    assert s == load_scenario(BASE)
    assert len(notes) == 1 and "made_up_key" in notes[0]
    assert load_scenario_with_warnings(BASE) == (load_scenario(BASE), [])
