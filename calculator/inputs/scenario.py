"""The scenario: everything a user can set for one verl run, as typed, frozen pydantic models.

The tree mirrors verl 0.9.1's Hydra config with the ``actor_rollout_ref.`` prefix dropped
(``actor_rollout_ref.actor.fsdp_config.param_offload`` is ``actor.fsdp_config.param_offload``
here), so that a verl override maps onto a field by name (see ``calculator/verl/keys.py``). Defaults
are verl 0.9.1's (shared/reference/verl_config_keys.yaml, read from the wheel's
``verl/trainer/config/_generated_ppo_trainer.yaml``). Fields verl does not have (the GPU, mean
lengths, overhead constants, efficiencies) are rlplan's own and say so.

``None`` on a field means "inherit", exactly as verl's ``${oc.select:...}`` interpolations do;
``calculator.resolve.batching`` resolves them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from calculator.inputs.backends import MAX_COUNT, FsdpSection, MegatronSection, OptimSection, _Frozen
from calculator.inputs.constants import EfficiencyConfig, OverheadConfig
from calculator.inputs.data import DataSection
from calculator.inputs.placement import PlacementSection

# DESIGN.md 6.5: the releases modelled (calculator/resolve/versions.py), newest first; "0.9" and "0.7" are
# aliases of their newest patch release (0.9.1, 0.7.1).
VERL_VERSIONS = ("0.9", "0.9.1", "0.9.0", "0.8", "0.7", "0.7.1", "0.7.0", "0.6", "0.5")
VerlVersion = Literal["0.9", "0.9.1", "0.9.0", "0.8", "0.7", "0.7.1", "0.7.0", "0.6", "0.5"]

# verl 0.9.1 AdvantageEstimator values (verl/trainer/ppo/core_algos.py). Only "gae" needs a critic.
AdvEstimator = Literal[
    "gae",
    "grpo",
    "grpo_passk",
    "grpo_vectorized",
    "rloo",
    "rloo_vectorized",
    "reinforce_plus_plus",
    "reinforce_plus_plus_baseline",
    "remax",
    "opo",
    "gpg",
    "optimal_token_baseline",
]

# Estimators that compare the n responses of one prompt and so need rollout.n > 1
# (verl normalises within a group; with n = 1 every advantage is zero).
GROUP_ESTIMATORS = (
    "grpo",
    "grpo_passk",
    "grpo_vectorized",
    "rloo",
    "rloo_vectorized",
    "opo",
    "reinforce_plus_plus_baseline",
    "gpg",
)


class ModelSection(_Frozen):
    """``actor_rollout_ref.model``: the policy model and the options verl applies to it."""

    path: str = Field(
        default="qwen2.5-7b",
        min_length=1,
        description="Model preset id (see `presets models`); verl's model.path. Ignored when `config` is given.",
    )
    config: dict[str, Any] | None = Field(
        default=None, description="An HF config.json as a mapping; overrides the preset's architecture."
    )
    enable_gradient_checkpointing: bool = Field(
        default=True, description="Recompute each decoder layer in backward; keeps only layer inputs."
    )
    enable_activation_offload: bool = Field(
        default=False, description="Offload checkpointed activations to CPU; at most two layer groups stay on GPU."
    )
    use_remove_padding: bool = Field(
        default=True, description="Pack sequences without padding (varlen flash-attention): memory follows real tokens."
    )
    use_fused_kernels: bool = Field(
        default=False, description="Fused LM head + log-prob/entropy in 512-token chunks: full logits never exist."
    )
    lora_rank: int = Field(default=0, ge=0, le=4096, description="LoRA rank; 0 = full fine-tuning.")
    lora_alpha: int = Field(default=16, ge=1, le=MAX_COUNT, description="LoRA alpha (no effect on memory).")
    target_modules: Literal["all-linear", "attention", "mlp"] = Field(
        default="all-linear", description="Which linear layers get adapters."
    )
    use_dora: bool = Field(
        default=False,
        description="rlplan only: DoRA adapters (magnitude vector + transient merged weight). "
        "verl's LoRA path does not expose DoRA; the estimate adds DoRA's extra memory to the LoRA figure.",
    )


class ActorSection(_Frozen):
    """``actor_rollout_ref.actor``."""

    strategy: Literal["fsdp", "fsdp2", "megatron"] = Field(default="fsdp", description="Training backend.")
    ppo_mini_batch_size: int = Field(
        default=256, ge=1, le=MAX_COUNT, description="Prompts per optimizer step (x n sequences)."
    )
    ppo_micro_batch_size_per_gpu: int | None = Field(
        default=None,
        ge=1,
        le=MAX_COUNT,
        description="Sequences per forward/backward per GPU; required without dynamic batch.",
    )
    use_dynamic_bsz: bool = Field(default=False, description="Pack micro-batches by a token budget instead of a count.")
    ppo_max_token_len_per_gpu: int = Field(
        default=16384, ge=1, le=MAX_COUNT, description="Token budget per micro-batch per GPU."
    )
    ppo_epochs: int = Field(default=1, ge=1, le=MAX_COUNT, description="Passes over the batch per step.")
    ulysses_sequence_parallel_size: int = Field(
        default=1, ge=1, le=MAX_COUNT, description="Ulysses SP: splits tokens over this many GPUs."
    )
    use_kl_loss: bool = Field(default=False, description="KL loss against the reference policy (needs a ref).")
    kl_loss_coef: float = Field(default=0.001, ge=0, description="Coefficient of the KL loss (no effect on memory).")
    entropy_coeff: float = Field(default=0.0, ge=0, description="Entropy bonus; != 0 computes entropy in update_actor.")
    calculate_entropy: bool = Field(default=False, description="Compute entropy in update_actor even without a bonus.")
    entropy_from_logits_with_chunking: bool = Field(default=False, description="Entropy in 2048-token fp32 chunks.")
    entropy_checkpointing: bool = Field(
        default=False, description="Recompute entropy in backward instead of saving it."
    )
    use_torch_compile: bool = Field(
        default=True,
        description="torch.compile the entropy function (verl default): inductor fuses the softmax into its "
        "reductions, so no vocab-sized buffer is materialised.",
    )
    clip_ratio_high: float = Field(default=0.2, ge=0, description="Clip-higher (DAPO); no effect on memory.")
    optim: OptimSection = OptimSection()
    fsdp_config: FsdpSection = FsdpSection()
    megatron: MegatronSection = MegatronSection()


class RefSection(_Frozen):
    """``actor_rollout_ref.ref``."""

    log_prob_micro_batch_size_per_gpu: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, description="Sequences per forward of the reference log-prob pass per GPU."
    )
    log_prob_use_dynamic_bsz: bool | None = Field(default=None, description="null = actor.use_dynamic_bsz.")
    log_prob_max_token_len_per_gpu: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, description="null = actor token budget."
    )
    ulysses_sequence_parallel_size: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, description="Ulysses SP of the reference pass; null = actor's."
    )
    fsdp_config: FsdpSection = FsdpSection()
    megatron_param_offload: bool | None = Field(default=None, description="Megatron ref offload; null = actor's.")


class RolloutSection(_Frozen):
    """``actor_rollout_ref.rollout`` (vLLM or SGLang engine colocated with the trainer)."""

    name: Literal["vllm", "sglang"] = Field(default="vllm", description="Inference engine.")
    n: int = Field(default=1, ge=1, le=1024, description="Responses per prompt (GRPO group size).")
    gpu_memory_utilization: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="vLLM: share of TOTAL GPU memory for the whole engine (weights + activations + KV). "
        "SGLang: mem_fraction_static.",
    )
    tensor_model_parallel_size: int = Field(default=2, ge=1, le=MAX_COUNT, description="GPUs per rollout replica.")
    data_parallel_size: int = Field(
        default=1,
        ge=1,
        le=MAX_COUNT,
        description="Data-parallel ranks inside one rollout engine (vLLM DP); replicas span TP x DP GPUs.",
    )
    expert_parallel_size: int = Field(
        default=1, ge=1, le=MAX_COUNT, description="Expert parallelism inside the rollout engine (MoE models)."
    )
    dtype: Literal["bfloat16", "float16"] = Field(
        default="bfloat16", description="Rollout weight and activation dtype."
    )
    quantization: Literal["none", "fp8"] = Field(default="none", description="Rollout weight quantization.")
    kv_cache_dtype: Literal["auto", "fp8"] = Field(default="auto", description="auto = model dtype (2 B).")
    max_num_batched_tokens: int = Field(
        default=8192, ge=1, le=MAX_COUNT, description="Tokens per engine step (profiled peak)."
    )
    max_num_seqs: int = Field(default=256, ge=1, le=MAX_COUNT, description="Max concurrent sequences per replica.")
    max_model_len: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, description="null = model max_position_embeddings."
    )
    enable_chunked_prefill: bool = Field(
        default=True,
        description="Chunked prefill: the profiled step is max_num_batched_tokens instead of max_model_len.",
    )
    enforce_eager: bool = Field(default=False, description="True disables CUDA graphs (no graph pool).")
    free_cache_engine: bool = Field(default=True, description="Sleep the engine after generation (free weights+KV).")
    temperature: float = Field(default=1.0, ge=0, description="!= 1 adds a logits-sized copy in the trainer.")
    log_prob_micro_batch_size_per_gpu: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, description="old_log_prob micro-batch."
    )
    log_prob_use_dynamic_bsz: bool | None = Field(
        default=None, description="Dynamic batch for old_log_prob; null = actor.use_dynamic_bsz."
    )
    log_prob_max_token_len_per_gpu: int | None = Field(
        default=None,
        ge=1,
        le=MAX_COUNT,
        description="Token budget of old_log_prob micro-batches; null = actor token budget.",
    )
    update_weights_bucket_megabytes: int = Field(
        default=2048, ge=1, le=MAX_COUNT, description="Weight-sync GPU bucket (MiB)."
    )
    layered_summon: bool = Field(
        default=False,
        description="LoRA on FSDP1: gather the base model one FSDP unit at a time for the weight sync instead of "
        "the whole model (needs a real load_format; forces vLLM sleep level 1).",
    )


class CriticSection(_Frozen):
    """``critic`` (value model: the policy's backbone with a 1-output head)."""

    enable: bool | None = Field(default=None, description="null = on iff adv_estimator is gae.")
    model_path: str | None = Field(default=None, description="Model preset id; null = same as the actor.")
    strategy: Literal["fsdp", "fsdp2", "megatron"] | None = Field(default=None, description="null = actor's.")
    ppo_mini_batch_size: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, description="Critic prompts per optimizer step; null = actor's."
    )
    ppo_micro_batch_size_per_gpu: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, description="Critic sequences per forward/backward per GPU."
    )
    forward_micro_batch_size_per_gpu: int | None = Field(
        default=None,
        ge=1,
        le=MAX_COUNT,
        description="Critic sequences per value forward per GPU; null = its training micro-batch.",
    )
    use_dynamic_bsz: bool | None = Field(
        default=None, description="Critic packs micro-batches by tokens; null = actor's setting."
    )
    ppo_max_token_len_per_gpu: int = Field(
        default=32768,
        ge=1,
        le=MAX_COUNT,
        description="Critic token budget per micro-batch per GPU (verl default 32768).",
    )
    forward_max_token_len_per_gpu: int | None = Field(
        default=None,
        ge=1,
        le=MAX_COUNT,
        description="Critic token budget of the value forward; null = its training budget.",
    )
    ppo_epochs: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, description="Critic passes over the batch per step; null = actor's."
    )
    ulysses_sequence_parallel_size: int = Field(default=1, ge=1, le=MAX_COUNT, description="Ulysses SP of the critic.")
    enable_gradient_checkpointing: bool = Field(default=True, description="Gradient checkpointing of the critic.")
    lora_rank: int = Field(default=0, ge=0, le=4096, description="verl critic.model.lora_rank: LoRA on the critic.")
    fsdp: FsdpSection = FsdpSection()
    megatron: MegatronSection = MegatronSection()


class RewardRolloutSection(_Frozen):
    gpu_memory_utilization: float = Field(
        default=0.5, gt=0, le=1, description="Reward-model engine: share of total GPU memory while it runs."
    )
    tensor_model_parallel_size: int = Field(
        default=2, ge=1, le=MAX_COUNT, description="GPUs per reward-model engine replica."
    )
    enforce_eager: bool = Field(default=True, description="Reward-model engine without CUDA graphs.")
    free_cache_engine: bool = Field(default=True, description="Sleep the reward-model engine when idle.")
    max_num_seqs: int = Field(
        default=1024, ge=1, le=MAX_COUNT, description="Max concurrent sequences of the reward-model engine."
    )
    max_num_batched_tokens: int = Field(
        default=8192, ge=1, le=MAX_COUNT, description="Tokens per reward-model engine step."
    )


class RewardModelSection(_Frozen):
    """``reward.reward_model``: a model-based reward served by an engine on the training GPUs."""

    enable: bool = Field(default=False, description="Model-based reward; false = rule-based (CPU).")
    model_path: str | None = Field(default=None, description="Reward model preset id; null = same as the actor.")
    enable_resource_pool: bool = Field(default=False, description="True = RM on its own GPUs (not modelled here).")
    rollout: RewardRolloutSection = RewardRolloutSection()


class AlgorithmSection(_Frozen):
    adv_estimator: AdvEstimator = Field(default="gae", description="gae = PPO with a critic; the rest are critic-free.")
    use_kl_in_reward: bool = Field(default=False, description="KL penalty in the reward (needs a ref).")
    kl_coef: float = Field(
        default=0.001, ge=0, description="Coefficient of the KL penalty in the reward (no effect on memory)."
    )


class HardwareSection(_Frozen):
    """rlplan: the GPU pool (verl: trainer.n_gpus_per_node x trainer.nnodes)."""

    gpu: str = Field(default="h100-80gb", min_length=1, description="GPU preset id (see `presets gpus`).")
    num_gpus: int = Field(default=8, ge=1, le=65536, description="GPUs in the colocated pool.")
    gpus_per_node: int = Field(default=8, ge=1, le=64, description="GPUs per node (trainer.n_gpus_per_node).")
    host_ram_gib_per_node: float | None = Field(
        default=None,
        gt=0,
        le=1 << 20,
        description="rlplan: host (CPU) RAM per node, GiB; null = the GPU's server-class default "
        "(calculator/inputs/hardware.py HOST_RAM_GIB_PER_NODE).",
    )

    @model_validator(mode="after")
    def _whole_nodes(self) -> HardwareSection:
        if self.num_gpus > self.gpus_per_node and self.num_gpus % self.gpus_per_node:
            raise ValueError(
                f"hardware.num_gpus ({self.num_gpus}) must be a multiple of hardware.gpus_per_node "
                f"({self.gpus_per_node}) when it spans several nodes"
            )
        return self

    @property
    def num_nodes(self) -> int:
        return max(1, self.num_gpus // self.gpus_per_node)


class Scenario(_Frozen):
    """One planned verl run."""

    name: str = Field(default="custom", description="Scenario label.")
    description: str = Field(default="", description="Free text: what this scenario is.")
    verl_version: VerlVersion = Field(
        default="0.9",
        description="verl release whose memory and time behaviour is modelled (calculator/resolve/versions.py); "
        "0.9 = 0.9.1 and 0.7 = 0.7.1 (the newest patch release).",
    )
    hardware: HardwareSection = HardwareSection()
    model: ModelSection = ModelSection()
    data: DataSection = DataSection()
    algorithm: AlgorithmSection = AlgorithmSection()
    actor: ActorSection = ActorSection()
    ref: RefSection = RefSection()
    rollout: RolloutSection = RolloutSection()
    critic: CriticSection = CriticSection()
    reward_model: RewardModelSection = RewardModelSection()
    placement: PlacementSection = PlacementSection()
    overheads: OverheadConfig = OverheadConfig()
    efficiency: EfficiencyConfig = EfficiencyConfig()

    @model_validator(mode="after")
    def _cross_field(self) -> Scenario:
        g = self.hardware.num_gpus
        tp = self.rollout.tensor_model_parallel_size * self.rollout.data_parallel_size
        pool, pool_name = (g, "hardware.num_gpus")
        if self.placement.split:  # the engine runs on its own pool (placement_pool_rules)
            pool, pool_name = (
                self.placement.rollout_num_gpus,
                "placement rollout GPUs (rollout nnodes x n_gpus_per_node)",
            )
        if pool % tp:
            raise ValueError(
                f"rollout.tensor_model_parallel_size x data_parallel_size ({tp}) must divide {pool_name} ({pool})"
            )
        sp = self.actor.ulysses_sequence_parallel_size
        if g % sp:
            raise ValueError(f"actor.ulysses_sequence_parallel_size ({sp}) must divide hardware.num_gpus ({g})")
        if sp > 1 and not self.model.use_remove_padding:
            raise ValueError("actor.ulysses_sequence_parallel_size > 1 requires model.use_remove_padding=true")
        for section in ("actor", "critic"):
            fsdp = self.actor.fsdp_config if section == "actor" else self.critic.fsdp
            if fsdp.fsdp_size > 0 and fsdp.fsdp_size < g and g % fsdp.fsdp_size:
                raise ValueError(f"{section} fsdp_size ({fsdp.fsdp_size}) must divide hardware.num_gpus ({g})")
        strategy = self.actor.strategy
        if self.actor.fsdp_config.offload_policy and strategy != "fsdp2":
            raise ValueError(f"actor.fsdp_config.offload_policy=true needs actor.strategy=fsdp2, got {strategy!r}")
        if strategy == "megatron":
            m = self.actor.megatron
            model_parallel = m.tensor_model_parallel_size * m.pipeline_model_parallel_size * m.context_parallel_size
            if g % model_parallel:
                raise ValueError(
                    f"megatron tp ({m.tensor_model_parallel_size}) x pp ({m.pipeline_model_parallel_size}) x cp "
                    f"({m.context_parallel_size}) = {model_parallel} must divide hardware.num_gpus ({g})"
                )
        if self.model.use_dora and self.model.lora_rank == 0:
            raise ValueError("model.use_dora=true needs model.lora_rank > 0")
        return self
