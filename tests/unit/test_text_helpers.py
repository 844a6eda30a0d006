"""The text helpers (`reprobook.book.text`) driven with arbitrary strings through the real MyST parser.

Each string goes through MyST's docutils parser with every syntax extension the site enables
and more (a helper that holds with these holds with fewer), then through docutils' HTML writer.
The rendered text must equal the input (as the helpers document it: whitespace runs as one
space, control characters as visible symbols), and nothing the input holds may become an
element, an attribute, a link, math, a role or a directive.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from docutils import nodes
from docutils.core import publish_doctree, publish_parts
from hypothesis import HealthCheck, example, given, settings, strategies as st

from reprobook.book.text import Markup, code, code_block, markdown_str, text, visible

pytest.importorskip("myst_parser")
from myst_parser.parsers.docutils_ import Parser  # noqa: E402

_EXTENSIONS = ["amsmath", "attrs_inline", "colon_fence", "deflist", "dollarmath", "fieldlist", "html_admonition",
               "html_image", "replacements", "smartquotes", "strikethrough", "substitution", "tasklist"]
_SETTINGS = {"myst_enable_extensions": _EXTENSIONS, "report_level": 5, "halt_level": 5, "warning_stream": False,
             "myst_substitutions": {"s": "SUBSTITUTED"}}

# pieces of Markdown, MyST and HTML that an attacker would try, mixed into arbitrary text
_HOSTILE = ["`", "``", "```", "~~~", ":::", "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "<!--",
            "[a](javascript:alert(1))", "![i](x.png)", "<https://evil.example>", "https://evil.example", "{raw}`html`",
            "```{raw} html\n<b>x</b>\n```", "$$", "$x$", "\\", "*", "_", "**", "#", "# ", "- ", "1. ", "> ", "|", "---",
            "===", "(target)=", "% ", "+++", "{{ s }}", "{#id}", "{.cls}", "&amp;", "&#60;", "&lt;", "\n", "\n\n",
            "    ", "\t", "\r", "\x00", "\x1b[31m", "\x7f", "~~", "[ ] ", "term\n: def", "(c)", "--", "\"", "'",
            ":field: x", "\u00a0", "\u2028", "\\(x\\)", "\\[", "[^1]", "[x]: /url"]
hostile = st.lists(st.one_of(st.sampled_from(_HOSTILE), st.text(max_size=12)), max_size=8).map("".join)
anything = st.one_of(st.text(max_size=60), hostile)


def _norm(s: str) -> str:
    """What the helpers promise to show: the visible text, whitespace runs as one space."""
    return re.sub(r"[ \t\n\r\f\v]+", " ", visible(s))


def _doctree(md: str) -> nodes.document:
    return publish_doctree(md, parser=Parser(), settings_overrides=_SETTINGS)


def _only(node: nodes.Node, allowed: tuple) -> None:
    for n in node.findall(include_self=False):
        assert isinstance(n, allowed), f"markup survived: {n.__class__.__name__} in {node.pformat()}"


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.seen: set[tuple[str, tuple]] = set()

    def handle_starttag(self, tag, attrs):
        self.seen.add((tag, tuple(sorted(k for k, _ in attrs))))


def _tags(md: str) -> set:
    body = publish_parts(md, parser=Parser(), writer_name="html5", settings_overrides=_SETTINGS)["body"]
    p = _Tags()
    p.feed(body)
    return p.seen


_QUICK = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_QUICK
@given(anything)
@example("x` <img src=x onerror=\"alert(document.domain)\"> `y")
@example("\n\n```{raw} html\n<script>alert(1)</script>\n```\n")
def test_text_renders_as_exactly_the_text(s):
    doc = _doctree("Value: " + text(s) + " (end)")
    paragraphs = list(doc.findall(nodes.paragraph))
    assert len(paragraphs) == 1 and len(doc.children) == 1, doc.pformat()
    _only(doc, (nodes.paragraph, nodes.Text))
    assert paragraphs[0].astext() == "Value: " + _norm(s) + " (end)"


@_QUICK
@given(anything)
def test_text_alone_starts_no_block(s):
    doc = _doctree(text(s))
    _only(doc, (nodes.paragraph, nodes.Text))
    assert doc.astext() == _norm(s).strip()  # a paragraph is trimmed (Unicode whitespace too)


@_QUICK
@given(anything)
@example("x` <img src=x onerror=alert(1)> `y")
@example("` a `")
@example("``")
def test_code_is_one_literal_span(s):
    md = code(s)
    if not _norm(s):
        assert md == ""
        return
    doc = _doctree("Compiler: " + md)
    literals = list(doc.findall(nodes.literal))
    assert len(literals) == 1, doc.pformat()
    _only(doc, (nodes.paragraph, nodes.literal, nodes.Text))
    assert literals[0].astext() == _norm(s)


@_QUICK
@given(anything)
@example("```\n<script>x</script>\n````")
def test_code_block_holds_every_line(s):
    doc = _doctree("Before.\n" + code_block(s, "text") + "After.\n")
    blocks = list(doc.findall(nodes.literal_block))
    assert len(blocks) == 1, doc.pformat()
    _only(doc, (nodes.paragraph, nodes.literal_block, nodes.inline, nodes.Text))
    expected = visible(s).replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")
    assert blocks[0].astext().rstrip("\n") == expected  # the highlighter may end the block with a line break
    assert [p.astext() for p in doc.findall(nodes.paragraph)] == ["Before.", "After."]


@settings(max_examples=60, deadline=None)
@given(anything, anything)
def test_html_has_no_element_or_attribute_from_the_input(a, b):
    md = markdown_str("**{}** — {}: {!c}", a, "fixed", b)
    benign = _tags(markdown_str("**{}** — {}: {!c}", "a", "fixed", "b"))
    assert _tags(md) <= benign | {("p", ())}


def test_markdown_fills_fields_as_text_and_keeps_markup():
    out = markdown_str("**{}**: {x:.2f} {y!c} {z}", "<b>", x=1.234, y="`", z=Markup("*ok*"))
    assert out == "**\\<b\\>**: 1\\.23 `` ` `` *ok*"
    assert isinstance(text("a"), Markup) and text(text("*")) == "\\*"


def test_code_block_refuses_a_language_that_is_not_a_name():
    with pytest.raises(ValueError, match="highlighting language"):
        code_block("x", "diff\n<script>")


PLAIN_CASES = ["claim, and 2 < 3: yet; (see) it's 1.5x", "# heading", "1. item", "3) item", "- item", "+ item",
               "* item", "---", "===", "> quote", "x` <img src=x onerror=\"alert(1)\"> `y", "<script>alert(1)</script>",
               "[click](javascript:alert(1))", "![i](https://evil.example/i.png)", "<https://evil.example/pwn>",
               "see https://evil.example/a and www.evil.example", "mail alice@evil.example", "**bold** _em_ ~~del~~",
               "| a | b |", "&lt;b&gt; &amp; & x", "C:\\path\\ and \\*", "$$x$$", "mem_gib snake_case_name", "256.0 GiB"]


@pytest.mark.parametrize("value", PLAIN_CASES)
def test_plain_renders_as_exactly_its_text_and_escapes_only_markup(value):
    """`plain` (the report's Markdown): rendered as GitHub-flavoured Markdown, the value comes out as its own text in
    one paragraph, with no element of its own; plain words carry no backslash."""
    import html
    import re

    from markdown_it import MarkdownIt

    from reprobook.book.text import plain
    out = MarkdownIt("gfm-like").render(plain(value))
    assert out.startswith("<p>") and out.endswith("</p>\n"), out
    inner = out[3:-5]
    assert "<" not in inner, out   # no element: every < of the value is &lt;
    assert html.unescape(inner) == value, out
    if value in ("claim, and 2 < 3: yet; (see) it's 1.5x", "mem_gib snake_case_name", "256.0 GiB"):
        assert "\\" not in plain(value), plain(value)   # plain words, plain text: issue 48's "claim\\, and"
