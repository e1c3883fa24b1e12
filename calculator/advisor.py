"""OOM advisor (issue #6, DESIGN.md 1 Q5): what to change when a scenario does not fit, each change
computed by ``estimate()`` on the modified scenario, ranked by what it costs.

    from calculator.advisor import advise
    advice = advise(load_scenario("qwen2.5-7b-grpo-8xh100", overrides={"hardware.gpu": "a100-40gb"}))
    advice.suggestions[0].verl_overrides   # ["trainer.n_gpus_per_node=8", ..., "actor_rollout_ref...=true"]

Levers: the seeds' checklist in its order (seed 000: a) smaller rollout batch, b) shorter lengths,
c) gradient checkpointing, d) offload, e) more sharding, f) more GPUs) plus what verl adds (lower
``gpu_memory_utilization``, rollout TP, fused kernels, entropy chunking / checkpointing, dynamic
batch token budget, smaller micro-batches, Ulysses SP, CUDA graphs off, ``free_cache_engine``,
``max_model_len`` capped, LoRA). A lever with a size (a utilization, a TP, a budget) is tried from
the mildest value to the strongest; the mildest that fits is kept, else the strongest valid one.

Ranking: first the changes that keep the experiment and the hardware ("settings"), then more GPUs of
the same type ("hardware": same experiment, more money), then changes to the experiment ("workload":
smaller batch, fewer responses, shorter lengths, LoRA instead of full fine-tuning). Within a group,
by the step time the change adds (estimate's ``time.step_s``; when there is no step time, by the
lever's mechanism class: 0 none, 1 small, 2 medium, 3 large), then by the peak it leaves. The first
suggestion in that order that fits is highlighted (``first_fit``). ``combined`` stacks the settings
changes in rank order, keeping each one that lowers a failing figure, until the scenario fits.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from calculator.api import estimate, load_scenario, resolve_architectures
from calculator.errors import InputError
from calculator.fit import DEFAULT_MARGIN, FitCheck, batch_geometry_problem, fit_check, parallel_problem
from calculator.plan_search import (
    LORA_RANK,
    ROLLOUT_TP_CHOICES,
    TOKEN_BUDGETS,
    ULYSSES_SP_CHOICES,
    UTIL_GRID,
    BatchOption,
    GpuSearch,
    batch_overrides,
    gpu_count_ladder,
)
from calculator.planner import (
    DEFAULT_MAX_GPUS,
    Setting,
    check_plan_inputs,
    native_diff,
    resolve_scenario,
    settings_diff,
    verl_override_lines,
)
from calculator.report import Report
from calculator.roles import need_critic
from calculator.scenario import GROUP_ESTIMATORS, Scenario

Tier = Literal["settings", "hardware", "workload"]
TIER_ORDER: dict[str, int] = {"settings": 0, "hardware": 1, "workload": 2}
TIME_COST_LABELS = ("none", "small", "medium", "large")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Suggestion(_Frozen):
    """One change, with the memory and time ``estimate()`` gives for the changed scenario."""

    lever: str = Field(description="Stable id of the lever.")
    title: str
    tier: Tier
    changes_experiment: bool = Field(description="True when the training run itself changes (workload, LoRA).")
    source: str = Field(description="Where the lever comes from: the seeds' checklist item, or verl.")
    explanation: str
    native_changes: dict[str, Setting] = Field(description="Scenario fields changed (rlplan's own names).")
    settings: dict[str, Setting] = Field(description="verl override keys -> new values.")
    verl_overrides: list[str] = Field(description="key=value lines for a launch script, cluster shape included.")
    num_gpus: int
    peak_gib_per_gpu: float
    peak_phase: str
    worst_case_gib_per_gpu: float
    saving_gib: float = Field(description="Expected peak before minus after, GiB per GPU.")
    step_s: float | None
    added_step_s: float | None = Field(description="Step time after minus before; null without a time model.")
    time_cost: Literal["none", "small", "medium", "large"] = Field(description="Mechanism class of the time cost.")
    fits: bool
    helps: bool = Field(description="Fits, or lowers a figure that fails; false = no effect on what fails.")
    fit: FitCheck
    first_fit: bool = False
    rank: int = 0


class Advice(_Frozen):
    """What to change for one scenario, ranked."""

    scenario: str
    gpu: str
    num_gpus: int
    margin: float
    status: Literal["fits", "within_margin", "does_not_fit"] = Field(
        description="within_margin: fits the usable memory but not the safety margin."
    )
    base: FitCheck
    base_step_s: float | None
    verl_problems: list[str] = Field(description="verl/vLLM startup rules the scenario breaks, if any.")
    suggestions: list[Suggestion]
    first_fit: str | None = Field(description="Lever id of the first suggestion (in rank order) that fits.")
    combined: Suggestion | None = Field(description="Settings changes stacked in rank order until it fits.")
    ranking: str
    elapsed_s: float


RANKING = (
    "settings changes (same experiment, same GPUs) first, then more GPUs, then changes to the experiment "
    "(batch, responses per prompt, lengths, LoRA); within each, by step time added (or the mechanism's "
    "time class without a step-time model), then by the peak left"
)


@dataclass(frozen=True)
class _Lever:
    lever: str
    title: str
    tier: Tier
    time_class: int  # 0 none, 1 small, 2 medium, 3 large (mechanism, used when there is no step time)
    source: str
    explanation: str
    changes_experiment: bool = False


_CHECKLIST = "seed 000 checklist"  # the OOM checklist of seeds/000 (a-f), in its priority order
# The levers: (id, title, tier, time class, source, why). Candidates are computed per scenario.
LEVERS: dict[str, _Lever] = {
    lv.lever: lv
    for lv in (
        _Lever("cap_max_model_len", "Cap vLLM max_model_len at prompt + response", "settings", 0, "verl",
               "verl 0.9 starts vLLM with max_model_len = max_position_embeddings when unset, and vLLM needs "
               "KV cache for one such sequence to start."),
        _Lever("fused_kernels", "Fused kernels for log-prob and entropy", "settings", 0, "verl",
               "Log-probs and entropy in 512-token chunks: the full tokens x vocab logits never exist."),
        _Lever("entropy_chunking", "Entropy in 2048-token chunks", "settings", 0, "verl",
               "entropy_from_logits allocates an fp32 tokens x vocab softmax; chunking bounds it at 2048 tokens."),
        _Lever("entropy_checkpointing", "Recompute entropy in backward", "settings", 1, "verl",
               "update_actor keeps the fp32 softmax for backward unless entropy is checkpointed."),
        _Lever("free_cache_engine", "Sleep the rollout engine after generation", "settings", 0, "verl",
               "free_cache_engine=false keeps vLLM weights and KV cache resident through training."),
        _Lever("enforce_eager", "Disable vLLM CUDA graphs", "settings", 1, "verl",
               "CUDA-graph pools survive the engine's sleep and stay resident in every phase; eager decode is "
               "slower."),
        _Lever("gpu_memory_utilization", "Lower rollout gpu_memory_utilization", "settings", 0, "verl",
               "vLLM takes util x total GPU memory beside the trainer's resident state (and needs that much free "
               "at startup); a smaller share leaves less KV cache, so fewer sequences decode at once."),
        _Lever("rollout_tp", "Larger rollout tensor parallelism", "settings", 1, "verl",
               "Splits the rollout weights over more GPUs per replica: more KV cache at the same utilization, "
               "fewer replicas."),
        _Lever("micro_batch", "Smaller micro-batches", "settings", 1, "seed 001 micro-batch sizing",
               "Activations and logits scale with the sequences in one micro-batch (log-prob passes too)."),
        _Lever("token_budget", "Dynamic batch with a smaller token budget", "settings", 1, "verl",
               "use_dynamic_bsz packs each micro-batch up to ppo_max_token_len_per_gpu tokens (log-prob passes "
               "inherit it): memory follows the budget, not the longest sequences."),
        _Lever("gradient_checkpointing", "Gradient checkpointing", "settings", 2, f"{_CHECKLIST} c)",
               "Keeps only each layer's input and recomputes the layer in backward (one extra forward)."),
        _Lever("activation_offload", "Activation offload", "settings", 2, f"{_CHECKLIST} d)",
               "Checkpointed activations go to CPU; at most two layer groups stay on GPU."),
        _Lever("optimizer_offload", "Offload the actor's optimizer state", "settings", 2, f"{_CHECKLIST} d)",
               "AdamW's 8 B/param/N go to CPU while the actor is idle (back for the update): frees the rollout "
               "and log-prob phases, not update_actor."),
        _Lever("param_offload", "Offload the actor's parameters", "settings", 3, f"{_CHECKLIST} d)",
               "The fp32 shard (and grads) go to CPU while the actor is idle: frees the rollout phase and the "
               "vLLM startup check; PCIe copies every phase."),
        _Lever("critic_optimizer_offload", "Offload the critic's optimizer state", "settings", 2,
               f"{_CHECKLIST} d)", "The critic's Adam state goes to CPU while the critic is idle."),
        _Lever("critic_param_offload", "Offload the critic's parameters", "settings", 3, f"{_CHECKLIST} d)",
               "The critic's fp32 shard goes to CPU while the critic is idle."),
        _Lever("offload_policy", "FSDP2 CPU offload policy", "settings", 3, f"{_CHECKLIST} e)",
               "CPUOffloadPolicy keeps params, grads and optimizer on CPU even during compute; AdamW runs on CPU."),
        _Lever("full_shard", "Shard over all GPUs (fsdp_size=-1)", "settings", 1, f"{_CHECKLIST} e)",
               "HSDP replicates the state over groups; full sharding divides it by all GPUs."),
        _Lever("no_sync_off", "Sharded gradient accumulation", "settings", 1, "verl",
               "use_no_sync_for_gradient_accumulation keeps unsharded fp32 grads (4 B/param, not divided)."),
        _Lever("ulysses_sp", "Ulysses sequence parallelism", "settings", 2, "verl",
               "Splits each micro-batch's tokens over SP GPUs (all-to-all per attention layer)."),
        _Lever("more_gpus", "More GPUs of the same type", "hardware", 0, f"{_CHECKLIST} f)",
               "Training state is sharded over all GPUs (FSDP): per-GPU state falls as 1/N; the rollout "
               "engine's share does not change."),
        _Lever("smaller_rollout_batch", "Fewer prompts per step", "workload", 0, f"{_CHECKLIST} a)",
               "Fewer sequences per step. In verl memory follows micro-batches, not the batch, so this mostly "
               "shortens the step.", True),
        _Lever("fewer_responses", "Fewer responses per prompt (rollout.n)", "workload", 0, f"{_CHECKLIST} a)",
               "Group size n multiplies the sequences per step (seed 000, pitfall 2).", True),
        _Lever("shorter_responses", "Shorter responses", "workload", 0, f"{_CHECKLIST} b)",
               "KV cache, activations and logits all scale with sequence length.", True),
        _Lever("shorter_prompts", "Shorter prompts", "workload", 0, f"{_CHECKLIST} b)",
               "KV cache, activations and logits all scale with sequence length.", True),
        _Lever("lora", f"LoRA (rank {LORA_RANK}) instead of full fine-tuning", "workload", 0, "verl",
               "Trains adapters only: no full-size grads or Adam state, no separate reference model.", True),
    )
}  # fmt: skip


@dataclass(frozen=True)
class _Tried:
    changes: dict[str, Any]
    scenario: Scenario
    report: Report
    fit: FitCheck


def _seq_len(s: Scenario) -> int:
    return s.data.max_prompt_length + s.data.max_response_length


def _candidates(s: Scenario, max_gpus: int) -> dict[str, list[dict[str, Any]]]:
    """Candidate changes (native dotted fields, mildest first) of every lever that applies to ``s``."""
    arch = resolve_architectures(s)[0]
    a, r, m, d = s.actor, s.rollout, s.model, s.data
    g, per_node = s.hardware.num_gpus, s.hardware.gpus_per_node
    critic = need_critic(s)
    megatron = a.strategy == "megatron"
    off_key = "actor.megatron" if megatron else "actor.fsdp_config"
    off = a.megatron if megatron else a.fsdp_config
    sp = a.ulysses_sequence_parallel_size
    out: dict[str, list[dict[str, Any]]] = {}

    def with_critic(change: dict[str, Any], critic_key: str) -> dict[str, Any]:
        return {**change, critic_key: next(iter(change.values()))} if critic else change

    # settings: same experiment, same GPUs
    if r.max_model_len is None and arch.max_position_embeddings > _seq_len(s):
        out["cap_max_model_len"] = [{"rollout.max_model_len": _seq_len(s)}]
    if not m.use_fused_kernels:
        out["fused_kernels"] = [{"model.use_fused_kernels": True}]
    if not a.entropy_from_logits_with_chunking:
        out["entropy_chunking"] = [{"actor.entropy_from_logits_with_chunking": True}]
    if (a.entropy_coeff != 0 or a.calculate_entropy) and not a.entropy_checkpointing:
        out["entropy_checkpointing"] = [{"actor.entropy_checkpointing": True}]
    if not r.free_cache_engine:
        out["free_cache_engine"] = [{"rollout.free_cache_engine": True}]
    if r.name == "vllm" and not r.enforce_eager:
        out["enforce_eager"] = [{"rollout.enforce_eager": True}]
    out["gpu_memory_utilization"] = [
        {"rollout.gpu_memory_utilization": u} for u in sorted(UTIL_GRID, reverse=True) if u < r.gpu_memory_utilization
    ]
    out["rollout_tp"] = [
        {"rollout.tensor_model_parallel_size": t}
        for t in ROLLOUT_TP_CHOICES
        if r.tensor_model_parallel_size < t <= per_node
        and g % (t * r.data_parallel_size) == 0
        and arch.num_attention_heads % t == 0
    ]
    micro = a.ppo_micro_batch_size_per_gpu or 1
    if not a.use_dynamic_bsz and micro > 1:
        sizes = [micro >> i for i in range(1, micro.bit_length())]
        out["micro_batch"] = [batch_overrides(s, BatchOption("fixed", x)) for x in sizes]
    mean_len = (d.mean_prompt_length or d.max_prompt_length) + (d.mean_response_length or d.max_response_length)
    current = a.ppo_max_token_len_per_gpu if a.use_dynamic_bsz else micro * mean_len
    out["token_budget"] = [
        batch_overrides(s, BatchOption("dynamic", t)) for t in TOKEN_BUDGETS if t < current and t * sp >= _seq_len(s)
    ]
    if not megatron:
        if not m.enable_gradient_checkpointing:
            out["gradient_checkpointing"] = [
                with_critic({"model.enable_gradient_checkpointing": True}, "critic.enable_gradient_checkpointing")
            ]
        if not m.enable_activation_offload:
            out["activation_offload"] = [{"model.enable_activation_offload": True}]
    if not off.optimizer_offload:
        out["optimizer_offload"] = [{f"{off_key}.optimizer_offload": True}]
    if not off.param_offload:
        out["param_offload"] = [{f"{off_key}.param_offload": True}]
    if critic and (s.critic.strategy or a.strategy) != "megatron":
        for what in ("optimizer_offload", "param_offload"):
            if not getattr(s.critic.fsdp, what):
                out[f"critic_{what}"] = [{f"critic.fsdp.{what}": True}]
    if a.strategy == "fsdp2" and not a.fsdp_config.offload_policy:
        out["offload_policy"] = [{"actor.fsdp_config.offload_policy": True}]
    if not megatron and (a.fsdp_config.fsdp_size > 0 or s.critic.fsdp.fsdp_size > 0):
        out["full_shard"] = [with_critic({"actor.fsdp_config.fsdp_size": -1}, "critic.fsdp.fsdp_size")]
    if not megatron and a.fsdp_config.use_no_sync_for_gradient_accumulation:
        out["no_sync_off"] = [{"actor.fsdp_config.use_no_sync_for_gradient_accumulation": False}]
    if m.use_remove_padding and not megatron:
        out["ulysses_sp"] = [
            with_critic({"actor.ulysses_sequence_parallel_size": x}, "critic.ulysses_sequence_parallel_size")
            for x in ULYSSES_SP_CHOICES
            if sp < x <= per_node and g % x == 0 and arch.num_attention_heads % x == 0
        ]
    # hardware: same experiment, more GPUs
    out["more_gpus"] = [{"hardware.num_gpus": c} for c in gpu_count_ladder(per_node, max_gpus) if c > g]
    # workload: a different experiment
    tb = d.train_batch_size
    out["smaller_rollout_batch"] = [
        {"data.train_batch_size": x, "actor.ppo_mini_batch_size": min(a.ppo_mini_batch_size, x)}
        | ({"data.gen_batch_size": max(x, d.gen_batch_size * x // tb)} if d.gen_batch_size is not None else {})
        for x in (tb // 2, tb // 4)
        if x >= 1
    ]
    low_n = 2 if s.algorithm.adv_estimator in GROUP_ESTIMATORS else 1
    out["fewer_responses"] = [{"rollout.n": x} for x in dict.fromkeys((r.n // 2, r.n // 4)) if low_n <= x < r.n]
    for kind in ("response", "prompt"):
        top, mean = getattr(d, f"max_{kind}_length"), getattr(d, f"mean_{kind}_length")
        out[f"shorter_{kind}s"] = [
            {f"data.max_{kind}_length": x} | ({f"data.mean_{kind}_length": x} if mean is not None and mean > x else {})
            for x in (top // 2, top // 4)
            if x >= 1
        ]
    if m.lora_rank == 0:
        out["lora"] = [{"model.lora_rank": LORA_RANK}]
    return {k: v for k, v in out.items() if v}


def _try(s: Scenario, changes: dict[str, Any], margin: float) -> _Tried | None:
    """Estimate ``s`` with ``changes``; None when the change is invalid for the scenario, verl or vLLM."""
    try:
        new = load_scenario(s, overrides=changes)
    except InputError:
        return None
    if batch_geometry_problem(new) or parallel_problem(new, resolve_architectures(new)[0]):
        return None
    report = estimate(new)
    return _Tried(changes, new, report, fit_check(report, new, margin))


def _pick(s: Scenario, lever: str, candidates: list[dict[str, Any]], margin: float) -> _Tried | None:
    """The mildest candidate that fits, else the one with the lowest peak."""
    tried = []
    for ch in candidates:
        t = _try(s, ch, margin)
        if t is None:
            continue
        if t.fit.fits:
            return t
        tried.append(t)
        if (
            lever == "more_gpus"
            and len(tried) >= 4
            and tried[-1].fit.peak_gib_per_gpu >= tried[-2].fit.peak_gib_per_gpu
        ):
            break  # more GPUs no longer lower the peak (the rollout engine's share is fixed)
    return min(tried, key=lambda t: (t.fit.peak_gib_per_gpu, t.fit.worst_case_gib_per_gpu)) if tried else None


def _planned(s: Scenario, margin: float, max_gpus: int) -> list[tuple[_Lever, _Tried]]:
    """The planner's search on this GPU type: the fastest fitting settings at the current GPU count, or
    else the fewest GPUs that fit with the fastest settings found there (LoRA not searched)."""
    srch = GpuSearch(s, s.hardware.gpu, max_gpus=max_gpus, margin=margin, allow_lora=False)
    n = s.hardware.num_gpus
    ev = srch.at_count(n) if srch.is_valid_count(n) else None
    if ev is not None:
        lever = _Lever(
            "searched_settings",
            f"Fastest fitting settings at {n} GPUs (planner search)",
            "settings",
            2,
            "planner",
            "The planner's search over offload, checkpointing, fused kernels, entropy chunking, batch sizing, "
            "Ulysses SP, rollout TP and gpu_memory_utilization at this GPU count.",
        )
    else:
        first, _ = srch.min_count()
        if first is None:
            return []
        ev = srch.relax(first)
        lever = _Lever(
            "searched_min_gpus",
            f"{ev.knobs.num_gpus} GPUs with searched settings (fewest that fit)",
            "hardware",
            0,
            "planner",
            "The planner's smallest GPU count of this type at which some searched setting fits, with the "
            "fastest settings found there.",
        )
    return [(lever, _Tried(native_diff(s, ev.scenario), ev.scenario, ev.report, ev.fit))]


def _suggestion(s: Scenario, base: Report, lever: _Lever, t: _Tried, base_fit: FitCheck) -> Suggestion:
    settings = settings_diff(s, t.scenario)
    step = t.report.time.step_s if t.report.time is not None else None
    base_step = base.time.step_s if base.time is not None else None
    hw = t.scenario.hardware
    return Suggestion(
        lever=lever.lever,
        title=lever.title,
        tier=lever.tier,
        changes_experiment=lever.changes_experiment,
        source=lever.source,
        explanation=lever.explanation,
        native_changes=dict(t.changes),
        settings=settings,
        verl_overrides=verl_override_lines(settings, hw.num_gpus, hw.gpus_per_node),
        num_gpus=hw.num_gpus,
        peak_gib_per_gpu=t.fit.peak_gib_per_gpu,
        peak_phase=t.fit.peak_phase,
        worst_case_gib_per_gpu=t.fit.worst_case_gib_per_gpu,
        saving_gib=base.peak.gib_per_gpu - t.fit.peak_gib_per_gpu,
        step_s=step,
        added_step_s=step - base_step if step is not None and base_step is not None else None,
        time_cost=TIME_COST_LABELS[lever.time_class],  # type: ignore[arg-type]
        fits=t.fit.fits,
        helps=t.fit.fits or _improves(t.fit, base_fit),
        fit=t.fit,
    )


def _rank_key(sug: Suggestion, time_class: int, use_time: bool) -> tuple[Any, ...]:
    added = sug.added_step_s if use_time and sug.added_step_s is not None else float(time_class)
    return (not sug.helps, TIER_ORDER[sug.tier], added, time_class, sug.fit.overshoot_gib, sug.peak_gib_per_gpu)


def _improves(new: FitCheck, cur: FitCheck) -> bool:
    """The change brings the scenario closer to fitting: less overshoot (GiB over the limits, summed over
    phases, plus the startup and KV shortfalls)."""
    return new.overshoot_gib < cur.overshoot_gib - 1e-6


def _combined(
    s: Scenario, base: Report, ranked: list[tuple[Suggestion, _Lever]], margin: float
) -> tuple[Suggestion, _Lever] | None:
    """Stack the settings changes in rank order, keeping each that lowers a failing figure, until it fits."""
    changes: dict[str, Any] = {}
    used: list[_Lever] = []
    cur = _try(s, {}, margin)
    if cur is None:
        return None
    base_fit = cur.fit
    for sug, lv in ranked:
        if lv.tier != "settings" or lv.lever == "searched_settings":
            continue
        t = _try(s, {**changes, **sug.native_changes}, margin)
        if t is None or not _improves(t.fit, cur.fit):
            continue
        changes, cur = {**changes, **sug.native_changes}, t
        used.append(lv)
        if t.fit.fits:
            break
    if len(used) < 2:
        return None  # a single lever is already in the list
    combo = _Lever(
        "combined",
        "Combined: " + "; ".join(lv.title[0].lower() + lv.title[1:] for lv in used),
        "settings",
        max(lv.time_class for lv in used),
        "verl + seeds",
        "The settings changes ranked above, stacked in rank order; each is kept only if it lowers a figure "
        "that still fails.",
    )
    return _suggestion(s, base, combo, cur, base_fit), combo


def advise(
    scenario: Scenario | str | dict[str, Any], margin: float = DEFAULT_MARGIN, max_gpus: int = DEFAULT_MAX_GPUS
) -> Advice:
    """Ranked changes that would make ``scenario`` fit (empty when it already fits within the margin).
    Raises :class:`InputError` on bad input."""
    t0 = time.perf_counter()
    check_plan_inputs(max_gpus, margin)
    s = resolve_scenario(scenario)
    base = estimate(s)
    base_fit = fit_check(base, s, margin)
    problems = [p for p in (batch_geometry_problem(s), parallel_problem(s, resolve_architectures(s)[0])) if p]
    if base_fit.fits:
        status = "fits"
    elif (
        base.peak.gib_per_gpu <= base_fit.usable_memory_gib
        and base_fit.worst_case_fits
        and (base_fit.engine_starts and base_fit.kv_holds_max_model_len)
    ):
        status = "within_margin"
    else:
        status = "does_not_fit"
    ranked: list[tuple[Suggestion, _Lever]] = []
    combined = None
    if status != "fits":
        picked = [(LEVERS[k], _pick(s, k, c, margin)) for k, c in _candidates(s, max_gpus).items()]
        for lever, t in picked + _planned(s, margin, max_gpus):
            if t is not None:
                ranked.append((_suggestion(s, base, lever, t, base_fit), lever))
        use_time = base.time is not None and all(sug.added_step_s is not None for sug, _ in ranked)
        ranked.sort(key=lambda x: _rank_key(x[0], x[1].time_class, use_time))
        combo = _combined(s, base, ranked, margin)
        if combo is not None:
            combined = combo[0]
            if combined.fits:  # a stack that fits competes with the single changes
                ranked.append(combo)
                ranked.sort(key=lambda x: _rank_key(x[0], x[1].time_class, use_time))
    first = next((i for i, (sug, _) in enumerate(ranked) if sug.fits), None)
    suggestions = [sug.model_copy(update={"rank": i + 1, "first_fit": i == first}) for i, (sug, _) in enumerate(ranked)]
    return Advice(
        scenario=s.name,
        gpu=s.hardware.gpu,
        num_gpus=s.hardware.num_gpus,
        margin=margin,
        status=status,  # type: ignore[arg-type]
        base=base_fit,
        base_step_s=base.time.step_s if base.time is not None else None,
        verl_problems=problems,
        suggestions=suggestions,
        first_fit=suggestions[first].lever if first is not None else None,
        combined=next((x for x in suggestions if x.lever == "combined"), combined),
        ranking=RANKING,
        elapsed_s=time.perf_counter() - t0,
    )


__all__ = ["Advice", "Suggestion", "advise"]
