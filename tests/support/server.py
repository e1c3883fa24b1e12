"""``streamlit run app.py`` as a subprocess on a free loopback port, for the tests that need a real server
(load, deployment, browser checks of bad input). Health-checked before use, always stopped, its log kept."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field

from tests.support.paths import ROOT

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    url: str  # http://127.0.0.1:PORT[/base], no trailing slash
    proc: subprocess.Popen
    log: list[str] = field(default_factory=list)

    def log_text(self) -> str:
        return "".join(self.log)


def _health(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
            return r.read() == b"ok"
    except OSError:
        return False


@contextlib.contextmanager
def streamlit_server(
    *,
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
    base_path: str = "",
    timeout_s: float = 40,
    script: str = "app.py",
) -> Iterator[Server]:
    """Start the app headless on 127.0.0.1 (usage stats off), wait until ``/_stcore/health`` answers ``ok``."""
    port = free_port()
    cmd = [
        sys.executable, "-m", "streamlit", "run", script,
        "--server.headless", "true", "--server.address", "127.0.0.1", "--server.port", str(port),
        "--browser.gatherUsageStats", "false", *args,
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    )
    server = Server(f"http://127.0.0.1:{port}" + (f"/{base_path.strip('/')}" if base_path.strip("/") else ""), proc)
    reader = threading.Thread(target=lambda: server.log.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + timeout_s
        while not _health(server.url):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not become healthy at {server.url}:\n{server.log_text()[-3000:]}")
            time.sleep(0.2)  # polling a process that is starting: nothing to wait on but time
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        reader.join(timeout=5)
