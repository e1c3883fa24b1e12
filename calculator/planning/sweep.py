"""The memory / time trade-off sweep of one scenario: every combination of the optimisation toggles
(DESIGN.md 1, question 3), each point estimated by the same mechanisms as ``estimate()``.

The sweep varies (every combination): gradient checkpointing and activation offload (FSDP only),
param offload, optimizer offload, fused kernels, rollout TP (divisors of the GPUs per node that divide
the GPU count and the attention heads, <= 8), ``gpu_memory_utilization`` in {0.4 .. 0.8} plus the
current value, and, with dynamic batch size, the token budget at half / current / double (never below
the longest sequence, which verl rejects). Offload toggles apply to the critic too when it exists.
Scenarios are modified with ``model_copy(update=...)`` (no re-validation): every value above is valid
by construction. How the points are computed: ``calculator.planning.sweep_combine``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from calculator.inputs.scenario import Scenario
from calculator.memory import phases as memory
from calculator.memory.context import Context
from calculator.memory.context import build_context as memory_context
from calculator.memory.host import host_memory
from calculator.model.architecture import Architecture
from calculator.names import Strategy
from calculator.report.models import PhaseMemory, TimeOut
from calculator.resolve.architectures import resolve_architectures
from calculator.resolve.resolved import resolve
from calculator.resolve.roles import critic_strategy, need_critic
from calculator.timing.step import step_time
from calculator.units import GIB_BYTES
from calculator.verl.checks import check_config
from calculator.verl.checks.problem import rejections

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


def current_value(s: Scenario, key: str) -> Any:
    node: Any = s
    for part in key.split("."):
        node = getattr(node, part)
    return node


def offload_keys(s: Scenario, kind: str) -> list[str]:
    """Keys of param/optimizer offload for the actor (and the critic when it exists)."""
    keys = [f"actor.megatron.{kind}" if s.actor.strategy == "megatron" else f"actor.fsdp_config.{kind}"]
    if need_critic(s):
        keys.append(f"critic.megatron.{kind}" if critic_strategy(s) is Strategy.MEGATRON else f"critic.fsdp.{kind}")
    return keys


def ckpt_keys(s: Scenario) -> list[str]:
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


def point_label(settings: dict[str, Any]) -> str:
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


@dataclass(frozen=True)
class Evaluated:
    """What a trade-off point needs from ``estimate()``'s pipeline: the context, the expected-case phases and
    the step time."""

    ctx: Context
    phases: list[PhaseMemory]
    time: TimeOut
    accepted: bool  # no verl config check of severity error (criterion 5 of calculator.report.verdict)
    host_fits: bool  # host RAM per node fits (criterion 6)


def evaluate(s: Scenario) -> Evaluated:
    """``estimate(s)``'s context, expected-case phases and ``step_time``, without the worst case, the warnings
    and the Report objects (architectures memoised, see ``_MemoArchitecture``)."""
    actor, critic, reward = resolve_architectures(s)
    memo = _memo(actor)
    assert memo is not None
    ctx = memory_context(resolve(s, (memo, _memo(critic), _memo(reward))))
    accepted = not rejections(check_config(ctx.r))
    return Evaluated(ctx, memory.all_phases(ctx, worst=False), step_time(ctx), accepted, host_memory(ctx).fits)


def point_of(ev: Evaluated, settings: dict[str, Any], current: bool) -> TradeoffPoint:
    """The point of one evaluated scenario: same fit rule as ``estimate()`` (``calculator.report.verdict``: peak
    <= usable memory, the rollout engine starts, verl accepts the config, host RAM fits) and no step time when the
    engine cannot start; tests/planning/test_tradeoff.py checks points against ``estimate``."""
    peak = max(ev.phases, key=lambda p: p.total_bytes)
    starts = memory.engine_starts(ev.ctx)
    return TradeoffPoint(
        label=point_label(settings),
        settings=settings,
        peak_gib_per_gpu=peak.total_bytes / GIB_BYTES,
        peak_phase=peak.name,
        step_s=ev.time.step_s if starts else None,
        tokens_per_s_per_gpu=ev.time.tokens_per_s_per_gpu if starts else 0.0,
        fits=peak.total_bytes <= ev.ctx.gpu.usable_memory_bytes and starts and ev.accepted and ev.host_fits,
        usable_memory_gib=ev.ctx.gpu.usable_memory_gib,
        is_current=current,
    )


# ---- the sweep ---------------------------------------------------------------------


def sweep_settings(s: Scenario) -> list[dict[str, Any]]:
    """Every combination the sweep evaluates, as dotted settings (the current one included)."""
    fsdp = s.actor.strategy != "megatron"
    axes: list[tuple[list[str], list[Any]]] = [
        (ckpt_keys(s), [False, True] if fsdp else [s.model.enable_gradient_checkpointing]),
        (["model.enable_activation_offload"], [False, True] if fsdp else [s.model.enable_activation_offload]),
        (offload_keys(s, "param_offload"), [False, True]),
        (offload_keys(s, "optimizer_offload"), [False, True]),
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


def is_current(s: Scenario, settings: dict[str, Any]) -> bool:
    return all(current_value(s, k) == v for k, v in settings.items())


def full_sweep(s: Scenario) -> list[TradeoffPoint]:
    """Every combination of :func:`sweep_settings` evaluated on its own (``calculator.planning.sweep_combine``
    gives the same points faster); the current scenario's point is flagged."""
    points = []
    sections: dict[tuple[int, str], BaseModel] = {}
    for settings in sweep_settings(s):
        current = is_current(s, settings)
        points.append(point_of(evaluate(s if current else apply_settings(s, settings, sections)), settings, current))
    return points
