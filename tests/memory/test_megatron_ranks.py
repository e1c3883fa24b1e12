"""Megatron pipeline ranks (calculator/memory/megatron_ranks.py): each rank's own parameters and the rank an
estimate describes.

Hand-checked numbers, Qwen2.5-7B (hidden 3584, 28 layers, GQA 28 / 4 heads of 128 with q/k/v biases, MLP 18944,
vocab 152064, untied): a decoder layer holds 2 x 3584^2 + 2 x 3584 x 512 + 3584 + 2 x 512 (attention) +
3 x 3584 x 18944 (MLP) + 2 x 3584 (norms) = 233,057,792 params; the embedding and the LM head 152064 x 3584 =
544,997,376 each; the final norm 3584. Total 7,615,616,512.
"""

from __future__ import annotations

import pytest

from calculator import estimate
from calculator.inputs.presets import get_model
from calculator.inputs.scenario import MegatronSection
from calculator.memory.context import described_rank, rank_update_bytes
from calculator.memory.megatron_ranks import rank_layers, rank_params
from calculator.model.roles import policy_role, value_role
from calculator.names import Phase
from calculator.report.estimate import build_context
from tests.reference.test_megatron_moe_reference import _qwen3_30b_8_h20, _qwen3_235b_32_h20
from tests.reference.test_memory_fidelity_reference import _dsv3_96_h20

LAYER = 233_057_792
EMBEDDING = 544_997_376


def _meg(**kw: object) -> MegatronSection:
    return MegatronSection.model_validate(kw)


def test_each_rank_holds_its_own_layers_and_the_ends() -> None:
    role = policy_role("actor", get_model("qwen2.5-7b").architecture)
    assert role.num_params == 7_615_616_512
    ranks = rank_params(role, _meg(pipeline_model_parallel_size=4))
    assert ranks is not None
    assert [(r.num_layers, r.dense, r.expert) for r in ranks] == [
        (7, 7 * LAYER + EMBEDDING, 0),  # 2,176,401,920
        (7, 7 * LAYER, 0),
        (7, 7 * LAYER, 0),
        (7, 7 * LAYER + 3584 + EMBEDDING, 0),  # final norm + LM head
    ]
    assert sum(r.dense + r.expert for r in ranks) == role.num_params
    assert ranks[0].text == "PP rank 0 of 4 (7 layers + embedding)"
    assert ranks[3].text == "PP rank 3 of 4 (7 layers + output layer)"


def test_a_tied_embedding_has_a_copy_on_the_last_rank_and_a_critic_a_value_head() -> None:
    arch = get_model("qwen2.5-3b").architecture
    assert arch.tie_word_embeddings
    role = policy_role("actor", arch)
    ranks = rank_params(role, _meg(pipeline_model_parallel_size=2))
    assert ranks is not None
    assert sum(r.dense for r in ranks) == role.num_params + arch.embedding_params()  # language_module.py's copy
    one = rank_params(role, _meg())
    assert one is not None and one[0].dense == role.num_params  # PP 1: one copy
    critic = value_role("critic", arch)
    ranks = rank_params(critic, _meg(pipeline_model_parallel_size=2))
    assert ranks is not None
    assert sum(r.dense for r in ranks) == critic.num_params  # a value head (h + 1), no vocabulary-sized output


def test_layers_per_rank_follow_megatron_core() -> None:
    # interleaved (VPP 2, even): chunk j of rank r starts at (j x PP + r) x L / (PP x v)
    got = rank_layers(28, _meg(pipeline_model_parallel_size=2, virtual_pipeline_model_parallel_size=2))
    assert got == (tuple(range(0, 7)) + tuple(range(14, 21)), tuple(range(7, 14)) + tuple(range(21, 28)))
    # uneven: verl's DeepSeek-V3 script, 61 layers as 11 x 5 + 6
    got = rank_layers(61, _meg(pipeline_model_parallel_size=12, num_layers_in_last_pipeline_stage=6))
    assert got is not None and got[0] == (0, 1, 2, 3, 4) and got[-1] == tuple(range(55, 61))
    # a split Megatron-core refuses (a verl check error): no per-rank shares
    assert rank_layers(61, _meg(pipeline_model_parallel_size=12)) is None


def test_deepseek_v3_ranks_hold_unequal_shares() -> None:
    """Three dense layers first: rank 0 holds 2 MoE layers of 256 routed experts of 3 x 7168 x 2048 params, the last
    rank 6 (67,645,734,912 expert params, its formula's number)."""
    role = policy_role("actor", get_model("deepseek-v3").architecture)
    ranks = rank_params(role, _meg(pipeline_model_parallel_size=12, num_layers_in_last_pipeline_stage=6))
    assert ranks is not None
    routed = 256 * 3 * 7168 * 2048
    assert [r.expert for r in (ranks[0], ranks[1], ranks[-1])] == [2 * routed, 5 * routed, 6 * routed]
    mean = role.num_params / 12
    assert (ranks[0].dense + ranks[0].expert) / mean == pytest.approx(0.459, abs=0.001)
    assert (ranks[-1].dense + ranks[-1].expert) / mean == pytest.approx(1.251, abs=0.001)


@pytest.mark.parametrize("make", [_qwen3_235b_32_h20, _dsv3_96_h20])
def test_the_rank_described_holds_the_most_in_the_update(make) -> None:  # type: ignore[no-untyped-def]
    s = make()
    ctx = build_context(s)
    r, actor = ctx.r, ctx.actor
    ranks = rank_params(actor, r.actor.megatron)
    assert ranks is not None
    held = [rank_update_bytes(r, actor, r.actor, Phase.UPDATE_ACTOR, rk) for rk in ranks]
    chosen = described_rank(r, actor, r.actor, Phase.UPDATE_ACTOR)
    assert chosen is not None and chosen.rank == held.index(max(held))  # the first of the largest
    assert ctx.actor_state.pp_rank == chosen


def test_logits_only_on_the_last_rank() -> None:
    """verl's Qwen3-235B script: rank 0 (11 layers + embedding, 8 micro-batches in flight) holds the most, and has
    no output layer; verl's DeepSeek-V3 script: its last rank (6 MoE layers + output layer, 1.25x the mean share)."""
    first = next(p for p in estimate(_qwen3_235b_32_h20(), with_time=False).phases if p.name == "update_actor")
    assert "actor_logits" not in first.components
    assert "PP rank 0 of 8 (11 layers + embedding)" in next(
        d.formula for d in first.details if d.name == "actor_params"
    )
    last = next(p for p in estimate(_dsv3_96_h20(), with_time=False).phases if p.name == "update_actor")
    assert "actor_logits" in last.components
    assert "PP rank 11 of 12 (6 layers + output layer)" in next(
        d.formula for d in last.details if d.name == "actor_params"
    )


def test_the_final_norm_is_on_the_last_rank_only() -> None:
    """Megatron-core builds ``final_layernorm`` on the last stage (gpt_model.py ``post_process``): verl's DeepSeek-V3
    script describes its last rank, whose update activations add the norm's saved input, rsigma and output, TP 8 with
    sequence parallelism: (2 x 7168 + 4 + 2 x 7168) // 8 = 3584 B per token; rank 0 has none."""
    from calculator.memory.megatron_transients import megatron_activations

    ctx = build_context(_dsv3_96_h20())
    r, actor = ctx.r, ctx.actor
    batch = r.passes[Phase.UPDATE_ACTOR].batch(False)
    pp = r.actor.megatron.pipeline_model_parallel_size
    last = megatron_activations(actor, r.actor, batch, pp - 1)
    assert "final norm 3584 B/token" in last.formula
    first = megatron_activations(actor, r.actor, batch, 0)
    assert "final norm" not in first.formula
    assert ctx.actor_state.pp_rank is not None and ctx.actor_state.pp_rank.rank == pp - 1


def test_without_pipeline_parallelism_nothing_changes() -> None:
    s = _qwen3_30b_8_h20()  # Megatron, TP 1, PP 1, EP 8
    assert s.actor.strategy == "megatron" and s.actor.megatron.pipeline_model_parallel_size == 1
    ctx = build_context(s)
    assert ctx.actor_state.pp_rank is None
    assert "/ (TP" in ctx.actor_state.params.formula  # the mean share's formula


def test_the_rank_with_the_most_parameters_paces_the_parameter_work() -> None:
    """The time model's optimizer step, DP collectives and offload copies are of ``pacing_rank``: DeepSeek-V3's last
    rank (6 MoE layers + output layer); Qwen3-235B's first middle rank (12 layers, 30.0e9 parameters against rank 0's
    11 layers + embedding, 28.1e9), not the rank the memory describes (rank 0, by its update's activations)."""
    from calculator.memory.megatron_ranks import pacing_rank
    from calculator.timing.backend import TrainingEngine

    for make, want in ((_dsv3_96_h20, 11), (_qwen3_235b_32_h20, 1)):
        ctx = build_context(make())
        m = ctx.r.actor.megatron
        ranks = rank_params(ctx.actor, m)
        assert ranks is not None
        tp, ep = m.tensor_model_parallel_size, m.expert_model_parallel_size
        etp = m.expert_tensor_parallel_size or tp
        per_gpu = [rk.dense / tp + rk.expert / (ep * etp) for rk in ranks]
        chosen = pacing_rank(ctx.actor, m)
        assert chosen is not None and chosen.rank == want == per_gpu.index(max(per_gpu))
        engine = TrainingEngine(ctx, ctx.actor, ctx.r.actor)
        assert engine.dp_split is not None
        assert engine.local == chosen.dense / tp + chosen.expert / (ep * etp)
    assert build_context(_qwen3_235b_32_h20()).actor_state.pp_rank.rank == 0  # type: ignore[union-attr]
    assert pacing_rank(build_context(_qwen3_30b_8_h20()).actor, _qwen3_30b_8_h20().actor.megatron) is None  # PP 1
