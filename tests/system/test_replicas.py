"""Several replicas behind the sticky nginx (``python -m deploy.replicas``, docs/deployment.md "Several replicas"),
and the team load of issue #18 on the websocket protocol (``tests/support/wsload.py``).

1. ``deploy.replicas`` starts N ``ui.serve`` processes and nginx; the health check answers through the proxy.
2. Stickiness: the first response sets the ``rlplan_replica`` cookie; everything a browser asks with it reaches
   the replica that holds its session (a download generated in the session is served with that cookie every
   time), and another cookie value reaches another replica, where that download does not exist (so the
   stickiness is needed, and it is what routes).
3. SIGTERM stops nginx and every replica.
4. Load: 20 users changing the GPU count every 2 s, through one server and through the proxy: every rerun
   finishes with the calculator's number (0 errors). The latency figures are printed and written to
   ``load-ws.json`` in the artifacts directory; they are not asserted (a shared 2-core machine makes any
   threshold a coin toss), the README quotes them.

Run alone: ``python3 -m pytest -m system -n 0 -s tests/system/test_replicas.py``. Needs nginx (apt-get install
-y nginx-light; the Docker image installs it).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tests.support.replicas import replica_servers
from tests.support.server import free_port
from tests.support.wsload import run_load
from tests.system.stclient import Session
from ui import keys

pytestmark = [pytest.mark.deploy, pytest.mark.load]

USERS = int(os.environ.get("RLPLAN_LOAD_USERS", "20"))
CHANGES = int(os.environ.get("RLPLAN_LOAD_CHANGES", "8"))
PERIOD_S = 2.0


def _require_nginx() -> None:
    if not (shutil.which("nginx") or Path("/usr/sbin/nginx").exists()):
        pytest.fail("nginx is missing: apt-get install -y nginx-light (the replica setup needs it)", pytrace=False)


def _get(url: str, cookie: str | None = None) -> tuple[int, list[str]]:
    """(status, the Set-Cookie headers)."""
    req = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            r.read()
            return r.status, r.headers.get_all("Set-Cookie") or []
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get_all("Set-Cookie") or []


def _sticky(set_cookies: list[str]) -> str:
    return next((c for c in set_cookies if c.startswith("rlplan_replica=")), "")


def _wait_healthy(url: str, proc: subprocess.Popen, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if _get(f"{url}/_stcore/health")[0] == 200:
                return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"python -m deploy.replicas did not become healthy (exit {proc.poll()})")
        time.sleep(0.3)  # processes that are starting: nothing to wait on but time


def _start_replicas() -> tuple[str, subprocess.Popen]:
    """``python -m deploy.replicas --replicas 2`` on free loopback ports: (proxy url, process), not yet healthy."""
    _require_nginx()
    port, first = free_port(), free_port()
    cmd = [sys.executable, "-m", "deploy.replicas", "--replicas", "2", "--port", str(port)]
    cmd += ["--address", "127.0.0.1", "--first-replica-port", str(first)]
    return f"http://127.0.0.1:{port}", subprocess.Popen(cmd, cwd=ROOT, start_new_session=True)


@pytest.fixture(scope="module")
def replicas():
    """``python -m deploy.replicas --replicas 2`` on free loopback ports; yields (url, process)."""
    url, proc = _start_replicas()
    try:
        _wait_healthy(url, proc)
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)


async def _download_url(url: str, cookie: str) -> str:
    """Open the Estimate page with ``cookie`` and generate its JSON report download; the download's path."""
    async with Session(url, cookie=cookie) as s:
        page = await s.run()
        assert not page.exceptions(), page.exceptions()
        path = await s.deferred_file(page.downloads[keys.DL_JSON])
        assert path.startswith("/media/"), path
        return path


def test_health_and_sticky_cookie(replicas):
    url, _ = replicas
    status, cookies = _get(f"{url}/")
    assert status == 200
    cookie = _sticky(cookies)
    assert cookie.startswith("rlplan_replica=") and "HttpOnly" in cookie, cookies
    # a request with the cookie gets the same cookie back: it stays on its replica
    mine = cookie.split(";", 1)[0]
    assert _sticky(_get(f"{url}/_stcore/health", mine)[1]).split(";", 1)[0] == mine


def test_a_session_stays_on_its_replica(replicas):
    url, _ = replicas
    mine = "rlplan_replica=test-session-a"
    path = asyncio.run(_download_url(url, mine))
    assert all(_get(url + path, mine)[0] == 200 for _ in range(8)), "the cookie did not keep the replica"
    # Another cookie value that hashes to the other replica: there the session's file does not exist.
    others = [f"rlplan_replica=other-{i}" for i in range(64)]
    assert any(_get(url + path, c)[0] == 404 for c in others), "every cookie reached the same replica"


def test_sigterm_stops_every_process():
    url, proc = _start_replicas()
    _wait_healthy(url, proc)
    children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert len(children) == 3  # two replicas and nginx
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    alive = [c for c in children if Path(f"/proc/{c}").exists() and "zombie" not in _status(c)]
    assert alive == []


def _status(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return "zombie"


@pytest.mark.parametrize("num_replicas", [1, 2])
def test_team_load_has_no_errors(num_replicas):
    """USERS websocket users, a GPU-count change every 2 s each: every rerun shows the calculator's number."""
    if num_replicas > 1:
        _require_nginx()
    with replica_servers(num_replicas) as (url, pids):
        res = asyncio.run(run_load([url], USERS, CHANGES, PERIOD_S, pids))
    where = "one server" if num_replicas == 1 else f"{num_replicas} replicas + sticky nginx"
    print(f"\n{where}: {res.summary()}")
    out = Path(os.environ.get("RLPLAN_TEST_ARTIFACTS", ROOT / "test-artifacts"))
    out.mkdir(parents=True, exist_ok=True)
    record = {
        "replicas": num_replicas,
        "users": USERS,
        "changes": CHANGES,
        "period_s": PERIOD_S,
        "p50_s": res.quantile(0.5),
        "p95_s": res.quantile(0.95),
        "max_s": max(res.latencies_s, default=0.0),
        "errors": res.errors,
        "server_cpu_s_per_rerun": res.server_cpu_s / max(1, len(res.latencies_s)),
        "load_average": os.getloadavg(),
    }
    (out / f"load-ws-{num_replicas}.json").write_text(json.dumps(record, indent=2))
    assert res.errors == []
    assert len(res.latencies_s) == USERS * CHANGES
