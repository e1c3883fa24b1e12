"""Model architecture from a Hugging Face ``config.json``: parameter counts and per-token sizes.

Supported ``model_type`` values are listed in ``SUPPORTED_MODEL_TYPES``. Shapes follow the
modelling code in transformers 5.x (``models/<family>/modeling_<family>.py``):

Dense decoder layer (GQA attention, h = hidden, a = heads, k = kv heads, d = head_dim, I = FFN):
    q ``h*a*d``, k and v ``h*k*d`` each, o ``a*d*h``; q/k/v biases for Qwen2 (and Llama with
    ``attention_bias``, which also biases o); Qwen3 / Gemma3 per-head ``q_norm`` / ``k_norm`` (d each);
    gated MLP ``3*h*I`` (SwiGLU, Gemma's GeGLU has the same shapes); RMSNorm weights ``2*h``
    (Gemma2/3: four norms per layer, ``4*h``).
MoE layer: router ``h*E``, experts ``E*3*h*I_moe``, shared experts ``3*h*I_shared`` where present
    (Qwen2-MoE adds a 1-output ``shared_expert_gate``; DeepSeek-V3 keeps ``E`` score-correction biases).
MLA attention (DeepSeek-V3): ``q_a`` ``h*q_lora`` + norm + ``q_b`` ``q_lora*a*(nope+rope)`` (or a
    plain ``q_proj`` when ``q_lora_rank`` is null), ``kv_a`` ``h*(kv_lora+rope)`` + norm,
    ``kv_b`` ``kv_lora*a*(nope+v)``, ``o`` ``a*v*h``. The multi-token-prediction layer is not counted
    (it is not part of the published 671B and verl does not train it).
Model: embedding ``V*h``, final norm ``h``, ``lm_head`` ``V*h`` unless tied.

Left out: vision towers of multimodal checkpoints (only the text model is read), rotary buffers
(not parameters), and quantisation scale tensors (counts are parameters, not stored bytes).
"""

from __future__ import annotations

import functools
import reprlib
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

SUPPORTED_MODEL_TYPES = (
    "llama",
    "mistral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "mixtral",
    "deepseek_v3",
    "gemma2",
    "gemma3",
    "gemma3_text",
)


class ArchitectureError(ValueError):
    """A config.json that cannot be read as a supported decoder-only model."""


class Architecture(BaseModel):
    """Shapes of one decoder-only transformer, as read from its HF config.json."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model_type: str
    num_layers: int = Field(ge=1)
    hidden_size: int = Field(ge=1)
    num_attention_heads: int = Field(ge=1)
    num_kv_heads: int = Field(ge=1, description="KV heads (GQA); equals heads for MHA.")
    head_dim: int = Field(ge=1)
    intermediate_size: int = Field(ge=0, description="FFN width of dense layers.")
    vocab_size: int = Field(ge=1)
    tie_word_embeddings: bool
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    num_norms_per_layer: int = 2
    # MoE
    num_experts: int = 0
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0
    shared_expert_intermediate_size: int = 0
    shared_expert_gate: bool = False
    router_score_bias: bool = False
    moe_layers: tuple[bool, ...] = ()
    # MLA (DeepSeek-V2/V3)
    q_lora_rank: int | None = None
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    max_position_embeddings: int = 0

    # ---- derived shapes -------------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0 and any(self.moe_layers)

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def num_moe_layers(self) -> int:
        return sum(self.moe_layers)

    @property
    def num_dense_layers(self) -> int:
        return self.num_layers - self.num_moe_layers

    @property
    def q_dim(self) -> int:
        """Width of the attention query (heads x per-head query size)."""
        if self.is_mla:
            return self.num_attention_heads * (self.qk_nope_head_dim + self.qk_rope_head_dim)
        return self.num_attention_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of one of K or V as the attention kernel sees it (per token)."""
        if self.is_mla:
            return self.num_attention_heads * (self.qk_nope_head_dim + self.qk_rope_head_dim)
        return self.num_kv_heads * self.head_dim

    @property
    def attn_out_dim(self) -> int:
        """Width of the attention output before ``o_proj``."""
        if self.is_mla:
            return self.num_attention_heads * self.v_head_dim
        return self.num_attention_heads * self.head_dim

    # ---- parameter counts -----------------------------------------------------------------
    def attention_params(self) -> int:
        h, a = self.hidden_size, self.num_attention_heads
        if self.is_mla:
            qk_head = self.qk_nope_head_dim + self.qk_rope_head_dim
            if self.q_lora_rank:
                q = h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * a * qk_head
            else:
                q = h * a * qk_head
            kv_a = h * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
            kv_b = self.kv_lora_rank * a * (self.qk_nope_head_dim + self.v_head_dim)
            o = a * self.v_head_dim * h
            return q + kv_a + kv_b + o
        d, k = self.head_dim, self.num_kv_heads
        n = h * a * d + 2 * h * k * d + a * d * h
        if self.qkv_bias:
            n += a * d + 2 * k * d
        if self.o_bias:
            n += h
        if self.qk_norm:
            n += 2 * d
        return n

    def dense_mlp_params(self) -> int:
        return 3 * self.hidden_size * self.intermediate_size

    def expert_params(self) -> int:
        """One routed expert (gate, up, down)."""
        return 3 * self.hidden_size * self.moe_intermediate_size

    def moe_mlp_params(self, active_only: bool = False) -> int:
        h, e = self.hidden_size, self.num_experts
        experts = (self.num_experts_per_tok if active_only else e) * self.expert_params()
        n = h * e + experts + 3 * h * self.shared_expert_intermediate_size
        if self.shared_expert_gate:
            n += h
        if self.router_score_bias:
            n += e
        return n

    def layer_params(self, layer: int, active_only: bool = False) -> int:
        norms = self.num_norms_per_layer * self.hidden_size
        is_moe = self.moe_layers[layer] if self.moe_layers else False
        mlp = self.moe_mlp_params(active_only) if is_moe else self.dense_mlp_params()
        return self.attention_params() + mlp + norms

    # Counts below are memoised per (equal, frozen) instance: estimate() asks for them many times and
    # the planner runs estimate() hundreds of times per table. lru_cache keys on the hashable frozen model.
    @functools.lru_cache(maxsize=256)  # noqa: B019 - bounded; frozen instances
    def max_layer_params(self) -> int:
        """Largest decoder layer: the FSDP wrap unit that is all-gathered at once."""
        return max(self.layer_params(i) for i in range(self.num_layers))

    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size

    def lm_head_params(self) -> int:
        return 0 if self.tie_word_embeddings else self.vocab_size * self.hidden_size

    @functools.lru_cache(maxsize=256)  # noqa: B019 - bounded; frozen instances
    def total_params(self) -> int:
        layers = sum(self.layer_params(i) for i in range(self.num_layers))
        return layers + self.embedding_params() + self.hidden_size + self.lm_head_params()

    @functools.lru_cache(maxsize=256)  # noqa: B019 - bounded; frozen instances
    def active_params(self) -> int:
        """Parameters touched per token: all but the routed experts not chosen (MoE)."""
        layers = sum(self.layer_params(i, active_only=True) for i in range(self.num_layers))
        return layers + self.embedding_params() + self.hidden_size + self.lm_head_params()

    def active_matmul_params(self) -> int:
        """Active parameters that do matmul work per token: excludes the input embedding lookup
        (a gather, no FLOPs) but keeps the LM head (tied or not). Used for the 2N / 6N FLOP rule."""
        return (
            self.active_params()
            - self.embedding_params()
            + self.vocab_size * self.hidden_size * int(self.tie_word_embeddings)
        )

    def largest_tensor_params(self, per_expert: bool = False) -> int:
        """Largest single parameter tensor: the embedding (or untied LM head), or in transformers 5.x
        a fused MoE expert tensor ``gate_up_proj`` of shape (E, 2*I_moe, h). Weight sync sends a
        tensor larger than the bucket whole (DESIGN.md 4.6). ``per_expert``: the backend holds and exports
        one tensor per expert (Megatron's bridge, verl 0.9.1 ``megatron/transformer_impl.py``
        ``get_per_tensor_param``), so no fused expert block exists."""
        largest = self.embedding_params()
        if self.is_moe and per_expert:
            return max(largest, 2 * self.moe_intermediate_size * self.hidden_size, self.dense_mlp_params() // 3 * 2)
        if self.is_moe:
            largest = max(largest, self.num_experts * 2 * self.moe_intermediate_size * self.hidden_size)
        return largest

    # ---- KV cache -------------------------------------------------------------------------
    def kv_cache_bytes_per_token(self, dtype_bytes: int = 2, tp: int = 1) -> int:
        """KV-cache bytes per token on one GPU of a TP group (vLLM layout).

        GQA: ``2 (K and V) * layers * max(kv_heads / tp, 1) * head_dim * dtype_bytes``; when
        ``kv_heads < tp`` vLLM replicates heads so each GPU still holds one.
        MLA: ``layers * (kv_lora_rank + qk_rope_head_dim) * dtype_bytes``: the compressed latent is
        cached once and replicated on every TP rank (vLLM MLA backends), so it is not divided by tp.
        Left out: sliding-window layers are counted at full length (vLLM's hybrid allocator can
        keep fewer blocks for them; this errs on the side of less capacity).
        """
        if self.is_mla:
            return self.num_layers * (self.kv_lora_rank + self.qk_rope_head_dim) * dtype_bytes
        heads_per_gpu = max(self.num_kv_heads // tp, 1)
        return 2 * self.num_layers * heads_per_gpu * self.head_dim * dtype_bytes


def _get(cfg: dict[str, Any], key: str, default: Any = None, *, required: bool = False) -> Any:
    if key in cfg and cfg[key] is not None:
        return cfg[key]
    if required:
        raise ArchitectureError(f"config.json: missing required field {key!r}")
    return default


# Largest value a count in a config.json may take: far above any published model (Llama-3.1-405B has
# 126 layers and hidden 16384, Gemma 3 a 262144 vocabulary, Llama 4 Scout 10M positions), small enough
# that what is built from them stays cheap (a 10**9-layer config would build a 10**9-element list).
CONFIG_INT_LIMITS: dict[str, int] = {
    "num_hidden_layers": 4096,
    "vocab_size": 2**24,
    "max_position_embeddings": 2**31,
}
DEFAULT_CONFIG_INT_LIMIT = 2**20


def _int(cfg: dict[str, Any], key: str, default: int | None = None, *, required: bool = False) -> int:
    value = _get(cfg, key, default, required=required)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ArchitectureError(f"config.json: field {key!r} must be a non-negative integer, got {_short(value)}")
    limit = CONFIG_INT_LIMITS.get(key, DEFAULT_CONFIG_INT_LIMIT)
    if value > limit:
        raise ArchitectureError(f"config.json: field {key!r} must be at most {limit:,}, got {_short(value)}")
    return value


def _bool(cfg: dict[str, Any], key: str, default: bool) -> bool:
    value = _get(cfg, key, default)
    if not isinstance(value, bool):
        raise ArchitectureError(f"config.json: field {key!r} must be true or false, got {_short(value)}")
    return value


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxdict, _REPR.maxlist, _REPR.maxtuple = 2, 4, 4, 4
_REPR.maxstring, _REPR.maxother, _REPR.maxlong = 60, 60, 40


def _short(value: Any) -> str:
    """``repr`` of a config value, abbreviated (a field can hold any JSON, however large)."""
    return _REPR.repr(value)


# What each family's modelling code fixes beyond the fields every config.json has (transformers 5.x).
_QKV_BIAS_ALWAYS = frozenset({"qwen2", "qwen2_moe"})  # Qwen2 hard-codes bias=True on q/k/v, False on o
_ATTENTION_BIAS_FROM_CONFIG = frozenset(
    {"llama", "mistral", "qwen3", "qwen3_moe", "gemma2", "gemma3_text", "gemma3", "mixtral"}
)
_NO_O_BIAS = frozenset({"mistral", "mixtral"})  # Llama/Qwen3/Gemma bias o_proj too; Mistral/Mixtral have no bias
_QK_NORM = frozenset({"qwen3", "qwen3_moe", "gemma3_text", "gemma3"})
_GEMMA_NORMS_PER_LAYER = 4  # Gemma2/3: pre- and post-norm around both attention and MLP


def _text_model(cfg: Any) -> tuple[dict[str, Any], str]:
    """The decoder's config and its ``model_type`` (Gemma 3 multimodal: its ``text_config``)."""
    if not isinstance(cfg, dict):
        raise ArchitectureError(f"config.json must be a JSON object, got {type(cfg).__name__}")
    model_type = cfg.get("model_type")
    if model_type in ("gemma3",) and isinstance(cfg.get("text_config"), dict):
        cfg = {**cfg["text_config"], "model_type": "gemma3_text"}
        model_type = "gemma3_text"
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise ArchitectureError(
            f"config.json: model_type {_short(model_type)} is not supported; supported: "
            + ", ".join(SUPPORTED_MODEL_TYPES)
        )
    return cfg, model_type


def _dense_fields(cfg: dict[str, Any], model_type: str) -> dict[str, Any]:
    """The shapes every supported family has: layers, widths, heads, vocabulary, tied embeddings."""
    h = _int(cfg, "hidden_size", required=True)
    num_layers = _int(cfg, "num_hidden_layers", required=True)
    heads = _int(cfg, "num_attention_heads", required=True)
    kv_heads = _int(cfg, "num_key_value_heads", heads)
    if heads == 0 or h == 0 or num_layers == 0 or kv_heads == 0:
        raise ArchitectureError("config.json: hidden_size, num_hidden_layers and head counts must be positive")
    if heads % kv_heads:
        raise ArchitectureError(
            f"config.json: num_attention_heads ({heads}) must be a multiple of num_key_value_heads ({kv_heads})"
        )
    head_dim = _int(cfg, "head_dim", h // heads) or h // heads
    vocab = _int(cfg, "vocab_size", required=True)
    if vocab == 0:
        raise ArchitectureError("config.json: vocab_size must be positive")
    intermediate = _int(cfg, "intermediate_size", 0)
    tie = _bool(cfg, "tie_word_embeddings", model_type.startswith("gemma"))
    return dict(
        model_type=model_type,
        num_layers=num_layers,
        hidden_size=h,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=intermediate,
        vocab_size=vocab,
        tie_word_embeddings=tie,
        max_position_embeddings=_int(cfg, "max_position_embeddings", 0),
    )


def _attention_fields(cfg: dict[str, Any], model_type: str) -> dict[str, Any]:
    """Attention biases, q/k norms and norms per layer, as the family's modelling code sets them."""
    out: dict[str, Any] = {}
    if model_type in _QKV_BIAS_ALWAYS:
        out["qkv_bias"] = True
    elif model_type in _ATTENTION_BIAS_FROM_CONFIG:
        bias = _bool(cfg, "attention_bias", False)
        out["qkv_bias"] = bias
        out["o_bias"] = bias and model_type not in _NO_O_BIAS
    if model_type in _QK_NORM:
        out["qk_norm"] = True
    if model_type.startswith("gemma"):
        out["num_norms_per_layer"] = _GEMMA_NORMS_PER_LAYER
    return out


_MoeFields = tuple[list[bool], dict[str, Any]]  # (which layers are MoE, the MoE fields)


def _qwen_moe(cfg: dict[str, Any], dense: dict[str, Any]) -> _MoeFields:
    """Qwen2-MoE / Qwen3-MoE: every ``decoder_sparse_step``-th layer not in ``mlp_only_layers``."""
    experts = _int(cfg, "num_experts", 0)
    step = _int(cfg, "decoder_sparse_step", 1) or 1
    mlp_only_raw = _get(cfg, "mlp_only_layers", []) or []
    if not isinstance(mlp_only_raw, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in mlp_only_raw
    ):
        raise ArchitectureError(
            f"config.json: field 'mlp_only_layers' must be a list of layer indices, got {_short(mlp_only_raw)}"
        )
    mlp_only = set(mlp_only_raw)
    layers = [experts > 0 and i not in mlp_only and (i + 1) % step == 0 for i in range(dense["num_layers"])]
    return layers, dict(
        num_experts=experts,
        num_experts_per_tok=_int(cfg, "num_experts_per_tok", 0),
        moe_intermediate_size=_int(cfg, "moe_intermediate_size", required=True),
        shared_expert_intermediate_size=_int(cfg, "shared_expert_intermediate_size", 0),
        shared_expert_gate=dense["model_type"] == "qwen2_moe" and _int(cfg, "shared_expert_intermediate_size", 0) > 0,
    )


def _mixtral_moe(cfg: dict[str, Any], dense: dict[str, Any]) -> _MoeFields:
    """Mixtral: every layer is MoE, experts as wide as ``intermediate_size``."""
    experts = _int(cfg, "num_local_experts", required=True)
    return [True] * dense["num_layers"], dict(
        num_experts=experts,
        num_experts_per_tok=_int(cfg, "num_experts_per_tok", 2),
        moe_intermediate_size=dense["intermediate_size"],
    )


def _deepseek_v3_moe(cfg: dict[str, Any], dense: dict[str, Any]) -> _MoeFields:
    """DeepSeek-V3: MoE from layer ``first_k_dense_replace`` on, and MLA attention (no biases)."""
    experts = _int(cfg, "n_routed_experts", 0)
    first_dense = _int(cfg, "first_k_dense_replace", 0)
    freq = _int(cfg, "moe_layer_freq", 1) or 1
    layers = [experts > 0 and i >= first_dense and i % freq == 0 for i in range(dense["num_layers"])]
    moe_inter = _int(cfg, "moe_intermediate_size", required=True)
    fields: dict[str, Any] = dict(
        num_experts=experts,
        num_experts_per_tok=_int(cfg, "num_experts_per_tok", 0),
        moe_intermediate_size=moe_inter,
        shared_expert_intermediate_size=_int(cfg, "n_shared_experts", 0) * moe_inter,
        router_score_bias=True,
        q_lora_rank=_int(cfg, "q_lora_rank") if _get(cfg, "q_lora_rank") is not None else None,
        kv_lora_rank=_int(cfg, "kv_lora_rank", required=True),
        qk_nope_head_dim=_int(cfg, "qk_nope_head_dim", required=True),
        qk_rope_head_dim=_int(cfg, "qk_rope_head_dim", required=True),
        v_head_dim=_int(cfg, "v_head_dim", required=True),
    )
    fields["head_dim"] = fields["qk_nope_head_dim"] + fields["qk_rope_head_dim"]
    fields["qkv_bias"] = False
    return layers, fields


_MOE_READERS = {
    "qwen2_moe": _qwen_moe,
    "qwen3_moe": _qwen_moe,
    "mixtral": _mixtral_moe,
    "deepseek_v3": _deepseek_v3_moe,
}


def _check_moe(fields: dict[str, Any], moe_layers: list[bool]) -> None:
    if fields.get("num_experts", 0) and not fields.get("num_experts_per_tok"):
        raise ArchitectureError("config.json: MoE model needs num_experts_per_tok >= 1")
    if fields.get("num_experts_per_tok", 0) > fields.get("num_experts", 0) > 0:
        raise ArchitectureError(
            f"config.json: num_experts_per_tok ({fields['num_experts_per_tok']}) must be at most the number of "
            f"experts ({fields['num_experts']})"
        )
    if not any(moe_layers) and fields["intermediate_size"] == 0:
        raise ArchitectureError("config.json: missing required field 'intermediate_size'")


def parse_hf_config(cfg: Any) -> Architecture:
    """Read an HF ``config.json`` mapping into an :class:`Architecture`.

    Raises :class:`ArchitectureError` naming the field for anything missing or malformed, and
    listing the supported families for an unknown ``model_type``.
    """
    cfg, model_type = _text_model(cfg)
    fields = _dense_fields(cfg, model_type)
    fields.update(_attention_fields(cfg, model_type))
    moe_layers: list[bool] = [False] * fields["num_layers"]
    reader = _MOE_READERS.get(model_type)
    if reader is not None:
        moe_layers, moe_fields = reader(cfg, fields)
        fields.update(moe_fields)
    _check_moe(fields, moe_layers)
    fields["moe_layers"] = tuple(moe_layers)
    return Architecture(**fields)
