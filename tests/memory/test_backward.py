"""Gradients born during the backward (calculator/memory/backward.py): with one micro-batch per mini-batch the
update holds max(activations + logits, grads), not their sum; with several it holds both; Megatron's grad buffer
is always there. Qwen2.5-7B on 8 GPUs: sharded fp32 grads 7,615,616,512 x 4 B / 8 = 3,807,808,256 B."""

from __future__ import annotations

from calculator import estimate, load_scenario
from calculator.names import Phase
from calculator.report.estimate import build_context

BASE = "qwen2.5-7b-grpo-8xh100"
GRADS = 7_615_616_512 * 4 // 8
ONE_BIG = {"actor.use_dynamic_bsz": True, "actor.ppo_max_token_len_per_gpu": 1_000_000}
# 8 prompts x n 5 = 40 sequences, 5 per GPU, all in one micro-batch of short sequences: less than the grads
ONE_SMALL = {
    "actor.use_dynamic_bsz": False,
    "actor.ppo_mini_batch_size": 8,
    "actor.ppo_micro_batch_size_per_gpu": 8,
    "data.max_response_length": 256,
    "data.mean_response_length": 100,
}


def _update(overrides: dict):  # type: ignore[no-untyped-def]
    s = load_scenario(BASE, overrides=overrides)
    micro = build_context(s).r.passes[Phase.UPDATE_ACTOR].expected.num_micro_batches
    phase = next(p for p in estimate(s, with_time=False).phases if p.name == Phase.UPDATE_ACTOR)
    return micro, {c.name: c for c in phase.details}, phase


def _freed(comps: dict) -> int:
    return sum(c.bytes for name, c in comps.items() if name in ("actor_activations", "actor_logits", "actor_entropy"))


def test_several_micro_batches_hold_the_grads_beside_the_activations():
    micro, comps, _ = _update({"actor.use_dynamic_bsz": True, "actor.ppo_max_token_len_per_gpu": 8192})
    assert micro > 1
    assert comps["actor_grads"].bytes == GRADS


def test_one_micro_batch_holds_the_larger_of_activations_and_grads():
    micro, comps, phase = _update(ONE_BIG)
    assert micro == 1 and _freed(comps) > GRADS
    assert "actor_grads" not in comps  # 0 bytes beyond the activations: dropped, the activations say why
    assert "grads are born as the backward frees" in comps["actor_activations"].formula
    assert sum(c.bytes for c in phase.details) == phase.total_bytes


def test_one_small_micro_batch_adds_what_the_grads_exceed():
    micro, comps, _ = _update(ONE_SMALL)
    assert micro == 1 and _freed(comps) < GRADS
    assert comps["actor_grads"].bytes == GRADS - _freed(comps)
    assert "born as the backward frees" in comps["actor_grads"].formula


def test_megatron_grad_buffer_is_always_held():
    micro, comps, _ = _update({**ONE_BIG, "actor.strategy": "megatron"})
    assert micro == 1
    assert comps["actor_grads"].bytes > 0 and "born" not in comps["actor_grads"].formula
