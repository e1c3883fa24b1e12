"""Splitting shell text: a script into logical lines (``_logical_lines``), an expanded line into words
(``split_words``: ``shlex.split(s, comments=True)`` in POSIX mode, in one pass), matching brackets (``_pairs``).

``shlex`` builds each token one character at a time (``self.token += ch`` on an attribute: quadratic for a
long token, 88 s for one 2 MiB word); :func:`split_words` builds words from slices, in linear time, with the
same results (``tests/security`` compares both on random text).
"""

from __future__ import annotations

import re

_BLANK = re.compile(r"[ \t\r\n]*")
_WORD_PLAIN = re.compile(r"[^ \t\r\n#'\"\\]+")
_DQ_BODY = re.compile(r'[^"\\]*')


def _double_quoted(s: str, i: int, parts: list[str]) -> int:
    """The body of a ``"..."`` starting after its quote at ``i``; the index after the closing quote."""
    n = len(s)
    while True:
        m = _DQ_BODY.match(s, i)
        parts.append(m.group())
        i = m.end()
        if i >= n:
            raise ValueError("No closing quotation")
        if s[i] == '"':
            return i + 1
        if i + 1 >= n:
            raise ValueError("No escaped character")
        if s[i + 1] not in '\\"':  # inside double quotes only \\ and \" are escapes
            parts.append("\\")
        parts.append(s[i + 1])
        i += 2


def _word(s: str, i: int) -> tuple[str, int]:
    """One word starting at ``i`` (not blank, not ``#``): its text and the index after it."""
    n = len(s)
    parts: list[str] = []
    while i < n:
        c = s[i]
        if c in " \t\r\n":
            return "".join(parts), i + 1
        if c == "#":  # as shlex: a comment starts even inside a word
            j = s.find("\n", i)
            return "".join(parts), n if j < 0 else j + 1
        if c == "'":
            j = s.find("'", i + 1)
            if j < 0:
                raise ValueError("No closing quotation")
            parts.append(s[i + 1 : j])
            i = j + 1
        elif c == '"':
            i = _double_quoted(s, i + 1, parts)
        elif c == "\\":
            if i + 1 >= n:
                raise ValueError("No escaped character")
            parts.append(s[i + 1])
            i += 2
        else:
            m = _WORD_PLAIN.match(s, i)
            parts.append(m.group())  # type: ignore[union-attr]
            i = m.end()  # type: ignore[union-attr]
    return "".join(parts), n


def split_words(s: str) -> list[str]:
    """``shlex.split(s, comments=True)`` (POSIX mode) in one linear pass: quotes removed, backslash escapes,
    ``#`` starts a comment, ValueError for an unclosed quote or a trailing backslash. ``shlex`` builds each
    token one character at a time (quadratic for a long token); this builds it from slices."""
    words: list[str] = []
    i, n = 0, len(s)
    while True:
        i = _BLANK.match(s, i).end()  # type: ignore[union-attr]
        if i >= n:
            return words
        if s[i] == "#":
            j = s.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        word, i = _word(s, i)
        words.append(word)


def _pairs(text: str, open_: str, close: str) -> dict[int, int]:
    """For each ``open_`` bracket of ``text``, the index of the one closing it (nesting-aware, brackets of
    this kind only); unclosed ones are absent. One pass: O(len(text))."""
    out: dict[int, int] = {}
    stack: list[int] = []
    for m in re.finditer(f"[{re.escape(open_ + close)}]", text):
        if m.group() == open_:
            stack.append(m.start())
        elif stack:
            out[stack.pop()] = m.start()
    return out


_QUOTE_SCAN = re.compile(r"""\\.|'|"|(?:^|(?<=[ \t]))#""", re.S)
_DQ_SCAN = re.compile(r'\\.|"', re.S)


def _open_quote(line: str, quote: str) -> str:
    """The quote (``'``, ``"`` or "") still open at the end of ``line`` when it starts inside ``quote``.
    Outside quotes a ``#`` that starts a word begins a comment; a backslash escapes (not inside ``'``). One
    pass over the line."""
    i = 0
    while True:
        if quote == "'":
            j = line.find("'", i)
            if j < 0:
                return quote
            quote, i = "", j + 1
            continue
        m = (_QUOTE_SCAN if quote == "" else _DQ_SCAN).search(line, i)
        if m is None:
            return quote
        tok, i = m.group(), m.end()
        if tok.startswith("\\"):
            continue
        if tok == "#":
            return quote
        quote = "" if quote else tok


_HEREDOC = re.compile(r"""(?<!<)<<-?\s*(['"]?)([A-Za-z_]\w*)\1(?!\S)""")  # `cat > f.py << EOF` (not <<<)


def _logical_lines(text: str) -> list[str]:
    """Lines as bash reads them: backslash-newline joins, and a quoted string spanning lines (``A="\n k=v\n"``)
    is one line with its newlines kept (word splitting turns them into blanks). A quote never closed keeps
    its lines apart, as they were. The body of a here-document (``cat > get_model.py << EOF`` ... ``EOF``) is left
    out: its lines are a file's text, not commands."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    out: list[str] = []
    pending: list[str] = []
    quote = ""
    heredoc: str | None = None  # the delimiter of the here-document being skipped
    for line in re.sub(r"\\\n", " ", text).split("\n"):
        if heredoc is not None:  # a here-document's body is data for a command (a Python file), not script
            heredoc = None if line.strip() == heredoc else heredoc
            continue
        m = _HEREDOC.search(line) if not quote else None
        if m:
            heredoc = m.group(2)
        quote = _open_quote(line, quote)
        pending.append(line)
        if not quote:
            out.append("\n".join(pending))
            pending = []
    return out + pending


_QUOTE_PART = re.compile(r"""'(?P<sq>[^']*)'?|"(?P<dq>(?:[^"\\]|\\.)*)"?|\\(?P<esc>.)|(?P<plain>[^'"\\]+|\\$)""", re.S)


def remove_quotes(s: str) -> str:
    """Bash's quote removal on one word that is not split (the ``word`` of ``${VAR:-word}``): quotes go,
    what they enclose stays, a backslash keeps the character it escapes. ``"${HOME}/m"`` -> ``${HOME}/m``."""
    parts: list[str] = []
    for m in _QUOTE_PART.finditer(s):
        if m.group("dq") is not None:
            parts.append(re.sub(r'\\(["\\$`])', r"\1", m.group("dq")))
        else:
            parts.append(next(g for g in (m.group("sq"), m.group("esc"), m.group("plain")) if g is not None))
    return "".join(parts)
