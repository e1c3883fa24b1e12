"""Warnings a verl user needs before launch (issue #3 item 8), computed from the estimate."""

from __future__ import annotations

from dataclasses import dataclass

from calculator.memory.context import Context
from calculator.memory.engine import EngineBudget
from calculator.report.models import PeakOut, PhaseMemory, RolloutOut
from calculator.report.verdict import startup_offload_fix, startup_trainer_fix
from calculator.units import format_gib

NEAR_LIMIT_FRACTION = 0.95  # a phase within 5% of the usable memory
LOGITS_DOMINANT_FRACTION = 0.25  # logits + entropy above this share of a phase...
TIGHT_FRACTION = 0.8  # ...that uses more than this share of the usable memory
KV_LIMITED_FRACTION = 2  # warn when KV-limited concurrency is below half of what the engine would run


def _g(b: float) -> str:
    return format_gib(b, 1)


@dataclass(frozen=True)
class _Inputs:
    ctx: Context
    expected: list[PhaseMemory]
    rollout: RolloutOut
    peak: PeakOut


def _engine_start(w: _Inputs) -> list[str]:
    """vLLM refuses to start when the trainer's resident state leaves less than util x total free."""
    s, ro, gpu = w.ctx.s, w.rollout, w.ctx.gpu
    if ro.startup_free_gib < 0:
        return [
            f"the trainer runs out of memory at init, before vLLM starts: its start-up state exceeds the usable "
            f"{gpu.usable_memory_gib} GiB by {-ro.startup_free_gib:.1f} GiB. Fix: {startup_trainer_fix(w.ctx.r)}."
        ]
    if s.rollout.name != "vllm" or ro.startup_free_gib >= ro.startup_required_gib:
        return []
    return [
        f"vLLM will refuse to start: free memory at startup {ro.startup_free_gib:.1f} GiB < "
        f"gpu_memory_utilization {s.rollout.gpu_memory_utilization} x {gpu.usable_memory_gib} GiB = "
        f"{ro.startup_required_gib:.1f} GiB (the trainer's model shards are already resident). Lower "
        f"rollout.gpu_memory_utilization{startup_offload_fix(w.ctx.r)}."
    ]


def _kv_cache(w: _Inputs) -> list[str]:
    """No KV memory at all, or not enough for one max_model_len sequence (vLLM refuses to start)."""
    ctx = w.ctx
    rb = ctx.rollout
    if rb.kv_cache_bytes <= 0:
        return [
            f"rollout engine has no memory for the KV cache: budget {_g(rb.budget_bytes)} - weights {_g(rb.weights_bytes)}"
            f" - activations {_g(rb.activation_bytes)} - non-torch - CUDA graphs {_g(rb.cuda_graph_bytes)} <= 0. "
            "Raise gpu_memory_utilization or rollout TP."
        ]
    if rb.kv_tokens < ctx.max_model_len:
        return [
            f"KV cache holds {rb.kv_tokens} tokens per {_unit(rb)}, less than one sequence of max_model_len "
            f"{ctx.max_model_len} (rollout.max_model_len, default the model's max_position_embeddings): vLLM refuses "
            f"to start. Set rollout.max_model_len={ctx.r.worst_lengths.sequence} (prompt + response), raise "
            "gpu_memory_utilization or rollout TP."
        ]
    return []


def _kv_limited(w: _Inputs) -> list[str]:
    """Slow rollout: the KV cache (not max_num_seqs) caps concurrency far below the demand."""
    ro = w.rollout
    conc = ro.max_concurrent_sequences_per_replica
    want = min(w.ctx.r.rollout.max_num_seqs, ro.sequences_per_replica)
    if not (0 < conc and conc * KV_LIMITED_FRACTION < want):
        return []
    return [
        f"KV cache limits rollout concurrency to {conc} sequences per replica, far below the {want} the engine would "
        f"run at once ({ro.sequences_per_replica} to generate per replica): rollout will be slow. "
        "More KV (higher gpu_memory_utilization, rollout TP) or shorter responses."
    ]


def _logits_dominant(w: _Inputs) -> list[str]:
    """Logits/entropy dominating a phase that is tight or over the limit (first such phase only)."""
    usable = w.ctx.gpu.usable_memory_bytes
    if w.ctx.s.model.use_fused_kernels:
        return []
    for p in w.expected:
        le = sum(c.bytes for c in p.components if c.name.endswith(("_logits", "_entropy")))
        if p.total_bytes > TIGHT_FRACTION * usable and le > LOGITS_DOMINANT_FRACTION * p.total_bytes:
            return [
                f"logits and entropy take {_g(le)} ({le / p.total_bytes:.0%}) of phase {p.name}: set "
                "model.use_fused_kernels=true, actor.entropy_from_logits_with_chunking=true, or smaller "
                "micro-batches / token budgets."
            ]
    return []


def _fit(w: _Inputs) -> list[str]:
    """Phases over the usable memory or within 5% of it; fits at the means but not at max lengths."""
    gpu = w.ctx.gpu
    usable = gpu.usable_memory_bytes
    out: list[str] = []
    for p in w.expected:
        if p.total_bytes > usable:
            out.append(
                f"phase {p.name} needs {_g(p.total_bytes)} per GPU, over the usable {gpu.usable_memory_gib} GiB by {_g(p.total_bytes - usable)}: OOM."
            )
        elif p.total_bytes > NEAR_LIMIT_FRACTION * usable:
            out.append(
                f"phase {p.name} is within 5% of the usable memory ({_g(p.total_bytes)} of {gpu.usable_memory_gib} GiB): what the model leaves out (allocator pages, library workspaces) may OOM."
            )
    if w.peak.fits and not w.peak.worst_case_fits:
        out.append(
            f"fits at the mean lengths but not when every sequence is at max length ({w.peak.worst_case_gib_per_gpu:.1f} GiB in "
            f"{w.peak.worst_case_phase}): long-tail batches can OOM."
        )
    return out


def _approximations(w: _Inputs) -> list[str]:
    """Settings the model covers only approximately."""
    s = w.ctx.s
    out: list[str] = []
    if s.rollout.name == "sglang" and not s.rollout.free_cache_engine and s.actor.fsdp_config.param_offload:
        out.append(
            "SGLang sizes its KV pool from the memory free at start (params offloaded); with free_cache_engine=false the"
            " pool stays while the actor's params come back for log-prob/update: those phases grow by the params."
        )
    if s.model.use_dora:
        out.append(
            "DoRA: verl's LoRA path does not expose DoRA; shown is the LoRA figure plus PEFT DoRA's magnitude vectors and merged-weight transient."
        )
    if s.actor.optim.optimizer == "Adafactor":
        out.append("Adafactor: factored second moments are counted as ~0 B/param (rows + columns only).")
    if s.reward_model.enable and s.reward_model.enable_resource_pool:
        out.append("reward model on its own resource pool: its GPUs are not modelled here.")
    return out


def _lengths(w: _Inputs) -> list[str]:
    """No mean response length: the expected case is then every response at its max (DESIGN.md 6.3), which makes
    the step time an upper bound. RL responses are long-tailed (a mean well below the max is the rule, e.g. verl's
    DeepSeek-V3 run: mean 1,960 of 9,632, docs/perf/dpsk.md), and decode time, KV concurrency and the long tail all
    follow the mean: on that run the step is ~6x longer with every response at its max."""
    d = w.ctx.s.data
    if d.mean_response_length is not None:
        return []
    what = f"every response at max_response_length ({d.max_response_length} tokens)"
    if d.mean_prompt_length is None:
        what += f" and every prompt at max_prompt_length ({d.max_prompt_length} tokens)"
    return [
        f"no data.mean_response_length: the expected case puts {what}, so the step time is an upper bound with no "
        "long tail. Set data.mean_response_length (and data.mean_prompt_length) to the run's "
        "response_length/mean and prompt_length/mean, which verl logs."
    ]


RULES = (_engine_start, _kv_cache, _kv_limited, _logits_dominant, _fit, _approximations, _lengths)


def collect_warnings(
    ctx: Context, expected: list[PhaseMemory], worst: list[PhaseMemory], rollout: RolloutOut, peak: PeakOut
) -> list[str]:
    """Every warning rule in order (``worst`` is read through ``peak``)."""
    w = _Inputs(ctx, expected, rollout, peak)
    return [text for rule in RULES for text in rule(w)]


def _unit(rb: EngineBudget) -> str:
    """What the KV check counts: one engine; a replica of several vLLM DP ranks holds several such caches."""
    return "replica" if rb.data_parallel == 1 else f"engine (each of the replica's {rb.data_parallel} DP ranks)"
