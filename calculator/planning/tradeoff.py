"""Memory / time trade-offs of one scenario: a sweep of the optimisation toggles, its Pareto front,
and the seeds' trade-off table recomputed for the scenario at hand (DESIGN.md 1, question 3).

Every point is the estimate of the modified scenario (``estimate()``'s context, expected-case
phases, fit rule and ``step_time``; see :func:`_point`): memory from ``calculator.memory.phases``, time from
``calculator.timing.step``. Nothing here is a fixed "+30% time" rule; each saving and each
cost comes from the mechanism the estimate models.

The sweep varies (every combination): gradient checkpointing and activation offload (FSDP only),
param offload, optimizer offload, fused kernels, rollout TP (divisors of the GPUs per node that divide
the GPU count and the attention heads, <= 8), ``gpu_memory_utilization`` in {0.4 .. 0.8} plus the
current value, and, with dynamic batch size, the token budget at half / current / double (never below
the longest sequence, which verl rejects). Offload toggles apply to the critic too when it exists.
Scenarios are modified with ``model_copy(update=...)`` (no re-validation): every value above is valid
by construction.
"""

from __future__ import annotations

import itertools
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from calculator.errors import InputError
from calculator.inputs.scenario import Scenario
from calculator.loading import load_scenario
from calculator.memory import phases as memory
from calculator.memory.context import build_context as memory_context
from calculator.model.architecture import Architecture
from calculator.names import Strategy
from calculator.report.estimate import estimate
from calculator.resolve.architectures import resolve_architectures
from calculator.resolve.inheritance import micro_batch
from calculator.resolve.resolved import resolve
from calculator.resolve.roles import critic_strategy, need_critic
from calculator.timing.step import step_time
from calculator.units import GIB_BYTES
from calculator.verl.checks import check_config

UTILIZATION_LEVELS = (0.4, 0.5, 0.6, 0.7, 0.8)
MAX_ROLLOUT_TP = 8


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TradeoffPoint(_Frozen):
    """One combination of settings and what it costs."""

    label: str = Field(description="Short label of the settings, e.g. 'ckpt · p-off · TP2 · util 0.6'.")
    settings: dict[str, Any] = Field(description="Native dotted scenario keys and values of this point.")
    peak_gib_per_gpu: float
    peak_phase: str
    step_s: float | None = Field(description="Seconds per step; null when the rollout engine cannot start.")
    tokens_per_s_per_gpu: float
    fits: bool
    usable_memory_gib: float = Field(description="The GPU's usable memory (the fit limit), GiB.")
    is_current: bool = False


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


# ---- applying settings ---------------------------------------------------------------------------


def apply_settings(
    s: Scenario, settings: dict[str, Any], cache: dict[tuple[int, str], BaseModel] | None = None
) -> Scenario:
    """Set dotted native keys with nested ``model_copy(update=...)`` (no re-validation, fast).
    ``cache`` reuses rebuilt sections across calls on the same base scenario (a sweep changes the model,
    actor and rollout sections in a few ways each)."""
    tree: dict[str, Any] = {}
    for key, value in settings.items():
        node = tree
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value

    def rebuild(model: BaseModel, updates: dict[str, Any], top: bool) -> BaseModel:
        key = (id(model), repr(updates))
        if cache is not None and not top and key in cache:
            return cache[key]
        changes = {
            k: rebuild(getattr(model, k), v, False)
            if isinstance(v, dict) and isinstance(getattr(model, k), BaseModel)
            else v
            for k, v in updates.items()
        }
        out = model.model_copy(update=changes)
        if cache is not None and not top:
            cache[key] = out
        return out

    return rebuild(s, tree, True)  # type: ignore[return-value]


def _current(s: Scenario, key: str) -> Any:
    node: Any = s
    for part in key.split("."):
        node = getattr(node, part)
    return node


def _offload_keys(s: Scenario, kind: str) -> list[str]:
    """Keys of param/optimizer offload for the actor (and the critic when it exists)."""
    keys = [f"actor.megatron.{kind}" if s.actor.strategy == "megatron" else f"actor.fsdp_config.{kind}"]
    if need_critic(s):
        keys.append(f"critic.megatron.{kind}" if critic_strategy(s) is Strategy.MEGATRON else f"critic.fsdp.{kind}")
    return keys


def _ckpt_keys(s: Scenario) -> list[str]:
    return ["model.enable_gradient_checkpointing"] + (
        ["critic.enable_gradient_checkpointing"] if need_critic(s) else []
    )


def rollout_tp_options(s: Scenario) -> list[int]:
    """Divisors of the node's GPU count that divide the GPU count and the attention heads, <= 8."""
    arch = resolve_architectures(s)[0]
    gpn = min(s.hardware.gpus_per_node, s.hardware.num_gpus)
    dp = s.rollout.data_parallel_size
    return [
        d
        for d in range(1, min(gpn, MAX_ROLLOUT_TP) + 1)
        if gpn % d == 0 and s.hardware.num_gpus % (d * dp) == 0 and arch.num_attention_heads % d == 0
    ]


def _budget_levels(s: Scenario) -> list[int]:
    if not s.actor.use_dynamic_bsz:
        return []
    cur = s.actor.ppo_max_token_len_per_gpu
    floor = s.data.max_prompt_length + s.data.max_response_length
    return sorted({max(floor, cur // 2), cur, cur * 2})


def _label(settings: dict[str, Any]) -> str:
    parts = []
    if settings.get("model.enable_gradient_checkpointing"):
        parts.append("ckpt")
    if settings.get("model.enable_activation_offload"):
        parts.append("act-off")
    if any(v for k, v in settings.items() if k.endswith("param_offload")):
        parts.append("p-off")
    if any(v for k, v in settings.items() if k.endswith("optimizer_offload")):
        parts.append("o-off")
    if settings.get("model.use_fused_kernels"):
        parts.append("fused")
    parts.append(f"TP{settings['rollout.tensor_model_parallel_size']}")
    parts.append(f"util {settings['rollout.gpu_memory_utilization']:g}")
    if "actor.ppo_max_token_len_per_gpu" in settings:
        parts.append(f"{settings['actor.ppo_max_token_len_per_gpu'] // 1024}k tok")
    return " · ".join(parts)


class _MemoArchitecture(Architecture):
    """The same architecture with its parameter counts memoised by identity. ``roles.policy_role`` sums
    ``layer_params`` over every layer for each role on each estimate, and ``Architecture``'s own caches
    hash the whole frozen model per call; in a sweep of ~1,000 estimates that is ~10% of the time.
    Pure functions of frozen fields, so the results are identical; used only inside the sweep
    (instances live in ``_MEMO``, so ``id`` is a stable cache key)."""

    def layer_params(self, layer: int, active_only: bool = False) -> int:
        key = (id(self), layer, active_only)
        if key not in _COUNTS:
            _COUNTS[key] = super().layer_params(layer, active_only)
        return _COUNTS[key]

    def total_params(self) -> int:
        key = (id(self), -1, False)
        if key not in _COUNTS:
            _COUNTS[key] = super().total_params()
        return _COUNTS[key]

    def active_params(self) -> int:
        key = (id(self), -1, True)
        if key not in _COUNTS:
            _COUNTS[key] = super().active_params()
        return _COUNTS[key]

    def max_layer_params(self) -> int:
        key = (id(self), -2, False)
        if key not in _COUNTS:
            _COUNTS[key] = super().max_layer_params()
        return _COUNTS[key]


_MEMO: dict[Architecture, _MemoArchitecture] = {}
_COUNTS: dict[tuple[int, int, bool], int] = {}


def _memo(arch: Architecture | None) -> Architecture | None:
    if arch is None:
        return None
    if arch not in _MEMO:
        if len(_MEMO) >= 64:
            _MEMO.clear()
            _COUNTS.clear()
        _MEMO[arch] = _MemoArchitecture(**dict(arch))
    return _MEMO[arch]


def _point(s: Scenario, settings: dict[str, Any], current: bool) -> TradeoffPoint:
    """The numbers of ``estimate(s)`` a trade-off point needs, without building the full Report.

    Same context, same expected-case phases, same fit rule (peak <= usable memory, the rollout engine
    starts, verl accepts the config: ``calculator.report.verdict``) and same ``step_time`` (none when the
    engine cannot start) as :func:`calculator.report.estimate.estimate`; it skips the worst-case phases,
    the warnings and the Report objects, which halves the cost per point (tests/test_tradeoff.py checks
    every point of a sweep against ``estimate``)."""
    actor, critic, reward = resolve_architectures(s)
    memo = _memo(actor)
    assert memo is not None
    ctx = memory_context(resolve(s, (memo, _memo(critic), _memo(reward))))
    phases = memory.all_phases(ctx, worst=False)
    peak = max(phases, key=lambda p: p.total_bytes)
    usable = ctx.gpu.usable_memory_bytes
    starts = memory.engine_starts(ctx)
    time = step_time(ctx)
    rejected = any(p.severity == "error" for p in check_config(ctx.r))
    return TradeoffPoint(
        label=_label(settings),
        settings=settings,
        peak_gib_per_gpu=peak.total_bytes / GIB_BYTES,
        peak_phase=peak.name,
        step_s=time.step_s if starts else None,
        tokens_per_s_per_gpu=time.tokens_per_s_per_gpu if starts else 0.0,
        fits=peak.total_bytes <= usable and starts and not rejected,
        usable_memory_gib=ctx.gpu.usable_memory_gib,
        is_current=current,
    )


# ---- the sweep and its front ---------------------------------------------------------------------


def sweep_settings(s: Scenario) -> list[dict[str, Any]]:
    """Every combination the sweep evaluates, as dotted settings (the current one included)."""
    fsdp = s.actor.strategy != "megatron"
    axes: list[tuple[list[str], list[Any]]] = [
        (_ckpt_keys(s), [False, True] if fsdp else [s.model.enable_gradient_checkpointing]),
        (["model.enable_activation_offload"], [False, True] if fsdp else [s.model.enable_activation_offload]),
        (_offload_keys(s, "param_offload"), [False, True]),
        (_offload_keys(s, "optimizer_offload"), [False, True]),
        (["model.use_fused_kernels"], [False, True]),
        (
            ["rollout.tensor_model_parallel_size"],
            sorted({*rollout_tp_options(s), s.rollout.tensor_model_parallel_size}),
        ),
        (["rollout.gpu_memory_utilization"], sorted({*UTILIZATION_LEVELS, s.rollout.gpu_memory_utilization})),
    ]
    budgets = _budget_levels(s)
    if budgets:
        axes.append((["actor.ppo_max_token_len_per_gpu"], budgets))
    out = []
    for values in itertools.product(*(vals for _, vals in axes)):
        settings: dict[str, Any] = {}
        for (keys, _), v in zip(axes, values, strict=True):
            for k in keys:
                settings[k] = v
        out.append(settings)
    return out


def tradeoff_sweep(s: Scenario) -> list[TradeoffPoint]:
    """Estimate every combination of :func:`sweep_settings`; the current scenario's point is flagged."""
    points = []
    sections: dict[tuple[int, str], BaseModel] = {}
    for settings in sweep_settings(s):
        current = all(_current(s, k) == v for k, v in settings.items())
        points.append(_point(s if current else apply_settings(s, settings, sections), settings, current))
    return points


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
    rows.append(("gradient checkpointing", dict.fromkeys(_ckpt_keys(s), not ck), ck, why_ck))
    ao = s.model.enable_activation_offload
    rows.append(
        ("activation offload", {"model.enable_activation_offload": not ao}, ao, "" if fsdp else "FSDP only in verl")
    )
    for kind, name in (("param_offload", "param offload"), ("optimizer_offload", "optimizer offload")):
        keys = _offload_keys(s, kind)
        now = bool(_current(s, keys[0]))
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
