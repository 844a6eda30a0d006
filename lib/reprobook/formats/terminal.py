"""Run data in a terminal as text, never as commands to the terminal: the one seam from what a run says to a line
the command line prints.

A run's strings (a machine description, a host's facts, a log line, a file name, an error a host sent) are
untrusted. Printed raw, ``\\e]52;c;…\\a`` writes the reader's clipboard, ``\\e[2J`` clears the screen, a carriage
return overwrites what the line said, a C1 control (``\\x9b``) starts an escape sequence on terminals that take
them, and a bidirectional override (U+202E) shows the text in another order than it has. `printable` makes each
of them visible instead:

- C0 controls and DEL as their Unicode symbols (U+2400 and on: ``␛``, ``␇``, ``␍``), as the book's pages show them;
- every other character Python does not call printable (C1 controls, format characters such as the bidi
  overrides, line and paragraph separators, lone surrogates, unassigned code points) as a Python escape
  (``\\x9b``, ``\\u202e``);
- tab and the ordinary spaces as they are; line feeds as ``␊`` unless ``lines=True`` keeps them.

Examples
--------
>>> printable("Ubuntu\\x1b]52;c;aGk=\\x07 20.04")
'Ubuntu␛]52;c;aGk=␇ 20.04'
>>> printable("a\\x9b2Jb\\u202e")
'a\\\\x9b2Jb\\\\u202e'
"""

from __future__ import annotations

import unicodedata
from typing import Any

__all__ = ["printable"]


def _shown(ch: str) -> str:
    o = ord(ch)
    if o < 0x20:
        return chr(0x2400 + o)
    if o == 0x7F:
        return "\u2421"
    if unicodedata.category(ch) == "Zs":   # a space of another width: harmless
        return ch
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def printable(value: Any, *, lines: bool = False) -> str:
    """``value`` as a string that a terminal shows as text: no control character or escape sequence survives.

    With ``lines=True`` line feeds are kept (a log excerpt of several lines); a carriage return is shown
    either way, so a line cannot overwrite itself.
    """
    s = str(value)
    if s.isprintable():
        return s
    return "".join(ch if ch.isprintable() or ch == "\t" or (lines and ch == "\n") else _shown(ch) for ch in s)
