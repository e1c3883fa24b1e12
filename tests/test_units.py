"""Units and formatting (calculator/units.py): bytes exact, GiB = 2**30 for display only, counts decimal."""

from __future__ import annotations

import pytest

from calculator.units import (
    DTYPE_BYTES,
    GB_BYTES,
    GIB_BYTES,
    MIB_BYTES,
    ceil_div,
    dtype_bytes,
    format_count,
    format_gib,
    gib_to_bytes,
    to_gib,
)


def test_unit_constants():
    assert (GIB_BYTES, MIB_BYTES, GB_BYTES) == (1_073_741_824, 1_048_576, 1_000_000_000)


@pytest.mark.parametrize(
    ("name", "size"),
    [("fp32", 4), ("float32", 4), ("bf16", 2), ("BFloat16", 2), ("fp16", 2), ("float16", 2), ("fp8", 1),
     ("fp8_e4m3", 1), ("FP8_E5M2", 1)],
)  # fmt: skip
def test_dtype_bytes(name: str, size: int):
    assert dtype_bytes(name) == size


def test_unknown_dtype_lists_the_allowed_ones():
    with pytest.raises(
        ValueError, match=r"unknown dtype 'int4'; allowed: bf16, bfloat16, float16, float32, fp16, fp32"
    ):
        dtype_bytes("int4")
    assert set(DTYPE_BYTES) == {"fp32", "float32", "bf16", "bfloat16", "fp16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2"}


def test_gib_conversions():
    assert to_gib(2**31) == 2.0
    assert to_gib(80e9) == pytest.approx(74.506, abs=1e-3)  # an "80 GB" GPU is 74.5 GiB
    assert gib_to_bytes(0.5) == 536_870_912 and isinstance(gib_to_bytes(0.5), int)
    assert gib_to_bytes(to_gib(123_456_789)) == 123_456_789  # exact round trip for whole bytes


def test_format_gib():
    assert format_gib(12.345 * GIB_BYTES) == "12.35 GiB"
    assert format_gib(GIB_BYTES, 0) == "1 GiB"
    assert format_gib(0) == "0.00 GiB"


@pytest.mark.parametrize(
    ("count", "text"),
    [
        (7_615_616_512, "7.62B"),  # Qwen2.5-7B: decimal, not 7.09 (2**30)
        (1.5e12, "1.50T"),
        (-2.5e6, "-2.50M"),
        (1000, "1.00K"),
        (999, "999"),
        (0, "0"),
    ],
)
def test_format_count_is_decimal(count: float, text: str):
    assert format_count(count) == text


@pytest.mark.parametrize(("a", "b", "q"), [(0, 4, 0), (1, 4, 1), (4, 4, 1), (5, 4, 2), (10**18 + 1, 10**9, 10**9 + 1)])
def test_ceil_div(a: int, b: int, q: int):
    assert ceil_div(a, b) == q
