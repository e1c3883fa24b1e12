"""The memory model's view of a resolved plan: role sizes, training state per role, engine budgets, and what
the trainer holds when the rollout engine starts.

Everything here is computed once per estimate from :class:`calculator.resolve.resolved.Resolved`; the phase
walk (``calculator.memory.phases``) and the step-time model read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from calculator.inputs.hardware import GpuSpec
from calculator.inputs.scenario import Scenario
from calculator.memory.engine import EngineBudget, engine_budget
from calculator.memory.megatron_ranks import RankParams, rank_params
from calculator.memory.megatron_transients import megatron_activations, megatron_loss_bytes
from calculator.memory.training import TrainingState, fsdp_state, megatron_state, shard_size
from calculator.model.roles import RoleModel, policy_role, value_role
from calculator.names import Phase, Role
from calculator.resolve.resolved import Resolved
from calculator.resolve.roles import TrainerPlan
from calculator.units import GIB_BYTES


@dataclass(frozen=True)
class Context:
    """A resolved plan with the sizes the memory and time models need."""

    r: Resolved
    actor: RoleModel
    critic: RoleModel | None
    reward: RoleModel | None
    actor_state: TrainingState
    critic_state: TrainingState | None
    ref_state: TrainingState | None  # a separate ref model (None under LoRA or without a ref)
    rollout: EngineBudget
    reward_engine: EngineBudget | None
    startup_trainer_bytes: int  # trainer-side model memory when vLLM starts (before the first step)
    # Pieces of the phase walk that several phases share (the resident state of one use, the engine in one
    # state), built once per context (``calculator.memory.phases``; issue #18). ``replace`` gives a fresh one.
    memo: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def s(self) -> Scenario:
        return self.r.scenario

    @property
    def gpu(self) -> GpuSpec:
        return self.r.gpu

    @property
    def ref_separate(self) -> bool:
        return self.r.has_separate_ref

    @property
    def ref_via_actor(self) -> bool:
        return self.r.ref_via_actor

    @property
    def actor_shard_size(self) -> int:
        """GPUs the actor's FSDP shards are spread over (1 under Megatron: no FSDP sharding)."""
        if self.r.actor.is_megatron:
            return 1
        return shard_size(self.r.actor.fsdp, self.s.hardware.num_gpus)

    @property
    def max_model_len(self) -> int:
        return self.r.rollout.max_model_len


def _state(
    s: Scenario, role: RoleModel, plan: TrainerPlan, trained: bool, pp_rank: RankParams | None = None
) -> TrainingState:
    if plan.is_megatron:
        return megatron_state(s, role, plan.megatron, trained=trained, pp_rank=pp_rank)
    return fsdp_state(s, role, plan.fsdp, plan.strategy, trained=trained)


def rank_update_bytes(r: Resolved, role: RoleModel, plan: TrainerPlan, phase: Phase, rank: RankParams) -> int:
    """What pipeline rank ``rank`` holds in ``role``'s update at the expected lengths, for choosing the rank an
    estimate describes: its params, grads and optimizer shards, its 1F1B activations and, on the last rank, the
    loss's logits (``calculator.memory.megatron_ranks``)."""
    s, p = r.scenario, r.passes[phase]
    st = megatron_state(s, role, plan.megatron, trained=True, pp_rank=rank)
    held = st.params.bytes + st.grads.bytes + st.optimizer.bytes
    held += megatron_activations(role, p.trainer, p.expected, rank.rank).bytes
    if rank.rank == rank.num_ranks - 1 and role.lm_head_vocab:
        tokens, v = p.expected.tokens_per_gpu, role.arch.vocab_size
        fused = s.model.use_fused_kernels
        held += megatron_loss_bytes(fused, role.name, p.trainer, tokens, v, entropy=r.entropy_in_update)
    return held


def described_rank(r: Resolved, role: RoleModel, plan: TrainerPlan | None, phase: Phase) -> RankParams | None:
    """The pipeline rank of a Megatron role (PP > 1) an estimate describes: the one whose update ``phase`` holds
    the most (``calculator.memory.megatron_ranks``); None without pipeline parallelism or for a split Megatron-core
    refuses. Ranks with equal parameters differ only in the micro-batches in flight, which fall with the rank: only
    the first of each kind is compared."""
    if plan is None or not plan.is_megatron or plan.megatron.pipeline_model_parallel_size == 1:
        return None
    ranks = rank_params(role, plan.megatron)
    if ranks is None or phase not in r.passes:
        return None
    firsts: dict[tuple[int, int, int, bool], RankParams] = {}
    for rk in ranks:
        firsts.setdefault((rk.num_layers, rk.dense, rk.expert, rk.rank == rk.num_ranks - 1), rk)
    return max(firsts.values(), key=lambda rk: rank_update_bytes(r, role, plan, phase, rk))  # the lowest of equals


def _same_rank(ranks: RankParams | None, role: RoleModel, plan: TrainerPlan | None) -> RankParams | None:
    """Another role's share on the GPU of pipeline rank ``ranks.rank`` (its own layout must have as many ranks;
    otherwise its mean share)."""
    if ranks is None or plan is None or not plan.is_megatron:
        return None
    own = rank_params(role, plan.megatron)
    return own[ranks.rank] if own is not None and len(own) == ranks.num_ranks else None


def runtime_startup_bytes(r: Resolved) -> int:
    """CUDA contexts of the trainer and rollout processes and the NCCL buffers, present from startup
    (outside torch's allocator; the reward model's process is not up yet when the rollout starts)."""
    ov = r.scenario.overheads
    procs = r.num_processes - (1 if r.has_reward_model else 0)
    b = int(procs * ov.cuda_context_gib * GIB_BYTES + ov.trainer_nccl_gib * GIB_BYTES)
    if r.rollout.tp > 1:
        b += int(ov.vllm_tp_comm_gib * GIB_BYTES)
    return b


def _startup_trainer_bytes(
    r: Resolved, actor: TrainingState, critic: TrainingState | None, ref: TrainingState | None
) -> int:
    """Trainer memory when the engines start: model params (no optimizer state yet: AdamW creates it lazily at
    the first step), unless offloaded after init (verl 0.9 ``engine_workers.py`` ``initialize()``)."""
    startup = 0
    if not r.actor.params_offloaded_when_idle:
        startup += actor.params.bytes
        if r.actor.is_megatron:
            startup += actor.grads.bytes  # Megatron's grad buffer is allocated at init
    if not r.actor.optimizer_offload:
        # Megatron builds its fp32 main-param shards with the optimizer in initialize() (verl 0.9.1
        # megatron/transformer_impl.py 601-609), before vLLM starts; torch AdamW's moments come at the first step.
        startup += actor.optimizer_at_init_bytes
    if critic is not None and r.critic is not None and not r.critic.params_offloaded_when_idle:
        startup += critic.params.bytes
    if ref is not None and r.ref_on_gpu:
        startup += ref.params.bytes
    return startup


def build_context(r: Resolved) -> Context:
    s = r.scenario
    actor = policy_role(Role.ACTOR, r.actor_arch)
    critic = value_role(Role.CRITIC, r.critic_arch or r.actor_arch) if r.critic is not None else None
    reward = value_role(Role.REWARD, r.reward_arch or r.actor_arch) if r.has_reward_model else None
    # Megatron with PP > 1: every role's state is of the pipeline rank the estimate describes (megatron_ranks).
    rank = described_rank(r, actor, r.actor, Phase.UPDATE_ACTOR)
    actor_state = _state(s, actor, r.actor, trained=True, pp_rank=rank)
    critic_state = None
    if critic is not None and r.critic:
        critic_state = _state(s, critic, r.critic, trained=True, pp_rank=_same_rank(rank, critic, r.critic))
    ref_state = None
    if r.ref:
        ref = policy_role(Role.REF, r.actor_arch)
        ref_state = _state(s, ref, r.ref, trained=False, pp_rank=_same_rank(rank, ref, r.ref))
    startup = _startup_trainer_bytes(r, actor_state, critic_state, ref_state)
    usable = r.gpu.usable_memory_bytes
    rb = engine_budget(
        r.actor_arch,
        r.rollout,
        usable,
        s.overheads,
        r.actor_arch.total_params(),
        trainer_resident_bytes=startup + runtime_startup_bytes(r),
        graphs_in_budget=r.behaviour.vllm_cudagraph_in_budget,
    )
    reward_engine = None
    if reward is not None and r.reward is not None:
        reward_engine = engine_budget(reward.arch, r.reward, usable, s.overheads, reward.num_params)
    return Context(r, actor, critic, reward, actor_state, critic_state, ref_state, rb, reward_engine, startup)
