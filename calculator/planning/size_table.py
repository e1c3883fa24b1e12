"""The seeds' table "model size x algorithm -> minimum / recommended GPUs": one workload, one GPU type,
each model preset under GRPO, PPO and GRPO + LoRA, searched like a row of the hardware plan."""

from __future__ import annotations

import time
from typing import Any

from pydantic import Field

from calculator.errors import InputError
from calculator.inputs.presets import get_gpu, model_presets
from calculator.inputs.scenario import Scenario
from calculator.loading import load_scenario
from calculator.planning.fit import DEFAULT_MARGIN
from calculator.planning.layout_search import LayoutCaches, search_gpu_layouts
from calculator.planning.planner import DEFAULT_MAX_GPUS, check_plan_inputs, dtype_problem, resolve_scenario
from calculator.planning.recommend import GpuResult, search_gpu
from calculator.planning.rows import FrozenModel, RecommendedConfig, recommended_config, unfit_note
from calculator.planning.settings import Setting
from calculator.planning.space import LORA_RANK
from calculator.planning.table import format_cell, md_escape

SIZE_TABLE_MODELS = ("qwen2.5-1.5b", "qwen2.5-3b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b", "qwen2.5-72b")
SIZE_TABLE_ALGORITHMS = ("GRPO", "PPO", "GRPO + LoRA")
GRPO_DEFAULT_N = 5  # verl's GRPO examples (examples/grpo_trainer/run_qwen2-7b.sh): rollout.n=5


class SizeRow(FrozenModel):
    """One model x algorithm: fewest GPUs of the chosen type and the recommended configuration."""

    model: str = Field(description="Model preset id.")
    model_name: str
    total_params: int
    algorithm: str
    min_gpus: int | None
    min_settings: dict[str, Setting]
    recommended: RecommendedConfig | None
    note: str = ""


class SizeTable(FrozenModel):
    """The seeds' table "model size x algorithm -> minimum / recommended GPUs", computed for one workload
    and one GPU type."""

    gpu: str
    gpu_name: str
    workload: str = Field(description="Prompts, responses per prompt, lengths: the same for every row.")
    rows: list[SizeRow]
    margin: float
    max_gpus: int
    elapsed_s: float


def _as_ppo(d: dict[str, Any], base: Scenario) -> None:
    """PPO keeps the number of sequences per step: one response per prompt, ``train_batch_size x n``
    prompts (mini-batch likewise)."""
    n = base.rollout.n
    d["algorithm"]["adv_estimator"] = "gae"
    d["critic"]["enable"] = None
    d["rollout"]["n"] = 1
    d["data"]["train_batch_size"] = base.data.train_batch_size * n
    if base.data.gen_batch_size:
        d["data"]["gen_batch_size"] = base.data.gen_batch_size * n
    d["actor"]["ppo_mini_batch_size"] = base.actor.ppo_mini_batch_size * n
    if base.critic.ppo_mini_batch_size:
        d["critic"]["ppo_mini_batch_size"] = base.critic.ppo_mini_batch_size * n
    d["model"]["lora_rank"] = 0


def _as_grpo(d: dict[str, Any], base: Scenario, lora: bool) -> str:
    """GRPO needs a group: with n = 1, n becomes ``GRPO_DEFAULT_N`` and the batch shrinks to match. Returns
    a note when it does."""
    note = ""
    d["algorithm"]["adv_estimator"] = "grpo"
    d["critic"]["enable"] = None  # GRPO: no critic
    if base.rollout.n == 1:
        d["rollout"]["n"] = GRPO_DEFAULT_N
        d["data"]["train_batch_size"] = max(1, base.data.train_batch_size // GRPO_DEFAULT_N)
        d["actor"]["ppo_mini_batch_size"] = max(1, base.actor.ppo_mini_batch_size // GRPO_DEFAULT_N)
        d["data"]["gen_batch_size"] = None
        note = f"GRPO needs n > 1: n = {GRPO_DEFAULT_N} with train_batch_size / {GRPO_DEFAULT_N}"
    d["model"]["lora_rank"] = (base.model.lora_rank or LORA_RANK) if lora else 0
    return note


def _variant(base: Scenario, model_id: str, algorithm: str) -> tuple[Scenario, str]:
    """The base workload with another model and algorithm, and a note on what had to change."""
    d = base.model_dump(mode="python")
    d["model"]["path"], d["model"]["config"] = model_id, None
    d["critic"]["model_path"] = None
    note = ""
    if algorithm == "PPO":
        _as_ppo(d, base)
    else:
        note = _as_grpo(d, base, lora=algorithm.endswith("LoRA"))
    d["model"]["use_dora"] = False
    return load_scenario(d), note


def _check_choices(models: tuple[str, ...], algorithms: tuple[str, ...], known: dict[str, Any]) -> None:
    bad = [m for m in models if m not in known]
    if bad:
        raise InputError([f"models: unknown model preset {m!r}" for m in bad])
    bad = [a for a in algorithms if a not in SIZE_TABLE_ALGORITHMS]
    if bad:
        raise InputError([f"algorithms: {a!r} is not one of {', '.join(SIZE_TABLE_ALGORITHMS)}" for a in bad])


def _workload(base: Scenario) -> str:
    d = base.data
    return (
        f"{d.train_batch_size} prompts x {base.rollout.n} responses (PPO: {d.train_batch_size * base.rollout.n} x 1), "
        f"prompt <= {d.max_prompt_length}, response <= {d.max_response_length} tokens"
    )


def _search(s: Scenario, gpu_id: str, max_gpus: int, margin: float) -> GpuResult:
    """One cell's search, as ``plan`` runs it (a Megatron actor's layouts too: calculator.planning.layout_search)."""
    kw = {"max_gpus": max_gpus, "margin": margin, "allow_lora": False}
    if s.actor.strategy == "megatron":
        return search_gpu_layouts(s, gpu_id, caches=LayoutCaches.for_scenario(s), **kw)  # type: ignore[arg-type]
    return search_gpu(s, gpu_id, **kw)  # type: ignore[arg-type]


def size_table(
    base_scenario: Scenario | str | dict[str, Any],
    gpu_id: str,
    models: tuple[str, ...] = SIZE_TABLE_MODELS,
    algorithms: tuple[str, ...] = SIZE_TABLE_ALGORITHMS,
    max_gpus: int = DEFAULT_MAX_GPUS,
    margin: float = DEFAULT_MARGIN,
) -> SizeTable:
    """Minimum and recommended GPU counts of one GPU type for each model x algorithm, at the base
    scenario's workload (batch, n, lengths) and settings."""
    t0 = time.perf_counter()
    check_plan_inputs(max_gpus, margin)
    base = resolve_scenario(base_scenario)
    gpu = get_gpu(gpu_id, "gpu_id")
    known = model_presets(strict=False)
    _check_choices(models, algorithms, known)
    rows = []
    for mid in models:
        for alg in algorithms:
            s, note = _variant(base, mid, alg)
            excluded = dtype_problem(s, gpu)
            res = None if excluded else _search(s, gpu.id, max_gpus, margin)
            minimum = recommended_config(res.minimum, s, gpu.hourly_price_usd) if res and res.minimum else None
            rec = recommended_config(res.recommended, s, gpu.hourly_price_usd) if res and res.recommended else None
            why = excluded or unfit_note(res, max_gpus, s)  # type: ignore[arg-type]
            rows.append(
                SizeRow(
                    model=mid,
                    model_name=known[mid].name,
                    total_params=known[mid].architecture.total_params(),
                    algorithm=alg,
                    min_gpus=minimum.num_gpus if minimum else None,
                    min_settings=minimum.settings if minimum else {},
                    recommended=rec,
                    note="; ".join(x for x in (note, why) if x),
                )
            )
    return SizeTable(
        gpu=gpu.id,
        gpu_name=gpu.name,
        workload=_workload(base),
        rows=rows,
        margin=margin,
        max_gpus=max_gpus,
        elapsed_s=time.perf_counter() - t0,
    )


def size_table_to_markdown(t: SizeTable) -> str:
    """The size table as Markdown: model | algorithm | minimum | recommended (GPUs of the chosen type)."""
    lines = [
        f"{t.gpu_name}, {t.workload}, margin {t.margin:.0%}",
        "",
        "| model | algorithm | minimum | recommended | step s | USD/step | note |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for r in t.rows:
        rec = r.recommended
        lines.append(
            "| "
            + " | ".join(
                [
                    r.model_name,
                    r.algorithm,
                    f"{r.min_gpus} x {t.gpu}" if r.min_gpus else f"> {t.max_gpus}",
                    f"{rec.num_gpus} x {t.gpu}" if rec else "",
                    format_cell(rec.step_s if rec else None, 1),
                    format_cell(rec.cost_per_step if rec else None, 4),
                    md_escape(r.note),
                ]
            )
            + " |"
        )
    return "\n".join(lines) + "\n"


__all__ = [
    "GRPO_DEFAULT_N",
    "SIZE_TABLE_ALGORITHMS",
    "SIZE_TABLE_MODELS",
    "SizeRow",
    "SizeTable",
    "size_table",
    "size_table_to_markdown",
]
