"""Hostile clients against a running server (issue 12), through Streamlit's own websocket protocol.

A browser only offers the options a widget shows; a client that speaks the protocol (``tests/system/stclient``)
sends anything: a path in the preset box, NaN in an integer input, a GPU list of thousands, a raw
``clear_cache`` message, a request for a PNG whose title carries CSS ``url()``. The server runs under an audit
hook that logs every file it opens under the test's canary directory, and with every proxy variable pointing at
a local listener that must stay silent: any outbound request (a fetched URL, a CDN script, an IP lookup) would
reach it. Each case asserts that the page still runs (no exception, in this run and the next) and that nothing
was opened, read or requested.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

import pytest
import yaml

from tests.system.stclient import Page, Session

pytestmark = [pytest.mark.system, pytest.mark.deploy]

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60.0

# The server, started as the image starts it (python -m ui.serve) by a launcher that first installs an audit
# hook: every file opened under RLPLAN_CANARY_DIR is appended to RLPLAN_OPEN_LOG (with os.write, which raises
# no audit event of its own).
LAUNCHER = """
import os, sys
sys.path.insert(0, os.getcwd())
log = os.open(os.environ["RLPLAN_OPEN_LOG"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
canary = os.environ["RLPLAN_CANARY_DIR"]
def hook(event, args):
    if event == "open" and isinstance(args[0], str) and canary in os.path.abspath(args[0]):
        os.write(log, (args[0] + "\\n").encode())
sys.addaudithook(hook)
from ui.serve import main  # the image's entry point: hardening applied before the first connection
main()
"""


@dataclass
class Listener:
    """A local TCP listener that records every connection (the first bytes of each request)."""

    port: int = 0
    hits: list[bytes] = field(default_factory=list)
    _sock: socket.socket | None = None

    def start(self) -> Listener:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()
        return self

    def _serve(self) -> None:
        assert self._sock is not None
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    self.hits.append(conn.recv(200))
                except OSError:
                    self.hits.append(b"(connection)")

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()


@dataclass
class Server:
    url: str
    proc: subprocess.Popen
    open_log: Path
    listener: Listener
    log: list[str] = field(default_factory=list)

    def opened(self) -> list[str]:
        return self.open_log.read_text().splitlines() if self.open_log.exists() else []

    def log_text(self) -> str:
        return "".join(self.log)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
            return r.read() == b"ok"
    except OSError:
        return False


@contextlib.contextmanager
def hostile_server(canary: Path, *, address: str = "127.0.0.1", env: dict[str, str] | None = None) -> Iterator[Server]:
    """The app on a free port, under the audit hook, every proxy variable pointing at a silent listener."""
    listener = Listener().start()
    proxy = f"http://127.0.0.1:{listener.port}"
    port = _free_port()
    proxies = {k: proxy for k in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")}
    child_env = {
        **os.environ,
        **proxies,
        "NO_PROXY": "",
        "no_proxy": "",
        "RLPLAN_OPEN_LOG": str(canary / "opened.log"),
        "RLPLAN_CANARY_DIR": str(canary / "c"),
        "RLPLAN_RENDER_PROXY": f"127.0.0.1:{listener.port}",
        **(env or {}),
    }
    args = ["--server.headless", "true", "--server.port", str(port), "--browser.gatherUsageStats", "false"]
    if address:
        args += ["--server.address", address]
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, *args],
        cwd=ROOT,
        env=child_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    )
    server = Server(f"http://127.0.0.1:{port}", proc, canary / "opened.log", listener)
    reader = threading.Thread(target=lambda: server.log.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _healthy(server.url):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start:\n{server.log_text()[-3000:]}")
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
        listener.close()


@pytest.fixture(scope="module")
def canary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Files a forged value may name: a YAML file with secrets, a FIFO (opening it for reading would block)."""
    root = tmp_path_factory.mktemp("forged")
    c = root / "c"
    c.mkdir()
    (c / "secret.yaml").write_text("secret_line_one: 1\nsecret_line_two: 2\n")
    os.mkfifo(c / "pipe.yaml")
    return root


@pytest.fixture(scope="module")
def server(canary: Path) -> Iterator[Server]:
    with hostile_server(canary) as s:
        yield s


def run(coro):  # noqa: ANN001, ANN201 - a test helper around asyncio.run
    return asyncio.run(coro)


def assert_clean(page: Page) -> None:
    assert page.status == "FINISHED_SUCCESSFULLY", page.status
    assert not page.exceptions(), page.exceptions()


def fifo_has_reader(path: Path) -> bool:
    """Whether some process holds the FIFO open for reading (then a non-blocking open for writing succeeds)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return False
    os.close(fd)
    return True


LAZY_SECTIONS = ("sec_batch", "sec_lengths", "sec_rollout", "sec_optim", "sec_advanced", "sec_more")


async def forge(url: str, key: str, page_name: str = "", **value: object) -> tuple[Page, Page]:
    """Load the page with every sidebar section open (closed ones build no widgets), send one forged widget
    value, then rerun once more: (forged run, next run)."""
    async with Session(url, page_name=page_name) as s:
        page = await s.run()
        assert_clean(page)
        page = await s.run([s.state(k, bool_value=True) for k in LAZY_SECTIONS if k in page.widget_ids])
        if key == "model_size_family":  # shown only for a model chosen by size
            page = await s.run([s.state("model_source", string_value="Size")])
        assert_clean(page)
        forged = await s.run([s.state(key, **value)])
        return forged, await s.run()


# ----------------------------------------------------------------------------- item 1: no path from a widget


@pytest.mark.parametrize("name", ["secret.yaml", "pipe.yaml", "missing.yaml"])
def test_forged_preset_is_never_opened(server: Server, canary: Path, name: str) -> None:
    path = str(canary / "c" / name)
    forged, after = run(forge(server.url, "preset", string_value=path))
    for page in (forged, after):
        assert_clean(page)
        assert not any("secret_line" in t for t in page.texts()), "a file's keys reached the page"
    assert server.opened() == [], server.opened()
    assert not fifo_has_reader(canary / "c" / "pipe.yaml")
    assert _healthy(server.url)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("fld:hardware.gpu", "/etc/passwd"),
        ("fld:model.path", "../../../etc/hostname"),
        ("model_source", "../../etc"),
        ("algo", "<img src=x>"),
        ("lang", "../../etc/passwd"),
        ("fld:rollout.name", "/dev/zero"),
        ("fld:actor.strategy", "megatron; rm -rf /"),
        ("model_size_family", "/etc/shadow"),
    ],
)
def test_forged_choice_is_reset(server: Server, key: str, value: str) -> None:
    forged, after = run(forge(server.url, key, string_value=value))
    for page in (forged, after):
        assert_clean(page)
        assert any(name == "metric" for name, _ in page.elements), page.alerts()  # the headline still renders
    assert server.opened() == []


def test_forged_gpu_list_is_reset(server: Server) -> None:
    """The planner's GPU list must be a subset of the GPU presets: thousands of entries would be thousands of
    plans (CPU), a path would be a lookup of a path."""
    gpus = ["h100-80gb"] * 5000 + ["/etc/passwd"]
    forged, after = run(forge(server.url, "plan_gpus", page_name="planner", string_array_value=gpus))
    for page in (forged, after):
        assert_clean(page)


# ----------------------------------------------------------------------------- item 6: non-finite numbers


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize(
    ("key", "page_name"),
    [
        ("fld:hardware.num_gpus", ""),
        ("fld:data.train_batch_size", ""),
        ("cmp_count", "compare"),
        ("plan_max_gpus", "planner"),
    ],
)
def test_non_finite_number_does_not_break_the_session(server: Server, key: str, page_name: str, value: float) -> None:
    forged, after = run(forge(server.url, key, page_name=page_name, double_value=value))
    assert_clean(forged)
    assert_clean(after)


# ----------------------------------------------------------------------------- item 7: shared caches


def _cache_misses(url: str) -> dict[str, float]:
    """Misses per ``st.cache_data`` function (``/_stcore/metrics``): a miss after a clear is a recomputation."""
    request = urllib.request.Request(f"{url}/_stcore/metrics", headers={"Accept": "text/plain"})
    with urllib.request.urlopen(request, timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("cache_lookups_total{") and 'result="miss"' in line:
            out[line.split('cache="', 1)[1].split('"', 1)[0]] = float(line.rsplit(" ", 1)[1])
    return out


def test_clear_cache_message_keeps_the_shared_caches(server: Server) -> None:
    """Any client could clear every session's caches (the presets, the advisor, the planner sweeps): after its
    clear_cache message the next run recomputed them. Now they stay: the next run misses no cache. Observed through
    the ``st.cache_data`` the verl page keeps (a pasted script's import: Streamlit's metrics count its misses); the
    process-wide caches of ``ui/cache.py`` and ``ui/catalogue.py`` are plain Python, which the message cannot reach."""
    script = "python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=8 actor_rollout_ref.rollout.n=4"

    async def go() -> None:
        async with Session(server.url, page_name="verl") as s:
            assert_clean(await s.run())
            paste = s.state("verl_import_text", string_value=script)
            assert_clean(await s.run([paste]))
            assert_clean(await s.run([paste]))  # everything the page needs is cached now
            before = _cache_misses(server.url)
            assert before.get("__main__.import_script", 0) >= 1, before  # a page script runs as __main__
            await s.clear_cache()
            assert_clean(await s.run([paste]))  # the sender's session starts afresh (its own state was cleared)
            after = _cache_misses(server.url)
            assert _without_ttl(after) == _without_ttl(before)

    run(go())


# Caches that expire by design, whatever a client sends: a miss there after a slow rerun is their TTL.
TTL_CACHES = {"ui.profiles.team_fitted": "re-reads the team's profile directory at most every 3 s"}


def _without_ttl(misses: dict[str, float]) -> dict[str, float]:
    return {k: v for k, v in misses.items() if k not in TTL_CACHES}


def test_install_skills_is_refused(server: Server) -> None:
    async def go() -> str:
        async with Session(server.url) as s:
            assert_clean(await s.run())
            return await s.install_skills()

    assert run(go()).startswith("error:")
    assert not (ROOT / ".claude").exists() and not (ROOT / ".agents").exists()


# ----------------------------------------------------------------------------- items 3 and 7: no outbound request


PAYLOAD_HOST = "ssrf.rlplan.test"  # a name no resolver knows: only a proxy can take a request for it
# chromium's own background requests (network time, component updates, safe browsing, search-engine favicons);
# which of them a start makes varies from run to run
NOISE = (
    b"duckduckgo.com",
    b"google.com",
    b"googleapis.com",
    b"gvt1.com",
    b"gstatic.com",
    b"googleusercontent.com",
    b"chrome.com",
    b"chromium.org",
)


def _request_line(hit: bytes) -> str:
    """The request line and Host header of a heard request (what the failure message shows)."""
    lines = hit.split(b"\r\n")
    host = next((x for x in lines if x.lower().startswith(b"host:")), b"")
    return (lines[0][:120] + b" " + host).decode("latin-1")


def _payload_config(port: int) -> dict:
    cfg = dict(yaml.safe_load((ROOT / "presets" / "models" / "qwen2.5-0.5b.yaml").read_text())["config"])
    props = ("background", "background-image", "cursor", "fill", "mask", "filter", "clip-path", "marker", "stroke")
    css = "; ".join(f"{p}:url(http://{PAYLOAD_HOST}/{p})" for p in props[:5])
    css += "; " + "; ".join(f"{p}:url(http://127.0.0.1:{port}/{p})" for p in props[5:])
    cfg["_name_or_path"] = f'<span style="{css}">ssrf</span><a href="http://{PAYLOAD_HOST}/a">x</a>'
    return cfg


def test_png_export_sends_no_request(server: Server) -> None:
    """The model name (from an uploaded config.json) goes into the PNG's title, rendered by the server's
    chromium: CSS url() in it made the server fetch the attacker's URL. Now it is text, kaleido loads no MathJax
    from a CDN, and chromium's every request goes to a proxy (here: the listener, via RLPLAN_RENDER_PROXY; in
    production one that does not exist). The listener hears no request of the figure's; what it hears is only
    chromium's own start-up noise, which the production proxy swallows."""
    if not os.path.exists("/usr/bin/chromium"):
        pytest.fail("/usr/bin/chromium is missing: apt-get install -y chromium")
    qs = urlencode({"model.config": json.dumps(_payload_config(server.listener.port))})

    async def go() -> list[bytes]:
        async with Session(server.url, query_string=qs) as s:
            page = await s.run()
            assert_clean(page)
            assert page.downloads, "no PNG download button"
            out = []
            for key in ("dl_png_components", "dl_png_time"):
                url = await s.deferred_file(page.downloads[key], request_id=key)
                assert url.startswith("/"), url
                with urllib.request.urlopen(server.url + url, timeout=60) as r:
                    out.append(r.read())
            return out

    pngs = run(go())
    assert all(p.startswith(b"\x89PNG") for p in pngs)
    time.sleep(1)  # a request the renderer started would arrive within this
    hits = server.listener.hits
    figure = [h for h in hits if PAYLOAD_HOST.encode() in h or b"/ssrf" in h or b"mathjax" in h.lower()]
    figure += [h for h in hits if b"127.0.0.1" in h]  # the loopback payloads (the proxy takes loopback too)
    assert figure == [], figure
    # chromium also opens speculative (pre)connections that send nothing: no request, nothing of the figure
    unknown = [_request_line(h) for h in hits if h.strip() and not any(n in h for n in NOISE)]
    assert unknown == [], unknown


def test_favicon_is_served_by_the_app(server: Server) -> None:
    async def go() -> str:
        async with Session(server.url) as s:
            page = await s.run()
            assert_clean(page)
            return page.favicon

    favicon = run(go())
    assert favicon and not favicon.startswith(("http:", "https:", ":material")), favicon


def test_start_and_cross_origin_requests_look_nothing_up(canary: Path) -> None:
    """No server.address (the container's case) and a websocket from another origin: Streamlit asked
    checkip.amazonaws.com for its external IP at start and on every cross-origin request."""
    with hostile_server(canary, address="") as s:

        async def go() -> None:
            with contextlib.suppress(Exception):  # the other origin is refused; only the lookup matters
                async with Session(s.url, origin="http://evil.example") as evil:
                    await evil.run()
            async with Session(s.url) as ok:
                assert_clean(await ok.run())

        run(go())
        time.sleep(1)
        assert s.listener.hits == [], s.listener.hits
        assert "External URL" not in s.log_text()


def test_presets_dir_fifo_does_not_hang_the_server(tmp_path: Path) -> None:
    """A FIFO in RLPLAN_PRESETS_DIR hung every session while /_stcore/health stayed green."""
    team = tmp_path / "team"
    (team / "gpus").mkdir(parents=True)
    os.mkfifo(team / "gpus" / "pipe.yaml")
    (team / "scenarios").mkdir()
    (team / "scenarios" / "link.yaml").symlink_to("/etc/hostname")
    assert stat.S_ISFIFO(os.stat(team / "gpus" / "pipe.yaml").st_mode)
    with hostile_server(tmp_path, env={"RLPLAN_PRESETS_DIR": str(team)}) as s:

        async def go() -> Page:
            async with Session(s.url) as session:
                return await session.run()

        page = run(go())
        assert_clean(page)
        warnings = " ".join(page.alerts())
        assert "pipe.yaml" in warnings and "not a regular file" in warnings, warnings
        assert "link.yaml" in warnings and "outside the preset directories" in warnings, warnings
        assert not fifo_has_reader(team / "gpus" / "pipe.yaml")
