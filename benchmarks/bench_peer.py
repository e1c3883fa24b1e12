"""One rlplan RL estimate beside one llm-analysis SFT training estimate, in the same run (issue #18).

    python benchmarks/bench_peer.py [--rounds 15] [--calls 200]

The peer (cli99/llm-analysis, PyPI ``llm-analysis``) lives in its OWN virtual environment, never in this
project's requirements. Create it once:

    python3 -m venv /tmp/peer-venv && /tmp/peer-venv/bin/pip install llm-analysis

(``RLPLAN_PEER_PYTHON`` points at another interpreter.) A small worker runs in that interpreter and
answers "run N estimates" with the CPU time they took; this process alternates a round of the peer with a
round of rlplan (interleaved, so both see the same machine load) and prints the median CPU time per call
and the ratio. CPU time (``time.process_time``) is used so that other processes on a shared machine
inflate the figures less than wall time would; they are still noisy. Prints figures; not a test.

The peer's case: Llama-2-7B (``NousResearch_Llama-2-7b-hf``), H100 SXM 80 GB, bf16, 8 GPUs, ZeRO-3,
micro-batch 4 x 2048 tokens, full recomputation, flash attention: one SFT step (memory and time).
rlplan's case: each scenario preset, ``estimate(scenario)`` with time: every phase of one RL step. Each call gets
its own Scenario object (a copy made before the clock starts): rlplan remembers the last scenario's resolved plan
by identity (``calculator.memo``), so calling it again with the very same object would time a partly remembered
estimate, not a computed one. That figure is printed too ("same object"), for information; the goal is read on
the first.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from calculator import Scenario, estimate, load_scenario  # noqa: E402

PEER_PYTHON = os.environ.get("RLPLAN_PEER_PYTHON", "/tmp/peer-venv/bin/python")

# Runs inside the peer's venv: reads a call count per line, answers the CPU seconds those calls took.
PEER_WORKER = r"""
import logging, sys, time
from llm_analysis.analysis import LLMAnalysis, ActivationRecomputation, DSZeRO, logger
from llm_analysis.config import (ParallelismConfig, get_dtype_config_by_name, get_gpu_config_by_name,
                                 get_model_config_by_name)
logger.setLevel(logging.ERROR)

def one():
    a = LLMAnalysis(get_model_config_by_name("NousResearch_Llama-2-7b-hf"),
                    get_gpu_config_by_name("h100-sxm-80gb"), get_dtype_config_by_name("w16a16e16"),
                    ParallelismConfig(tp_size=1, pp_size=1, dp_size=8, sp_size=1), flops_efficiency=0.5)
    return a.training(batch_size_per_gpu=4, gradient_accumulation_steps=1, seq_len=2048,
                      activation_recomputation=ActivationRecomputation.FULL, ds_zero=DSZeRO.STAGE_3,
                      flash_attn=True, mlp_gated_linear_units=True)

summary = one()
print("ready", summary["latency_per_iter"] > 0, flush=True)
for line in sys.stdin:
    n = int(line)
    t0 = time.process_time()
    for _ in range(n):
        one()
    print(time.process_time() - t0, flush=True)
"""


class Peer:
    """The llm-analysis worker process in its own interpreter."""

    def __init__(self, python: str) -> None:
        self.proc = subprocess.Popen(
            [python, "-c", PEER_WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        ready = self.proc.stdout.readline().split()
        if ready != ["ready", "True"]:
            raise SystemExit(f"the llm-analysis worker did not start ({ready}); see this file's docstring")

    def cpu_s(self, calls: int) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{calls}\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


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
    if not Path(PEER_PYTHON).exists():
        raise SystemExit(f"no peer interpreter at {PEER_PYTHON}; see this file's docstring to create it")
    peer = Peer(PEER_PYTHON)
    cases = {sid: load_scenario(sid) for sid in args.scenarios}
    for s in cases.values():
        estimate(s)  # warm caches (presets, architectures)
    peer_ms: list[float] = []
    ours_ms: dict[str, list[float]] = {sid: [] for sid in cases}
    same_ms: dict[str, list[float]] = {sid: [] for sid in cases}
    for _ in range(args.rounds):
        peer_ms.append(peer.cpu_s(args.calls) / args.calls * 1000)
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
