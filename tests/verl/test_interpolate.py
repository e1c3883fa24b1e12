"""Hydra values and interpolations (calculator/verl/interpolate.py), through the importer that uses them:
``${key}``, relative ``${.key}`` / ``${..key}``, ``${oc.select:key,default}`` resolved against the imported settings
over verl 0.9.1's defaults; the environment, unknown keys, cycles and ``???`` are named and ignored, never guessed."""

from __future__ import annotations

import pytest
import yaml

from calculator import verl as V

N = "actor_rollout_ref.rollout.n"


def test_yaml_fragment_dotted_and_relative_interpolation():
    text = """
actor_rollout_ref:
  actor:
    ppo_max_token_len_per_gpu: 20000
  rollout:
    log_prob_max_token_len_per_gpu: ${actor_rollout_ref.actor.ppo_max_token_len_per_gpu}
    n: 4
critic:
  ppo_max_token_len_per_gpu: 9000
  forward_max_token_len_per_gpu: ${..data.max_prompt_length}
  ppo_epochs: ${.ppo_max_token_len_per_gpu}
data.max_prompt_length: 2048
"""
    natives, notes = V.import_verl_text(text)
    assert natives["rollout.log_prob_max_token_len_per_gpu"] == 20000
    assert natives["critic.forward_max_token_len_per_gpu"] == 2048  # ${..key}: from the root
    assert natives["critic.ppo_epochs"] == 9000  # ${.key}: a sibling
    assert natives["data.max_prompt_length"] == 2048 and natives["rollout.n"] == 4
    natives2, _ = V.import_verl_yaml(yaml.safe_load(text))
    assert natives2 == natives


@pytest.mark.parametrize(
    ("text", "natives"),
    [
        # a key set on the same command line
        (f"{N}='${{data.train_batch_size}}' data.train_batch_size=64", {"rollout.n": 64, "data.train_batch_size": 64}),
        # a key not set: verl 0.9.1's default (data.train_batch_size: 1024 in _generated_ppo_trainer.yaml)
        (f"{N}='${{data.train_batch_size}}'", {"rollout.n": V.VERL_DEFAULTS["data.train_batch_size"]}),
        # oc.select: the key when it resolves, the default when it does not
        (f"{N}='${{oc.select:data.train_batch_size,6}}' data.train_batch_size=64", {"rollout.n": 64, "data.train_batch_size": 64}),
        (f"{N}='${{oc.select:actor_rollout_ref.made_up,6}}'", {"rollout.n": 6}),
        (f"{N}='${{oc.select:{N},3}}'", {"rollout.n": 3}),  # a cycle through oc.select takes the default
    ],
)  # fmt: skip
def test_interpolations_resolve(text: str, natives: dict) -> None:
    assert V.VERL_DEFAULTS["data.train_batch_size"] == 1024
    assert V.import_verl_text(text) == (natives, [])


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("${oc.env:NRESP}", "${oc.env:NRESP} reads the environment at launch"),
        ("${actor_rollout_ref.made_up}", "actor_rollout_ref.made_up is not a known verl key"),
        (f"${{{N}}}", f"interpolation cycle at {N}"),
        ("${oc.create:[1]}", "${oc.create:[1]}: resolver not modelled"),
    ],
)
def test_unresolvable_interpolation_is_named_and_ignored(value: str, why: str) -> None:
    natives, notes = V.import_verl_text(f"{N}='{value}'")
    assert natives == {}
    assert notes == [f"verl {N}: cannot resolve '{value}' ({why}); ignored"]


def test_cycle_between_two_keys_and_required_values_in_yaml() -> None:
    natives, notes = V.import_verl_yaml(
        {
            "data": {
                "max_prompt_length": "${data.max_response_length}",
                "max_response_length": "${data.max_prompt_length}",
            }
        }
    )
    assert natives == {} and len(notes) == 2 and all("interpolation cycle" in n for n in notes)
    natives, notes = V.import_verl_yaml({"actor_rollout_ref": {"rollout": {"n": "???"}}})
    assert natives == {} and notes == [f"verl {N}: ??? (required, not set)"]


def test_relative_interpolation_in_yaml() -> None:
    natives, notes = V.import_verl_yaml(
        yaml.safe_load("data:\n  max_prompt_length: 100\n  max_response_length: ${.max_prompt_length}\n")
    )
    assert natives == {"data.max_prompt_length": 100, "data.max_response_length": 100} and notes == []
