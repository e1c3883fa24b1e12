"""The scenario model: YAML round trip (property), and one boundary test per validator (issue #2)."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import HealthCheck, given, settings

from calculator import load_scenario
from calculator.errors import InputError
from calculator.inputs.scenario import Scenario
from tests.support.strategies import scenarios


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_yaml_round_trip(s: Scenario):
    text = yaml.safe_dump(s.model_dump(mode="json"), sort_keys=False)
    assert Scenario(**yaml.safe_load(text)) == s


def test_defaults_are_verls():
    """A few verl 0.9.1 defaults (shared/reference/verl_config_keys.yaml)."""
    s = Scenario(actor={"use_dynamic_bsz": True})
    assert s.data.train_batch_size == 1024 and s.data.max_prompt_length == 512
    assert s.rollout.gpu_memory_utilization == 0.5 and s.rollout.tensor_model_parallel_size == 2
    assert s.rollout.max_num_batched_tokens == 8192 and s.rollout.max_num_seqs == 256
    assert s.actor.ppo_max_token_len_per_gpu == 16384 and s.critic.ppo_max_token_len_per_gpu == 32768
    assert s.actor.fsdp_config.model_dtype == "fp32" and s.model.enable_gradient_checkpointing
    assert s.algorithm.adv_estimator == "gae" and s.rollout.free_cache_engine


def _err(overrides: dict) -> str:
    with pytest.raises(InputError) as info:
        load_scenario("qwen2.5-7b-grpo-8xh100", overrides=overrides)
    return str(info.value)


@pytest.mark.parametrize(
    ("overrides", "field", "needle"),
    [
        ({"hardware.num_gpus": 0}, "hardware.num_gpus", "greater than or equal to 1"),
        ({"hardware.num_gpus": -8}, "hardware.num_gpus", "greater than or equal to 1"),
        ({"hardware.num_gpus": 12}, "hardware", "multiple of hardware.gpus_per_node"),
        ({"rollout.n": 0}, "rollout.n", "greater than or equal to 1"),
        ({"rollout.gpu_memory_utilization": 1.5}, "rollout.gpu_memory_utilization", "less than or equal to 1"),
        ({"rollout.gpu_memory_utilization": 0}, "rollout.gpu_memory_utilization", "greater than 0"),
        ({"rollout.tensor_model_parallel_size": 3}, "", "must divide hardware.num_gpus (8)"),
        ({"rollout.name": "trt"}, "rollout.name", "allowed values are 'vllm' or 'sglang'"),
        (
            {"data.mean_response_length": 5000},
            "data",
            "mean_response_length (5000) must be <= data.max_response_length (1024)",
        ),
        ({"data.gen_batch_size": 10}, "data", "gen_batch_size (10) must be >= data.train_batch_size (1024)"),
        ({"actor.ulysses_sequence_parallel_size": 3}, "", "ulysses_sequence_parallel_size (3) must divide"),
        (
            {"actor.ulysses_sequence_parallel_size": 2, "model.use_remove_padding": False},
            "",
            "requires model.use_remove_padding",
        ),
        ({"actor.fsdp_config.fsdp_size": 3}, "", "fsdp_size (3) must divide"),
        ({"actor.fsdp_config.fsdp_size": 0}, "actor.fsdp_config", "fsdp_size must be -1"),
        ({"actor.fsdp_config.offload_policy": True}, "", "offload_policy=true needs actor.strategy=fsdp2"),
        ({"actor.strategy": "megatron", "actor.megatron.tensor_model_parallel_size": 3}, "", "megatron tp (3)"),
        ({"model.use_dora": True}, "", "use_dora=true needs model.lora_rank > 0"),
        ({"algorithm.adv_estimator": "ppo"}, "algorithm.adv_estimator", "allowed values"),
        ({"rollout.typo_field": 1}, "rollout.typo_field", "unknown field"),
        ({"model.path": "qwen9-7b"}, "model.path", "unknown model 'qwen9-7b'"),
        ({"hardware.gpu": "h1000"}, "hardware.gpu", "unknown GPU 'h1000'"),
    ],
)
def test_validators_name_field(overrides, field, needle):
    msg = _err(overrides)
    assert needle in msg
    assert msg.startswith(field) or field in msg


def test_boundaries_that_pass():
    s = load_scenario(
        "qwen2.5-7b-grpo-8xh100",
        overrides={
            "rollout.gpu_memory_utilization": 1.0,
            "hardware.num_gpus": 1,
            "rollout.tensor_model_parallel_size": 1,
            "data.mean_response_length": 1024,
            "hardware.gpus_per_node": 1,
        },
    )
    assert s.hardware.num_gpus == 1
