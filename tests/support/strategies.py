"""Hypothesis strategies for valid scenarios, shared by the property tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from calculator.inputs.scenario import Scenario

MODELS = ["qwen2.5-0.5b", "qwen2.5-7b", "llama3.1-8b", "qwen3-8b", "qwen3-30b-a3b", "mistral-7b-v0.1", "gemma-2-2b"]
GPUS = ["h100-80gb", "a100-80gb", "a100-40gb", "h200-141gb", "l40s-48gb"]


@st.composite
def scenario_dicts(draw) -> dict[str, Any]:
    num_gpus = draw(st.sampled_from([1, 2, 4, 8, 16, 32]))
    tp = draw(st.sampled_from([t for t in (1, 2, 4, 8) if num_gpus % t == 0]))
    dyn = draw(st.booleans())
    max_prompt = draw(st.sampled_from([256, 512, 1024, 2048]))
    max_resp = draw(st.sampled_from([256, 512, 1024, 4096]))
    strategy = draw(st.sampled_from(["fsdp", "fsdp2"]))
    d: dict[str, Any] = {
        "hardware": {"gpu": draw(st.sampled_from(GPUS)), "num_gpus": num_gpus, "gpus_per_node": 8},
        "model": {
            "path": draw(st.sampled_from(MODELS)),
            "enable_gradient_checkpointing": draw(st.booleans()),
            "enable_activation_offload": draw(st.booleans()),
            "use_fused_kernels": draw(st.booleans()),
            "lora_rank": draw(st.sampled_from([0, 0, 8, 64])),
        },
        "algorithm": {
            "adv_estimator": draw(st.sampled_from(["gae", "grpo", "rloo", "reinforce_plus_plus", "remax"])),
            "use_kl_in_reward": draw(st.booleans()),
        },
        "data": {
            "train_batch_size": draw(st.sampled_from([8, 64, 256, 1024])),
            "max_prompt_length": max_prompt,
            "max_response_length": max_resp,
            "mean_prompt_length": draw(st.integers(1, max_prompt)),
            "mean_response_length": draw(st.integers(1, max_resp)),
        },
        "actor": {
            "strategy": strategy,
            "ppo_mini_batch_size": draw(st.sampled_from([4, 16, 64])),
            "ppo_micro_batch_size_per_gpu": draw(st.sampled_from([1, 2, 8, 16])),
            "use_dynamic_bsz": dyn,
            "ppo_max_token_len_per_gpu": draw(st.sampled_from([4096, 8192, 16384, 32768])),
            "use_kl_loss": draw(st.booleans()),
            "entropy_coeff": draw(st.sampled_from([0.0, 0.001])),
            "entropy_from_logits_with_chunking": draw(st.booleans()),
            "fsdp_config": {
                "param_offload": draw(st.booleans()),
                "optimizer_offload": draw(st.booleans()),
                "offload_policy": strategy == "fsdp2" and draw(st.booleans()),
            },
        },
        "rollout": {
            "n": draw(st.sampled_from([1, 4, 8, 16])),
            "tensor_model_parallel_size": tp,
            "gpu_memory_utilization": draw(st.sampled_from([0.3, 0.5, 0.6, 0.8])),
            "free_cache_engine": draw(st.booleans()),
            "enforce_eager": draw(st.booleans()),
            "temperature": draw(st.sampled_from([1.0, 0.7])),
            "name": draw(st.sampled_from(["vllm", "vllm", "sglang"])),
        },
        "critic": {"fsdp": {"param_offload": draw(st.booleans()), "optimizer_offload": draw(st.booleans())}},
    }
    return d


def scenarios():
    return scenario_dicts().map(lambda d: Scenario(**d))


MEGATRON_MODELS = [
    "qwen2.5-0.5b",
    "qwen2.5-7b",
    "llama3.1-8b",
    "gemma-2-2b",
    "qwen2.5-32b",
    "qwen3-30b-a3b",
    "mixtral-8x7b-v0.1",
    "qwen3-235b-a22b",
    "deepseek-v3",
]


@st.composite
def megatron_overrides(draw) -> dict[str, Any]:
    """Dotted overrides of the 7B GRPO preset that run its actor (and ref) on Megatron: dense and MoE models, TP /
    PP / EP / CP, interleaving or an uneven first / last stage, recompute, LoRA and offload. Many are refused
    (a layout that does not divide the GPUs, a split Megatron-core rejects): the fuzz test checks how."""
    ov: dict[str, Any] = {
        "model.path": draw(st.sampled_from(MEGATRON_MODELS)),
        "hardware.num_gpus": draw(st.sampled_from([8, 16, 32, 64, 96, 128])),
        "hardware.gpus_per_node": 8,
        "hardware.gpu": draw(st.sampled_from(["h100-80gb", "h20-96gb", "a100-40gb", "b200-180gb"])),
        "algorithm.adv_estimator": draw(st.sampled_from(["grpo", "gae"])),
        "actor.strategy": "megatron",
        "actor.megatron.tensor_model_parallel_size": draw(st.sampled_from([1, 2, 4, 8])),
        "actor.megatron.pipeline_model_parallel_size": draw(st.sampled_from([1, 2, 3, 4, 8, 12, 16])),
        "actor.megatron.expert_model_parallel_size": draw(st.sampled_from([1, 2, 4, 8, 16])),
        "actor.megatron.context_parallel_size": draw(st.sampled_from([1, 1, 2])),
        "actor.megatron.sequence_parallel": draw(st.booleans()),
        "rollout.tensor_model_parallel_size": draw(st.sampled_from([1, 2, 4, 8])),
    }
    split = draw(st.sampled_from(["even", "interleaved", "uneven"]))
    if split == "interleaved":
        ov["actor.megatron.virtual_pipeline_model_parallel_size"] = draw(st.sampled_from([2, 3, 4]))
    elif split == "uneven":
        ov["actor.megatron.num_layers_in_first_pipeline_stage"] = draw(st.sampled_from([1, 2, 3, 5, 11]))
        ov["actor.megatron.num_layers_in_last_pipeline_stage"] = draw(st.sampled_from([1, 2, 6, 11]))
    if draw(st.booleans()):
        ov["actor.megatron.recompute_granularity"] = "full"
        ov["actor.megatron.recompute_method"] = draw(st.sampled_from(["uniform", "block"]))
        ov["actor.megatron.recompute_num_layers"] = draw(st.sampled_from([1, 2, 4]))
    if draw(st.booleans()):
        ov["model.lora_rank"] = draw(st.sampled_from([8, 32]))
    if draw(st.booleans()):
        ov["actor.megatron.param_offload"] = ov["actor.megatron.optimizer_offload"] = True
    return ov
