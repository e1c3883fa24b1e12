"""Predicted / measured step and decode times over every public case the timing model is checked against.

Run: ``python -m benchmarks.bench_time_fidelity`` (prints one table; ``--phases`` adds each phase's terms).
The cases and their sources live in ``tests/reference/test_throughput_reference.py``; BEFORE holds the
model's figures before issue 15 (commit 51279bf) so the table shows before vs after.
"""

from __future__ import annotations

import sys

from tests.reference.test_throughput_reference import PUBLIC_CASES

# Model figures at commit 51279bf (before the issue-15 mechanisms), same case ids.
BEFORE = {
    "nemo-llama3.1-8b-16xh100": 74.1,
    "nemo-qwen3-32b-32xh100": 317.0,
    "nemo-qwen3-30b-a3b-32xh100": 75.0,
    "vllm-decode-llama3.1-8b-h100-b1": 6.86e-3,
    "vllm-decode-llama3.1-8b-a100-b1": 14.9e-3,
}


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


if __name__ == "__main__":
    main(sys.argv[1:])
