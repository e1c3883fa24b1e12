"""Which Scenario field is which verl 0.9.1 key: the mapping tables and the lookups both ways.

The Scenario mirrors verl's Hydra config with ``actor_rollout_ref.`` dropped. ``KEY_MAPS`` lists, for
every Scenario field verl has, its verl key, the export group and the config(s) the key exists in: the
FSDP config (``model_engine=dp``, the default, ``_generated_ppo_trainer.yaml``) and/or the Megatron one
(``model_engine=megatron``, ``_generated_ppo_megatron_trainer.yaml``). ``RLPLAN_ONLY`` lists the fields
verl does not have; ``ALIASES`` the other verl spellings accepted on import (older layouts, deprecated
keys); ``IGNORED_PREFIXES`` the verl keys accepted but not modelled. ``tests/test_verl_real.py`` checks
every key below against the verl 0.9.1 wheel (``pip download --no-deps verl==0.9.1``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from calculator.inputs.scenario import FsdpSection, MegatronSection, RewardRolloutSection
from calculator.verl.ignored import IRRELEVANT

Engine = Literal["fsdp", "megatron"]
BOTH: tuple[str, ...] = ("fsdp", "megatron")
FSDP_ONLY: tuple[str, ...] = ("fsdp",)
MEGATRON_ONLY: tuple[str, ...] = ("megatron",)

GROUPS = ("data", "algorithm", "actor", "rollout", "ref", "critic", "reward", "trainer")
LAUNCH = "python3 -m verl.trainer.main_ppo"

# verl 0.9.1 trainer/config/critic/dp_critic.yaml; verl's placeholder model path (hf_model.yaml).
VERL_PLACEHOLDER_MODEL_PATH = "~/models/deepseek-llm-7b-chat"


@dataclass(frozen=True)
class KeyMap:
    """One Scenario field and the verl key that sets it."""

    native: str
    verl: str
    group: str
    engines: tuple[str, ...] = BOTH


# Megatron-core's activation-recompute settings sit under override_transformer_config in verl's Megatron
# config (_generated_ppo_megatron_trainer.yaml: megatron.override_transformer_config.recompute_*).
NESTED_FIELDS: dict[str, str] = {
    f: f"override_transformer_config.{f}" for f in ("recompute_granularity", "recompute_method", "recompute_num_layers")
}
# Megatron-core's uneven pipeline split, which scripts add with '+' (absent from verl's generated config):
# examples/grpo_trainer/run_qwen3-235b_megatron_96gb.sh, run_deepseek671b_math_megatron_96gb.sh.
UNEVEN_PP_FIELDS = (
    "num_layers_in_first_pipeline_stage",
    "num_layers_in_last_pipeline_stage",
    "account_for_embedding_in_pipeline_split",
    "account_for_loss_in_pipeline_split",
)
NESTED_FIELDS.update({f: f"override_transformer_config.{f}" for f in UNEVEN_PP_FIELDS})


# Megatron optimizer settings rlplan keeps in the megatron section but verl reads from the role's ``optim``
# (verl utils/megatron/optimizer.py init_megatron_optim_config passes override_optimizer_config through to
# Megatron-core's OptimizerConfig). Paths are relative to the role (actor_rollout_ref.actor / critic).
MEGATRON_OPTIM_FIELDS: dict[str, str] = {
    # precision-aware optimizer and its dtypes: optim keys of verl 0.9.1's optim/megatron.yaml
    **{
        f: f"optim.{f}"
        for f in ("use_precision_aware_optimizer", "main_grads_dtype", "exp_avg_dtype", "exp_avg_sq_dtype")
    },
    **{
        f: f"optim.override_optimizer_config.{f}"
        for f in ("optimizer_cpu_offload", "optimizer_offload_fraction", "overlap_cpu_optimizer_d2h_h2d")
    },
}


def megatron_verl_key(role: str, field_name: str) -> str:
    """verl key of a MegatronSection field for ``role`` (``actor_rollout_ref.actor`` or ``critic``)."""
    if field_name in MEGATRON_OPTIM_FIELDS:
        return f"{role}.{MEGATRON_OPTIM_FIELDS[field_name]}"
    return f"{role}.megatron.{NESTED_FIELDS.get(field_name, field_name)}"


def _section(native_prefix: str, verl_prefix: str, model: type[BaseModel], group: str, engines: tuple[str, ...]):
    return tuple(
        KeyMap(f"{native_prefix}.{f}", f"{verl_prefix}.{NESTED_FIELDS.get(f, f)}", group, engines)
        for f in model.model_fields
    )


def _megatron_section(native_prefix: str, role: str, group: str):
    return tuple(
        KeyMap(f"{native_prefix}.{f}", megatron_verl_key(role, f), group, MEGATRON_ONLY)
        for f in MegatronSection.model_fields
    )


_A = "actor_rollout_ref.actor"
_R = "actor_rollout_ref.rollout"
_F = "actor_rollout_ref.ref"
_M = "actor_rollout_ref.model"

KEY_MAPS: tuple[KeyMap, ...] = (
    # data
    KeyMap("data.train_batch_size", "data.train_batch_size", "data"),
    KeyMap("data.gen_batch_size", "data.gen_batch_size", "data"),
    KeyMap("data.max_prompt_length", "data.max_prompt_length", "data"),
    KeyMap("data.max_response_length", "data.max_response_length", "data"),
    # algorithm
    KeyMap("algorithm.adv_estimator", "algorithm.adv_estimator", "algorithm"),
    KeyMap("algorithm.use_kl_in_reward", "algorithm.use_kl_in_reward", "algorithm"),
    KeyMap("algorithm.kl_coef", "algorithm.kl_ctrl.kl_coef", "algorithm"),
    # actor: the shared model section, then the actor
    KeyMap("model.path", f"{_M}.path", "actor"),
    KeyMap("model.enable_gradient_checkpointing", f"{_M}.enable_gradient_checkpointing", "actor"),
    KeyMap("model.enable_activation_offload", f"{_M}.enable_activation_offload", "actor"),
    KeyMap("model.use_remove_padding", f"{_M}.use_remove_padding", "actor"),
    KeyMap("model.use_fused_kernels", f"{_M}.use_fused_kernels", "actor"),
    KeyMap("model.lora_rank", f"{_M}.lora_rank", "actor"),
    KeyMap("model.lora_alpha", f"{_M}.lora_alpha", "actor"),
    KeyMap("model.target_modules", f"{_M}.target_modules", "actor"),
    KeyMap("actor.strategy", f"{_A}.strategy", "actor"),
    KeyMap("actor.ppo_mini_batch_size", f"{_A}.ppo_mini_batch_size", "actor"),
    KeyMap("actor.ppo_micro_batch_size_per_gpu", f"{_A}.ppo_micro_batch_size_per_gpu", "actor"),
    KeyMap("actor.use_dynamic_bsz", f"{_A}.use_dynamic_bsz", "actor"),
    KeyMap("actor.ppo_max_token_len_per_gpu", f"{_A}.ppo_max_token_len_per_gpu", "actor"),
    KeyMap("actor.ppo_epochs", f"{_A}.ppo_epochs", "actor"),
    KeyMap("actor.ulysses_sequence_parallel_size", f"{_A}.ulysses_sequence_parallel_size", "actor", FSDP_ONLY),
    KeyMap("actor.use_kl_loss", f"{_A}.use_kl_loss", "actor"),
    KeyMap("actor.kl_loss_coef", f"{_A}.kl_loss_coef", "actor"),
    KeyMap("actor.entropy_coeff", f"{_A}.entropy_coeff", "actor"),
    KeyMap("actor.calculate_entropy", f"{_A}.calculate_entropy", "actor"),
    KeyMap("actor.entropy_from_logits_with_chunking", f"{_A}.entropy_from_logits_with_chunking", "actor"),
    KeyMap("actor.entropy_checkpointing", f"{_A}.entropy_checkpointing", "actor", FSDP_ONLY),
    KeyMap("actor.clip_ratio_high", f"{_A}.clip_ratio_high", "actor"),
    KeyMap("actor.use_torch_compile", f"{_A}.use_torch_compile", "actor"),
    KeyMap("actor.optim.optimizer", f"{_A}.optim.optimizer", "actor"),
    KeyMap("actor.optim.lr", f"{_A}.optim.lr", "actor"),
    *_section("actor.fsdp_config", f"{_A}.fsdp_config", FsdpSection, "actor", FSDP_ONLY),
    *_megatron_section("actor.megatron", _A, "actor"),
    # rollout
    KeyMap("rollout.name", f"{_R}.name", "rollout"),
    KeyMap("rollout.n", f"{_R}.n", "rollout"),
    KeyMap("rollout.gpu_memory_utilization", f"{_R}.gpu_memory_utilization", "rollout"),
    KeyMap("rollout.tensor_model_parallel_size", f"{_R}.tensor_model_parallel_size", "rollout"),
    KeyMap("rollout.data_parallel_size", f"{_R}.data_parallel_size", "rollout"),
    KeyMap("rollout.expert_parallel_size", f"{_R}.expert_parallel_size", "rollout"),
    KeyMap("rollout.dtype", f"{_R}.dtype", "rollout"),
    KeyMap("rollout.quantization", f"{_R}.quantization", "rollout"),
    KeyMap("rollout.kv_cache_dtype", f"{_R}.engine_kwargs.vllm.kv_cache_dtype", "rollout"),
    KeyMap("rollout.max_num_batched_tokens", f"{_R}.max_num_batched_tokens", "rollout"),
    KeyMap("rollout.max_num_seqs", f"{_R}.max_num_seqs", "rollout"),
    KeyMap("rollout.max_model_len", f"{_R}.max_model_len", "rollout"),
    KeyMap("rollout.enable_chunked_prefill", f"{_R}.enable_chunked_prefill", "rollout"),
    KeyMap("rollout.enforce_eager", f"{_R}.enforce_eager", "rollout"),
    KeyMap("rollout.free_cache_engine", f"{_R}.free_cache_engine", "rollout"),
    KeyMap("rollout.temperature", f"{_R}.temperature", "rollout"),
    KeyMap("rollout.log_prob_micro_batch_size_per_gpu", f"{_R}.log_prob_micro_batch_size_per_gpu", "rollout"),
    KeyMap("rollout.log_prob_use_dynamic_bsz", f"{_R}.log_prob_use_dynamic_bsz", "rollout"),
    KeyMap("rollout.log_prob_max_token_len_per_gpu", f"{_R}.log_prob_max_token_len_per_gpu", "rollout"),
    KeyMap(
        "rollout.update_weights_bucket_megabytes", f"{_R}.checkpoint_engine.update_weights_bucket_megabytes", "rollout"
    ),
    KeyMap("rollout.layered_summon", f"{_R}.layered_summon", "rollout"),
    # ref
    KeyMap("ref.log_prob_micro_batch_size_per_gpu", f"{_F}.log_prob_micro_batch_size_per_gpu", "ref"),
    KeyMap("ref.log_prob_use_dynamic_bsz", f"{_F}.log_prob_use_dynamic_bsz", "ref"),
    KeyMap("ref.log_prob_max_token_len_per_gpu", f"{_F}.log_prob_max_token_len_per_gpu", "ref"),
    KeyMap("ref.ulysses_sequence_parallel_size", f"{_F}.ulysses_sequence_parallel_size", "ref", FSDP_ONLY),
    *_section("ref.fsdp_config", f"{_F}.fsdp_config", FsdpSection, "ref", FSDP_ONLY),
    KeyMap("ref.megatron_param_offload", f"{_F}.megatron.param_offload", "ref", MEGATRON_ONLY),
    # critic
    KeyMap("critic.enable", "critic.enable", "critic"),
    KeyMap("critic.model_path", "critic.model.path", "critic"),
    KeyMap("critic.strategy", "critic.strategy", "critic"),
    KeyMap("critic.ppo_mini_batch_size", "critic.ppo_mini_batch_size", "critic"),
    KeyMap("critic.ppo_micro_batch_size_per_gpu", "critic.ppo_micro_batch_size_per_gpu", "critic"),
    KeyMap("critic.forward_micro_batch_size_per_gpu", "critic.forward_micro_batch_size_per_gpu", "critic", FSDP_ONLY),
    KeyMap("critic.use_dynamic_bsz", "critic.use_dynamic_bsz", "critic"),
    KeyMap("critic.ppo_max_token_len_per_gpu", "critic.ppo_max_token_len_per_gpu", "critic"),
    KeyMap("critic.forward_max_token_len_per_gpu", "critic.forward_max_token_len_per_gpu", "critic"),
    KeyMap("critic.ppo_epochs", "critic.ppo_epochs", "critic"),
    # The FSDP critic engine reads critic.fsdp.ulysses_sequence_parallel_size; the top-level
    # critic.ulysses_sequence_parallel_size is "[DEPRECATED]" and, unlike the actor's, never forwarded
    # to the engine (workers/config/critic.py FSDPCriticConfig.__post_init__).
    KeyMap("critic.ulysses_sequence_parallel_size", "critic.fsdp.ulysses_sequence_parallel_size", "critic", FSDP_ONLY),
    KeyMap("critic.enable_gradient_checkpointing", "critic.model.enable_gradient_checkpointing", "critic"),
    KeyMap("critic.lora_rank", "critic.model.lora_rank", "critic"),
    *_section("critic.fsdp", "critic.fsdp", FsdpSection, "critic", FSDP_ONLY),
    *_megatron_section("critic.megatron", "critic", "critic"),
    # reward model (verl 0.9.1 moved it under reward.reward_model; the top-level reward_model.* is legacy)
    KeyMap("reward_model.enable", "reward.reward_model.enable", "reward"),
    KeyMap("reward_model.model_path", "reward.reward_model.model_path", "reward"),
    KeyMap("reward_model.enable_resource_pool", "reward.reward_model.enable_resource_pool", "reward"),
    *_section("reward_model.rollout", "reward.reward_model.rollout", RewardRolloutSection, "reward", BOTH),
    # trainer: hardware.num_gpus = n_gpus_per_node x nnodes (handled in code)
    KeyMap("hardware.gpus_per_node", "trainer.n_gpus_per_node", "trainer"),
    KeyMap("hardware.num_gpus", "trainer.nnodes", "trainer"),
)

# Scenario fields verl has no key for (prefixes). Exported as ``# rlplan:`` lines.
RLPLAN_ONLY: tuple[str, ...] = (
    "name",
    "description",
    "verl_version",
    "hardware.gpu",
    "model.config",
    "model.use_dora",
    "hardware.host_ram_gib_per_node",
    "data.mean_prompt_length",
    "data.mean_response_length",
    "data.response_clip_ratio",
    "data.response_length_histogram",
    "overheads.",
    "efficiency.",
    # placement: the recipes' keys are in calculator/verl/placement_keys.py; these two have none
    "placement.physical_gpus_per_node",
    "placement.mode",
)

# Keys a launch script needs whatever their value (verl has no default, or the default is a placeholder,
# or they define the run). None values are not emitted (verl's default is null there too).
ALWAYS_EMIT: frozenset[str] = frozenset(
    {
        "data.train_batch_size",
        "data.max_prompt_length",
        "data.max_response_length",
        "algorithm.adv_estimator",
        "model.path",
        "actor.ppo_mini_batch_size",
        "actor.ppo_micro_batch_size_per_gpu",
        "rollout.name",
        "rollout.n",
        "rollout.log_prob_micro_batch_size_per_gpu",
        "ref.log_prob_micro_batch_size_per_gpu",
        "critic.ppo_micro_batch_size_per_gpu",
        "hardware.gpus_per_node",
        "hardware.num_gpus",
    }
)

# Other verl spellings accepted on import (older layouts, deprecated aliases, the other engine's kwargs).
# verl >= 0.7's Megatron engine takes LoRA from the model.lora dict (Megatron-Bridge PEFT,
# verl/workers/config/megatron_peft.py get_peft_cls reads lora["rank"]); model.lora_rank is the FSDP engine's key,
# which the Megatron engine does not read (0.9.1 _generated_ppo_megatron_trainer.yaml has both).
MEGATRON_LORA_KEYS: dict[str, str] = {
    "model.lora_rank": f"{_M}.lora.rank",
    "model.lora_alpha": f"{_M}.lora.alpha",
}

ALIASES: dict[str, str] = {
    **{verl: native for native, verl in MEGATRON_LORA_KEYS.items()},
    f"{_A}.use_fused_kernels": "model.use_fused_kernels",  # ${oc.select:actor_rollout_ref.model.use_fused_kernels}
    f"{_A}.fsdp_config.strategy": "actor.strategy",
    # FSDPActorConfig.__post_init__ copies actor.ulysses_sequence_parallel_size (if > 1) into fsdp_config.
    f"{_A}.fsdp_config.ulysses_sequence_parallel_size": "actor.ulysses_sequence_parallel_size",
    f"{_F}.fsdp_config.ulysses_sequence_parallel_size": "ref.ulysses_sequence_parallel_size",
    f"{_R}.update_weights_bucket_megabytes": "rollout.update_weights_bucket_megabytes",  # verl <= 0.7 layout
    f"{_R}.engine_kwargs.sglang.kv_cache_dtype": "rollout.kv_cache_dtype",
    "critic.fsdp.strategy": "critic.strategy",
    # verl < 0.9 had no optim.use_precision_aware_optimizer key: scripts pass it (and its dtypes) through to
    # Megatron-core (e.g. examples/grpo_trainer/run_deepseek671b_math_megatron_96gb.sh).
    **{
        f"{role}.optim.override_optimizer_config.{f}": f"{native}.megatron.{f}"
        for role, native in ((_A, "actor"), ("critic", "critic"))
        for f in ("use_precision_aware_optimizer", "main_grads_dtype", "exp_avg_dtype", "exp_avg_sq_dtype")
    },
    "reward_model.enable": "reward_model.enable",
    "reward_model.model.path": "reward_model.model_path",
    "reward_model.enable_resource_pool": "reward_model.enable_resource_pool",
    **{f"reward_model.rollout.{f}": f"reward_model.rollout.{f}" for f in RewardRolloutSection.model_fields},
    **{f"critic.model.fsdp_config.{f}": f"critic.fsdp.{f}" for f in FsdpSection.model_fields},
}

# verl keys accepted without a note because they do not change memory or time (with the reason for each:
# calculator/verl/ignored.py IRRELEVANT; the keys that do but are not modelled are warned, NOT_MODELLED).
IGNORED_PREFIXES: tuple[str, ...] = tuple(IRRELEVANT)

# Deprecated global micro-batch keys: only read to reproduce verl's "set both" / "set at least one" errors.
DEPRECATED_MICRO_KEYS: dict[str, str] = {
    f"{_A}.ppo_micro_batch_size": f"{_A}.ppo_micro_batch_size_per_gpu",
    f"{_R}.log_prob_micro_batch_size": f"{_R}.log_prob_micro_batch_size_per_gpu",
    f"{_F}.log_prob_micro_batch_size": f"{_F}.log_prob_micro_batch_size_per_gpu",
    "critic.ppo_micro_batch_size": "critic.ppo_micro_batch_size_per_gpu",
}

# Keys that exist in neither generated config and need Hydra's ``+`` to be added.
PLUS_KEYS: frozenset[str] = frozenset(
    {
        f"{_R}.engine_kwargs.vllm.kv_cache_dtype",
        f"{_R}.engine_kwargs.sglang.kv_cache_dtype",
        *(
            megatron_verl_key(role, f)
            for role in (_A, "critic")
            for f, path in MEGATRON_OPTIM_FIELDS.items()
            if ".override_optimizer_config." in path
        ),
        *(megatron_verl_key(role, f) for role in (_A, "critic") for f in UNEVEN_PP_FIELDS),
    }
)
# Megatron fields whose verl key is absent from verl 0.9.1's generated Megatron config: the
# override_optimizer_config pass-through ('+' keys) and megatron.grad_offload (in the 0.7.1-0.9.0 configs,
# removed in 0.9.1).
MEGATRON_ABSENT_FIELDS: frozenset[str] = frozenset(
    {
        "grad_offload",
        *UNEVEN_PP_FIELDS,
        *(f for f, p in MEGATRON_OPTIM_FIELDS.items() if ".override_optimizer_config." in p),
    }
)

# model.target_modules: rlplan's short names <-> the module lists verl/PEFT accept.
TARGET_MODULES: dict[str, Any] = {
    "all-linear": "all-linear",
    "attention": ["q_proj", "k_proj", "v_proj", "o_proj"],
    "mlp": ["gate_proj", "up_proj", "down_proj"],
}

_BY_NATIVE = {km.native: km for km in KEY_MAPS}
_BY_VERL = {km.verl: km for km in KEY_MAPS}


def is_rlplan_only(native: str) -> bool:
    return any(native == p or (p.endswith(".") and native.startswith(p)) for p in RLPLAN_ONLY)


def native_to_verl(key: str, engine: str | None = None) -> str | None:
    """verl key for a native dotted field, or None when verl has none (rlplan-only settings,
    ``hardware.num_gpus`` which is ``trainer.n_gpus_per_node x trainer.nnodes``: use
    :func:`native_to_verl_items` for values). With ``engine`` given, None also when the key does not
    exist in that engine's config (e.g. ``actor.fsdp_config.*`` under Megatron)."""
    km = _BY_NATIVE.get(key)
    if km is None or key == "hardware.num_gpus":
        return None
    if engine is not None and engine not in km.engines:
        return None
    if key == "actor.strategy" and engine == "megatron":
        return "model_engine"
    if engine == "megatron" and key in MEGATRON_LORA_KEYS:
        return MEGATRON_LORA_KEYS[key]
    return km.verl


def verl_to_native(key: str) -> str | None:
    """Native dotted field for a verl key (either engine, aliases included), or None when not modelled."""
    key = key.lstrip("+~")
    if key == "model_engine":
        return "actor.strategy"
    if key == "trainer.nnodes":
        return "hardware.num_gpus"
    km = _BY_VERL.get(key)
    if km is not None:
        return km.native
    return ALIASES.get(key)
