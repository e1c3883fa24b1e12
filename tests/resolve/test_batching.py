"""Batch arithmetic (calculator/resolve/batching.py), by hand on the reference scenario (8 GPUs, 1,024 prompts x
n 5, mini-batch 256 prompts, micro-batch 16, log-prob micro-batch 32, prompt 512 + mean response 600 = 1,112 tokens,
max 1,536): sequences per rank, fixed and dynamic micro-batches, padding, Ulysses SP, ReMax, replicas."""

from __future__ import annotations

import pytest

from calculator import load_scenario
from calculator.names import Phase
from calculator.resolve import batching as b
from calculator.resolve.resolved import resolve

BASE = "qwen2.5-7b-grpo-8xh100"


@pytest.fixture(scope="module")
def s():
    return load_scenario(BASE)


def _batch(scenario, phase: Phase, worst: bool = False) -> b.PassBatch:
    """One GPU's micro-batch of a pass, as the resolved plan sizes it (calculator/resolve/resolved.py)."""
    return resolve(scenario).passes[phase].batch(worst)


def _update(scenario, worst: bool = False) -> b.PassBatch:
    return _batch(scenario, Phase.UPDATE_ACTOR, worst)


def test_lengths(s):
    assert b.lengths(s, worst=False) == b.Lengths(512, 600) and b.lengths(s, worst=False).sequence == 1112
    assert b.lengths(s, worst=True).sequence == 512 + 1024
    no_means = load_scenario(s, overrides={"data.mean_response_length": None})
    assert b.lengths(no_means, worst=False) == b.lengths(no_means, worst=True)  # the means default to the max


def test_sequences_per_step(s):
    assert b.num_prompts_generated(s) == 1024 and b.num_sequences_generated(s) == b.num_sequences_trained(s) == 5120
    dapo = load_scenario(s, overrides={"data.gen_batch_size": 3072})
    assert b.num_sequences_generated(dapo) == 3072 * 5 and b.num_sequences_trained(dapo) == 5120
    remax = load_scenario(s, overrides={"algorithm.adv_estimator": "remax", "rollout.n": 1})
    assert b.num_sequences_generated(remax) == 1024 * 1 + 1024  # one greedy baseline per prompt


def test_fixed_micro_batches(s):
    """update: 256 x 5 / 8 = 160 sequences per rank in micro-batches of 16; log-prob: 5,120 / 8 = 640 in 32s."""
    assert _update(s) == b.PassBatch(16 * 1112, 10, 160, "16 seqs x 1112 tok per micro-batch")
    old = _batch(s, Phase.OLD_LOG_PROB)
    assert (old.tokens_per_gpu, old.num_micro_batches, old.sequences_per_gpu) == (32 * 1112, 20, 640)
    assert _batch(load_scenario(s, overrides={"actor.use_kl_loss": True}), Phase.REF_LOG_PROB) == old
    assert _update(s, worst=True).tokens_per_gpu == 16 * 1536


def test_padding_and_ulysses(s):
    padded = load_scenario(s, overrides={"model.use_remove_padding": False})
    assert _update(padded).tokens_per_gpu == 16 * 1536  # every sequence at the max
    sp = load_scenario(s, overrides={"actor.ulysses_sequence_parallel_size": 2})
    batch = _update(sp)
    assert (batch.tokens_per_gpu, batch.num_micro_batches, batch.sequences_per_gpu) == (16 * 1112 // 2, 20, 320)


def test_dynamic_batch_by_hand(s):
    """160 sequences x 1,112 tokens = 177,920 tokens per rank, budget 4,096: ceil(177920 / 4096) = 44 micro-batches
    of ceil(177920 / 44) = 4,044 tokens; the worst case fills a micro-batch to the budget."""
    d = load_scenario(s, overrides={"actor.use_dynamic_bsz": True, "actor.ppo_max_token_len_per_gpu": 4096})
    mean = _update(d)
    assert (mean.tokens_per_gpu, mean.num_micro_batches, mean.sequences_per_gpu) == (4044, 44, 160)
    worst = _update(d, worst=True)
    assert (worst.tokens_per_gpu, worst.num_micro_batches) == (4096, 60)  # ceil(160 x 1536 / 4096) = 60


def test_dynamic_micro_batch_holds_at_least_one_sequence(s):
    """A 1,024-token budget below the 1,112-token mean sequence (verl would refuse it; the arithmetic must still
    hold): ceil(177920 / 1024) = 174 is capped at the 160 sequences, one whole sequence per micro-batch."""
    d = load_scenario(s, overrides={"actor.use_dynamic_bsz": True, "actor.ppo_max_token_len_per_gpu": 1024})
    mean = _update(d)
    assert (mean.num_micro_batches, mean.tokens_per_gpu) == (160, 1112)
    assert _update(d, worst=True).tokens_per_gpu == 1536  # one longest sequence


def test_critic_runs_dynamic_in_verl_0_9():
    """verl 0.9.1's V1 trainer gives the critic engine dynamic batching with a 32,768-token budget."""
    p = load_scenario("qwen2.5-7b-ppo-8xh100")  # 1,024 prompts x n 1, mini-batch 256
    r = resolve(p)
    assert r.behaviour.critic_always_dynamic and b.CRITIC_V1_TOKEN_BUDGET == 32768
    assert (
        r.passes[Phase.UPDATE_CRITIC].use_dynamic_bsz and r.passes[Phase.UPDATE_CRITIC].max_token_len_per_gpu == 32768
    )
    upd = r.passes[Phase.UPDATE_CRITIC].expected
    assert (upd.sequences_per_gpu, upd.num_micro_batches, upd.tokens_per_gpu) == (32, 2, 17792)  # ceil(35584 / 32768)
    values = r.passes[Phase.CRITIC_VALUES].expected
    assert (values.sequences_per_gpu, values.num_micro_batches) == (128, 5)  # ceil(128 x 1112 / 32768) = 5


def test_replicas(s):
    assert b.rollout_replicas(s) == 4 and b.sequences_per_replica(s) == 1280  # TP 2 on 8 GPUs
    dp = load_scenario(s, overrides={"rollout.data_parallel_size": 2})
    assert b.rollout_replicas(dp) == 2 and b.sequences_per_replica(dp) == 2560
