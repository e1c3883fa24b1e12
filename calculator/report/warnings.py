"""Warnings a verl user needs before launch (issue #3 item 8), computed from the estimate."""

from __future__ import annotations

from calculator.memory.context import Context
from calculator.report.models import PeakOut, PhaseMemory, RolloutOut
from calculator.units import format_gib

NEAR_LIMIT_FRACTION = 0.95  # a phase within 5% of the usable memory
LOGITS_DOMINANT_FRACTION = 0.25  # logits + entropy above this share of a phase...
TIGHT_FRACTION = 0.8  # ...that uses more than this share of the usable memory
KV_LIMITED_FRACTION = 2  # warn when KV-limited concurrency is below half of what the engine would run


def _g(b: float) -> str:
    return format_gib(b, 1)


def collect_warnings(
    ctx: Context, expected: list[PhaseMemory], worst: list[PhaseMemory], rollout: RolloutOut, peak: PeakOut
) -> list[str]:
    s = ctx.s
    out: list[str] = []
    usable = ctx.gpu.usable_memory_bytes
    rb = ctx.rollout
    util = s.rollout.gpu_memory_utilization
    # 1. vLLM refuses to start.
    if s.rollout.name == "vllm" and rollout.startup_free_gib < rollout.startup_required_gib:
        out.append(
            f"vLLM will refuse to start: free memory at startup {rollout.startup_free_gib:.1f} GiB < "
            f"gpu_memory_utilization {util} x {ctx.gpu.usable_memory_gib} GiB = {rollout.startup_required_gib:.1f} GiB "
            "(the trainer's model shards are already resident). Lower rollout.gpu_memory_utilization or set "
            "actor.fsdp_config.param_offload=true."
        )
    # 2. KV cache.
    max_seq = ctx.r.worst_lengths.sequence
    if rb.kv_cache_bytes <= 0:
        out.append(
            f"rollout engine has no memory for the KV cache: budget {_g(rb.budget_bytes)} - weights {_g(rb.weights_bytes)}"
            f" - activations {_g(rb.activation_bytes)} - non-torch - CUDA graphs {_g(rb.cuda_graph_bytes)} <= 0. "
            "Raise gpu_memory_utilization or rollout TP."
        )
    elif rb.kv_tokens < ctx.max_model_len:
        out.append(
            f"KV cache holds {rb.kv_tokens} tokens per replica, less than one sequence of max_model_len "
            f"{ctx.max_model_len} (rollout.max_model_len, default the model's max_position_embeddings): vLLM refuses "
            f"to start. Set rollout.max_model_len={max_seq} (prompt + response), raise gpu_memory_utilization or "
            "rollout TP."
        )
    # 3. Slow rollout: the KV cache (not max_num_seqs) caps concurrency far below the demand.
    conc = rollout.max_concurrent_sequences_per_replica
    want = min(s.rollout.max_num_seqs, rollout.sequences_per_replica)
    if 0 < conc and conc * KV_LIMITED_FRACTION < want:
        out.append(
            f"KV cache limits rollout concurrency to {conc} sequences per replica, far below the {want} the engine would "
            f"run at once ({rollout.sequences_per_replica} to generate per replica): rollout will be slow. "
            "More KV (higher gpu_memory_utilization, rollout TP) or shorter responses."
        )
    # 5. Logits/entropy dominating a phase that is tight or over the limit.
    for p in expected:
        le = sum(c.bytes for c in p.components if c.name.endswith(("_logits", "_entropy")))
        tight = p.total_bytes > TIGHT_FRACTION * usable
        if tight and le > LOGITS_DOMINANT_FRACTION * p.total_bytes and not s.model.use_fused_kernels:
            out.append(
                f"logits and entropy take {_g(le)} ({le / p.total_bytes:.0%}) of phase {p.name}: set "
                "model.use_fused_kernels=true, actor.entropy_from_logits_with_chunking=true, or smaller "
                "micro-batches / token budgets."
            )
            break
    # 6. Fit and near-limit.
    for p in expected:
        if p.total_bytes > usable:
            out.append(
                f"phase {p.name} needs {_g(p.total_bytes)} per GPU, over the usable {ctx.gpu.usable_memory_gib} GiB by {_g(p.total_bytes - usable)}: OOM."
            )
        elif p.total_bytes > NEAR_LIMIT_FRACTION * usable:
            out.append(
                f"phase {p.name} is within 5% of the usable memory ({_g(p.total_bytes)} of {ctx.gpu.usable_memory_gib} GiB): fragmentation may OOM."
            )
    if peak.fits and not peak.worst_case_fits:
        out.append(
            f"fits at the mean lengths but not when every sequence is at max length ({peak.worst_case_gib_per_gpu:.1f} GiB in "
            f"{peak.worst_case_phase}): long-tail batches can OOM."
        )
    if s.rollout.name == "sglang" and not s.rollout.free_cache_engine and s.actor.fsdp_config.param_offload:
        out.append(
            "SGLang sizes its KV pool from the memory free at start (params offloaded); with free_cache_engine=false the"
            " pool stays while the actor's params come back for log-prob/update: those phases grow by the params."
        )
    # 7. Things modelled approximately.
    if s.model.use_dora:
        out.append(
            "DoRA: verl's LoRA path does not expose DoRA; shown is the LoRA figure plus PEFT DoRA's magnitude vectors and merged-weight transient."
        )
    if s.actor.optim.optimizer == "Adafactor":
        out.append("Adafactor: factored second moments are counted as ~0 B/param (rows + columns only).")
    if s.reward_model.enable and s.reward_model.enable_resource_pool:
        out.append("reward model on its own resource pool: its GPUs are not modelled here.")
    return out
