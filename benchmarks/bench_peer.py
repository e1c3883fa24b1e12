"""One rlplan RL estimate beside one llm-analysis SFT training estimate, in the same run (issue #18).

    python benchmarks/bench_peer.py [--rounds 15] [--calls 200]

The peer (cli99/llm-analysis) lives in its OWN virtual environment, never in this project's requirements
(``benchmarks/peer.py`` says how to create it, and what its case is). A small worker runs in that interpreter and
answers "run N estimates" with the CPU time they took; this process alternates a round of the peer with a
round of rlplan (interleaved, so both see the same machine load) and prints the median CPU time per call
and the ratio. CPU time (``time.process_time``) is used so that other processes on a shared machine
inflate the figures less than wall time would; they are still noisy. Prints figures; not a test.

rlplan's case: each scenario preset, ``estimate(scenario)`` with time: every phase of one RL step. Each call gets
its own Scenario object (a copy made before the clock starts): rlplan remembers the last scenario's resolved plan
by identity (``calculator.memo``), so calling it again with the very same object would time a partly remembered
estimate, not a computed one. That figure is printed too ("same object"), for information; the goal is read on
the first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.peer import Peer  # noqa: E402
from calculator import Scenario, estimate, load_scenario  # noqa: E402


def rlplan_cpu_s(s: Scenario, calls: int, *, fresh: bool) -> float:
    """CPU seconds of ``calls`` estimates of ``s``: each of its own copy (``fresh``) or all of ``s`` itself."""
    todo = [s.model_copy() for _ in range(calls)] if fresh else [s] * calls
    t0 = time.process_time()
    for one in todo:
        estimate(one)
    return time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--scenarios", nargs="*", default=["qwen2.5-7b-grpo-8xh100", "qwen2.5-7b-ppo-8xh100"])
    args = ap.parse_args()
    peer = Peer()
    cases = {sid: load_scenario(sid) for sid in args.scenarios}
    for s in cases.values():
        estimate(s)  # warm caches (presets, architectures)
    peer_ms: list[float] = []
    ours_ms: dict[str, list[float]] = {sid: [] for sid in cases}
    same_ms: dict[str, list[float]] = {sid: [] for sid in cases}
    for _ in range(args.rounds):
        peer_ms.append(peer.estimate_ms(args.calls))
        for sid, s in cases.items():
            ours_ms[sid].append(rlplan_cpu_s(s, args.calls, fresh=True) / args.calls * 1000)
            same_ms[sid].append(rlplan_cpu_s(s, args.calls, fresh=False) / args.calls * 1000)
    peer.close()
    p = statistics.median(peer_ms)
    print(f"{args.rounds} interleaved rounds x {args.calls} calls, median CPU ms per call (noisy on a shared box)")
    print(f"  llm-analysis, one SFT training estimate (Llama-2-7B, 8 x H100, ZeRO-3): {p:.3f} ms")
    for sid, ms in ours_ms.items():
        m, same = statistics.median(ms), statistics.median(same_ms[sid])
        verdict = "goal met" if m <= p else "goal: <= 1.0"
        print(
            f"  rlplan estimate() of {sid} (every RL phase + time): {m:.3f} ms  ratio {m / p:.2f}x  ({verdict}); "
            f"same object again: {same:.3f} ms"
        )


if __name__ == "__main__":
    main()
