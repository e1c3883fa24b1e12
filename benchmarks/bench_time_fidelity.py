"""Predicted / measured step and decode times over every public case the timing model is checked against.

Run: ``python -m benchmarks.bench_time_fidelity`` (prints two tables; ``--phases`` adds each phase's terms).
The step / decode cases and their sources live in ``tests/reference/test_throughput_reference.py``; BEFORE holds
the model's figures before issue 15 (commit 51279bf). The verl DAPO phase times (H20, colocated) live in
``tests/reference/test_timing_dapo_reference.py``; DAPO_BEFORE holds the figures of round 1 of issue 15 (commit
a6264bc), before the GPU-balance efficiency, the balance_batch straggler and the padded driver batch.
"""

from __future__ import annotations

import sys

from tests.reference.test_throughput_reference import PUBLIC_CASES
from tests.reference.test_timing_dapo_reference import DAPO_CASES

# Model figures at commit 51279bf (before the issue-15 mechanisms), same case ids.
BEFORE = {
    "nemo-llama3.1-8b-16xh100": 74.1,
    "nemo-qwen3-32b-32xh100": 317.0,
    "nemo-qwen3-30b-a3b-32xh100": 75.0,
    "vllm-decode-llama3.1-8b-h100-b1": 6.86e-3,
    "vllm-decode-llama3.1-8b-a100-b1": 14.9e-3,
    # MoE update MFUs in verl 0.5's FLOP counting, at 3aca35a (before the expert-data-parallel optimizer shard).
    "verl-qwen3-30b-a3b-8xh20-mfu": 0.655,
    "verl-qwen3-30b-a3b-16xh20-mfu": 0.632,
    "verl-qwen3-30b-a3b-32xh20-mfu": 0.598,
    "verl-dsv3-96xh20-mfu": 0.136,
}

# Model figures at commit a6264bc (round 1 of issue 15), same case ids and releases (0.6 / 0.5), seconds.
DAPO_BEFORE = {
    "fully_async-32xh20-rollout": 206.4,
    "fully_async-32xh20-old_log_prob": 168.9,
    "fully_async-32xh20-update_actor": 960.0,
    "fully_async-32xh20-sum": 1335.4,
    "fully_async-64xh20-rollout": 130.3,
    "fully_async-64xh20-old_log_prob": 85.3,
    "fully_async-64xh20-update_actor": 573.5,
    "fully_async-64xh20-sum": 789.1,
    "fully_async-128xh20-rollout": 93.4,
    "fully_async-128xh20-old_log_prob": 43.5,
    "fully_async-128xh20-update_actor": 357.3,
    "fully_async-128xh20-sum": 494.3,
    "one_step_off-16xh20-rollout": 255.5,
    "one_step_off-16xh20-old_log_prob": 252.5,
    "one_step_off-16xh20-update_actor": 1246.9,
    "one_step_off-16xh20-sum": 1754.9,
}


def _row(case_id: str, measured: float, before: float | None, after: float) -> str:
    b = f"{before:10.4g} {before / measured:6.2f}" if before else f"{'-':>10} {'-':>6}"
    return f"{case_id:34} {measured:10.4g} {b} {after:10.4g} {after / measured:6.2f}"


def dapo_table() -> list[float]:
    """Print the verl DAPO phase rows; return the after/measured ratios of the phase sums."""
    print(
        f"\n{'verl DAPO, H20 colocated (phase)':34} {'measured':>10} {'before':>10} {'ratio':>6} {'after':>10} {'ratio':>6}"
    )
    sums = []
    for case in DAPO_CASES:
        after = case.predict()
        print(_row(case.id, case.measured, DAPO_BEFORE.get(case.id), after))
        if case.id.endswith("-sum"):
            sums.append(after / case.measured)
    return sums


def main(argv: list[str]) -> None:
    show = "--phases" in argv
    print(f"{'case':34} {'measured':>10} {'before':>10} {'ratio':>6} {'after':>10} {'ratio':>6}")
    ratios = []
    for case in PUBLIC_CASES:
        after, phases = case.predict()
        before = BEFORE.get(case.id)
        ratios.append(after / case.measured)
        b = f"{before:10.4g} {before / case.measured:6.2f}" if before else f"{'-':>10} {'-':>6}"
        print(f"{case.id:34} {case.measured:10.4g} {b} {after:10.4g} {after / case.measured:6.2f}")
        if show and phases:
            for p, terms in phases.items():
                body = ", ".join(f"{k} {v:.3g}" for k, v in terms.items() if v)
                print(f"    {p}: {body}")
    ratios.sort()
    print(f"median predicted/measured {ratios[len(ratios) // 2]:.2f}")
    sums = sorted(dapo_table())
    inside = sum(0.67 <= r <= 1.5 for r in sums)
    print(f"DAPO phase sums: median {sums[len(sums) // 2]:.2f}, {inside} of {len(sums)} within 0.67-1.5x")


if __name__ == "__main__":
    main(sys.argv[1:])
