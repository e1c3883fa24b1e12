"""The peer, llm-analysis (cli99/llm-analysis, PyPI ``llm-analysis``), as a yardstick for issue #18's benchmarks.

The machines of this project's kind differ in speed from one session to the next: the peer's one SFT estimate took
0.165-0.232 ms CPU on 2026-11-24/25 and 0.30-0.62 ms (most runs 0.41-0.56) on 2026-11-28, and every absolute figure
moved with it. So each goal's benchmark prints the peer's figure measured in the same run beside its own
(``bench_peer.py``: one estimate; ``bench_planner.py`` and ``bench_tradeoff.py``: the table and the sweeps in peer
estimates; ``bench_cli.py``: the peer's own command-line imports; ``bench_cli.py`` and ``bench_app.py`` also print
their figures at the goal's speed, scaled by the peer's SFT estimate timed in the same run: ``at_goal_speed``).

The peer lives in its OWN virtual environment, never in this project's requirements. Create it once:

    python3 -m venv /tmp/peer-venv && /tmp/peer-venv/bin/pip install llm-analysis

(``RLPLAN_PEER_PYTHON`` points at another interpreter.) A small worker runs in that interpreter and answers
"run N estimates" with the CPU time (``time.process_time``) they took.

The peer's case: Llama-2-7B (``NousResearch_Llama-2-7b-hf``), H100 SXM 80 GB, bf16, 8 GPUs, ZeRO-3, micro-batch
4 x 2048 tokens, full recomputation, flash attention: one SFT step (memory and time).
"""

from __future__ import annotations

import os
import statistics
import subprocess
from pathlib import Path

PEER_PYTHON = os.environ.get("RLPLAN_PEER_PYTHON", "/tmp/peer-venv/bin/python")
HOW_TO_INSTALL = "python3 -m venv /tmp/peer-venv && /tmp/peer-venv/bin/pip install llm-analysis"

# The peer's one SFT estimate took 0.19 ms CPU when issue #18 set its absolute goals (its text: "llm-analysis
# computes one SFT training estimate in 0.19 ms"): an absolute goal of G seconds is G / 0.19 ms peer estimates.
PEER_MS_WHEN_GOALS_WERE_SET = 0.19
CALLS = 200  # peer estimates per timing: ~0.1 s of the peer's CPU

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

# What the peer's own command line imports before it estimates: ``python -m llm_analysis.analysis train ...`` runs
# that module under python-fire (its ``__main__`` block), and it imports fire and its configuration readers.
PEER_IMPORT = "import llm_analysis.analysis"


def available() -> bool:
    return Path(PEER_PYTHON).exists()


class Peer:
    """The llm-analysis worker process in its own interpreter."""

    def __init__(self, python: str = PEER_PYTHON) -> None:
        if not Path(python).exists():
            raise SystemExit(f"no peer interpreter at {python}; create it with: {HOW_TO_INSTALL}")
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
            self.proc.kill()
            self.proc.wait(timeout=30)
            raise SystemExit(f"the llm-analysis worker did not start ({ready}); create it with: {HOW_TO_INSTALL}")

    def cpu_s(self, calls: int) -> float:
        """CPU seconds of ``calls`` SFT estimates."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{calls}\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def estimate_ms(self, calls: int = CALLS) -> float:
        """CPU ms of one SFT estimate, timed over ``calls`` of them."""
        return self.cpu_s(calls) / calls * 1e3

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def start() -> Peer | None:
    """The peer's worker, or None (saying why on stdout) when its environment is missing or broken: a benchmark that
    prints the peer beside its own figures still prints its own without it (``tests/planning/test_planner.py`` runs
    ``bench_planner.py`` on machines without the peer)."""
    if not available():
        print(f"the peer: not installed ({HOW_TO_INSTALL}), no machine yardstick printed")
        return None
    try:
        return Peer()
    except (SystemExit, OSError) as why:
        print(f"the peer: its worker did not start ({why}), no machine yardstick printed")
        return None


def in_peer_estimates(cpu_s: float, peer_ms: float, goal_s: float) -> str:
    """``cpu_s`` as a count of the peer's estimates of ``peer_ms`` each, beside the goal ``goal_s`` counted the same
    way at the peer's speed when the goals were set."""
    goal = goal_s * 1e3 / PEER_MS_WHEN_GOALS_WERE_SET
    return (
        f"{cpu_s * 1e3 / peer_ms:,.0f} peer estimates (goal {goal_s} s = {goal:,.0f} at the "
        f"{PEER_MS_WHEN_GOALS_WERE_SET} ms one took when the goal was set)"
    )


def median_ms(peer: Peer, rounds: int = 3) -> float:
    """Median CPU ms of one SFT estimate over ``rounds`` timings of ``CALLS`` estimates each."""
    return statistics.median(peer.estimate_ms() for _ in range(rounds))


def at_goal_speed(value: float, peer_ms: float) -> float:
    """``value``, a time measured beside a peer estimate of ``peer_ms``, scaled to a machine where the peer took the
    ``PEER_MS_WHEN_GOALS_WERE_SET`` it took when issue #18's goals were set (the README's "at the goal's speed")."""
    return value * PEER_MS_WHEN_GOALS_WERE_SET / peer_ms


def import_command(code: str = PEER_IMPORT) -> list[str]:
    """``code`` run in the peer's interpreter with its imports timed, as ``bench_cli.py`` times rlplan's
    (``-X importtime``): the peer's command-line imports by default."""
    return [PEER_PYTHON, "-X", "importtime", "-c", code]
