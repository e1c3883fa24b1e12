"""Hardware planner (issue #6, DESIGN.md 1 Q4 and 6.4): for each GPU type, the fewest GPUs that fit
and the recommended configuration, with the verl overrides that realise them.

    from calculator import load_scenario, plan
    p = plan(load_scenario("qwen2.5-7b-grpo-8xh100"), gpus=["h100-80gb", "a100-80gb"])
    p.model_dump(mode="json")   # {"rows": [...], "elapsed_s": ..., ...}  (DESIGN.md 6.4)

Rules (the search itself is in ``calculator.planning.search``; its docstring has the sources):

- **Fits**: expected peak <= usable x (1 - margin), worst case (every sequence at max length) <= usable,
  the rollout engine starts, and its KV cache holds one ``max_model_len`` sequence.
- **Searched**: GPU counts 1, 2, 4 ... up to a node, then whole nodes up to ``max_gpus`` (counts verl
  would reject for their batch split are skipped) x param / optimizer offload, activation offload,
  gradient checkpointing, fused kernels, entropy chunking, micro-batch size or dynamic token budget,
  Ulysses SP, rollout TP, ``gpu_memory_utilization``, ``max_model_len`` capped at prompt + response,
  ``free_cache_engine``, full FSDP sharding, and LoRA (rank 64) only with ``allow_lora``.
- **Megatron layouts**: a Megatron actor's TP / PP / EP are searched too (``calculator.planning.layouts`` lists
  the valid layouts and their bounds, ``calculator.planning.layout_search`` searches them): the scenario's layout
  first, another only where it gives fewer GPUs; ties keep the scenario's layout, then less model parallelism.
- **min_gpus**: the smallest searched count at which any searched configuration fits;
  ``min_settings`` is the fastest configuration found at that count.
- **recommended**: among the fastest configurations found at the minimum count and at 2x and 4x it,
  the lowest cost per step = ``step_s x num_gpus x hourly_price_usd / 3600``; ties go to the shorter
  step, then to fewer GPUs. Full fine-tuning is preferred to a LoRA the user did not configure. Without
  a step time (no throughput model) the minimum-count configuration is recommended.
- **dtype**: a GPU without bf16 tensor cores (V100) is excluded while the run uses bf16 (:func:`dtype_problem`).
- **Prices** are the GPU presets' ``hourly_price_usd`` (EXAMPLE on-demand prices), overridable per call.

``settings`` hold verl override keys (``calculator.verl.native_to_verl_items``) whose values differ from
the input scenario; ``verl_overrides`` adds the cluster shape
(``trainer.n_gpus_per_node``, ``trainer.nnodes``) as ``key=value`` lines for a launch script.

This module is the driver (input checks, one search per GPU type, row order; the searches share candidates, and
GPU types with equal memory share memory estimates: ``calculator.planning.shared``). The pieces:
``calculator.planning.recommend`` (one GPU type: minimum and recommended configuration),
``rows`` (the result models), ``settings`` (verl settings and cluster shape), ``table`` (flat rows),
``formats`` (CSV, Markdown) and ``size_table`` (model size x algorithm).
"""

from __future__ import annotations

import time
from typing import Any

from calculator.errors import InputError
from calculator.inputs.hardware import GpuSpec
from calculator.inputs.placement import PlacementSection
from calculator.inputs.presets import get_gpu, gpu_presets
from calculator.inputs.scenario import Scenario
from calculator.loading import load_scenario
from calculator.planning.defaults import DEFAULT_MAX_GPUS
from calculator.planning.fit import DEFAULT_MARGIN
from calculator.planning.layout_search import LayoutCaches, search_gpu_layouts
from calculator.planning.placement import SPLIT_MODES, split_row_fields
from calculator.planning.recommend import search_gpu
from calculator.planning.rows import PLAN_RULES, Plan, excluded_row, megatron_layout_rule, plan_row, sort_key
from calculator.planning.shared import SharedCandidates
from calculator.resolve.architectures import model_name

MAX_MAX_GPUS = 65536  # HardwareSection.num_gpus upper bound


def check_plan_inputs(max_gpus: int, margin: float) -> None:
    """Raise :class:`InputError` naming every bad ``max_gpus`` / ``margin``."""
    problems = []
    if isinstance(max_gpus, bool) or not isinstance(max_gpus, int) or not 1 <= max_gpus <= MAX_MAX_GPUS:
        problems.append(f"max_gpus: must be an integer from 1 to {MAX_MAX_GPUS} (got {max_gpus!r})")
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 <= margin < 1:
        problems.append(f"margin: must be a fraction in [0, 1) of usable memory (got {margin!r})")
    if problems:
        raise InputError(problems)


def resolve_scenario(scenario: Scenario | str | dict[str, Any]) -> Scenario:
    """A Scenario as is; a preset name, file or mapping through :func:`load_scenario`."""
    return scenario if isinstance(scenario, Scenario) else load_scenario(scenario)


def dtype_problem(s: Scenario, gpu: GpuSpec) -> str | None:
    """Why ``gpu`` cannot run the scenario's 16-bit dtype, or None. verl 0.9.1 runs bf16 by default (rollout
    ``dtype: bfloat16``, ``verl/workers/config/rollout.py``; FSDP ``mixed_precision.param_dtype: bf16``,
    ``verl/trainer/config/ppo_trainer.yaml``) and vLLM refuses bfloat16 below compute capability 8.0
    (``vllm/platforms/interface.py`` ``check_if_supports_dtype``: "Bfloat16 is only supported on GPUs with
    compute capability of at least 8.0"). A GPU preset without bf16 tensor cores (``bf16_dense_tflops`` null,
    e.g. V100) is excluded rather than planned with bf16. verl accepts float16 (``verl/workers/config/engine.py``
    ``dtype: ["bfloat16", "float16"]``), but rlplan does not switch the trainer's dtype for you."""
    if s.rollout.dtype == "bfloat16" and gpu.bf16_dense_tflops is None:
        return (
            f"excluded: {gpu.name} has no bf16 (vLLM refuses bfloat16 below compute capability 8.0; verl runs bf16 "
            "by default); to plan it, set rollout.dtype=float16 and the trainer's fsdp dtype to float16"
        )
    return None


def _gpu_ids(gpus: list[str] | None) -> list[str]:
    if gpus is None:
        return sorted(gpu_presets(strict=False))  # a broken team GPU file is skipped, not fatal
    if isinstance(gpus, str) or not gpus:
        raise InputError("gpus: give a non-empty list of GPU preset ids")
    problems, ids = [], []
    for g in gpus:
        try:
            ids.append(get_gpu(str(g), "gpus").id)
        except InputError as err:
            problems += err.problems
    if problems:
        raise InputError(problems)
    return list(dict.fromkeys(ids))


def _checked_inputs(
    gpus: list[str] | None, max_gpus: int, margin: float, hourly_prices_usd: dict[str, float] | None
) -> tuple[list[str], dict[str, float]]:
    """The GPU ids and price overrides of a :func:`plan` call; one :class:`InputError` listing every problem."""
    problems: list[str] = []
    ids: list[str] = []
    for check in (lambda: check_plan_inputs(max_gpus, margin), lambda: ids.extend(_gpu_ids(gpus))):
        try:
            check()
        except InputError as err:
            problems += err.problems
    prices = dict(hourly_prices_usd or {})
    for gid, price in prices.items():
        if not isinstance(price, int | float) or isinstance(price, bool) or price < 0:
            problems.append(f"hourly_prices_usd.{gid}: must be a non-negative number (got {price!r})")
    if problems:
        raise InputError(problems)
    return ids, prices


def plan(
    scenario: Scenario | str | dict[str, Any],
    gpus: list[str] | None = None,
    max_gpus: int = DEFAULT_MAX_GPUS,
    margin: float = DEFAULT_MARGIN,
    allow_lora: bool = False,
    hourly_prices_usd: dict[str, float] | None = None,
    placement: str | None = None,
) -> Plan:
    """The recommended-hardware table for the scenario's model, algorithm and workload: one row per GPU
    type (all presets by default). ``hourly_prices_usd`` overrides preset prices by GPU id. Raises
    :class:`InputError` on bad input. ``placement`` one_step_off / fully_async (default: the scenario's own
    ``placement.mode``) adds to each row the cheapest split of its recommended GPUs into rollout and trainer pools
    (``calculator.planning.placement``); the colocated search always runs on the scenario made colocated."""
    t0 = time.perf_counter()
    ids, prices = _checked_inputs(gpus, max_gpus, margin, hourly_prices_usd)
    s = resolve_scenario(scenario)
    placement = placement or s.placement.mode
    if placement not in ("colocated", *SPLIT_MODES):
        raise InputError(f"placement: must be one of colocated, {', '.join(SPLIT_MODES)} (got {placement!r})")
    if s.placement.split:  # the search varies the GPUs and rollout TP; the split is searched per row below
        s = s.model_copy(update={"placement": PlacementSection()})
    rows = []
    has_time = True
    total = 0
    shared = SharedCandidates()  # GPU types with the same memory share candidates' memory estimates
    # A Megatron actor: every layout (TP / PP / EP) keeps its own shared caches (calculator.planning.layout_search).
    layouts = LayoutCaches.for_scenario(s) if s.actor.strategy == "megatron" else None
    for gid in ids:
        gpu = get_gpu(gid, "gpus")
        why = dtype_problem(s, gpu)
        if why is not None:
            rows.append(excluded_row(gpu, float(prices.get(gid, gpu.hourly_price_usd)), why))
            continue
        if layouts is not None:
            res = search_gpu_layouts(s, gid, max_gpus=max_gpus, margin=margin, allow_lora=allow_lora, caches=layouts)
        else:
            res = search_gpu(s, gid, max_gpus=max_gpus, margin=margin, allow_lora=allow_lora, shared=shared)
        price = float(prices.get(gid, res.gpu.hourly_price_usd))
        row = plan_row(res, s, price, max_gpus)
        if placement != "colocated":
            split, n = split_row_fields(res.recommended, s, placement, margin, price)
            row, total = row.model_copy(update={"split": split}), total + n
        rows.append(row)
        total += res.num_estimates
        if res.minimum is not None and res.minimum.step_s is None:
            has_time = False
    rows.sort(key=sort_key)
    return Plan(
        rows=rows,
        elapsed_s=time.perf_counter() - t0,
        scenario=s.name,
        model=model_name(s),
        margin=margin,
        max_gpus=max_gpus,
        allow_lora=allow_lora,
        has_step_time=has_time,
        num_estimates=total,
        rules=PLAN_RULES + (megatron_layout_rule() if layouts is not None else ""),
        placement=None if placement == "colocated" else placement,
    )


__all__ = ["DEFAULT_MAX_GPUS", "MAX_MAX_GPUS", "check_plan_inputs", "dtype_problem", "plan", "resolve_scenario"]
