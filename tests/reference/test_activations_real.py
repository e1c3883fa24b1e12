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
