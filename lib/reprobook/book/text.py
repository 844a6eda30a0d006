"""Run data on a page as text, never as markup: the one seam from what a run says to what a page shows.

Everything a run produces is untrusted: output files, logs, manifests, machine descriptions,
parameter values, file names. A page is MyST Markdown (rendered to HTML), where a backtick
closes a code span, ``<img onerror=…>`` is raw HTML, ``{raw}`` is a role and ``$$`` starts
math. So no run-derived string is formatted into Markdown directly; it goes through one of
these helpers, which make it literal text whatever it holds:

- `text`: inline text, every ASCII punctuation character backslash-escaped (CommonMark lets
  any of them be escaped, and MyST's extensions are all introduced by ASCII punctuation), runs
  of whitespace (line breaks included) as one space, so that the value can never start a
  block (a heading, a list, a fence, a directive, a table row);
- `plain`: inline text for plain Markdown (a review form, GitHub), escaping only the characters CommonMark and
  GitHub's extensions could read as markup there, so that it also reads as text where it is pasted unrendered;
- `code`: an inline code span whose backtick fence is longer than any run of backticks in the
  value, so that nothing inside can close it;
- `code_block`: a fenced block (a diff, a log excerpt) whose fence no line of it can close;
- `markdown`: a template (trusted: written in the library or a notebook) whose ``{}`` fields
  are filled with values through `text` (or left as they are when already `Markup`, which the
  helpers return). Format specs (``{:.3g}``) apply before escaping.

Control characters (an ANSI colour code in a log, a NUL) are shown as their visible Unicode
symbols (U+2400 and on): they are not text a reader can see, and some are not allowed in HTML.
"""

from __future__ import annotations

import re
import string
from typing import Any

__all__ = ["Markup", "text", "plain", "code", "code_block", "markdown", "visible"]

_PUNCT = frozenset(string.punctuation)  # the ASCII punctuation CommonMark allows to be backslash-escaped
_SPACE = re.compile(r"[ \t\n\r\f\v]+")
_BACKTICKS = re.compile(r"`+")
_FENCE_RUN = re.compile(r"`{3,}|~{3,}")


class Markup(str):
    """A string that is already safe Markdown (made by these helpers or written in the library): not escaped again."""

    __slots__ = ()


def visible(value: Any) -> str:
    """``value`` as a string whose control characters are shown as symbols (U+2400…, U+2421 for DEL).

    Tab, line feed and carriage return are kept: they are whitespace, which the callers handle.
    A lone surrogate (not a character; invalid in HTML) becomes U+FFFD.
    """
    s = str(value)
    out = []
    for ch in s:
        o = ord(ch)
        if o < 0x20 and ch not in "\t\n\r":
            out.append(chr(0x2400 + o))
        elif o == 0x7F:
            out.append("\u2421")
        elif 0xD800 <= o <= 0xDFFF:
            out.append("\ufffd")
        else:
            out.append(ch)
    return "".join(out)


def text(value: Any) -> Markup:
    """``value`` as inline Markdown that renders as exactly its text (whitespace runs as one space).

    >>> print(text("x` <img src=x onerror=alert(1)> `y"))
    x\\` \\<img src\\=x onerror\\=alert\\(1\\)\\> \\`y
    """
    if isinstance(value, Markup):
        return value
    s = _SPACE.sub(" ", visible(value))
    return Markup("".join("\\" + ch if ch in _PUNCT else ch for ch in s))


_LEADING = re.compile(r"^(?:>|#{1,6}(?= |$)|[-+*](?= |$)|\d{1,9}[.)](?= |$)|[-=_*]+$)")
"""What would start a quote, a heading, a list item, or make a thematic break or a setext underline of a line."""
_ENTITY = re.compile(r"&(?=#?\w+;)")
_EMAIL_DOMAIN = re.compile(r"[\w-]+\.[\w-]")


def plain(value: Any) -> Markup:
    """``value`` as inline CommonMark (with GitHub's tables, strikethrough and autolinks) that renders as its text,
    and reads as text unrendered: only what could be markup there is backslash-escaped.

    That is: backslashes before punctuation, backticks, ``*``, ``~``, ``|``, ``[``, ``]`` and ``$`` everywhere; ``_``
    unless inside a word; ``<`` where a tag could start; ``&`` before an entity; ``:`` in ``://``, the dot of ``www.``
    and ``@`` before a dotted domain (autolinks); a first character that would start a block. Whitespace runs
    become one space. MyST pages, whose roles and directives need more, use `text`.

    >>> print(plain("claim, and 2 < 3: <b>see</b> [x](javascript:y) at https://evil.example, mem_gib *8*"))
    claim, and 2 < 3: \\<b>see\\</b> \\[x\\](javascript:y) at https\\://evil.example, mem_gib \\*8\\*
    """
    if isinstance(value, Markup):
        return value
    s = _SPACE.sub(" ", visible(value)).strip(" ")
    out = []
    for i, ch in enumerate(s):
        before, after = s[i - 1] if i else "", s[i + 1] if i + 1 < len(s) else ""
        if ch == "\\":
            esc = not after or after in _PUNCT
        elif ch in "`*~|[]$":
            esc = True
        elif ch == "<":   # a tag, comment or autolink starts with one of these after it
            esc = after.isalpha() or after in "/!?"
        elif ch == "@":   # an e-mail address (an autolink) has a dotted domain after it
            esc = bool(_EMAIL_DOMAIN.match(s, i + 1))
        elif ch == "_":
            esc = not (before.isalnum() and after.isalnum())
        elif ch == "&":
            esc = bool(_ENTITY.match(s, i))
        elif ch == ":":
            esc = s.startswith("//", i + 1)
        elif ch == ".":
            esc = s[max(0, i - 3):i].lower() == "www" and (i < 4 or not s[i - 4].isalnum())
        else:
            esc = False
        out.append("\\" + ch if esc else ch)
    m = _LEADING.match("".join(out))
    if m:   # escape the character that makes it a block marker (the last of a list number's)
        j = m.end() - 1
        out[j] = "\\" + out[j] if not out[j].startswith("\\") else out[j]
    return Markup("".join(out))


def code(value: Any) -> Markup:
    """``value`` as an inline code span, literal whatever it holds (line breaks as spaces, as in any code span).

    An empty value gives an empty string (a code span cannot be empty).
    """
    s = _SPACE.sub(" ", visible(value))
    if not s:
        return Markup("")
    longest = max((len(m) for m in _BACKTICKS.findall(s)), default=0)
    fence = "`" * (longest + 1)
    # CommonMark strips one space from each end when both ends have one; a backtick at an end
    # would join the fence: pad both ends then, and whenever the value itself has a space at both
    if s[0] == "`" or s[-1] == "`" or (s[0] == " " and s[-1] == " " and s.strip(" ")):
        s = f" {s} "
    return Markup(f"{fence}{s}{fence}")


def code_block(value: Any, lang: str = "") -> Markup:
    """``value`` as a fenced code block (``lang`` a highlighting name such as ``diff``), literal line by line.

    The fence is longer than any run of backticks or tildes in the value, so no line can close it.
    The block starts and ends on a line of its own.
    """
    if lang and not re.fullmatch(r"[A-Za-z0-9_+-]+", lang):
        raise ValueError(f"not a highlighting language name: {lang!r}")
    s = visible(value).replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")
    longest = max((len(m) for m in _FENCE_RUN.findall(s)), default=0)
    fence = "`" * max(3, longest + 1)
    return Markup(f"\n{fence}{lang}\n{s}\n{fence}\n")


class _Formatter(string.Formatter):
    def format_field(self, value: Any, format_spec: str) -> str:
        if isinstance(value, Markup) and not format_spec:
            return value
        return text(format(value, format_spec))

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion == "c":  # {x!c}: as inline code
            return code(value)
        return super().convert_field(value, conversion)


_FORMATTER = _Formatter()


def markdown(template: str, /, *args: Any, **kwargs: Any):
    """``template`` (trusted Markdown) with each field filled with a value as literal text; an IPython ``Markdown``.

    ``{x!c}`` shows the value as inline code. A value that is `Markup` (from `text`, `code`,
    `code_block` or `markdown_str`) goes in as it is.

    Examples
    --------
    >>> rb.markdown("**{}** — {}: {}", result.what, result.verdict, result.reason)
    >>> rb.markdown("Compiler of the measured run: {!c}", measured.attrs["toolchain"])
    """
    from IPython.display import Markdown
    return Markdown(markdown_str(template, *args, **kwargs))


def markdown_str(template: str, /, *args: Any, **kwargs: Any) -> Markup:
    """`markdown` as a string (`Markup`), to build a page's Markdown from several pieces."""
    return Markup(_FORMATTER.format(template, *args, **kwargs))
