"""What is on one GPU in each phase of a colocated verl step: DESIGN.md 4.7's residency table, as data.

Each row says, for one phase: what each trained role is doing (idle, forward, update, sync), the rollout
engine's state, which role computes, and which transient tensors that computation allocates. The memory
model (``calculator.memory.phases``) walks these rows; adding a phase or a placement is a row here, not a
branch there. The rules that turn a role's activity into resident state (offload flags, FSDP2 shard
streaming, Megatron's grad buffer) live in ``calculator.memory.phases.role_state``.

verl 0.9.1 sources: the trainer's step order (``trainer/ppo/v1/trainer_base.py`` ``fit``); the rollout
engine sleeps after generation with ``free_cache_engine`` (level 2: weights and KV freed; CUDA-graph pools
stay) and wakes for the weight sync (weights first, KV after the sync: ``workers/rollout/*`` ``resume(tags)``);
``old_log_prob`` always computes the entropy (``_compute_old_log_prob(..., calculate_entropy=True)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from calculator.names import Phase, Role


class Use(StrEnum):
    """What a trained role does in a phase."""

    IDLE = "idle"  # state resident unless offloaded
    FORWARD = "forward"  # params on the GPU for a forward pass
    UPDATE = "update"  # params, grads and optimizer on the GPU
    SYNC = "sync"  # params on the GPU to be gathered for the weight sync


class Engine(StrEnum):
    """The rollout engine's memory in a phase (with ``free_cache_engine: true``; false keeps it AWAKE)."""

    AWAKE = "awake"  # weights + KV cache + profiled activations + non-torch + CUDA graphs
    WEIGHTS = "weights"  # woken for the sync: weights, no KV yet
    ASLEEP = "asleep"  # only what sleep does not free: non-torch memory and CUDA-graph pools


class Transient(StrEnum):
    """Transient tensors a phase's computation allocates (``fragmentation`` counts those marked below)."""

    GATHERED = "gathered"  # bf16 all-gathered FSDP units in flight
    DORA = "dora"  # DoRA's merged weight (actor update only)
    FORWARD_ACTIVATIONS = "forward_activations"  # live set of one layer
    TRAINING_ACTIVATIONS = "training_activations"  # saved tensors for backward
    HEAD_GRAD = "head_grad"  # FSDP1: the output head's weight gradient, held through the whole backward
    LOGITS = "logits"  # LM-head output, no entropy (ref)
    LOGITS_ENTROPY = "logits_entropy"  # + entropy, forward only (old log-prob)
    LOGITS_UPDATE = "logits_update"  # + entropy when the loss needs it, with backward
    REWARD_ENGINE = "reward_engine"  # the reward model's engine, awake
    SYNC_BUCKET = "sync_bucket"  # weight-sync staging bucket
    SYNC_FULL_TENSOR = "sync_full_tensor"  # largest parameter gathered whole
    SYNC_STATE_DICT = "sync_state_dict"  # FSDP1 shard clones / LoRA full-model summon while syncing
    OPTIMIZER_STEP = "optimizer_step"  # optimizer.step() temporary beyond the backward's transients


# Transients that are not torch-allocator churn of the trainer (not counted for fragmentation).
NOT_FRAGMENTING = frozenset({Transient.REWARD_ENGINE, Transient.SYNC_BUCKET})


@dataclass(frozen=True, slots=True)
class PhaseRow:
    phase: Phase
    actor: Use
    critic: Use
    engine: Engine
    compute: Role | None  # the role whose pass this phase runs (the ref may be served by the actor)
    transients: tuple[Transient, ...]


_I, _F, _U, _S = Use.IDLE, Use.FORWARD, Use.UPDATE, Use.SYNC
_T = Transient

RESIDENCY: dict[Phase, PhaseRow] = {
    row.phase: row
    for row in (
        PhaseRow(Phase.ROLLOUT, _I, _I, Engine.AWAKE, None, ()),
        PhaseRow(Phase.REWARD, _I, _I, Engine.ASLEEP, Role.REWARD, (_T.REWARD_ENGINE,)),
        PhaseRow(
            Phase.OLD_LOG_PROB,
            _F,
            _I,
            Engine.ASLEEP,
            Role.ACTOR,
            (_T.GATHERED, _T.FORWARD_ACTIVATIONS, _T.LOGITS_ENTROPY),
        ),
        PhaseRow(Phase.REF_LOG_PROB, _I, _I, Engine.ASLEEP, Role.REF, (_T.GATHERED, _T.FORWARD_ACTIVATIONS, _T.LOGITS)),
        PhaseRow(Phase.CRITIC_VALUES, _I, _F, Engine.ASLEEP, Role.CRITIC, (_T.GATHERED, _T.FORWARD_ACTIVATIONS)),
        PhaseRow(
            Phase.UPDATE_CRITIC,
            _I,
            _U,
            Engine.ASLEEP,
            Role.CRITIC,
            (_T.GATHERED, _T.TRAINING_ACTIVATIONS, _T.HEAD_GRAD, _T.OPTIMIZER_STEP),
        ),
        PhaseRow(
            Phase.UPDATE_ACTOR,
            _U,
            _I,
            Engine.ASLEEP,
            Role.ACTOR,
            (_T.GATHERED, _T.DORA, _T.TRAINING_ACTIVATIONS, _T.LOGITS_UPDATE, _T.HEAD_GRAD, _T.OPTIMIZER_STEP),
        ),
        PhaseRow(
            Phase.WEIGHT_SYNC, _S, _I, Engine.WEIGHTS, None, (_T.SYNC_BUCKET, _T.SYNC_FULL_TENSOR, _T.SYNC_STATE_DICT)
        ),
    )
}
