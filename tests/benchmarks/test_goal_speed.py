"""benchmarks/peer.py's scaling to the goal's speed, as bench_app and bench_cli print it (hand-checked numbers)."""

from __future__ import annotations

import pytest

from benchmarks import bench_app, bench_cli
from benchmarks import peer as yardstick


class FakePeer(yardstick.Peer):
    """A peer whose SFT estimate takes ``ms`` of CPU each (no worker process)."""

    def __init__(self, ms: float) -> None:  # the real one starts the llm-analysis worker
        self.ms = ms

    def cpu_s(self, calls: int) -> float:
        return calls * self.ms / 1e3


def test_at_goal_speed_scales_by_the_peer_when_the_goals_were_set():
    assert yardstick.PEER_MS_WHEN_GOALS_WERE_SET == 0.19
    assert yardstick.at_goal_speed(50.0, 0.5) == pytest.approx(19.0)  # 50 ms beside a peer 2.6x slower than then
    assert yardstick.at_goal_speed(0.19, 0.19) == 0.19  # a machine as fast as when the goals were set


def test_median_ms_is_per_estimate():
    assert yardstick.median_ms(FakePeer(0.38)) == pytest.approx(0.38, rel=1e-12)


def test_bench_app_scales_only_the_script_cpu_medians():
    out = {"first run": 900.0, "GPU count: median": 45.0, "GPU count: script CPU median": 38.0}
    with_peer = bench_app.with_peer(out, FakePeer(0.38))
    expected = {**out, "peer SFT estimate": 0.38, "GPU count: at the goal's speed": 19.0}  # 38 ms x 0.19 / 0.38
    assert with_peer == pytest.approx(expected, rel=1e-12)
    assert list(with_peer) == list(expected)  # printed in this order
    assert bench_app.with_peer(out, None) == out  # no peer installed: the page's own figures only


def test_bench_cli_prints_every_command_at_the_goal_speed(capsys):
    bench_cli.print_at_goal_speed({"presets": 0.25, "estimate": 0.5}, 0.5)
    printed = capsys.readouterr().out
    assert "the peer's SFT estimate 0.500 ms CPU" in printed
    assert "presets 0.095 s, estimate 0.190 s" in printed  # 0.25 x 0.19 / 0.5 and 0.5 x 0.19 / 0.5
