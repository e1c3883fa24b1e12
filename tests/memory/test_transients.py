"""Megatron training activations (calculator/memory/transients.py ``training_activations``): the per-layer bytes of
calculator/model/megatron_activations.py times layers per stage, micro-batches in flight and tokens, by hand."""

from __future__ import annotations

from calculator import load_scenario
from calculator.inputs.presets import model_presets
from calculator.memory.transients import logits_components, training_activations
from calculator.model import megatron_activations as mact
from calculator.model.megatron_activations import MegatronSplit
from calculator.names import Phase, Role
from calculator.report.estimate import build_context
from calculator.resolve.batching import PassBatch

MOE = model_presets()["qwen3-30b-a3b"].architecture
DENSE = model_presets()["qwen2.5-7b"].architecture
WORK_MOE = 2 * (3 * 2048 + 8 * (3 * 768 + 2048))  # forward live set: 3 x 2h + top 8 x (3 x I_moe + h), bf16 = 81920
WORK_DENSE = 2 * (3 * 3584 + 3 * 18944)  # 3 x 2h + 3 x I = 135168


def _activations(base: str, overrides: dict, tokens: int, micro_batches: int = 8) -> int:
    ctx = build_context(load_scenario(base, overrides=overrides))
    plan = ctx.r.passes[Phase.UPDATE_ACTOR].trainer
    batch = PassBatch(tokens_per_gpu=tokens, num_micro_batches=micro_batches, sequences_per_gpu=8, description="")
    return training_activations(ctx.actor, plan, batch, offload=False).bytes


MOE_EP8 = {"actor.strategy": "megatron", "actor.megatron.expert_model_parallel_size": 8}


def test_moe_no_recompute_keeps_every_layer():
    """Qwen3-30B-A3B, TP 1 PP 1 EP 8 (verl's 8 x H20 script), 10240 tokens: 48 layers x 124,988 B + the final norm
    (input + rsigma + output = 8196 B) + the working set, per token: 61.4 GB (57.2 GiB)."""
    b = _activations("qwen3-30b-a3b-grpo-16xh100", MOE_EP8, 10240)
    assert b == (48 * 124_988 + 8196 + WORK_MOE) * 10240 == 62_356_889_600


def test_dense_tp_sp_pp_in_flight():
    """Qwen2.5-7B, TP 2 with SP, PP 2: 14 layers on the first stage, 2 micro-batches in flight (1F1B warm-up),
    heads and widths / 2, the residual stream / 2 (sequence parallel); no final norm on the first stage."""
    ov = {
        "actor.strategy": "megatron",
        "actor.megatron.tensor_model_parallel_size": 2,
        "actor.megatron.pipeline_model_parallel_size": 2,
    }
    per_layer = mact.layer_bytes(DENSE, 0, MegatronSplit(2, True, 2))
    # attention: (4h+4)/2 + 2(1792+2*256) + 2(1792+256) + 2*1792 + 4*14; MLP: (4h+4)/2 + 6*9472
    assert per_layer == 7170 + 4608 + 4096 + 3584 + 56 + 7170 + 56832 == 83_516
    b = _activations("qwen2.5-7b-grpo-8xh100", ov, 4096)
    assert b == (14 * per_layer * 2 + WORK_DENSE // 2) * 4096


def test_uniform_full_recompute_keeps_group_inputs_and_one_group():
    """Full uniform recompute in groups of 2 on 28 layers: 14 group inputs (2h each) per micro-batch in flight,
    plus one recomputed group of 2 layers (once), the final norm and the working set."""
    ov = {
        "actor.strategy": "megatron",
        "actor.megatron.recompute_granularity": "full",
        "actor.megatron.recompute_method": "uniform",
        "actor.megatron.recompute_num_layers": 2,
    }
    b = _activations("qwen2.5-7b-grpo-8xh100", ov, 4096)
    final = 2 * 3584 + 4 + 2 * 3584
    assert b == (14 * 2 * 3584 + 2 * 167_032 + final + WORK_DENSE) * 4096


def test_block_recompute_and_selective():
    base = {"actor.strategy": "megatron"}
    block = {
        **base,
        "actor.megatron.recompute_granularity": "full",
        "actor.megatron.recompute_method": "block",
        "actor.megatron.recompute_num_layers": 8,
    }
    final = 2 * 3584 + 4 + 2 * 3584
    b = _activations("qwen2.5-7b-grpo-8xh100", block, 1000)
    assert b == (8 * 2 * 3584 + 20 * 167_032 + final + WORK_DENSE) * 1000
    sel = _activations("qwen2.5-7b-grpo-8xh100", {**base, "actor.megatron.recompute_granularity": "selective"}, 1000)
    assert sel == (28 * (167_032 - 4 * 28) + final + WORK_DENSE) * 1000


def test_context_parallel_divides_the_tokens():
    ov = {**MOE_EP8, "actor.megatron.context_parallel_size": 2}
    assert _activations("qwen3-30b-a3b-grpo-16xh100", ov, 10240) == (48 * 124_988 + 8196 + WORK_MOE) * 10240 // 2


def test_megatron_logits_are_vocab_parallel_with_an_fp32_softmax():
    """Megatron-core vocab_parallel_cross_entropy: bf16 logits (2 B) + the fp32 copy it turns into the saved softmax
    (4 B) per logit, V / TP per rank; verl's vocab-parallel entropy adds a bf16 clone and a bf16 softmax (4 B);
    CP splits the tokens. Qwen2.5-7B (V 152,064), TP 2: 76,032 logits per token per rank."""
    ov = {"actor.strategy": "megatron", "actor.megatron.tensor_model_parallel_size": 2}
    ctx = build_context(load_scenario("qwen2.5-7b-grpo-8xh100", overrides=ov))
    comps = logits_components(ctx, Role.ACTOR, 4096, entropy=True, training=True)
    assert [c.name for c in comps] == ["actor_logits", "actor_entropy"]
    assert comps[0].bytes == 4096 * 76_032 * 6
    assert comps[1].bytes == 4096 * 76_032 * 4
    assert [c.bytes for c in logits_components(ctx, Role.ACTOR, 4096, entropy=False, training=False)] == [
        4096 * 76_032 * 6
    ]
    forward = logits_components(ctx, Role.ACTOR, 4096, entropy=True, training=False)
    assert [c.bytes for c in forward] == [4096 * 76_032 * 6, 4096 * 76_032 * 2]  # the softmax is freed first
    cp = build_context(
        load_scenario("qwen2.5-7b-grpo-8xh100", overrides={**ov, "actor.megatron.context_parallel_size": 2})
    )
    assert logits_components(cp, Role.ACTOR, 4096, entropy=False, training=True)[0].bytes == 2048 * 76_032 * 6


def test_fsdp_logits_unchanged_by_the_megatron_path():
    ctx = build_context(load_scenario("qwen2.5-7b-grpo-8xh100"))
    assert logits_components(ctx, Role.ACTOR, 1000, entropy=False, training=True)[0].bytes == 1000 * 152_064 * 2


def test_interleaved_pipeline_holds_more_chunks_of_fewer_layers():
    """PP 2, VPP 2 on 28 layers: 14 layers per stage in 2 chunks of 7. The first stage runs 2 x (2 - 1) + (2 - 1) x 2
    = 4 warm-up chunk forwards and one more before its first backward: 5 chunks of 7 layers = 35 layers, against
    2 micro-batches x 14 = 28 without interleaving (Korthikanti: 1 + (pp - 1) / (pp x vpp) = 1.25 x)."""
    base = {"actor.strategy": "megatron", "actor.megatron.pipeline_model_parallel_size": 2}
    vpp = {**base, "actor.megatron.virtual_pipeline_model_parallel_size": 2}
    plain = _activations("qwen2.5-7b-grpo-8xh100", base, 1000)
    inter = _activations("qwen2.5-7b-grpo-8xh100", vpp, 1000)
    assert plain == (14 * 167_032 * 2 + WORK_DENSE) * 1000
    assert inter == (14 * 167_032 * 5 // 2 + WORK_DENSE) * 1000
    # fewer micro-batches than warm-up chunks: all of them. 1 micro-batch per GPU is 2 per pipeline (8 GPUs over
    # Megatron DP 4 = 8 / (TP 1 x PP 2)): 2 x 2 chunks = 4 chunks = 2 stages' worth
    assert _activations("qwen2.5-7b-grpo-8xh100", vpp, 1000, 1) == (14 * 167_032 * 4 // 2 + WORK_DENSE) * 1000


def test_in_flight_micro_batches_are_counted_per_pipeline_not_per_gpu():
    """The pass plan spreads sequences over all 8 GPUs; with PP 4 (TP 1) a pipeline is 4 GPUs of Megatron DP 2
    and runs 4 x the per-GPU micro-batches: 1 per GPU is 4 per pipeline, so the first stage holds 4 in flight
    (7 layers x 4), not 1."""
    ov = {"actor.strategy": "megatron", "actor.megatron.pipeline_model_parallel_size": 4}
    assert _activations("qwen2.5-7b-grpo-8xh100", ov, 1000, 1) == (7 * 167_032 * 4 + WORK_DENSE) * 1000


def test_fsdp_ulysses_sp_adds_its_per_layer_bytes():
    """FSDP, Qwen2.5-7B, 4096 tokens per GPU. Without checkpointing every layer saves 2q = 7168 B/token more at SP 2
    (calculator.model.activations.ulysses_extra_bytes_per_token); with checkpointing only the recomputed layer does."""
    extra = 28 * 128 * 2
    for ckpt, layers in ((False, 28), (True, 1)):
        ov = {"model.enable_gradient_checkpointing": ckpt}
        sp1 = _activations("qwen2.5-7b-grpo-8xh100", ov, 4096)
        sp2 = _activations("qwen2.5-7b-grpo-8xh100", {**ov, "actor.ulysses_sequence_parallel_size": 2}, 4096)
        assert sp2 - sp1 == layers * extra * 4096


def test_ulysses_extra_bytes_is_the_sp_part_of_the_activations():
    """``ulysses_extra_bytes`` is what SP 2 adds to ``training_activations`` (checkpointing on and off)."""
    from calculator.memory.transients import ulysses_extra_bytes

    for ckpt in (False, True):
        ov = {"model.enable_gradient_checkpointing": ckpt, "actor.ulysses_sequence_parallel_size": 2}
        ctx = build_context(load_scenario("qwen2.5-7b-grpo-8xh100", overrides=ov))
        plan = ctx.r.passes[Phase.UPDATE_ACTOR].trainer
        batch = PassBatch(tokens_per_gpu=4096, num_micro_batches=8, sequences_per_gpu=8, description="")
        sp1 = _activations("qwen2.5-7b-grpo-8xh100", {"model.enable_gradient_checkpointing": ckpt}, 4096)
        with_sp = training_activations(ctx.actor, plan, batch, offload=False).bytes
        assert ulysses_extra_bytes(ctx.actor, plan, batch, offload=False) == with_sp - sp1 > 0


def test_uneven_pipeline_split_sets_the_first_stage_layers():
    """Qwen2.5-7B, PP 4 with 4 layers on the first stage (28 = 4 + 8 + 8 + 8): the first stage holds 4 micro-batches
    in flight x 4 layers = 16 layer-micro-batches, the second 3 x 8 = 24: the second rank sets the peak."""
    ov = {"actor.strategy": "megatron", "actor.megatron.pipeline_model_parallel_size": 4}
    per_layer = mact.layer_bytes(DENSE, 0, MegatronSplit(1, True, 1))
    even = _activations("qwen2.5-7b-grpo-8xh100", ov, 4096)
    uneven = _activations(
        "qwen2.5-7b-grpo-8xh100", {**ov, "actor.megatron.num_layers_in_first_pipeline_stage": 4}, 4096
    )
    assert even == (7 * 4 * per_layer + WORK_DENSE) * 4096  # 7 layers x 4 in flight on the first stage
    assert uneven == (8 * 3 * per_layer + WORK_DENSE) * 4096
