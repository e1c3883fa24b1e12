"""How large each role's model is: parameters held, the largest layer, the root unit, LoRA / DoRA sizes.

Which roles exist is a verl rule and is decided in ``calculator.resolve.roles``.
"""

from __future__ import annotations

from dataclasses import dataclass

from calculator.model.architecture import Architecture


def lora_adapted_linears(arch: Architecture, target: str) -> list[tuple[int, int, int]]:
    """(in_features, out_features, count) of the linear layers PEFT adapts, over the whole model.

    ``all-linear`` (PEFT) adapts every ``nn.Linear`` but the output layer: q/k/v/o, the dense MLP
    (gate, up, down) and shared experts. Routed experts of transformers 5.x MoE models are fused 3-D
    parameters, not ``nn.Linear``, so PEFT does not adapt them (left out).
    """
    h, q, kv, o_in = arch.hidden_size, arch.q_dim, arch.kv_dim, arch.attn_out_dim
    out: list[tuple[int, int, int]] = []
    n = arch.num_layers
    if target in ("all-linear", "attention"):
        if arch.is_mla:
            kv_per_head = arch.qk_nope_head_dim + arch.v_head_dim
            out += [
                (h, q, n),
                (h, arch.kv_lora_rank + arch.qk_rope_head_dim, n),
                (arch.kv_lora_rank, arch.num_attention_heads * kv_per_head, n),
                (o_in, h, n),
            ]
        else:
            out += [(h, q, n), (h, kv, n), (h, kv, n), (o_in, h, n)]
    if target in ("all-linear", "mlp"):
        dense = arch.num_dense_layers
        if dense and arch.intermediate_size:
            out += [(h, arch.intermediate_size, 2 * dense), (arch.intermediate_size, h, dense)]
        if arch.num_moe_layers and arch.shared_expert_intermediate_size:
            i_s = arch.shared_expert_intermediate_size
            out += [(h, i_s, 2 * arch.num_moe_layers), (i_s, h, arch.num_moe_layers)]
    return out


def megatron_lora_params(arch: Architecture, rank: int, target: str) -> tuple[int, int]:
    """(adapter params on the dense layers, on the routed experts) of Megatron-Bridge's LoRA (verl >= 0.7
    ``model.lora``, ``verl/workers/config/megatron_peft.py`` -> ``megatron.bridge.peft.lora.LoRA``): one
    ``r x (in + out)`` adapter per targeted Megatron linear. Its default targets ``linear_qkv`` (fused q/k/v: one
    adapter of out q + 2 kv), ``linear_proj``, ``linear_fc1`` (fused gate/up: out 2·I) and ``linear_fc2``; the
    routed experts' grouped linears are adapted per expert (``megatron.bridge.peft.utils.is_expert_linear``).
    rlplan's ``target_modules`` picks the attention pair, the MLP pair or all four. Left out: MLA's separate
    q/kv down- and up-projections (only ``linear_proj`` is counted for MLA attention)."""
    h, n = arch.hidden_size, arch.num_layers
    dense = expert = 0
    if target in ("all-linear", "attention"):
        dense += rank * (arch.attn_out_dim + h) * n  # linear_proj
        if not arch.is_mla:
            dense += rank * (h + arch.q_dim + 2 * arch.kv_dim) * n  # linear_qkv
    if target in ("all-linear", "mlp"):
        if arch.num_dense_layers and arch.intermediate_size:
            dense += rank * (h + 2 * arch.intermediate_size + arch.intermediate_size + h) * arch.num_dense_layers
        if arch.num_moe_layers and arch.shared_expert_intermediate_size:
            i_s = arch.shared_expert_intermediate_size
            dense += rank * (h + 2 * i_s + i_s + h) * arch.num_moe_layers
        if arch.num_moe_layers:
            i_m = arch.moe_intermediate_size
            expert += rank * (h + 2 * i_m + i_m + h) * arch.num_experts * arch.num_moe_layers
    return dense, expert


def trainable_adapter_params(arch: Architecture, rank: int, target: str, megatron: bool) -> int:
    """Trainable LoRA parameters of the engine that trains them: Megatron-Bridge's adapters (routed experts
    included, ``megatron_lora_params``) or PEFT's (``lora_params``). The memory and time models both read this."""
    return sum(megatron_lora_params(arch, rank, target)) if megatron else lora_params(arch, rank, target)


def adapted_linear_count(arch: Architecture, target: str, megatron: bool) -> int:
    """Linear modules that carry an adapter (each sends an A and a B tensor at a LoRA weight sync): PEFT's
    (``lora_adapted_linears``), plus with Megatron-Bridge every routed expert's gate, up and down projections in the
    Hugging Face names verl converts them to."""
    n = sum(c for _, _, c in lora_adapted_linears(arch, target))
    if megatron and target in ("all-linear", "mlp"):
        n += 3 * arch.num_experts * arch.num_moe_layers
    return n


def lora_params(arch: Architecture, rank: int, target: str) -> int:
    """Trainable LoRA parameters: ``r x (in + out)`` per adapted linear (A is r x in, B is out x r)."""
    return sum(rank * (i + o) * c for i, o, c in lora_adapted_linears(arch, target))


def dora_magnitude_params(arch: Architecture, target: str) -> int:
    """DoRA adds one magnitude value per output feature of every adapted linear (PEFT ``lora_magnitude_vector``)."""
    return sum(o * c for _, o, c in lora_adapted_linears(arch, target))


def dora_transient_bytes(arch: Architecture, target: str) -> int:
    """DoRA's forward builds ``W + scale * B @ A`` (bf16) of one adapted linear at a time to take its
    column norm (PEFT ``DoraLinearLayer.get_weight_norm``): the largest adapted matrix, twice (the
    merged weight and its squared copy for the norm)."""
    largest = max((i * o for i, o, _ in lora_adapted_linears(arch, target)), default=0)
    return 2 * 2 * largest


@dataclass(frozen=True)
class RoleModel:
    """A trained or served model and the size facts the memory model needs."""

    name: str  # actor, critic, ref, reward
    arch: Architecture
    num_params: int  # parameters held (critic: backbone + 1-output head, no lm_head)
    largest_layer_params: int
    root_params: int  # params outside the decoder layers (embedding, final norm, lm_head)
    lm_head_vocab: int  # vocabulary of the head that produces logits (0 for critic/reward value heads)


def policy_role(name: str, arch: Architecture) -> RoleModel:
    """The trained or reference policy: the whole model. Its root unit (outside the decoder layers) is the
    embedding, the final norm and the LM head (``Architecture.total_params`` minus the layers)."""
    root = arch.embedding_params() + arch.hidden_size + arch.lm_head_params()
    return RoleModel(name, arch, arch.total_params(), arch.max_layer_params(), root, arch.vocab_size)


def value_role(name: str, arch: Architecture) -> RoleModel:
    """Critic / reward model: AutoModelForTokenClassification with num_labels=1 (verl
    ``utils/model.py`` ``load_valuehead_model``): the LM head is replaced by ``score = Linear(h, 1)``."""
    head = arch.hidden_size + 1
    total = arch.total_params() - arch.lm_head_params() + head
    root = arch.embedding_params() + arch.hidden_size + head
    return RoleModel(name, arch, total, arch.max_layer_params(), root, 0)
