"""The response-length distribution that generation, packing and stragglers follow (issue 15, item 5).

Shape: a log-normal clipped at ``max_response_length`` (a common fit for LLM output lengths, e.g. the
length distributions of ShareGPT / LMSYS-Chat used by vLLM's and Splitwise's benchmarks are close to
log-normal; RL responses that reach the limit are truncated, which verl logs as
``response_length/clip_ratio``). Two numbers fix it:

    mean of min(R, R_max)  = ``data.mean_response_length``
    P(R >= R_max)          = ``data.response_clip_ratio`` (the max as a high quantile: 1 - clip ratio)

    with z = Φ⁻¹(1 - clip): μ = ln R_max - z·σ, and σ solves
    E[min(R, R_max)] = R_max·(e^{σ²/2 - zσ}·Φ(z - σ) + clip) = mean      (bisection; decreasing in σ)

The clipped mean falls from R_max (σ -> 0) to R_max·clip (σ -> ∞). The truncated responses are held to at
most ``MAX_TRUNCATED_TOKEN_SHARE`` of all response tokens (clip <= 0.1 x mean / R_max): with a short mean and a
long max (500 of 20,480) a 1% clip ratio would put 40% of the tokens in the clipped responses and force a
median of a few tokens; the lower clip ratio is stated in the formula. ``mean == max`` is a point mass at the
max (every response truncated).

A measured histogram (``data.response_length_histogram``) replaces the fit (``HistogramLengths``, same interface).

Left out (of the fit): multi-modal length distributions (a mix of short answers and long reasoning chains); the
distribution is the same for every prompt (GRPO's n samples of one prompt are correlated in reality).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Protocol

SQRT2 = math.sqrt(2.0)
_BISECTION_STEPS = 60
_SIGMA_MAX = 8.0
MAX_TRUNCATED_TOKEN_SHARE = 0.1
_NORMAL = NormalDist()
SAMPLES_PER_MINI_BATCH = 16  # quantile points that stand for one rank's mini-batch in balanced_straggler_factor


def _phi(x: float) -> float:
    """Standard normal CDF."""
    return 0.5 * (1.0 + math.erf(x / SQRT2))


def _inv_phi(p: float) -> float:
    """Standard normal quantile by bisection on ``_phi`` (p in (0, 1))."""
    lo, hi = -10.0, 10.0
    for _ in range(_BISECTION_STEPS):
        mid = (lo + hi) / 2
        if _phi(mid) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@dataclass(frozen=True)
class LengthDistribution:
    """Clipped log-normal response lengths (module docstring). ``sigma == 0``: every response has length ``top``."""

    mean: float
    top: float
    clip: float
    mu: float
    sigma: float

    @property
    def longest(self) -> float:
        """Where the last response ends: the max (a clipped distribution always has responses there)."""
        return self.top

    def survival(self, t: float) -> float:
        """P(R > t)."""
        if t >= self.top:
            return 0.0
        if self.sigma == 0.0 or t <= 0:
            return 1.0
        return 1.0 - _phi((math.log(t) - self.mu) / self.sigma)

    def second_moment(self) -> float:
        """E[min(R, R_max)²]."""
        if self.sigma == 0.0:
            return self.top * self.top
        s, lt = self.sigma, math.log(self.top)
        body = math.exp(2 * self.mu + 2 * s * s) * _phi((lt - self.mu - 2 * s * s) / s)
        return body + self.top * self.top * self.clip

    def cv(self) -> float:
        """Coefficient of variation (standard deviation / mean) of the clipped lengths."""
        var = max(0.0, self.second_moment() - self.mean * self.mean)
        return math.sqrt(var) / self.mean if self.mean else 0.0

    def quantile(self, p: float) -> float:
        """The length below which a share ``p`` of the responses fall (the max for p >= 1 - clip)."""
        if self.sigma == 0.0 or p >= 1.0 - self.clip:
            return self.top
        return min(self.top, math.exp(self.mu + self.sigma * _NORMAL.inv_cdf(min(max(p, 1e-12), 1 - 1e-12))))

    def describe(self) -> str:
        if self.sigma == 0.0:
            return f"every response {self.top:.0f} tokens"
        median = math.exp(self.mu)
        return (
            f"log-normal (median {median:,.0f}, sigma {self.sigma:.2f}) clipped at {self.top:,.0f} "
            f"({self.clip:.1%} truncated), mean {self.mean:,.0f}, CV {self.cv():.2f}"
        )


@dataclass(frozen=True)
class HistogramLengths:
    """Measured response lengths (``data.response_length_histogram``): ``bins`` of (length, count), sorted."""

    bins: tuple[tuple[int, float], ...]
    top: float

    @property
    def _total(self) -> float:
        return sum(c for _, c in self.bins)

    @property
    def mean(self) -> float:
        return sum(length * c for length, c in self.bins) / self._total

    @property
    def longest(self) -> float:
        return float(self.bins[-1][0])

    def survival(self, t: float) -> float:
        """P(R > t): the share of responses longer than t."""
        return sum(c for length, c in self.bins if length > t) / self._total

    def second_moment(self) -> float:
        return sum(length * length * c for length, c in self.bins) / self._total

    def cv(self) -> float:
        m = self.mean
        return math.sqrt(max(0.0, self.second_moment() - m * m)) / m

    def quantile(self, p: float) -> float:
        """The smallest bin length whose cumulative share reaches ``p``."""
        target = p * self._total
        seen = 0.0
        for length, c in self.bins:
            seen += c
            if seen >= target:
                return float(length)
        return float(self.bins[-1][0])

    def describe(self) -> str:
        return f"measured histogram of {len(self.bins)} bins, mean {self.mean:,.0f}, CV {self.cv():.2f}"


def _clipped_mean(sigma: float, z: float, top: float, clip: float) -> float:
    return top * (math.exp(sigma * sigma / 2 - z * sigma) * _phi(z - sigma) + clip)


# A pure function of three numbers (two bisections, ~25 us): an estimate asks for the same distribution from the
# rollout timer and from every pass's straggler term, and the planner for every candidate of one scenario.
@functools.lru_cache(maxsize=1024)
def fit_lengths(mean: float, top: float, clip_ratio: float) -> LengthDistribution:
    """The clipped log-normal with this mean, max and share of responses truncated at the max (cached: the
    result is a frozen record)."""
    top = max(float(top), 1.0)
    mean = min(max(float(mean), 1.0), top)
    if mean >= top or clip_ratio >= 1.0:
        return LengthDistribution(mean=top, top=top, clip=1.0, mu=math.log(top), sigma=0.0)
    clip = min(clip_ratio, MAX_TRUNCATED_TOKEN_SHARE * mean / top)
    z = _inv_phi(1.0 - clip)
    lo, hi = 1e-9, _SIGMA_MAX
    for _ in range(_BISECTION_STEPS):
        mid = (lo + hi) / 2
        if _clipped_mean(mid, z, top, clip) > mean:
            lo = mid
        else:
            hi = mid
    sigma = (lo + hi) / 2
    return LengthDistribution(mean=mean, top=top, clip=clip, mu=math.log(top) - z * sigma, sigma=sigma)


def expected_max_standard_normal(n: int) -> float:
    """Expected largest of ``n`` independent standard normals, Blom's (1958) approximation
    Φ⁻¹((n - 0.375) / (n + 0.25)): 0.55 for 2, 1.03 for 4, 1.42 for 8, 2.04 for 32 (tabulated: 0.56, 1.03, 1.42,
    2.04; Harter 1961). The often-quoted √(2 ln n) is its large-n bound and overstates small n (1.18 for 2)."""
    if n <= 1:
        return 0.0
    return _NORMAL.inv_cdf((n - 0.375) / (n + 0.25))


def straggler_factor(cv: float, items_per_rank: float, ranks: int) -> float:
    """Expected slowest / mean work of ``ranks`` ranks that each sum ``items_per_rank`` independent items of this
    coefficient of variation: 1 + cv / √n · E[max of D standard normals] (normal approximation of the sum;
    ``expected_max_standard_normal``). 1 for one rank or no spread."""
    if ranks <= 1 or items_per_rank <= 0 or cv <= 0:
        return 1.0
    return 1.0 + cv / math.sqrt(items_per_rank) * expected_max_standard_normal(ranks)


class _Quantiles(Protocol):
    def quantile(self, p: float) -> float: ...


def _sorted_rank(position: int, size: int) -> int:
    """Rank (0 = shortest) of the sequence verl's ``_balance_batch`` puts at ``position`` of a rank's partition of
    ``size``: sorted ascending, then ``partition[::2] + partition[1::2][::-1]`` (short at both ends, long in the
    middle)."""
    half = (size + 1) // 2
    return 2 * position if position < half else 2 * (size - 1 - position) + 1


def balanced_straggler_factor(dist: _Quantiles, prompt: float, num_mini: int, per_rank: float, ranks: int) -> float:
    """Slowest / mean work of a data-parallel update when verl's ``trainer.balance_batch`` (default on) has
    ordered the batch (``ray_trainer._balance_batch``, verl 0.5-0.9.1): Karmarkar-Karp partitions of equal size
    and equal total workload per rank, each sorted and laid out short-long-short, then cut by every rank into
    ``num_mini`` consecutive mini-batches of ``per_rank`` sequences. Mini-batch i therefore holds the same
    length band on every rank (quantile positions from ``_sorted_rank``), and only the spread INSIDE that band is
    left to the ranks: per mini-batch the random-rank factor ``straggler_factor`` with the band's own CV, capped
    at the band's longest over its mean; the step sums the mini-batches' slowest ranks over their means. Each
    band is represented by ``SAMPLES_PER_MINI_BATCH`` quantile points (sequence = prompt + response).
    Treating the band's members as independent draws overstates the spread a little (they are order
    statistics); the Karmarkar-Karp pairing is not modelled beyond equal totals."""
    n = max(int(round(per_rank)), 1)
    size = n * max(num_mini, 1)
    k = min(n, SAMPLES_PER_MINI_BATCH)
    slow = mean = 0.0
    for i in range(max(num_mini, 1)):
        pos = [i * n + int((j + 0.5) * n / k) for j in range(k)]
        xs = [prompt + dist.quantile((_sorted_rank(q, size) + 0.5) / size) for q in pos]
        m = sum(xs) / k
        sd = math.sqrt(max(0.0, sum(x * x for x in xs) / k - m * m))
        f = min(straggler_factor(sd / m if m else 0.0, n, ranks), max(xs) / m if m else 1.0)
        slow += m * max(f, 1.0)
        mean += m
    return slow / mean if mean else 1.0


__all__ = [
    "HistogramLengths",
    "LengthDistribution",
    "balanced_straggler_factor",
    "expected_max_standard_normal",
    "fit_lengths",
    "straggler_factor",
]
