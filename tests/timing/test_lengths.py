"""The response-length distribution (calculator/timing/lengths.py): a log-normal clipped at the max with the
requested mean and share truncated, and the data-parallel straggler factor that follows from its spread."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculator.timing.lengths import (
    MAX_TRUNCATED_TOKEN_SHARE,
    HistogramLengths,
    _sorted_rank,
    balanced_straggler_factor,
    expected_max_standard_normal,
    fit_lengths,
    straggler_factor,
)


def test_the_max_is_the_one_minus_clip_quantile():
    d = fit_lengths(900, 3840, 0.01)
    assert d.survival(3840 * (1 - 1e-9)) == pytest.approx(0.01, rel=1e-6)  # P(R >= max) = clip ratio
    assert d.survival(3840) == 0.0 and d.survival(0) == 1.0
    assert d.clip == 0.01  # 0.01 x 3840 = 38 tokens of the 900 mean: under the 10% cap


def test_mean_equals_max_is_a_point_mass():
    d = fit_lengths(3840, 3840, 0.01)
    assert d.sigma == 0.0 and d.cv() == 0.0
    assert d.survival(3839) == 1.0 and d.second_moment() == 3840**2


def test_a_short_mean_under_a_long_max_lowers_the_clip_ratio():
    """500 of 20,480 at 1% truncated would put 20480 x 0.01 / 500 = 41% of the tokens in clipped responses; the
    cap keeps that at 10%: clip = 0.1 x 500 / 20480 = 0.00244."""
    d = fit_lengths(500, 20480, 0.01)
    assert d.clip == pytest.approx(MAX_TRUNCATED_TOKEN_SHARE * 500 / 20480)
    assert d.survival(20480 * (1 - 1e-9)) == pytest.approx(d.clip, rel=1e-6)


def test_more_truncation_at_the_same_mean_means_a_wider_spread():
    """Fixing the mean and raising the share at the max must pull the rest of the mass down: larger CV."""
    narrow, wide = fit_lengths(2000, 8192, 0.01), fit_lengths(2000, 8192, 0.1)
    assert wide.cv() > narrow.cv()


@settings(max_examples=60, deadline=None)
@given(
    top=st.integers(min_value=64, max_value=65536),
    frac=st.floats(min_value=0.05, max_value=0.99),
    clip=st.floats(min_value=0.001, max_value=0.5),
)
def test_fitted_mean_is_the_requested_mean(top, frac, clip):
    """E[min(R, max)] = ∫ survival; checked with the closed form of the clipped log-normal's mean:
    e^{μ+σ²/2}·Φ((ln max - μ - σ²)/σ) + max·clip."""
    mean = frac * top
    d = fit_lengths(mean, top, clip)
    s = d.sigma
    phi = 0.5 * (1 + math.erf((math.log(top) - d.mu - s * s) / s / math.sqrt(2)))
    assert math.exp(d.mu + s * s / 2) * phi + top * d.clip == pytest.approx(mean, rel=1e-6)
    assert 0 <= d.cv() and d.second_moment() >= mean * mean * (1 - 1e-9)


def test_expected_max_of_normals_against_the_tables():
    """Blom's approximation against the tabulated expected maxima of n standard normals (Harter 1961, Table 1:
    0.5642, 1.0294, 1.4236, 1.7660, 2.0697 for n = 2, 4, 8, 16, 32) within 0.03; none for one rank."""
    for n, table in ((2, 0.5642), (4, 1.0294), (8, 1.4236), (16, 1.7660), (32, 2.0697)):
        assert expected_max_standard_normal(n) == pytest.approx(table, abs=0.03), n
    assert expected_max_standard_normal(1) == 0.0


def test_straggler_factor_by_hand():
    """cv 0.5, 16 sequences per rank, 8 ranks: Blom z_8 = Φ⁻¹(7.625 / 8.25) = 1.4342, so
    1 + 0.5 / 4 x 1.4342 = 1.1793."""
    assert straggler_factor(0.5, 16, 8) == pytest.approx(1.1793, abs=1e-4)
    assert straggler_factor(0.5, 16, 1) == 1.0 and straggler_factor(0.0, 16, 8) == 1.0
    # more sequences per rank average the spread out; more ranks make the slowest one slower
    assert straggler_factor(0.5, 64, 8) < straggler_factor(0.5, 16, 8) < straggler_factor(0.5, 16, 64)


def test_histogram_replaces_the_fit():
    """'500:30, 2000:50, 4096:20': mean (15000 + 100000 + 81920) / 100 = 1969.2; P(R > 1000) = 0.7; the last wave
    ends at the longest bin (4096), not at the max."""
    from calculator import load_scenario
    from calculator.timing.rollout import length_distribution

    s = load_scenario(
        None, overrides={"data.max_response_length": 8192, "data.response_length_histogram": "500:30, 2000:50, 4096:20"}
    )
    assert s.data.mean_response_length == 1969  # filled from the histogram
    d = length_distribution(s, 1969)
    assert d.mean == pytest.approx(1969.2) and d.survival(1000) == pytest.approx(0.7) and d.longest == 4096
    m2 = (30 * 500**2 + 50 * 2000**2 + 20 * 4096**2) / 100
    assert d.second_moment() == pytest.approx(m2)


@pytest.mark.parametrize(
    "text,needle",
    [("x", "not 'length:count'"), ("500:3, 9000:1", "max_response_length"), ("500:0", "add up to 0")],
)
def test_bad_histograms_are_refused_with_the_field_named(text, needle):
    from calculator import load_scenario
    from calculator.errors import InputError

    with pytest.raises(InputError, match="response_length_histogram") as e:
        load_scenario(None, overrides={"data.max_response_length": 4096, "data.response_length_histogram": text})
    assert needle in str(e.value)


def test_balance_batch_layout_short_long_short():
    """verl: sorted [a0..a5] -> partition[::2] + partition[1::2][::-1] = a0 a2 a4 a5 a3 a1."""
    assert [_sorted_rank(p, 6) for p in range(6)] == [0, 2, 4, 5, 3, 1]
    assert [_sorted_rank(p, 5) for p in range(5)] == [0, 2, 4, 3, 1]


def test_balanced_straggler_by_hand():
    """Lengths 100 and 300 (one each), 2 ranks x 2 mini-batches of 2: every mini-batch holds one short and one
    long (ranks 0,2 then 3,1 of 4): mean 200, sd 100, cv 0.5; z_2 = Φ⁻¹(1.625 / 2.25) = 0.5895, so
    1 + 0.5 / sqrt(2) x 0.5895 = 1.2084 (below the cap 300 / 200 = 1.5), the same for both mini-batches."""
    h = HistogramLengths(bins=((100, 1.0), (300, 1.0)), top=300.0)
    f = balanced_straggler_factor(h, 0.0, 2, 2.0, 2)
    assert f == pytest.approx(1.2084, abs=1e-4)


def test_balanced_straggler_shrinks_with_narrower_bands():
    """A heavy-tailed distribution (mean 2,048 of max 28,672): 16 mini-batches leave each rank a narrow band, so
    the slowest rank is much closer to the mean than with one mini-batch (the whole spread); no spread or one
    rank: no straggler."""
    d = fit_lengths(2048, 28672, 0.01)
    one = balanced_straggler_factor(d, 256.0, 1, 64.0, 8)
    sixteen = balanced_straggler_factor(d, 256.0, 16, 64.0, 8)
    assert 1.0 < sixteen < one
    assert sixteen < 1.15  # the DAPO-7B colocated run's shape: ~11 % (43 % before banding)
    assert balanced_straggler_factor(fit_lengths(500, 500, 0.0), 100.0, 4, 32.0, 8) == 1.0
    assert balanced_straggler_factor(d, 256.0, 4, 64.0, 1) == 1.0


def test_quantiles_of_the_fit_and_of_a_histogram():
    d = fit_lengths(600, 1024, 0.01)
    assert d.quantile(0.5) == pytest.approx(math.exp(d.mu), rel=1e-9)  # the median of the log-normal
    assert d.quantile(0.999) == 1024.0  # inside the clipped share: the max
    h = HistogramLengths(bins=((100, 3.0), (300, 1.0)), top=300.0)
    assert (h.quantile(0.5), h.quantile(0.75), h.quantile(0.9)) == (100.0, 100.0, 300.0)
