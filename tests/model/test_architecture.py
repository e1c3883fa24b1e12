"""Parameter counts and KV bytes per token, hand-checked (issue #2)."""

from __future__ import annotations

import pytest

from calculator.inputs.presets import model_presets
from calculator.model.architecture import ArchitectureError, parse_hf_config

PRESETS = model_presets()


@pytest.mark.parametrize("model_id", sorted(PRESETS))
def test_param_count_matches_published(model_id):
    """Computed total within 0.5% of the published count recorded (with its source) in the preset."""
    m = PRESETS[model_id]
    computed = m.architecture.total_params()
    assert abs(computed / m.published_params - 1) <= 0.005, (computed, m.published_params, m.published_params_source)


@pytest.mark.parametrize(
    ("model_id", "exact"),
    [
        # DESIGN.md 3 reference facts (safetensors totals).
        ("qwen2.5-7b", 7_615_616_512),
        ("llama3.1-8b", 8_030_261_248),
        ("qwen2.5-0.5b", 494_032_768),
    ],
)
def test_reference_counts_exact(model_id, exact):
    assert PRESETS[model_id].architecture.total_params() == exact


def test_qwen25_7b_by_hand():
    """h=3584, L=28, a=28, k=4, d=128, I=18944, V=152064, untied, q/k/v biases."""
    a = PRESETS["qwen2.5-7b"].architecture
    attn = 3584 * 3584 * 2 + 2 * 3584 * 512 + 3584 + 2 * 512
    mlp = 3 * 3584 * 18944
    layer = attn + mlp + 2 * 3584
    assert a.layer_params(0) == layer
    assert a.total_params() == 28 * layer + 2 * 152064 * 3584 + 3584


def test_moe_active_params():
    """Qwen3-30B-A3B: 128 experts, 8 active: ~3.3B active of 30.5B (model card: 3.3B activated)."""
    a = PRESETS["qwen3-30b-a3b"].architecture
    assert a.is_moe and a.num_experts == 128 and a.num_experts_per_tok == 8
    assert 3.2e9 < a.active_params() < 3.45e9
    # Mixtral 8x7B: 12.9B active (Mistral's announcement: "12.9B active parameters per token").
    assert PRESETS["mixtral-8x7b-v0.1"].architecture.active_params() == pytest.approx(12.9e9, rel=0.01)


def test_kv_bytes_gqa():
    """Llama-3.1-8B: 2 (K,V) x 32 layers x 8 KV heads x 128 x 2 B = 131,072 B/token (calibration KV-01)."""
    a = PRESETS["llama3.1-8b"].architecture
    assert a.kv_cache_bytes_per_token() == 2 * 32 * 8 * 128 * 2 == 131072
    assert a.kv_cache_bytes_per_token(tp=2) == 65536
    # More TP than KV heads: vLLM replicates, one head per GPU stays.
    assert a.kv_cache_bytes_per_token(tp=16) == 2 * 32 * 1 * 128 * 2


def test_kv_bytes_mla():
    """DeepSeek-V3: 61 layers x (kv_lora_rank 512 + rope 64) x 2 B = 70,272 B/token, not split by TP."""
    a = PRESETS["deepseek-v3"].architecture
    assert a.is_mla
    assert a.kv_cache_bytes_per_token() == 61 * (512 + 64) * 2 == 70272
    assert a.kv_cache_bytes_per_token(tp=8) == 70272


def test_kv_bytes_moe():
    """Qwen3-30B-A3B: 48 layers x 4 KV heads x 128 x 2 x 2 B = 98,304; Qwen3-235B TP4 per GPU = 48,128 (KV-06)."""
    assert PRESETS["qwen3-30b-a3b"].architecture.kv_cache_bytes_per_token() == 98304
    assert PRESETS["qwen3-235b-a22b"].architecture.kv_cache_bytes_per_token(tp=4) == 48128


def test_seed_kv_error_is_not_reproduced():
    """Seed 000 used d_model: 2 x 32 x 4096 x 2 B = 524,288 B/token for a '7B'. Qwen2.5-7B's GQA needs 8x less."""
    a = PRESETS["qwen2.5-7b"].architecture
    assert a.kv_cache_bytes_per_token() == 2 * 28 * 4 * 128 * 2 == 57344
    assert 2 * 28 * 3584 * 2 / a.kv_cache_bytes_per_token() == 7.0


def test_unsupported_model_type_lists_supported():
    with pytest.raises(ArchitectureError, match="not supported; supported: llama, mistral"):
        parse_hf_config({"model_type": "bert", "hidden_size": 8})


@pytest.mark.parametrize(
    ("cfg", "field"),
    [
        ({"model_type": "llama"}, "hidden_size"),
        (
            {
                "model_type": "llama",
                "hidden_size": 64,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "vocab_size": 10,
            },
            "intermediate_size",
        ),
        ({"model_type": "llama", "hidden_size": -1, "num_hidden_layers": 2, "num_attention_heads": 4}, "hidden_size"),
        (
            {"model_type": "llama", "hidden_size": "big", "num_hidden_layers": 2, "num_attention_heads": 4},
            "hidden_size",
        ),
        (
            {
                "model_type": "llama",
                "hidden_size": 64,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "num_key_value_heads": 3,
                "vocab_size": 10,
                "intermediate_size": 8,
            },
            "num_key_value_heads",
        ),
    ],
)
def test_malformed_config_names_field(cfg, field):
    with pytest.raises(ArchitectureError, match=field):
        parse_hf_config(cfg)


def test_not_a_mapping():
    with pytest.raises(ArchitectureError, match="JSON object"):
        parse_hf_config([1, 2])


def test_gemma3_nested_text_config():
    cfg = {"model_type": "gemma3", "text_config": {**PRESETS["gemma-3-1b"].config, "model_type": "gemma3_text"}}
    assert parse_hf_config(cfg).total_params() == PRESETS["gemma-3-1b"].architecture.total_params()
