"""Team load on the dashboard without browsers (issue #18): USERS websocket sessions (Streamlit's own
protocol, ``tests/support/wsload.py``), each changing the GPU count every PERIOD seconds; prints the rerun
latency p50 / p95 / max, the errors and the server's CPU.

    python benchmarks/bench_load.py [--users 20] [--changes 15] [--period 2] [--replicas 1]

``--replicas N`` (N > 1) starts N Streamlit processes and the sticky reverse proxy of ``deploy/`` in front of
them (``docs/deployment.md``), and drives the users through the proxy. Goal: 20 users, a change every 2 s,
p95 <= 1 s, 0 errors. The server shares the machine's cores with this client (light) and with whatever else
runs; the figures are noisy. Prints figures; not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.replicas import replica_servers  # noqa: E402
from tests.support.wsload import run_load  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--changes", type=int, default=15)
    ap.add_argument("--period", type=float, default=2.0)
    ap.add_argument("--replicas", type=int, default=1)
    args = ap.parse_args()
    with contextlib.ExitStack() as stack:
        url, pids = stack.enter_context(replica_servers(args.replicas))
        res = asyncio.run(run_load([url], args.users, args.changes, args.period, pids))
    where = "one server" if args.replicas == 1 else f"{args.replicas} replicas behind the sticky proxy"
    print(f"{where} on {os.cpu_count()} cores: {res.summary()}")
    print("goal: p95 <= 1 s with 0 errors")
    for e in res.errors[:10]:
        print(f"  error: {e}")


if __name__ == "__main__":
    main()
