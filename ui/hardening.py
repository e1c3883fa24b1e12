"""Server-wide hardening that Streamlit's configuration does not offer (applied once per process by app.py).

No outbound request. Streamlit looks up the machine's external IP with an HTTP request to
checkip.amazonaws.com when it prints its URLs at start (``browser.serverAddress`` in ``.streamlit/config.toml``
avoids that) and again for every websocket request from another origin, to compare the origin with it (and it
retries on every such request while the lookup fails, as it does behind a firewall). Here the lookup answers
"unknown" at once; a cross-origin page is still refused by the other checks.

Non-finite numbers. An integer number input that receives NaN or infinity from a client makes Streamlit's own
deserializer raise (``int(nan)``) inside its rerun handling, before the app's script runs, and again on every
later run of that session. No widget of this app takes a non-finite number, so such widget values are dropped
from the client's message before Streamlit reads them (the widget keeps its previous value).

Streamlit's "Clear cache" menu item sends a ``clear_cache`` message, and the server clears the process-wide
``st.cache_data`` / ``st.cache_resource`` caches: those of every session, not only the sender's. The menu is
hidden here (``client.toolbarMode = "viewer"``), but any websocket client can send the message, so one visitor
could make every other user's next run recompute the presets, the advisor and the planner sweeps. The handler
is replaced by one that clears only the sender's own session state (what the menu item does for that user) and
leaves the shared caches alone. ``tests/system/test_forged_widgets.py`` sends the raw message and checks.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from streamlit import net_util
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.runtime.app_session import AppSession

_LOGGER = logging.getLogger(__name__)
_GUARD = "_rlplan_shared_caches_kept"


def _clear_own_session_only(self: AppSession) -> None:
    _LOGGER.info("clear_cache from a client: shared caches kept, the sender's session state cleared")
    self._session_state.clear()


def keep_shared_caches() -> None:
    """Make a client's ``clear_cache`` message clear only that client's session state (idempotent)."""
    if getattr(AppSession._handle_clear_cache_request, _GUARD, False):
        return
    setattr(_clear_own_session_only, _GUARD, True)
    AppSession._handle_clear_cache_request = _clear_own_session_only  # type: ignore[method-assign]


_ORIGINAL_RERUN = AppSession._handle_rerun_script_request


def _finite(state: Any) -> bool:
    kind = state.WhichOneof("value")
    if kind == "double_value":
        return math.isfinite(state.double_value)
    if kind == "double_array_value":
        return all(math.isfinite(v) for v in state.double_array_value.data)
    return True


def drop_non_finite(client_state: ClientState | None) -> int:
    """Remove widget values that are NaN or infinite from a client's rerun request; return how many."""
    if client_state is None or not client_state.HasField("widget_states"):
        return 0
    widgets = client_state.widget_states.widgets
    bad = [w for w in widgets if not _finite(w)]
    for w in bad:
        widgets.remove(w)
    return len(bad)


def _rerun_with_finite_numbers(self: AppSession, client_state: ClientState | None = None) -> None:
    if drop_non_finite(client_state):
        _LOGGER.info("non-finite widget values from a client dropped")
    _ORIGINAL_RERUN(self, client_state)


def finite_widget_numbers() -> None:
    """Drop NaN / infinite widget values from every client message before Streamlit deserializes them."""
    if getattr(AppSession._handle_rerun_script_request, _GUARD, False):
        return
    setattr(_rerun_with_finite_numbers, _GUARD, True)
    AppSession._handle_rerun_script_request = _rerun_with_finite_numbers  # type: ignore[method-assign]


def _no_external_ip() -> None:
    return None


def no_external_ip_lookup() -> None:
    """The server never asks an outside service for its own address."""
    net_util.get_external_ip = _no_external_ip  # type: ignore[assignment]


def harden() -> None:
    """Everything above, once per process."""
    keep_shared_caches()
    finite_widget_numbers()
    no_external_ip_lookup()
