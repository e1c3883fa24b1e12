"""The training-backend sections of the scenario: FSDP / FSDP2, Megatron, the optimizer (verl 0.9.1's
``actor_rollout_ref.actor.fsdp_config``, ``...megatron``, ``...optim`` and the critic's equivalents), and the base
every scenario section shares (frozen, closed, finite, no boolean for a number, every count bounded).
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from calculator.inputs.numbers import NoBoolNumbers


class _Frozen(NoBoolNumbers):
    """Base of every scenario section."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True, allow_inf_nan=False)


# An upper bound on every count and token length that no real run reaches: absurd input (1e30) is a
# validation error naming the field, not an overflow somewhere in the arithmetic.
MAX_COUNT = 1 << 30


class FsdpSection(_Frozen):
    """``*.fsdp_config`` of an FSDP engine (``critic.fsdp`` for the critic)."""

    param_offload: bool = Field(default=False, description="Move params and grads to CPU while the role is idle.")
    optimizer_offload: bool = Field(default=False, description="Move Adam states to CPU while the role is idle.")
    offload_policy: bool = Field(
        default=False,
        description="FSDP2 only: params, grads and optimizer stay on CPU during compute (CPUOffloadPolicy).",
    )
    fsdp_size: int = Field(default=-1, ge=-1, description="GPUs per FSDP shard group; -1 = all GPUs (HSDP otherwise).")
    model_dtype: Literal["fp32", "bf16"] = Field(
        default="fp32", description="dtype the model is loaded in = dtype of the sharded master params."
    )
    reshard_after_forward: bool = Field(
        default=True, description="False = SHARD_GRAD_OP (keep gathered params until backward)."
    )
    use_no_sync_for_gradient_accumulation: bool = Field(
        default=False, description="Accumulate unsharded fp32 grads across micro-batches (4 B/param, not divided)."
    )

    @model_validator(mode="after")
    def _fsdp_size(self) -> FsdpSection:
        if self.fsdp_size == 0:
            raise ValueError("fsdp_size must be -1 (all GPUs) or a positive GPU count, got 0")
        return self


class MegatronSection(_Frozen):
    """``*.megatron`` (selected with ``model_engine=megatron`` / strategy megatron)."""

    tensor_model_parallel_size: int = Field(default=1, ge=1, le=MAX_COUNT, description="Megatron TP.")
    pipeline_model_parallel_size: int = Field(default=1, ge=1, le=MAX_COUNT, description="Megatron PP.")
    virtual_pipeline_model_parallel_size: int | None = Field(
        default=None,
        ge=1,
        le=MAX_COUNT,
        description="Megatron virtual pipeline stages (interleaved schedule); null = off.",
    )
    context_parallel_size: int = Field(default=1, ge=1, le=MAX_COUNT, description="Megatron CP (splits sequence).")
    expert_model_parallel_size: int = Field(default=1, ge=1, le=MAX_COUNT, description="Megatron EP (experts split).")
    expert_tensor_parallel_size: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, description="TP inside experts; null = TP."
    )
    # Megatron-core's uneven pipeline split (verl: megatron.override_transformer_config.*; megatron-core 0.16.1
    # transformer_block.py get_num_layers_to_build): calculator.model.megatron_activations.pipeline_stage_layers.
    num_layers_in_first_pipeline_stage: int | None = Field(
        default=None, ge=0, le=MAX_COUNT, description="Decoder layers on the first pipeline stage; null = even split."
    )
    num_layers_in_last_pipeline_stage: int | None = Field(
        default=None, ge=0, le=MAX_COUNT, description="Decoder layers on the last pipeline stage; null = even split."
    )
    account_for_embedding_in_pipeline_split: bool = Field(
        default=False, description="Count the embedding as one layer of the split: the first stage builds one less."
    )
    account_for_loss_in_pipeline_split: bool = Field(
        default=False, description="Count the loss as one layer of the split: the last stage builds one less."
    )
    sequence_parallel: bool = Field(default=True, description="Split LayerNorm/dropout activations over TP.")
    use_distributed_optimizer: bool = Field(default=True, description="Shard fp32 master + Adam over DP.")
    param_offload: bool = Field(default=False, description="Offload params and release grad buffers while idle.")
    optimizer_offload: bool = Field(default=False, description="Offload optimizer state while idle.")
    # Megatron-core optimizer (verl: actor.optim.* and +actor.optim.override_optimizer_config.*, passed to
    # megatron.core.optimizer.OptimizerConfig; megatron-core 0.16 optimizer_config.py).
    optimizer_cpu_offload: bool = Field(
        default=False,
        description="Megatron HybridDeviceOptimizer: run the optimizer step for optimizer_offload_fraction of the "
        "parameters on CPU (their fp32 master weights, Adam moments and a pinned grad copy live in host RAM).",
    )
    optimizer_offload_fraction: float = Field(
        default=1.0,
        ge=0,
        le=1,
        description="Share of the optimizer's parameters (by count) stepped on CPU when optimizer_cpu_offload is on "
        "(Megatron-core OptimizerConfig default 1.0).",
    )
    overlap_cpu_optimizer_d2h_h2d: bool = Field(
        default=False, description="Overlap the CPU optimizer's grad D2H / param H2D copies (time only)."
    )
    use_precision_aware_optimizer: bool = Field(
        default=False,
        description="Megatron precision-aware optimizer: master weights kept as int16 remainders beside the bf16 "
        "params (store_param_remainders), grad buffer and Adam moments in the dtypes below.",
    )
    main_grads_dtype: Literal["fp32", "bf16"] = Field(
        default="fp32", description="Grad buffer dtype (only with use_precision_aware_optimizer)."
    )
    exp_avg_dtype: Literal["fp32", "bf16"] = Field(
        default="fp32", description="Adam first moment dtype (only with use_precision_aware_optimizer)."
    )
    exp_avg_sq_dtype: Literal["fp32", "bf16"] = Field(
        default="fp32", description="Adam second moment dtype (only with use_precision_aware_optimizer)."
    )
    grad_offload: bool = Field(
        default=False,
        description="verl 0.7.1-0.9.0 megatron.grad_offload (removed from the 0.9.1 config): the legacy "
        "megatron_workers.py stores _is_offload_grad but never reads it; the grad buffer is freed with param_offload. "
        "No effect on memory.",
    )
    recompute_granularity: Literal["full", "selective"] | None = Field(
        default=None,
        description="verl: megatron.override_transformer_config.recompute_granularity (Megatron-core activation "
        "recompute; model.enable_gradient_checkpointing is FSDP-only). full = recompute whole layers in backward "
        "(see recompute_method); selective = recompute only the core attention (recompute_modules "
        "['core_attn'], verl's default); null = no recompute.",
    )
    recompute_method: Literal["uniform", "block"] | None = Field(
        default=None,
        description="verl: megatron.override_transformer_config.recompute_method (granularity full only). "
        "uniform = every layer, checkpointed in groups of recompute_num_layers; block = only the first "
        "recompute_num_layers layers of each pipeline stage.",
    )
    recompute_num_layers: int | None = Field(
        default=None,
        ge=1,
        le=MAX_COUNT,
        description="verl: megatron.override_transformer_config.recompute_num_layers (granularity full only): "
        "layers per recompute group (uniform) or recomputed layers per pipeline stage (block), between 1 and "
        "the layers per pipeline stage.",
    )

    @model_validator(mode="after")
    def _uneven_pipeline(self) -> MegatronSection:
        uneven = (
            self.num_layers_in_first_pipeline_stage is not None or self.num_layers_in_last_pipeline_stage is not None
        )
        if uneven and (self.account_for_embedding_in_pipeline_split or self.account_for_loss_in_pipeline_split):
            raise ValueError(
                "megatron num_layers_in_first/last_pipeline_stage cannot be combined with "
                "account_for_embedding/loss_in_pipeline_split (Megatron-core get_num_layers_to_build: 'Does not "
                "support standalone embedding stage and standalone loss stage with uneven pp')"
            )
        return self

    @model_validator(mode="after")
    def _recompute(self) -> MegatronSection:
        # Megatron-core TransformerConfig.__post_init__ rejects these combinations at startup.
        g = self.recompute_granularity
        if g == "full" and (self.recompute_method is None or self.recompute_num_layers is None):
            raise ValueError(
                f"megatron recompute_granularity 'full' needs recompute_method (uniform|block) and "
                f"recompute_num_layers (Megatron-core), got method {self.recompute_method!r}, "
                f"num_layers {self.recompute_num_layers!r}"
            )
        if g == "selective" and self.recompute_num_layers is not None:
            raise ValueError(
                f"megatron recompute_granularity 'selective' takes no recompute_num_layers (Megatron-core), "
                f"got {self.recompute_num_layers}"
            )
        return self


class OptimSection(_Frozen):
    optimizer: Literal["AdamW", "adam", "SGD", "Adafactor"] = Field(
        default="AdamW", description="AdamW keeps two fp32 moments (8 B/param); SGD none (without momentum)."
    )
    lr: float = Field(default=1e-6, gt=0, lt=1, description="Learning rate (no effect on memory or time).")
