"""Benchmark: median wall time of one estimate() (issue #3 asks for < 5 ms). Prints figures; not a test.

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


def median_ms(fn, repeat: int = 300) -> float:
    fn()  # warm caches (presets, architectures)
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def main() -> None:
    print(f"{'scenario':<36} {'estimate() ms':>14} {'memory only ms':>15}")
    for sid in sorted(scenario_presets()):
        s = load_scenario(sid)
        full = median_ms(lambda s=s: estimate(s))
        mem = median_ms(lambda s=s: estimate(s, with_time=False))
        print(f"{sid:<36} {full:>14.2f} {mem:>15.2f}")
    t = median_ms(lambda: load_scenario("qwen2.5-7b-grpo-8xh100", overrides={"rollout.n": 8}), repeat=100)
    print(f"load_scenario with an override: {t:.2f} ms")


if __name__ == "__main__":
    main()
