"""Costs around the GPU work that do not shrink with more GPUs (issue 15, items 2-4), added to the phases of
``calculator.timing.step`` after each phase's own model:

dispatch (every phase)
    ``phase_fixed_overhead_s`` + the batch the driver ships to and from the workers / ``driver_gb_per_s``:
    verl's single controller makes one blocking remote call per phase with the whole DataProto
    (``DATAPROTO_BYTES_PER_TOKEN`` per position: input_ids, attention_mask, position_ids, response mask as int64
    = 32 B, plus one fp32 result per token such as log-probs or values = 4 B). The batch is PADDED: the agent
    loop pads every prompt to ``max_prompt_length`` (left) and every response to ``max_response_length`` (right)
    (verl 0.9.1 ``experimental/agent_loop/agent_loop.py`` ``_pad_token_ids``; the 0.5/0.6 vLLM rollout pads to
    ``response_length`` too), and the driver gathers, reorders (``_balance_batch``) and splits those padded
    tensors every phase (0.9 strips the padding, ``workers/utils/padding.py``, only after it has handled them);
    so the driver's bytes follow max_prompt + max_response per sequence, not the mean length: with 28K-token
    responses averaging 2K this is ~13x the real tokens. The 0.9 V1 trainer (default ``trainer.use_v1``) moves
    unpadded samples through TransferQueue instead (``VersionBehaviour.driver_batch_padded``): real tokens.
dp_straggler (update_actor / update_critic)
    each mini-batch's optimizer step waits for the slowest data-parallel rank. verl's ``trainer.balance_batch``
    (default on; rlplan assumes it) gives every rank an equal-size, equal-workload partition, sorted and laid out
    short-long-short, which every rank cuts into the same mini-batches: mini-batch i is the same length band on
    all ranks, so only the spread inside the band remains (``lengths.balanced_straggler_factor``: per band
    1 + cv_band/√n · E[max of D normals], capped at the band's longest over its mean). The slow rank's extra compute first
    fills the exposed FSDP traffic and host-launch time (a micro-batch lasts max(compute, traffic, launches)),
    so only the excess is charged. verl 0.5 / 0.6 and the 0.9 V1 trainer do not sort the partitions
    (``VersionBehaviour.balance_batch_banded``):
    there each mini-batch is an unsorted subset, 1 + cv/√n · E[max of D normals] with the whole distribution's cv (capped at
    the longest sequence over the mean). The forward-only phases have no per-mini-batch barrier and balanced rank
    totals, so they are left alone.
moe_grouped_gemm, moe_load_imbalance (training-side phases of MoE models)
    the expert GEMMs see tokens x top-k / experts rows each (x EP, whose ranks pool their tokens), at
    rows / (rows + ``grouped_gemm_half_saturation_rows``) of the large-M rate instead of the micro-batch's GEMM
    efficiency; with EP > 1 the busiest rank has ``moe_load_imbalance`` x the mean expert work.
weight_sync: per_tensor_overhead, engine_wake_sleep, lora_base_restore
    ``weight_sync_us_per_tensor`` x tensors sent (``num_weight_tensors``: one per checkpoint tensor, one per
    expert and projection for MoE); ``engine_wake_sleep_s``; with LoRA verl keeps the base weights in host memory
    (vLLM sleep level 1) and copies them back over PCIe at every wake-up.

Left out: Ray object-store spilling, reward-function CPU time, checkpoint saving and validation steps.
"""

from __future__ import annotations

from dataclasses import replace

from calculator.memory.context import Context
from calculator.model.architecture import Architecture
from calculator.model.roles import adapted_linear_count
from calculator.names import Phase
from calculator.timing.flops import PhaseTime, fmt_s, gemm_efficiency, matmul_params, pcie_bytes_per_s
from calculator.timing.lengths import balanced_straggler_factor, straggler_factor
from calculator.timing.rollout import length_distribution

DATAPROTO_BYTES_PER_TOKEN = 36  # 4 int64 tensors per token + one fp32 result (module docstring)
TRAINING_SIDE = (
    Phase.OLD_LOG_PROB,
    Phase.REF_LOG_PROB,
    Phase.CRITIC_VALUES,
    Phase.UPDATE_CRITIC,
    Phase.UPDATE_ACTOR,
)
UPDATES = (Phase.UPDATE_ACTOR, Phase.UPDATE_CRITIC)


def num_weight_tensors(arch: Architecture) -> int:
    """Tensors of the Hugging Face checkpoint layout that verl sends one by one: per layer the attention
    projections (q, k, v, o; MLA: q_a, q_a_norm, q_b, kv_a, kv_a_norm, kv_b, o), q/k norms, 2 layer norms, and
    the dense MLP (3) or the router + 3 per expert (+ score bias, + shared expert 3 and its gate); plus the
    embedding, the final norm and an untied LM head."""
    attn = 7 if arch.is_mla else 4 + (3 if arch.qkv_bias else 0) + (2 if arch.qk_norm else 0)
    per_layer = attn + arch.num_norms_per_layer
    moe = 1 + 3 * arch.num_experts + (1 if arch.router_score_bias else 0)
    if arch.shared_expert_intermediate_size:
        moe += 3 + (1 if arch.shared_expert_gate else 0)
    total = arch.num_layers * per_layer + arch.num_dense_layers * 3 + arch.num_moe_layers * moe
    return total + 2 + (0 if arch.tie_word_embeddings else 1)


def _dispatch(ctx: Context, phase: Phase) -> tuple[float, str]:
    e = ctx.s.efficiency
    d = ctx.s.data
    if ctx.r.behaviour.driver_batch_padded:
        per_seq, what = d.max_prompt_length + d.max_response_length, "padded positions"
    else:  # 0.9 V1 trainer: unpadded samples through TransferQueue
        per_seq, what = ctx.r.lengths.sequence, "tokens (unpadded, TransferQueue)"
    tokens = 0 if phase == Phase.WEIGHT_SYNC else ctx.r.num_sequences_generated * per_seq
    data = tokens * DATAPROTO_BYTES_PER_TOKEN / (e.driver_gb_per_s * 1e9)
    note = (
        f"{e.phase_fixed_overhead_s:g} s fixed + {ctx.r.num_sequences_generated:,} sequences x {per_seq:,} {what} "
        f"x {DATAPROTO_BYTES_PER_TOKEN} B at {e.driver_gb_per_s:g} GB/s ({fmt_s(data)})"
    )
    return e.phase_fixed_overhead_s + data, note


def _straggler(ctx: Context, phase: Phase, t: PhaseTime) -> tuple[float, str]:
    pp = ctx.r.passes[phase]
    critic = phase == Phase.UPDATE_CRITIC and ctx.r.critic is not None
    plan = ctx.r.critic if critic and ctx.r.critic is not None else ctx.r.actor
    num_mini = ctx.r.critic_mini_batches if critic else ctx.r.actor_mini_batches
    ranks = max(1, plan.dp)
    per_rank = pp.expected.sequences_per_gpu * (ctx.s.hardware.num_gpus // max(pp.sp, 1)) / ranks
    ln = ctx.r.lengths
    dist = length_distribution(ctx.s, float(ln.response))
    banded = ctx.r.behaviour.balance_batch_banded
    if banded:
        f = balanced_straggler_factor(dist, float(ln.prompt), num_mini, max(per_rank, 1.0), ranks)
        how = f"balance_batch: {num_mini} mini-batches, each the same length band on all {ranks} ranks"
    else:  # verl 0.5 / 0.6: a rank's mini-batches are unsorted subsets of its partition
        cv = dist.cv() * dist.mean / max(ln.sequence, 1)  # spread of prompt + response
        cap = (ln.prompt + dist.longest) / max(ln.sequence, 1)
        f = min(straggler_factor(cv, max(per_rank, 1.0), ranks), max(cap, 1.0))
        how = f"verl {ctx.r.behaviour.version}'s balance_batch keeps batch order: unsorted mini-batches, CV {cv:.2f}"
    # The slowest rank's extra tokens cost compute at the MFU: its micro-batches are larger, not more numerous,
    # so the per-micro-batch GEMM inefficiency (gemm_small_batch) does not grow with them.
    gpu = t.terms.get("compute", 0.0)
    # A micro-batch lasts max(GPU work, FSDP traffic, host launches): the slow rank's extra compute first fills
    # the exposed traffic and host time.
    hidden = sum(t.terms.get(k, 0.0) for k in ("fsdp_comm", "cpu_offload_pcie", "host_overhead"))
    extra = max(0.0, (f - 1) * gpu - hidden)
    note = (
        f"{how}; slowest rank {f - 1:.1%} above the mean over {per_rank:,.0f} sequences per rank per mini-batch (spread inside each band "
        f"x E[max of {ranks} normals] / sqrt(n)) of the compute {fmt_s(gpu)}, less the exposed FSDP traffic and host time "
        f"it hides ({fmt_s(hidden)})"
    )
    return extra, note


def _moe(ctx: Context, phase: Phase, t: PhaseTime) -> dict[str, tuple[float, str]]:
    arch = ctx.actor.arch if phase != Phase.CRITIC_VALUES and phase != Phase.UPDATE_CRITIC else None
    if arch is None or not arch.is_moe:
        return {}
    s = ctx.s
    plan = ctx.r.actor
    ep = plan.megatron.expert_model_parallel_size if plan.is_megatron else 1
    cp = plan.megatron.context_parallel_size if plan.is_megatron else 1
    pb = ctx.r.passes[phase].expected
    tokens = max(pb.tokens_per_gpu, 1) / cp
    rows = tokens * arch.num_experts_per_tok / arch.num_experts * ep
    share = arch.num_moe_layers * arch.num_experts_per_tok * arch.expert_params() / matmul_params(ctx.actor)
    compute = t.terms.get("compute", 0.0) * share
    eff_dense = gemm_efficiency(s, tokens, ctx.gpu)
    eff_group = rows / (rows + s.efficiency.grouped_gemm_half_saturation_rows)
    grouped = max(0.0, compute / eff_group - compute / eff_dense)
    out = {
        "moe_grouped_gemm": (
            grouped,
            f"expert GEMMs ({share:.0%} of the matmul FLOPs, {fmt_s(compute)} at the MFU) at {rows:,.0f} rows per "
            f"expert ({tokens:,.0f} tokens x top-{arch.num_experts_per_tok} / {arch.num_experts} experts x EP {ep}): "
            f"efficiency {eff_group:.0%} instead of the micro-batch's {eff_dense:.0%}",
        )
    }
    if ep > 1:
        imb = s.efficiency.moe_load_imbalance - 1.0
        comm = t.terms.get("tp_ep_comm", 0.0)
        out["moe_load_imbalance"] = (
            imb * (compute / eff_group + comm),
            f"busiest EP rank {s.efficiency.moe_load_imbalance:g} x the mean: expert compute and all-to-all",
        )
    return out


def _weight_sync_extra(ctx: Context) -> dict[str, tuple[float, str]]:
    s = ctx.s
    e = s.efficiency
    arch = ctx.actor.arch
    if s.model.lora_rank:
        tensors = 2 * adapted_linear_count(arch, s.model.target_modules, ctx.r.actor.is_megatron)
        what = f"{tensors:,} LoRA A/B tensors"
    else:
        tensors = num_weight_tensors(arch)
        what = f"{tensors:,} checkpoint tensors"
    out = {
        "per_tensor_overhead": (
            tensors * e.weight_sync_us_per_tensor * 1e-6,
            f"{what} x {e.weight_sync_us_per_tensor:g} us",
        ),
        "engine_wake_sleep": (e.engine_wake_sleep_s, f"vLLM wake-up + sleep {e.engine_wake_sleep_s:g} s"),
    }
    if s.model.lora_rank:
        es = ctx.r.rollout
        per_gpu = arch.total_params() * es.weight_bytes_per_param / es.tp
        out["lora_base_restore"] = (
            per_gpu / pcie_bytes_per_s(s, ctx.gpu),
            f"sleep level 1: {per_gpu / 2**30:.1f} GiB of base weights per GPU back over PCIe",
        )
    return out


def add_overheads(ctx: Context, phase: Phase, t: PhaseTime) -> PhaseTime:
    """``t`` with the terms of this module added (each with its note)."""
    extra: dict[str, tuple[float, str]] = {"dispatch": _dispatch(ctx, phase)}
    if phase in UPDATES:
        extra["dp_straggler"] = _straggler(ctx, phase, t)
    if phase in TRAINING_SIDE:
        extra.update(_moe(ctx, phase, t))
    if phase == Phase.WEIGHT_SYNC:
        extra.update(_weight_sync_extra(ctx))
    terms = dict(t.terms)
    notes = dict(t.notes)
    for k, (sec, note) in extra.items():
        terms[k] = terms.get(k, 0.0) + sec
        notes[k] = note
    return replace(t, terms=terms, notes=notes)


__all__ = ["DATAPROTO_BYTES_PER_TOKEN", "add_overheads", "num_weight_tensors"]
