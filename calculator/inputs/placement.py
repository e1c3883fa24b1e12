"""The ``placement`` section of a Scenario: colocated (verl's hybrid engine) or separate rollout and trainer pools
(verl's one_step_off_policy / fully_async_policy recipes, DESIGN.md 4.10)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from calculator.inputs.backends import MAX_COUNT, _Frozen

Placement = Literal["colocated", "one_step_off", "fully_async"]
SPLIT_PLACEMENTS = ("one_step_off", "fully_async")


class PlacementSection(_Frozen):
    """Where the rollout engine runs (DESIGN.md 4.10). ``colocated`` is verl's hybrid engine (today's model);
    ``one_step_off`` / ``fully_async`` are verl's recipes with ``actor_rollout_ref.hybrid_engine=False``:
    the trainer keeps ``hardware`` (``trainer.nnodes`` x ``trainer.n_gpus_per_node``), the rollout engine gets
    its own ``rollout.nnodes`` x ``rollout.n_gpus_per_node`` GPUs. Defaults are verl's recipe configs
    (``verl/experimental/{one_step_off_policy,fully_async_policy}/config/*_ppo_trainer.yaml``)."""

    mode: Placement = Field(
        default="colocated",
        description="colocated (hybrid engine), one_step_off (recipe one_step_off_policy) or fully_async "
        "(recipe fully_async_policy).",
    )
    rollout_nnodes: int = Field(default=1, ge=1, le=8192, description="verl rollout.nnodes: nodes of the rollout pool.")
    rollout_n_gpus_per_node: int = Field(
        default=8, ge=1, le=64, description="verl rollout.n_gpus_per_node: rollout GPUs per node."
    )
    physical_gpus_per_node: int = Field(
        default=8,
        ge=1,
        le=64,
        description="rlplan: GPUs in one physical node; decides whether the pools can share nodes.",
    )
    staleness_threshold: float = Field(
        default=0.1,
        ge=0,
        le=100,
        description="fully_async: async_training.staleness_threshold (share of stale samples).",
    )
    trigger_parameter_sync_step: int = Field(
        default=4, ge=1, le=MAX_COUNT, description="fully_async: trainer updates between two weight syncs."
    )
    require_batches: int = Field(
        default=1, ge=1, le=MAX_COUNT, description="fully_async: ppo_mini_batches fetched per trainer update."
    )
    partial_rollout: bool = Field(
        default=True, description="fully_async: interrupt in-flight rollouts at a weight sync and resume them after."
    )
    use_rollout_log_probs: bool = Field(
        default=True, description="fully_async: old_log_prob from the rollout engine (no old_log_prob pass)."
    )

    @property
    def split(self) -> bool:
        return self.mode in SPLIT_PLACEMENTS

    @property
    def rollout_num_gpus(self) -> int:
        return self.rollout_nnodes * self.rollout_n_gpus_per_node
