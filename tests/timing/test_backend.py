"""How a training backend spends time around its compute (calculator/timing/backend.py), by hand on Qwen2.5-7B over
8 H100s: FSDP collectives per micro-batch and the exposed pipeline fill, HSDP's extra all-reduce, offload copies
over PCIe, Ulysses all-to-alls, host launch time, Megatron's recompute shares and pipeline bubble."""

from __future__ import annotations

import pytest

from calculator import load_scenario
from calculator.memory.training import megatron_role_shards
from calculator.names import Phase
from calculator.report.estimate import build_context
from calculator.timing.backend import (
    TrainingEngine,
    fsdp_io,
    host_seconds,
    megatron_dp_seconds,
    megatron_pass,
    megatron_recompute,
    ulysses_seconds,
)
from calculator.timing.flops import FULL_RECOMPUTE, NO_RECOMPUTE, Recompute, forward_flops_per_token
from tests.support.qwen7b_h100 import (
    BASE,
    EDGE,
    EFF_NET,
    EFF_NVLINK,
    EFF_PCIE,
    H100_NVLINK_UNI,
    H100_PCIE5,
    HEAD_DIM,
    HEADS,
    HOST_TRAIN_S,
    KV_HEADS,
    LAYERS,
    P7,
)

NVLINK = H100_NVLINK_UNI * EFF_NVLINK  # 337.5 GB/s per GPU inside a node
PCIE = H100_PCIE5 * EFF_PCIE


def engine(overrides: dict | None = None):
    s = load_scenario(BASE, overrides=overrides or {})
    ctx = build_context(s)
    return s, ctx, TrainingEngine(ctx, ctx.actor, ctx.r.actor)


def test_fsdp_gathers_and_reduce_scatter_per_micro_batch():
    """bf16 all-gather of every weight ((n-1)/n of 2 B/param per GPU), fp32 reduce-scatter of the gradients; the
    root unit + one layer of each is exposed before / after the compute (EDGE)."""
    s, ctx, r = engine()
    gather = P7 * 2 * 7 / 8 / NVLINK
    reduce = P7 * 4 * 7 / 8 / NVLINK
    fwd = fsdp_io(ctx, r, gathers=1, grads=False)
    assert fwd.comm == pytest.approx(gather) and fwd.host == 0 and fwd.fill == pytest.approx(EDGE * gather)
    train = fsdp_io(ctx, r, gathers=2, grads=True)
    assert train.comm == pytest.approx(2 * gather + reduce)
    assert train.fill == pytest.approx(EDGE * (gather + reduce))
    assert r.edge == pytest.approx(EDGE)


def test_hsdp_adds_an_all_reduce_across_replica_groups():
    """16 GPUs sharded in groups of 8: each rank's fp32 gradient shard is all-reduced across the 2 nodes at the
    inter-node rate (8 NICs x 50 GB/s x 70%)."""
    s, ctx, r = engine({"hardware.num_gpus": 16, "actor.fsdp_config.fsdp_size": 8})
    assert r.n == 8
    hsdp = fsdp_io(ctx, r, gathers=0, grads=True).comm
    reduce_scatter = P7 * 4 * 7 / 8 / NVLINK
    all_reduce = P7 * 4 / 8 * 2 * (1 / 2) / (8 * 50e9 * EFF_NET)
    assert hsdp == pytest.approx(reduce_scatter + all_reduce)


def test_no_sync_accumulation_sends_no_gradients_per_micro_batch():
    s, ctx, r = engine({"actor.fsdp_config.use_no_sync_for_gradient_accumulation": True})
    assert fsdp_io(ctx, r, gathers=0, grads=True).comm == 0


def test_fsdp2_offload_policy_copies_the_shard_in_and_the_grads_out():
    s, ctx, r = engine({"actor.strategy": "fsdp2", "actor.fsdp_config.offload_policy": True})
    io = fsdp_io(ctx, r, gathers=1, grads=True)
    assert io.host == pytest.approx(P7 * 4 / 8 / PCIE + P7 * 4 / 8 / PCIE)
    assert r.offload_seconds(optimizer=True) == 0  # nothing to bring in: it never leaves the CPU


def test_offload_copies_by_hand():
    """param_offload: the fp32 shard in and out; optimizer_offload: AdamW's two fp32 moments in and out."""
    _, _, r = engine({"actor.fsdp_config.param_offload": True, "actor.fsdp_config.optimizer_offload": True})
    params = 2 * P7 / 8 * 4 / PCIE
    adam = 2 * P7 / 8 * 2 * 4 / PCIE
    assert r.offload_seconds(optimizer=False) == pytest.approx(params)
    assert r.offload_seconds(optimizer=True) == pytest.approx(params + adam)


def test_ulysses_all_to_alls():
    """q, k, v in and the output back: (q + 2 kv + o) x 2 B per token, (sp-1)/sp of it, per layer per pass."""
    s, ctx, _ = engine()
    tokens, sp, passes = 10_000, 2, 3
    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    volume = tokens * (q + 2 * kv + q) * 2 * (1 / 2)
    assert ulysses_seconds(ctx, ctx.actor, tokens, sp, passes) == pytest.approx(passes * LAYERS * volume / NVLINK)
    assert ulysses_seconds(ctx, ctx.actor, tokens, 1, passes) == 0


def test_host_launches():
    s, ctx, _ = engine()
    assert host_seconds(s, ctx.actor, passes=3) == pytest.approx(3 * LAYERS * HOST_TRAIN_S)
    assert host_seconds(s, ctx.actor, passes=1, layers=7) == pytest.approx(7 * HOST_TRAIN_S)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, NO_RECOMPUTE),
        ({"recompute_granularity": "selective"}, Recompute(0.0, 1.0)),  # core attention only
        ({"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1}, FULL_RECOMPUTE),
        # block: the first 7 of the 14 layers of each of 2 pipeline stages
        ({"recompute_granularity": "full", "recompute_method": "block", "recompute_num_layers": 7,
          "pipeline_model_parallel_size": 2}, Recompute(0.5, 0.5)),
    ],
)  # fmt: skip
def test_megatron_recompute(fields: dict, expected: Recompute):
    ov = {"actor.strategy": "megatron", "actor.megatron.tensor_model_parallel_size": 2}
    s = load_scenario(BASE, overrides={**ov, **{f"actor.megatron.{k}": v for k, v in fields.items()}})
    assert megatron_recompute(s.actor.megatron, build_context(s).actor.arch) == expected


def test_megatron_pipeline_bubble_is_pp_minus_one_stage_times():
    """PP 4 on 8 GPUs (DP 2): the 1F1B bubble is 3 micro-batch stage times; TP 1 has no TP collectives."""
    s, ctx, r = engine({"actor.strategy": "megatron", "actor.megatron.pipeline_model_parallel_size": 4})
    pb = ctx.r.passes[Phase.OLD_LOG_PROB].expected
    terms = megatron_pass(ctx, r, pb, 1112, forward_flops_per_token(ctx.actor, 1112), 0.35, passes=1)
    assert terms["tp_ep_comm"] == 0
    n_micro = 5120 // 2 // 32  # the rank's 2,560 sequences in micro-batches of 32
    stage = (terms["compute"] + terms["gemm_small_batch"] + terms["host_overhead"]) / n_micro
    assert terms["pipeline_bubble"] == pytest.approx(3 * stage, rel=1e-9)


def test_an_uneven_pipeline_split_runs_at_its_slowest_stage():
    """PP 4 with 4 layers on the first stage (28 = 4 + 8 + 8 + 8): 1F1B runs at the pace of an 8-layer stage, 8 / 7
    of the even split's compute per micro-batch."""
    meg = {"actor.strategy": "megatron", "actor.megatron.pipeline_model_parallel_size": 4}
    out = []
    for extra in ({}, {"actor.megatron.num_layers_in_first_pipeline_stage": 4}):
        _, ctx, r = engine({**meg, **extra})
        pb = ctx.r.passes[Phase.OLD_LOG_PROB].expected
        out.append(megatron_pass(ctx, r, pb, 1112, forward_flops_per_token(ctx.actor, 1112), 0.35, passes=1))
    assert out[1]["compute"] == pytest.approx(out[0]["compute"] * 8 / 7, rel=1e-12)


def test_all_to_all_uses_nvlink_in_a_node_and_the_nic_across_nodes():
    """1 GB per GPU. 8 GPUs in one node: 1e9 / 337.5 GB/s = 2.963 ms. 16 GPUs over 2 nodes: 8 of the 15 peers are
    remote, 8/15 GB leaves through the GPU's 50 GB/s NIC x 0.7 = 15.24 ms (the NVLink share, 7/15 GB, is faster);
    a ring collective would have spread it over all 8 NICs of the node."""
    from calculator.timing.backend import all_to_all_seconds

    s, ctx, _ = engine()
    assert all_to_all_seconds(s, ctx.gpu, 1e9, 8) == pytest.approx(1e9 / NVLINK)
    assert all_to_all_seconds(s, ctx.gpu, 1e9, 16) == pytest.approx(1e9 * 8 / 15 / (50e9 * EFF_NET))


def test_context_parallel_ring_traffic_by_hand():
    """Megatron CP 2 (TP 1, PP 1) on Qwen2.5-7B: a micro-batch of 16,384 tokens sends, per layer and hop, its local
    K and V chunk: 8,192 x 2 x 512 (4 KV heads x 128) x 2 B = 16.78 MB over NVLink 337.5 GB/s = 49.71 us, behind one
    block of attention: 7,168 (q + o dims) x L tokens x 8,192 local tokens / 2 blocks at 989 TFLOPS x 0.35.
    L = 256: block 21.7 us, exposed 28.0 us x 28 layers x 1 hop = 0.784 ms (forward-only); training (passes 2)
    sends 3 hop-sets (forward, backward x 2). L = 4,096: the block (347 us) hides the hop."""
    from calculator.timing.backend import cp_ring_seconds

    _, ctx, r = engine({"actor.strategy": "megatron", "actor.megatron.context_parallel_size": 2})
    hop = 8192 * 2 * 512 * 2 / NVLINK
    assert hop == pytest.approx(49.71e-6, rel=1e-3)
    block = 7168 * 256 * 8192 / 2 / (989e12 * 0.35)
    expected = 28 * (hop - block)
    assert cp_ring_seconds(ctx, r, 16384, 256, 0.35, passes=1) == pytest.approx(expected, rel=1e-9)
    assert expected == pytest.approx(0.784e-3, rel=2e-3)
    assert cp_ring_seconds(ctx, r, 16384, 256, 0.35, passes=2) == pytest.approx(3 * expected, rel=1e-9)
    assert cp_ring_seconds(ctx, r, 16384, 4096, 0.35, passes=1) == 0.0


def test_context_parallel_term_has_its_formula_in_the_report():
    from calculator import estimate

    ov = {"actor.strategy": "megatron", "actor.megatron.context_parallel_size": 2}
    t = estimate(load_scenario(BASE, overrides=ov)).time
    assert t is not None
    assert "cp_ring_attention" in t.terms_s["update_actor"]
    assert "ring attention" in t.term_formulas["update_actor"]["cp_ring_attention"]


def _qwen3_moe_megatron(num_gpus: int, **extra):
    s = load_scenario(
        None,
        overrides={
            "model.path": "qwen3-30b-a3b",
            "hardware.gpu": "h20-96gb",
            "hardware.num_gpus": num_gpus,
            "actor.strategy": "megatron",
            "actor.megatron.expert_model_parallel_size": 8,
            "rollout.tensor_model_parallel_size": 4,
            **extra,
        },
    )
    return s, build_context(s)


def test_megatron_shards_split_experts_over_the_expert_dp_group():
    """Qwen3-30B-A3B, TP 1 EP 8 on 16 GPUs: experts 48 layers x 128 x 3 x 2048 x 768 = 28,991,029,248 params,
    dense 30,532,122,624 - that = 1,541,093,376. Each GPU holds all dense params (TP 1) and 1/8 of the experts
    (3,623,878,656). Dense DP = 16 / (TP 1 x CP 1 x PP 1) = 16, ranks 1 apart; expert DP = 16 / (EP 8 x ETP 1) = 2,
    ranks 8 apart (one per node). Distributed-optimizer shard = 1,541,093,376 / 16 + 3,623,878,656 / 2
    = 96,318,336 + 1,811,939,328 = 1,908,257,664 (the old DP-only split gave 5,164,972,032 / 16 = 322,810,752)."""
    s, ctx = _qwen3_moe_megatron(16)
    d = megatron_role_shards(s, ctx.actor, ctx.r.actor.megatron)
    assert (d.dense_local, d.expert_local) == (1_541_093_376, 3_623_878_656)
    assert (d.dp, d.dp_stride, d.expert_dp, d.expert_dp_stride) == (16, 1, 2, 8)
    assert d.sharded == 1_908_257_664


def test_megatron_dp_seconds_uses_each_group_bandwidth():
    """Same layout, distributed optimizer: per mini-batch fp32 reduce-scatter + bf16 all-gather = 6 B per param x
    (n-1)/n. Dense over 16 ranks 1 apart (2 nodes): min(NVLink 450 x 0.75, 50 x 8 x 0.7 = 280) = 280 GB/s:
    1,541,093,376 x 6 x 15/16 / 280e9 = 0.030958 s. Experts over 2 ranks 8 apart (one per node): one NIC,
    50 x 0.7 = 35 GB/s: 3,623,878,656 x 6 x 1/2 / 35e9 = 0.310618 s. Sum 0.341576 s."""
    s, ctx = _qwen3_moe_megatron(16)
    r = TrainingEngine(ctx, ctx.actor, ctx.r.actor)
    dense = 1_541_093_376 * 6 * 15 / 16 / 280e9
    expert = 3_623_878_656 * 6 / 2 / 35e9
    assert megatron_dp_seconds(ctx, r) == pytest.approx(dense + expert, rel=1e-9)
    assert dense + expert == pytest.approx(0.341576, rel=1e-5)


def test_megatron_dp_seconds_without_expert_replicas_is_dense_only():
    """On 8 GPUs (EP 8 fills the node) the expert DP group has 1 rank: no expert traffic; dense over 8 ranks inside
    the node at NVLink 337.5 GB/s: 1,541,093,376 x 6 x 7/8 / 337.5e9 = 0.023972 s."""
    s, ctx = _qwen3_moe_megatron(8)
    r = TrainingEngine(ctx, ctx.actor, ctx.r.actor)
    assert megatron_dp_seconds(ctx, r) == pytest.approx(1_541_093_376 * 6 * 7 / 8 / 337.5e9, rel=1e-9)
