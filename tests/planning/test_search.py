"""The planner's search (calculator/planning/search.py): the minimum GPU count fits and nothing in the searched space
fits one count below it (hypothesis over the knobs), the pruning premise (the most-saving frontier needs the least
memory), invariants on random scenarios, and the recommended configuration is the cheapest candidate."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calculator import estimate, load_scenario
from calculator.inputs.presets import gpu_presets
from calculator.inputs.scenario import Scenario
from calculator.memory.transients import ulysses_extra_bytes
from calculator.names import Phase
from calculator.planning.fit import fit_check, fused_independent_bytes
from calculator.planning.planner import plan
from calculator.planning.recommend import search_gpu, selection_key
from calculator.planning.search import GpuSearch
from calculator.planning.space import Knobs
from calculator.report.estimate import build_context
from calculator.units import GIB_BYTES
from tests.support.strategies import scenario_dicts

BASE = "qwen2.5-7b-grpo-8xh100"
MARGIN = 0.10


@pytest.fixture(scope="module")
def base():
    return load_scenario(BASE)


# (scenario preset, GPU) pairs whose minimum is above one GPU, so a previous count exists.
MINIMA = [
    (BASE, "a100-40gb"),
    (BASE, "rtx4090-24gb"),
    ("qwen2.5-7b-ppo-8xh100", "l40s-48gb"),
    ("qwen3-30b-a3b-grpo-16xh100", "h100-80gb"),
]


def _search(scenario_id: str, gpu: str) -> tuple[GpuSearch, object]:
    s = load_scenario(scenario_id)
    srch = GpuSearch(s, gpu, max_gpus=1024, margin=MARGIN, allow_lora=False)
    return srch, search_gpu(s, gpu, max_gpus=1024, margin=MARGIN, allow_lora=False)


@pytest.mark.parametrize(("scenario_id", "gpu"), MINIMA)
def test_minimum_fits_and_previous_count_frontier_does_not(scenario_id, gpu):
    srch, res = _search(scenario_id, gpu)
    assert res.minimum is not None and res.minimum.fit.fits
    n = res.minimum.knobs.num_gpus
    counts = list(res.counts)
    assert n in counts and counts.index(n) > 0, "pick pairs whose minimum is not the first count"
    prev = counts[counts.index(n) - 1]
    assert srch.frontier(prev), "the previous count has valid most-saving configurations"
    for k in srch.frontier(prev):
        ev = srch.evaluate(k)
        assert ev is not None and not ev.fit.fits


@st.composite
def _knobs(draw, srch: GpuSearch, n: int) -> Knobs:
    bools = {
        lever: draw(st.sampled_from(srch.bool_domain(lever)))
        for lever in (
            "lora",
            "param_offload",
            "optimizer_offload",
            "activation_offload",
            "gradient_checkpointing",
            "entropy_chunking",
            "cap_max_model_len",
            "free_cache_engine",
            "full_shard",
        )
    }
    return Knobs(
        num_gpus=n,
        rollout_tp=draw(st.sampled_from(srch.tp_values(n))),
        gpu_memory_utilization=draw(st.sampled_from(srch.util_values())),
        fused_kernels=draw(st.booleans()),
        batch=draw(st.integers(0, len(srch.batch_options) - 1)),
        ulysses_sp=draw(st.sampled_from(srch.sp_values(n))),
        **bools,
    )


@pytest.mark.parametrize(("scenario_id", "gpu"), MINIMA)
def test_no_searched_setting_fits_one_count_below_the_minimum(scenario_id, gpu):
    """Property: any configuration of the searched space at the previous ladder count does not fit."""
    srch, res = _search(scenario_id, gpu)
    counts = list(res.counts)
    prev = counts[counts.index(res.minimum.knobs.num_gpus) - 1]

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_knobs(srch, prev))
    def check(k: Knobs) -> None:
        ev = srch.evaluate(k)
        if ev is not None:  # None = verl/vLLM would reject the combination
            assert not ev.fit.fits, f"{k} fits at {prev} GPUs"

    check()


# (the memory model's issue-14 mechanisms moved 7B GRPO on 4 x A100-40GB and 7B PPO on 4 x L40S past the border:
# their most-saving frontier no longer fits at any margin; the neighbours below are the borderline cases now)
BORDERLINE = [
    (BASE, "a100-80gb", 2),
    (BASE, "rtx4090-24gb", 8),
    (BASE, "l40s-48gb", 4),
    ("qwen2.5-7b-ppo-8xh100", "a100-40gb", 8),
    ("qwen3-30b-a3b-grpo-16xh100", "h100-80gb", 8),
]


def _ulysses_bound_gib(srch: GpuSearch, frontier: list[Knobs]) -> float:
    """The most Ulysses SP adds to a frontier member's update passes, with its fragmentation share
    (``calculator.memory.transients.ulysses_extra_bytes``): the frontier takes the largest SP, which is the most
    saving up to these bytes (where the tokens per GPU do not shrink with SP, as for verl 0.9.1's V1 critic)."""
    worst = 0
    for k in frontier:
        ctx = build_context(srch.build(k))
        for phase, role in ((Phase.UPDATE_ACTOR, ctx.actor), (Phase.UPDATE_CRITIC, ctx.critic)):
            if phase in ctx.r.passes and role is not None:
                p = ctx.r.passes[phase]
                for w in (False, True):
                    b = ulysses_extra_bytes(role, p.trainer, p.batch(w), offload=ctx.s.model.enable_activation_offload)
                    worst = max(worst, b)
    return worst * (1 + srch.base.overheads.fragmentation_fraction) / GIB_BYTES


@pytest.mark.parametrize(("scenario_id", "gpu", "n"), BORDERLINE)
def test_no_setting_fits_when_the_frontier_misses_narrowly(scenario_id, gpu, n):
    """The pruning premise, stressed: set the margin so that the best frontier configuration of ``n`` GPUs misses
    the limit by 0.01 GiB beyond the Ulysses bound (``_ulysses_bound_gib``); then no searched configuration of ``n``
    GPUs may fit."""
    s = load_scenario(scenario_id)
    probe = GpuSearch(s, gpu, max_gpus=n, margin=0.0, allow_lora=False)
    best = min(probe.evaluate(k).fit.peak_gib_per_gpu for k in probe.frontier(n))
    usable = gpu_presets()[gpu].usable_memory_gib
    margin = 1 - (best - 0.01 - _ulysses_bound_gib(probe, probe.frontier(n))) / usable
    assert 0 < margin < 0.5
    srch = GpuSearch(s, gpu, max_gpus=n, margin=margin, allow_lora=False)
    assert srch.first_fit_at(n) is None

    @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_knobs(srch, n))
    def check(k: Knobs) -> None:
        ev = srch.evaluate(k)
        if ev is not None:
            assert not ev.fit.fits, f"{k} fits although the frontier does not"

    check()


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(scenario_dicts(), st.sampled_from(["h100-80gb", "a100-40gb", "l40s-48gb", "h200-141gb"]))
def test_search_invariants_on_random_scenarios(d, gpu):
    s = Scenario(**d)
    res = search_gpu(s, gpu, max_gpus=64, margin=MARGIN, allow_lora=False)
    if res.minimum is None:
        return
    for ev in (res.minimum, res.recommended, *res.candidates):
        again = estimate(ev.scenario)
        assert fit_check(again, ev.scenario, MARGIN).fits
    counts = list(res.counts)
    i = counts.index(res.minimum.knobs.num_gpus)
    if i > 0:
        srch = GpuSearch(s, gpu, max_gpus=64, margin=MARGIN, allow_lora=False)
        assert all(not srch.evaluate(k).fit.fits for k in srch.frontier(counts[i - 1]))


def test_frontier_needs_no_more_memory_than_other_settings(base):
    """The pruning premise: at a count, the frontier's peak is below every sampled configuration's
    (for the same rollout TP and fused-kernel choice)."""
    srch = GpuSearch(base, "a100-80gb", max_gpus=64, margin=MARGIN, allow_lora=False)
    n = 8
    front = {(k.rollout_tp, k.fused_kernels): srch.evaluate(k) for k in srch.frontier(n)}

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_knobs(srch, n))
    def check(k: Knobs) -> None:
        ev = srch.evaluate(k)
        f = front.get((k.rollout_tp, k.fused_kernels))
        if ev is None or f is None or k.gpu_memory_utilization < f.knobs.gpu_memory_utilization:
            return  # below the frontier's utilization the KV cache cannot hold a max-length sequence
        assert f.fit.peak_gib_per_gpu <= ev.fit.peak_gib_per_gpu + 1e-9
        assert f.fit.worst_case_gib_per_gpu <= ev.fit.worst_case_gib_per_gpu + 1e-9

    check()


def test_frontier_memory_never_grows_with_gpu_count(base):
    srch = GpuSearch(base, "rtx4090-24gb", max_gpus=256, margin=MARGIN, allow_lora=False)
    counts = [n for n in srch.counts if srch.is_valid_count(n)]
    best = [min(srch.evaluate(k).fit.peak_gib_per_gpu for k in srch.frontier(n)) for n in counts]
    assert all(b <= a + 1e-9 for a, b in zip(best, best[1:], strict=False))


def test_recommended_is_the_cheapest_candidate(base):
    res = search_gpu(base, "h100-80gb", max_gpus=1024, margin=MARGIN, allow_lora=False)
    assert res.minimum.step_s is not None, "estimate() gives a step time: the ranking uses it"
    price = res.gpu.hourly_price_usd
    keys = [selection_key(c, False, price) for c in res.candidates]
    assert selection_key(res.recommended, False, price) == min(keys)
    rec = plan(base, gpus=["h100-80gb"]).rows[0].recommended
    assert rec.cost_per_step == pytest.approx(rec.step_s * rec.num_gpus * price / 3600)
    assert rec.cost_per_million_tokens == pytest.approx(rec.cost_per_step / (rec.tokens_per_s * rec.step_s / 1e6))


def test_evaluations_carry_the_estimates_time_exactly_when_they_fit():
    """The search runs the time model only for candidates that fit (issue #18): a fitting evaluation's report
    is estimate()'s, time included; a candidate that does not fit has the same memory and no time."""
    base = load_scenario("qwen2.5-7b-grpo-8xh100")
    srch = GpuSearch(base, "h100-80gb", max_gpus=64, margin=0.05, allow_lora=False)
    srch.min_count()
    evaluated = [ev for ev in srch.cache.values() if ev is not None]
    assert any(ev.fit.fits for ev in evaluated) and any(not ev.fit.fits for ev in evaluated)
    for ev in evaluated:
        full = estimate(ev.scenario, with_warnings=False)
        assert ev.report.phases == full.phases and ev.report.peak == full.peak
        assert ev.report.time == (full.time if ev.fit.fits else None)


@pytest.mark.parametrize(
    ("scenario_id", "gpu"),
    [(BASE, "a100-40gb"), ("qwen2.5-7b-ppo-8xh100", "l40s-48gb"), ("qwen3-30b-a3b-grpo-16xh100", "h100-80gb")],
)
def test_the_other_fused_choice_holds_at_least_the_fused_independent_bytes(scenario_id, gpu):
    """The premise of ``first_fit_at``'s skip (issue #18), as a property over the searched space: with the other
    fused-kernel choice every phase (expected and worst case) holds at least ``fused_independent_bytes`` of this
    choice's phase, and whether the engine starts does not change."""
    srch = GpuSearch(load_scenario(scenario_id), gpu, max_gpus=64, margin=MARGIN, allow_lora=False)

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.sampled_from([1, 2, 4, 8, 16]).flatmap(lambda n: _knobs(srch, n)))
    def check(k: Knobs) -> None:
        a, b = srch.evaluate(k), srch.evaluate(replace(k, fused_kernels=not k.fused_kernels))
        assert (a is None) == (b is None)
        if a is None:
            return
        walks_a, walks_b = a.report.phases + a.report.worst_case_phases, b.report.phases + b.report.worst_case_phases
        for pa, pb in zip(walks_a, walks_b, strict=True):
            assert pa.name == pb.name and pb.total_bytes >= fused_independent_bytes(pa)
        assert (a.fit.engine_starts, a.fit.kv_holds_max_model_len) == (
            b.fit.engine_starts,
            b.fit.kv_holds_max_model_len,
        )

    check()


def test_a_count_without_a_frontier_does_not_hide_the_minimum():
    """seed002 (7B DoRA, 64 prompts): on RTX A6000 16 GPUs fit, but at 64 no most-saving configuration is valid
    (64 sequences on 64 GPUs: verl's mini-batch of 8 needs Ulysses SP 8, which the heads do not allow). The
    search must not read that count as 'does not fit' (before issue #18 it probed 1, 2, 8, 64 and reported that
    nothing fits); the minimum is what a scan from the bottom finds."""
    srch = GpuSearch(
        load_scenario("seed002-7b-dora-1xa100"), "rtx-a6000-48gb", max_gpus=1024, margin=MARGIN, allow_lora=False
    )
    counts = [n for n in srch.counts if srch.is_valid_count(n)]
    assert counts[-1] == 64 and not srch.frontier(64)
    scan = next(n for n in counts if srch.first_fit_at(n) is not None)
    assert scan == 16
    for guess in (None, 1, 8, 16, 64):
        first, _ = srch.min_count(guess)
        assert first is not None and first.knobs.num_gpus == scan


def test_configured_host_ram_holds_for_the_scenarios_own_gpu_type_only():
    """hardware.host_ram_gib_per_node describes the scenario's own nodes: the search of its GPU type keeps it (it
    used to be dropped when the hardware section was rebuilt); another GPU type uses its server-class default."""
    from calculator import load_scenario
    from calculator.planning.search import GpuSearch

    s = load_scenario("qwen2.5-7b-grpo-8xh100", overrides={"hardware.host_ram_gib_per_node": 256})
    own = GpuSearch(s, "h100-80gb", max_gpus=64, margin=0.1, allow_lora=False)
    other = GpuSearch(s, "a100-80gb", max_gpus=64, margin=0.1, allow_lora=False)
    assert own.base.hardware.host_ram_gib_per_node == 256
    assert other.base.hardware.host_ram_gib_per_node is None


def test_a_count_whose_most_saving_budget_needs_more_sp_keeps_a_frontier():
    """seed002 (7B DoRA) on its own 1 x A100: the most saving micro-batch sizing, a 512-token budget, is below the
    1,024-token longest sequence, which only Ulysses SP 2 can hold, and 1 GPU has no SP 2. The frontier of 1 GPU
    falls back to the configured micro-batch, which fits with offload (before, the count had no frontier and the
    planner answered 2). The answer is what a scan from the bottom finds, whatever the guess."""
    srch = GpuSearch(load_scenario("seed002-7b-dora-1xa100"), "a100-80gb", max_gpus=64, margin=MARGIN, allow_lora=False)
    (k,) = {replace(k, fused_kernels=True) for k in srch.frontier(1)}
    assert k.batch == 0 and k.ulysses_sp == 1 and srch.build(replace(k, batch=len(srch.batch_options) - 1)) is None
    assert srch.first_fit_at(1) is not None
    for guess in (None, 1, 2, 8):
        first, _ = srch.min_count(guess)
        assert first is not None and first.knobs.num_gpus == 1


def test_one_gpu_is_probed_where_fit_is_not_monotone():
    """LoRA on FSDP1 (seed002, Ascend 910B): 1 GPU fits (NO_SHARD: the sync summons nothing), 2 do not (the fp32
    model is summoned whole for the sync), 4 do. Galloping from a guess of 2 finds 4; the search probes 1 as well."""
    srch = GpuSearch(
        load_scenario("seed002-7b-dora-1xa100"), "ascend-910b-64gb", max_gpus=64, margin=MARGIN, allow_lora=False
    )
    assert [srch.first_fit_at(n) is not None for n in (1, 2, 4)] == [True, False, True]
    for guess in (None, 2, 4):
        first, _ = srch.min_count(guess)
        assert first is not None and first.knobs.num_gpus == 1
