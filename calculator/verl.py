"""verl 0.9.1 settings <-> Scenario, both ways (DESIGN.md 6.1 ``--verl``, 6.4 ``export``).

The Scenario mirrors verl's Hydra config with ``actor_rollout_ref.`` dropped. ``KEY_MAPS`` lists, for
every Scenario field verl has, its verl key, the export group and the config(s) the key exists in: the
FSDP config (``model_engine=dp``, the default, ``_generated_ppo_trainer.yaml``) and/or the Megatron one
(``model_engine=megatron``, ``_generated_ppo_megatron_trainer.yaml``). ``RLPLAN_ONLY`` lists the fields
verl does not have. ``tests/test_verl_real.py`` checks every key and every default below against the
verl 0.9.1 wheel.

Export (``export_overrides`` / ``format_overrides`` / ``export_yaml``) emits the keys whose value differs
from verl's default plus the keys a launch needs anyway (``ALWAYS_EMIT``). Where verl's default is an
interpolation (``ref.log_prob_use_dynamic_bsz: ${oc.select:actor_rollout_ref.actor.use_dynamic_bsz,false}``)
rlplan's default is None ("inherit"), and an explicit value is emitted even when it equals the inherited one:
it no longer follows the other key. The launch command groups keys data / algorithm / actor / rollout / ref /
critic / reward / trainer with a ``# group`` marker line (in backticks), which bash expands to nothing (a comment line
would end the backslash-continued command). Settings verl cannot express
(the GPU type, mean lengths, overhead constants, a Megatron section under FSDP, ...) become
``# rlplan: key=<json>`` comment lines: bash, Hydra and verl ignore them, and the importer reads them back,
so ``import(export(s)) == s`` exactly. ``--format overrides`` prints verl keys only (no comments).

Import (``import_verl_text`` / ``import_verl_yaml``) reads a bash launch script or a verl YAML config:
shell variables are resolved from assignments in the same script (``VAR=v``, ``export VAR=v``,
``${VAR:-default}``, integer ``$(( ... ))``), Hydra interpolations (``${data.max_prompt_length}``,
``${oc.select:key,default}``, relative ``${.key}``) against the other settings and verl's defaults;
whatever stays unresolved is reported and ignored. Unknown keys are warnings, never fatal.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pydantic import BaseModel

from calculator.errors import InputError
from calculator.scenario import FsdpSection, MegatronSection, RewardRolloutSection, Scenario

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


def _section(native_prefix: str, verl_prefix: str, model: type[BaseModel], group: str, engines: tuple[str, ...]):
    return tuple(KeyMap(f"{native_prefix}.{f}", f"{verl_prefix}.{f}", group, engines) for f in model.model_fields)


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
    *_section("actor.megatron", f"{_A}.megatron", MegatronSection, "actor", MEGATRON_ONLY),
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
    *_section("critic.megatron", "critic.megatron", MegatronSection, "critic", MEGATRON_ONLY),
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
    "data.mean_prompt_length",
    "data.mean_response_length",
    "overheads.",
    "efficiency.",
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
ALIASES: dict[str, str] = {
    f"{_A}.use_fused_kernels": "model.use_fused_kernels",  # ${oc.select:actor_rollout_ref.model.use_fused_kernels}
    f"{_A}.fsdp_config.strategy": "actor.strategy",
    # FSDPActorConfig.__post_init__ copies actor.ulysses_sequence_parallel_size (if > 1) into fsdp_config.
    f"{_A}.fsdp_config.ulysses_sequence_parallel_size": "actor.ulysses_sequence_parallel_size",
    f"{_F}.fsdp_config.ulysses_sequence_parallel_size": "ref.ulysses_sequence_parallel_size",
    f"{_R}.update_weights_bucket_megabytes": "rollout.update_weights_bucket_megabytes",  # verl <= 0.7 layout
    f"{_R}.engine_kwargs.sglang.kv_cache_dtype": "rollout.kv_cache_dtype",
    "critic.fsdp.strategy": "critic.strategy",
    "reward_model.enable": "reward_model.enable",
    "reward_model.model.path": "reward_model.model_path",
    "reward_model.enable_resource_pool": "reward_model.enable_resource_pool",
    **{f"reward_model.rollout.{f}": f"reward_model.rollout.{f}" for f in RewardRolloutSection.model_fields},
    **{f"critic.model.fsdp_config.{f}": f"critic.fsdp.{f}" for f in FsdpSection.model_fields},
}

# verl keys that would be accepted by Hydra but are not modelled: accepted silently on import.
IGNORED_PREFIXES: tuple[str, ...] = (
    "data.train_files",
    "data.val_files",
    "data.prompt_key",
    "data.reward_fn_key",
    "data.return_raw_chat",
    "data.filter_overlong_prompts",
    "data.truncation",
    "data.shuffle",
    "data.dataloader_num_workers",
    "data.tokenizer",
    "data.image_key",
    "data.trust_remote_code",
    "data.val_batch_size",
    "data.seed",
    "data.custom_cls",
    "data.train_max_samples",
    "data.val_max_samples",
    "trainer.project_name",
    "trainer.experiment_name",
    "trainer.logger",
    "trainer.save_freq",
    "trainer.test_freq",
    "trainer.total_epochs",
    "trainer.total_training_steps",
    "trainer.val_before_train",
    "trainer.default_local_dir",
    "trainer.default_hdfs_dir",
    "trainer.resume_mode",
    "trainer.resume_from_path",
    "trainer.critic_warmup",
    "trainer.log_val_generations",
    "trainer.balance_batch",
    "trainer.device",
    "trainer.use_v1",
    "trainer.v1.",
    "trainer.max_actor_ckpt_to_keep",
    "trainer.max_critic_ckpt_to_keep",
    "trainer.val_only",
    "trainer.rollout_data_dir",
    "trainer.validation_data_dir",
    "trainer.del_local_ckpt_after_load",
    "trainer.ray_wait_register_center_timeout",
    "trainer.esi_redundant_time",
    "trainer.checkpoint_callback_class",
    f"{_A}.optim.",
    f"{_A}.clip_ratio",
    f"{_A}.clip_ratio_low",
    f"{_A}.clip_ratio_c",
    f"{_A}.loss_agg_mode",
    f"{_A}.loss_scale_factor",
    f"{_A}.kl_loss_type",
    f"{_A}.policy_loss",
    f"{_A}.grad_clip",
    f"{_A}.shuffle",
    f"{_A}.checkpoint",
    f"{_A}.profiler",
    f"{_A}.data_loader_seed",
    f"{_A}.entropy_from_logits_chunk_size",
    f"{_A}.fsdp_config.forward_prefetch",
    f"{_A}.fsdp_config.wrap_policy",
    f"{_A}.fsdp_config.use_orig_params",
    f"{_A}.fsdp_config.seed",
    f"{_A}.fsdp_config.use_torch_compile",
    f"{_M}.trust_remote_code",
    f"{_M}.external_lib",
    f"{_M}.use_shm",
    f"{_M}.override_config",
    f"{_M}.custom_chat_template",
    f"{_M}.tokenizer_path",
    f"{_M}.use_liger",
    f"{_R}.mode",
    f"{_R}.top_p",
    f"{_R}.top_k",
    f"{_R}.do_sample",
    f"{_R}.val_kwargs",
    f"{_R}.load_format",
    f"{_R}.enable_prefix_caching",
    f"{_R}.agent",
    f"{_R}.multi_turn",
    f"{_R}.calculate_log_probs",
    f"{_R}.layered_summon",
    f"{_R}.prompt_length",
    f"{_R}.response_length",
    f"{_R}.disable_log_stats",
    f"{_R}.seed",
    f"{_R}.trace",
    f"{_R}.checkpoint_engine.backend",
    f"{_R}.profiler",
    f"{_R}.prometheus",
    f"{_F}.profiler",
    f"{_F}.fsdp_config.forward_prefetch",
    f"{_F}.fsdp_config.wrap_policy",
    f"{_F}.fsdp_config.use_orig_params",
    "actor_rollout_ref.hybrid_engine",
    "actor_rollout_ref.nccl_timeout",
    "algorithm.gamma",
    "algorithm.lam",
    "algorithm.kl_penalty",
    "algorithm.kl_ctrl.type",
    "algorithm.kl_ctrl.horizon",
    "algorithm.kl_ctrl.target_kl",
    "algorithm.norm_adv_by_std_in_grpo",
    "algorithm.filter_groups",
    "algorithm.rollout_correction",
    "critic.optim.",
    "critic.cliprange_value",
    "critic.grad_clip",
    "critic.shuffle",
    "critic.loss_agg_mode",
    "critic.checkpoint",
    "critic.profiler",
    "critic.model.trust_remote_code",
    "critic.model.tokenizer_path",
    "critic.model.use_remove_padding",
    "custom_reward_function.",
    "reward.reward_manager",
    "reward.custom_reward_function",
    "reward.num_workers",
    "reward.reward_model.rollout.name",
    "reward.sandbox_fusion",
    "reward_model.reward_manager",
    "ray_init.",
    "ray_kwargs.",
    "global_profiler.",
    "hydra.",
)

# Deprecated global micro-batch keys: only read to reproduce verl's "set both" / "set at least one" errors.
DEPRECATED_MICRO_KEYS: dict[str, str] = {
    f"{_A}.ppo_micro_batch_size": f"{_A}.ppo_micro_batch_size_per_gpu",
    f"{_R}.log_prob_micro_batch_size": f"{_R}.log_prob_micro_batch_size_per_gpu",
    f"{_F}.log_prob_micro_batch_size": f"{_F}.log_prob_micro_batch_size_per_gpu",
    "critic.ppo_micro_batch_size": "critic.ppo_micro_batch_size_per_gpu",
}

# verl 0.9.1's defaults for every key above, as written in _generated_ppo_trainer.yaml (interpolations
# kept as text), and the keys whose value differs in _generated_ppo_megatron_trainer.yaml.
# Checked against the wheel by tests/test_verl_real.py.
_OC_ACTOR = "${oc.select:actor_rollout_ref.actor."
VERL_DEFAULTS: dict[str, Any] = {
    "data.train_batch_size": 1024,
    "data.gen_batch_size": None,
    "data.max_prompt_length": 512,
    "data.max_response_length": 512,
    "algorithm.adv_estimator": "gae",
    "algorithm.use_kl_in_reward": False,
    "algorithm.kl_ctrl.kl_coef": 0.001,
    f"{_M}.path": VERL_PLACEHOLDER_MODEL_PATH,
    f"{_M}.enable_gradient_checkpointing": True,
    f"{_M}.enable_activation_offload": False,
    f"{_M}.use_remove_padding": True,
    f"{_M}.use_fused_kernels": False,
    f"{_M}.lora_rank": 0,
    f"{_M}.lora_alpha": 16,
    f"{_M}.target_modules": "all-linear",
    f"{_A}.strategy": "fsdp",
    f"{_A}.ppo_mini_batch_size": 256,
    f"{_A}.ppo_micro_batch_size": None,
    f"{_A}.ppo_micro_batch_size_per_gpu": None,
    f"{_A}.use_dynamic_bsz": False,
    f"{_A}.ppo_max_token_len_per_gpu": 16384,
    f"{_A}.ppo_epochs": 1,
    f"{_A}.ulysses_sequence_parallel_size": 1,
    f"{_A}.use_kl_loss": False,
    f"{_A}.kl_loss_coef": 0.001,
    f"{_A}.entropy_coeff": 0,
    f"{_A}.calculate_entropy": False,
    f"{_A}.entropy_from_logits_with_chunking": False,
    f"{_A}.entropy_checkpointing": False,
    f"{_A}.clip_ratio_high": 0.2,
    f"{_A}.use_torch_compile": True,
    f"{_A}.optim.optimizer": "AdamW",
    f"{_A}.optim.lr": 1.0e-06,
    f"{_A}.use_fused_kernels": "${oc.select:actor_rollout_ref.model.use_fused_kernels,false}",
    f"{_A}.fsdp_config.param_offload": False,
    f"{_A}.fsdp_config.optimizer_offload": False,
    f"{_A}.fsdp_config.offload_policy": False,
    f"{_A}.fsdp_config.fsdp_size": -1,
    f"{_A}.fsdp_config.model_dtype": "fp32",
    f"{_A}.fsdp_config.reshard_after_forward": True,
    f"{_A}.fsdp_config.use_no_sync_for_gradient_accumulation": False,
    f"{_A}.fsdp_config.strategy": "fsdp",
    f"{_A}.fsdp_config.ulysses_sequence_parallel_size": 1,
    f"{_R}.name": "???",
    f"{_R}.n": 1,
    f"{_R}.gpu_memory_utilization": 0.5,
    f"{_R}.tensor_model_parallel_size": 2,
    f"{_R}.data_parallel_size": 1,
    f"{_R}.expert_parallel_size": 1,
    f"{_R}.pipeline_model_parallel_size": 1,
    f"{_R}.dtype": "bfloat16",
    f"{_R}.quantization": None,
    f"{_R}.max_num_batched_tokens": 8192,
    f"{_R}.max_num_seqs": 256,
    f"{_R}.max_model_len": None,
    f"{_R}.enable_chunked_prefill": True,
    f"{_R}.enforce_eager": False,
    f"{_R}.free_cache_engine": True,
    f"{_R}.temperature": 1.0,
    f"{_R}.log_prob_micro_batch_size": None,
    f"{_R}.log_prob_micro_batch_size_per_gpu": None,
    f"{_R}.log_prob_use_dynamic_bsz": _OC_ACTOR + "use_dynamic_bsz,false}",
    f"{_R}.log_prob_max_token_len_per_gpu": _OC_ACTOR + "ppo_max_token_len_per_gpu,16384}",
    f"{_R}.checkpoint_engine.update_weights_bucket_megabytes": 2048,
    f"{_F}.log_prob_micro_batch_size": None,
    f"{_F}.log_prob_micro_batch_size_per_gpu": None,
    f"{_F}.log_prob_use_dynamic_bsz": _OC_ACTOR + "use_dynamic_bsz,false}",
    f"{_F}.log_prob_max_token_len_per_gpu": _OC_ACTOR + "ppo_max_token_len_per_gpu,16384}",
    f"{_F}.ulysses_sequence_parallel_size": _OC_ACTOR + "ulysses_sequence_parallel_size,1}",
    f"{_F}.fsdp_config.param_offload": False,
    f"{_F}.fsdp_config.optimizer_offload": False,
    f"{_F}.fsdp_config.offload_policy": False,
    f"{_F}.fsdp_config.fsdp_size": -1,
    f"{_F}.fsdp_config.model_dtype": "fp32",
    f"{_F}.fsdp_config.reshard_after_forward": True,
    f"{_F}.fsdp_config.use_no_sync_for_gradient_accumulation": False,
    "critic.enable": None,
    "critic.model.path": VERL_PLACEHOLDER_MODEL_PATH,
    "critic.strategy": "fsdp",
    "critic.ppo_mini_batch_size": _OC_ACTOR + "ppo_mini_batch_size,256}",
    "critic.ppo_micro_batch_size": None,
    "critic.ppo_micro_batch_size_per_gpu": "${oc.select:.ppo_micro_batch_size,null}",
    "critic.forward_micro_batch_size_per_gpu": "${oc.select:.ppo_micro_batch_size_per_gpu,null}",
    "critic.use_dynamic_bsz": _OC_ACTOR + "use_dynamic_bsz,false}",
    "critic.ppo_max_token_len_per_gpu": 32768,
    "critic.forward_max_token_len_per_gpu": "${.ppo_max_token_len_per_gpu}",
    "critic.ppo_epochs": _OC_ACTOR + "ppo_epochs,1}",
    "critic.ulysses_sequence_parallel_size": 1,
    "critic.model.enable_gradient_checkpointing": True,
    "critic.model.lora_rank": 0,
    "critic.fsdp.param_offload": False,
    "critic.fsdp.optimizer_offload": False,
    "critic.fsdp.offload_policy": False,
    "critic.fsdp.fsdp_size": -1,
    "critic.fsdp.model_dtype": "fp32",
    "critic.fsdp.reshard_after_forward": True,
    "critic.fsdp.use_no_sync_for_gradient_accumulation": False,
    "critic.fsdp.ulysses_sequence_parallel_size": 1,
    "reward.reward_model.enable": False,
    "reward.reward_model.model_path": None,
    "reward.reward_model.enable_resource_pool": False,
    "reward.reward_model.rollout.gpu_memory_utilization": 0.5,
    "reward.reward_model.rollout.tensor_model_parallel_size": 2,
    "reward.reward_model.rollout.enforce_eager": True,
    "reward.reward_model.rollout.free_cache_engine": True,
    "reward.reward_model.rollout.max_num_seqs": 1024,
    "reward.reward_model.rollout.max_num_batched_tokens": 8192,
    "trainer.n_gpus_per_node": 8,
    "trainer.nnodes": 1,
}
_MEG = "${oc.select:actor_rollout_ref.actor.megatron.param_offload,False}"
VERL_MEGATRON_DEFAULTS: dict[str, Any] = {
    f"{_A}.strategy": "megatron",
    f"{_A}.optim.optimizer": "adam",
    "critic.strategy": "megatron",
    **{f"{_A}.megatron.{k}": v for k, v in MegatronSection().model_dump().items()},
    f"{_F}.megatron.param_offload": _MEG,
    **{f"critic.megatron.{k}": v for k, v in MegatronSection().model_dump().items()},
}
# Keys only in one of the two configs (the rest of KEY_MAPS exists in both).
_FSDP_ONLY_KEYS = {km.verl for km in KEY_MAPS if km.engines == FSDP_ONLY} | {
    f"{_A}.fsdp_config.strategy",
    f"{_A}.fsdp_config.ulysses_sequence_parallel_size",
    "critic.ulysses_sequence_parallel_size",
}
_MEGATRON_ONLY_KEYS = {km.verl for km in KEY_MAPS if km.engines == MEGATRON_ONLY}
# Keys that exist in neither generated config and need Hydra's ``+`` to be added.
PLUS_KEYS: frozenset[str] = frozenset(
    {f"{_R}.engine_kwargs.vllm.kv_cache_dtype", f"{_R}.engine_kwargs.sglang.kv_cache_dtype"}
)

# model.target_modules: rlplan's short names <-> the module lists verl/PEFT accept.
TARGET_MODULES: dict[str, Any] = {
    "all-linear": "all-linear",
    "attention": ["q_proj", "k_proj", "v_proj", "o_proj"],
    "mlp": ["gate_proj", "up_proj", "down_proj"],
}

_MEGATRON_PARALLEL = {
    "tensor_model_parallel_size",
    "pipeline_model_parallel_size",
    "virtual_pipeline_model_parallel_size",
    "context_parallel_size",
    "expert_model_parallel_size",
    "expert_tensor_parallel_size",
}
_BY_NATIVE = {km.native: km for km in KEY_MAPS}
_BY_VERL = {km.verl: km for km in KEY_MAPS}
_MISSING = "???"


def verl_defaults(engine: str = "fsdp") -> dict[str, Any]:
    """verl 0.9.1's raw default for every mapped key in the FSDP or the Megatron config."""
    out = {k: v for k, v in VERL_DEFAULTS.items() if not (engine == "megatron" and k in _FSDP_ONLY_KEYS)}
    if engine == "megatron":
        out.update(VERL_MEGATRON_DEFAULTS)
    return out


# --------------------------------------------------------------------------------------------------
# Scenario field helpers


def _leaf_fields(model: type[BaseModel] = Scenario, prefix: str = "") -> list[str]:
    out: list[str] = []
    for name, f in model.model_fields.items():
        ann = f.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out += _leaf_fields(ann, f"{prefix}{name}.")
        else:
            out.append(prefix + name)
    return out


SCENARIO_FIELDS: tuple[str, ...] = tuple(_leaf_fields())


def is_rlplan_only(native: str) -> bool:
    return any(native == p or (p.endswith(".") and native.startswith(p)) for p in RLPLAN_ONLY)


def native_field_exists(key: str) -> bool:
    """Whether ``a.b.c`` names a field of the Scenario tree (dict-typed fields accept any sub-key)."""
    model: type[BaseModel] | None = Scenario
    for part in key.split("."):
        if model is None:
            return False
        fld = model.model_fields.get(part)
        if fld is None:
            return False
        ann = fld.annotation
        model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    return model is None


def _field_info(native: str):
    model: type[BaseModel] = Scenario
    parts = native.split(".")
    for part in parts[:-1]:
        model = model.model_fields[part].annotation  # type: ignore[assignment]
    return model.model_fields[parts[-1]]


_DEFAULTS = Scenario.model_construct()  # Scenario() itself is invalid: it has no actor micro-batch


def native_default(native: str) -> Any:
    """The Scenario's default for a dotted field (= verl 0.9.1's default for mapped fields)."""
    node: Any = _DEFAULTS
    for part in native.split("."):
        node = getattr(node, part)
    return node


def _get(s: Scenario | dict[str, Any], native: str) -> Any:
    node: Any = s
    for part in native.split("."):
        node = node[part] if isinstance(node, dict) else getattr(node, part)
    return node


def _nullable(native: str) -> bool:
    ann = _field_info(native).annotation
    return ann is None or type(None) in get_args(ann)


def _literal_values(native: str) -> tuple[Any, ...] | None:
    ann = _field_info(native).annotation
    for candidate in (ann, *get_args(ann)):
        if getattr(candidate, "__origin__", None) is Literal:
            return get_args(candidate)
    return None


def engine_of(s: Scenario) -> str:
    return "megatron" if s.actor.strategy == "megatron" else "fsdp"


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


def native_to_verl_items(key: str, value: Any, scenario: Scenario | None = None) -> list[tuple[str, Any]]:
    """verl overrides that set native field ``key`` to ``value`` (for the planner's settings tables).
    ``hardware.num_gpus`` gives ``trainer.n_gpus_per_node`` and ``trainer.nnodes``."""
    s = scenario or _DEFAULTS
    if key == "hardware.num_gpus":
        per = min(int(value), s.hardware.gpus_per_node)
        return [("trainer.n_gpus_per_node", per), ("trainer.nnodes", max(1, int(value) // per))]
    eng = "megatron" if (key == "actor.strategy" and value == "megatron") else engine_of(s)
    verl_key = native_to_verl(key, eng)
    if verl_key is None:
        return []
    if key == "rollout.kv_cache_dtype":
        name = s.rollout.name
        return [(f"+{_R}.engine_kwargs.{name}.kv_cache_dtype", _kv_dtype_to_verl(value, name))]
    if value is None and key not in ("critic.model_path", "reward_model.model_path"):
        return [(verl_key, verl_defaults(eng).get(verl_key))]  # back to verl's default (may be an interpolation)
    return [(verl_key, _to_verl_value(key, value, s))]


# --------------------------------------------------------------------------------------------------
# Value conversion


def _hf_repo(model_id: str | None) -> str | None:
    from calculator.presets import model_presets

    if model_id is None:
        return None
    m = model_presets().get(model_id)
    return m.hf_repo if m else model_id


def _model_id_from_path(path: str) -> str | None:
    from calculator.presets import model_presets

    presets = model_presets()
    base = path.rstrip("/").split("/")[-1].lower()
    repo = "/".join(path.rstrip("/").split("/")[-2:]).lower()
    for m in presets.values():
        if m.hf_repo.lower() == repo or m.id == path:
            return m.id
    for m in presets.values():
        if m.id == base or m.hf_repo.split("/")[-1].lower() == base:
            return m.id
    stripped = re.sub(r"-(instruct|chat|base|hf|it)$", "", base)
    for m in presets.values():
        if m.id == stripped or m.hf_repo.split("/")[-1].lower() in (stripped, stripped + "-hf"):
            return m.id
    return None


def _kv_dtype_to_verl(value: str, engine_name: str) -> str:
    # vLLM: --kv-cache-dtype fp8 (= fp8_e4m3); SGLang: --kv-cache-dtype fp8_e4m3 | fp8_e5m2.
    return "fp8_e4m3" if (value == "fp8" and engine_name == "sglang") else value


def _to_verl_value(native: str, value: Any, s: Scenario) -> Any:
    if native == "model.path":
        return _hf_repo(value)
    if native in ("critic.model_path", "reward_model.model_path"):
        return _hf_repo(value if value is not None else s.model.path)
    if native == "model.target_modules":
        return TARGET_MODULES.get(value, value)
    if native == "rollout.quantization":
        return None if value == "none" else value
    if native == "actor.optim.optimizer":
        if engine_of(s) == "megatron":
            return {"AdamW": "adam", "adam": "adam", "SGD": "sgd"}.get(value, value)
        return {"adam": "Adam"}.get(value, value)  # FSDP: a torch.optim class name
    return value


# --------------------------------------------------------------------------------------------------
# Export


@dataclass
class Export:
    """What ``export`` produces for one scenario."""

    overrides: list[tuple[str, str, Any]] = field(default_factory=list)  # (group, verl key, value)
    rlplan: list[tuple[str, Any]] = field(default_factory=list)  # (native key, value): not expressible in verl
    scenario_name: str = ""


def _critic_active(s: Scenario) -> bool:
    # verl trainer/ppo/utils.py need_critic
    return s.critic.enable if s.critic.enable is not None else s.algorithm.adv_estimator == "gae"


def _verl_items(s: Scenario, base: Scenario | None) -> list[tuple[str, str, Any]]:
    eng = engine_of(s)
    defaults = verl_defaults(eng)
    items: list[tuple[str, str, Any]] = []
    if eng == "megatron":
        items.append(("actor", "model_engine", "megatron"))
    for km in KEY_MAPS:
        native = km.native
        if eng not in km.engines or native in ("hardware.num_gpus", "hardware.gpus_per_node", "actor.strategy"):
            continue
        value = _get(s, native)
        differs_from_base = base is not None and _get(base, native) != value
        if native == "critic.strategy":
            if eng == "megatron":
                continue
            effective = value or s.actor.strategy
            if effective == "megatron":
                continue  # a Megatron critic beside an FSDP actor: not expressible, goes to # rlplan
            if (_critic_active(s) or value is not None or differs_from_base) and effective != defaults[km.verl]:
                items.append((km.group, km.verl, effective))
            continue
        if native == "critic.model_path":
            if _critic_active(s) or value is not None or differs_from_base:
                items.append((km.group, km.verl, _to_verl_value(native, value, s)))
            continue
        if native == "reward_model.model_path":
            if s.reward_model.enable or value is not None or differs_from_base:
                items.append((km.group, km.verl, _to_verl_value(native, value, s)))
            continue
        if native == "rollout.kv_cache_dtype":
            if value != "auto":
                name = s.rollout.name
                items.append((km.group, f"+{_R}.engine_kwargs.{name}.kv_cache_dtype", _kv_dtype_to_verl(value, name)))
            continue
        if native == "actor.optim.optimizer" and eng == "megatron":
            verl_value = _to_verl_value(native, value, s)
            if verl_value not in ("adam", "sgd"):
                continue  # Megatron offers adam / sgd / muon only: goes to # rlplan
            if verl_value != defaults[km.verl] or differs_from_base:
                items.append((km.group, km.verl, verl_value))
            continue
        default = native_default(native)
        if value == default and not differs_from_base and not (native in ALWAYS_EMIT and value is not None):
            continue
        if value is None:
            # back to verl's default (an interpolation for the "inherit" fields)
            items.append((km.group, km.verl, defaults.get(km.verl)))
            continue
        items.append((km.group, km.verl, _to_verl_value(native, value, s)))
    if s.actor.strategy == "fsdp2":
        items.append(("actor", f"{_A}.strategy", "fsdp2"))
    if s.reward_model.enable:
        items.append(("reward", "reward.reward_model.rollout.name", s.rollout.name))
    per_node = min(s.hardware.num_gpus, s.hardware.gpus_per_node)
    items.append(("trainer", "trainer.n_gpus_per_node", per_node))
    items.append(("trainer", "trainer.nnodes", max(1, s.hardware.num_gpus // per_node)))
    order = {g: i for i, g in enumerate(GROUPS)}
    return sorted(items, key=lambda it: order[it[0]])  # stable: keeps KEY_MAPS order within a group


def export_scenario(scenario: Scenario, base: Scenario | None = None) -> Export:
    """verl overrides for ``scenario`` plus the ``# rlplan:`` settings verl cannot express.

    With ``base``, keys whose value in ``base`` differs are emitted too, so that reading the overrides
    onto ``base`` (``load_scenario(base, verl_overrides=...)``) gives ``scenario`` back."""
    items = _verl_items(scenario, base)
    natives, _ = _import_flat(
        {key: value for _, key, value in items}, engine_hint=None, source="script", rlplan=[], quiet=True
    )
    rebuilt = (base or _DEFAULTS).model_dump(mode="python")
    apply_natives(rebuilt, natives)
    target = scenario.model_dump(mode="python")
    rlplan = [(f, _get(target, f)) for f in SCENARIO_FIELDS if _get(rebuilt, f) != _get(target, f)]
    return Export(overrides=items, rlplan=rlplan, scenario_name=scenario.name)


def export_overrides(scenario: Scenario, base: Scenario | None = None) -> list[tuple[str, Any]]:
    """``(verl key, value)`` pairs for ``scenario``: keys that differ from verl 0.9.1's defaults plus the
    ones a launch always needs, grouped data / algorithm / actor / rollout / ref / critic / reward / trainer."""
    return [(k, v) for _, k, v in export_scenario(scenario, base).overrides]


def hydra_value(value: Any) -> str:
    """A value in Hydra's override grammar (``null``, ``true``, ``1e-06``, ``[a,b]``, ``'quoted str'``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{hydra_value(v)}" for k, v in value.items()) + "}"
    text = str(value)
    if text.startswith("${") or (re.fullmatch(r"[A-Za-z0-9_./:+@%~-]+", text) and _parse_scalar(text) == text):
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _shell_word(key: str, value: Any) -> str:
    word = f"{key}={hydra_value(value)}"
    return word if re.fullmatch(r"[A-Za-z0-9_./:+@%=,-]+", word) else f"{key}={shlex.quote(hydra_value(value))}"


def _rlplan_lines(exp: Export) -> list[str]:
    return [f"# rlplan: {k}={json.dumps(v, ensure_ascii=False, sort_keys=True)}" for k, v in exp.rlplan]


def format_overrides(
    scenario: Scenario | Export,
    style: Literal["command", "overrides"] = "command",
    base: Scenario | None = None,
) -> str:
    """``command``: a launch command ready to paste (``python3 -m verl.trainer.main_ppo \\`` and one
    ``key=value \\`` per line, a `` `# group` `` marker per role, which bash expands to nothing), preceded by
    ``# rlplan:`` lines for the settings verl has no key for. ``overrides``: one ``key=value`` per line,
    verl keys only (DESIGN.md 6.4), for ``--verl`` on top of the same base scenario."""
    exp = scenario if isinstance(scenario, Export) else export_scenario(scenario, base)
    if style == "overrides":
        return "\n".join(_shell_word(k, v) for _, k, v in exp.overrides) + "\n"
    lines = [
        f"# verl 0.9.1 launch settings exported by rlplan{f' from {exp.scenario_name!r}' if exp.scenario_name else ''}.",
        "# '# rlplan:' lines hold settings verl has no key for; `python -m calculator estimate --verl FILE` reads them.",
        *_rlplan_lines(exp),
        f"{LAUNCH} \\",
    ]
    group = None
    for g, k, v in exp.overrides:
        if g != group:
            lines.append(f"    `# {g}` \\")
            group = g
        lines.append(f"    {_shell_word(k, v)} \\")
    lines[-1] = lines[-1][: -len(" \\")]
    return "\n".join(lines) + "\n"


def _nest(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for key, value in pairs:
        node = root
        parts = key.lstrip("+").split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return root


def export_yaml(scenario: Scenario, base: Scenario | None = None) -> str:
    """The same settings as a nested verl YAML fragment, one ``# group`` comment per role, with
    ``# rlplan:`` comment lines on top. ``import_verl_text`` reads it back."""
    import yaml

    exp = export_scenario(scenario, base)
    out = [
        f"# verl 0.9.1 settings exported by rlplan{f' from {exp.scenario_name!r}' if exp.scenario_name else ''}.",
        *_rlplan_lines(exp),
    ]
    if any(k == "model_engine" for _, k, _ in exp.overrides):
        out.append("# Megatron: also pass model_engine=megatron on the command line (it picks verl's config group).")
    group_of = {k.lstrip("+"): g for g, k, _ in exp.overrides}
    tree = _nest([(k, v) for _, k, v in exp.overrides])

    def group(prefix: str) -> str:
        return next(g for k, g in group_of.items() if k == prefix or k.startswith(prefix + "."))

    def dump(obj: dict[str, Any], indent: int) -> list[str]:
        text = yaml.safe_dump(obj, sort_keys=False, default_flow_style=False, allow_unicode=True)
        return [" " * indent + line for line in text.rstrip().splitlines()]

    last = None
    for top, sub in tree.items():
        if top == "actor_rollout_ref" and isinstance(sub, dict):
            out.append("actor_rollout_ref:")
            for k2, v2 in sub.items():
                g = group(f"{top}.{k2}")
                if g != last:
                    out.append(f"  # {g}")
                    last = g
                out += dump({k2: v2}, 2)
            continue
        g = group(top)
        if g != last:
            out.append(f"# {g}")
            last = g
        out += dump({top: sub}, 0)
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------------
# Import: shell


class _Unresolved(Exception):
    pass


_SENTINEL_RE = re.compile("\x00U(\\d+)\x00")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN_PREFIXES = ("export", "local", "readonly", "declare", "typeset")


@dataclass
class _ShellState:
    env: dict[str, str | None] = field(default_factory=dict)  # None = assigned but not resolvable
    why: dict[str, str] = field(default_factory=dict)  # variable -> what made it unresolvable
    unresolved: list[str] = field(default_factory=list)

    def mark(self, what: str) -> str:
        """A placeholder for an unresolvable part of a word; ``reasons`` recovers ``what``."""
        self.unresolved.append(what)
        return f"\x00U{len(self.unresolved) - 1}\x00"

    def reasons(self, word: str) -> list[str]:
        return [self.unresolved[int(i)] for i in _SENTINEL_RE.findall(word)]


def _match_close(text: str, start: int, open_: str, close: str) -> int:
    """Index of the bracket closing the one at ``start`` (nesting-aware), or -1."""
    depth = 0
    i = start
    while i < len(text):
        if text.startswith(open_, i):
            depth += 1
            i += len(open_)
            continue
        if text.startswith(close, i):
            depth -= 1
            if depth == 0:
                return i
            i += len(close)
            continue
        i += 1
    return -1


def _lookup(name: str, st: _ShellState) -> str:
    if name in st.env:
        if st.env[name] is not None:
            return st.env[name]  # type: ignore[return-value]
        raise _Unresolved(f"${name} <- {st.why.get(name, 'an unresolved value')}")
    raise _Unresolved(f"${name}: not set in the script")


def _arith(expr: str, st: _ShellState) -> str:
    """bash ``$(( ... ))`` with integers and + - * / % ** ( ) only; names are looked up in the script."""

    def sub(m: re.Match[str]) -> str:
        value = _lookup(m.group(1) or m.group(2) or m.group(3), st)
        if not re.fullmatch(r"\s*-?\d+\s*", value):
            raise _Unresolved(value)
        return value.strip()

    text = re.sub(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)|\b([A-Za-z_]\w*)\b", sub, expr)

    def ev(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            if isinstance(node.op, ast.Div | ast.FloorDiv) and b:
                return int(a / b)  # bash truncates toward zero
            if isinstance(node.op, ast.Mod) and b:
                return a - b * int(a / b)
            if isinstance(node.op, ast.Pow) and 0 <= b <= 64:
                return a**b
        raise _Unresolved(expr)

    try:
        return str(ev(ast.parse(text.strip().replace("/", "//").replace("////", "//"), mode="eval")))
    except (SyntaxError, ValueError, RecursionError):
        raise _Unresolved(expr) from None


def _expand_param(inner: str, st: _ShellState) -> str | None:
    """``${...}`` contents: a shell parameter (expanded) or None when it is a Hydra interpolation."""
    m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-=+?])(.*))?", inner, re.S)
    if not m:
        return None
    name, op, word = m.group(1), m.group(2), m.group(3)
    if op is None:
        return _lookup(name, st)
    have = name in st.env and st.env[name] is not None and (st.env[name] != "" or not op.startswith(":"))
    if op.endswith("-") or op.endswith("="):
        if have:
            return st.env[name]  # type: ignore[return-value]
        value = _expand(word, st)
        if op.endswith("="):
            st.env[name] = value
        return value
    if op.endswith("+"):
        return _expand(word, st) if have else ""
    return _lookup(name, st)  # ${VAR:?msg}


def _expand(text: str, st: _ShellState, *, quote: bool = False) -> str:
    """Shell expansion of one logical line (quote-aware). Unresolvable parts become a sentinel.
    With ``quote``, expanded values are re-quoted so that shlex keeps each one a single word."""
    out: list[str] = []
    i, n = 0, len(text)
    in_double = False

    def emit(value: str) -> None:
        if not quote:
            out.append(value)
        elif in_double:
            out.append(re.sub(r'(["\\$`])', r"\\\1", value))
        else:
            out.append(shlex.quote(value) if value else "''")

    while i < n:
        c = text[i]
        if c == "'" and not in_double:
            j = text.find("'", i + 1)
            j = n - 1 if j < 0 else j
            out.append(text[i : j + 1])
            i = j + 1
            continue
        if c == "\\" and i + 1 < n:
            out.append(text[i : i + 2])
            i += 2
            continue
        if c == '"':
            in_double = not in_double
            out.append(c)
            i += 1
            continue
        if c == "`":
            j = text.find("`", i + 1)
            j = n - 1 if j < 0 else j
            body = text[i + 1 : j]
            if not body.lstrip().startswith("#"):
                out.append(st.mark(f"`{body}`"))
            i = j + 1
            continue
        if c == "$" and i + 1 < n:
            try:
                if text.startswith("$((", i):
                    j = _match_close(text, i + 1, "(", ")")
                    if j < 0:
                        raise _Unresolved(text[i:])
                    emit(_arith(text[i + 3 : j - 1], st))
                    i = j + 1
                    continue
                if text.startswith("$(", i):
                    j = _match_close(text, i + 1, "(", ")")
                    out.append(st.mark(text[i : (j + 1 if j > 0 else n)]))
                    i = (j + 1) if j > 0 else n
                    continue
                if text.startswith("${", i):
                    j = _match_close(text, i + 1, "{", "}")
                    if j < 0:
                        out.append(text[i:])
                        break
                    inner = text[i + 2 : j]
                    value = _expand_param(inner, st)
                    if value is None:
                        out.append(text[i : j + 1])  # Hydra interpolation: kept for the resolver
                    else:
                        emit(value)
                    i = j + 1
                    continue
                m = _NAME.match(text, i + 1)
                if m:
                    emit(_lookup(m.group(0), st))
                    i = m.end()
                    continue
                if text[i + 1] in "@*#?$!0123456789-":
                    out.append(st.mark(text[i : i + 2]))
                    i += 2
                    continue
            except _Unresolved as exc:
                out.append(st.mark(str(exc)))
                # skip the construct we failed on
                if text.startswith("${", i):
                    j = _match_close(text, i + 1, "{", "}")
                    i = (j + 1) if j > 0 else n
                elif text.startswith("$((", i):
                    j = _match_close(text, i + 1, "(", ")")
                    i = (j + 1) if j > 0 else n
                else:
                    m = _NAME.match(text, i + 1)
                    i = m.end() if m else i + 1
                continue
        out.append(c)
        i += 1
    return "".join(out)


def _logical_lines(text: str) -> list[str]:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return re.sub(r"\\\n", " ", text).split("\n")


_RLPLAN_LINE = re.compile(r"^\s*#\s*rlplan:\s*([A-Za-z_][\w.]*)\s*=\s*(.*?)\s*$")


@dataclass
class _Parsed:
    overrides: dict[str, str] = field(default_factory=dict)  # verl key (with +/~ prefix stripped) -> raw
    order: list[str] = field(default_factory=list)
    rlplan: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    engine: str | None = None


def _is_override_key(key: str) -> bool:
    bare = key.lstrip("+~")
    return (
        bool(bare) and ("." in bare or bare == "model_engine" or key != bare) and bool(re.fullmatch(r"[\w.@/-]+", bare))
    )


def _parse_script(text: str) -> _Parsed:
    st = _ShellState()
    p = _Parsed()
    for raw_line in _logical_lines(text):
        line = raw_line.strip()
        if not line:
            continue
        m = _RLPLAN_LINE.match(line)
        if m:
            p.rlplan.append((m.group(1), m.group(2)))
            continue
        if line.startswith("#"):
            continue
        expanded = _expand(line, st, quote=True)
        try:
            words = shlex.split(expanded, comments=True)
        except ValueError:
            words = expanded.split()
        if not words:
            continue
        body = words[1:] if words[0] in _ASSIGN_PREFIXES else words
        body = [w for w in body if not (w.startswith("-") and words[0] in _ASSIGN_PREFIXES)]
        assignments = [w for w in body if "=" in w and _NAME.fullmatch(w.split("=", 1)[0])]
        if body and len(assignments) == len(body):
            for w in assignments:
                name, _, value = w.partition("=")
                if name == "model_engine":
                    _add_override(p, name, value)
                lost = st.reasons(value)
                st.env[name] = None if lost else value
                if lost:
                    st.why[name] = "; ".join(dict.fromkeys(r.split(" <- ")[-1] for r in lost))
            continue
        for i, w in enumerate(words):
            if w.startswith("--config-name"):
                cfg = w.split("=", 1)[1] if "=" in w else (words[i + 1] if i + 1 < len(words) else "")
                if cfg.endswith("ppo_megatron_trainer") or cfg.endswith("ppo_megatron_trainer.yaml"):
                    _add_override(p, "model_engine", "megatron")
                continue
            if w.startswith("-") or "=" not in w:
                continue
            key, _, value = w.partition("=")
            if not _is_override_key(key):
                continue
            lost = st.reasons(w)
            if lost:
                bare = key.lstrip("+~")
                if not any(bare.startswith(prefix) for prefix in IGNORED_PREFIXES):  # not modelled anyway
                    names = "; ".join(dict.fromkeys(lost))
                    p.notes.append(f"verl override {bare}: value has an unresolved shell variable ({names}); ignored")
                continue
            if key.startswith("~"):
                p.notes.append(f"verl override {key}: deleting a key is not modelled; ignored")
                continue
            _add_override(p, key, value)
    return p


def _add_override(p: _Parsed, key: str, value: Any) -> None:
    bare = key.lstrip("+")
    if bare in p.overrides:
        p.order.remove(bare)
    p.overrides[bare] = value
    p.order.append(bare)


def tokenize_overrides(text: str) -> list[str]:
    """``key=value`` override tokens of a launch script after shell expansion (comments, the command
    words and shell variable assignments dropped; unresolved values left out)."""
    p = _parse_script(text)
    return [f"{k}={v}" for k, v in ((k, p.overrides[k]) for k in p.order)]


# --------------------------------------------------------------------------------------------------
# Import: Hydra values and interpolations


def _parse_scalar(text: str) -> Any:
    from calculator.api import parse_value

    return parse_value(text)


def _hydra_parse(raw: Any) -> Any:
    """A value from the command line in Hydra's grammar (close to YAML flow); interpolations kept."""
    if not isinstance(raw, str):
        return raw
    text = raw.strip()
    if "${" in text:
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            return text[1:-1]
        return text
    if text == "":
        return ""
    return _parse_scalar(text)


def _split_top(text: str, sep: str = ",") -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


class _Resolver:
    """Resolves Hydra interpolations against a flat ``{dotted key: value}`` config."""

    def __init__(self, flat: dict[str, Any]):
        self.flat = flat

    def _abs(self, ref: str, at: str) -> str:
        if not ref.startswith("."):
            return ref
        dots = len(ref) - len(ref.lstrip("."))
        parent = at.split(".")[:-dots]
        return ".".join([*parent, ref[dots:]])

    def value(self, key: str, stack: tuple[str, ...] = ()) -> Any:
        if key in stack:
            raise _Unresolved(f"interpolation cycle at {key}")
        if key not in self.flat:
            raise _Unresolved(f"{key} is not a known verl key")
        v = self.flat[key]
        if v == _MISSING:
            raise _Unresolved(f"{key} is ??? (required, not set)")
        return self.resolve(v, key, (*stack, key))

    def resolve(self, v: Any, at: str, stack: tuple[str, ...] = ()) -> Any:
        if not isinstance(v, str) or "${" not in v:
            return v
        text = v.strip()
        start = text.find("${")
        end = _match_close(text, start + 1, "{", "}")
        if start == 0 and end == len(text) - 1:
            return self._interp(text[2:-1], at, stack)
        out, i = [], 0
        while True:
            start = text.find("${", i)
            if start < 0:
                out.append(text[i:])
                break
            end = _match_close(text, start + 1, "{", "}")
            if end < 0:
                raise _Unresolved(text)
            out.append(text[i:start])
            out.append(str(self._interp(text[start + 2 : end], at, stack)))
            i = end + 1
        return "".join(out)

    def _interp(self, inner: str, at: str, stack: tuple[str, ...]) -> Any:
        inner = inner.strip()
        if inner.startswith("oc.select:"):
            args = _split_top(inner[len("oc.select:") :])
            ref = self._abs(args[0].strip(), at)
            try:
                return self.value(ref, stack)
            except _Unresolved:
                if len(args) < 2:
                    return None
                return self.resolve(_hydra_parse(",".join(args[1:]).strip()), at, stack)
        if inner.startswith("oc.env:"):
            raise _Unresolved(f"${{{inner}}} reads the environment at launch")
        if re.match(r"^[\w.]+:", inner):
            raise _Unresolved(f"${{{inner}}}: resolver not modelled")
        return self.value(self._abs(inner, at), stack)


# --------------------------------------------------------------------------------------------------
# Import: verl keys -> Scenario fields


def _flatten(mapping: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in mapping.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _known(key: str) -> bool:
    return (
        verl_to_native(key) is not None
        or key in DEPRECATED_MICRO_KEYS
        or key in ("trainer.n_gpus_per_node", "critic.ulysses_sequence_parallel_size")
        or any(key.startswith(p) for p in IGNORED_PREFIXES)
    )


def _import_flat(
    given: dict[str, Any],
    *,
    engine_hint: str | None,
    source: Literal["script", "yaml"],
    rlplan: list[tuple[str, str]],
    quiet: bool = False,
) -> tuple[dict[str, Any], list[str]]:
    """Map verl keys (values typed or Hydra text, interpolations kept) to native overrides."""
    notes: list[str] = []
    natives: dict[str, Any] = {}
    given = {k.lstrip("+"): _hydra_parse(v) for k, v in given.items()}

    engine = engine_hint
    if given.get("model_engine") == "megatron" or given.get(f"{_A}.strategy") == "megatron":
        engine = "megatron"
    if given.get(f"{_A}.strategy") == "megatron" and given.get("model_engine") != "megatron" and source == "script":
        notes.append(
            "verl 0.9.1 selects Megatron with model_engine=megatron (trainer/config/ppo_trainer.yaml defaults list); "
            "actor_rollout_ref.actor.strategy=megatron alone keeps the FSDP config group. Estimated as Megatron."
        )
    engine = engine or "fsdp"
    if given.get("model_engine") not in (None, "dp", "megatron"):
        notes.append(f"model_engine={given['model_engine']}: only dp (FSDP) and megatron are modelled; FSDP assumed")

    defaults = verl_defaults(engine)
    flat = {**defaults, **given}
    res = _Resolver(flat)

    def resolved(key: str) -> Any:
        return res.value(key)

    # keys that exist only in the other engine's config
    wrong = _MEGATRON_ONLY_KEYS if engine == "fsdp" else _FSDP_ONLY_KEYS
    other = "model_engine=megatron" if engine == "fsdp" else "the FSDP config (model_engine=dp)"

    if engine == "megatron":
        natives["actor.strategy"] = "megatron"

    unknown: list[str] = []
    # aliases first, so that the canonical key wins when a config has both
    for key, raw in sorted(given.items(), key=lambda kv: kv[0] not in ALIASES):
        if key in ("model_engine",):
            continue
        if key in wrong:
            if source == "script":
                notes.append(f"verl override {key}: exists only with {other}; verl would reject it. Ignored")
            continue
        if key == "critic.ulysses_sequence_parallel_size" and raw not in (1, None):
            if not quiet:
                notes.append(
                    "critic.ulysses_sequence_parallel_size is deprecated and not forwarded to the critic engine in "
                    "verl 0.9.1 (workers/config/critic.py FSDPCriticConfig.__post_init__); use "
                    "critic.fsdp.ulysses_sequence_parallel_size. Ignored"
                )
            continue
        if key.startswith(f"{_F}.megatron.") and key.rsplit(".", 1)[1] in _MEGATRON_PARALLEL:
            actor_key = f"{_A}.megatron.{key.rsplit('.', 1)[1]}"
            try:
                same = resolved(key) == resolved(actor_key)
            except _Unresolved:
                same = False
            if not same and not quiet:
                notes.append(f"verl {key}: a ref sharded unlike the actor is not modelled (rlplan uses {actor_key})")
            continue
        native = verl_to_native(key)
        if native is None or native == "actor.strategy":
            if native is None and not _known(key):
                unknown.append(key)
            if key == f"{_A}.fsdp_config.strategy" or key == f"{_A}.strategy":
                try:
                    v = resolved(key)
                except _Unresolved as exc:
                    notes.append(f"verl {key}: {exc}; ignored")
                    continue
                if v in ("fsdp", "fsdp2"):
                    natives["actor.strategy"] = v
                elif v != "megatron":
                    notes.append(f"verl {key}={v}: only fsdp, fsdp2 and megatron are modelled; ignored")
            continue
        if native in ("hardware.num_gpus", "hardware.gpus_per_node"):
            continue  # below
        if raw == _MISSING:
            notes.append(f"verl {key}: ??? (required, not set)")
            continue
        if raw == defaults.get(key) and isinstance(raw, str) and "${" in raw:
            if key not in ALIASES:
                natives[native] = native_default(native)  # verl's interpolated default = rlplan's "inherit"
            continue
        try:
            value = resolved(key)
        except _Unresolved as exc:
            notes.append(f"verl {key}: cannot resolve {raw!r} ({exc}); ignored")
            continue
        ok, converted, note = _to_native(native, value, key, res)
        if note and not quiet:
            notes.append(note)
        if ok:
            natives[native] = converted

    # trainer.n_gpus_per_node x trainer.nnodes
    if "trainer.n_gpus_per_node" in given or "trainer.nnodes" in given:
        try:
            per = int(resolved("trainer.n_gpus_per_node"))
            nodes = int(resolved("trainer.nnodes"))
            if nodes > 1:  # one node using `per` GPUs says nothing about the node size (see apply_natives)
                natives["hardware.gpus_per_node"] = per
            natives["hardware.num_gpus"] = per * max(nodes, 1)
        except (_Unresolved, TypeError, ValueError) as exc:
            notes.append(f"verl trainer.n_gpus_per_node / trainer.nnodes: cannot resolve ({exc}); ignored")

    # verl's literal default for the critic's strategy is "fsdp" (dp_critic.yaml), not the actor's
    if engine == "fsdp" and natives.get("actor.strategy") == "fsdp2" and "critic.strategy" not in given:
        try:
            enable = resolved("critic.enable")
            critic = bool(enable) if enable is not None else resolved("algorithm.adv_estimator") == "gae"
        except _Unresolved:
            critic = True
        if critic:  # (trainer/ppo/utils.py need_critic) without a critic the value does not matter
            natives["critic.strategy"] = "fsdp"

    if not quiet:
        from calculator.verl_checks import check_raw_config

        notes += [f"verl: {p.message}" for p in check_raw_config(given, res, engine)]

    for key, text in rlplan:
        try:
            value = json.loads(text)
        except ValueError:
            value = _parse_scalar(text)
        if not native_field_exists(key):
            notes.append(f"# rlplan: {key}: not a scenario field; ignored")
            continue
        natives[key] = value

    if unknown and not quiet:
        if source == "yaml" and len(unknown) > 12:
            notes.append(
                f"verl config: {len(unknown)} keys not modelled (ignored), e.g. " + ", ".join(sorted(unknown)[:8])
            )
        else:
            notes.append("verl overrides not modelled (ignored): " + ", ".join(unknown))
    return natives, notes


def _to_native(native: str, value: Any, key: str, res: _Resolver) -> tuple[bool, Any, str | None]:
    """Convert a resolved verl value to the native field's value: (ok, value, note)."""
    if native == "model.path":
        if not isinstance(value, str):
            return False, None, f"verl {key}={value!r}: not a path; ignored"
        if value == VERL_PLACEHOLDER_MODEL_PATH:
            return False, None, f"verl {key}: verl's placeholder default ({value}); set the model (--model)"
        mid = _model_id_from_path(value)
        if mid is None:
            return (
                False,
                None,
                f"verl override {key}={value}: not a model preset; the model comes from the base scenario or "
                "--model (a preset id or a config.json)",
            )
        return True, mid, None
    if native in ("critic.model_path", "reward_model.model_path"):
        if value is None or value == VERL_PLACEHOLDER_MODEL_PATH:
            return True, None, None
        try:
            actor_path = res.value(f"{_M}.path")
        except _Unresolved:
            actor_path = None
        if isinstance(value, str) and actor_path is not None and value.rstrip("/") == str(actor_path).rstrip("/"):
            return True, None, None  # same model as the actor: rlplan's default
        mid = _model_id_from_path(str(value))
        if mid is None:
            return False, None, f"verl override {key}={value}: not a model preset; the actor's model is used"
        return True, mid, None
    if native == "critic.strategy":
        try:
            actor = res.value(f"{_A}.strategy")
        except _Unresolved:
            actor = None
        if value == actor:
            return True, None, None
    if native == "model.target_modules":
        for name, modules in TARGET_MODULES.items():
            if value == modules or (
                isinstance(value, list) and isinstance(modules, list) and set(value) == set(modules)
            ):
                return True, name, None
        return (
            False,
            None,
            f"verl {key}={value!r}: only all-linear, attention and mlp module sets are modelled; ignored",
        )
    if native == "rollout.quantization":
        if value is None:
            return True, "none", None
    if native == "rollout.kv_cache_dtype":
        if value in (None, "auto"):
            return True, "auto", None
        if isinstance(value, str) and value.startswith("fp8"):
            return True, "fp8", None
    if native == "actor.optim.optimizer":
        value = {"adamw": "AdamW", "adam": "adam", "sgd": "SGD", "adafactor": "Adafactor"}.get(
            str(value).lower(), value
        )
    if value is None and not _nullable(native):
        return False, None, None  # verl's null = "not set" (e.g. the legacy reward_model.* block)
    allowed = _literal_values(native)
    if allowed is not None and value not in allowed:
        return False, None, f"verl {key}={value!r}: not modelled (rlplan knows {', '.join(map(str, allowed))}); ignored"
    return True, value, None


def _looks_like_verl_yaml(data: Any) -> bool:
    if not isinstance(data, dict) or not data:
        return False
    roots = {"actor_rollout_ref", "data", "algorithm", "critic", "reward", "reward_model", "trainer", "model_engine"}
    return any(str(k).split(".")[0] in roots for k in data)


def import_verl_yaml(
    mapping: dict[str, Any], rlplan: list[tuple[str, str]] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """A verl config mapping (a nested fragment, dotted keys, or a full config verl/Hydra wrote) ->
    (native dotted overrides, warnings). Values equal to verl's defaults map to the Scenario's defaults."""
    flat = _flatten(mapping)
    engine = None
    if flat.get("model_engine") == "megatron" or flat.get(f"{_A}.strategy") == "megatron":
        engine = "megatron"
    return _import_flat(flat, engine_hint=engine, source="yaml", rlplan=rlplan or [])


def import_verl_text(text: str) -> tuple[dict[str, Any], list[str]]:
    """A bash launch script, a ``--format overrides`` file or a verl YAML config -> (native dotted
    overrides, warnings). ``# rlplan: key=value`` lines (written by ``export``) are applied last."""
    from calculator.presets import read_yaml_text

    stripped = text.lstrip()
    if stripped and not stripped.startswith(("python", "#!")) and ":" in text:
        try:
            data = read_yaml_text(text, "verl config")
        except InputError:
            data = None
        if _looks_like_verl_yaml(data):
            rlplan = [(m.group(1), m.group(2)) for m in map(_RLPLAN_LINE.match, text.splitlines()) if m]
            return import_verl_yaml(data, rlplan)
    parsed = _parse_script(text)
    natives, notes = _import_flat(
        {k: parsed.overrides[k] for k in parsed.order}, engine_hint=parsed.engine, source="script", rlplan=parsed.rlplan
    )
    return natives, parsed.notes + notes


def apply_verl_overrides(data: dict[str, Any], overrides: list[str] | str) -> list[str]:
    """Apply verl settings (launch-script text, or a list of texts / ``key=value`` tokens) onto a scenario
    mapping in place; return the warnings."""

    if isinstance(overrides, str):
        texts = [overrides]
    else:  # whole files separately; single-line tokens together (they may split trainer.* keys)
        texts = [t for t in overrides if "\n" in t.strip()]
        tokens = [t for t in overrides if "\n" not in t.strip()]
        texts += ["\n".join(tokens)] if tokens else []
    notes: list[str] = []
    for text in texts:
        natives, more = import_verl_text(text)
        apply_natives(data, natives)
        notes += more
    return notes


def apply_natives(data: dict[str, Any], natives: dict[str, Any]) -> None:
    """Set imported native fields on a scenario mapping. A single-node launch (``trainer.nnodes=1``) gives
    ``hardware.num_gpus`` only: the mapping keeps its node size unless the run needs a bigger node."""
    from calculator.api import set_dotted

    for key, value in natives.items():
        set_dotted(data, key, value)
    total = natives.get("hardware.num_gpus")
    if isinstance(total, int) and "hardware.gpus_per_node" not in natives:
        hw = data.setdefault("hardware", {})
        node = hw.get("gpus_per_node", native_default("hardware.gpus_per_node"))
        if isinstance(node, int) and total > node:
            hw["gpus_per_node"] = total


def read_verl_file(path: str) -> str:
    from pathlib import Path

    p = Path(path)
    try:
        if p.stat().st_size > 2 * 2**20:
            raise InputError(f"--verl {path}: larger than 2 MiB")
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"--verl {path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--verl {path}: cannot read ({exc.__class__.__name__})") from None


def export_main(args: Any, scenario_from_args: Any) -> int:
    """``python -m calculator export``: print the settings; import notes, verl's config problems and the
    settings ``--format overrides`` cannot carry go to stderr."""
    import sys

    from calculator.api import load_scenario
    from calculator.verl_checks import check_config

    scenario, notes = scenario_from_args(args)
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    for problem in check_config(scenario):
        print(f"verl {problem.severity}: {problem.message}", file=sys.stderr)
    if args.format == "yaml":
        print(export_yaml(scenario), end="")
        return 0
    if args.format == "command":
        print(format_overrides(scenario, "command"), end="")
        return 0
    base = load_scenario(args.scenario) if args.scenario else None
    exp = export_scenario(scenario, base)
    print(format_overrides(exp, "overrides"), end="")
    if exp.rlplan:
        lost = " ".join("--set " + shlex.quote(f"{k}={json.dumps(v)}") for k, v in exp.rlplan)
        print(f"note: not verl settings, give them again with the same base scenario: {lost}", file=sys.stderr)
    return 0
