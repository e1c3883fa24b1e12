"""Parameter counts and KV bytes per token, hand-checked (issue #2); a bad or hostile config.json is an
ArchitectureError naming the field (issue #8), and the largest config it accepts stays cheap to estimate."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst

from calculator import estimate, load_scenario
from calculator.errors import InputError
from calculator.inputs.presets import model_presets
from calculator.model.architecture import CONFIG_INT_LIMITS, ArchitectureError, parse_hf_config
from tests.support.limits import run_cpu_bounded

PRESETS = model_presets()
REFERENCE = "qwen2.5-7b-grpo-8xh100"


def small_config() -> dict:
    return dict(PRESETS["qwen2.5-0.5b"].config)


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


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"num_hidden_layers": 10**9}, "at most 4,096"),  # built a 10**9-element list before: the server died
        ({"num_hidden_layers": 10**30}, "at most 4,096"),
        ({"vocab_size": 10**15}, "at most 16,777,216"),
        ({"hidden_size": "3584"}, "'hidden_size' must be a non-negative integer"),
        ({"hidden_size": float("nan")}, "'hidden_size' must be a non-negative integer"),
        ({"hidden_size": 1e30}, "'hidden_size' must be a non-negative integer"),
        ({"num_attention_heads": -4}, "non-negative"),
        ({"num_hidden_layers": True}, "non-negative integer"),
        ({"model_type": "bert"}, "not supported"),
        ({"model_type": ["qwen2"] * 1000}, "not supported"),
        ({"tie_word_embeddings": "no"}, "true or false"),
        ({"model_type": "qwen2_moe", "num_experts": 2, "num_experts_per_tok": 8, "moe_intermediate_size": 64}, "at most"),
        ({"model_type": "qwen2_moe", "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
          "mlp_only_layers": "abc"}, "mlp_only_layers"),
    ],
)  # fmt: skip
def test_bad_config_json_is_an_architecture_error(change: dict, message: str) -> None:
    with pytest.raises(ArchitectureError, match=message) as info:
        parse_hf_config({**small_config(), **change})
    assert len(str(info.value)) < 400  # the offending value is quoted abbreviated


@pytest.mark.parametrize("cfg", [[1, 2, 3], "config", None, 42])
def test_config_json_must_be_an_object(cfg: object) -> None:
    with pytest.raises(ArchitectureError, match="must be a JSON object"):
        parse_hf_config(cfg)


CONFIG_KEYS = [
    "model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
    "intermediate_size", "vocab_size", "tie_word_embeddings", "max_position_embeddings", "num_experts",
    "num_experts_per_tok", "moe_intermediate_size", "decoder_sparse_step", "mlp_only_layers", "attention_bias",
]  # fmt: skip


CONFIG_GARBAGE = hst.one_of(
    hst.sampled_from([0, -1, 1, 2, 7, 64, 4096, 4097, 2**20, 2**40, 10**30, 1e30, float("nan"), float("inf"), True,
                      None, "", "8", "qwen2", "qwen3_moe", "mixtral", "deepseek_v3", [], [0, 1], {}, {"a": 1}]),
    hst.integers(-(2**64), 2**64),
    hst.floats(allow_nan=True, allow_infinity=True),
    hst.text(max_size=10),
)  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hst.dictionaries(hst.sampled_from(CONFIG_KEYS), CONFIG_GARBAGE, max_size=6))
def test_config_fuzz_parses_or_says_why(change: dict) -> None:
    """Any JSON-ish values for a config's fields: an ArchitectureError (a ValueError), or an architecture
    the estimate handles (a report, or an InputError). (How fast: see the CPU-bound test below.)"""
    cfg = {**small_config(), **change}
    try:
        parse_hf_config(cfg)
    except ValueError:
        return
    try:
        r = estimate(load_scenario(REFERENCE, overrides={"model.config": cfg}))
    except InputError:
        return
    assert math.isfinite(r.peak.gib_per_gpu) and r.peak.gib_per_gpu > 0


def test_largest_accepted_config_estimates_within_a_cpu_bound() -> None:
    """The limits keep what is built from a config small: 4,096 layers with a 2**24 vocabulary, and a MoE with
    2**20 - 1 experts, each estimate in ~0.03 CPU-seconds here (a 10**9-layer config used to kill the server)."""
    dense = {**small_config(), "num_hidden_layers": CONFIG_INT_LIMITS["num_hidden_layers"]}
    dense["vocab_size"] = CONFIG_INT_LIMITS["vocab_size"]
    moe = {**PRESETS["qwen3-30b-a3b"].config, "num_hidden_layers": 4096, "num_experts": 2**20 - 1}
    run_cpu_bounded(
        f"""
        for cfg in ({dense!r}, {moe!r}):
            r = estimate(load_scenario({REFERENCE!r}, overrides={{"model.config": cfg}}))
            assert r.peak.gib_per_gpu > 0
        """,
        setup="from calculator import estimate, load_scenario",
        cpu_s=5,
    )
