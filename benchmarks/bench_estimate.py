"""Benchmark: median wall time of one estimate() (issue #3 asks for < 5 ms). Prints figures; not a test.

Each call estimates its own copy of the scenario (made outside the clock): the last scenario's resolved plan is
remembered by identity (``calculator.memo``), and a benchmark must time the computation, not the memory.

python benchmarks/bench_estimate.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from calculator import estimate, load_scenario  # noqa: E402
from calculator.inputs.presets import scenario_presets  # noqa: E402


def median_ms(fn, repeat: int = 300, make=None) -> float:
    """Median ms of ``fn(x)``, ``x = make()`` built before each clock start (None: ``fn()``)."""
    fn(*([make()] if make else []))  # warm caches (presets, architectures)
    samples = []
    for _ in range(repeat):
        args = [make()] if make else []
        t0 = time.perf_counter()
        fn(*args)
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def main() -> None:
    print(f"{'scenario':<36} {'estimate() ms':>14} {'memory only ms':>15}")
    for sid in sorted(scenario_presets()):
        s = load_scenario(sid)
        full = median_ms(estimate, make=s.model_copy)
        mem = median_ms(lambda c: estimate(c, with_time=False), make=s.model_copy)
        print(f"{sid:<36} {full:>14.2f} {mem:>15.2f}")
    t = median_ms(lambda: load_scenario("qwen2.5-7b-grpo-8xh100", overrides={"rollout.n": 8}), repeat=100)
    print(f"load_scenario with an override: {t:.2f} ms")


if __name__ == "__main__":
    main()
