"""User-controlled text made safe to show (pure: no streamlit).

``st.error``, ``st.warning``, ``st.markdown``, ``st.caption`` and ``st.toast`` render Markdown, and
Streamlit's Markdown has links, images (fetched by the viewer's browser), ``$...$`` LaTeX, ``:red[...]``
directives and raw HTML when ``unsafe_allow_html=True``. Anything that echoes user input (URL parameters,
file names, pasted configs and scripts, and the calculator's messages, which quote the offending value)
goes through :func:`md` before such an element, or :func:`html` inside the one HTML snippet that needs it.
"""

from __future__ import annotations

import html as _html
import re

MAX_ECHO_CHARS = 300  # a message quoting user input is cut here (a pasted key can be 2 MiB long)

# Characters that start Markdown / Streamlit constructs: links and images ([, ], !), inline HTML and
# autolinks (<, >), code spans, emphasis and strike-through (`, *, ~), LaTeX ($), tables (|),
# headings (#), Streamlit directives (:red[...] needs the bracket) and the escape character itself.
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>!$~|#])")
# GFM turns bare URLs and e-mail addresses (http://..., www...., a@b.c) into links, after escapes are
# resolved, so a backslash does not stop it; an invisible zero-width space inside the pattern does.
_AUTOLINK = re.compile(r"(?i)\b(?:https?|ftp|mailto|xmpp)(?=:)|\bwww(?=\.)|(?<=\w)(?=@)")
ZERO_WIDTH_SPACE = "\u200b"


def clip(text: object, limit: int = MAX_ECHO_CHARS) -> str:
    """``str(text)`` on one line, cut to ``limit`` characters with an ellipsis."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def md(text: object, limit: int = MAX_ECHO_CHARS) -> str:
    """Text shown literally by a Markdown element: one line, clipped, every construct escaped.

    Dots, underscores, parentheses and colons stay as they are, so ``hardware.num_gpus (12)`` reads
    (and searches) the same; ``[x](http://...)`` can no longer become a link or an image, nor a bare URL
    a link (a zero-width space follows ``http``, ``www`` and precedes ``@``).
    """
    s = _MD_SPECIAL.sub(r"\\\1", clip(text, limit))
    return _AUTOLINK.sub(lambda m: m[0] + ZERO_WIDTH_SPACE, s)


def md_lines(items: list[str], limit: int = MAX_ECHO_CHARS) -> str:
    """A Markdown bullet list of user-controlled lines, each escaped by :func:`md`."""
    return "\n".join(f"- {md(item, limit)}" for item in items)


def html(text: object, limit: int = MAX_ECHO_CHARS) -> str:
    """Text inside a one-line HTML block (``<div ...>{here}</div>``) rendered with ``unsafe_allow_html=True``:
    clipped and entity-escaped. Markdown is not parsed inside an HTML block, so nothing else is needed."""
    return _html.escape(clip(text, limit), quote=False)


MAX_FORMULA_CHARS = 2000  # a formula quotes the model's name at most; anything longer is cut


def code_span(text: object, limit: int = MAX_FORMULA_CHARS) -> str:
    """``text`` as one inline code span, shown literally whatever it holds: the delimiter is one backtick longer
    than the longest run of backticks in the text (CommonMark 6.1: a span closes only on a run of the same length),
    and the padding space, which CommonMark strips, keeps a leading or trailing backtick off the delimiter. Inside a
    code span nothing is Markdown: no link, emphasis, LaTeX or directive. Unlike ``st.code`` the span wraps with the
    line, so many formulas fit one Markdown element (issue #18: an element costs the server ~0.25 ms a rerun)."""
    s = clip(text, limit) or "—"
    ticks = "`" * (max(map(len, re.findall(r"`+", s)), default=0) + 1)
    pad = " " if s[0] == "`" or s[-1] == "`" else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


def formula_list(items: list[tuple[str, str, str]]) -> str:
    """One Markdown bullet per ``(title, formula, note)``: the title in bold and the note escaped (:func:`md`), the
    formula as a code span on the next line (:func:`code_span`); an empty note is left out."""
    lines = []
    for title, formula, note in items:
        head = f"- **{md(title)}**" + (f" — {md(note, limit=600)}" if note else "")
        lines.append(f"{head}  \n  {code_span(formula)}")
    return "\n".join(lines)
