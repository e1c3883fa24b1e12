"""Server-side PNG export of plotly figures with kaleido 1.x and the system chromium (no streamlit here).

kaleido drives a headless chromium; ``start_sync_server`` keeps one running so that each image takes
~0.15 s instead of ~2 s. It is started lazily on the first export (a user who never downloads a PNG
never starts a browser). Without chromium, :func:`png_export_available` is False and the app points
to the chart toolbar's camera button instead.

The server's chromium must fetch nothing. Plotly text is pseudo-HTML: a ``<span style="background:url(...)">``
in a title makes the renderer request that URL (server-side request forgery through a model name). So user
text enters a figure through :func:`plain_text` (entity-escaped, shown as typed), and :func:`figure_png` passes
every text of the figure through :func:`safe_markup`, which keeps only the bare tags the figure builders use
(``<b>``, ``<br>``, ...) and escapes everything else. MathJax is disabled (kaleido would load it from a CDN), and
chromium is started through ``ui/assets/chromium-offline``, which sends every request it makes, loopback included,
to a proxy that does not exist (chromium makes background requests of its own at start).
"""

from __future__ import annotations

import atexit
import functools
import html
import os
import re
import shutil
import subprocess
import threading
import warnings
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
OFFLINE_WRAPPER = Path(__file__).resolve().parent / "assets" / "chromium-offline"
PNG_WIDTH = 1400
PNG_HEIGHT = 700
PNG_SCALE = 2

# Figure text: Latin faces first, then the CJK face the Docker image installs (fonts-wqy-microhei) and the one most
# desktops have, so Chinese labels render in server-side PNGs. kaleido's chromium reads the font list once when it
# starts: a font installed later needs a server restart (README "Chinese").
CJK_FONT_FAMILIES = ("WenQuanYi Micro Hei", "Noto Sans CJK SC")
FONT_FAMILY = ", ".join(("Inter", "Source Sans Pro", *CJK_FONT_FAMILIES, "sans-serif"))

# Tags the figure builders write themselves, without attributes; any other tag (or one with attributes: style,
# href, class) is escaped and shown as text.
_SAFE_TAG = re.compile(r"</?(?:b|i|em|sup|sub)>|<br\s*/?>", re.I)

_lock = threading.Lock()
_server_started = False


def chromium_path() -> str | None:
    env = os.environ.get("RLPLAN_CHROMIUM") or os.environ.get("BROWSER_PATH")
    if env and os.path.exists(env) and Path(env) != OFFLINE_WRAPPER:
        return env
    for path in CHROMIUM_CANDIDATES:
        if os.path.exists(path):
            return path
    return shutil.which("chromium")


def png_export_available() -> bool:
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return False
    return chromium_path() is not None


@functools.cache
def cjk_font_installed() -> bool:
    """Whether fontconfig knows a font with Chinese glyphs (``fc-list :lang=zh``); without one, Chinese text in a
    server-side PNG renders as empty boxes. Read once per process, like the font list of kaleido's chromium."""
    fc_list = shutil.which("fc-list")
    if fc_list is None:
        return False
    try:
        out = subprocess.run([fc_list, ":lang=zh", "family"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return bool(out.stdout.strip())


def _stop() -> None:
    import kaleido

    try:
        kaleido.stop_sync_server()
    except Exception:  # already stopped or never fully started: nothing to clean up
        pass


def _ensure_server() -> None:
    global _server_started
    if _server_started:
        return
    import kaleido

    path = chromium_path()
    if path and os.access(OFFLINE_WRAPPER, os.X_OK):
        os.environ["RLPLAN_CHROMIUM"] = path  # the wrapper starts this chromium with its network cut off
        os.environ["BROWSER_PATH"] = str(OFFLINE_WRAPPER)
    elif path:
        os.environ["BROWSER_PATH"] = path
    kaleido.start_sync_server(silence_warnings=True, mathjax=False)  # no MathJax: it would come from a CDN
    atexit.register(_stop)
    _server_started = True


def plain_text(text: object, limit: int = 200) -> str:
    """User text for a figure (a model name, a label): shown exactly as typed, never as plotly markup."""
    s = " ".join(str(text).split())
    return html.escape(s if len(s) <= limit else s[: limit - 1] + "…", quote=False)


def safe_markup(text: str) -> str:
    """Figure text with only the bare tags the builders use (``<b>``, ``<i>``, ``<br>``...); every other ``<``
    is escaped, so no ``style`` (CSS ``url()``), ``href`` or unknown tag reaches the renderer."""
    if "<" not in text:
        return text
    out: list[str] = []
    i = 0
    for m in _SAFE_TAG.finditer(text):
        out.append(text[i : m.start()].replace("<", "&lt;"))
        out.append(m.group())
        i = m.end()
    out.append(text[i:].replace("<", "&lt;"))
    return "".join(out)


def _safe(obj: Any) -> Any:
    if isinstance(obj, str):
        return safe_markup(obj)
    if isinstance(obj, dict):
        return {k: _safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_safe(v) for v in obj]
    return obj


def safe_figure(fig: go.Figure) -> go.Figure:
    """A copy of the figure whose every string went through :func:`safe_markup` (titles, names, annotations,
    tick labels, hover text)."""
    return go.Figure(_safe(fig.to_plotly_json()))


def figure_png(fig: go.Figure, *, width: int = PNG_WIDTH, height: int = PNG_HEIGHT, scale: int = PNG_SCALE) -> bytes:
    """The figure as PNG bytes (white background), rendered by kaleido in the system chromium, from a copy
    whose text went through :func:`safe_markup`."""
    fig = safe_figure(fig)
    with _lock:
        _ensure_server()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fig.to_image(format="png", width=width, height=height, scale=scale)


def with_header(fig: go.Figure, header: str | None = None, note: str | None = None) -> go.Figure:
    """A copy of the figure that describes itself in a PNG: ``header`` (the scenario: model, GPUs; user text,
    shown as typed) in bold, then ``note`` (what the chart shows: "max lengths", the step total), then the
    figure's own title if it has one. Static export has no automargin: the top margin grows with the lines."""
    own = fig.layout.title.text if fig.layout.title and fig.layout.title.text else None
    lines = ([f"<b>{plain_text(header)}</b>"] if header else []) + ([note] if note else []) + ([own] if own else [])
    out = go.Figure(fig)
    out.update_layout(margin=dict(l=80, r=40, t=40 + 24 * len(lines), b=40))
    if lines:
        out.update_layout(title=dict(text="<br>".join(lines), x=0.01, xanchor="left", y=0.98, yanchor="top"))
    return out


def toolbar_config(filename: str) -> dict:
    """plotly.js config for st.plotly_chart: the camera button downloads a 2x PNG named after the chart."""
    return {
        "displaylogo": False,
        "toImageButtonOptions": {"format": "png", "filename": filename, "scale": 2},
        "modeBarButtonsToRemove": ["lasso2d", "select2d", "autoScale2d"],
    }
