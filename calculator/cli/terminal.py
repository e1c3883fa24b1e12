"""Text for the terminal: what the CLI prints can quote user input (a model name from a config.json, a key
from a launch script, a team preset's GPU name), and a terminal obeys control characters inside it: ESC
starts ANSI / OSC sequences (clear the screen, set the window title, recolour or overwrite a line), CR moves
back to the start of the line, bidirectional overrides reorder what is shown. Every line the CLI prints goes
through :func:`terminal_text`; a user value set inside a line goes through :func:`one_line` as well, so that
it cannot start a line of its own (a fake "-> fits"). Printable text, including non-ASCII, is unchanged.
"""

from __future__ import annotations

import re
import sys
from typing import TextIO

# C0 controls but tab and newline, DEL, C1 controls (0x9b is a one-byte CSI), bidirectional embeddings,
# overrides and isolates, the line / paragraph separators, and the byte-order mark.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
_UNSAFE_OR_BREAK = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(text: object) -> str:
    """``str(text)`` with every control character shown as an escape (``\\x1b``, ``\\u202e``); tab and newline
    are kept (they are the CLI's own layout)."""
    return _UNSAFE.sub(_escape, str(text))


def one_line(text: object) -> str:
    """A user value inside a line: every control character escaped, newlines and tabs too."""
    return _UNSAFE_OR_BREAK.sub(_escape, str(text))


def out(text: object = "", *, end: str = "\n", file: TextIO | None = None) -> None:
    """``print`` for the CLI: the text escaped by :func:`terminal_text`."""
    print(terminal_text(text), end=end, file=file or sys.stdout)


def err(text: object) -> None:
    """One message line on stderr, escaped by :func:`one_line` (a message is always a single line)."""
    print(one_line(text), file=sys.stderr)
