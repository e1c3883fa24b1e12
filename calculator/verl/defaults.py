"""verl 0.9.1's default for every mapped key, in the FSDP and in the Megatron config.

``VERL_DEFAULTS`` is copied from ``verl/trainer/config/_generated_ppo_trainer.yaml`` (``model_engine=dp``)
with interpolations kept as text (``${oc.select:actor_rollout_ref.actor.use_dynamic_bsz,false}``);
``VERL_MEGATRON_DEFAULTS`` holds the keys whose value differs in ``_generated_ppo_megatron_trainer.yaml``.
``???`` is Hydra's "required, no default" marker. ``tests/test_verl_real.py`` checks every value against
the verl 0.9.1 wheel.
"""

from __future__ import annotations

from typing import Any

from calculator.inputs.scenario import MegatronSection
from calculator.verl.keys import (
    _A,
    _F,
    _M,
    _R,
    FSDP_ONLY,
    KEY_MAPS,
    MEGATRON_ABSENT_FIELDS,
    MEGATRON_ONLY,
    VERL_PLACEHOLDER_MODEL_PATH,
    megatron_verl_key,
)

# verl 0.9.1's defaults for every key in calculator/verl/keys.py, as written in _generated_ppo_trainer.yaml
# (interpolations kept as text), and the keys whose value differs in _generated_ppo_megatron_trainer.yaml.
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
    f"{_R}.layered_summon": False,
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


def _megatron_defaults(role: str) -> dict[str, Any]:
    """The Megatron section's keys in verl 0.9.1's config (the '+' pass-through keys and the removed
    grad_offload are absent: their default is Megatron-core's, which is the Scenario's)."""
    return {
        megatron_verl_key(role, k): v
        for k, v in MegatronSection().model_dump().items()
        if k not in MEGATRON_ABSENT_FIELDS
    }


_MEG = "${oc.select:actor_rollout_ref.actor.megatron.param_offload,False}"
VERL_MEGATRON_DEFAULTS: dict[str, Any] = {
    f"{_A}.strategy": "megatron",
    f"{_A}.optim.optimizer": "adam",
    "critic.strategy": "megatron",
    **_megatron_defaults(_A),
    f"{_F}.megatron.param_offload": _MEG,
    **_megatron_defaults("critic"),
}
# Keys only in one of the two configs (the rest of KEY_MAPS exists in both).
_FSDP_ONLY_KEYS = {km.verl for km in KEY_MAPS if km.engines == FSDP_ONLY} | {
    f"{_A}.fsdp_config.strategy",
    f"{_A}.fsdp_config.ulysses_sequence_parallel_size",
    "critic.ulysses_sequence_parallel_size",
}
_MEGATRON_ONLY_KEYS = {km.verl for km in KEY_MAPS if km.engines == MEGATRON_ONLY}
_MISSING = "???"


def verl_defaults(engine: str = "fsdp") -> dict[str, Any]:
    """verl 0.9.1's raw default for every mapped key in the FSDP or the Megatron config."""
    out = {k: v for k, v in VERL_DEFAULTS.items() if not (engine == "megatron" and k in _FSDP_ONLY_KEYS)}
    if engine == "megatron":
        out.update(VERL_MEGATRON_DEFAULTS)
    return out
