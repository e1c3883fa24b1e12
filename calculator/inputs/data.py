"""The scenario's ``data`` section: verl's batch and length settings plus rlplan's expected lengths and the
response-length distribution the time model reads (``calculator.timing.lengths``)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from calculator.inputs.backends import MAX_COUNT, _Frozen
from calculator.inputs.histogram import parse_histogram
from calculator.inputs.limits import MAX_HISTOGRAM_CHARS


class DataSection(_Frozen):
    """``data`` plus rlplan's expected lengths."""

    train_batch_size: int = Field(default=1024, ge=1, le=MAX_COUNT, description="Prompts per step.")
    gen_batch_size: int | None = Field(
        default=None,
        ge=1,
        le=MAX_COUNT,
        description="Prompts generated per step (DAPO dynamic sampling); null = train_batch_size.",
    )
    max_prompt_length: int = Field(
        default=512,
        ge=1,
        le=MAX_COUNT,
        description="Longest prompt in tokens (verl data.max_prompt_length); the worst case uses it.",
    )
    max_response_length: int = Field(
        default=512,
        ge=1,
        le=MAX_COUNT,
        description="Longest response in tokens (verl data.max_response_length); the worst case uses it.",
    )
    mean_prompt_length: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, description="rlplan: expected prompt tokens; null = max_prompt_length."
    )
    mean_response_length: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, description="rlplan: expected response tokens; null = max_response_length."
    )
    response_clip_ratio: float = Field(
        default=0.01,
        gt=0,
        le=1,
        description="rlplan (step time): share of responses that reach max_response_length (verl logs it as "
        "response_length/clip_ratio). With mean_response_length it fixes the assumed response-length distribution, "
        "a log-normal clipped at the max (calculator/timing/lengths.py), which sets the decode long tail and the "
        "data-parallel stragglers. 0.01 is an ESTIMATE for runs whose max is set well above typical answers; long "
        "reasoning runs often log 0.05-0.2. Capped so truncated responses hold at most 10% of the tokens.",
    )

    response_length_histogram: str | None = Field(
        default=None,
        max_length=MAX_HISTOGRAM_CHARS,
        description="rlplan (step time): measured response lengths as 'length:count, length:count, ...' (e.g. "
        "from a previous run's response_length distribution); replaces the assumed log-normal in the decode long "
        "tail and the stragglers. Lengths 1..max_response_length, counts >= 0, at most 256 bins. Sets "
        "mean_response_length when that is empty; if both are given they must agree within 5%.",
    )

    @model_validator(mode="before")
    @classmethod
    def _histogram_mean(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not data.get("response_length_histogram"):
            return data
        bins = parse_histogram(data["response_length_histogram"], data.get("max_response_length", 512))
        mean = sum(length * count for length, count in bins) / sum(count for _, count in bins)
        given = data.get("mean_response_length")
        if given is None:
            return {**data, "mean_response_length": max(1, round(mean))}
        if isinstance(given, int | float) and abs(given - mean) > 0.05 * mean:
            raise ValueError(
                f"data.mean_response_length ({given}) and the mean of data.response_length_histogram "
                f"({mean:.0f}) differ by more than 5%: leave mean_response_length empty or fix one of them"
            )
        return data

    @model_validator(mode="after")
    def _means_within_max(self) -> DataSection:
        for kind in ("prompt", "response"):
            mean = getattr(self, f"mean_{kind}_length")
            top = getattr(self, f"max_{kind}_length")
            if mean is not None and mean > top:
                raise ValueError(f"data.mean_{kind}_length ({mean}) must be <= data.max_{kind}_length ({top})")
        if self.gen_batch_size is not None and self.gen_batch_size < self.train_batch_size:
            raise ValueError(
                f"data.gen_batch_size ({self.gen_batch_size}) must be >= data.train_batch_size ({self.train_batch_size})"
            )
        return self
