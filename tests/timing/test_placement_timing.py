import pytest

from calculator.inputs.placement import PlacementSection
from calculator.memory.pools import rollout_pool, trainer_pool
from calculator.model.architecture import Architecture
from calculator.resolve.placement import resolve_placement
from calculator.timing.pools import num_weight_tensors, overlap_step, pool_timing, sync_time
from tests.support.placement import split_scenario

P7B = 7_615_616_512


def _timing(mode="one_step_off", **kw):
    plan = resolve_placement(split_scenario(mode, **kw))
    assert plan is not None
    t, r = trainer_pool(plan), rollout_pool(plan)
    return plan, t, r, pool_timing(plan, t, r)


def test_qwen7b_has_339_tensors():
    _, t, _, _ = _timing()
    arch: Architecture = t.ctx.actor.arch
    # 28 layers x (q, k, v, o + 3 biases + 2 norms + gate, up, down = 12) + embedding, final norm, lm_head = 339
    assert num_weight_tensors(arch) == 28 * 12 + 3 == 339


def test_sync_time_hand_checked():
    plan, t, r, _ = _timing()
    st = sync_time(t.ctx, r.ctx, plan)
    # gather: fp32 x 11/12 over 12 GPUs on 2 nodes (6 per node): min(450 GB/s x 0.75, 50 GB/s x 6 x 0.7 = 210 GB/s)
    assert st.terms["gather"] == pytest.approx(P7B * 4 * 11 / 12 / 210e9)  # 0.133 s
    # broadcast across 2 nodes: 50 GB/s x 8 NICs x 0.7 = 280 GB/s
    assert st.terms["broadcast"] == pytest.approx(P7B * 4 / 280e9)  # 0.109 s
    assert st.terms["call_latency"] == pytest.approx(339 * 0.2e-3)  # 0.0678 s
    # vLLM load: bf16 / TP 2 over 3350 GB/s x 0.7
    assert st.terms["load_weights"] == pytest.approx(P7B * 2 / 2 / (3350e9 * 0.7))


def test_one_step_off_step_is_the_slower_side_plus_sync():
    _, _, _, pt = _timing()
    gen, train = pt.generation.seconds, pt.training_s
    assert pt.step_s == pytest.approx(max(gen, train) + pt.sync_s)
    assert pt.wait_s == pytest.approx(max(0.0, gen - train))
    assert pt.step_s == pytest.approx(pt.wait_s + pt.training_s + pt.sync_s)


def test_overlap_step_modes():
    p = PlacementSection(trigger_parameter_sync_step=4, staleness_threshold=0.0)
    kw = {"generation_s": 100.0, "stream_s": 60.0, "long_tail_s": 30.0, "train_s": 80.0, "sync_s": 1.0}
    # one_step_off: max(100, 80) + 1
    assert overlap_step("one_step_off", p, **kw)[0] == 101.0
    # staleness 0: max(100, 60/4 + 80 x 3/4 = 75) + 80/4 + 1 = 121
    assert overlap_step("fully_async", p, **kw)[0] == 121.0
    stale = p.model_copy(update={"staleness_threshold": 0.5, "partial_rollout": False})
    # staleness > 0 without partial rollout: max(60 + 30 drain, 80) + 1 = 91
    assert overlap_step("fully_async", stale, **kw)[0] == 91.0
    # partial rollout: no drain: max(60, 80) + 1 = 81
    assert overlap_step("fully_async", stale.model_copy(update={"partial_rollout": True}), **kw)[0] == 81.0


def test_partial_rollout_never_slower():
    a = _timing("fully_async", staleness_threshold=0.5, partial_rollout=True)[3]
    b = _timing("fully_async", staleness_threshold=0.5, partial_rollout=False)[3]
    assert a.step_s <= b.step_s and a.drain_s == 0.0 and b.drain_s > 0.0


def test_timeline_spans_the_step():
    _, _, _, pt = _timing()
    assert min(s.start_s for s in pt.timeline) == 0.0
    assert max(s.end_s for s in pt.timeline) == pytest.approx(pt.step_s, rel=1e-9)
    assert {s.pool for s in pt.timeline} == {"rollout", "trainer"}
