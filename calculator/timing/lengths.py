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

SQRT2 = math.sqrt(2.0)
_BISECTION_STEPS = 60
_SIGMA_MAX = 8.0
MAX_TRUNCATED_TOKEN_SHARE = 0.1


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


def straggler_factor(cv: float, items_per_rank: float, ranks: int) -> float:
    """Expected slowest / mean work of ``ranks`` ranks that each sum ``items_per_rank`` independent items of this
    coefficient of variation: 1 + cv / √n · √(2 ln D) (normal approximation of the sum; the expected maximum of
    D standard normals is ≈ √(2 ln D), e.g. Cramér 1946 §28.6). 1 for one rank or no spread."""
    if ranks <= 1 or items_per_rank <= 0 or cv <= 0:
        return 1.0
    return 1.0 + cv / math.sqrt(items_per_rank) * math.sqrt(2.0 * math.log(ranks))


__all__ = ["HistogramLengths", "LengthDistribution", "fit_lengths", "straggler_factor"]
