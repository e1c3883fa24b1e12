"""rlplan dashboard: a table of contents (st.navigation); every page lives in ui/pages/.

Run:  streamlit run app.py
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from ui import hardening, keys, profiles, state
from ui.i18n import LANG_NAMES, LANGS, tr

# The icon ships with the app: a ":material/...:" page icon makes every browser fetch it from fonts.gstatic.com.
ICON = Path(__file__).resolve().parent / "ui" / "assets" / "rlplan-icon.png"

st.set_page_config(page_title="rlplan", page_icon=str(ICON), layout="wide", initial_sidebar_state="expanded")
hardening.harden()
state.init_session()
state.sanitize_widgets()  # every widget value is user input: checked before any page reads it
profiles.apply_link()  # a link's calibration profile (``cal``), once per distinct value
L = state.lang()

pages = [
    st.Page(
        "ui/pages/estimate.py",
        title=tr(L, "page.estimate"),
        icon=":material/memory:",
        url_path="estimate",
        default=True,
    ),
    st.Page("ui/pages/compare.py", title=tr(L, "page.compare"), icon=":material/compare:", url_path="compare"),
    st.Page("ui/pages/tradeoffs.py", title=tr(L, "page.tradeoffs"), icon=":material/balance:", url_path="tradeoffs"),
    st.Page("ui/pages/planner.py", title=tr(L, "page.planner"), icon=":material/dns:", url_path="planner"),
    st.Page("ui/pages/verl_io.py", title=tr(L, "page.verl"), icon=":material/terminal:", url_path="verl"),
    st.Page("ui/pages/calibrate.py", title=tr(L, "page.calibrate"), icon=":material/tune:", url_path="calibrate"),
]
page = st.navigation(pages, position="top")

with st.sidebar:
    st.markdown(
        f"### :material/calculate: rlplan\n<span style='color:#607d8b;font-size:0.85rem'>{tr(L, 'app.tagline')}</span>",
        unsafe_allow_html=True,
    )
    st.radio(
        "Language / 语言",
        LANGS,
        format_func=LANG_NAMES.get,
        key=keys.LANG,
        horizontal=True,
        label_visibility="collapsed",
    )

st.markdown(
    """
<style>
  .block-container {padding-top: 3.2rem; padding-bottom: 2rem;}
  [data-testid="stSidebar"] [data-testid="stExpander"] details summary p {font-weight: 600;}
  /* Metric cards wrap instead of clipping ("400.74 …") at 1280-1440 px; the value shrinks with the window. */
  [data-testid="stMetricValue"] {font-size: clamp(1.1rem, 1.55vw, 1.45rem);}
  [data-testid="stMetricValue"], [data-testid="stMetricLabel"], [data-testid="stMetricDelta"],
  [data-testid="stMetricValue"] *, [data-testid="stMetricLabel"] *, [data-testid="stMetricDelta"] * {
    white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
    word-break: normal !important; overflow-wrap: normal !important;
  }
  /* A row of metric cards wraps onto a second line rather than squeezing six cards into 130 px each. */
  [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] [data-testid="stMetric"]) {flex-wrap: wrap;}
  [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] [data-testid="stMetric"]) > [data-testid="stColumn"] {
    min-width: 160px; flex: 1 1 160px;
  }
  [data-testid="stMetricDelta"] {align-items: flex-start;}
  /* Only the open sidebar is wide: a collapsed one gives the content its width back. */
  section[data-testid="stSidebar"]:not([data-collapsed="true"]) {min-width: 350px;}
  /* Segmented controls (expected / worst case) show whole labels. */
  [data-testid="stButtonGroup"] button p {white-space: nowrap;}
  [data-testid="stButtonGroup"] button {min-width: fit-content;}
</style>
""",
    unsafe_allow_html=True,
)

page.run()
