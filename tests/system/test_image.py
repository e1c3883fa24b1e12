"""The Docker image (issue 12, item 7): pinned base and packages, a health check on the configured port, and
the image itself built and run without a Docker daemon.

The static checks read the Dockerfile, ``requirements.lock`` and ``.streamlit/config.toml``, and run the image's
own HEALTHCHECK command against a server on a random port. ``test_image_builds_and_serves`` builds the Dockerfile
with buildah (vfs storage, chroot isolation: no daemon, runs as root in CI) and runs the image: the server as
uid 10001 on ``STREAMLIT_SERVER_PORT``, its health check, a PNG export by the non-root user. When the base image's
registry is unreachable (this machine kind reaches only PyPI, Debian and npm), the build uses a stand-in base
made here with debootstrap: Debian bookworm with its Python 3.11 (3.11.2 instead of the pinned image's 3.11.15),
pip, and ``python``/``pip`` in /usr/local/bin, as in the official image. Everything after ``FROM`` runs as
written. Measured here: stand-in 1.5 min, build 2.3 min, checks 0.5 min.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.dockerfile import instructions as dockerfile_instructions
from tests.system.stclient import Session

pytestmark = [pytest.mark.system, pytest.mark.deploy]

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
STORAGE = ["--storage-driver", "vfs"]
STANDIN = "localhost/rlplan-standin-python:3.11-slim-bookworm"
IMAGE = "localhost/rlplan:test"
BUILD_TIMEOUT_S = 1500  # the whole image (chromium, the locked packages) downloads in ~2 min here


def instructions() -> list[tuple[str, str]]:
    return dockerfile_instructions(DOCKERFILE.read_text())


def args_of(name: str) -> list[str]:
    return [a for i, a in instructions() if i == name]


def healthcheck_argv() -> list[str]:
    (health,) = args_of("HEALTHCHECK")
    return json.loads(health.split("CMD", 1)[1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
            return r.read() == b"ok"
    except OSError:
        return False


def wait_healthy(url: str, proc: subprocess.Popen, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while not healthy(url):
        if proc.poll() is not None or time.monotonic() > deadline:
            out = proc.stdout.read() if proc.stdout and proc.poll() is not None else ""
            raise RuntimeError(f"no health at {url}: {out[-2000:]}")
        time.sleep(0.5)  # polling a process that is starting: nothing to wait on but time


# ----------------------------------------------------------------------------- the files


def test_base_image_is_pinned_by_digest() -> None:
    (base,) = args_of("FROM")
    assert re.fullmatch(r"python:3\.11\.\d+-slim-(bookworm|trixie)@sha256:[0-9a-f]{64}", base), base


def _lock() -> dict[str, tuple[str, list[str]]]:
    text = (ROOT / "requirements.lock").read_text()
    out = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        m = re.match(r"([A-Za-z0-9_.-]+)==(\S+)", block)
        if m:
            out[m.group(1).lower().replace("_", "-")] = (m.group(2), re.findall(r"--hash=sha256:([0-9a-f]{64})", block))
    return out


def test_every_package_is_pinned_with_hashes() -> None:
    lock = _lock()
    assert len(lock) >= 40, sorted(lock)  # the image's whole environment, not the 5 direct requirements
    assert all(hashes for _, hashes in lock.values()), [n for n, (_, h) in lock.items() if not h]
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert lock[name.lower().replace("_", "-")][0] == version, (name, version)  # the lock follows the pins
    (install,) = [a for a in args_of("RUN") if "pip install" in a]
    assert "--require-hashes" in install and "--no-deps" in install and "-r requirements.lock" in install


def test_healthcheck_follows_the_configured_port() -> None:
    """The HEALTHCHECK hard-coded 8501 although STREAMLIT_SERVER_PORT is documented: with another port the
    container was reported unhealthy (and restarted by an orchestrator)."""
    port = free_port()
    env = {**os.environ, "STREAMLIT_SERVER_PORT": str(port), "STREAMLIT_SERVER_ADDRESS": "127.0.0.1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ui.serve", "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        argv = [sys.executable, *healthcheck_argv()[1:]]
        check_env = {"STREAMLIT_SERVER_PORT": str(port), "PATH": os.environ["PATH"]}
        assert subprocess.run(argv, env=check_env, capture_output=True, timeout=30).returncode == 0
        assert subprocess.run(argv, env={**check_env, "STREAMLIT_SERVER_PORT": str(free_port())},
                              capture_output=True, timeout=30).returncode != 0  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_no_outside_service_is_asked_for_the_address() -> None:
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert cfg["browser"]["serverAddress"], "unset: every start asks checkip.amazonaws.com for the external IP"
    (cmd,) = args_of("CMD")
    assert json.loads(cmd) == ["python", "-m", "ui.serve"]  # hardened before the first connection


def test_the_page_icon_ships_with_the_app() -> None:
    app = (ROOT / "app.py").read_text()
    assert ":material/calculate:" not in app.split("set_page_config", 1)[1].split(")", 1)[0]
    assert (ROOT / "ui" / "assets" / "rlplan-icon.png").read_bytes().startswith(b"\x89PNG")


def test_deployment_guide_publishes_on_loopback_only() -> None:
    doc = (ROOT / "docs" / "deployment.md").read_text()
    publishes = re.findall(r"-p\s+(\S+)", doc)
    assert publishes and all(p.startswith("127.0.0.1:") for p in publishes), publishes


# ----------------------------------------------------------------------------- the image itself


def buildah(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["buildah", *STORAGE, *args], capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"buildah {' '.join(args[:3])}: {done.stderr[-3000:]}")
    return done


def _registry_reachable() -> bool:
    try:
        socket.getaddrinfo("registry-1.docker.io", 443)
    except OSError:
        return False
    return True


DEBIAN_SOURCES = """Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""


def _host_ca_bundle() -> Path | None:
    """The CA bundle pip uses here when it is not the system default (a TLS-intercepting network)."""
    cert = os.environ.get("PIP_CERT")
    return Path(cert) if cert and Path(cert).is_file() else None


def standin_base(workdir: Path) -> str:
    """python:3.11-slim-bookworm's stand-in: Debian bookworm by debootstrap, its Python 3.11 and pip."""
    if buildah("images", "-q", STANDIN, check=False).stdout.strip():
        return STANDIN
    if shutil.which("debootstrap") is None:
        pytest.fail("the base image's registry is unreachable and debootstrap is missing: apt-get install debootstrap")
    rootfs = workdir / "rootfs"
    subprocess.run(
        ["debootstrap", "--variant=minbase", "--include=python3,python3-pip,ca-certificates", "bookworm",
         str(rootfs), "http://deb.debian.org/debian"],
        check=True, capture_output=True, timeout=900,
    )  # fmt: skip
    (rootfs / "usr/lib/python3.11/EXTERNALLY-MANAGED").unlink(missing_ok=True)  # the official image has none
    (rootfs / "usr/local/bin/python").symlink_to("/usr/bin/python3")
    (rootfs / "usr/local/bin/pip").symlink_to("/usr/bin/pip3")
    (rootfs / "etc/apt/sources.list").unlink(missing_ok=True)
    (rootfs / "etc/apt/sources.list.d/debian.sources").write_text(DEBIAN_SOURCES)  # chromium is in -security
    env = ["--env", "PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin", "--env", "LANG=C.UTF-8"]
    ca = _host_ca_bundle()
    if ca is not None:
        shutil.copy(ca, rootfs / "etc/ssl/certs/rlplan-build-ca.crt")
        env += ["--env", "PIP_CERT=/etc/ssl/certs/rlplan-build-ca.crt"]
    subprocess.run(["tar", "-C", str(rootfs), "-cf", str(workdir / "rootfs.tar"), "."], check=True, timeout=300)
    ctr = buildah("from", "scratch").stdout.strip()
    try:
        buildah("add", ctr, str(workdir / "rootfs.tar"), "/", timeout=600)
        buildah("config", *env, "--cmd", "python3", ctr)
        buildah("commit", "-q", ctr, STANDIN, timeout=600)
    finally:
        buildah("rm", ctr, check=False)
    return STANDIN


@contextlib.contextmanager
def running(image: str, port: int) -> Iterator[str]:
    """A working container of the image with the server started in it as the image starts it."""
    ctr = buildah("from", image).stdout.strip()
    proc = subprocess.Popen(
        ["buildah", *STORAGE, "run", "--isolation", "chroot", "--env", f"STREAMLIT_SERVER_PORT={port}",
         "--env", "STREAMLIT_SERVER_ADDRESS=127.0.0.1", ctr, "--", "python", "-m", "ui.serve"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc, timeout_s=120)
        yield ctr
    finally:
        os.killpg(proc.pid, 15)  # the server and its chromium: the whole group this test started
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=20)
        buildah("rm", ctr, check=False)


@pytest.mark.slow
def test_image_builds_and_serves(tmp_path: Path) -> None:
    if shutil.which("buildah") is None:
        pytest.fail("buildah is missing: apt-get install -y buildah (builds the Dockerfile without a daemon)")
    base = [] if _registry_reachable() else ["--from", standin_base(tmp_path)]
    build = subprocess.run(
        ["buildah", *STORAGE, "bud", "--isolation", "chroot", "--format", "docker", *base, "-t", IMAGE, str(ROOT)],
        capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
    )  # fmt: skip
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    config = json.loads(buildah("inspect", "--type", "image", IMAGE).stdout)["Docker"]["config"]
    assert config["User"] == "10001:10001"
    assert "STREAMLIT_SERVER_PORT" in " ".join(config["Healthcheck"]["Test"])
    port = free_port()
    with running(IMAGE, port) as ctr:
        health = buildah("run", "--isolation", "chroot", "--env", f"STREAMLIT_SERVER_PORT={port}", ctr, "--",
                         *healthcheck_argv(), check=False)  # fmt: skip
        assert health.returncode == 0, health.stderr
        assert buildah("run", "--isolation", "chroot", ctr, "--", "id", "-u").stdout.strip() == "10001"

        async def png() -> bytes:
            async with Session(f"http://127.0.0.1:{port}") as s:
                page = await s.run()
                assert not page.exceptions(), page.exceptions()
                url = await s.deferred_file(page.downloads["dl_png_components"])
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{url}", timeout=60) as r:
                    return r.read()

        assert asyncio.run(png()).startswith(b"\x89PNG")  # kaleido + chromium as the non-root user
