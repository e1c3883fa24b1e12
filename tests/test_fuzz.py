"""Fuzzing the calculator over the whole input space, valid and invalid (issue #8 item 3).

Every generated input either yields a report whose invariants hold (non-negative components that sum to the
phase totals, peak = max over phases) or raises InputError; nothing else. CI runs 2,000 examples; set
RLPLAN_FUZZ_EXAMPLES (e.g. 50000) for the long mode.
"""

from __future__ import annotations

import math
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calculator import InputError, estimate, load_scenario
from tests.support.strategies import megatron_overrides, scenario_dicts

pytestmark = pytest.mark.slow  # ~25 s: the longest single test of the default run

EXAMPLES = int(os.environ.get("RLPLAN_FUZZ_EXAMPLES", "2000"))

GARBAGE = st.one_of(
    st.sampled_from(
        [
            0,
            -1,
            -8,
            1,
            3,
            7,
            1e30,
            -1e30,
            float("nan"),
            float("inf"),
            10**20,
            0.5,
            1.5,
            2**31,
            "",
            "abc",
            "8",
            "true",
            None,
            True,
            False,
            [],
            {},
            [1, 2],
            {"x": 1},
            "h100-80gb",
            "qwen2.5-7b",
            "!!python/object",
        ]
    ),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)


def _leaf_paths(d, prefix=()):
    for k, v in d.items():
        if isinstance(v, dict) and v:
            yield from _leaf_paths(v, (*prefix, k))
        else:
            yield (*prefix, k)


@st.composite
def mutated(draw):
    d = draw(scenario_dicts())
    paths = list(_leaf_paths(d))
    for path in draw(st.lists(st.sampled_from(paths), max_size=4, unique=True)):
        node = d
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = draw(GARBAGE)
    if draw(st.booleans()) and draw(st.booleans()):
        section = draw(st.sampled_from(["actor", "rollout", "data", "hardware", "model", "critic"]))
        d[section][draw(st.text(min_size=1, max_size=8))] = draw(GARBAGE)
    if draw(st.integers(0, 20)) == 0:
        d["model"]["config"] = draw(
            st.dictionaries(
                st.sampled_from(
                    [
                        "model_type",
                        "hidden_size",
                        "num_hidden_layers",
                        "num_attention_heads",
                        "num_key_value_heads",
                        "intermediate_size",
                        "vocab_size",
                        "head_dim",
                        "num_experts",
                        "num_experts_per_tok",
                    ]
                ),
                GARBAGE,
                max_size=10,
            )
        )
    return d


def check_invariants(r) -> None:
    for p in r.phases + r.worst_case_phases:
        assert p.details, p.name
        assert all(c.bytes >= 0 for c in p.details)
        assert sum(c.bytes for c in p.details) == p.total_bytes
        assert math.isclose(sum(p.components.values()), p.total_gib, rel_tol=1e-9, abs_tol=1e-9)
    assert r.peak.gib_per_gpu == max(p.total_gib for p in r.phases)
    assert math.isfinite(r.peak.gib_per_gpu) and math.isfinite(r.peak.headroom_gib)
    if r.time is not None:
        assert (r.time.step_s is None) == (not r.rollout.starts)  # no time for a step that cannot run
        assert (r.time.step_s or 0.0) >= 0 and all(v >= 0 for v in r.time.phases_s.values() if v is not None)
    assert r.peak.fits == (r.peak.reasons == [])


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated())
def test_fuzz_calculator(d):
    try:
        s = load_scenario(d)
    except InputError as err:
        assert err.problems and all(isinstance(p, str) and p for p in err.problems)
        return
    check_invariants(estimate(s))


@settings(max_examples=max(100, EXAMPLES // 10), deadline=None, suppress_health_check=list(HealthCheck))
@given(megatron_overrides())
def test_fuzz_megatron_layouts(ov):
    """Megatron layouts (pipeline ranks described and pacing the step, uneven and interleaved splits, EP, CP,
    recompute, LoRA, offload): a report whose invariants hold, or an InputError naming the problem."""
    try:
        s = load_scenario("qwen2.5-7b-grpo-8xh100", overrides=ov)
    except InputError as err:
        assert err.problems and all(isinstance(p, str) and p for p in err.problems)
        return
    check_invariants(estimate(s))
