"""The planner's Megatron layout search (calculator.planning.layout_search): a MoE run that fits nowhere with its own
TP / PP / EP gets a minimum with another layout, consistent with ``estimate``; the scenario's layout is kept when it
is already the best; the minimum is the one an exhaustive search (every layout x every count) finds."""

from __future__ import annotations

import pytest

from calculator import estimate, load_scenario, plan
from calculator.inputs.scenario import Scenario
from calculator.planning.fit import fit_check
from calculator.planning.layout_search import LayoutCaches, search_gpu_layouts, update_floor_bytes
from calculator.planning.layouts import Layout, candidate_layouts, layout_of, with_layout
from calculator.planning.recommend import search_gpu
from calculator.planning.search import GpuSearch
from calculator.resolve.architectures import resolve_architectures

BASE = "qwen2.5-7b-grpo-8xh100"
MOE = {"model.path": "qwen3-30b-a3b", "actor.strategy": "megatron"}
MARGIN = 0.1


def _moe(**layout: int):
    return load_scenario(BASE, overrides={**MOE, **{f"actor.megatron.{k}": v for k, v in layout.items()}})


def _layout(cfg) -> Layout:
    m = cfg.megatron_layout
    return Layout(m.tensor_model_parallel_size, m.pipeline_model_parallel_size, m.expert_model_parallel_size)


def test_moe_that_fits_nowhere_with_its_layout_gets_another_and_estimate_agrees():
    """Qwen3-30B-A3B under Megatron at TP 1 / PP 1 / EP 1 on H100: every GPU keeps the full 30B of bf16 params and
    grads (MoE experts shard over EP x ETP x PP, the rest over TP x PP; DP shrinks only the optimizer), so nothing
    fits up to 64 GPUs. Searching layouts finds 8 GPUs; the recommended settings, applied to the scenario as verl
    overrides, estimate the same memory and time, and fit."""
    s = _moe()
    alone = search_gpu(s, "h100-80gb", max_gpus=64, margin=MARGIN, allow_lora=False)
    assert alone.minimum is None  # the scenario's own layout fits nowhere
    p = plan(s, gpus=["h100-80gb"], max_gpus=64, margin=MARGIN)
    row = p.rows[0]
    assert row.min_gpus == 8
    assert _layout(row.min_config) != layout_of(s)
    assert "the scenario's TP 1 PP 1 EP 1 fits nowhere up to 64 GPUs" in row.note
    for cfg in (row.min_config, row.recommended):
        lay = _layout(cfg)
        assert cfg.settings["actor_rollout_ref.actor.megatron.tensor_model_parallel_size"] == lay.tp
        assert cfg.settings.get("actor_rollout_ref.actor.megatron.expert_model_parallel_size", 1) == lay.ep
        # the plan's lines go after a Megatron launch script's own model_engine=megatron (it picks verl's config group)
        again = load_scenario(s, verl_overrides=["model_engine=megatron", *cfg.verl_overrides])
        assert layout_of(again) == lay and again.hardware.num_gpus == cfg.num_gpus
        r = estimate(again)
        assert fit_check(r, again, MARGIN).fits
        assert r.peak.gib_per_gpu == pytest.approx(cfg.peak_gib_per_gpu, rel=1e-12)
        assert r.time.step_s == pytest.approx(cfg.step_s, rel=1e-12)
    assert p.model_dump(mode="json")["rows"][0]["recommended"]["megatron_layout"]["tensor_model_parallel_size"] == (
        _layout(row.recommended).tp
    )


@pytest.mark.parametrize(
    ("gpu", "own", "other"),
    [
        # H100: TP 4 EP 2 fits at 8 GPUs and nothing fits below: the scenario's layout stays.
        ("h100-80gb", {"tensor_model_parallel_size": 4, "expert_model_parallel_size": 2}, Layout(4, 1, 2)),
        # H200: TP 2 EP 4 fits at 8; TP 1 EP 4 (less model parallelism, listed earlier) fits at 8 too: the tie keeps
        # the scenario's layout.
        ("h200-141gb", {"tensor_model_parallel_size": 2, "expert_model_parallel_size": 4}, Layout(1, 1, 4)),
    ],
)
def test_the_scenarios_layout_is_kept_when_it_is_already_the_best(gpu, own, other):
    s = _moe(**own)
    tied, _ = GpuSearch(with_layout(s, other), gpu, max_gpus=64, margin=MARGIN, allow_lora=False).min_count()
    assert tied is not None and tied.knobs.num_gpus == 8  # the other layout also fits at 8
    row = plan(s, gpus=[gpu], max_gpus=64, margin=MARGIN).rows[0]
    assert row.min_gpus == 8
    assert _layout(row.min_config) == layout_of(s)
    assert "actor_rollout_ref.actor.megatron.tensor_model_parallel_size" not in row.min_settings


def _exhaustive(s, gpu: str, max_gpus: int) -> tuple[int | None, Layout | None, int]:
    """Every layout x every valid count from the bottom (no galloping, no bound): the smallest count, the first
    layout in list order that fits there, and the estimates run."""
    best: tuple[int, Layout] | None = None
    estimates = 0
    for lay in candidate_layouts(s, resolve_architectures(s)[0], max_gpus):
        srch = GpuSearch(with_layout(s, lay), gpu, max_gpus=max_gpus, margin=MARGIN, allow_lora=False)
        for n in (n for n in srch.counts if srch.is_valid_count(n)):
            if srch.first_fit_at(n) is not None:
                if best is None or n < best[0]:
                    best = (n, lay)
                break
        estimates += srch.num_estimates
    return (best[0], best[1], estimates) if best else (None, None, estimates)


@pytest.mark.parametrize(("gpu", "own"), [("h100-80gb", {}), ("h200-141gb", {}), ("a100-40gb", {})])
def test_minimum_is_what_every_layout_at_every_count_gives(gpu, own):
    """Up to 16 GPUs (19 layouts x counts 1, 2, 4, 8, 16): the layout search's minimum count and layout are the
    exhaustive search's, with fewer estimates."""
    s = _moe(**own)
    n, lay, work = _exhaustive(s, gpu, 16)
    res = search_gpu_layouts(s, gpu, max_gpus=16, margin=MARGIN, allow_lora=False, caches=LayoutCaches())
    got = res.minimum.knobs.num_gpus if res.minimum else None
    assert got == n
    assert (layout_of(res.minimum.scenario) if res.minimum else None) == lay
    assert res.num_estimates < work


def test_layout_caches_serve_gpu_types_of_equal_memory():
    """H100 and H800 have the same usable memory and host RAM (calculator.planning.shared): the second GPU type's
    layouts reuse the first's memory estimates, and its answer is the same."""
    p = plan(_moe(), gpus=["h100-80gb", "h800-80gb"], max_gpus=64, margin=MARGIN)
    a, b = (next(r for r in p.rows if r.gpu == g) for g in ("h100-80gb", "h800-80gb"))
    assert a.min_gpus == b.min_gpus == 8 and _layout(a.min_config) == _layout(b.min_config)
    assert b.num_estimates < a.num_estimates / 2


def test_fsdp_plan_has_no_layout():
    data = plan(load_scenario(BASE), gpus=["h100-80gb"], max_gpus=16).model_dump(mode="json")
    assert "megatron_layout" not in data["rows"][0]["recommended"]
    assert data["rows"][0]["note"] == ""


@pytest.mark.parametrize("model", ["qwen3-30b-a3b", "mixtral-8x7b-v0.1", "qwen2.5-7b"])
def test_planned_layouts_are_ones_megatron_core_accepts(model):
    """Every row's layout, at its GPU count, passes layouts.layout_problem (Megatron-core's rules), and verl's own
    checks raise nothing on it (a configuration that fits has no verl error: calculator.planning.fit)."""
    from calculator.planning.layouts import layout_problem

    s = load_scenario(BASE, overrides={"model.path": model, "actor.strategy": "megatron"})
    arch = resolve_architectures(s)[0]
    p = plan(s, gpus=["h100-80gb", "a100-40gb", "h200-141gb"], max_gpus=64, margin=MARGIN)
    checked = 0
    for row in p.rows:
        for cfg in (row.min_config, row.recommended):
            if cfg is None:
                continue
            m = cfg.megatron_layout
            lay = Layout(m.tensor_model_parallel_size, m.pipeline_model_parallel_size, m.expert_model_parallel_size)
            assert layout_problem(lay, arch, s.hardware.gpus_per_node, num_gpus=cfg.num_gpus) is None
            checked += 1
    assert checked >= 4


def test_size_table_searches_megatron_layouts_like_plan():
    from calculator.planning.size_table import size_table

    s = _moe()
    t = size_table(s, "h100-80gb", models=("qwen3-30b-a3b",), algorithms=("GRPO",), max_gpus=64)
    row = plan(s, gpus=["h100-80gb"], max_gpus=64, margin=MARGIN).rows[0]
    assert t.rows[0].min_gpus == row.min_gpus == 8
    assert t.rows[0].min_settings == row.min_settings


def test_a_megatron_critic_with_the_actors_layout_moves_with_it_and_estimate_agrees():
    """PPO (GAE) under Megatron on verl's bare defaults (Qwen2.5-7B, 1,024 prompts, 512 + 512 tokens): the critic has
    the actor's TP 1 layout, so at TP 1 each GPU holds the critic's full bf16 params and fp32 grads beside the actor's,
    and the planner found nothing on 40 GB GPUs while it kept the critic at TP 1. The critic now moves with the actor
    (as verl's PPO examples set both alike); the planned lines set both roles' keys, and ``estimate`` of them fits.
    Before: 0 estimates and "nothing fits", because the only token budget below the configured one (512) cannot hold
    a 1,024-token sequence without Ulysses SP, which Megatron does not have (``batch_options_for``)."""
    s = Scenario.model_validate({"actor": {"strategy": "megatron"}})
    p = plan(s, gpus=["h100-80gb", "a100-40gb"], margin=MARGIN)
    assert p.num_estimates > 0
    for row in p.rows:
        assert row.min_gpus is not None, row.note
        cfg = row.recommended
        actor_tp = cfg.settings["actor_rollout_ref.actor.megatron.tensor_model_parallel_size"]
        assert cfg.settings["critic.megatron.tensor_model_parallel_size"] == actor_tp > 1
        # the lines carry the cluster shape, not the GPU type (a plan row is one GPU type)
        on_gpu = load_scenario(s, overrides={"hardware.gpu": row.gpu})
        again = load_scenario(on_gpu, verl_overrides=["model_engine=megatron", *cfg.verl_overrides])
        r = estimate(again)
        assert fit_check(r, again, MARGIN).fits
        assert r.peak.gib_per_gpu == pytest.approx(cfg.peak_gib_per_gpu, rel=1e-12)


def test_a_critic_with_a_layout_of_its_own_keeps_it():
    s = load_scenario(
        BASE, overrides={**MOE, "algorithm.adv_estimator": "gae", "critic.megatron.tensor_model_parallel_size": 2}
    )
    moved = with_layout(s, Layout(4, 1, 2))
    assert layout_of(moved) == Layout(4, 1, 2)
    assert moved.critic.megatron == s.critic.megatron


_FLOOR_CASES = [
    (lay, gpus)
    for lay in (Layout(1, 1, 1), Layout(2, 1, 4), Layout(4, 2, 8), Layout(1, 4, 2))
    for gpus in (8, 16, 64)
    if gpus % lay.min_world == 0  # Layout(4, 2, 8) (ETP = TP 4) needs 64 GPUs
]


@pytest.mark.parametrize(("lay", "gpus"), _FLOOR_CASES)
def test_the_update_floor_is_below_every_estimated_update(lay, gpus):
    """``update_floor_bytes`` (the skip rule of the layout scan) never exceeds the estimate's update_actor, and no
    GPU count changes it: it is the update's params + grad buffer, which data parallelism does not shard."""
    s = with_layout(load_scenario(_moe(), overrides={"hardware.num_gpus": gpus}), lay)
    arch = resolve_architectures(s)[0]
    update = next(p for p in estimate(s, with_time=False).phases if p.name == "update_actor")
    floor = update_floor_bytes(s, arch)
    assert 0 < floor <= update.total_bytes
    assert floor == update_floor_bytes(load_scenario(s, overrides={"hardware.num_gpus": 1024}), arch)
