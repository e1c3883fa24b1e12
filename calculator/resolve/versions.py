"""How verl releases differ in ways that change GPU memory or step time: one row per release.

Every cell was read in the release's PyPI wheel (``pip download --no-deps verl==X``; paths below are
relative to the unpacked ``verl/`` package, "0.7.1 f.py:12" = line 12 of that file in the 0.7.1 wheel).
``Scenario.verl_version`` picks the row: ``0.5``, ``0.6``, ``0.7.0``, ``0.7.1``, ``0.8``, ``0.9.0``,
``0.9.1``; ``0.7`` and ``0.9`` are aliases of the newest patch release (DESIGN.md 6.5). The resolve layer
reads the flags (see each field's description for its consumer).

Findings that surprised us, stated with their evidence:

* The FSDP reference policy is **not** on the GPU in any of these versions. The legacy
  ``workers/fsdp_workers.py`` wraps every non-actor role with ``CPUOffload(offload_params=True)``
  ("We force reference policy to use CPUOffload to save memory", 0.5.0 :366-368, 0.7.1 :597-599);
  the 0.8+ engine does the same for ``forward_only`` engines. So the ref streams its fp32 shards from
  CPU on every forward in every release (``ref_forward_streams_weights``), not only with ``ref.param_offload``.
  Only a Megatron ref stays on the GPU (bf16) unless offloaded.
* ``gpu_memory_utilization`` means "share of total GPU memory for the whole vLLM instance" for vLLM >= 0.7
  (verl docs/examples/config.rst since PR #1491). Every release here needs vLLM >= 0.7.3 (0.5.0 METADATA).
* Logits are never upcast to fp32 by the model (transformers >= 4.46).
* old_log_prob computes the entropy in every version (legacy ``compute_log_prob(..., calculate_entropy=True)``;
  0.9.1 ``trainer_base._compute_old_log_prob`` ``"calculate_entropy": True``).
* The 0.8.0 wheel is engine-only: it has no ``workers/fsdp_workers.py`` nor ``workers/actor/dp_actor.py``.

Left out: SGLang-specific differences between releases, Megatron differences between releases other than
the worker, and rollout modes other than the release's default (e.g. 0.6 ``rollout.mode=async``, which
forces ``max_model_len`` to prompt + response: 0.6.0 workers/rollout/vllm_rollout/vllm_async_server.py:142).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MaxModelLenRule = Literal["set_or_prompt_response", "forced_max_position", "set_or_max_position"]


class VersionBehaviour(BaseModel):
    """Memory- and time-relevant behaviour of one verl release (defaults of the FSDP + vLLM colocated path)."""

    model_config = ConfigDict(frozen=True)

    version: str
    worker_impl: Literal["legacy", "engine"] = Field(
        description="legacy = workers/fsdp_workers.py + actor/dp_actor.py (trainer.use_legacy_worker_impl=auto); "
        "engine = workers/engine_workers.py + workers/engine/fsdp (the only one from 0.8.0). Read by the "
        "importer: the legacy workers convert the deprecated global micro-batch keys, the engine rejects them."
    )
    megatron_lora: bool = Field(
        default=True,
        description="The Megatron engine trains LoRA adapters (model.lora.rank, Megatron-Bridge PEFT): from 0.7.0 "
        "(verl/workers/config/megatron_peft.py get_peft_cls; absent from the 0.5.0 and 0.6.x wheels).",
    )
    ref_on_gpu_bf16: bool = Field(
        description="FSDP reference policy resident on the GPU in bf16. False everywhere: forced CPU offload."
    )
    logits_fp32: bool = Field(description="LM-head output upcast to fp32 by the model's forward.")
    vllm_util_semantics: Literal["total", "kv_of_free"] = Field(
        description="total: gpu_memory_utilization x total memory bounds weights + activations + KV of the vLLM "
        "instance. kv_of_free: the KV cache takes that share of the memory left free (vLLM 0.5.4/0.6.3)."
    )
    vllm_cudagraph_in_budget: bool = Field(
        description="vLLM counts its CUDA-graph pool inside gpu_memory_utilization (vLLM >= 0.21, "
        "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS). Read by memory/context.py."
    )
    rollout_in_trainer_process: bool = Field(
        description="vLLM's GPU workers run inside the trainer's worker process (one CUDA context per GPU). "
        "False = separate processes (distributed_executor_backend 'mp', two CUDA contexts per GPU). Read by resolve."
    )
    rollout_mode: Literal["sync", "async"] = Field(description="Default actor_rollout_ref.rollout.mode.")
    weight_sync_bucket: bool = Field(
        description="Weight sync goes through a GPU staging bucket (update_weights_bucket_megabytes) over CUDA "
        "IPC. False = vLLM in the same process loads each full tensor directly. Read by memory/phases.py."
    )
    weight_sync_bucket_mib: int = Field(description="Default update_weights_bucket_megabytes of that release.")
    temperature_copies_logits: bool = Field(
        description="temperature != 1 makes an out-of-place logits / T copy (engine). False = the legacy "
        "dp_actor / 0.8.0 engine divide in place (div_): no copy. Read by memory/transients.py."
    )
    temperature_copy_at_one: bool = Field(
        default=False,
        description="The copy is made even at temperature 1 (0.9.0: 'logits_rmpad / temperature' unconditionally). "
        "Read by memory/transients.py.",
    )
    always_defer_grad_sync: bool = Field(
        default=False,
        description="The FSDP engine defers gradient sync over every micro-batch but the last whatever "
        "use_no_sync_for_gradient_accumulation says (0.9.0): unsharded grads for the whole mini-batch. Read by "
        "resolve/roles (the trainer plan's fsdp section), so memory and timing see use_no_sync=true.",
    )
    old_log_prob_entropy: bool = Field(description="compute_log_prob computes the entropy (fp32 softmax-sized).")
    max_num_seqs_default: int = Field(
        description="Default actor_rollout_ref.rollout.max_num_seqs. Read by the importer: a launch script that "
        "leaves it unset gets this value (calculator/verl/imports.py)."
    )
    max_model_len_rule: MaxModelLenRule = Field(
        description="What rollout.max_model_len: null becomes. set_or_prompt_response: the set value, else prompt + "
        "response (0.5/0.6 sync SPMD); forced_max_position: max_position_embeddings whatever is set (0.7.0); "
        "set_or_max_position: the set value (verl raises above max_position_embeddings), else "
        "max_position_embeddings (0.7.1+). Read by resolve/engines.py; the error by calculator/verl/checks."
    )
    critic_always_dynamic: bool = Field(
        description="The critic engine ignores critic.use_dynamic_bsz / micro-batch sizes and packs tokens by a "
        "budget (engine releases). Read by resolve."
    )
    critic_update_budget_from_ppo: bool = Field(
        default=False,
        description="With critic_always_dynamic: the update packs critic.ppo_max_token_len_per_gpu (0.8.0 "
        "ray_trainer.py:814) instead of ppo_infer_max_token_len_per_gpu (32768, the 0.9 V1 trainer). Read by resolve.",
    )
    ref_forward_streams_weights: bool = Field(
        default=True,
        description="The FSDP reference forward streams its fp32 shards from CPU over PCIe on every pass (forced "
        "CPU offload, every release). Read by resolve (Resolved.ref_streams_weights).",
    )
    forward_only_root_resharded: bool = Field(
        default=False,
        description="FSDP1's root unit (embedding, final norm, lm_head) is resharded after a forward-only pass: "
        "legacy workers call _handle.reshard(True) when world_size > 1; the engine only when fsdp_size > 1. "
        "Read by memory/phases.py lingering_roots (audit item 4: probable from the source, unmeasured).",
    )
    vllm_fused_moe_chunk_tokens: int = Field(
        default=16384,
        description="vLLM's fused experts run in chunks of VLLM_FUSED_MOE_CHUNK_SIZE tokens (vLLM 0.12 envs.py: 16384; "
        "modular_kernel.py _chunk_info), so the MoE workspace is sized for one chunk; 0 = the whole batch at once "
        "(vLLM 0.18 and 0.24: no chunking, the workspace manager sizes it for every token). Releases pinning "
        "vLLM <= 0.12 (verl <= 0.8) chunk; 0.9.0 (vLLM >= 0.18) and 0.9.1 (0.24) do not. Read by resolve/engines.py.",
    )
    megatron_grad_offload_key: bool = Field(
        default=True,
        description="The Megatron config has megatron.grad_offload (0.5.0-0.9.0 _generated_ppo_megatron_trainer.yaml; "
        "removed in 0.9.1, where Hydra refuses the key without '+'). Read by the export (calculator/verl/export.py).",
    )
    balance_batch_banded: bool = Field(
        default=True,
        description="trainer.balance_batch sorts each rank's partition by workload and lays it out short-long-short "
        "(0.7.0 trainer/ppo/ray_trainer.py:1132-1134; 0.9.1 :1239-1242), so every rank's mini-batch i is the same "
        "length band. 0.5 / 0.6 keep each partition in batch order (seqlen_balancing.py sorted(partition): indices), "
        "so a rank's mini-batches are unsorted subsets; so does the 0.9 V1 trainer (trainer/ppo/v1/trainer_base.py "
        "_balance_batch, 0.9.1 :1608-1631: no sort). Read by timing/overheads.py (dp_straggler).",
    )
    driver_batch_padded: bool = Field(
        default=True,
        description="The single controller gathers, reorders and dispatches the batch padded to max_prompt + "
        "max_response per sequence (legacy RayPPOTrainer with DataProto; the agent loop pads: 0.9.1 "
        "experimental/agent_loop/agent_loop.py _pad_token_ids). The 0.9 V1 trainer (trainer.use_v1: true) puts "
        "unpadded samples into TransferQueue (trainer/ppo/v1/agent_loop_tq.py async_kv_batch_put) and the driver "
        "handles metadata. Read by timing/overheads.py (dispatch).",
    )
    trainer_expandable_segments: bool = Field(
        default=True,
        description="The trainer's passes (reward model, log-probs, values, updates) run with PyTorch's expandable "
        "segments: verl switches them on when it leaves rollout mode and off again for the weight sync, in every "
        "worker (utils/device.py set_expandable_segments; 0.6.0 workers/fsdp_workers.py:683 off, :731 on, "
        "megatron_workers.py:577 off, :608 on; 0.7.1 fsdp_workers.py:802 / :855, megatron_workers.py:683 / :743; "
        "0.8.0 engine_workers.py:702 / :746; 0.9.1 engine_workers.py:768 / :827). Not in 0.5.0 (no such call). "
        "The call reaches torch.cuda only (ROCm included) until 0.8, where it also tries torch.npu, which needs "
        "torch-npu >= 2.9.0 (0.8.0 utils/device.py:147-152). Read by resolve (Resolved.trainer_expandable_segments) "
        "and memory/phases.py (the fragmentation term).",
    )
    notes: str = ""
    sources: tuple[str, ...] = ()


_LEGACY_SOURCES = (
    'workers/fsdp_workers.py _build_model_optimizer: \'cpu_offload = None if role == "actor" else '
    "CPUOffload(offload_params=True)' (0.5.0 :366-368; 0.7.1 :597-599)",
    "workers/actor/dp_actor.py _forward_micro_batch: logits_rmpad.div_(temperature) (0.5.0 :182; 0.7.1 :259)",
    "workers/fsdp_workers.py compute_log_prob: actor_module._handle.reshard(True) (0.5.0 :794; 0.7.1 :1137)",
    "verl docs/examples/config.rst gpu_memory_utilization (PR #1491, 2025-05-13)",
)
_ENGINE_SOURCES = (
    "no workers/fsdp_workers.py in the wheel: trainer/main_ppo.py uses engine_workers (0.8.0 :130,151)",
    "workers/engine/fsdp/transformer_impl.py forward_only -> CPUOffload (0.9.1 :432-435)",
    "workers/engine/fsdp/transformer_impl.py EngineEvalModeCtx: reshard only 'if fsdp_size > 1' (0.8.0 :894)",
    "workers/rollout/vllm_rollout/vllm_async_server.py: 'distributed_executor_backend': 'mp' (0.8.0 :257); "
    "max_model_len null -> max_position_embeddings, ValueError above it (0.8.0 :813-818)",
)

_LEGACY = VersionBehaviour(
    version="0.6",
    worker_impl="legacy",
    ref_on_gpu_bf16=False,
    logits_fp32=False,
    vllm_util_semantics="total",
    vllm_cudagraph_in_budget=False,
    rollout_in_trainer_process=True,
    rollout_mode="sync",
    weight_sync_bucket=False,
    weight_sync_bucket_mib=512,
    temperature_copies_logits=False,
    old_log_prob_entropy=True,
    max_num_seqs_default=1024,
    max_model_len_rule="set_or_prompt_response",
    critic_always_dynamic=False,
    forward_only_root_resharded=True,
)
_ENGINE = _LEGACY.model_copy(
    update={
        "worker_impl": "engine",
        "rollout_in_trainer_process": False,
        "rollout_mode": "async",
        "weight_sync_bucket": True,
        "weight_sync_bucket_mib": 2048,
        "max_model_len_rule": "set_or_max_position",
        "critic_always_dynamic": True,
        "forward_only_root_resharded": False,
    }
)


def _row(base: VersionBehaviour, version: str, notes: str, sources: tuple[str, ...], **changes) -> VersionBehaviour:
    return base.model_copy(update={"version": version, "notes": notes, "sources": sources, **changes})


VERSION_BEHAVIOUR: dict[str, VersionBehaviour] = {
    "0.9.1": _row(
        _ENGINE,
        "0.9.1",
        "verl 0.9.1 wheel (pins vllm 0.24.0, torch 2.11.0, transformers 5.9.0). V1 trainer; the critic packs "
        "critic.ppo_infer_max_token_len_per_gpu (32768) for update and inference; deferred gradient sync is "
        "opt-in (fsdp_config.use_no_sync_for_gradient_accumulation, default false).",
        (
            *_ENGINE_SOURCES,
            "workers/engine/fsdp/transformer_impl.py _scale_logits_by_temperature: no copy at T == 1 (:98-103)",
            "trainer/ppo/v1/trainer_base.py _setup: critic engine budgets = ppo_infer_max_token_len_per_gpu (:266-268)",
            "workers/engine/fsdp/transformer_impl.py _gradient_sync_context gated by "
            "use_no_sync_for_gradient_accumulation (:692-722; yaml default false, _generated_ppo_trainer.yaml:46)",
            "_generated_ppo_trainer.yaml: max_num_seqs 256 (:316), update_weights_bucket_megabytes 2048 (:371)",
            "METADATA: vllm==0.24.0 (CUDA graphs inside gpu_memory_utilization since vLLM 0.21)",
        ),
        vllm_cudagraph_in_budget=True,
        temperature_copies_logits=True,
        max_num_seqs_default=256,
        megatron_grad_offload_key=False,
        vllm_fused_moe_chunk_tokens=0,
        balance_batch_banded=False,
        driver_batch_padded=False,
    ),
    "0.9.0": _row(
        _ENGINE,
        "0.9.0",
        "verl 0.9.0 wheel: like 0.9.1, but gradient sync is always deferred (unsharded grads for the whole "
        "mini-batch), the logits copy is made even at temperature 1, and vLLM >= 0.18 is allowed (graphs are "
        "taken as outside gpu_memory_utilization: counted there only from vLLM 0.21).",
        (
            *_ENGINE_SOURCES,
            "workers/engine/fsdp/transformer_impl.py _gradient_sync_context: no_sync() / "
            "set_requires_gradient_sync(False) on every micro-batch but the last, no switch (:672-698)",
            "workers/engine/fsdp/transformer_impl.py: 'logits_rmpad = logits_rmpad / temperature_rmpad...' "
            "unconditional (:1352, :1445)",
            "trainer/ppo/v1/trainer_base.py: critic budgets = ppo_infer_max_token_len_per_gpu",
            "_generated_ppo_trainer.yaml: max_num_seqs 256 (:286), update_weights_bucket_megabytes 2048 (:340)",
            "METADATA: vllm>=0.18.0",
        ),
        temperature_copies_logits=True,
        temperature_copy_at_one=True,
        always_defer_grad_sync=True,
        max_num_seqs_default=256,
        vllm_fused_moe_chunk_tokens=0,
        balance_batch_banded=False,
        driver_batch_padded=False,
    ),
    "0.8": _row(
        _ENGINE,
        "0.8",
        "verl 0.8.0 wheel: engine only (no legacy workers), vLLM in separate processes with the 2048 MiB IPC "
        "bucket, max_num_seqs 1024, logits divided in place; the critic is always packed dynamically, the "
        "update by critic.ppo_max_token_len_per_gpu, inference by ppo_infer_max_token_len_per_gpu (32768).",
        (
            *_ENGINE_SOURCES,
            "workers/engine/fsdp/transformer_impl.py: logits_rmpad.div_(temperature_rmpad...) (:1112)",
            "trainer/ppo/ray_trainer.py: engine_config.infer_max_token_len_per_gpu = ppo_infer_max_token_len_per_gpu, "
            "max_token_len_per_gpu = ppo_max_token_len_per_gpu (:813-814); workers/config/engine.py "
            "use_dynamic_bsz = True (:102)",
            "_generated_ppo_trainer.yaml: max_num_seqs 1024 (:260), update_weights_bucket_megabytes 2048 (:314)",
            "METADATA: vllm<=0.12.0,>=0.8.5",
        ),
        critic_update_budget_from_ppo=True,
    ),
    "0.7.1": _row(
        _LEGACY,
        "0.7.1",
        "verl 0.7.1 wheel: legacy workers (use_legacy_worker_impl: auto) with the 0.8-style rollout: vLLM in "
        "separate processes (mp), weight sync through the 2048 MiB IPC bucket, max_model_len null -> "
        "max_position_embeddings (ValueError above it).",
        (
            *_LEGACY_SOURCES,
            "workers/rollout/vllm_rollout/vllm_async_server.py: 'distributed_executor_backend': 'mp' (:306); "
            "max_model_len null -> max_position_embeddings, ValueError above it (:114-119)",
            "workers/rollout/vllm_rollout/vllm_rollout.py update_weights: BucketedWeightSender, "
            "checkpoint_engine.update_weights_bucket_megabytes (:154-169)",
            "_generated_ppo_trainer.yaml: mode async (:228), max_num_seqs 1024 (:248), bucket 2048 (:301)",
            "METADATA: vllm<=0.12.0,>=0.8.5",
        ),
        rollout_in_trainer_process=False,
        rollout_mode="async",
        weight_sync_bucket=True,
        weight_sync_bucket_mib=2048,
        max_model_len_rule="set_or_max_position",
    ),
    "0.7.0": _row(
        _LEGACY,
        "0.7.0",
        "verl 0.7.0 wheel: rollout.mode async, but vLLM's workers run in the trainer process "
        "(ExternalZeroMQDistributedExecutor) and load weights directly; the 512 MiB bucket is SGLang's. "
        "max_model_len is forced to max_position_embeddings (a set value is ignored).",
        (
            *_LEGACY_SOURCES,
            "workers/rollout/vllm_rollout/vllm_async_server.py: ExternalZeroMQDistributedExecutor (:389); "
            "'self.config.max_model_len = self.model_config.hf_config.max_position_embeddings' (:198)",
            "_generated_ppo_trainer.yaml: mode async (:191), max_num_seqs 1024 (:209), bucket 512 (:257)",
            "METADATA: vllm<=0.12.0,>=0.8.5",
        ),
        rollout_mode="async",
        max_model_len_rule="forced_max_position",
    ),
    "0.6": _row(
        _LEGACY,
        "0.6",
        "verl 0.6.0 wheel: rollout.mode sync = SPMD vLLM inside the trainer process (external_launcher); "
        "max_model_len = the set value or prompt + response.",
        (
            *_LEGACY_SOURCES,
            "workers/rollout/vllm_rollout/vllm_rollout_spmd.py: 'max_model_len = int(config.max_model_len or "
            "config.prompt_length + config.response_length)' (:159), external_launcher (:196)",
            "_generated_ppo_trainer.yaml: mode sync (:165), max_num_seqs 1024 (:183), bucket 512 (:230)",
            "METADATA: vllm<=0.9.1,>=0.7.3",
            "trainer/ppo/ray_trainer.py _balance_batch: partitions in index order, no workload sort (:905-920)",
        ),
        balance_batch_banded=False,
        megatron_lora=False,
    ),
    "0.5": _row(
        _LEGACY,
        "0.5",
        "verl 0.5.0 wheel: as 0.6 (legacy workers, SPMD vLLM in the trainer process, prompt + response).",
        (
            *_LEGACY_SOURCES,
            "workers/rollout/vllm_rollout/vllm_rollout_spmd.py: max_model_len or prompt + response (:138), "
            "external_launcher (:169)",
            "_generated_ppo_trainer.yaml: mode sync (:79), max_num_seqs 1024 (:93), bucket 512 (:134)",
            "METADATA: vllm<=0.8.5,>=0.7.3",
            "trainer/ppo/ray_trainer.py _balance_batch: partitions in index order, no workload sort (:1067-1081)",
        ),
        balance_batch_banded=False,
        megatron_lora=False,
        trainer_expandable_segments=False,
    ),
}
# DESIGN.md 6.5: the minor versions stay accepted as aliases of their newest patch release.
VERSION_ALIASES: dict[str, str] = {"0.7": "0.7.1", "0.9": "0.9.1"}
VERL_VERSIONS: tuple[str, ...] = ("0.5", "0.6", "0.7.0", "0.7.1", "0.8", "0.9.0", "0.9.1")


def behaviour(version: str) -> VersionBehaviour:
    """The row for ``Scenario.verl_version`` (an alias gives its newest patch; ``0.9.1`` when unknown)."""
    return VERSION_BEHAVIOUR.get(VERSION_ALIASES.get(version, version), VERSION_BEHAVIOUR["0.9.1"])
