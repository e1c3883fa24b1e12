"""CLI start-up: import time of ``python -m calculator presets`` and ``estimate`` (issue #18: <= 0.15 s).

    python benchmarks/bench_cli.py [--runs 7] [--baseline DIR]

Runs each command in a fresh interpreter under ``python -X importtime`` and sums the cumulative time of the
top-level imports (everything the process imported, interpreter start-up modules such as ``site``
included), then the wall time and the CPU time of the whole command. Prints the median over the runs and, for the
imports, the lowest run too (the one least inflated by other processes' load); noisy on a shared machine. Prints
figures; not a test. ``site`` alone (``python -c pass``) is printed first: what the interpreter imports before any
of rlplan's code (on this development machine a sandbox ``.pth`` file imports ``certifi`` there; not in the Docker
image).

Two ways Python finds the code: **with bytecode** (``.pyc`` files exist, as after ``pip install`` or in the Docker
image, which runs ``compileall`` at build time; here a temporary ``PYTHONPYCACHEPREFIX`` filled by one warm-up run,
nothing written into the checkout) and **from source** (``PYTHONDONTWRITEBYTECODE=1`` and no ``.pyc``: every
module compiled at each start, as in this development environment). Issue #18's goal is read on the first.

The peer beside it (``benchmarks/peer.py``; when its environment exists): the imports of llm-analysis's own
command line (``python -m llm_analysis.analysis train ...`` imports that module and what it needs), timed the same
way in its own virtual environment (``pip`` wrote its bytecode; a venv has no sandbox ``.pth``). And the peer's SFT
estimate, timed in its own process after each run with bytecode, scales those imports to the goal's speed (0.19 ms /
that estimate, ``benchmarks/peer.py``): the README's "at the goal's speed" column.

``--baseline DIR``: another checkout (``git worktree add /tmp/base main``, or ``git archive main | tar -x -C DIR``)
measured interleaved with this one, process by process, so that both sides see the same load (with bytecode only).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import peer as yardstick  # noqa: E402

COMMANDS = {
    "presets": ["presets"],
    "estimate": ["estimate", "qwen2.5-7b-grpo-8xh100"],
    "plan (one GPU type)": ["plan", "qwen2.5-7b-grpo-8xh100", "--gpus", "h100-80gb"],
}
BYTECODE = "with bytecode (installed, Docker image)"


def import_seconds(stderr: str) -> tuple[float, float]:
    """(all top-level imports, the ``calculator`` package's) in seconds, from ``-X importtime`` lines
    ``import time: self | cumulative | name`` (a top-level import has no indent before its name)."""
    total = ours = 0.0
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line[len("import time:") :].split("|")
        if name.startswith(" ") and not name.startswith("  "):
            total += int(cumulative) / 1e6
            if name.strip().startswith("calculator"):
                ours += int(cumulative) / 1e6
    return total, ours


def _children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(args: list[str], env: dict[str, str], root: Path = ROOT) -> tuple[float, float, float, float]:
    """(all imports s, calculator imports s, wall s, CPU s of the whole process) of ``python -m calculator ARGS``
    run in ``root``."""
    cmd = [sys.executable, "-X", "importtime", "-m", "calculator", *args]
    cpu0, t0 = _children_cpu_s(), time.perf_counter()
    done = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=True, env=env)
    wall, cpu = time.perf_counter() - t0, _children_cpu_s() - cpu0
    total, ours = import_seconds(done.stderr)
    return total, ours, wall, cpu


def peer_import_seconds(runs: int) -> tuple[float, float]:
    """Median (all imports s, site alone s) of the peer's command-line start, in its own interpreter."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    imports = [yardstick.import_command()] * (runs + 1)
    site = [yardstick.import_command("pass")] * (runs + 1)
    done = [subprocess.run(c, capture_output=True, text=True, check=True, env=env) for c in imports + site]
    total = statistics.median(import_seconds(d.stderr)[0] for d in done[1 : runs + 1])
    return total, statistics.median(import_seconds(d.stderr)[0] for d in done[runs + 2 :])


def print_peer_imports(runs: int) -> None:
    """The peer's command-line imports beside ours, or one line saying why there are none."""
    if not yardstick.available():
        print(f"the peer: not installed ({yardstick.HOW_TO_INSTALL}), no peer figure printed")
        return
    try:
        total, site = peer_import_seconds(runs)
    except subprocess.CalledProcessError as why:  # a venv without llm-analysis
        print(f"the peer: its import failed ({why}), no peer figure printed")
        return
    print(
        f"the peer (llm-analysis's command line, {yardstick.PEER_IMPORT!r} in its own venv): "
        f"{total:.3f} s of imports (its site alone {site:.3f} s)"
    )


def site_seconds(env: dict[str, str], runs: int) -> float:
    """Median import time of an interpreter that runs nothing (``site`` and what its ``.pth`` files import)."""
    cmd = [sys.executable, "-X", "importtime", "-c", "pass"]
    done = [subprocess.run(cmd, capture_output=True, text=True, check=True, env=env) for _ in range(runs + 1)]
    return statistics.median(import_seconds(d.stderr)[0] for d in done[1:])  # the first fills the bytecode cache


def environments(pycache: str) -> dict[str, dict[str, str]]:
    """The two ways of finding the code (module docstring), as child environments (shipped presets only)."""
    base = {k: v for k, v in os.environ.items() if k != "RLPLAN_PRESETS_DIR"}
    source = {**base, "PYTHONDONTWRITEBYTECODE": "1"}
    source.pop("PYTHONPYCACHEPREFIX", None)
    cached = {k: v for k, v in base.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cached["PYTHONPYCACHEPREFIX"] = pycache
    return {BYTECODE: cached, "from source (no .pyc)": source}


def row(name: str, runs: list[tuple[float, float, float, float]]) -> str:
    total, ours, wall, cpu = (statistics.median(r[i] for r in runs) for i in range(4))
    low = min(r[0] for r in runs)
    return f"{name:<30} {total:>14.3f} {low:>8.3f} {ours:>13.3f} {wall:>8.3f} {cpu:>7.3f}"


HEADER = f"{'command':<30} {'all imports s':>14} {'(min)':>8} {'calculator s':>13} {'wall s':>8} {'CPU s':>7}"


def print_at_goal_speed(imports_s: dict[str, float], peer_ms: float) -> None:
    """The with-bytecode import medians at the goal's speed: scaled by 0.19 ms / the peer's SFT estimate (its CPU
    time: ``benchmarks/peer.py``). The imports are wall-clock (``-X importtime``), so other load inflates the scaled
    figure as it inflates the raw one."""
    scaled = ", ".join(f"{name} {yardstick.at_goal_speed(s, peer_ms):.3f} s" for name, s in imports_s.items())
    print(f"at the goal's speed (the peer's SFT estimate {peer_ms:.3f} ms CPU, median of the runs; goal 0.15 s):")
    print(f"  {scaled}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--baseline", type=Path, help="another checkout, measured interleaved (with bytecode only)")
    args = ap.parse_args()
    print(f"median of {args.runs} fresh processes (goal: import <= 0.15 s for presets and estimate, with bytecode)")
    print("(import times are wall-clock inside the process: other load inflates them; CPU s is the whole process)")
    goal_rows: dict[str, float] = {}  # all imports s, with bytecode (this checkout's side), by command
    peer, peer_ms = yardstick.start(), []  # the peer's SFT estimate, timed after each run with bytecode
    with tempfile.TemporaryDirectory(prefix="rlplan-pyc-") as pycache:
        envs = environments(pycache)
        print(f"site alone (python -c pass): {site_seconds(envs[BYTECODE], args.runs):.3f} s of imports")
        print_peer_imports(args.runs)
        if args.baseline is not None:
            envs = {BYTECODE: envs[BYTECODE]}
        for label, env in envs.items():
            print(f"-- {label}")
            print(HEADER)
            for name, argv in COMMANDS.items():
                sides = {"": ROOT} if args.baseline is None else {" (baseline)": args.baseline, " (this)": ROOT}
                runs: dict[str, list[tuple[float, float, float, float]]] = {s: [] for s in sides}
                for root in sides.values():
                    measure(argv, env, root)  # warm-up: fills the bytecode cache (the other mode has none to fill)
                for _ in range(args.runs):
                    for side, root in sides.items():
                        runs[side].append(measure(argv, env, root))
                    if label == BYTECODE and peer is not None:  # the yardstick under the same load as the runs
                        peer_ms.append(peer.estimate_ms())
                for side in sides:
                    print(row(name + side, runs[side]))
                if label == BYTECODE:
                    this = list(sides)[-1]  # this checkout: "" or " (this)"
                    goal_rows[name + this] = statistics.median(r[0] for r in runs[this])
    if peer is not None:
        peer.close()
        print_at_goal_speed(goal_rows, statistics.median(peer_ms))


if __name__ == "__main__":
    main()
