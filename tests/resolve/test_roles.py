"""Who exists in a verl step and with which engine settings (calculator/resolve/roles.py): verl's
need_reference_policy / need_critic rules (trainer/ppo/utils.py), LoRA's ref served by the actor, the colocated
reward model, and the trainer plans' inherited strategy, SP, DP and offload flags."""

from __future__ import annotations

import pytest

from calculator import load_scenario
from calculator.names import Strategy
from calculator.resolve.roles import (
    actor_trainer,
    critic_trainer,
    need_critic,
    need_reference_policy,
    need_reward_model,
    ref_is_actor,
    ref_trainer,
)

GRPO, PPO = "qwen2.5-7b-grpo-8xh100", "qwen2.5-7b-ppo-8xh100"


@pytest.mark.parametrize(
    ("overrides", "ref"),
    [
        ({}, True),  # the GRPO preset uses the KL loss
        ({"actor.use_kl_loss": False}, False),
        ({"actor.use_kl_loss": False, "algorithm.use_kl_in_reward": True}, True),
    ],
)
def test_reference_policy_exists_with_a_kl_term(overrides: dict, ref: bool):
    s = load_scenario(GRPO, overrides=overrides)
    assert need_reference_policy(s) is ref
    assert not ref_is_actor(s)  # no LoRA: a separate copy
    assert ref_is_actor(load_scenario(s, overrides={"model.lora_rank": 8})) is ref  # LoRA: the actor without adapters


@pytest.mark.parametrize(
    ("preset", "overrides", "critic"),
    [
        (PPO, {}, True),  # gae
        (GRPO, {}, False),
        (GRPO, {"critic.enable": True}, True),  # explicit wins
        (PPO, {"critic.enable": False}, False),
    ],
)
def test_critic_follows_the_estimator_unless_set(preset: str, overrides: dict, critic: bool):
    assert need_critic(load_scenario(preset, overrides=overrides)) is critic


def test_reward_model_is_colocated_only_without_its_own_pool():
    assert not need_reward_model(load_scenario(GRPO))  # rule-based reward on CPU
    on = load_scenario(GRPO, overrides={"reward_model.enable": True})
    assert need_reward_model(on)
    assert not need_reward_model(load_scenario(on, overrides={"reward_model.enable_resource_pool": True}))


def test_trainer_plans_inherit_and_read_their_backend_section():
    s = load_scenario(
        PPO,
        overrides={
            "actor.strategy": "fsdp2",
            "critic.strategy": None,
            "actor.fsdp_config.offload_policy": True,
            "critic.fsdp.param_offload": True,
        },
    )
    actor, critic = actor_trainer(s), critic_trainer(s)
    assert actor.strategy is Strategy.FSDP2 and actor.cpu_offload_policy and actor.params_offloaded_when_idle
    assert critic.strategy is Strategy.FSDP2 and critic.param_offload and not critic.cpu_offload_policy
    m = load_scenario(
        GRPO,
        overrides={
            "actor.strategy": "megatron",
            "actor.megatron.param_offload": True,
            "actor.fsdp_config.param_offload": False,
            "actor.use_kl_loss": True,
        },
    )
    assert actor_trainer(m).param_offload  # the Megatron section's flag, not the FSDP one
    assert ref_trainer(m).param_offload  # a Megatron ref inherits the actor's param_offload unless set
    off = load_scenario(m, overrides={"ref.megatron_param_offload": False})
    assert not ref_trainer(off).param_offload


@pytest.mark.parametrize(("ulysses", "dp"), [(1, 8), (2, 4), (4, 2)])
def test_fsdp_data_parallel_is_world_over_ulysses(ulysses: int, dp: int):
    s = load_scenario(GRPO, overrides={"actor.ulysses_sequence_parallel_size": ulysses})
    assert actor_trainer(s).dp == dp and actor_trainer(s).sp == ulysses
    assert ref_trainer(s).sp == ulysses  # ref.ulysses_sequence_parallel_size null = the actor's
