"""The closed vocabularies of the model: phases of a step, roles on a GPU, memory component names.

They are ``StrEnum``s, so a member *is* its string: ``Phase.ROLLOUT == "rollout"``, JSON keys and the
dashboard's colours read the same text (DESIGN.md 6.2 fixes these names; adding one is a contract
extension, renaming one is not allowed).
"""

from __future__ import annotations

from enum import StrEnum


class Phase(StrEnum):
    """Phases of one colocated verl step, in step order (DESIGN.md 4.7)."""

    ROLLOUT = "rollout"
    REWARD = "reward"  # model-based reward only
    OLD_LOG_PROB = "old_log_prob"
    REF_LOG_PROB = "ref_log_prob"
    CRITIC_VALUES = "critic_values"
    UPDATE_CRITIC = "update_critic"
    UPDATE_ACTOR = "update_actor"
    WEIGHT_SYNC = "weight_sync"


PHASE_ORDER: tuple[Phase, ...] = tuple(Phase)


class Role(StrEnum):
    """Who owns a piece of GPU memory (a component's ``role``)."""

    ACTOR = "actor"
    CRITIC = "critic"
    REF = "ref"
    REWARD = "reward"
    ROLLOUT = "rollout"
    SYNC = "sync"
    RUNTIME = "runtime"


class Process(StrEnum):
    """The process whose allocator holds a component (``none``: outside every torch allocator)."""

    TRAINER = "trainer"
    ROLLOUT = "rollout"
    REWARD = "reward"
    NONE = "none"


class Comp(StrEnum):
    """Memory component names (DESIGN.md 6.2 vocabulary, plus the few rlplan adds)."""

    ACTOR_PARAMS = "actor_params"
    ACTOR_GRADS = "actor_grads"
    ACTOR_OPTIMIZER = "actor_optimizer"
    ACTOR_ACTIVATIONS = "actor_activations"
    ACTOR_LOGITS = "actor_logits"
    ACTOR_ENTROPY = "actor_entropy"
    ACTOR_UNSHARDED_PARAMS = "actor_unsharded_params"
    ACTOR_DORA_WEIGHT = "actor_dora_weight"
    ACTOR_OPTIMIZER_STEP = "actor_optimizer_step"
    ACTOR_HEAD_GRAD = "actor_head_grad"
    CRITIC_PARAMS = "critic_params"
    CRITIC_GRADS = "critic_grads"
    CRITIC_OPTIMIZER = "critic_optimizer"
    CRITIC_ACTIVATIONS = "critic_activations"
    CRITIC_UNSHARDED_PARAMS = "critic_unsharded_params"
    CRITIC_OPTIMIZER_STEP = "critic_optimizer_step"
    CRITIC_HEAD_GRAD = "critic_head_grad"
    REF_PARAMS = "ref_params"
    REF_ACTIVATIONS = "ref_activations"
    REF_LOGITS = "ref_logits"
    REF_UNSHARDED_PARAMS = "ref_unsharded_params"
    REWARD_PARAMS = "reward_params"
    REWARD_KV_CACHE = "reward_kv_cache"
    REWARD_ACTIVATIONS = "reward_activations"
    ROLLOUT_WEIGHTS = "rollout_weights"
    KV_CACHE = "kv_cache"
    ROLLOUT_ACTIVATIONS = "rollout_activations"
    ROLLOUT_NON_TORCH = "rollout_non_torch"
    CUDA_GRAPHS = "cuda_graphs"
    SYNC_BUCKET = "sync_bucket"
    SYNC_FULL_TENSOR = "sync_full_tensor"
    SYNC_SHARD_CLONE = "sync_shard_clone"
    SYNC_LORA_GATHER = "sync_lora_gather"
    CUDA_CONTEXT = "cuda_context"
    NCCL_BUFFERS = "nccl_buffers"
    FRAGMENTATION = "fragmentation"

    @classmethod
    def of(cls, role: Role | str, part: str) -> Comp:
        """``Comp.of(Role.CRITIC, "params") is Comp.CRITIC_PARAMS``; an unknown pair is a KeyError."""
        return cls(f"{role}_{part}")


class Strategy(StrEnum):
    """Training backend of a role (verl ``actor.strategy``)."""

    FSDP = "fsdp"
    FSDP2 = "fsdp2"
    MEGATRON = "megatron"
