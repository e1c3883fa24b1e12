"""Run N dashboard replicas behind nginx with sticky sessions, in one container or on one host.

    python -m deploy.replicas --replicas 4 [--port 8501] [--address 0.0.0.0]

Starts ``python -m ui.serve`` N times on loopback ports (8601, 8602, ...), writes ``deploy/nginx.conf.template``
filled in to a private temporary directory, and runs nginx in front on ``--address:--port`` once every replica
answers its health check (``wait_until_healthy``). Each replica is a
Python process, i.e. about one core (Streamlit runs every session's script in a thread of its process): use
about as many replicas as cores. If any child exits, the others are stopped and this exits non-zero, so that
a container supervisor restarts the whole set. SIGTERM / SIGINT stop everything. docs/deployment.md has the
Docker command; ``tests/system/test_replicas.py`` runs this setup.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent / "nginx.conf.template"
FIRST_REPLICA_PORT = 8601
REPLICA_START_S = 120.0  # a replica imports streamlit, plotly and the calculator: seconds on a busy 2-core box


def nginx_config(address: str, port: int, replica_ports: list[int], work_dir: Path) -> str:
    """The template with its placeholders filled."""
    upstream = "\n        ".join(f"server 127.0.0.1:{p} max_fails=3 fail_timeout=30s;" for p in replica_ports)
    return (
        TEMPLATE.read_text(encoding="utf-8")
        .replace("@LISTEN_ADDRESS@", address)
        .replace("@LISTEN_PORT@", str(port))
        .replace("@UPSTREAM_SERVERS@", upstream)
        .replace("@WORK_DIR@", str(work_dir))
    )


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:  # noqa: S310
            return r.status == 200
    except OSError:
        return False


def wait_until_healthy(ports: list[int], procs: list[subprocess.Popen], timeout_s: float = REPLICA_START_S) -> None:
    """Return when every replica answers its health check (nginx starts only then: a replica it reached while still
    starting would be marked failed for ``fail_timeout`` and its share of the sessions sent to the others), or
    when ``timeout_s`` has passed or a replica has exited (``supervise`` then reports it)."""
    deadline = time.monotonic() + timeout_s
    pending = list(ports)
    while pending and time.monotonic() < deadline and all(p.poll() is None for p in procs):
        pending = [port for port in pending if not _healthy(port)]
        if pending:
            time.sleep(0.3)  # processes that are starting: nothing to wait on but time


def start(replicas: int, address: str, port: int, work_dir: Path, first_port: int) -> list[subprocess.Popen]:
    """The replica processes, then nginx (last in the list)."""
    ports = [first_port + i for i in range(replicas)]
    procs = []
    for p in ports:
        args = ["--server.address", "127.0.0.1", "--server.port", str(p), "--server.headless", "true"]
        procs.append(subprocess.Popen([sys.executable, "-m", "ui.serve", *args]))
    wait_until_healthy(ports, procs)
    conf = work_dir / "nginx.conf"
    conf.write_text(nginx_config(address, port, ports, work_dir), encoding="utf-8")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    procs.append(subprocess.Popen([nginx, "-c", str(conf), "-p", str(work_dir), "-e", "stderr"]))
    return procs


def supervise(procs: list[subprocess.Popen]) -> int:
    """Wait until one child exits or a stop signal arrives; stop the rest; the exit code."""
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(True))
    code = 0
    while not stopping:
        done = [p for p in procs if p.poll() is not None]
        if done:
            code = done[0].returncode or 1
            break
        time.sleep(0.5)  # polling children: nothing else to wait on without a reaper thread per child
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
    return code


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m deploy.replicas")
    ap.add_argument("--replicas", type=int, default=int(os.environ.get("RLPLAN_REPLICAS", "2")))
    ap.add_argument("--port", type=int, default=int(os.environ.get("STREAMLIT_SERVER_PORT") or 8501))
    ap.add_argument("--address", default="0.0.0.0")  # noqa: S104 - the container's published port
    ap.add_argument("--first-replica-port", type=int, default=FIRST_REPLICA_PORT)
    args = ap.parse_args(argv)
    if not 1 <= args.replicas <= 64:
        ap.error(f"--replicas must be between 1 and 64, got {args.replicas}")
    with tempfile.TemporaryDirectory(prefix="rlplan-nginx-") as tmp:
        return supervise(start(args.replicas, args.address, args.port, Path(tmp), args.first_replica_port))


if __name__ == "__main__":
    sys.exit(main())
