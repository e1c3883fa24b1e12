"""A raw Streamlit websocket client for hostile-client tests: it speaks the browser's protocol
(``BackMsg`` / ``ForwardMsg`` protobufs on ``/_stcore/stream``) and can send widget values no widget would
offer (a path in a select box, NaN in an integer input) or messages no page would send (``clear_cache``).

One ``Session`` is one browser tab: ``run()`` sends a rerun with the given widget values and returns the
elements of the page once the script finished. Widgets are addressed by their user key; their ids (and so
their wire format) are learnt from the page itself.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

RUN_TIMEOUT_S = 60.0  # one script run of the app takes well under a second on an idle core


@dataclass
class Page:
    """What one script run sent: every element (type name, proto) and the widget ids by user key."""

    elements: list[tuple[str, Any]] = field(default_factory=list)
    widget_ids: dict[str, str] = field(default_factory=dict)
    status: str = ""
    favicon: str = ""  # page_config_changed: what the browser is told to show as the tab icon
    downloads: dict[str, str] = field(default_factory=dict)  # download button key -> deferred file id

    def texts(self, *types: str) -> list[str]:
        """Body text of the elements of the given types (markdown, alert, exception...)."""
        out = []
        for name, el in self.elements:
            if types and name not in types:
                continue
            for attr in ("body", "message", "value"):
                value = getattr(el, attr, None)
                if isinstance(value, str) and value:
                    out.append(value)
        return out

    def exceptions(self) -> list[str]:
        return [f"{el.type}: {el.message}" for name, el in self.elements if name == "exception"]

    def alerts(self) -> list[str]:
        return self.texts("alert")


def _key_of(widget_id: str) -> str | None:
    # "$$ID-<hash>-<user key>" (a keyed widget) or "$$ID-<hash>-None" (no key)
    parts = widget_id.split("-", 2)
    return parts[2] if len(parts) == 3 and parts[2] != "None" else None


class Session:
    """One websocket session with the app. Use as ``async with Session(url) as s: page = await s.run()``."""

    def __init__(
        self,
        base_url: str,
        query_string: str = "",
        page_name: str = "",
        origin: str | None = None,
        cookie: str | None = None,
    ) -> None:
        self.ws_url = base_url.replace("http://", "ws://").rstrip("/") + "/_stcore/stream"
        self.origin = origin
        self.cookie = cookie  # e.g. the sticky proxy's "rlplan_replica=..." (deploy/nginx.conf.template)
        self.query_string = query_string
        self.page_name = page_name
        self.widget_ids: dict[str, str] = {}
        self.session_id = ""
        self._states: dict[str, WidgetState] = {}  # every value sent so far: a browser resends them all
        self._ws: Any = None

    async def __aenter__(self) -> Session:
        headers = {"Origin": self.origin} if self.origin else {}
        if self.cookie:
            headers["Cookie"] = self.cookie
        self._ws = await websockets.connect(
            self.ws_url, subprotocols=["streamlit"], max_size=2**26, additional_headers=headers or None
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._ws.close()

    async def send(self, msg: BackMsg) -> None:
        await self._ws.send(msg.SerializeToString())

    async def clear_cache(self) -> None:
        msg = BackMsg()
        msg.clear_cache = True
        await self.send(msg)

    async def run(self, states: list[WidgetState] | None = None, page_name: str | None = None) -> Page:
        """Rerun the script with ``states`` (see :func:`state`) added to the ones sent before (as a browser
        does), and collect the page until the script finishes."""
        for st in states or []:
            self._states[st.id] = st
        msg = BackMsg()
        rerun = msg.rerun_script
        rerun.query_string = self.query_string
        rerun.page_name = self.page_name if page_name is None else page_name
        for st in self._states.values():
            rerun.widget_states.widgets.append(st)
        await self.send(msg)
        return await asyncio.wait_for(self._collect(), RUN_TIMEOUT_S)

    async def _collect(self) -> Page:
        page = Page()
        while True:
            fwd = ForwardMsg()
            fwd.ParseFromString(await self._ws.recv())
            kind = fwd.WhichOneof("type")
            if kind == "new_session":
                self.session_id = fwd.new_session.initialize.session_id or self.session_id
            elif kind == "page_config_changed":
                page.favicon = fwd.page_config_changed.favicon or page.favicon
            elif kind == "delta" and fwd.delta.WhichOneof("type") == "add_block":
                block = fwd.delta.add_block
                if block.WhichOneof("type") == "expandable" and block.expandable.id.startswith("$$ID-"):
                    key = _key_of(block.expandable.id)  # a keyed expander is a widget (open: bool)
                    if key:
                        page.widget_ids[key] = self.widget_ids[key] = block.expandable.id
            elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                el = fwd.delta.new_element
                name = el.WhichOneof("type")
                proto = getattr(el, name)
                page.elements.append((name, proto))
                wid = getattr(proto, "id", "")
                if isinstance(wid, str) and wid.startswith("$$ID-"):
                    key = _key_of(wid)
                    if key:
                        page.widget_ids[key] = wid
                        self.widget_ids[key] = wid
                        if name == "download_button" and proto.deferred_file_id:
                            page.downloads[key] = proto.deferred_file_id
            elif kind == "script_finished":
                page.status = ForwardMsg.ScriptFinishedStatus.Name(fwd.script_finished)
                if page.status != "FINISHED_EARLY_FOR_RERUN":
                    return page
                page = Page()  # a rerun follows (st.rerun or a query-param change)

    async def deferred_file(self, file_id: str, request_id: str = "1") -> str:
        """Ask for a deferred download (what a click on a download button with a callable does); the URL of
        the generated file, or '' with the server's error."""
        msg = BackMsg()
        msg.backend_operation_request.request_id = request_id
        msg.backend_operation_request.session_id = self.session_id
        msg.backend_operation_request.deferred_file.file_id = file_id
        await self.send(msg)
        return await asyncio.wait_for(self._operation(request_id), RUN_TIMEOUT_S)

    async def install_skills(self, request_id: str = "2") -> str:
        """The "install skills" operation of Streamlit's in-app nudge; returns the server's error message."""
        msg = BackMsg()
        msg.backend_operation_request.request_id = request_id
        msg.backend_operation_request.session_id = self.session_id
        msg.backend_operation_request.install_skills.SetInParent()
        await self.send(msg)
        return await asyncio.wait_for(self._operation(request_id), RUN_TIMEOUT_S)

    async def _operation(self, request_id: str) -> str:
        while True:
            fwd = ForwardMsg()
            fwd.ParseFromString(await self._ws.recv())
            if fwd.WhichOneof("type") == "backend_operation_response":
                resp = fwd.backend_operation_response
                if resp.request_id == request_id:
                    return resp.deferred_file.url if resp.HasField("deferred_file") else f"error: {resp.error_msg}"

    def state(self, key: str, **value: Any) -> WidgetState:
        """A widget state for the widget with user key ``key``: ``string_value="..."``, ``double_value=...``,
        ``int_value=...``, ``bool_value=...``, ``string_array_value=[...]``, ``json_value=...``."""
        ws = WidgetState()
        ws.id = self.widget_ids[key]
        ((kind, v),) = value.items()
        if kind == "string_array_value":
            ws.string_array_value.data.extend(v)
        elif kind == "json_value":
            ws.json_value = json.dumps(v)
        else:
            setattr(ws, kind, v)
        return ws
