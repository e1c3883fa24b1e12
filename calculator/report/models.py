"""The Report: typed, frozen results that every view reads (DESIGN.md 6.2).

Bytes are exact integers; GiB fields are derived for the JSON contract. ``report.model_dump(mode="json")``
gives the stable keys of DESIGN.md 6.2 (``model``, ``hardware``, ``phases``, ``peak``, ``rollout``,
``time``, ``warnings``) plus extra keys that never change those keys' meaning.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from calculator.units import GIB_BYTES
from calculator.verl.checks.problem import ConfigProblem

Role = Literal["actor", "critic", "ref", "reward", "rollout", "sync", "runtime"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Component(_Frozen):
    """One named piece of memory on one GPU in one phase."""

    name: str
    role: Role
    bytes: int = Field(ge=0)
    formula: str = Field(description="How it is computed, with the scenario's numbers substituted.")
    torch_allocated: bool = Field(
        default=True, description="Allocated by torch's caching allocator (counts in max_memory_allocated)."
    )
    process: Literal["trainer", "rollout", "reward", "none"] = "trainer"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def gib(self) -> float:
        return self.bytes / GIB_BYTES


class PhaseMemory(_Frozen):
    """Peak memory of one GPU during one phase of a training step."""

    name: str
    components: tuple[Component, ...]

    @property
    def total_bytes(self) -> int:
        return sum(c.bytes for c in self.components)

    @property
    def trainer_allocated_bytes(self) -> int:
        """What the trainer process's torch allocator holds (verl's actor/perf/max_memory_allocated_gb)."""
        return sum(c.bytes for c in self.components if c.process == "trainer" and c.torch_allocated)

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
    formulas: dict[str, str]


class TimeOut(_Frozen):
    step_s: float
    phases_s: dict[str, float]
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


class Report(_Frozen):
    model: ModelInfo
    hardware: HardwareInfo
    phases: list[PhaseOut]
    peak: PeakOut
    rollout: RolloutOut
    time: TimeOut | None = None
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
