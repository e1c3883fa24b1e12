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
- **min_gpus**: the smallest searched count at which any searched configuration fits;
  ``min_settings`` is the fastest configuration found at that count.
- **recommended**: among the fastest configurations found at the minimum count and at 2x and 4x it,
  the lowest cost per step = ``step_s x num_gpus x hourly_price_usd / 3600``; ties go to the shorter
  step, then to fewer GPUs. Full fine-tuning is preferred to a LoRA the user did not configure. Without
  a step time (no throughput model) the minimum-count configuration is recommended.
- **Prices** are the GPU presets' ``hourly_price_usd`` (EXAMPLE on-demand prices), overridable per call.

``settings`` hold verl override keys (``calculator.verl.native_to_verl_items``) whose values differ from
the input scenario; ``verl_overrides`` adds the cluster shape
(``trainer.n_gpus_per_node``, ``trainer.nnodes``) as ``key=value`` lines for a launch script.
"""

from __future__ import annotations

import csv
import io
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from calculator.errors import InputError
from calculator.inputs.presets import get_gpu, gpu_presets, model_presets
from calculator.inputs.scenario import Scenario
from calculator.loading import load_scenario
from calculator.planning.fit import DEFAULT_MARGIN
from calculator.planning.search import (
    LORA_RANK,
    Evaluation,
    GpuResult,
    cost_per_step_usd,
    search_gpu,
)
from calculator.resolve.architectures import model_name
from calculator.verl import native_to_verl_items

Setting = bool | int | float | str | None  # the value of one verl override
DEFAULT_MAX_GPUS = 1024
MAX_MAX_GPUS = 65536  # HardwareSection.num_gpus upper bound


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# ---- native field <-> verl key (calculator.verl owns the mapping) -------------------------------------


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in data.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out |= _flatten(v, key + ".")
        else:
            out[key] = v
    return out


def _native_fields(s: Scenario) -> dict[str, Any]:
    return _flatten(s.model_dump(mode="json", exclude={"name": True, "description": True, "model": {"config"}}))


def native_diff(base: Scenario, changed: Scenario) -> dict[str, Setting]:
    """Native dotted fields whose values differ between two scenarios (new values)."""
    a, b = _native_fields(base), _native_fields(changed)
    return {key: b[key] for key in sorted(b) if a.get(key) != b[key]}


def settings_diff(base: Scenario, changed: Scenario) -> dict[str, Setting]:
    """verl override keys whose values differ between two scenarios. The cluster shape
    (``hardware.*``) is left to :func:`cluster_overrides`; rlplan-only fields have no verl key."""
    out: dict[str, Setting] = {}
    for key, value in native_diff(base, changed).items():
        if key.startswith("hardware."):
            continue
        for verl_key, verl_value in native_to_verl_items(key, value, changed):
            out[verl_key] = verl_value
    return out


def format_verl_value(value: Setting) -> str:
    """A value as Hydra reads it on a command line."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def cluster_overrides(num_gpus: int, gpus_per_node: int) -> dict[str, int]:
    """``hardware.num_gpus`` as verl spells it: GPUs per node x nodes (one partial node below a node)."""
    if num_gpus <= gpus_per_node:
        return {"trainer.n_gpus_per_node": num_gpus, "trainer.nnodes": 1}
    return {"trainer.n_gpus_per_node": gpus_per_node, "trainer.nnodes": num_gpus // gpus_per_node}


def verl_override_lines(settings: dict[str, Setting], num_gpus: int, gpus_per_node: int) -> list[str]:
    """``key=value`` lines for a launch script: the cluster shape, then the settings."""
    items = {**cluster_overrides(num_gpus, gpus_per_node), **settings}
    return [f"{k}={format_verl_value(v)}" for k, v in items.items()]


# ---- results --------------------------------------------------------------------------------------


class RecommendedConfig(_Frozen):
    """One configuration of one GPU type: GPU count, verl settings, memory, time and cost."""

    num_gpus: int
    num_nodes: int
    gpus_per_node: int
    settings: dict[str, Setting] = Field(description="verl override keys -> values changed from the input scenario.")
    verl_overrides: list[str] = Field(description="key=value lines for a launch script, cluster shape included.")
    peak_gib_per_gpu: float = Field(description="Expected peak (mean lengths), GiB per GPU.")
    peak_phase: str
    worst_case_gib_per_gpu: float = Field(description="Peak with every sequence at max length, GiB per GPU.")
    usable_memory_gib: float
    headroom_gib: float = Field(description="Usable memory minus the expected peak, GiB per GPU.")
    step_s: float | None = Field(description="Seconds per training step; null without a throughput model.")
    tokens_per_s: float | None
    cost_per_step: float | None = Field(description="USD per step at the hourly price.")
    cost_per_million_tokens: float | None = Field(description="USD per million tokens at the hourly price.")
    hourly_price_usd: float = Field(description="Price per GPU-hour used (an editable example).")
    uses_lora: bool


class PlanRow(_Frozen):
    """One GPU type: the fewest GPUs that fit and the recommended configuration."""

    gpu: str = Field(description="GPU preset id.")
    gpu_name: str
    usable_memory_gib: float
    hourly_price_usd: float
    min_gpus: int | None = Field(description="Fewest GPUs that fit; null when nothing up to max_gpus fits.")
    min_settings: dict[str, Setting] = Field(description="verl overrides of the fastest configuration at min_gpus.")
    min_config: RecommendedConfig | None
    recommended: RecommendedConfig | None
    note: str = ""
    num_estimates: int


class Plan(_Frozen):
    """The recommended-hardware table (DESIGN.md 6.4: ``rows`` and ``elapsed_s`` are the stable keys)."""

    rows: list[PlanRow]
    elapsed_s: float
    scenario: str
    model: str
    margin: float
    max_gpus: int
    allow_lora: bool
    has_step_time: bool = Field(description="False when estimate() gave no step time: costs are null.")
    num_estimates: int
    rules: str = Field(description="How rows were found and ranked.")


PLAN_RULES = (
    "fits = expected peak <= usable x (1 - margin), worst case <= usable, engine starts, KV holds max_model_len; "
    "min_gpus = smallest searched count where any searched setting fits; "
    "recommended = lowest cost per step (step_s x GPUs x hourly price / 3600) among the fastest settings found "
    "at 1x, 2x and 4x min_gpus, ties to the shorter step then fewer GPUs; LoRA only where full fine-tuning does not fit."
)


def _config(ev: Evaluation, base: Scenario, price: float) -> RecommendedConfig:
    r, s = ev.report, ev.scenario
    settings = settings_diff(base, s)
    step = ev.step_s
    tps = r.time.tokens_per_s if r.time is not None else None
    cost = cost_per_step_usd(step, s.hardware.num_gpus, price) if step is not None else None
    per_million = None
    if cost is not None and step and tps:
        per_million = cost / (tps * step / 1e6)
    return RecommendedConfig(
        num_gpus=s.hardware.num_gpus,
        num_nodes=s.hardware.num_nodes,
        gpus_per_node=s.hardware.gpus_per_node,
        settings=settings,
        verl_overrides=verl_override_lines(settings, s.hardware.num_gpus, s.hardware.gpus_per_node),
        peak_gib_per_gpu=r.peak.gib_per_gpu,
        peak_phase=r.peak.phase,
        worst_case_gib_per_gpu=r.peak.worst_case_gib_per_gpu,
        usable_memory_gib=r.peak.usable_memory_gib,
        headroom_gib=r.peak.headroom_gib,
        step_s=step,
        tokens_per_s=tps,
        cost_per_step=cost,
        cost_per_million_tokens=per_million,
        hourly_price_usd=price,
        uses_lora=s.model.lora_rank > 0,
    )


def _note(res: GpuResult, max_gpus: int, base: Scenario) -> str:
    if res.minimum is not None:
        return ""
    if not res.counts:
        seqs = base.data.train_batch_size * base.rollout.n
        return f"no GPU count up to {max_gpus} passes verl's batch rules (train_batch_size x n = {seqs})"
    top = res.largest_tried
    if top is None:
        return f"nothing fits up to {max_gpus} GPUs (no valid configuration at {res.counts[-1]})"
    return f"nothing fits up to {max_gpus} GPUs; most memory-saving at {res.counts[-1]}: " + "; ".join(top.fit.reasons)


def _row(res: GpuResult, base: Scenario, price: float, max_gpus: int) -> PlanRow:
    minimum = _config(res.minimum, base, price) if res.minimum else None
    recommended = _config(res.recommended, base, price) if res.recommended else None
    return PlanRow(
        gpu=res.gpu.id,
        gpu_name=res.gpu.name,
        usable_memory_gib=res.gpu.usable_memory_gib,
        hourly_price_usd=price,
        min_gpus=minimum.num_gpus if minimum else None,
        min_settings=minimum.settings if minimum else {},
        min_config=minimum,
        recommended=recommended,
        note=_note(res, max_gpus, base),
        num_estimates=res.num_estimates,
    )


def check_plan_inputs(max_gpus: int, margin: float) -> None:
    problems = []
    if isinstance(max_gpus, bool) or not isinstance(max_gpus, int) or not 1 <= max_gpus <= MAX_MAX_GPUS:
        problems.append(f"max_gpus: must be an integer from 1 to {MAX_MAX_GPUS} (got {max_gpus!r})")
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 <= margin < 1:
        problems.append(f"margin: must be a fraction in [0, 1) of usable memory (got {margin!r})")
    if problems:
        raise InputError(problems)


def resolve_scenario(scenario: Scenario | str | dict[str, Any]) -> Scenario:
    return scenario if isinstance(scenario, Scenario) else load_scenario(scenario)


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


def sort_key(row: PlanRow) -> tuple[Any, ...]:
    """Default row order: cheapest recommended cost per step first, then fewest GPUs, then GPU id."""
    rec = row.recommended
    cost = rec.cost_per_step if rec is not None and rec.cost_per_step is not None else float("inf")
    return (rec is None, cost, row.min_gpus if row.min_gpus is not None else float("inf"), row.gpu)


def plan(
    scenario: Scenario | str | dict[str, Any],
    gpus: list[str] | None = None,
    max_gpus: int = DEFAULT_MAX_GPUS,
    margin: float = DEFAULT_MARGIN,
    allow_lora: bool = False,
    hourly_prices_usd: dict[str, float] | None = None,
) -> Plan:
    """The recommended-hardware table for the scenario's model, algorithm and workload: one row per GPU
    type (all presets by default). ``hourly_prices_usd`` overrides preset prices by GPU id. Raises
    :class:`InputError` on bad input."""
    t0 = time.perf_counter()
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
    s = resolve_scenario(scenario)
    rows = []
    has_time = True
    total = 0
    for gid in ids:
        res = search_gpu(s, gid, max_gpus=max_gpus, margin=margin, allow_lora=allow_lora)
        price = float(prices.get(gid, res.gpu.hourly_price_usd))
        rows.append(_row(res, s, price, max_gpus))
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
        rules=PLAN_RULES,
    )


# ---- flat table, CSV and Markdown -----------------------------------------------------------------

PlanColumn = Literal[
    "gpu",
    "gpu_name",
    "min_gpus",
    "min_settings",
    "recommended_gpus",
    "recommended_settings",
    "peak_gib_per_gpu",
    "step_s",
    "tokens_per_s",
    "cost_per_step_usd",
    "cost_per_million_tokens_usd",
    "hourly_price_usd",
    "note",
]


class PlanTableRow(_Frozen):
    """One row of the recommended-hardware table, flat (what a sortable table or a CSV shows)."""

    gpu: str
    gpu_name: str
    min_gpus: int | None
    min_settings: str
    recommended_gpus: int | None
    recommended_settings: str
    peak_gib_per_gpu: float | None
    step_s: float | None
    tokens_per_s: float | None
    cost_per_step_usd: float | None
    cost_per_million_tokens_usd: float | None
    hourly_price_usd: float
    note: str


def _settings_text(settings: dict[str, Setting]) -> str:
    return " ".join(f"{k}={format_verl_value(v)}" for k, v in settings.items()) or "(as configured)"


def plan_table(p: Plan, sort_by: PlanColumn | None = None, descending: bool = False) -> list[PlanTableRow]:
    """The plan as flat rows, in the plan's order or sorted by one column (empty values last)."""
    out = []
    for r in p.rows:
        rec = r.recommended
        out.append(
            PlanTableRow(
                gpu=r.gpu,
                gpu_name=r.gpu_name,
                min_gpus=r.min_gpus,
                min_settings=_settings_text(r.min_settings) if r.min_gpus is not None else "",
                recommended_gpus=rec.num_gpus if rec else None,
                recommended_settings=_settings_text(rec.settings) if rec else "",
                peak_gib_per_gpu=rec.peak_gib_per_gpu if rec else None,
                step_s=rec.step_s if rec else None,
                tokens_per_s=rec.tokens_per_s if rec else None,
                cost_per_step_usd=rec.cost_per_step if rec else None,
                cost_per_million_tokens_usd=rec.cost_per_million_tokens if rec else None,
                hourly_price_usd=r.hourly_price_usd,
                note=r.note,
            )
        )
    if sort_by is not None:
        if sort_by not in PlanTableRow.model_fields:
            raise InputError(f"sort_by: unknown column {sort_by!r} (columns: {', '.join(PlanTableRow.model_fields)})")
        present = [r for r in out if getattr(r, sort_by) is not None]
        missing = [r for r in out if getattr(r, sort_by) is None]
        present.sort(key=lambda r: getattr(r, sort_by), reverse=descending)
        out = present + missing
    return out


def _cell(value: Any, digits: int) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


_DIGITS = {
    "peak_gib_per_gpu": 2,
    "step_s": 1,
    "tokens_per_s": 0,
    "cost_per_step_usd": 4,
    "cost_per_million_tokens_usd": 3,
    "hourly_price_usd": 2,
}


def plan_to_csv(p: Plan) -> str:
    """The table as CSV (header = PlanTableRow field names; empty cell = no value)."""
    buf = io.StringIO()
    fields = list(PlanTableRow.model_fields)
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(fields)
    for row in plan_table(p):
        w.writerow([_cell(getattr(row, f), _DIGITS.get(f, 6)) for f in fields])
    return buf.getvalue()


_MD_HEADERS = {
    "gpu": "GPU",
    "min_gpus": "min GPUs",
    "min_settings": "settings at min",
    "recommended_gpus": "recommended GPUs",
    "recommended_settings": "recommended settings",
    "peak_gib_per_gpu": "peak GiB/GPU",
    "step_s": "step s",
    "tokens_per_s": "tokens/s",
    "cost_per_step_usd": "USD/step",
    "cost_per_million_tokens_usd": "USD/M tokens",
    "hourly_price_usd": "USD/GPU-h",
    "note": "note",
}


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def plan_to_markdown(p: Plan) -> str:
    """The table as GitHub Markdown, with the scenario, margin and rules above it."""
    cols = list(_MD_HEADERS)
    lines = [
        f"**{p.model}** ({p.scenario}), margin {p.margin:.0%}, up to {p.max_gpus} GPUs"
        + ("" if p.has_step_time else " (no step-time model: costs not computed)"),
        "",
        "| " + " | ".join(_MD_HEADERS[c] for c in cols) + " |",
        "|" + "|".join("---:" if c in _DIGITS or c.endswith("gpus") else "---" for c in cols) + "|",
    ]
    for row in plan_table(p):
        cells = []
        for c in cols:
            v = getattr(row, c)
            cells.append(_md_escape(f"`{v}`" if c.endswith("settings") and v else _cell(v, _DIGITS.get(c, 6))))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Rules: {p.rules} Prices are editable examples."]
    return "\n".join(lines) + "\n"


# ---- model size x algorithm table (the seeds' "minimum / recommended GPUs" table) -------------------

SIZE_TABLE_MODELS = ("qwen2.5-1.5b", "qwen2.5-3b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b", "qwen2.5-72b")
SIZE_TABLE_ALGORITHMS = ("GRPO", "PPO", "GRPO + LoRA")
GRPO_DEFAULT_N = 5  # verl's GRPO examples (examples/grpo_trainer/run_qwen2-7b.sh): rollout.n=5


class SizeRow(_Frozen):
    """One model x algorithm: fewest GPUs of the chosen type and the recommended configuration."""

    model: str = Field(description="Model preset id.")
    model_name: str
    total_params: int
    algorithm: str
    min_gpus: int | None
    min_settings: dict[str, Setting]
    recommended: RecommendedConfig | None
    note: str = ""


class SizeTable(_Frozen):
    """The seeds' table "model size x algorithm -> minimum / recommended GPUs", computed for one workload
    and one GPU type."""

    gpu: str
    gpu_name: str
    workload: str = Field(description="Prompts, responses per prompt, lengths: the same for every row.")
    rows: list[SizeRow]
    margin: float
    max_gpus: int
    elapsed_s: float


def _variant(base: Scenario, model_id: str, algorithm: str) -> tuple[Scenario, str]:
    """The base workload with another model and algorithm. PPO keeps the number of sequences per step:
    one response per prompt, ``train_batch_size x n`` prompts (mini-batch likewise)."""
    d = base.model_dump(mode="python")
    d["model"]["path"], d["model"]["config"] = model_id, None
    d["critic"]["model_path"] = None
    note = ""
    n = base.rollout.n
    if algorithm == "PPO":
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
    else:
        d["algorithm"]["adv_estimator"] = "grpo"
        d["critic"]["enable"] = None  # GRPO: no critic
        if n == 1:
            d["rollout"]["n"] = GRPO_DEFAULT_N
            d["data"]["train_batch_size"] = max(1, base.data.train_batch_size // GRPO_DEFAULT_N)
            d["actor"]["ppo_mini_batch_size"] = max(1, base.actor.ppo_mini_batch_size // GRPO_DEFAULT_N)
            d["data"]["gen_batch_size"] = None
            note = f"GRPO needs n > 1: n = {GRPO_DEFAULT_N} with train_batch_size / {GRPO_DEFAULT_N}"
        d["model"]["lora_rank"] = (base.model.lora_rank or LORA_RANK) if algorithm.endswith("LoRA") else 0
    d["model"]["use_dora"] = False
    return load_scenario(d), note


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
    bad = [m for m in models if m not in known]
    if bad:
        raise InputError([f"models: unknown model preset {m!r}" for m in bad])
    bad = [a for a in algorithms if a not in SIZE_TABLE_ALGORITHMS]
    if bad:
        raise InputError([f"algorithms: {a!r} is not one of {', '.join(SIZE_TABLE_ALGORITHMS)}" for a in bad])
    rows = []
    for mid in models:
        for alg in algorithms:
            s, note = _variant(base, mid, alg)
            res = search_gpu(s, gpu.id, max_gpus=max_gpus, margin=margin, allow_lora=False)
            minimum = _config(res.minimum, s, gpu.hourly_price_usd) if res.minimum else None
            rec = _config(res.recommended, s, gpu.hourly_price_usd) if res.recommended else None
            arch = known[mid].architecture
            rows.append(
                SizeRow(
                    model=mid,
                    model_name=known[mid].name,
                    total_params=arch.total_params(),
                    algorithm=alg,
                    min_gpus=minimum.num_gpus if minimum else None,
                    min_settings=minimum.settings if minimum else {},
                    recommended=rec,
                    note="; ".join(x for x in (note, _note(res, max_gpus, s)) if x),
                )
            )
    d = base.data
    workload = (
        f"{d.train_batch_size} prompts x {base.rollout.n} responses (PPO: {d.train_batch_size * base.rollout.n} x 1), "
        f"prompt <= {d.max_prompt_length}, response <= {d.max_response_length} tokens"
    )
    return SizeTable(
        gpu=gpu.id,
        gpu_name=gpu.name,
        workload=workload,
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
                    _cell(rec.step_s if rec else None, 1),
                    _cell(rec.cost_per_step if rec else None, 4),
                    _md_escape(r.note),
                ]
            )
            + " |"
        )
    return "\n".join(lines) + "\n"


__all__ = [
    "Plan",
    "PlanRow",
    "PlanTableRow",
    "RecommendedConfig",
    "SizeRow",
    "SizeTable",
    "cluster_overrides",
    "plan",
    "plan_table",
    "plan_to_csv",
    "plan_to_markdown",
    "native_diff",
    "settings_diff",
    "size_table",
    "size_table_to_markdown",
    "sort_key",
    "verl_override_lines",
]
