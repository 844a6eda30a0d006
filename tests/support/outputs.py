"""Asserting that a parser's error names the file, the line and the field."""

from __future__ import annotations

import pytest

from reprobook.errors import OutputError


def raises_at(call, path, line, field=None, match=None) -> OutputError:
    """``call()`` raises an `OutputError` naming ``path``, ``line`` (and ``field``); return it."""
    with pytest.raises(OutputError, match=match) as info:
        call()
    assert str(path) in str(info.value)
    assert info.value.line == line
    if line is not None:
        assert f"line {line}" in str(info.value)
    if field is not None:
        assert info.value.field == field
    return info.value
