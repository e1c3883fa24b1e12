"""The Report: typed, frozen results that every view reads (DESIGN.md 6.2).

Bytes are exact integers; GiB fields are derived for the JSON contract. ``report.model_dump(mode="json")``
gives the stable keys of DESIGN.md 6.2 (``model``, ``hardware``, ``phases``, ``peak``, ``rollout``,
``time``, ``warnings``) plus extra keys that never change those keys' meaning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_serializer

from calculator.units import GIB_BYTES
from calculator.verl.checks.problem import ConfigProblem

Role = Literal["actor", "critic", "ref", "reward", "rollout", "sync", "runtime"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


_ROLES = frozenset(get_args(Role))
_PROCESSES = ("trainer", "rollout", "reward", "none")


@dataclass(frozen=True, slots=True)
class Component:
    """One named piece of memory on one GPU in one phase.

    A plain frozen record, not a pydantic model: the memory model builds ~100 of them per estimate and
    the planner thousands per table, so validation is two cheap checks here. The Report (a pydantic model)
    holds them as they are and writes them to JSON with the computed ``gib``."""

    name: str
    role: Role
    bytes: Annotated[int, Field(ge=0)]
    formula: Annotated[str, Field(description="How it is computed, with the scenario's numbers substituted.")]
    torch_allocated: Annotated[
        bool, Field(description="Allocated by torch's caching allocator (counts in max_memory_allocated).")
    ] = True
    process: Literal["trainer", "rollout", "reward", "none"] = "trainer"

    def __post_init__(self) -> None:
        if self.bytes < 0:
            raise ValueError(f"Component {self.name}: bytes must be >= 0, got {self.bytes}")
        if self.role not in _ROLES or self.process not in _PROCESSES:
            raise ValueError(
                f"Component {self.name}: role must be one of {sorted(_ROLES)} and process one of "
                f"{list(_PROCESSES)}, got {self.role!r} / {self.process!r}"
            )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def gib(self) -> float:
        return self.bytes / GIB_BYTES


@dataclass(frozen=True, slots=True)
class PhaseMemory:
    """Peak memory of one GPU during one phase of a training step (an internal record; the Report has
    ``PhaseOut``). Its totals are summed once, when it is built."""

    name: str
    components: tuple[Component, ...]
    total_bytes: int = field(init=False, compare=False)
    trainer_allocated_bytes: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "total_bytes", sum(c.bytes for c in self.components))
        # What the trainer process's torch allocator holds (verl's actor/perf/max_memory_allocated_gb).
        trainer = sum(c.bytes for c in self.components if c.process == "trainer" and c.torch_allocated)
        object.__setattr__(self, "trainer_allocated_bytes", trainer)

    def component(self, name: str) -> Component | None:
        return next((c for c in self.components if c.name == name), None)


class ModelInfo(_Frozen):
    name: str
    total_params: int
    active_params: int
    kv_cache_bytes_per_token: int


class HardwareInfo(_Frozen):
    gpu: str
    usable_memory_gib: float
    num_gpus: int
    gpus_per_node: int
    gpu_name: str = ""
    num_nodes: int = 1


class PhaseOut(_Frozen):
    name: str
    total_gib: float
    components: dict[str, float]
    total_bytes: int
    trainer_allocated_gib: float
    details: list[Component]


class PeakOut(_Frozen):
    phase: str
    gib_per_gpu: float
    fits: bool
    headroom_gib: float
    worst_case_gib_per_gpu: float
    worst_case_phase: str
    worst_case_fits: bool
    trainer_peak_allocated_gib: float
    usable_memory_gib: float
    reasons: list[str] = Field(
        default_factory=list,
        description="One line per failed fit criterion with its numbers and a fix; empty exactly when fits "
        "(calculator.report.verdict, DESIGN.md 6.5).",
    )
    worst_case_reasons: list[str] = Field(
        default_factory=list, description="The same for worst_case_fits (every sequence at max length)."
    )


class HostOut(_Frozen):
    """Host (CPU) RAM per node (DESIGN.md 4.9, 6.5); ``components`` add up to ``total_gib_per_node``."""

    ram_gib_per_node: float
    usable_ram_gib_per_node: float
    fits: bool
    components: dict[str, float]
    total_gib_per_node: float
    formulas: dict[str, str] = Field(default_factory=dict)


class RolloutOut(_Frozen):
    engine: str
    num_replicas: int
    kv_cache_gib_per_gpu: float
    kv_cache_tokens_per_replica: int
    max_concurrent_sequences_per_replica: int
    max_concurrent_sequences_per_replica_at_max_len: int
    sequences_per_replica: int
    budget_gib_per_gpu: float
    weights_gib_per_gpu: float
    activation_gib_per_gpu: float
    non_torch_gib_per_gpu: float
    cuda_graphs_gib_per_gpu: float
    startup_free_gib: float
    startup_required_gib: float
    starts: bool
    start_reasons: list[str] = Field(
        default_factory=list, description="Why the engine cannot start (the same lines as in peak.reasons)."
    )
    max_model_len: int = Field(
        default=0, description="The engine's max_model_len (the KV check needs one such sequence)."
    )
    engines_per_replica: int = Field(
        default=1,
        description="vLLM data-parallel ranks in one replica (rollout.data_parallel_size): each is an engine with "
        "its own scheduler (max_num_seqs) and its own KV cache; the replica holds their sum.",
    )
    kv_cache_tokens_per_engine: int = Field(
        default=0,
        description="KV tokens of one engine (one DP rank's TP group): what must hold one max_model_len sequence.",
    )
    formulas: dict[str, str]


class TimeOut(_Frozen):
    step_s: float | None = Field(description="Seconds per step; null when the step cannot run (see reason).")
    phases_s: dict[str, float | None] = Field(description="Seconds per phase; null for a phase that cannot run.")
    tokens_per_s: float
    tokens_per_s_per_gpu: float = 0.0
    update_mfu: float = 0.0
    details: dict[str, str] = Field(default_factory=dict)
    terms_s: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="Per phase, seconds by mechanism (compute, exposed communication, PCIe, bubble, ...); "
        "each phase's terms add up to its phases_s entry.",
    )
    term_formulas: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="Per phase, for the mechanisms that have one: the term's formula with the inputs used "
        "(issue 15: dispatch, stragglers, MoE, weight-sync overheads, engine CPU time, long tail).",
    )
    reason: str | None = Field(
        default=None, description="Why the step cannot run (the rollout engine cannot start); null when it can."
    )


class PoolOut(_Frozen):
    """One pool of a split placement (DESIGN.md 6.5 ``pools``): its GPUs, phases and peak."""

    name: Literal["rollout", "trainer"]
    num_gpus: int
    phases: list[PhaseOut]
    peak: PeakOut
    host: HostOut | None = Field(default=None, description="Host RAM of one of this pool's nodes.")


class SpanOut(_Frozen):
    pool: str
    name: str
    start_s: float
    end_s: float


class PlacementOut(_Frozen):
    """A split placement's schedule: what overlaps, the node rule, one steady-state step as a timeline."""

    mode: str
    num_nodes: int
    nodes_rule: str
    rollout_num_gpus: int
    trainer_num_gpus: int
    generation_s: float
    training_s: float
    weight_sync_s: float
    wait_s: float
    drain_s: float
    timeline: list[SpanOut]


_ABSENT_WHEN_NONE = ("pools", "placement")


class Report(_Frozen):
    model: ModelInfo
    hardware: HardwareInfo
    phases: list[PhaseOut]
    peak: PeakOut
    rollout: RolloutOut
    time: TimeOut | None = None
    host: HostOut | None = None
    warnings: list[str]
    roles: list[str]
    worst_case_phases: list[PhaseOut]
    verl_version: str
    checks: list[ConfigProblem] = Field(
        default_factory=list,
        exclude=True,
        description="verl's config checks with their severity (also in ``warnings`` as 'verl: ...' lines); "
        "Python API only, not in the JSON report.",
    )
    decisions: list[str] = Field(
        default_factory=list,
        exclude=True,
        description="Values the resolved plan inherited, fixed or assumed, with their source (Python API only).",
    )
    pools: list[PoolOut] | None = Field(default=None, description="Split placements only (absent when colocated).")
    placement: PlacementOut | None = Field(default=None, description="Split placements only (absent when colocated).")

    @model_serializer(mode="wrap")
    def _drop_absent(self, handler):  # type: ignore[no-untyped-def]
        """``pools`` / ``placement`` are absent (not null) when colocated: the colocated report is unchanged."""
        out = handler(self)
        for key in _ABSENT_WHEN_NONE:
            if isinstance(out, dict) and out.get(key, 0) is None:
                del out[key]
        return out
