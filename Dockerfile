# rlplan dashboard as a shared internal service: a slim pinned Python base, dependencies from
# requirements.txt only, non-root, health-checked. docs/deployment.md has the run, proxy and replica setup.
#   docker build -t rlplan .
#   docker run -p 8501:8501 -v "$PWD/team-presets:/presets:ro" rlplan
FROM python:3.11.7-slim-bookworm

# Server-side PNG export of charts: kaleido drives Debian's chromium (no browser is downloaded at run
# time), and a CJK font makes Chinese axis labels and legends render in the exported PNGs (the chart
# toolbar's camera button renders in the viewer's own browser and needs neither).
# chromium is deliberately not pinned: Debian ships it only through bookworm-security, which drops each
# superseded version, so a pin would break the build at the next security release. The font is pinned.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends chromium fonts-wqy-microhei=0.2.0-beta-3.1 \
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
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt

# The service user owns only its home (kaleido's and fontconfig's caches); the code stays root-owned.
RUN groupadd --system --gid 10001 rlplan \
    && useradd --system --uid 10001 --gid 10001 --create-home --home-dir /home/rlplan \
        --shell /usr/sbin/nologin rlplan \
    && mkdir -p /presets
COPY . .
USER 10001:10001

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; p = os.environ.get('STREAMLIT_SERVER_BASE_URL_PATH', '').strip('/'); urllib.request.urlopen('http://127.0.0.1:8501/' + (p + '/' if p else '') + '_stcore/health', timeout=4)"]

# Headless, no usage statistics, XSRF on, 2 MB uploads: .streamlit/config.toml (copied with the code).
CMD ["streamlit", "run", "app.py"]
