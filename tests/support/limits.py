"""Deterministic work bounds for hostile inputs: run code in a child Python under a CPU-time limit.

A wall-clock assertion (``time.perf_counter() - start < 0.5``) fails whenever the machine is busy. A CPU-time
limit does not: ``RLIMIT_CPU`` counts only the CPU the child itself used, and the kernel stops it with SIGXCPU
once it has used more, however many other processes share the cores. The limit is set after ``setup`` (the
imports) has run, so it bounds only the code under test. Each limit used in the tests is several times what the
code needs on this machine (the figures are in ``benchmarks/bench_bad_input.py``) and far below what an
unbounded parse or expansion of the same input would need (minutes, or memory beyond ``RLIMIT_AS``).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

from tests.support.paths import ROOT

HANG_GUARD_S = 600  # only against a child that blocks without using CPU; never reached by a bounded child


def run_cpu_bounded(
    code: str, *, setup: str = "", cpu_s: float, address_space_bytes: int = 2 * 2**30
) -> subprocess.CompletedProcess:
    """Run ``setup`` then ``code`` in a child Python; ``code`` gets ``cpu_s`` CPU-seconds and the whole child
    ``address_space_bytes`` of memory. Raise AssertionError with the child's output unless it exits with 0."""
    prelude = textwrap.dedent(
        f"""\
        import resource, sys
        sys.path.insert(0, {str(ROOT)!r})
        resource.setrlimit(resource.RLIMIT_AS, ({address_space_bytes}, {address_space_bytes}))
        """
    )
    arm = textwrap.dedent(
        f"""\
        import math as _math
        _used = resource.getrusage(resource.RUSAGE_SELF)
        _limit = _math.ceil(_used.ru_utime + _used.ru_stime + {cpu_s!r})
        resource.setrlimit(resource.RLIMIT_CPU, (_limit, _limit + 1))
        """
    )
    script = prelude + textwrap.dedent(setup) + "\n" + arm + textwrap.dedent(code)
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    if done.returncode == -signal.SIGXCPU or done.returncode == -signal.SIGKILL:
        raise AssertionError(
            f"used more than {cpu_s} CPU-seconds (killed by the kernel's RLIMIT_CPU)\n{done.stderr[-2000:]}"
        )
    if done.returncode != 0:
        raise AssertionError(f"child exited with {done.returncode}:\n{done.stdout[-1000:]}\n{done.stderr[-3000:]}")
    return done
