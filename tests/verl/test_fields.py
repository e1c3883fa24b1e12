"""Scenario fields and verl values (calculator/verl/fields.py): the cluster and model-path conversions both ways."""

from __future__ import annotations

import pytest

from calculator import load_scenario
from calculator import verl as V
from calculator.inputs.presets import model_id_for_path, model_presets


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
    assert model_id_for_path(repo) == model_id
    assert model_id_for_path(f"/models/{repo.split('/')[-1]}") == model_id


def test_scenario_fields_defaults_and_engine():
    s = load_scenario("qwen2.5-7b-grpo-8xh100")
    assert V.native_field_exists("rollout.n") and not V.native_field_exists("rollout.nope")
    assert V.native_default("rollout.n") == 1 and V.native_default("hardware.num_gpus") == 8
    assert V.engine_of(s) == "fsdp"
    assert V.engine_of(load_scenario(s, overrides={"actor.strategy": "megatron"})) == "megatron"
    assert V.engine_of(load_scenario(s, overrides={"actor.strategy": "fsdp2"})) == "fsdp"


def test_value_conversions():
    s = load_scenario("qwen2.5-7b-grpo-8xh100")
    # a GPU count below one node: one node of that many GPUs
    assert V.native_to_verl_items("hardware.num_gpus", 4, s) == [("trainer.n_gpus_per_node", 4), ("trainer.nnodes", 1)]
    # vLLM's kv_cache_dtype goes into the engine_kwargs pass-through dict, added with '+'
    assert V.native_to_verl_items("rollout.kv_cache_dtype", "fp8", s) == [
        ("+actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_dtype", "fp8")
    ]
    assert V.native_to_verl_items("model.target_modules", "attention", s) == [
        ("actor_rollout_ref.model.target_modules", ["q_proj", "k_proj", "v_proj", "o_proj"])
    ]
    assert model_id_for_path("/somewhere/unknown-model") is None


# The models of verl's example scripts (verl main, commit b178a3cd5: examples/grpo_trainer/run_qwen2-7b*.sh,
# examples/tuning/70b/qwen2-70b_grpo_32_h800_fsdp_vllm.sh, examples/ppo_trainer/run_deepseek7b_llm*.sh). Before their
# presets, these fell back to the base scenario's Qwen2.5-7B: a 72B run was estimated as a 7B one.
@pytest.mark.parametrize(
    ("path", "model_id"),
    [
        ("Qwen/Qwen2-7B-Instruct", "qwen2-7b"),
        ("/data/models/Qwen2-7B", "qwen2-7b"),
        ("Qwen/Qwen2-72B-Instruct", "qwen2-72b"),
        ("deepseek-ai/deepseek-llm-7b-chat", "deepseek-llm-7b"),
        ("Qwen/Qwen2.5-Math-7B", None),  # max_position_embeddings 4096, rope_theta 10000: not Qwen2.5-7B's config
    ],
)
def test_verl_example_model_paths(path, model_id):
    assert model_id_for_path(path) == model_id
