"""Memory / time trade-offs of one scenario: a sweep of the optimisation toggles, its Pareto front,
and the seeds' trade-off table recomputed for the scenario at hand (DESIGN.md 1, question 3).

The sweep and its points are ``calculator.planning.sweep`` (re-exported here); this module adds the Pareto
front and the technique table: each technique toggled from the current scenario, with the full
``estimate()`` before and after. Nothing here is a fixed "+30% time" rule; each saving and each cost
comes from the mechanism the estimate models.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from calculator.errors import InputError
from calculator.inputs.scenario import Scenario
from calculator.loading import load_scenario
from calculator.planning.sweep import (
    TradeoffPoint,
    apply_settings,
    ckpt_keys,
    current_value,
    offload_keys,
    rollout_tp_options,
    sweep_settings,
)
from calculator.planning.sweep_combine import tradeoff_sweep
from calculator.report.estimate import estimate
from calculator.resolve.architectures import resolve_architectures
from calculator.resolve.inheritance import micro_batch
from calculator.units import GIB_BYTES

__all__ = [
    "TechniqueRow",
    "TradeoffPoint",
    "apply_settings",
    "pareto_front",
    "rollout_tp_options",
    "sweep_settings",
    "technique_table",
    "tradeoff_sweep",
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TechniqueRow(_Frozen):
    """One technique toggled relative to the current scenario: memory saved and time added."""

    technique: str
    settings: dict[str, Any] = Field(description="The dotted keys changed to toggle it.")
    enabled_now: bool = Field(
        description="True when the current scenario already uses it (the row shows turning it off)."
    )
    applicable: bool
    note: str = ""
    peak_gib_before: float = 0.0
    peak_gib_after: float = 0.0
    peak_saved_gib: float = Field(default=0.0, description="before - after; negative = the change costs memory.")
    phase_saved_gib: dict[str, float] = Field(
        default_factory=dict, description="Per phase whose memory changes by >= 0.01 GiB: before - after."
    )
    step_s_before: float | None = Field(default=0.0, description="null when the step cannot run.")
    step_s_after: float | None = Field(default=0.0, description="null when the step cannot run.")
    time_added_s: float | None = Field(
        default=0.0, description="after - before; negative = faster; null when either step cannot run."
    )
    time_added_pct: float | None = None
    fits_after: bool = False


def pareto_front(points: list[TradeoffPoint]) -> list[TradeoffPoint]:
    """Feasible points no other feasible point beats on both peak memory and step time (ties kept
    once), sorted by peak memory."""
    feasible = sorted(
        (p for p in points if p.fits and p.step_s is not None), key=lambda p: (p.peak_gib_per_gpu, p.step_s)
    )
    front: list[TradeoffPoint] = []
    best = float("inf")
    for p in feasible:
        assert p.step_s is not None
        if p.step_s < best:
            front.append(p)
            best = p.step_s
    return front


# ---- the technique table -------------------------------------------------------------------------


def _technique_changes(s: Scenario) -> list[tuple[str, dict[str, Any], bool, str]]:
    """(technique, settings that toggle it, enabled now, why not applicable or '')."""
    rows: list[tuple[str, dict[str, Any], bool, str]] = []
    fsdp = s.actor.strategy != "megatron"
    ck = s.model.enable_gradient_checkpointing
    why_ck = "" if fsdp else "verl Megatron recomputes via megatron.recompute_granularity, not this FSDP switch"
    rows.append(("gradient checkpointing", dict.fromkeys(ckpt_keys(s), not ck), ck, why_ck))
    ao = s.model.enable_activation_offload
    rows.append(
        ("activation offload", {"model.enable_activation_offload": not ao}, ao, "" if fsdp else "FSDP only in verl")
    )
    for kind, name in (("param_offload", "param offload"), ("optimizer_offload", "optimizer offload")):
        keys = offload_keys(s, kind)
        now = bool(current_value(s, keys[0]))
        rows.append((name, {k: not now for k in keys}, now, ""))
    fk = s.model.use_fused_kernels
    rows.append(("fused kernels", {"model.use_fused_kernels": not fk}, fk, ""))
    ec = s.actor.entropy_from_logits_with_chunking
    rows.append(("entropy chunking", {"actor.entropy_from_logits_with_chunking": not ec}, ec, ""))
    dyn = s.actor.use_dynamic_bsz
    longest = s.data.max_prompt_length + s.data.max_response_length
    if dyn:
        micro = max(1, s.actor.ppo_max_token_len_per_gpu // longest)
        change: dict[str, Any] = {"actor.use_dynamic_bsz": False, "actor.ppo_micro_batch_size_per_gpu": micro}
    else:
        micro = micro_batch(s, "actor.ppo_micro_batch_size_per_gpu")
        change = {"actor.use_dynamic_bsz": True, "actor.ppo_max_token_len_per_gpu": max(longest, micro * longest)}
    rows.append(("dynamic batching (token budget)", change, dyn, ""))
    tp = s.rollout.tensor_model_parallel_size
    tp_ok = tp * 2 in rollout_tp_options(s)
    rows.append(
        (
            "rollout TP x2",
            {"rollout.tensor_model_parallel_size": tp * 2},
            False,
            "" if tp_ok else f"TP {tp * 2} does not fit the node / GPU count / heads",
        )
    )
    sp = s.actor.ulysses_sequence_parallel_size
    heads = resolve_architectures(s)[0]
    sp_new = 1 if sp > 1 else 2
    sp_ok = fsdp and s.model.use_remove_padding and heads.num_attention_heads % 2 == 0 and s.hardware.num_gpus % 2 == 0
    rows.append(
        (
            "Ulysses SP 2",
            {"actor.ulysses_sequence_parallel_size": sp_new},
            sp > 1,
            "" if sp_ok else "needs FSDP, remove-padding and an even GPU/head count",
        )
    )
    lora = s.model.lora_rank
    rows.append(("LoRA rank 32", {"model.lora_rank": 0 if lora else 32}, bool(lora), ""))
    return rows


def technique_table(s: Scenario) -> list[TechniqueRow]:
    """Each technique toggled from the current state: peak and per-phase memory saved, time added."""
    base = estimate(s, with_time=True)
    assert base.time is not None
    before_phases = {p.name: p.total_gib for p in base.phases}
    rows = []
    for name, change, enabled, why in _technique_changes(s):
        if why:
            rows.append(TechniqueRow(technique=name, settings=change, enabled_now=enabled, applicable=False, note=why))
            continue
        try:
            after = estimate(load_scenario(s, overrides=change), with_time=True)
        except InputError as err:
            rows.append(
                TechniqueRow(technique=name, settings=change, enabled_now=enabled, applicable=False, note=str(err))
            )
            continue
        assert after.time is not None
        after_phases = {p.name: p.total_gib for p in after.phases}
        saved = {
            p: before_phases[p] - after_phases[p]
            for p in before_phases
            if p in after_phases and abs(before_phases[p] - after_phases[p]) * GIB_BYTES >= 0.01 * GIB_BYTES
        }
        t0, t1 = base.time.step_s, after.time.step_s
        dt = t1 - t0 if t0 is not None and t1 is not None else None  # no delta against a step that cannot run
        rows.append(
            TechniqueRow(
                technique=name,
                settings=change,
                enabled_now=enabled,
                applicable=True,
                note="turning it off" if enabled else "",
                peak_gib_before=base.peak.gib_per_gpu,
                peak_gib_after=after.peak.gib_per_gpu,
                peak_saved_gib=base.peak.gib_per_gpu - after.peak.gib_per_gpu,
                phase_saved_gib=saved,
                step_s_before=t0,
                step_s_after=t1,
                time_added_s=dt,
                time_added_pct=100.0 * dt / t0 if dt is not None and t0 else None,
                fits_after=after.peak.fits,
            )
        )
    return rows
