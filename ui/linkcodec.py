"""Text that travels in a share link (a comparison, a pasted launch script): compressed, URL-safe, bounded.

A link parameter is user input like any other (docs/security.md): :func:`unpack` refuses anything that is not
``v1.`` + URL-safe base64 of a zlib stream, inflates at most ``MAX_LINK_TEXT_BYTES`` (a zip bomb stops there, it
is never inflated whole), and returns text only. What the link carries is data for the same widgets a user types
into (never a path, never markup): the page puts it in those widgets and every widget value is then checked by
``ui.widget_rules`` before it is read. :func:`pack` returns ``None`` when the packed text would make the link
longer than ``MAX_LINK_PARAM_CHARS`` (proxies and browsers cut URLs near 8 KB; the page then says to share the
file instead).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from typing import Any

PREFIX = "v1."
MAX_LINK_PARAM_CHARS = 6 * 1024  # one packed parameter; the rest of a link takes well under 1 KiB
MAX_LINK_TEXT_BYTES = 64 * 1024  # inflated size accepted from a link (more than any packed parameter can hold)
_ALPHABET = re.compile(r"[A-Za-z0-9_-]*")


def pack_text(text: str) -> str | None:
    """``text`` as one URL-safe parameter value, or None if it would be longer than ``MAX_LINK_PARAM_CHARS``."""
    raw = zlib.compress(text.encode("utf-8"), level=9)
    code = PREFIX + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
    return code if len(code) <= MAX_LINK_PARAM_CHARS else None


def unpack_text(code: object) -> str | None:
    """The text :func:`pack_text` packed, or None for anything else (wrong prefix or alphabet, too long, not
    zlib, more than ``MAX_LINK_TEXT_BYTES`` inflated, not UTF-8)."""
    if not isinstance(code, str) or not code.startswith(PREFIX) or len(code) > MAX_LINK_PARAM_CHARS:
        return None
    body = code[len(PREFIX) :]
    if not _ALPHABET.fullmatch(body):
        return None
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        inflater = zlib.decompressobj()
        data = inflater.decompress(raw, MAX_LINK_TEXT_BYTES)
        if inflater.unconsumed_tail or not inflater.eof:
            return None  # larger than the bound, or truncated
        return data.decode("utf-8")
    except (binascii.Error, zlib.error, UnicodeDecodeError, ValueError):
        return None


def pack(obj: Any) -> str | None:
    """A JSON-able value packed like :func:`pack_text`."""
    return pack_text(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))


def unpack(code: object) -> Any:
    """The value :func:`pack` packed, or None."""
    text = unpack_text(code)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None
