"""Units and formatting: the one place for byte and count conventions.

Bytes are exact integers inside the calculator; GiB (2**30 bytes) is used only for display
and in the JSON report. Parameter and token counts are decimal (1B = 1e9), never divided by 1024.
"""

from __future__ import annotations

GIB_BYTES = 2**30
MIB_BYTES = 2**20
GB_BYTES = 10**9

# Bytes per element of the dtypes that occur in training and inference.
DTYPE_BYTES: dict[str, int] = {
    "fp32": 4,
    "float32": 4,
    "bf16": 2,
    "bfloat16": 2,
    "fp16": 2,
    "float16": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
}


def dtype_bytes(name: str) -> int:
    """Bytes per element of a dtype name as verl / vLLM spell it."""
    try:
        return DTYPE_BYTES[name.lower()]
    except KeyError:
        allowed = ", ".join(sorted(DTYPE_BYTES))
        raise ValueError(f"unknown dtype {name!r}; allowed: {allowed}") from None


def to_gib(num_bytes: float) -> float:
    """Bytes to GiB (2**30), for display and the JSON report."""
    return num_bytes / GIB_BYTES


def gib_to_bytes(gib: float) -> int:
    """GiB (2**30) to whole bytes."""
    return int(round(gib * GIB_BYTES))


def format_gib(num_bytes: float, digits: int = 2, *, unit: bool = True) -> str:
    """Bytes as GiB for display: '12.34 GiB' ('12.34' with ``unit=False``, inside a sum that names it once)."""
    return f"{num_bytes / GIB_BYTES:.{digits}f}" + (" GiB" if unit else "")


def format_count(count: float) -> str:
    """Decimal count with a K/M/B/T suffix: 7615616512 -> '7.62B'."""
    for suffix, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(count) >= scale:
            return f"{count / scale:.2f}{suffix}"
    return f"{count:.0f}"


def ceil_div(a: int, b: int) -> int:
    """Integer ceiling of a / b for non-negative a and positive b."""
    return -(-a // b)
