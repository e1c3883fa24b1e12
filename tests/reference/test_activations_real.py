"""The activation formula against the real transformers modelling code (issue #3 item 3).

Builds tiny configs of llama, qwen2, qwen3 and qwen3_moe on CPU, runs a forward with
saved_tensors_hooks counting unique saved storage bytes (tests/support/activation_probe.py) and compares with
calculator.model.activations within 5%, with and without gradient checkpointing. SDPA on CPU dispatches to a
flash-attention kernel that saves q, k, v, output and an fp32 log-sum-exp and runs GQA natively, like
flash-attention-2 on GPU (shared/TESTING.md).
"""

from __future__ import annotations

import pytest

from calculator.model import activations as act
from calculator.model.architecture import parse_hf_config
from tests.support.require import require

pytestmark = [pytest.mark.torch, pytest.mark.slow]  # ~60 s of CPU: real models, forward and backward

TOLERANCE = 0.05

DENSE = dict(
    hidden_size=256,
    num_attention_heads=8,
    num_key_value_heads=2,
    head_dim=32,
    intermediate_size=704,
    vocab_size=1000,
    num_hidden_layers=2,
    max_position_embeddings=4096,
    tie_word_embeddings=False,
)
# Asymmetric shapes (h != a*d) so that no symbol can be swapped unnoticed.
ODD = dict(
    hidden_size=192,
    num_attention_heads=6,
    num_key_value_heads=2,
    head_dim=48,
    intermediate_size=512,
    vocab_size=777,
    num_hidden_layers=3,
    max_position_embeddings=4096,
    tie_word_embeddings=False,
)
MOE = dict(
    DENSE,
    num_experts=8,
    num_experts_per_tok=2,
    moe_intermediate_size=128,
    decoder_sparse_step=1,
    mlp_only_layers=[],
    norm_topk_prob=True,
)

CASES = [
    ("llama", DENSE, 256),
    ("llama", ODD, 320),
    ("qwen2", DENSE, 256),
    ("qwen2", ODD, 320),
    ("qwen3", DENSE, 256),
    ("qwen3", ODD, 320),
    ("qwen3_moe", MOE, 256),
]


def _arch(model_type: str, cfg: dict):
    return parse_hf_config({"model_type": model_type, **cfg})


@pytest.fixture(scope="module")
def probe():
    """tests/support/activation_probe.py, which needs torch (CPU) and transformers: test-only requirements; a
    missing one fails these tests with the install command."""
    require("torch")
    require("transformers")
    return require("tests.support.activation_probe")


@pytest.mark.parametrize(("model_type", "cfg", "tokens"), CASES)
def test_layers_without_checkpointing(probe, model_type, cfg, tokens):
    measured = probe.measure_saved_bytes(model_type, cfg, tokens, gradient_checkpointing=False)
    arch = _arch(model_type, cfg)
    formula = act.all_layers_saved_bytes_per_token(arch) * tokens
    assert formula == pytest.approx(measured["layers_bytes"], rel=TOLERANCE), (
        f"{model_type}: formula {formula} vs measured {measured['layers_bytes']}"
    )


@pytest.mark.parametrize(("model_type", "cfg", "tokens"), CASES)
def test_layers_with_checkpointing(probe, model_type, cfg, tokens):
    measured = probe.measure_saved_bytes(model_type, cfg, tokens, gradient_checkpointing=True)
    arch = _arch(model_type, cfg)
    formula = arch.num_layers * act.checkpoint_input_bytes_per_token(arch) * tokens
    assert formula == pytest.approx(measured["layers_bytes"], rel=TOLERANCE)


@pytest.mark.parametrize(("model_type", "cfg", "tokens"), CASES[:2])
def test_final_norm_and_logits(probe, model_type, cfg, tokens):
    """After the last layer: the final norm saves 8h + 4 B/token; logits are bf16 (2 B x V per token)."""
    measured = probe.measure_saved_bytes(model_type, cfg, tokens, gradient_checkpointing=False)
    arch = _arch(model_type, cfg)
    assert act.final_norm_saved_bytes_per_token(arch) * tokens == pytest.approx(measured["post_bytes"], rel=TOLERANCE)
    assert measured["logits_bytes"] == tokens * arch.vocab_size * 2


def _ulysses_attention(sp: int):  # type: ignore[no-untyped-def]
    """verl's Ulysses attention (``verl/models/transformers/monkey_patch.py`` ``_ulysses_flash_attention_forward``)
    on one process: k / v repeated when ``sp`` exceeds the KV heads, q / k / v through the sequence -> heads
    all-to-all, the kernel, its output through the heads -> sequence all-to-all. The all-to-all is emulated by what
    it does to memory (``verl/utils/ulysses.py`` ``SeqAllToAll``: a new buffer, nothing saved for backward); the
    ranks' exchange of sequence slices does not change any tensor's size."""
    import torch
    from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward

    class AllToAll(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):  # type: ignore[no-untyped-def]
            return x.clone()

        @staticmethod
        def backward(ctx, grad):  # type: ignore[no-untyped-def]
            return grad.clone()

    def attention(module, query, key, value, attention_mask, **kwargs):  # type: ignore[no-untyped-def]
        repeats = max(sp // key.shape[1], 1)  # transformers' layout: (batch, heads, tokens, head_dim)
        if repeats > 1:
            key, value = repeat_kv(key, repeats), repeat_kv(value, repeats)
        query, key, value = (AllToAll.apply(t) for t in (query, key, value))
        out, weights = sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
        return AllToAll.apply(out), weights

    return attention


# SP degrees verl accepts (they divide the query heads): qwen2 DENSE has 8 query / 2 KV heads, qwen3 ODD 6 / 2.
ULYSSES_CASES = [(*CASES[2], 2), (*CASES[2], 4), (*CASES[5], 2), (*CASES[5], 6)]


@pytest.mark.parametrize(("model_type", "cfg", "tokens", "sp"), ULYSSES_CASES)
def test_ulysses_layers_without_checkpointing(probe, model_type, cfg, tokens, sp):
    """Under Ulysses SP each layer saves the attention output twice (the kernel's, and the all-to-all's buffer that
    ``o_proj`` saves) and, with more SP ranks than KV heads, k and v repeated: what
    ``act.ulysses_extra_bytes_per_token`` adds, nothing more (q / k / v before the all-to-all are not saved)."""
    from transformers import AttentionInterface

    name = f"rlplan_ulysses_sp{sp}"
    AttentionInterface.register(name, _ulysses_attention(sp))
    measured = probe.measure_saved_bytes(
        model_type, cfg, tokens, gradient_checkpointing=False, attn_implementation=name
    )
    arch = _arch(model_type, cfg)
    extra = act.ulysses_extra_bytes_per_token(arch, sp)
    assert extra > 0
    layers = act.all_layers_saved_bytes_per_token(arch) + arch.num_layers * extra
    assert layers * tokens == pytest.approx(measured["layers_bytes"], rel=TOLERANCE / 5)
