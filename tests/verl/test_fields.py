"""Scenario fields and verl values (calculator/verl/fields.py): the cluster and model-path conversions both ways."""

from __future__ import annotations

import pytest

from calculator import load_scenario
from calculator import verl as V
from calculator.inputs.presets import model_presets


def test_native_to_verl_items():
    s = load_scenario("qwen2.5-7b-grpo-8xh100")
    assert V.native_to_verl_items("hardware.num_gpus", 16, s) == [("trainer.n_gpus_per_node", 8), ("trainer.nnodes", 2)]
    assert V.native_to_verl_items("model.path", "qwen2.5-7b", s) == [
        ("actor_rollout_ref.model.path", "Qwen/Qwen2.5-7B")
    ]
    assert V.native_to_verl_items("actor.strategy", "megatron", s) == [("model_engine", "megatron")]
    assert V.native_to_verl_items("hardware.gpu", "a100-80gb", s) == []


@pytest.mark.parametrize("model_id", sorted(model_presets()))
def test_model_path_round_trip(model_id):
    repo = model_presets()[model_id].hf_repo
    assert V._model_id_from_path(repo) == model_id
    assert V._model_id_from_path(f"/models/{repo.split('/')[-1]}") == model_id
