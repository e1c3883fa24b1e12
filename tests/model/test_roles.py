"""How large each role's model is (calculator/model/roles.py): LoRA and DoRA parameter counts by hand on
Qwen2.5-7B, and the value head that replaces the LM head of a critic or reward model."""

from __future__ import annotations

from calculator.inputs.presets import model_presets
from calculator.model.roles import (
    dora_magnitude_params,
    dora_transient_bytes,
    lora_adapted_linears,
    lora_params,
    policy_role,
    value_role,
)

GRPO, PPO = "qwen2.5-7b-grpo-8xh100", "qwen2.5-7b-ppo-8xh100"
ARCH = model_presets()["qwen2.5-7b"].architecture
P7, V, H, INTER, KV, LAYERS = 7_615_616_512, 152_064, 3584, 18944, 512, 28


def test_adapted_linears_by_hand():
    """all-linear on Qwen2.5-7B: q, k, v, o and gate, up, down in each of 28 layers (the lm_head is not adapted)."""
    assert lora_adapted_linears(ARCH, "attention") == [(H, H, 28), (H, KV, 28), (H, KV, 28), (H, H, 28)]
    assert lora_adapted_linears(ARCH, "mlp") == [(H, INTER, 56), (INTER, H, 28)]
    assert lora_adapted_linears(ARCH, "all-linear") == lora_adapted_linears(ARCH, "attention") + lora_adapted_linears(
        ARCH, "mlp"
    )


def test_lora_and_dora_params_by_hand():
    per_layer = (H + H) + 2 * (H + KV) + (H + H) + 2 * (H + INTER) + (INTER + H)  # in + out of each adapted linear
    assert lora_params(ARCH, 32, "all-linear") == 32 * LAYERS * per_layer
    assert lora_params(ARCH, 16, "all-linear") * 2 == lora_params(ARCH, 32, "all-linear")  # linear in the rank
    assert dora_magnitude_params(ARCH, "all-linear") == LAYERS * (H + 2 * KV + H + 2 * INTER + H)  # outputs
    assert dora_transient_bytes(ARCH, "all-linear") == 2 * 2 * H * INTER  # largest matrix, merged + squared, bf16


def test_policy_and_value_roles():
    actor = policy_role("actor", ARCH)
    assert (actor.num_params, actor.root_params, actor.lm_head_vocab) == (P7, 2 * V * H + H, V)
    critic = value_role("critic", ARCH)
    assert critic.num_params == P7 - V * H + (H + 1)  # the lm_head becomes score = Linear(h, 1)
    assert critic.root_params == V * H + H + (H + 1)  # embedding + final norm + score head
    assert critic.lm_head_vocab == 0 and critic.largest_layer_params == actor.largest_layer_params


def test_megatron_lora_params_qwen3_30b_a3b_rank_32():
    """Megatron-Bridge LoRA, all four linears, Qwen3-30B-A3B (h 2048, 48 layers, q 4096, kv 512, every layer MoE
    with 128 experts of width 768, no dense MLP): per layer linear_qkv 32 x (2048 + 4096 + 2 x 512) and
    linear_proj 32 x (4096 + 2048) -> dense 32 x 13,312 x 48 = 20,447,232; per expert fc1 (out 2 x 768) and fc2
    32 x (2048 + 1536 + 768 + 2048) = 204,800, x 128 experts x 48 layers = 1,258,291,200."""
    from calculator.inputs.presets import get_model
    from calculator.model.roles import megatron_lora_params

    arch = get_model("qwen3-30b-a3b").architecture
    assert megatron_lora_params(arch, 32, "all-linear") == (20_447_232, 1_258_291_200)
    assert megatron_lora_params(arch, 32, "attention") == (20_447_232, 0)
    assert megatron_lora_params(arch, 32, "mlp") == (0, 1_258_291_200)


def test_adapted_linear_count_is_a_count_of_modules():
    """Qwen2.5-7B, 28 layers: all-linear adapts q, k, v, o, gate, up, down = 7 x 28 = 196 modules, attention 4 x 28
    = 112 (the weight sync sends an A and a B tensor for each; it once multiplied the layers by the length of the
    string "all-linear"). Megatron-Bridge on Qwen3-30B-A3B adds every routed expert's gate, up and down:
    4 x 48 + 3 x 128 x 48 = 18,624."""
    from calculator.inputs.presets import get_model
    from calculator.model.roles import adapted_linear_count, megatron_lora_params, trainable_adapter_params

    q7 = get_model("qwen2.5-7b").architecture
    assert adapted_linear_count(q7, "all-linear", megatron=False) == 196
    assert adapted_linear_count(q7, "attention", megatron=False) == 112
    moe = get_model("qwen3-30b-a3b").architecture
    assert adapted_linear_count(moe, "all-linear", megatron=True) == 18_624
    assert trainable_adapter_params(moe, 32, "all-linear", megatron=True) == sum(
        megatron_lora_params(moe, 32, "all-linear")
    )
