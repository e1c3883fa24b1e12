"""The resolved plan: every value verl would infer from a scenario, decided once, with where it came from.

``resolve(scenario)`` is the only place that applies verl's inheritance rules (null = inherit, legacy
fallbacks, version behaviour, engine settings, roles). Memory, time, checks, planner, advisor and views read
the :class:`Resolved` plan and never re-derive a rule; ``Resolved.decisions`` records each inherited or
assumed value with its source, for the report and the dashboard.

The rules, as verl 0.9.1 applies them (``trainer/config/*.yaml`` interpolations, ``workers/config/*.py``,
``trainer/ppo/v1/trainer_base.py``):
- old log-prob: ``rollout.log_prob_micro_batch_size_per_gpu``, ``log_prob_use_dynamic_bsz`` (YAML default
  ``${actor.use_dynamic_bsz}``) and ``log_prob_max_token_len_per_gpu`` (``${actor.ppo_max_token_len_per_gpu}``);
- ref log-prob: the ref's own keys, the same interpolations, Ulysses SP ``${actor.ulysses_sequence_parallel_size}``;
- critic: strategy ``${actor.strategy}``, mini-batch ``${actor.ppo_mini_batch_size}``, epochs
  ``${actor.ppo_epochs}``, ``use_dynamic_bsz`` ``${actor.use_dynamic_bsz}``, forward budget
  ``${critic.ppo_max_token_len_per_gpu}``; the 0.9.1 V1 trainer packs the critic dynamically with a fixed
  32,768-token budget (``calculator.resolve.versions``: ``critic_always_dynamic``);
- a micro-batch size that nothing sets is *assumed* to be 1 sequence (verl would refuse to start: the
  checks in ``calculator.verl.checks`` say so; the estimate uses 1 and records the assumption).
Left out: Megatron's own micro-batch rules beyond these keys, virtual pipeline schedules.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from calculator.inputs.hardware import GpuSpec
from calculator.inputs.presets import get_gpu
from calculator.inputs.scenario import Scenario
from calculator.memo import last_by_identity
from calculator.model.architecture import Architecture
from calculator.names import PHASE_ORDER, Phase
from calculator.resolve import batching
from calculator.resolve.architectures import resolve_architectures
from calculator.resolve.batching import CRITIC_V1_TOKEN_BUDGET, Lengths, PassBatch
from calculator.resolve.engines import EngineSettings, reward_engine, rollout_engine
from calculator.resolve.inheritance import ASSUMED_MICRO_BATCH, inherited, value
from calculator.resolve.roles import (
    TrainerPlan,
    actor_trainer,
    critic_trainer,
    need_critic,
    need_reference_policy,
    need_reward_model,
    ref_is_actor,
    ref_trainer,
)
from calculator.resolve.versions import VersionBehaviour, behaviour


class Source(StrEnum):
    """Where a resolved value came from."""

    SET = "set"  # the scenario sets it
    INHERITED = "inherited"  # null in the scenario: verl's interpolation gives another key's value
    FIXED = "fixed by verl"  # the release ignores the setting and uses its own value
    ASSUMED = "assumed"  # nothing sets it and verl has no default: rlplan assumes a value (verl would refuse)


@dataclass(frozen=True, slots=True)
class Decision:
    """One resolved value and its provenance (``key`` is the native dotted field it stands for)."""

    key: str
    value: object
    source: Source
    note: str = ""

    def text(self) -> str:
        return f"{self.key} = {self.value} ({self.source}{': ' + self.note if self.note else ''})"


@dataclass(frozen=True, slots=True)
class PassPlan:
    """One pass over the batch (a forward-only log-prob / values pass, or an update): its settings and the
    micro-batch one GPU holds, for the expected lengths and for the worst case (every sequence at max)."""

    phase: Phase
    trainer: TrainerPlan  # the engine that runs the pass (the actor serves the ref under LoRA)
    num_sequences: int  # sequences in one pass (a mini-batch for updates)
    micro_batch_size_per_gpu: int
    use_dynamic_bsz: bool
    max_token_len_per_gpu: int
    sp: int
    expected: PassBatch
    worst: PassBatch

    def batch(self, worst: bool) -> PassBatch:
        return self.worst if worst else self.expected


@dataclass(frozen=True, slots=True)
class Resolved:
    """A scenario with every verl rule applied (see the module docstring)."""

    scenario: Scenario
    gpu: GpuSpec
    actor_arch: Architecture
    critic_arch: Architecture | None  # the critic's own model when it names one
    reward_arch: Architecture | None
    behaviour: VersionBehaviour
    has_critic: bool
    has_ref: bool  # a reference policy is used (KL loss or KL in reward)
    ref_via_actor: bool  # LoRA: ref log-prob is the actor with adapters off
    has_reward_model: bool
    actor: TrainerPlan
    critic: TrainerPlan | None
    ref: TrainerPlan | None  # None when there is no separate ref model
    rollout: EngineSettings
    reward: EngineSettings | None
    lengths: Lengths  # expected (the means; default the max)
    worst_lengths: Lengths  # every sequence at its max
    passes: dict[Phase, PassPlan]
    phases: tuple[Phase, ...]  # the phases that occur, in step order
    num_processes: int  # processes with a CUDA context per GPU (trainer [+ rollout server] [+ reward])
    num_replicas: int
    num_sequences_generated: int
    num_sequences_trained: int
    sequences_per_replica: int
    actor_update_epochs: int
    critic_update_epochs: int
    actor_mini_batches: int  # mini-batches (optimizer steps) per epoch
    critic_mini_batches: int
    entropy_in_update: bool  # update_actor computes the entropy (entropy_coeff != 0 or calculate_entropy)
    ref_on_gpu: bool  # the separate ref keeps its params on the GPU (Megatron without offload)
    ref_streams_weights: bool  # the FSDP ref forward streams fp32 shards from CPU each pass
    # The trainer's passes run with PyTorch's expandable segments (VersionBehaviour.trainer_expandable_segments on a
    # GPU that allocator_switch_reaches).
    trainer_expandable_segments: bool
    decisions: tuple[Decision, ...]

    @property
    def has_separate_ref(self) -> bool:
        return self.ref is not None

    @property
    def trained_seq_len(self) -> int:
        """Tokens one sequence occupies in training passes: real (packed, remove-padding) or padded to max."""
        return self.lengths.sequence if self.scenario.model.use_remove_padding else self.worst_lengths.sequence


class _Decider:
    """Resolves inherited values (``calculator.resolve.inheritance``) and records where each came from."""

    def __init__(self, s: Scenario) -> None:
        self.s = s
        self.decisions: list[Decision] = []

    def get(self, key: str, assumed: object | None = None) -> Any:
        """The value of ``key`` after inheritance; ``assumed`` (recorded as such) when nothing sets it."""
        value, source = inherited(self.s, key)
        if value is not None:
            if source != key:
                self.decisions.append(Decision(key, value, Source.INHERITED, f"from {source}"))
            return value
        if assumed is not None:
            self.decisions.append(
                Decision(key, assumed, Source.ASSUMED, "nothing sets it and verl would refuse to start without it")
            )
        return assumed

    def micro(self, key: str, dynamic: bool) -> int:
        """A micro-batch size (sequences): inherited, else 1 sequence, recorded as assumed unless the pass packs
        by a token budget (then the size is unused)."""
        got = self.get(key, None if dynamic else ASSUMED_MICRO_BATCH)
        return int(got or ASSUMED_MICRO_BATCH)

    def fixed(self, key: str, value: object, note: str) -> Any:
        self.decisions.append(Decision(key, value, Source.FIXED, note))
        return value


def _pass(
    r_phase: Phase,
    trainer: TrainerPlan,
    *,
    num_sequences: int,
    micro: int,
    dynamic: bool,
    budget: int,
    sp: int,
    s: Scenario,
    lengths: Lengths,
    worst: Lengths,
) -> PassPlan:
    max_len = worst.sequence

    def batch(w: bool) -> PassBatch:
        seq_len = (worst if w else lengths).sequence if s.model.use_remove_padding else max_len
        return batching.pass_batch(
            num_sequences=num_sequences,
            micro_batch_size_per_gpu=micro,
            use_dynamic_bsz=dynamic,
            max_token_len_per_gpu=budget,
            sp=sp,
            # Sequences are spread over GPUs / Ulysses SP for every backend: the Megatron step-time model
            # regroups them into its DP = GPUs / (TP x PP x CP) (calculator.timing.backend.megatron_micro).
            dp=max(1, s.hardware.num_gpus // sp),
            seq_len=seq_len,
            max_seq_len=max_len,
            worst=w,
        )

    return PassPlan(r_phase, trainer, num_sequences, micro, dynamic, budget, sp, batch(False), batch(True))


def _actor_passes(s: Scenario, d: _Decider, actor: TrainerPlan, common: dict[str, Any]) -> dict[Phase, PassPlan]:
    a, r = s.actor, s.rollout
    n = r.n
    micro = d.micro("actor.ppo_micro_batch_size_per_gpu", a.use_dynamic_bsz)
    mini = min(a.ppo_mini_batch_size, s.data.train_batch_size) * n
    lp_dyn = d.get("rollout.log_prob_use_dynamic_bsz")
    lp_micro = d.micro("rollout.log_prob_micro_batch_size_per_gpu", lp_dyn)
    lp_budget = d.get("rollout.log_prob_max_token_len_per_gpu")
    sp = actor.sp
    return {
        Phase.UPDATE_ACTOR: _pass(
            Phase.UPDATE_ACTOR,
            actor,
            num_sequences=mini,
            micro=micro,
            dynamic=a.use_dynamic_bsz,
            budget=a.ppo_max_token_len_per_gpu,
            sp=sp,
            **common,
        ),
        Phase.OLD_LOG_PROB: _pass(
            Phase.OLD_LOG_PROB,
            actor,
            num_sequences=s.data.train_batch_size * n,
            micro=lp_micro,
            dynamic=lp_dyn,
            budget=lp_budget,
            sp=sp,
            **common,
        ),
    }


def _ref_pass(s: Scenario, d: _Decider, ref: TrainerPlan, common: dict[str, Any]) -> PassPlan:
    dyn = d.get("ref.log_prob_use_dynamic_bsz")
    micro = d.micro("ref.log_prob_micro_batch_size_per_gpu", dyn)
    budget = d.get("ref.log_prob_max_token_len_per_gpu")
    return _pass(
        Phase.REF_LOG_PROB,
        ref,
        num_sequences=s.data.train_batch_size * s.rollout.n,
        micro=micro,
        dynamic=dyn,
        budget=budget,
        sp=ref.sp,
        **common,
    )


def _deferred_sync(plan: TrainerPlan, ver: VersionBehaviour, d: _Decider, update: PassPlan | None) -> TrainerPlan:
    """Whether an FSDP update defers its gradient sync to the last micro-batch (unsharded grads until then): verl
    0.9.0's engine always does, later ones with use_no_sync_for_gradient_accumulation. The last micro-batch always
    syncs (0.9.1 ``workers/engine/fsdp/transformer_impl.py`` ``_gradient_sync_context``: ``if is_last_micro_batch
    or not defer_sync: yield``), so an update of one micro-batch per mini-batch defers nothing: sharded grads, as
    without the setting. Judged on the worst case, whose micro-batches are at least the expected ones'."""
    flag = "use_no_sync_for_gradient_accumulation"
    if plan.is_megatron or not (ver.always_defer_grad_sync or getattr(plan.fsdp, flag)):
        return plan
    key = f"{'actor.fsdp_config' if plan.role == 'actor' else 'critic.fsdp'}.{flag}"
    deferred = update is None or update.worst.num_micro_batches > 1  # the micro-batches before the last defer
    if deferred == getattr(plan.fsdp, flag):
        return plan
    if deferred:
        note = f"verl {ver.version} always defers FSDP gradient sync to the last micro-batch (unsharded grads)"
    else:
        note = "one micro-batch per mini-batch: it is the last, whose gradients verl syncs (sharded grads)"
    d.fixed(key, deferred, note)
    return dataclasses.replace(plan, fsdp=plan.fsdp.model_copy(update={flag: deferred}))


def _critic_passes(
    s: Scenario, d: _Decider, critic: TrainerPlan, ver: VersionBehaviour, common: dict[str, Any]
) -> dict[Phase, PassPlan]:
    c = s.critic
    n = s.rollout.n
    mini = d.get("critic.ppo_mini_batch_size")
    if ver.critic_always_dynamic:
        micro, fwd_micro = (
            d.micro(k, True) for k in ("critic.ppo_micro_batch_size_per_gpu", "critic.forward_micro_batch_size_per_gpu")
        )
        if ver.critic_update_budget_from_ppo:  # 0.8.0 ray_trainer.py:813-814: update by ppo_max_token_len_per_gpu
            note = "the verl 0.8 critic engine packs inference by critic.ppo_infer_max_token_len_per_gpu"
            dyn = d.fixed("critic.use_dynamic_bsz", True, note)
            fwd_budget = d.fixed("critic.forward_max_token_len_per_gpu", CRITIC_V1_TOKEN_BUDGET, note)
            budget = c.ppo_max_token_len_per_gpu
        else:
            note = f"the {ver.version} V1 trainer packs the critic by critic.ppo_infer_max_token_len_per_gpu"
            dyn = d.fixed("critic.use_dynamic_bsz", True, note)
            budget = fwd_budget = d.fixed("critic.ppo_max_token_len_per_gpu", CRITIC_V1_TOKEN_BUDGET, note)
    else:
        dyn = d.get("critic.use_dynamic_bsz")
        micro = d.micro("critic.ppo_micro_batch_size_per_gpu", dyn)
        fwd_micro = d.micro("critic.forward_micro_batch_size_per_gpu", dyn)
        budget = c.ppo_max_token_len_per_gpu
        fwd_budget = d.get("critic.forward_max_token_len_per_gpu")
    return {
        Phase.CRITIC_VALUES: _pass(
            Phase.CRITIC_VALUES,
            critic,
            num_sequences=s.data.train_batch_size * n,
            micro=fwd_micro,
            dynamic=dyn,
            budget=fwd_budget,
            sp=critic.sp,
            **common,
        ),
        Phase.UPDATE_CRITIC: _pass(
            Phase.UPDATE_CRITIC,
            critic,
            num_sequences=min(mini, s.data.train_batch_size) * n,
            micro=micro,
            dynamic=dyn,
            budget=budget,
            sp=critic.sp,
            **common,
        ),
    }


def _phases(has_reward: bool, has_ref: bool, has_critic: bool) -> tuple[Phase, ...]:
    skip = set()
    if not has_reward:
        skip.add(Phase.REWARD)
    if not has_ref:
        skip.add(Phase.REF_LOG_PROB)
    if not has_critic:
        skip |= {Phase.CRITIC_VALUES, Phase.UPDATE_CRITIC}
    return tuple(p for p in PHASE_ORDER if p not in skip)


Archs = tuple[Architecture, Architecture | None, Architecture | None]


def resolve(s: Scenario, archs: Archs | None = None) -> Resolved:
    """Apply verl's rules to ``s`` once (raises ``InputError`` for an unknown model or GPU). ``archs``:
    the (actor, critic, reward) architectures when the caller already has them (a sweep's memoised ones).
    Without ``archs`` the last scenario's plan is remembered by identity (``calculator.memo``): the planner
    resolves a candidate for its KV test and again in its estimate."""
    if archs is None:
        return _resolve_last(s)
    return _resolve(s, archs)


def allocator_switch_reaches(gpu: GpuSpec) -> bool:
    """Whether verl's expandable-segments switch reaches this GPU's allocator: torch.cuda (NVIDIA, and AMD through
    ROCm's torch.cuda) in every release that has it; Ascend only from verl 0.8 and torch-npu >= 2.9.0, which rlplan
    does not assume (``VersionBehaviour.trainer_expandable_segments``)."""
    return gpu.vendor != "huawei"


@last_by_identity
def _resolve_last(s: Scenario) -> Resolved:
    return _resolve(s, resolve_architectures(s))


def _resolve(s: Scenario, archs: Archs) -> Resolved:
    actor_arch, critic_arch, reward_arch = archs
    ver = behaviour(s.verl_version)
    d = _Decider(s)
    has_critic, has_ref, has_reward = need_critic(s), need_reference_policy(s), need_reward_model(s)
    via_actor = ref_is_actor(s)
    actor0, critic0 = actor_trainer(s), critic_trainer(s) if has_critic else None
    ref = ref_trainer(s) if has_ref and not via_actor else None
    ln, lw = batching.lengths(s, worst=False), batching.lengths(s, worst=True)
    common = {"s": s, "lengths": ln, "worst": lw}
    passes = _actor_passes(s, d, actor0, common)
    if has_ref:
        passes[Phase.REF_LOG_PROB] = _ref_pass(s, d, ref or actor0, common)
    if critic0 is not None:
        passes.update(_critic_passes(s, d, critic0, ver, common))
    # The gradient sync of an update is deferred or not by its micro-batches: the plans are final once they are known.
    actor = _deferred_sync(actor0, ver, d, passes.get(Phase.UPDATE_ACTOR))
    critic = _deferred_sync(critic0, ver, d, passes.get(Phase.UPDATE_CRITIC)) if critic0 is not None else None
    if actor is not actor0 or critic is not critic0:
        final = {id(actor0): actor, id(critic0): critic}
        passes = {ph: dataclasses.replace(p, trainer=final.get(id(p.trainer), p.trainer)) for ph, p in passes.items()}
    a = s.actor
    critic_epochs = d.get("critic.ppo_epochs") if has_critic else 0
    critic_mini = min(value(s, "critic.ppo_mini_batch_size"), s.data.train_batch_size)
    processes = (1 if ver.rollout_in_trainer_process else 2) + (1 if has_reward else 0)
    gpu = get_gpu(s.hardware.gpu)
    expandable = ver.trainer_expandable_segments and allocator_switch_reaches(gpu)
    if expandable:
        note = (
            f"verl {ver.version} switches it on through torch.cuda.memory._set_allocator_settings when the trainer "
            "leaves rollout mode and off for the weight sync (utils/device.py set_expandable_segments): no "
            "fragmentation term in the trainer's phases"
        )
        d.fixed("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", note)
    return Resolved(
        scenario=s,
        gpu=gpu,
        actor_arch=actor_arch,
        critic_arch=critic_arch,
        reward_arch=reward_arch,
        behaviour=ver,
        has_critic=has_critic,
        has_ref=has_ref,
        ref_via_actor=via_actor,
        has_reward_model=has_reward,
        actor=actor,
        critic=critic,
        ref=ref,
        rollout=rollout_engine(s, actor_arch, ver),
        reward=reward_engine(s) if has_reward else None,
        lengths=ln,
        worst_lengths=lw,
        passes=passes,
        phases=_phases(has_reward, has_ref, has_critic),
        num_processes=processes,
        num_replicas=batching.rollout_replicas(s),
        num_sequences_generated=batching.num_sequences_generated(s),
        num_sequences_trained=batching.num_sequences_trained(s),
        sequences_per_replica=batching.sequences_per_replica(s),
        actor_update_epochs=a.ppo_epochs,
        critic_update_epochs=int(critic_epochs or 0),
        actor_mini_batches=batching.ceil_div(
            s.data.train_batch_size, min(a.ppo_mini_batch_size, s.data.train_batch_size)
        ),
        critic_mini_batches=batching.ceil_div(s.data.train_batch_size, critic_mini),
        entropy_in_update=a.entropy_coeff != 0 or a.calculate_entropy,
        ref_on_gpu=ref is not None and ref.is_megatron and not ref.param_offload,
        ref_streams_weights=ref is not None
        and not ref.is_megatron
        and (ver.ref_forward_streams_weights or ref.param_offload),
        trainer_expandable_segments=expandable,
        decisions=tuple(d.decisions),
    )
