"""FLOP counts, link bandwidths and the phase-time record (calculator/timing/flops.py), hand-checked."""

from __future__ import annotations

import pytest

from calculator import load_scenario
from calculator.report.estimate import build_context
from calculator.timing.flops import collective_bytes_per_s
from tests.support.qwen7b_h100 import (
    BASE,
    EFF_NET,
    EFF_NVLINK,
    H100_NVLINK_UNI,
)


def test_collective_bandwidth_across_nodes():
    s = load_scenario(BASE, overrides={"hardware.num_gpus": 16})
    gpu = build_context(s).gpu
    assert collective_bytes_per_s(s, gpu, 8) == pytest.approx(H100_NVLINK_UNI * EFF_NVLINK)
    # 8 NICs x 50 GB/s per node at 70%, below NVLink's 337.5 GB/s
    assert collective_bytes_per_s(s, gpu, 16) == pytest.approx(8 * 50e9 * EFF_NET)
