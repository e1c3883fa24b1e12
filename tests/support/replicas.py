"""The dashboard as one server or as N replicas behind the sticky reverse proxy of ``deploy/`` (nginx, the
configuration ``deploy/replicas.py`` runs in the image), on free loopback ports, for the load benchmark and the
proxy test (``docs/deployment.md``, "Several replicas")."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from deploy.replicas import nginx_config
from tests.support.server import free_port, streamlit_server


def _wait_ok(url: str, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.read() == b"ok":
                    return
        except OSError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.1)  # a process that is starting: nothing to wait on but time


@contextlib.contextmanager
def sticky_proxy(replica_ports: list[int]) -> Iterator[tuple[str, subprocess.Popen]]:
    """nginx on a free loopback port in front of the replicas; yields (url, process)."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        raise RuntimeError("nginx is missing: apt-get install -y nginx-light (the replica setup needs it)")
    with tempfile.TemporaryDirectory(prefix="rlplan-nginx-") as tmp:
        work = Path(tmp)
        port = free_port()
        conf = work / "nginx.conf"
        conf.write_text(nginx_config("127.0.0.1", port, replica_ports, work), encoding="utf-8")
        proc = subprocess.Popen([nginx, "-c", str(conf), "-p", str(work), "-e", "stderr"])
        try:
            _wait_ok(f"http://127.0.0.1:{port}/_stcore/health")
            yield f"http://127.0.0.1:{port}", proc
        finally:
            proc.terminate()
            proc.wait(timeout=10)


@contextlib.contextmanager
def replica_servers(n: int) -> Iterator[tuple[str, list[int]]]:
    """``n`` Streamlit servers (one: no proxy); yields (the URL users open, the server processes' pids)."""
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(streamlit_server()) for _ in range(n)]
        pids = [s.proc.pid for s in servers]
        if n == 1:
            yield servers[0].url, pids
            return
        ports = [int(s.url.rsplit(":", 1)[1]) for s in servers]
        url, _proc = stack.enter_context(sticky_proxy(ports))
        yield url, pids
