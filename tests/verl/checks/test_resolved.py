"""The settings as verl 0.9.1 resolves them (calculator/verl/checks/resolved.py): which roles run, the engines'
data-parallel sizes and the V1 trainer's batch padding, hand-checked."""

from __future__ import annotations

import pytest

from calculator import load_scenario
from calculator.verl.checks import actor_dp, critic_dp, need_critic, need_ref, padded_batch
from tests.verl.checks.cases import GRPO, PPO


def test_padded_batch_follows_v1_trainer():
    s = load_scenario(GRPO, overrides={"data.train_batch_size": 1000, "rollout.n": 3, "actor.ppo_mini_batch_size": 8})
    # lcm(dp 8, mini 8 x 3 = 24) = 24; 3000 -> 3000 (already a multiple of 24)
    assert padded_batch(s) == 3000
    s = load_scenario(GRPO, overrides={"data.train_batch_size": 1001, "rollout.n": 1, "actor.ppo_mini_batch_size": 7})
    assert padded_batch(s) == 1008  # lcm(8, 7) = 56


def test_padded_batch_includes_the_critic_mini_batch():
    """PPO: lcm(dp 8, actor mini 8 x 1, critic mini 12 x 1) = 24; 1000 sequences -> 1008."""
    s = load_scenario(
        PPO,
        overrides={
            "data.train_batch_size": 1000,
            "rollout.n": 1,
            "actor.ppo_mini_batch_size": 8,
            "critic.ppo_mini_batch_size": 12,
        },
    )
    assert need_critic(s)
    assert padded_batch(s) == 1008


@pytest.mark.parametrize(
    ("overrides", "dp"),
    [
        ({}, 8),  # FSDP: world 8
        ({"actor.ulysses_sequence_parallel_size": 2}, 4),  # FSDP: world / Ulysses SP
        ({"actor.strategy": "megatron", "actor.megatron.tensor_model_parallel_size": 2}, 4),  # world / TP
        (
            {
                "actor.strategy": "megatron",
                "actor.megatron.tensor_model_parallel_size": 2,
                "actor.megatron.pipeline_model_parallel_size": 2,
                "actor.ulysses_sequence_parallel_size": 2,  # ignored under Megatron
            },
            2,
        ),
        ({"hardware.num_gpus": 16}, 16),
    ],
)
def test_actor_dp(overrides: dict, dp: int) -> None:
    assert actor_dp(load_scenario(GRPO, overrides=overrides)) == dp


def test_critic_dp_follows_the_critic_engine():
    assert critic_dp(load_scenario(PPO)) == 8
    assert critic_dp(load_scenario(PPO, overrides={"critic.ulysses_sequence_parallel_size": 2})) == 4
    megatron = {"actor.strategy": "megatron", "critic.megatron.tensor_model_parallel_size": 4}
    assert critic_dp(load_scenario(PPO, overrides=megatron)) == 2  # the critic follows the actor's strategy


def test_need_ref_is_a_kl_term():
    assert need_ref(load_scenario(GRPO))  # KL loss
    no_kl = load_scenario(GRPO, overrides={"actor.use_kl_loss": False})
    assert not need_ref(no_kl)
    assert need_ref(load_scenario(no_kl, overrides={"algorithm.use_kl_in_reward": True}))
