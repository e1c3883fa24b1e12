# rlplan dashboard as a shared internal service: a slim Python base pinned by digest, every Python package pinned
# with hashes (requirements.lock), non-root, health-checked on the configured port. docs/deployment.md has the
# run, proxy and replica setup; docs/security.md what the app refuses and why.
#   docker build -t rlplan .
#   docker run -p 127.0.0.1:8501:8501 -v "$PWD/team-presets:/presets:ro" rlplan
# The base by tag *and* digest (a tag moves when it is rebuilt). The digest was taken from public Dockerfiles that
# agree on it; refresh tag and digest together with: docker buildx imagetools inspect python:3.11-slim-bookworm
FROM python:3.11.15-slim-bookworm@sha256:d29f48a31a8b408ed19272ca1e7b10ebae13b240a27e862d3d4217c528e2e0c3

# Server-side PNG export of charts: kaleido drives Debian's chromium (no browser is downloaded at run
# time), and a CJK font makes Chinese axis labels and legends render in the exported PNGs (the chart
# toolbar's camera button renders in the viewer's own browser and needs neither).
# chromium is deliberately not pinned: Debian ships it only through bookworm-security, which drops each
# superseded version, so a pin would break the build at the next security release. The font is pinned.
# nginx-light is the sticky proxy of the replica mode (python -m deploy.replicas; unused by the default CMD). Like
# chromium it is security-updated in bookworm-security, so it is not pinned either.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends chromium fonts-wqy-microhei=0.2.0-beta-3.1 nginx-light \
    && rm -rf /var/lib/apt/lists/*

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOME=/home/rlplan \
    # Reverse proxy: serve under a path prefix, e.g. rlplan for https://tools.example.com/rlplan/ (empty = root).
    STREAMLIT_SERVER_BASE_URL_PATH="" \
    # A team's own GPUs, prices, models and scenarios (same layout as presets/), merged over the shipped ones;
    # mount them read-only here. A file that does not validate is skipped and named in the app.
    RLPLAN_PRESETS_DIR=/presets

WORKDIR /app
# Every package and its exact files: pip refuses anything whose hash is not in the lock (and resolves nothing).
COPY requirements.lock .
RUN pip install --no-cache-dir --require-hashes --no-deps -r requirements.lock

# The service user owns only its home (kaleido's and fontconfig's caches); the code stays root-owned.
RUN groupadd --system --gid 10001 rlplan \
    && useradd --system --uid 10001 --gid 10001 --create-home --home-dir /home/rlplan \
        --shell /usr/sbin/nologin rlplan \
    && mkdir -p /presets
COPY . .
# Bytecode for the code, written at build time (root-owned, like the code): PYTHONDONTWRITEBYTECODE stops Python
# writing it at run time, not reading it, and without it every CLI call and server start compiles ~270 modules
# from source (~0.1 s; benchmarks/bench_cli.py prints both, issue #18).
RUN python -m compileall -q -j 0 calculator ui deploy app.py
USER 10001:10001

EXPOSE 8501
# The health check follows STREAMLIT_SERVER_PORT and STREAMLIT_SERVER_BASE_URL_PATH, as the server does.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; e = os.environ.get; p = e('STREAMLIT_SERVER_BASE_URL_PATH', '').strip('/'); urllib.request.urlopen('http://127.0.0.1:' + (e('STREAMLIT_SERVER_PORT') or '8501') + '/' + (p + '/' if p else '') + '_stcore/health', timeout=4)"]

# Headless, no usage statistics, XSRF on, 2 MB uploads, no external-IP lookup: .streamlit/config.toml (copied with
# the code). ui.serve = streamlit run app.py with the process-wide hardening (ui/hardening.py) in place first.
# One process (about one core). For more users on a bigger machine, N replicas behind a sticky nginx in the same
# container: docker run ... rlplan python -m deploy.replicas --replicas 4   (docs/deployment.md, "Several replicas")
CMD ["python", "-m", "ui.serve"]
