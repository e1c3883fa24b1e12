"""Placement rules (DESIGN.md 4.10): which GPUs each pool gets, how many nodes that takes, and the per-pool
views of the scenario the memory and time models walk.

verl sources (github volcengine/verl, ``verl/experimental/*``, formerly ``recipe/*``):
- ``actor_rollout_ref.hybrid_engine=False`` puts the rollout engine on its own resource pool of
  ``rollout.nnodes`` x ``rollout.n_gpus_per_node`` GPUs; the trainer keeps ``trainer.nnodes`` x
  ``trainer.n_gpus_per_node`` (docs/advance/one_step_off.md "Resource Isolation").
- The recipe config forces ``rollout.free_cache_engine: False`` (``one_step_off_ppo_trainer.yaml``: "Must be turned
  off! Otherwise, Parameter synchronization cannot be performed"): the engine never sleeps.
- Node count (docs/advance/one_step_off.md, "Note"): ``max(trainer.nnodes, rollout.nnodes)`` when
  ``trainer.n_gpus_per_node + rollout.n_gpus_per_node <= physical_gpus_per_node`` (the pools share nodes),
  otherwise ``trainer.nnodes + rollout.nnodes``.
- fully_async: the trainer takes ``require_batches x ppo_mini_batch_size`` prompts per local update and syncs the
  weights every ``trigger_parameter_sync_step`` updates (docs/advance/fully_async.md "Parameter Description"); with
  ``use_rollout_log_probs`` (default True) old_log_prob comes from the engine, so the trainer skips that pass.

Left out: heterogeneous GPUs per pool (both pools use ``hardware.gpu``), a reward model on its own pool.
"""

from __future__ import annotations

from dataclasses import dataclass

from calculator.inputs.scenario import Scenario


@dataclass(frozen=True)
class PoolPlan:
    """One pool of GPUs: its name, size and the scenario view its models walk."""

    name: str  # "rollout" | "trainer"
    num_gpus: int
    gpus_per_node: int
    num_nodes: int
    scenario: Scenario  # the run as seen on this pool (hardware = the pool's GPUs)


@dataclass(frozen=True)
class PlacementPlan:
    mode: str
    rollout: PoolPlan
    trainer: PoolPlan
    num_nodes: int  # physical nodes the run needs (verl's node rule)
    shares_nodes: bool
    prompts_per_sync: int  # prompts trained between two weight syncs (one "step" of the report)
    old_log_prob_on_trainer: bool
    note: str  # the node rule with its numbers


def _rollout_view(s: Scenario) -> Scenario:
    """The scenario as the rollout pool runs it: its own GPUs, the engine never sleeps. ``model_copy`` skips
    validation on purpose: the trainer-side fields (SP, fsdp_size) are checked against the trainer pool."""
    p = s.placement
    hw = s.hardware.model_copy(update={"num_gpus": p.rollout_num_gpus, "gpus_per_node": p.rollout_n_gpus_per_node})
    rollout = s.rollout.model_copy(update={"free_cache_engine": False})
    return s.model_copy(update={"hardware": hw, "rollout": rollout})


def _trainer_view(s: Scenario, prompts: int) -> Scenario:
    data = s.data.model_copy(update={"train_batch_size": prompts, "gen_batch_size": None})
    return s.model_copy(update={"data": data})


def prompts_per_sync(s: Scenario) -> int:
    """Prompts trained between two weight syncs: ``data.train_batch_size`` for one_step_off; for fully_async
    ``trigger_parameter_sync_step x require_batches x ppo_mini_batch_size`` (docs/advance/fully_async.md)."""
    p = s.placement
    if p.mode == "fully_async":
        return p.trigger_parameter_sync_step * p.require_batches * s.actor.ppo_mini_batch_size
    return s.data.train_batch_size


def node_count(s: Scenario) -> tuple[int, bool, str]:
    """verl's node rule (docs/advance/one_step_off.md): shared nodes when both pools' GPUs per node fit in one."""
    p, hw = s.placement, s.hardware
    t_nodes = hw.num_nodes
    t_gpn = min(hw.num_gpus, hw.gpus_per_node)
    shared = t_gpn + p.rollout_n_gpus_per_node <= p.physical_gpus_per_node
    if shared:
        n = max(t_nodes, p.rollout_nnodes)
        note = (
            f"trainer {t_gpn} + rollout {p.rollout_n_gpus_per_node} GPUs per node <= {p.physical_gpus_per_node}: "
            f"pools share nodes, max({t_nodes}, {p.rollout_nnodes}) = {n} nodes"
        )
    else:
        n = t_nodes + p.rollout_nnodes
        note = (
            f"trainer {t_gpn} + rollout {p.rollout_n_gpus_per_node} GPUs per node > {p.physical_gpus_per_node}: "
            f"separate nodes, {t_nodes} + {p.rollout_nnodes} = {n} nodes"
        )
    return n, shared, note


def resolve_placement(s: Scenario) -> PlacementPlan | None:
    """The pools of a split placement; None when colocated."""
    p = s.placement
    if not p.split:
        return None
    prompts = prompts_per_sync(s)
    hw = s.hardware
    nodes, shared, note = node_count(s)
    rollout = PoolPlan(
        "rollout",
        p.rollout_num_gpus,
        p.rollout_n_gpus_per_node,
        p.rollout_nnodes,
        _rollout_view(_trainer_view(s, prompts)),
    )
    trainer = PoolPlan(
        "trainer", hw.num_gpus, min(hw.num_gpus, hw.gpus_per_node), hw.num_nodes, _trainer_view(s, prompts)
    )
    on_trainer = not (p.mode == "fully_async" and p.use_rollout_log_probs)
    return PlacementPlan(p.mode, rollout, trainer, nodes, shared, prompts, on_trainer, note)


__all__ = ["PlacementPlan", "PoolPlan", "node_count", "prompts_per_sync", "resolve_placement"]
