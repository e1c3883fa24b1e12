"""The planner's result models: one configuration (:class:`RecommendedConfig`), one GPU type
(:class:`PlanRow`) and the whole table (:class:`Plan`, DESIGN.md 6.4), built from the search results of
``calculator.planning.recommend``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from calculator.inputs.hardware import GpuSpec
from calculator.inputs.scenario import Scenario
from calculator.planning.layouts import LAYOUT_PP_CHOICES, LAYOUT_TP_CHOICES, section_layout
from calculator.planning.recommend import GpuResult, cost_per_step_usd
from calculator.planning.settings import Setting, settings_diff, verl_override_lines
from calculator.planning.space import Evaluation
from calculator.report.models import Report


class FrozenModel(BaseModel):
    """Base of the planner's result models: immutable, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class MegatronLayout(FrozenModel):
    """A Megatron actor's model-parallel layout, by verl's ``actor_rollout_ref.actor.megatron.*`` field names (the
    reference policy follows it: ``calculator.planning.layouts``)."""

    tensor_model_parallel_size: int
    pipeline_model_parallel_size: int
    expert_model_parallel_size: int
    context_parallel_size: int
    expert_tensor_parallel_size: int = Field(description="Effective expert TP (verl's null = TP).")


def megatron_layout(s: Scenario) -> MegatronLayout | None:
    """``s``'s actor layout, or None for an FSDP actor."""
    if s.actor.strategy != "megatron":
        return None
    lay = section_layout(s.actor.megatron)
    return MegatronLayout(
        tensor_model_parallel_size=lay.tp,
        pipeline_model_parallel_size=lay.pp,
        expert_model_parallel_size=lay.ep,
        context_parallel_size=lay.cp,
        expert_tensor_parallel_size=lay.expert_tp,
    )


class RecommendedConfig(FrozenModel):
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
    megatron_layout: MegatronLayout | None = Field(
        default=None,
        description="A Megatron actor's TP / PP / EP / CP / ETP in this configuration (the planner searches TP, PP "
        "and EP: calculator.planning.layouts); absent for FSDP.",
    )

    @model_serializer(mode="wrap")
    def _drop_absent(self, handler):  # type: ignore[no-untyped-def]
        out = handler(self)
        if isinstance(out, dict) and out.get("megatron_layout", 0) is None:
            del out["megatron_layout"]
        return out


class PlanRow(FrozenModel):
    """One GPU type: the fewest GPUs that fit and the recommended configuration."""

    gpu: str = Field(description="GPU preset id.")
    gpu_name: str
    usable_memory_gib: float
    hourly_price_usd: float
    min_gpus: int | None = Field(description="Fewest GPUs that fit; null when nothing up to max_gpus fits.")
    min_settings: dict[str, Setting] = Field(description="verl overrides of the fastest configuration at min_gpus.")
    min_config: RecommendedConfig | None
    recommended: RecommendedConfig | None
    note: str = Field(
        default="",
        description="Why nothing fits, or why the GPU type is excluded; on a Megatron row that fits, the layout chosen "
        "when it is not the scenario's (calculator.planning.rows.layout_note).",
    )
    num_estimates: int
    split: RecommendedConfig | None = Field(
        default=None,
        description="plan --placement one_step_off|fully_async: the fastest fitting split of the recommended "
        "configuration's GPUs (calculator.planning.placement); absent for colocated plans.",
    )

    @model_serializer(mode="wrap")
    def _drop_absent(self, handler):  # type: ignore[no-untyped-def]
        out = handler(self)
        if isinstance(out, dict) and out.get("split", 0) is None:
            del out["split"]
        return out


class Plan(FrozenModel):
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
    placement: str | None = Field(default=None, description="The split placement planned beside colocated.")

    @model_serializer(mode="wrap")
    def _drop_absent(self, handler):  # type: ignore[no-untyped-def]
        out = handler(self)
        if isinstance(out, dict) and out.get("placement", 0) is None:
            del out["placement"]
        return out


PLAN_RULES = (
    "fits = expected peak <= usable x (1 - margin), worst case <= usable, engine starts, KV holds max_model_len; "
    "min_gpus = smallest searched count where any searched setting fits; "
    "recommended = lowest cost per step (step_s x GPUs x hourly price / 3600) among the fastest settings found "
    "at 1x, 2x and 4x min_gpus, ties to the shorter step then fewer GPUs; LoRA only where full fine-tuning does not fit."
)


def megatron_layout_rule() -> str:
    """Appended to the rules of a plan whose actor is Megatron: which layouts are searched, and their bounds."""
    tps = "/".join(map(str, LAYOUT_TP_CHOICES))
    pps = "/".join(map(str, LAYOUT_PP_CHOICES))
    return (
        f" Megatron layouts: the scenario's TP / PP / EP first; others only where it fits nowhere or to find fewer "
        f"GPUs: TP {tps} (within a node, dividing the attention and KV heads) x PP {pps} (dividing the layers) x "
        "EP a power of two dividing the routed experts (MoE only), with the scenario's CP and ETP, the GPUs "
        "divisible by TP x PP x CP and ETP x EP x PP; min_gpus ties keep the scenario's layout, then less model "
        "parallelism; recommended compares the scenario's layout and the minimum's; a Megatron critic with the "
        "actor's model and layout moves with it."
    )


def config_entry(
    r: Report,
    s: Scenario,
    settings: dict[str, Setting],
    verl_overrides: list[str],
    price: float,
    *,
    step: float | None,
    num_gpus: int,
    num_nodes: int,
    gpus_per_node: int,
) -> RecommendedConfig:
    """A planner entry from an estimate: memory, time and cost at ``price`` per GPU-hour for ``num_gpus`` GPUs
    (colocated: the pool; split: both pools, ``calculator.planning.placement``)."""
    tps = r.time.tokens_per_s if r.time is not None else None
    cost = cost_per_step_usd(step, num_gpus, price) if step is not None else None
    per_million = cost / (tps * step / 1e6) if cost is not None and step and tps else None
    return RecommendedConfig(
        num_gpus=num_gpus,
        num_nodes=num_nodes,
        gpus_per_node=gpus_per_node,
        settings=settings,
        verl_overrides=verl_overrides,
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
        megatron_layout=megatron_layout(s),
    )


def recommended_config(ev: Evaluation, base: Scenario, price: float) -> RecommendedConfig:
    """One evaluated configuration as a table entry: its verl settings against ``base``, memory, time, cost."""
    s, hw = ev.scenario, ev.scenario.hardware
    settings = settings_diff(base, s)
    lines = verl_override_lines(settings, hw.num_gpus, hw.gpus_per_node)
    return config_entry(
        ev.report,
        s,
        settings,
        lines,
        price,
        step=ev.step_s,
        num_gpus=hw.num_gpus,
        num_nodes=hw.num_nodes,
        gpus_per_node=hw.gpus_per_node,
    )


def layout_note(res: GpuResult, max_gpus: int, base: Scenario) -> str:
    """A Megatron row whose minimum or recommendation uses another layout than the scenario's: which, and what the
    scenario's own layout needs ('' otherwise)."""
    if res.minimum is None or res.recommended is None or base.actor.strategy != "megatron":
        return ""
    own = section_layout(base.actor.megatron)
    at_min, rec = (section_layout(e.scenario.actor.megatron) for e in (res.minimum, res.recommended))
    if own == at_min == rec:
        return ""
    mine = f"needs {res.own_min_gpus} GPUs" if res.own_min_gpus else f"fits nowhere up to {max_gpus} GPUs"
    text = f"Megatron layout {at_min.label} at min_gpus"
    text += f", {rec.label} recommended" if rec != at_min else ""
    return text + f" ({res.num_layouts} layouts searched; the scenario's {own.label} {mine})"


def unfit_note(res: GpuResult, max_gpus: int, base: Scenario) -> str:
    """Why nothing fits ('' when something does)."""
    if res.minimum is not None:
        return layout_note(res, max_gpus, base)
    if not res.counts:
        seqs = base.data.train_batch_size * base.rollout.n
        return f"no GPU count up to {max_gpus} passes verl's batch rules (train_batch_size x n = {seqs})"
    top = res.largest_tried
    where = f"nothing fits up to {max_gpus} GPUs"
    if res.num_layouts > 1:
        own = section_layout(base.actor.megatron)
        where += f" with any of the {res.num_layouts} Megatron layouts searched; the scenario's {own.label}"
    if top is None:
        return f"{where} (no valid configuration at {res.counts[-1]})"
    return f"{where}; most memory-saving at {res.counts[-1]}: " + "; ".join(top.fit.reasons)


def plan_row(res: GpuResult, base: Scenario, price: float, max_gpus: int) -> PlanRow:
    """One GPU type's search result as a row of the table."""
    minimum = recommended_config(res.minimum, base, price) if res.minimum else None
    recommended = recommended_config(res.recommended, base, price) if res.recommended else None
    return PlanRow(
        gpu=res.gpu.id,
        gpu_name=res.gpu.name,
        usable_memory_gib=res.gpu.usable_memory_gib,
        hourly_price_usd=price,
        min_gpus=minimum.num_gpus if minimum else None,
        min_settings=minimum.settings if minimum else {},
        min_config=minimum,
        recommended=recommended,
        note=unfit_note(res, max_gpus, base),
        num_estimates=res.num_estimates,
    )


def excluded_row(gpu: GpuSpec, price: float, why: str) -> PlanRow:
    """A GPU type the planner does not search (``why`` says why), shown as a row with no configuration."""
    return PlanRow(
        gpu=gpu.id,
        gpu_name=gpu.name,
        usable_memory_gib=gpu.usable_memory_gib,
        hourly_price_usd=price,
        min_gpus=None,
        min_settings={},
        min_config=None,
        recommended=None,
        note=why,
        num_estimates=0,
    )


def sort_key(row: PlanRow) -> tuple[Any, ...]:
    """Default row order: cheapest recommended cost per step first, then fewest GPUs, then GPU id."""
    rec = row.recommended
    cost = rec.cost_per_step if rec is not None and rec.cost_per_step is not None else float("inf")
    return (rec is None, cost, row.min_gpus if row.min_gpus is not None else float("inf"), row.gpu)


__all__ = [
    "PLAN_RULES",
    "FrozenModel",
    "MegatronLayout",
    "Plan",
    "PlanRow",
    "RecommendedConfig",
    "excluded_row",
    "layout_note",
    "megatron_layout",
    "megatron_layout_rule",
    "plan_row",
    "recommended_config",
    "sort_key",
    "unfit_note",
]
