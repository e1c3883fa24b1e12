# rlplan dashboard: a slim, pinned Python base, dependencies from requirements.txt only, non-root.
# Build: docker build -t rlplan .   Run: docker run -p 8501:8501 rlplan
FROM python:3.11.7-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    # Reverse proxy: serve under a path prefix, e.g. /rlplan (empty = at the root).
    STREAMLIT_SERVER_BASE_URL_PATH="" \
    # A team's own GPUs, prices, models and scenarios (same layout as presets/), merged over the shipped ones.
    RLPLAN_PRESETS_DIR=/presets

WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt

RUN groupadd --system --gid 10001 rlplan \
    && useradd --system --uid 10001 --gid 10001 --home-dir /app --shell /usr/sbin/nologin rlplan \
    && mkdir -p /presets && chown 10001:10001 /presets
COPY --chown=10001:10001 . .
USER 10001:10001

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; p = os.environ.get('STREAMLIT_SERVER_BASE_URL_PATH', '').strip('/'); urllib.request.urlopen('http://127.0.0.1:8501/' + (p + '/' if p else '') + '_stcore/health', timeout=4)"]

CMD ["streamlit", "run", "app.py"]
