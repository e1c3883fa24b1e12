"""What the planner reports for one GPU type: the smallest feasible count (with its fastest configuration)
and the recommended one, the lowest cost per step among the fastest configurations at 1x, 2x and 4x that
count. The search itself is :class:`calculator.planning.search.GpuSearch`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from calculator.inputs.hardware import GpuSpec
from calculator.inputs.scenario import Scenario
from calculator.planning.search import GpuSearch
from calculator.planning.shared import SharedCandidates
from calculator.planning.space import Evaluation

# Counts tried for the recommended configuration: the minimum and its double and quadruple (the first
# valid ladder count at or above each). Past 4x the minimum the per-step cost only grows in practice
# (step time falls less than linearly: rollout long tail, collectives across nodes); the search also
# stops early once a larger count costs more per step than the previous one.
RECOMMEND_MULTIPLES = (1, 2, 4)


@dataclass(frozen=True)
class GpuResult:
    """What the search found for one GPU type."""

    gpu: GpuSpec
    minimum: Evaluation | None  # fastest configuration found at the smallest feasible count
    recommended: Evaluation | None  # lowest cost per step over RECOMMEND_MULTIPLES x minimum
    candidates: tuple[Evaluation, ...]  # the fastest configuration found at each count tried
    counts: tuple[int, ...]  # valid counts of the ladder
    largest_tried: Evaluation | None  # when nothing fits: the frontier at the largest count (for the note)
    num_estimates: int
    num_layouts: int = 1  # Megatron layouts searched (calculator.planning.layout_search); 1 otherwise
    own_min_gpus: int | None = None  # Megatron: the scenario's own layout's minimum count (None: fits nowhere)


def cost_per_step_usd(step_s: float, num_gpus: int, hourly_price_usd: float) -> float:
    """GPU-hours of one step times the (editable, example) price per GPU-hour."""
    return step_s * num_gpus * hourly_price_usd / 3600.0


def selection_key(ev: Evaluation, base_lora: bool, hourly_price_usd: float) -> tuple[Any, ...]:
    """Ranking of configurations: full fine-tuning before LoRA the user did not ask for, then the lowest
    cost per step (``step_s x num_gpus x price / 3600``), then the shorter step, then fewer GPUs. Without
    a step time the cost is unknown and the fewest GPUs win."""
    adds_lora = ev.knobs.lora and not base_lora
    step = ev.step_s
    cost = cost_per_step_usd(step, ev.knobs.num_gpus, hourly_price_usd) if step is not None else float("inf")
    return (adds_lora, cost, step if step is not None else float("inf"), ev.knobs.num_gpus)


def _larger_counts(minimum: int, counts: list[int]) -> list[int]:
    """The first valid count at or above each multiple of the minimum (besides the minimum itself)."""
    targets: list[int] = []
    for m in RECOMMEND_MULTIPLES[1:]:
        n = next((x for x in counts if x >= m * minimum), None)
        if n is not None and n not in targets and n != minimum:
            targets.append(n)
    return targets


def unfit_result(srch: GpuSearch, counts: list[int], num_estimates: int, num_layouts: int = 1) -> GpuResult:
    """Nothing fits up to max_gpus: the frontier at the largest valid count (for the note)."""
    top = srch.frontier(counts[-1]) if counts else []
    largest = srch.evaluate(top[0]) if top else None
    return GpuResult(srch.gpu, None, None, (), tuple(counts), largest, num_estimates, num_layouts)


def fastest_candidates(srch: GpuSearch, first: Evaluation, counts: list[int]) -> list[Evaluation]:
    """The fastest configuration found at the minimum count (``first`` fits there), then at the first valid
    ``counts`` at or above 2x and 4x it, stopping once one costs more per step than the one before."""
    srch.shared.minima[srch.gpu.usable_memory_gib] = first.knobs.num_gpus  # the next GPU types' guess
    minimum = srch.relax(first)
    price = srch.gpu.hourly_price_usd
    base_lora = srch.base.model.lora_rank > 0
    candidates = [minimum]
    if minimum.step_s is not None:
        for n in _larger_counts(minimum.knobs.num_gpus, counts):
            ev = srch.at_count(n, hint=candidates[-1].knobs)
            if ev is None:
                continue
            worse = selection_key(ev, base_lora, price) > selection_key(candidates[-1], base_lora, price)
            candidates.append(ev)
            if worse:
                break
    return candidates


def search_gpu(
    base: Scenario,
    gpu_id: str,
    *,
    max_gpus: int,
    margin: float,
    allow_lora: bool,
    shared: SharedCandidates | None = None,
) -> GpuResult:
    """Smallest feasible GPU count of one type (with its fastest configuration) and the recommended
    (cheapest per step) configuration for ``base``'s model, algorithm and workload. ``shared``: the caches
    of the plan's other GPU types (``calculator.planning.shared``; the result is the same without them)."""
    srch = GpuSearch(base, gpu_id, max_gpus=max_gpus, margin=margin, allow_lora=allow_lora, shared=shared)
    first, counts = srch.min_count(guess=srch.shared.count_guess(srch.gpu))
    if first is None:
        return unfit_result(srch, counts, srch.num_estimates)
    candidates = fastest_candidates(srch, first, counts)
    price, base_lora = srch.gpu.hourly_price_usd, base.model.lora_rank > 0
    recommended = min(candidates, key=lambda e: selection_key(e, base_lora, price))
    return GpuResult(srch.gpu, candidates[0], recommended, tuple(candidates), tuple(counts), None, srch.num_estimates)


__all__ = [
    "RECOMMEND_MULTIPLES",
    "GpuResult",
    "cost_per_step_usd",
    "fastest_candidates",
    "search_gpu",
    "selection_key",
    "unfit_result",
]
