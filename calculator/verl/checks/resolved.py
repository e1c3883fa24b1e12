"""The resolved settings the config rules read, by the names the rules use.

Every value comes from the resolve layer (``calculator.resolve``): the inheritance table
(``calculator.resolve.inheritance``), the role and engine plans (``calculator.resolve.roles``). Nothing here
re-states a verl rule; ``padded_batch`` is the V1 trainer's batch padding, used only by the checks.
"""

from __future__ import annotations

import math

from calculator.inputs.scenario import Scenario
from calculator.resolve.inheritance import value
from calculator.resolve.roles import (
    actor_trainer,
    critic_strategy,
    critic_trainer,
    megatron_model_parallel,
    need_critic,
    ref_trainer,
)
from calculator.resolve.roles import need_reference_policy as need_ref

__all__ = [
    "_actor_sp",
    "_critic_dynamic_config",
    "_critic_sp",
    "_critic_strategy",
    "_megatron_mp",
    "_ref_dynamic",
    "_ref_sp",
    "_rollout_dynamic",
    "actor_dp",
    "critic_dp",
    "need_critic",
    "need_ref",
    "padded_batch",
    "ref_dp",
]

_megatron_mp = megatron_model_parallel
_critic_strategy = critic_strategy


def _rollout_dynamic(s: Scenario) -> bool:
    return bool(value(s, "rollout.log_prob_use_dynamic_bsz"))


def _ref_dynamic(s: Scenario) -> bool:
    return bool(value(s, "ref.log_prob_use_dynamic_bsz"))


def _critic_dynamic_config(s: Scenario) -> bool:
    """The critic's ``use_dynamic_bsz`` as configured (what verl validates; the 0.9.1 V1 trainer then packs
    dynamically anyway, see ``Resolved.passes``)."""
    return bool(value(s, "critic.use_dynamic_bsz"))


def _actor_sp(s: Scenario) -> int:
    return actor_trainer(s).sp


def _ref_sp(s: Scenario) -> int:
    return ref_trainer(s).sp


def _critic_sp(s: Scenario) -> int:
    return critic_trainer(s).sp


def actor_dp(s: Scenario) -> int:
    """Data-parallel size of the actor engine (FSDP: world / Ulysses SP; Megatron: world / (TP*PP*CP))."""
    return actor_trainer(s).dp


def ref_dp(s: Scenario) -> int:
    """Data-parallel size of the reference policy's engine (the actor's strategy and Megatron layout)."""
    return ref_trainer(s).dp


def critic_dp(s: Scenario) -> int:
    return critic_trainer(s).dp


def padded_batch(s: Scenario) -> int:
    """Sequences after the V1 trainer pads the batch: a multiple of lcm(actor DP, actor mini-batch x n
    [, critic mini-batch x n]) (trainer/ppo/v1/trainer_base.py _get_required_batch_multiple, _balance_batch)."""
    n = s.rollout.n
    multiple = math.lcm(actor_dp(s), s.actor.ppo_mini_batch_size * n)
    if need_critic(s):
        multiple = math.lcm(multiple, value(s, "critic.ppo_mini_batch_size") * n)
    total = s.data.train_batch_size * n
    return -(-total // multiple) * multiple
