"""Who runs in a verl step and with which engine settings, decided once (DESIGN.md 4.1).

verl 0.9.1 facts (``trainer/ppo/utils.py``):
- reference policy iff ``actor.use_kl_loss`` or ``algorithm.use_kl_in_reward`` (``need_reference_policy``);
  under LoRA the ref is the actor with adapters disabled, so no extra copy exists;
- critic: ``critic.enable``, or when unset iff ``adv_estimator == "gae"`` (``need_critic``);
- reward model: only for a model-based reward (``reward_model.enable``) colocated on the training GPUs
  (``enable_resource_pool`` puts it on its own GPUs, not modelled).

Engine settings of each trained role (``TrainerPlan``): the critic inherits the actor's strategy when
``critic.strategy`` is null; Ulysses SP applies to FSDP engines only (Megatron splits sequences with CP);
data-parallel size is world / Ulysses SP (FSDP) or world / (TP x PP x CP) (Megatron); offload flags are
read from the backend section the strategy uses. FSDP2's ``offload_policy`` is real CPU offload
(params, grads and optimizer on CPU throughout).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from calculator.inputs.scenario import FsdpSection, MegatronSection, Scenario
from calculator.memo import last_by_identity
from calculator.names import Role, Strategy


def need_reference_policy(s: Scenario) -> bool:
    return s.actor.use_kl_loss or s.algorithm.use_kl_in_reward


def ref_is_actor(s: Scenario) -> bool:
    """LoRA: the reference log-prob is the actor's forward with adapters disabled."""
    return need_reference_policy(s) and s.model.lora_rank > 0


def need_critic(s: Scenario) -> bool:
    if s.critic.enable is not None:
        return s.critic.enable
    return s.algorithm.adv_estimator == "gae"


def need_reward_model(s: Scenario) -> bool:
    """A model-based reward colocated on the training GPUs."""
    return s.reward_model.enable and not s.reward_model.enable_resource_pool


def critic_strategy(s: Scenario) -> Strategy:
    return Strategy(s.critic.strategy or s.actor.strategy)


def megatron_model_parallel(m: MegatronSection) -> int:
    """GPUs of one Megatron model replica: TP x PP x CP."""
    return m.tensor_model_parallel_size * m.pipeline_model_parallel_size * m.context_parallel_size


@dataclass(frozen=True, slots=True)
class TrainerPlan:
    """One role's training (or forward-only) engine, as verl resolves its settings."""

    role: Role
    strategy: Strategy
    fsdp: FsdpSection
    megatron: MegatronSection
    sp: int  # Ulysses sequence parallel (1 under Megatron)
    dp: int  # data-parallel ranks
    param_offload: bool  # params (+ grads) moved to CPU while the role is idle
    optimizer_offload: bool  # optimizer state moved to CPU while the role is idle
    cpu_offload_policy: bool  # FSDP2 CPUOffloadPolicy: params, grads and optimizer on CPU throughout
    gradient_checkpointing: bool

    @property
    def is_megatron(self) -> bool:
        return self.strategy is Strategy.MEGATRON

    @property
    def params_offloaded_when_idle(self) -> bool:
        return self.param_offload or self.cpu_offload_policy


def _trainer(
    s: Scenario, role: Role, strategy: Strategy, fsdp: FsdpSection, meg: MegatronSection, ulysses: int, ckpt: bool
) -> TrainerPlan:
    g = s.hardware.num_gpus
    megatron = strategy is Strategy.MEGATRON
    sp = 1 if megatron else ulysses
    dp = max(1, g // (megatron_model_parallel(meg) if megatron else sp))
    return TrainerPlan(
        role=role,
        strategy=strategy,
        fsdp=fsdp,
        megatron=meg,
        sp=sp,
        dp=dp,
        param_offload=meg.param_offload if megatron else fsdp.param_offload,
        optimizer_offload=meg.optimizer_offload if megatron else fsdp.optimizer_offload,
        cpu_offload_policy=strategy is Strategy.FSDP2 and fsdp.offload_policy,
        gradient_checkpointing=ckpt,
    )


@last_by_identity  # verl's checks ask for it again for the same scenario (calculator.memo)
def actor_trainer(s: Scenario) -> TrainerPlan:
    a = s.actor
    return _trainer(
        s,
        Role.ACTOR,
        Strategy(a.strategy),
        a.fsdp_config,
        a.megatron,
        a.ulysses_sequence_parallel_size,
        s.model.enable_gradient_checkpointing,
    )


@last_by_identity  # verl's checks ask for it again for the same scenario (calculator.memo)
def critic_trainer(s: Scenario) -> TrainerPlan:
    c = s.critic
    return _trainer(
        s,
        Role.CRITIC,
        critic_strategy(s),
        c.fsdp,
        c.megatron,
        c.ulysses_sequence_parallel_size,
        c.enable_gradient_checkpointing,
    )


@last_by_identity  # verl's checks ask for it again for the same scenario (calculator.memo)
def ref_trainer(s: Scenario) -> TrainerPlan:
    """The reference policy's forward-only engine: the actor's strategy and Megatron layout, the ref's FSDP
    section and Ulysses SP (null = the actor's). ``param_offload``: Megatron ``ref.megatron_param_offload``
    (null = the actor's); FSDP the configured ``ref.fsdp_config.param_offload`` (verl forces CPU offload on
    forward-only FSDP engines whatever it says: ``Resolved.ref_on_gpu`` is the residency that results)."""
    a, r = s.actor, s.ref
    plan = _trainer(
        s,
        Role.REF,
        Strategy(a.strategy),
        r.fsdp_config,
        a.megatron,
        r.ulysses_sequence_parallel_size or a.ulysses_sequence_parallel_size,
        False,
    )
    if plan.is_megatron:
        off = r.megatron_param_offload if r.megatron_param_offload is not None else a.megatron.param_offload
    else:
        off = r.fsdp_config.param_offload
    return replace(plan, param_offload=off, optimizer_offload=False)
