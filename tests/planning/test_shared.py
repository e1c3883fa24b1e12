"""What the plan's GPU types share (calculator/planning/shared.py, issue #18): the facts the sharing rests on,
checked on every pair of GPU presets with equal memory, and the optimised plan against a reference search
that shares nothing and finds the minimum count by scanning every count from the bottom."""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calculator import estimate, load_scenario, plan
from calculator.inputs.presets import gpu_presets
from calculator.inputs.scenario import Scenario
from calculator.planning import recommend
from calculator.planning.fit import fit_check
from calculator.planning.search import GpuSearch
from calculator.planning.shared import SharedCandidates, for_gpu, memory_signature, with_gpu
from tests.planning.test_search import _knobs
from tests.support.strategies import scenario_dicts

BASE = "qwen2.5-7b-grpo-8xh100"
MARGIN = 0.10


def _same_memory_pairs() -> list[tuple[str, str]]:
    s = load_scenario(BASE)
    gpus = gpu_presets()
    return [
        (a, b)
        for a, b in combinations(sorted(gpus), 2)
        if memory_signature(s, gpus[a]) == memory_signature(s, gpus[b]) and gpus[a].bf16_dense_tflops is not None
    ]


PAIRS = _same_memory_pairs()


def test_the_presets_have_gpu_types_with_equal_memory():
    """H100-SXM / H800 (79.22 GiB, 2 TiB hosts), A100-80GB / A800, L20 / L40S (44.42 GiB), RTX 3090 / 4090."""
    assert {("h100-80gb", "h800-80gb"), ("a100-80gb", "a800-80gb"), ("l20-48gb", "l40s-48gb")} <= set(PAIRS)
    assert ("h100-80gb", "h100-pcie-80gb") not in PAIRS  # same memory, but 1 TiB hosts: host RAM differs


def test_the_allocator_switch_is_part_of_the_signature():
    """verl's expandable segments reach an NVIDIA / AMD allocator, not Ascend's (the fragmentation term differs), so
    an Ascend type with an H100's memory and hosts must not borrow the H100's memory estimates."""
    s = load_scenario(BASE)
    h100 = gpu_presets()["h100-80gb"]
    twin = h100.model_copy(update={"vendor": "huawei"})
    assert memory_signature(s, h100)[:2] == memory_signature(s, twin)[:2]
    assert memory_signature(s, h100) != memory_signature(s, twin)


@pytest.mark.parametrize(("gpu_a", "gpu_b"), PAIRS)
def test_equal_memory_gives_the_same_memory_estimate(gpu_a, gpu_b):
    """Property: for any point of the space, GPU type b's scenario is a's with ``hardware.gpu`` replaced, and its
    memory estimate and fit verdict are a's (the report's GPU id and name aside)."""
    s = load_scenario(BASE)
    a = GpuSearch(s, gpu_a, max_gpus=64, margin=MARGIN, allow_lora=True)
    b = GpuSearch(s, gpu_b, max_gpus=64, margin=MARGIN, allow_lora=True)  # its own caches: nothing shared

    @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.sampled_from([1, 2, 4, 8, 16]).flatmap(lambda n: _knobs(a, n)))
    def check(k) -> None:
        sa, sb = a.build(k), b.build(k)
        assert (sa is None) == (sb is None)
        if sa is None:
            return
        assert with_gpu(sa, gpu_b) == sb
        ra = estimate(sa, with_warnings=False, with_time=False)
        rb = estimate(sb, with_warnings=False, with_time=False)
        assert for_gpu(ra, gpu_presets()[gpu_b]) == rb
        assert fit_check(ra, sa, MARGIN) == fit_check(rb, sb, MARGIN)

    check()


def test_a_shared_search_counts_only_its_own_estimates():
    """The second GPU type of an equal-memory pair re-uses the first one's estimates: fewer estimates, and the same
    result as searching alone."""
    s = load_scenario(BASE)
    shared = SharedCandidates()
    first = recommend.search_gpu(s, "h100-80gb", max_gpus=64, margin=MARGIN, allow_lora=False, shared=shared)
    second = recommend.search_gpu(s, "h800-80gb", max_gpus=64, margin=MARGIN, allow_lora=False, shared=shared)
    alone = recommend.search_gpu(s, "h800-80gb", max_gpus=64, margin=MARGIN, allow_lora=False)
    assert second.num_estimates < alone.num_estimates <= first.num_estimates + 5
    assert second.recommended.scenario == alone.recommended.scenario
    assert second.recommended.report == alone.recommended.report
    assert second.minimum.report == alone.minimum.report


def test_caches_serve_one_scenario_and_margin():
    s = load_scenario(BASE)
    shared = SharedCandidates()
    GpuSearch(s, "h100-80gb", max_gpus=8, margin=MARGIN, allow_lora=False, shared=shared)
    other = load_scenario(BASE, overrides={"data.max_response_length": 2048})
    assert (
        GpuSearch(other, "h800-80gb", max_gpus=8, margin=MARGIN, allow_lora=False, shared=shared).shared is not shared
    )
    assert GpuSearch(s, "h800-80gb", max_gpus=8, margin=0.2, allow_lora=False, shared=shared).shared is not shared
    assert GpuSearch(s, "a100-40gb", max_gpus=8, margin=MARGIN, allow_lora=False, shared=shared).shared is shared


# ---- the optimised plan against the reference search ----------------------------------------------------------


class ReferenceSearch(GpuSearch):
    """Shares nothing between GPU types and finds the minimum count by trying every valid count from the bottom
    (the exhaustive form of ``GpuSearch.min_count``'s galloping search and bisection; the guess is ignored)."""

    def __init__(self, *args, shared=None, **kwargs):
        super().__init__(*args, **kwargs)

    def min_count(self, guess=None):
        counts = [n for n in self.counts if self.is_valid_count(n)]
        for n in counts:
            ev = self.first_fit_at(n)
            if ev is not None:
                return ev, counts
        return None, counts


def _rows(p) -> list[dict]:
    """The plan's rows without the work counters (the reference runs more estimates, by design)."""
    rows = p.model_dump(mode="json")["rows"]
    for r in rows:
        r.pop("num_estimates")
    return rows


def _both(monkeypatch, s, **kwargs):
    fast = plan(s, **kwargs)
    with monkeypatch.context() as m:
        m.setattr(recommend, "GpuSearch", ReferenceSearch)
        ref = plan(s, **kwargs)
    return fast, ref


@pytest.mark.parametrize(
    ("preset", "kwargs"),
    [
        (BASE, {}),
        ("qwen2.5-7b-ppo-8xh100", {"max_gpus": 64}),
        ("qwen3-30b-a3b-grpo-16xh100", {"max_gpus": 64, "allow_lora": True}),
        ("seed002-7b-dora-1xa100", {"max_gpus": 64}),
    ],
)
def test_plan_is_what_the_reference_search_finds(monkeypatch, preset, kwargs):
    fast, ref = _both(monkeypatch, load_scenario(preset), **kwargs)
    assert _rows(fast) == _rows(ref)
    assert fast.num_estimates < ref.num_estimates


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(scenario_dicts())
def test_plan_is_what_the_reference_search_finds_on_random_scenarios(d):
    s = Scenario(**d)
    gpus = ["h100-80gb", "h800-80gb", "a100-80gb", "a800-80gb", "l20-48gb", "l40s-48gb", "a100-40gb"]
    with pytest.MonkeyPatch.context() as mp:
        fast, ref = _both(mp, s, gpus=gpus, max_gpus=32)
    assert _rows(fast) == _rows(ref)
    assert fast.num_estimates <= ref.num_estimates
