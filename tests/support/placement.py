"""Split-placement scenarios shared by the placement tests."""

from __future__ import annotations

from calculator.inputs.scenario import Scenario


def split_scenario(mode: str = "one_step_off", **placement) -> Scenario:
    """Qwen2.5-7B GRPO n=4 on H100: trainer 2 nodes x 6 GPUs (FSDP), rollout 2 nodes x 2 GPUs (vLLM TP 2)."""
    return Scenario.model_validate(
        {
            "hardware": {"num_gpus": 12, "gpus_per_node": 6},
            "algorithm": {"adv_estimator": "grpo"},
            "data": {"train_batch_size": 96, "max_response_length": 2048, "mean_response_length": 1024},
            "actor": {"ppo_mini_batch_size": 24, "ppo_micro_batch_size_per_gpu": 4},
            "rollout": {"n": 4, "gpu_memory_utilization": 0.8},
            "placement": {"mode": mode, "rollout_nnodes": 2, "rollout_n_gpus_per_node": 2, **placement},
        }
    )
