"""The settings as verl 0.9.1 resolves them: its interpolations and rlplan's "inherit" Nones.

A None in the Scenario means "inherit" where verl's default is an interpolation (``rollout`` and ``ref``
``log_prob_use_dynamic_bsz`` follow the actor's, the ref's Ulysses SP follows the actor's). Which roles run
follows verl ``trainer/ppo/utils.py`` (``need_critic``, ``need_reference_policy``); data-parallel sizes
follow the engines (FSDP: world / Ulysses SP; Megatron: world / (TP x PP x CP)); ``padded_batch`` follows
the V1 trainer's batch padding.
"""

from __future__ import annotations

import math
from typing import Any

from calculator.inputs.scenario import Scenario
from calculator.model.roles import need_critic  # verl trainer/ppo/utils.py need_critic


def need_ref(s: Scenario) -> bool:
    """verl trainer/ppo/utils.py need_reference_policy (with LoRA the ref is the actor without adapters)."""
    return s.algorithm.use_kl_in_reward or s.actor.use_kl_loss


def _rollout_dynamic(s: Scenario) -> bool:
    r = s.rollout.log_prob_use_dynamic_bsz
    return s.actor.use_dynamic_bsz if r is None else r


def _ref_dynamic(s: Scenario) -> bool:
    r = s.ref.log_prob_use_dynamic_bsz
    return s.actor.use_dynamic_bsz if r is None else r


def _critic_dynamic_config(s: Scenario) -> bool:
    c = s.critic.use_dynamic_bsz
    return s.actor.use_dynamic_bsz if c is None else c


def _actor_sp(s: Scenario) -> int:
    return 1 if s.actor.strategy == "megatron" else s.actor.ulysses_sequence_parallel_size


def _ref_sp(s: Scenario) -> int:
    if s.actor.strategy == "megatron":
        return 1
    return s.ref.ulysses_sequence_parallel_size or s.actor.ulysses_sequence_parallel_size


def _critic_strategy(s: Scenario) -> str:
    return s.critic.strategy or s.actor.strategy


def _critic_sp(s: Scenario) -> int:
    return 1 if _critic_strategy(s) == "megatron" else s.critic.ulysses_sequence_parallel_size


def _megatron_mp(m: Any) -> int:
    return m.tensor_model_parallel_size * m.pipeline_model_parallel_size * m.context_parallel_size


def actor_dp(s: Scenario) -> int:
    """Data-parallel size of the actor engine (FSDP: world / Ulysses SP; Megatron: world / (TP*PP*CP))."""
    g = s.hardware.num_gpus
    if s.actor.strategy == "megatron":
        return max(1, g // _megatron_mp(s.actor.megatron))
    return max(1, g // _actor_sp(s))


def critic_dp(s: Scenario) -> int:
    g = s.hardware.num_gpus
    if _critic_strategy(s) == "megatron":
        return max(1, g // _megatron_mp(s.critic.megatron))
    return max(1, g // _critic_sp(s))


def padded_batch(s: Scenario) -> int:
    """Sequences after the V1 trainer pads the batch: a multiple of lcm(actor DP, actor mini-batch x n
    [, critic mini-batch x n]) (trainer/ppo/v1/trainer_base.py _get_required_batch_multiple, _balance_batch)."""
    n = s.rollout.n
    multiple = math.lcm(actor_dp(s), s.actor.ppo_mini_batch_size * n)
    if need_critic(s):
        multiple = math.lcm(multiple, (s.critic.ppo_mini_batch_size or s.actor.ppo_mini_batch_size) * n)
    total = s.data.train_batch_size * n
    return -(-total // multiple) * multiple
