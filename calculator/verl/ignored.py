"""verl keys the importer reads but does not map to a Scenario field, each with why (issue 14 item 8: no
silent drops).

* ``IRRELEVANT``: keys with no effect on GPU memory, GPU count or step time (file paths, logging, schedules,
  loss shapes, seeds, Hydra ``_target_`` class names). Accepted without a note.
* ``NOT_MODELLED``: keys that can change memory or time but rlplan does not model; importing one set in a
  launch script gives a warning naming the key and its likely effect.

Both are matched as prefixes (a key equal to an entry, or under it when the entry ends with "."). Every
key of verl 0.9.1's generated FSDP and Megatron configs is either mapped (``calculator.verl.keys``) or in
one of these tables: ``tests/reference/test_verl_real.py`` walks both configs in the wheel.
"""

from __future__ import annotations

_A, _R, _F, _M = (
    "actor_rollout_ref.actor",
    "actor_rollout_ref.rollout",
    "actor_rollout_ref.ref",
    "actor_rollout_ref.model",
)
_ROLES_TRAINED = (_A, "critic")
_ENGINE_SECTIONS = (f"{_A}.fsdp_config", f"{_F}.fsdp_config", "critic.fsdp")
_MEGATRON_SECTIONS = (f"{_A}.megatron", f"{_F}.megatron", "critic.megatron")


def _each(prefixes: tuple[str, ...], names: tuple[str, ...], reason: str) -> dict[str, str]:
    return {f"{p}.{n}": reason for p in prefixes for n in names}


_NO_EFFECT = "no effect on memory or time"
IRRELEVANT: dict[str, str] = {
    f"{_R}.load_format": "vLLM's first weights (dummy: random until the first sync; a real format loads the "
    "checkpoint at start-up): no effect on memory or step time. Read by calculator/verl/checks/raw.py (LoRA "
    "layered_summon needs a real one) and written by the export when layered_summon is on",
    **dict.fromkeys(
        (
            "data.train_files",
            "data.val_files",
            "data.prompt_key",
            "data.reward_fn_key",
            "data.return_raw_chat",
            "data.return_full_prompt",
            "data.return_raw_input_ids",
            "data.return_multi_modal_inputs",
            "data.filter_overlong_prompts",
            "data.filter_overlong_prompts_workers",
            "data.truncation",
            "data.shuffle",
            "data.validation_shuffle",
            "data.dataloader_num_workers",
            "data.tokenizer",
            "data.trust_remote_code",
            "data.val_batch_size",
            "data.seed",
            "data.custom_cls",
            "data.train_max_samples",
            "data.val_max_samples",
            "data.apply_chat_template_kwargs",
            "data.tool_config_path",
            "data.function_tool_path",
            "data.use_shm",
        ),
        "dataset files and loading: " + _NO_EFFECT,
    ),
    **dict.fromkeys(
        (
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
            "trainer.log_val_generations",
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
            "ray_init.",
            "ray_kwargs.",
            "global_profiler.",
            "hydra.",
            "actor_rollout_ref.nccl_timeout",
            "critic.nccl_timeout",
        ),
        "run bookkeeping (names, logging, checkpoints, validation, Ray): " + _NO_EFFECT + " per training step",
    ),
    **_each(
        (_A, "critic"),
        (
            "clip_ratio",
            "clip_ratio_low",
            "clip_ratio_c",
            "loss_agg_mode",
            "loss_scale_factor",
            "kl_loss_type",
            "policy_loss",
            "grad_clip",
            "shuffle",
            "checkpoint",
            "profiler",
            "data_loader_seed",
            "cliprange_value",
            "tau_pos",
            "tau_neg",
            "rollout_n",
            "_target_",
        ),
        "loss shape, clipping, seeds, checkpoint/profiler settings: " + _NO_EFFECT,
    ),
    **_each(
        _ROLES_TRAINED,
        (
            "optim._target_",
            "optim.lr_warmup_steps_ratio",
            "optim.lr_warmup_steps",
            "optim.total_training_steps",
            "optim.weight_decay",
            "optim.betas",
            "optim.clip_grad",
            "optim.min_lr_ratio",
            "optim.min_lr",
            "optim.num_cycles",
            "optim.lr_scheduler_type",
            "optim.lr_decay_style",
            "optim.lr_decay_steps",
            "optim.lr_warmup_init",
            "optim.lr_wsd_decay_steps",
            "optim.lr_wsd_decay_style",
            "optim.weight_decay_incr_style",
            "optim.zero_indexed_step",
            "optim.warmup_style",
            "optim.optimizer_impl",
            "optim.override_optimizer_config",
            "optim.use_checkpoint_opt_param_scheduler",
            "optim.muon_",
            "optim.lr",
        ),
        "optimizer hyper-parameters (learning-rate schedule, decay, clipping): " + _NO_EFFECT,
    ),
    **_each(
        (*_ENGINE_SECTIONS, *_MEGATRON_SECTIONS, _F, _M, "critic.model", "critic.fsdp.wrap_policy"),
        (
            "_target_",
            "seed",
            "full_determinism",
            "dist_checkpointing_path",
            "dist_checkpointing_prefix",
            "use_dist_checkpointing",
            "dist_ckpt_optim_fully_reshardable",
            "distrib_optim_fully_reshardable_mem_efficient",
            "use_mbridge",
            "vanilla_mbridge",
            "router_replay.",
            "forward_only",
            "strategy",
            "rollout_n",
            "trust_remote_code",
            "tokenizer_path",
            "custom_chat_template",
            "external_lib",
            "hf_config_path",
            "profiler",
        ),
        "class names, seeds, checkpoint formats, tokenizer/code paths; forward_only is set by verl per role: "
        + _NO_EFFECT,
    ),
    **dict.fromkeys(
        (
            f"{_R}._target_",
            f"{_R}.top_p",
            f"{_R}.top_k",
            f"{_R}.do_sample",
            f"{_R}.val_kwargs",
            f"{_R}.disable_log_stats",
            f"{_R}.seed",
            f"{_R}.trace",
            f"{_R}.profiler",
            f"{_R}.prometheus",
            f"{_R}.checkpoint_engine._target_",
            f"{_R}.checkpoint_engine.backend",
            f"{_R}.checkpoint_engine.custom_backend_module",
            f"{_R}.checkpoint_engine.engine_kwargs",
            f"{_R}.skip_tokenizer_init",
            f"{_R}.logprobs_mode",
            f"{_R}.moe_load_balance_metrics_interval",
            f"{_R}.full_determinism",
            f"{_R}.router_config_path",
            f"{_R}.engine_kwargs.",
            f"{_R}.prompt_length",
            f"{_R}.response_length",
        ),
        "sampling parameters, logging, the colocated checkpoint backend (naive), and prompt/response lengths "
        "interpolated from data.*: " + _NO_EFFECT,
    ),
    **dict.fromkeys(
        (
            "algorithm._target_",
            "algorithm.gamma",
            "algorithm.lam",
            "algorithm.kl_penalty",
            "algorithm.kl_ctrl.",
            "algorithm.norm_adv_by_std_in_grpo",
            "algorithm.pf_ppo.",
            "algorithm.use_pf_ppo",
            "algorithm.rollout_correction",
            "custom_reward_function.",
            "reward._target_",
            "reward.reward_manager",
            "reward.custom_reward_function",
            "reward.reward_model._target_",
            "reward_model.reward_manager",
            "reward_model.reward_loop_",
            "reward_model.reward_kwargs.",
            "reward.reward_kwargs.",
            "reward_model.model.external_lib",
            "reward_model.model.trust_remote_code",
            "sandbox_fusion.",
            "reward_model.sandbox_fusion.",
            "data.sampler.",
            "reward.sandbox_fusion",
            "reward.reward_model.rollout.name",
            "reward.reward_model.rollout._target_",
        ),
        "advantage / reward computation on the CPU (coefficients, reward functions, sandbox): " + _NO_EFFECT,
    ),
    "skip.": "debugging: replay saved rollouts instead of generating (rlplan estimates a real rollout)",
    "data.image_key": "multi-modal data keys: text-only models are modelled",
    "data.video_key": "multi-modal data keys: text-only models are modelled",
    "data.audio_key": "multi-modal data keys: text-only models are modelled",
    "data.image_patch_size": "multi-modal data keys: text-only models are modelled",
    "data.mm_processor_kwargs": "multi-modal data keys: text-only models are modelled",
    f"{_A}.freeze_vision_tower": "multi-modal models only: text-only models are modelled",
}

NOT_MODELLED: dict[str, str] = {
    # verl's legacy FSDP reward-model worker (verl <= 0.7 main_ppo with reward_model.use_reward_loop=False; 0.9.1's
    # reward_model section has none of these keys): rlplan models the reward loop's vLLM engine instead.
    "reward_model.use_reward_loop": "False runs verl's legacy FSDP reward worker (a forward pass of the reward model "
    "with its own FSDP state and micro-batch) instead of the reward loop's vLLM engine rlplan models "
    "(reward_kv_cache, reward phase)",
    **dict.fromkeys(
        (
            "reward_model.micro_batch_size_per_gpu",
            "reward_model.micro_batch_size",
            "reward_model.max_length",
            "reward_model.use_dynamic_bsz",
            "reward_model.forward_max_token_len_per_gpu",
            "reward_model.ulysses_sequence_parallel_size",
            "reward_model.strategy",
            "reward_model.model.fsdp_config.",
            "reward_model.model.use_remove_padding",
            "reward_model.model.input_tokenizer",
        ),
        "a setting of verl's legacy FSDP reward-model worker (its micro-batch, offload, padding): that worker's "
        "memory and time; rlplan models the reward loop's vLLM engine",
    ),
    f"{_A}.router_replay.": "MoE router replay (the rollout's expert routing recorded and replayed in training): "
    "the routing record's bytes and its transfer time",
    f"{_R}.mode": "sync (SPMD in the trainer process) vs async server: rlplan uses the verl_version's default mode",
    f"{_R}.enable_prefix_caching": "vLLM prefix cache: shares prompt KV between the n samples (more concurrency)",
    f"{_R}.agent": "agent loop / tool calls: longer, multi-turn generation time",
    f"{_R}.multi_turn": "multi-turn rollout: longer generation time",
    f"{_R}.calculate_log_probs": "rollout log-probs: extra logits work in vLLM",
    f"{_R}.cudagraph_capture_sizes": "CUDA-graph batch sizes: graph pool size and decode speed",
    f"{_R}.enable_rollout_routing_replay": "MoE routing replay: extra host/GPU buffers",
    f"{_R}.ignore_eos": "responses always reach max_response_length: set data.mean_response_length to the max",
    f"{_R}.mtp": "multi-token prediction (speculative decoding): decode speed and draft-model memory",
    f"{_R}.multi_stage_wake_up": "wakes vLLM weights and KV separately: lower weight-sync peak",
    f"{_R}.n_gpus_per_node": "a separate rollout pool (disaggregated placement): use plan --placement",
    f"{_R}.nnodes": "a separate rollout pool (disaggregated placement): use plan --placement",
    f"{_R}.disaggregation": "prefill/decode disaggregation: rollout memory and time",
    f"{_R}.over_sample_rate": "over-sampling: more sequences generated than trained",
    f"{_R}.pipeline_model_parallel_size": "rollout pipeline parallelism: weights and KV split over PP",
    f"{_R}.qat": "quantization-aware rollout: weight memory",
    f"{_R}.quantization_config_file": "rollout quantization config: weight memory",
    f"{_R}.scheduling_policy": "vLLM scheduling policy: rollout time",
    "algorithm.filter_groups": "DAPO dynamic sampling regenerates batches until enough groups pass: more rollout "
    "time per step",
    "trainer.use_legacy_worker_impl": "picks the legacy or engine workers: rlplan follows the verl_version's "
    "default worker (calculator/resolve/versions.py worker_impl)",
    **_each(
        _ENGINE_SECTIONS,
        ("mixed_precision.",),
        "FSDP mixed-precision dtypes: rlplan assumes bf16 compute, fp32 reduce (verl's default)",
    ),
    "trainer.balance_batch": "token balancing across DP ranks: rlplan assumes balanced micro-batches",
    "trainer.critic_warmup": "steps that train only the critic: those steps skip update_actor",
    "reward.num_workers": "reward workers on the CPU: reward time",
    "reward_model.num_workers": "reward workers on the CPU: reward time",
    "reward_model.n_gpus_per_node": "a separate reward-model pool",
    "reward_model.nnodes": "a separate reward-model pool",
    "reward.reward_model.n_gpus_per_node": "a separate reward-model pool",
    "reward.reward_model.nnodes": "a separate reward-model pool",
    "reward.reward_model.rollout.": "reward-model engine settings beyond gpu_memory_utilization, TP, eager, "
    "free_cache_engine, max_num_seqs and max_num_batched_tokens",
    "reward_model.rollout.": "reward-model engine settings beyond those rlplan maps",
    "transfer_queue.": "TransferQueue storage backend: host memory and transfer time",
    "distillation.": "on-policy distillation with a teacher model: teacher memory and time",
    **_each(
        (_A, _F, "critic", *_ENGINE_SECTIONS, *_MEGATRON_SECTIONS),
        ("entropy_from_logits_chunk_size", "entropy_from_logits_with_chunking", "entropy_checkpointing"),
        "entropy chunk size / checkpointing of this role: rlplan reads only the actor's flags",
    ),
    **_each(
        (_A, _F, "critic", *_ENGINE_SECTIONS, *_MEGATRON_SECTIONS),
        ("pad_to_length", "pad_to_length_bucket", "pad_bshd_to_minibatch_max", "use_remove_padding"),
        "per-engine padding: rlplan uses model.use_remove_padding",
    ),
    **_each(
        (_F, *_ENGINE_SECTIONS),
        ("use_torch_compile", "forward_prefetch", "wrap_policy", "use_orig_params", "dtype"),
        "FSDP wrapping / prefetch / compute dtype: gathered-parameter memory",
    ),
    **_each(
        _MEGATRON_SECTIONS,
        (
            "dtype",
            "dynamic_context_parallel",
            "max_seqlen_per_dp_cp_rank",
            "override_ddp_config",
            "override_mcore_model_config",
            "override_transformer_config.",
            "use_megatron_fsdp",
            "optimizer_offload",
            "use_distributed_optimizer",
            "sequence_parallel",
            "context_parallel_size",
            "expert_model_parallel_size",
            "expert_tensor_parallel_size",
            "pipeline_model_parallel_size",
            "tensor_model_parallel_size",
            "virtual_pipeline_model_parallel_size",
        ),
        "Megatron settings rlplan does not model (or a ref sharded unlike the actor): params, grads and "
        "activation memory",
    ),
    "critic.optim.optimizer": "the critic's optimizer: rlplan gives the critic the actor's optimizer states",
    **_each(
        (*_ENGINE_SECTIONS, *_MEGATRON_SECTIONS),
        ("qat.", "turbo_config.", "override_transformer_config"),
        "QAT, FSDP turbo, Megatron transformer overrides of this role: training memory and time",
    ),
    **_each(
        _ROLES_TRAINED,
        (
            "optim.exp_avg_dtype",
            "optim.exp_avg_sq_dtype",
            "optim.main_grads_dtype",
            "optim.use_layer_wise_distributed_optimizer",
        ),
        "Megatron optimizer state dtypes: optimizer memory (rlplan assumes fp32)",
    ),
    **_each(
        (_A, "critic"),
        ("calculate_sum_pi_squared", "use_prefix_grouper", "qat.", "fsdp_config.qat.", "fsdp_config.turbo_config."),
        "extra loss statistics, prefix-shared forward, QAT, FSDP turbo: training memory and time",
    ),
    **_each(
        (_M, "critic.model"),
        (
            "override_config",
            "use_liger",
            "use_shm",
            "lora.",
            "lora_adapter_path",
            "exclude_modules",
            "tiled_mlp.",
            "fused_kernel_options.",
            "mtp.",
        ),
        "model overrides (config, Liger kernels, nested LoRA, tiled MLP, fused-kernel backend, MTP): activation "
        "or parameter memory",
    ),
    **dict.fromkeys(
        (
            "critic.model.use_remove_padding",
            "critic.model.enable_activation_offload",
            "critic.model.use_fused_kernels",
            "critic.model.lora_alpha",
            "critic.model.target_modules",
            "critic.forward_micro_batch_size",
            "critic.fsdp.",
            "critic.fsdp_config.",
        ),
        "critic settings rlplan takes from the actor: critic memory",
    ),
}


def _index(table: dict[str, str]) -> tuple[dict[str, str], tuple[tuple[str, str], ...]]:
    """Entries by dotted path (an entry "a.b." or "a.b" covers a.b and everything under it), and the few entries
    ending in "_" (a name prefix, e.g. "optim.muon_"), matched with startswith."""
    dotted = {p.rstrip("."): r for p, r in table.items() if not p.endswith("_")}
    return dotted, tuple((p, r) for p, r in table.items() if p.endswith("_"))


_IRRELEVANT_INDEX, _NOT_MODELLED_INDEX = _index(IRRELEVANT), _index(NOT_MODELLED)


def _longest(key: str, index: tuple[dict[str, str], tuple[tuple[str, str], ...]]) -> tuple[int, str] | None:
    """(length, reason) of the longest entry that ``key`` equals or lies under: one dict lookup per dotted
    prefix of the key (bounded by its depth, whatever the table's size)."""
    dotted, names = index
    parts = key.split(".")
    for i in range(len(parts), 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in dotted:
            best: tuple[int, str] | None = (len(prefix), dotted[prefix])
            break
    else:
        best = None
    for prefix, reason in names:
        if key.startswith(prefix) and (best is None or len(prefix) > best[0]):
            best = (len(prefix), reason)
    return best


def classify(key: str) -> tuple[str, str] | None:
    """("irrelevant", reason) or ("not_modelled", likely effect) for an unmapped verl key; None if unknown."""
    irrelevant, effect = _longest(key, _IRRELEVANT_INDEX), _longest(key, _NOT_MODELLED_INDEX)
    if irrelevant and (not effect or irrelevant[0] >= effect[0]):
        return "irrelevant", irrelevant[1]
    return ("not_modelled", effect[1]) if effect else None
