"""ui/text.py: user-controlled text shown literally. Code spans and formula lists are parsed with a CommonMark
parser (markdown-it-py, the reference grammar Streamlit's remark follows for code spans) to check what renders."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from ui.text import MAX_FORMULA_CHARS, code_span, formula_list

PARSER = MarkdownIt("commonmark")


def inline_tokens(markdown: str) -> list:
    """The inline children of every paragraph / list item, in order."""
    return [child for tok in PARSER.parse(markdown) if tok.type == "inline" for child in tok.children or []]


@pytest.mark.parametrize(
    "text",
    [
        "7.616e9 x 4 B / 8 = 3.55 GiB",
        "`",
        "a ``b`` c",
        "ends with a tick `",
        "[x](http://evil.example/a.png) ![i](http://evil.example/i.png) <b>bold</b> $x$ :red[y] **z**",
        "```\nfenced\n```",
    ],
)
def test_code_span_is_one_literal_code_token(text: str) -> None:
    tokens = inline_tokens(code_span(text))
    assert [t.type for t in tokens] == ["code_inline"]
    assert tokens[0].content == " ".join(text.split())  # one line, exactly the text


@given(st.text(alphabet="`ab *[]()<>$:!\\_~|#\n", min_size=1, max_size=40).filter(str.strip))
def test_code_span_shows_any_text_literally(text: str) -> None:
    tokens = inline_tokens(code_span(text))
    assert [t.type for t in tokens] == ["code_inline"]
    assert tokens[0].content == " ".join(text.split())


def test_code_span_of_nothing_is_a_dash_and_long_text_is_cut() -> None:
    assert inline_tokens(code_span(""))[0].content == "—"
    long = code_span("x" * (MAX_FORMULA_CHARS + 50))
    assert len(inline_tokens(long)[0].content) == MAX_FORMULA_CHARS


def test_formula_list_has_one_item_per_formula_with_the_formula_as_code() -> None:
    items = [
        ("actor_params — 3.55 GiB", "7.616e9 x 4 / 8", "The actor's master *parameters*."),
        ("kv_cache", "[link](http://x.example) `tick`", ""),
    ]
    markdown = formula_list(items)
    tokens = PARSER.parse(markdown)
    assert sum(t.type == "list_item_open" for t in tokens) == 2
    inline = inline_tokens(markdown)
    assert [t.content for t in inline if t.type == "code_inline"] == [
        "7.616e9 x 4 / 8",
        "[link](http://x.example) `tick`",
    ]
    assert not any(t.type in ("link_open", "image", "html_inline", "em_open") for t in inline)  # the note is escaped
    assert "The actor's master \\*parameters\\*." in markdown
