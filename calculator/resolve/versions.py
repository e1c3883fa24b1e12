"""How older verl releases differ from verl 0.9.1 in ways that change GPU memory.

Read from verl's git history (github.com/volcengine/verl: tags v0.6.0 and v0.7.0, and main at
``verl/version/version`` = 0.8.0.dev, 2026-01-29, for 0.8) and from the verl 0.9.1 wheel. Where a
row rests on a dev snapshot rather than a release it says so. ``Scenario.verl_version`` picks the row;
the memory model reads the flags (see each field's description for what to change).

Findings that surprised us, stated with their evidence:

* The FSDP reference policy is **not** on the GPU in any of these versions. The legacy
  ``verl/workers/fsdp_workers.py`` (the default worker in 0.6-0.8: ``trainer.use_legacy_worker_impl: auto``)
  wraps every non-actor role with ``CPUOffload(offload_params=True)`` (FSDP1, "We force reference policy
  to use CPUOffload to save memory", since PR #121, 2025-01-24, i.e. verl 0.2) or
  ``CPUOffloadPolicy(pin_memory=True)`` (FSDP2, since PR #1026, 2025-05-02). 0.9.1's engine does the same
  for ``forward_only`` engines. Only a Megatron ref stays on the GPU (bf16) unless offloaded, in every
  version.
* ``gpu_memory_utilization`` means "share of total GPU memory for the whole vLLM instance" for vLLM >= 0.7
  (verl docs/examples/config.rst since PR #1491, 2025-05-13). The "share of the remaining memory for the KV
  cache" meaning applied to vLLM 0.5.4 / 0.6.3, i.e. verl <= 0.3, none of the versions offered here:
  verl 0.6 requires ``vllm>=0.7.3`` and 0.7 ``vllm>=0.8.5`` (setup.py).
* Logits are never upcast to fp32 by the model: transformers removed the ``logits.float()`` in 4.46 (4.45
  warned "Starting from v4.46, the `logits` model output will have the same type as the model"); verl
  0.6/0.7's Dockerfiles require ``transformers>=4.49.0`` and verl 0.9.1 pins transformers 5.x.
* old_log_prob computes the entropy in every version (legacy ``compute_log_prob(..., calculate_entropy=True)``;
  0.9.1 ``trainer_base._compute_old_log_prob`` ``"calculate_entropy": True``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class VersionBehaviour(BaseModel):
    """Memory-relevant behaviour of one verl release (defaults of the FSDP + vLLM colocated path)."""

    model_config = ConfigDict(frozen=True)

    version: str
    worker_impl: Literal["legacy", "engine"] = Field(
        description="legacy = verl/workers/fsdp_workers.py + dp_actor.py (trainer.use_legacy_worker_impl=auto); "
        "engine = verl/workers/engine_workers.py + workers/engine/fsdp (the only one in 0.9.1)."
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
        description="vLLM counts its CUDA-graph pool inside gpu_memory_utilization (DESIGN.md 4.5: since vLLM 0.21)."
    )
    rollout_in_trainer_process: bool = Field(
        description="vLLM's GPU workers run inside the trainer's worker process (one CUDA context per GPU, vLLM's "
        "memory shares the trainer's allocator). False = separate processes (two CUDA contexts per GPU)."
    )
    rollout_mode: Literal["sync", "async"] = Field(description="Default actor_rollout_ref.rollout.mode.")
    weight_sync_bucket: bool = Field(
        description="Weight sync goes through a GPU staging bucket (checkpoint_engine.update_weights_bucket_megabytes) "
        "over CUDA IPC. False = vLLM in the same process loads each full tensor directly (no bucket)."
    )
    weight_sync_bucket_mib: int = Field(description="Default update_weights_bucket_megabytes of that release.")
    temperature_copies_logits: bool = Field(
        description="temperature != 1 makes an out-of-place logits / T copy (0.9.1 _scale_logits_by_temperature). "
        "False = the legacy dp_actor divides in place (logits_rmpad.div_(temperature)): no extra copy."
    )
    old_log_prob_entropy: bool = Field(description="compute_log_prob computes the entropy (fp32 softmax-sized).")
    max_num_seqs_default: int = Field(description="Default actor_rollout_ref.rollout.max_num_seqs.")
    critic_always_dynamic: bool = Field(
        description="The critic engine ignores critic.use_dynamic_bsz / micro-batch sizes and packs "
        "critic.ppo_infer_max_token_len_per_gpu (32768) tokens per micro-batch (0.9.1 V1 trainer)."
    )
    ref_forward_streams_weights: bool = Field(
        default=True,
        description="The FSDP reference forward streams its fp32 shards from CPU over PCIe on every pass (the "
        "forward-only engine's forced CPU offload). True in every release: the legacy 0.5-0.7 workers wrap the ref in "
        "CPUOffload(offload_params=True) unconditionally ('We force reference policy to use CPUOffload', 0.7.0 "
        "fsdp_workers.py:516-518; shared/reference/verl_source_audit.md item 3), as the memory model already "
        "assumes; 0.6/0.7 used to be False here (issue 15 item 7).",
    )
    notes: str = ""
    sources: tuple[str, ...] = ()


_LEGACY_SOURCES = (
    "verl v0.6.0/v0.7.0 verl/workers/fsdp_workers.py _build_model_optimizer: "
    "'cpu_offload = None if role == \"actor\" else CPUOffload(offload_params=True)' and, for fsdp2, "
    "'else CPUOffloadPolicy(pin_memory=True)' (PR #121 2025-01-24; PR #1026 2025-05-02)",
    "verl v0.6.0/v0.7.0 verl/workers/actor/dp_actor.py _forward_micro_batch: logits_rmpad.div_(temperature)",
    "verl v0.6.0/v0.7.0 verl/workers/fsdp_workers.py compute_log_prob: calculate_entropy=True for old_log_prob",
    "verl docs/examples/config.rst gpu_memory_utilization (PR #1491, 2025-05-13)",
    "transformers 4.45 modeling_llama.py: 'TODO: remove the float() operation in v4.46'",
)

VERSION_BEHAVIOUR: dict[str, VersionBehaviour] = {
    "0.9": VersionBehaviour(
        version="0.9",
        worker_impl="engine",
        ref_on_gpu_bf16=False,
        logits_fp32=False,
        vllm_util_semantics="total",
        vllm_cudagraph_in_budget=True,
        rollout_in_trainer_process=False,
        rollout_mode="async",
        weight_sync_bucket=True,
        weight_sync_bucket_mib=2048,
        temperature_copies_logits=True,
        old_log_prob_entropy=True,
        max_num_seqs_default=256,
        critic_always_dynamic=True,
        notes="verl 0.9.1 wheel (pins vllm 0.24.0, torch 2.11.0, transformers 5.9.0). The ref's forward_only "
        "engine is CPU-offloaded; the V1 trainer wires only critic.ppo_infer_max_token_len_per_gpu into the "
        "critic engine, whose use_dynamic_bsz keeps the EngineConfig default True. (shared/reference/"
        "verl_config_keys.yaml notes that 0.9.0 always deferred FSDP gradient sync; not re-checked here.)",
        sources=(
            "verl/workers/engine/fsdp/transformer_impl.py FSDPEngine._build_fsdp_module (forward_only -> CPUOffload)",
            "verl/workers/engine/fsdp/transformer_impl.py _scale_logits_by_temperature (out of place unless T == 1)",
            "verl/trainer/ppo/v1/trainer_base.py _compute_old_log_prob ('calculate_entropy': True)",
            "verl/trainer/ppo/v1/trainer_base.py _setup (critic_cfg.engine.max_token_len_per_gpu = "
            "critic_cfg.ppo_infer_max_token_len_per_gpu); verl/workers/config/engine.py EngineConfig.use_dynamic_bsz = True",
            "verl/workers/rollout/vllm_rollout/vllm_async_server.py ('distributed_executor_backend': 'mp')",
            "verl/trainer/config/_generated_ppo_trainer.yaml (max_num_seqs 256, update_weights_bucket_megabytes 2048)",
        ),
    ),
    "0.8": VersionBehaviour(
        version="0.8",
        worker_impl="legacy",
        ref_on_gpu_bf16=False,
        logits_fp32=False,
        vllm_util_semantics="total",
        vllm_cudagraph_in_budget=False,
        rollout_in_trainer_process=False,
        rollout_mode="async",
        weight_sync_bucket=True,
        weight_sync_bucket_mib=2048,
        temperature_copies_logits=False,
        old_log_prob_entropy=True,
        max_num_seqs_default=256,
        critic_always_dynamic=False,
        notes="From main at 0.8.0.dev (2026-01-29), not the 0.8 release: PR #4280 (2026-01-24) moved vLLM to "
        "separate processes (MultiprocExecutor) with CUDA-IPC weight updates, 2048 MiB bucket, max_num_seqs 256; "
        "the legacy fsdp_workers/dp_actor path is still the default (use_legacy_worker_impl: auto). "
        "setup.py still allowed vllm<=0.12.0, so CUDA graphs are taken as outside the budget. Thin evidence: "
        "check a 0.8 release wheel before relying on this row.",
        sources=(
            *_LEGACY_SOURCES,
            "verl main e9405d70b (PR #4280, 2026-01-24): 'Remove ExternalZeroMQDistributedExecutor and use "
            "MultiprocExecutor'; rollout.yaml max_num_seqs 256, checkpoint_engine.update_weights_bucket_megabytes 2048",
        ),
    ),
    "0.7": VersionBehaviour(
        version="0.7",
        worker_impl="legacy",
        ref_on_gpu_bf16=False,
        logits_fp32=False,
        vllm_util_semantics="total",
        vllm_cudagraph_in_budget=False,
        rollout_in_trainer_process=True,
        rollout_mode="async",
        weight_sync_bucket=False,
        weight_sync_bucket_mib=512,
        temperature_copies_logits=False,
        old_log_prob_entropy=True,
        max_num_seqs_default=1024,
        critic_always_dynamic=False,
        notes="v0.7.0 tag: rollout.mode async, but vLLM's workers run in the trainer process through "
        "ExternalZeroMQDistributedExecutor and load weights directly (vllm_rollout.py update_weights -> "
        "model.load_weights); the 512 MiB bucket is SGLang's. vllm>=0.8.5,<=0.12.0.",
        sources=(
            *_LEGACY_SOURCES,
            "verl v0.7.0 verl/workers/rollout/vllm_rollout/vllm_async_server.py (ExternalZeroMQDistributedExecutor)",
            "verl v0.7.0 _generated_ppo_trainer.yaml: rollout.mode async, max_num_seqs 1024, "
            "update_weights_bucket_megabytes 512; setup.py vllm>=0.8.5,<=0.12.0",
        ),
    ),
    "0.6": VersionBehaviour(
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
        critic_always_dynamic=False,
        notes="v0.6.0 tag: rollout.mode sync = SPMD vLLM inside the trainer process "
        "(vllm_rollout_spmd.py, distributed_executor_backend='external_launcher'); vllm>=0.7.3,<=0.9.1.",
        sources=(
            *_LEGACY_SOURCES,
            "verl v0.6.0 verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py (external_launcher)",
            "verl v0.6.0 _generated_ppo_trainer.yaml: rollout.mode sync, max_num_seqs 1024; setup.py vllm>=0.7.3,<=0.9.1",
        ),
    ),
}


def behaviour(version: str) -> VersionBehaviour:
    """The row for ``Scenario.verl_version`` (``0.9`` when unknown)."""
    return VERSION_BEHAVIOUR.get(version, VERSION_BEHAVIOUR["0.9"])
