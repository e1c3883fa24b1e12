"""What a run measured: robust per-phase times, lengths and memory over the steps after the warm-up.

verl's timers (``marked_timer`` in ``verl/trainer/ppo/ray_trainer.py``, 0.9.1) map to the report's phases
(DESIGN.md 4.7, 6.5): ``gen`` -> ``rollout``, ``reward`` -> ``reward``, ``old_log_prob`` -> ``old_log_prob``,
``ref`` (``str(Role.RefPolicy)``) -> ``ref_log_prob``, ``values`` -> ``critic_values``, ``update_critic`` ->
``update_critic``, ``update_actor`` -> ``update_actor``, ``update_weights`` -> ``weight_sync``. ``adv``,
``testing``, ``save_checkpoint`` and the profiler timers are not phases of the model; they are reported and taken
out of the measured step (``timing_s/step`` minus ``testing`` and ``save_checkpoint``).

Statistics: the median and the median absolute deviation (MAD) over the kept steps, so that one slow step (a
checkpoint, a straggler node) does not move the figure; the relative standard error of the median is taken as
``1.4826 x MAD / median / sqrt(n)`` (the normal-consistent MAD). The first ``warmup`` steps are dropped: the first
step compiles kernels, captures CUDA graphs, creates the optimizer state and grows the allocator's pool.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from calculator.calibration.logs import RunLog
from calculator.errors import InputError

PHASE_OF_TIMER: dict[str, str] = {
    "gen": "rollout",
    "generate_async": "rollout",  # experimental/one_step_off_policy/ray_trainer.py: the awaited generation
    "reward": "reward",
    "old_log_prob": "old_log_prob",
    "ref": "ref_log_prob",
    "values": "critic_values",
    "update_critic": "update_critic",
    "update_actor": "update_actor",
    "update_weights": "weight_sync",
    "sync_rollout_weights": "weight_sync",  # one_step_off_policy: the NCCL broadcast to the rollout pool
    "param_sync": "weight_sync",  # fully_async_trainer.py: marked_timer("timing_s/param_sync")
}
# Every other timer verl 0.9.1 records (``marked_timer`` in trainer/ppo/ray_trainer.py, trainer/ppo/v1/*.py,
# experimental/{one_step_off,fully_async}_policy/*.py) and why it is no phase of the model; each is reported as
# measured ("unmodelled_s"). No ``reshard`` timer exists in verl 0.5-0.9.1 (the resharding is inside
# ``update_weights`` / the sharding manager's wake-up, i.e. the weight_sync phase).
NOT_A_PHASE: dict[str, str] = {
    "step": "the whole step (compared with the predicted step)",
    "adv": "advantage estimation on the driver (CPU, milliseconds); not modelled",
    "testing": "validation, outside the training step",
    "save_checkpoint": "checkpointing, outside the training step",
    "start_profile": "profiler control",
    "stop_profile": "profiler control",
    "dump_rollout_generations": "writes the generations to disk",
    "switch_to_rollout": "separate_async hybrid: engine wake-up / balancer registration (no phase of its own)",
    "switch_to_trainer": "separate_async hybrid: engine sleep / abort",
    "switch_wait": "separate_async: waiting for the pool switch",
    "wait_for_enough_samples": "fully_async trainer idle, waiting for the rollouter",
    "wait_prev_gen": "one_step_off (older recipe): waiting for the previous step's generation",
    "gen (trainer wait)": "fully_async: the trainer's wait for samples (logged as timing_s/gen)",
}
OUTSIDE_STEP_TIMERS = ("testing", "save_checkpoint", "start_profile", "stop_profile", "dump_rollout_generations")
MAD_TO_SIGMA = 1.4826  # normal-consistent MAD (Rousseeuw & Croux 1993)
DEFAULT_WARMUP_STEPS = 1


@dataclass(frozen=True)
class Stat:
    """Median and MAD of one metric over the kept steps."""

    median: float
    mad: float
    num_steps: int

    @property
    def rel_sem(self) -> float:
        """Relative standard error of the median (0 when the median is 0)."""
        if self.median == 0 or self.num_steps == 0:
            return 0.0
        return MAD_TO_SIGMA * self.mad / abs(self.median) / math.sqrt(self.num_steps)


def robust(values: list[float]) -> Stat | None:
    if not values:
        return None
    med = statistics.median(values)
    mad = statistics.median([abs(v - med) for v in values])
    return Stat(med, mad, len(values))


@dataclass(frozen=True)
class Measured:
    """A run's measured figures (seconds, tokens, GiB), from the steps kept after the warm-up."""

    steps_used: tuple[int, ...]
    warmup_steps: tuple[int, ...]
    phases_s: dict[str, Stat]
    other_s: dict[str, Stat]
    step_s: Stat | None
    mean_prompt_length: Stat | None
    mean_response_length: Stat | None
    max_response_length: Stat | None
    allocated_gib: Stat | None
    reserved_gib: Stat | None
    host_used_gib: Stat | None
    throughput_tokens_per_s_per_gpu: Stat | None
    notes: tuple[str, ...] = field(default_factory=tuple)


def _timed_steps(log: RunLog) -> list[int]:
    """Training steps: those with ``timing_s/step`` when the log has it (a validation-only step, e.g. step 0 with
    ``timing_s/testing``, is not a training step), else those with any ``timing_s/*``."""
    stepped = [s for s in log.step_numbers if "timing_s/step" in log.steps[s]]
    return stepped or [s for s in log.step_numbers if any(k.startswith("timing_s/") for k in log.steps[s])]


def _collect(log: RunLog, steps: list[int], key: str) -> Stat | None:
    return robust([log.steps[s][key] for s in steps if key in log.steps[s]])


def _step_time(log: RunLog, steps: list[int]) -> Stat | None:
    values = []
    for s in steps:
        m = log.steps[s]
        if "timing_s/step" in m:
            values.append(m["timing_s/step"] - sum(m.get(f"timing_s/{t}", 0.0) for t in OUTSIDE_STEP_TIMERS))
    return robust(values)


def _split_warmup(timed: list[int], warmup: int | None) -> tuple[list[int], list[int], list[str]]:
    notes: list[str] = []
    if warmup is None:
        warmup = DEFAULT_WARMUP_STEPS if len(timed) > DEFAULT_WARMUP_STEPS + 1 else 0
        if warmup == 0:
            notes.append(f"only {len(timed)} timed step(s): the warm-up step was kept (its time includes compilation)")
    if warmup < 0:
        raise InputError(f"--warmup-steps: must be >= 0, got {warmup}")
    if warmup >= len(timed):
        raise InputError(f"--warmup-steps {warmup}: the log has only {len(timed)} timed step(s); nothing would be left")
    return timed[:warmup], timed[warmup:], notes


def _timer_values(log: RunLog, kept: list[int]) -> dict[str, list[float]]:
    """Timer name -> values over the kept steps; ``timing_s/timing_s/param_sync`` (fully_async's trainer names its
    timer ``timing_s/param_sync``) is read as ``param_sync``."""
    out: dict[str, list[float]] = {}
    for s in kept:
        for k, v in log.steps[s].items():
            if k.startswith("timing_s/"):
                name = k
                while name.startswith("timing_s/"):
                    name = name.removeprefix("timing_s/")
                out.setdefault(name, []).append(v)
    return out


def _phase_stats(log: RunLog, kept: list[int]) -> tuple[dict[str, Stat], dict[str, Stat], list[str]]:
    """(phase stats, other timers' stats, notes). In a fully_async trainer's log (``fully_async/*`` metrics),
    ``timing_s/gen`` is the trainer's wait for samples (``detach_utils.py``: ``idle_ratio = gen / step``), not the
    rollout: it is reported as ``gen (trainer wait)``."""
    values = _timer_values(log, kept)
    fully_async = any(k.startswith("fully_async/") for s in kept for k in log.steps[s])
    notes: list[str] = []
    if fully_async and "gen" in values:
        values["gen (trainer wait)"] = values.pop("gen")
        notes.append("fully_async log: timing_s/gen is the trainer's wait for samples, not the rollout's time")
    phases: dict[str, Stat] = {}
    for t, p in PHASE_OF_TIMER.items():  # the first timer present for a phase (gen before generate_async)
        if p not in phases and t in values:
            phases[p] = robust(values[t])  # type: ignore[assignment]
    known = set(PHASE_OF_TIMER) | {"step"}
    other_s = {t: robust(v) for t, v in sorted(values.items()) if t not in known}
    return phases, {k: v for k, v in other_s.items() if v is not None}, notes


def summarize(log: RunLog, warmup: int | None = None) -> Measured:
    """Robust statistics of a parsed log after dropping ``warmup`` steps (default: 1 when at least 3 are timed)."""
    timed = _timed_steps(log)
    if not timed:
        raise InputError("log: no step has timing_s/* metrics (verl logs them for every training step)")
    dropped, kept, notes = _split_warmup(timed, warmup)
    phases, other_s, more = _phase_stats(log, kept)
    notes += more
    return Measured(
        steps_used=tuple(kept),
        warmup_steps=tuple(dropped),
        phases_s=phases,
        other_s=other_s,
        step_s=_step_time(log, kept),
        mean_prompt_length=_collect(log, kept, "prompt_length/mean"),
        mean_response_length=_collect(log, kept, "response_length/mean"),
        max_response_length=_collect(log, kept, "response_length/max"),
        allocated_gib=_collect(log, kept, "perf/max_memory_allocated_gb"),
        reserved_gib=_collect(log, kept, "perf/max_memory_reserved_gb"),
        host_used_gib=_collect(log, kept, "perf/cpu_memory_used_gb"),
        throughput_tokens_per_s_per_gpu=_collect(log, kept, "perf/throughput"),
        notes=tuple(list(log.notes) + notes),
    )


def measured_from_table(
    phases_s: dict[str, float],
    *,
    step_s: float | None = None,
    mean_prompt_length: float | None = None,
    mean_response_length: float | None = None,
) -> Measured:
    """A :class:`Measured` from published per-phase times (a table in a paper or a README: one value per phase,
    no spread), e.g. to calibrate on a reported run. Phase names are the report's (``rollout``, ``update_actor``...)."""

    def one(v: float | None) -> Stat | None:
        return None if v is None else Stat(float(v), 0.0, 1)

    return Measured(
        steps_used=(),
        warmup_steps=(),
        phases_s={p: Stat(float(v), 0.0, 1) for p, v in phases_s.items()},
        other_s={},
        step_s=one(step_s),
        mean_prompt_length=one(mean_prompt_length),
        mean_response_length=one(mean_response_length),
        max_response_length=None,
        allocated_gib=None,
        reserved_gib=None,
        host_used_gib=None,
        throughput_tokens_per_s_per_gpu=None,
        notes=("from a published table: one value per phase, no step-to-step spread",),
    )
