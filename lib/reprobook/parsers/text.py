"""The text kit: lines, numbers, labelled numbers with units, and whitespace tables.

Every function that reads an output names the file and the 1-based line in the
:class:`~reprobook.errors.OutputError` it raises for malformed input. The other
format modules (`tables`, `jsonfmt`, `latex`, `gotest`) and the papers' parsers
build on these.

Examples
--------
>>> parse_number("3.5", file="out.txt", line=2)
3.5
>>> convert(1500, "ms", "s")
1.5
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Callable, Iterable, Mapping, NamedTuple

import pandas as pd

from ..errors import OutputError

MAX_COUNT = 2**31
"""Counts stay below this, so that they fit any integer column."""
NUMBER = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
"""A decimal number, as the regular expression the kit accepts (no ``nan``, no ``inf``)."""
TIMEOUT_TOKENS = frozenset({"inf", "+inf", "infinity", "timeout", "timed-out", "timedout", "to"})
"""Markers (compared case-insensitively) that stand for a run that did not finish in time."""
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0,
              "secs": 1.0, "second": 1.0, "seconds": 1.0, "min": 60.0, "mins": 60.0,
              "minute": 60.0, "minutes": 60.0, "h": 3600.0, "hour": 3600.0, "hours": 3600.0}
"""Time units and their length in seconds."""
LABELLED = re.compile(rf"\s*(?P<label>[^:]*?[^\s:])\s*:\s*(?P<value>{NUMBER}|[+-]?inf(?:inity)?"
                      rf"|timeout)(?:\s*(?P<unit>[A-Za-zµμ/%][\w/%.]*))?\s*", re.IGNORECASE)
"""``label: value [unit]``, e.g. ``Time Verified Mapping: 34.66 ns`` or ``Verus: 0.66 sec``."""

_NUMBER = re.compile(NUMBER)
_CLOCK = re.compile(r"(?:(?:([0-9]+):)?([0-9]+):)?([0-9]+(?:\.[0-9]*)?|\.[0-9]+)")


class LabelledNumber(NamedTuple):
    """One ``label: value unit`` line: ``value`` is NaN and ``timed_out`` True for ``inf``."""

    label: str
    value: float
    unit: str
    line: int
    timed_out: bool


def read_lines(path: str | Path) -> tuple[Path, list[str]]:
    """Read a text output as lines (UTF-8, an optional BOM, LF or CRLF line ends).

    Returns
    -------
    (Path, list of str)
        The path, and its lines without line ends; ``lines[i]`` is line ``i + 1``.

    Raises
    ------
    OutputError
        The file cannot be read, is not UTF-8 (naming the line), or holds only blanks.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except (OSError, ValueError) as exc:
        raise OutputError(f"cannot read the file ({exc}); check that the run finished and the "
                          "file was fetched", file=path) from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise OutputError("not UTF-8 text", file=path,
                          line=data.count(b"\n", 0, exc.start) + 1) from None
    lines = [line.rstrip("\r") for line in text.split("\n")]
    if not any(line.strip() for line in lines):
        raise OutputError("the file is empty; check that the run finished", file=path)
    return path, lines


def records(lines: Iterable[str]) -> list[tuple[int, str]]:
    """The non-blank lines, stripped, each with its 1-based line number."""
    return [(no, line.strip()) for no, line in enumerate(lines, start=1) if line.strip()]


def parse_number(text: str, *, file: str | Path, line: int | None = None,
                 field: str | None = None, positive: bool = False, signed: bool = False,
                 what: str = "") -> float:
    """A finite decimal number; non-negative unless ``signed``, non-zero if ``positive``.

    ``what`` names the value in the message (default: the text itself).
    """
    what = what or repr(text)
    if not _NUMBER.fullmatch(text):
        raise OutputError(f"{what} is not a number", file=file, line=line, field=field)
    value = float(text)
    if not math.isfinite(value) or (value < 0 and not signed) or (positive and value <= 0):
        need = "positive" if positive else "finite" if signed else "non-negative"
        raise OutputError(f"{what} must be a finite {need} number", file=file, line=line,
                          field=field)
    return value


def parse_numbers(items: list[str], *, file: str | Path, line: int, field: str) -> list[float]:
    """Non-negative numbers of one row, e.g. ``v1, v2, ...``; an empty row is an error."""
    if not items:
        raise OutputError("the row has no values", file=file, line=line, field=field)
    return [parse_number(item, file=file, line=line, field=field, what=f"value {i} ({item!r})")
            for i, item in enumerate(items, start=1)]


def parse_count(text: str, *, file: str | Path, line: int | None = None,
                field: str | None = None, minimum: int = 1) -> int:
    """An integer from ``minimum`` to ``MAX_COUNT - 1``, written in plain digits."""
    if not re.fullmatch(r"[0-9]+", text) or not minimum <= int(text) < MAX_COUNT:
        raise OutputError(f"{text!r} is not an integer from {minimum} to {MAX_COUNT - 1}",
                          file=file, line=line, field=field)
    return int(text)


def parse_measurement(text: str, *, file: str | Path, line: int | None = None,
                      field: str | None = None, timeouts: Iterable[str] = TIMEOUT_TOKENS,
                      signed: bool = False) -> tuple[float, bool]:
    """A number, or a timeout marker such as ``inf``.

    Returns
    -------
    (float, bool)
        ``(value, False)``, or ``(nan, True)`` for a marker in ``timeouts``.
    """
    if text.strip().casefold() in {token.casefold() for token in timeouts}:
        return math.nan, True
    return parse_number(text.strip(), file=file, line=line, field=field, signed=signed), False


def parse_clock(text: str, *, file: str | Path, line: int | None = None,
                field: str | None = None) -> float:
    """Seconds from a clock reading ``[[h:]m:]s[.frac]`` (GNU ``time``'s ``%E``: ``1:04.60``)."""
    match = _CLOCK.fullmatch(text.strip())
    if not match:
        raise OutputError(f"{text!r} is not a time such as '4.60', '1:04.60' or '1:02:03'",
                          file=file, line=line, field=field)
    hours, minutes, seconds = match.groups()
    return int(hours or 0) * 3600 + int(minutes or 0) * 60 + float(seconds)


def convert(value: float, unit: str, to: str = "s", *, file: str | Path = "<value>",
            line: int | None = None, field: str | None = None) -> float:
    """Convert a time from ``unit`` to ``to`` (ns, us/µs, ms, s/sec/secs, min, h).

    Examples
    --------
    >>> convert(1.5, "min", "s")
    90.0
    """
    for name in (unit, to):
        if name not in TIME_UNITS:
            raise OutputError(f"unknown time unit {name!r}; expected one of "
                              f"{', '.join(TIME_UNITS)}", file=file, line=line, field=field)
    if unit == to:
        return float(value)
    return value * TIME_UNITS[unit] / TIME_UNITS[to]


def labelled_numbers(lines: list[str], *, file: str | Path, pattern: re.Pattern = LABELLED,
                     strict: bool = False, units: Iterable[str] | None = None,
                     signed: bool = False) -> list[LabelledNumber]:
    """Find lines ``label: value unit`` among other output.

    Parameters
    ----------
    lines : list of str
        From :func:`read_lines`.
    file : path
        Named by errors.
    pattern : compiled regex
        Matched in full against each line; named groups ``label``, ``value`` and
        (optional) ``unit``. The default is :data:`LABELLED`.
    strict : bool
        If true, every non-blank line must match (a file of nothing but such lines).
    units : iterable of str, optional
        The units allowed; a line with another (or none) is an error.

    Returns
    -------
    list of LabelledNumber
        In file order; ``inf``/timeout values come back as NaN with ``timed_out`` set.

    Examples
    --------
    >>> labelled_numbers(["Verus: 0.66 sec", "noise", "Dafny: inf sec"], file="x")[1]
    LabelledNumber(label='Dafny', value=nan, unit='sec', line=3, timed_out=True)
    """
    allowed = None if units is None else set(units)
    found = []
    for no, text in enumerate(lines, start=1):
        match = pattern.fullmatch(text)
        if not match:
            if strict and text.strip():
                raise OutputError(f"expected a line 'label: value unit', found {text.strip()!r}",
                                  file=file, line=no)
            continue
        label = match.group("label").strip()
        unit = (match.groupdict().get("unit") or "").strip()
        if allowed is not None and unit not in allowed:
            raise OutputError(f"unit {unit or '(none)'!r} is not one of {sorted(allowed)}",
                              file=file, line=no, field=label)
        value, timed_out = parse_measurement(match.group("value"), file=file, line=no,
                                             field=label, signed=signed)
        found.append(LabelledNumber(label, value, unit, no, timed_out))
    return found


def header_columns(header: str) -> list[tuple[str, int]]:
    """The names of a whitespace-separated header line and the offset where each starts."""
    return [(match.group(), match.start()) for match in re.finditer(r"\S+", header)]


def rule_positions(rule: str) -> list[int]:
    """Column start offsets from a rule line such as ``--------- ---- ----``."""
    return [match.start() for match in re.finditer(r"[-=]+", rule)]


def split_fields(text: str, *, positions: list[int] | None = None) -> list[str]:
    """Split a row at whitespace, or at fixed ``positions`` (column start offsets)."""
    if positions is None:
        return text.split()
    bounds = [0, *positions[1:], None]
    return [text[start:end].strip() for start, end in zip(bounds, bounds[1:])]


def read_table(lines: list[str], *, file: str | Path, header_line: int,
               columns: list[str] | None = None, by_position: bool = False,
               positions: list[int] | None = None, comment: str | None = None,
               converters: Mapping[str, Callable] | None = None,
               tokens: Mapping[str, Iterable[str]] | None = None) -> pd.DataFrame:
    """Read a whitespace (or fixed-width) table: a header line, then rows up to a blank line.

    Parameters
    ----------
    lines : list of str
        The whole output, from :func:`read_lines`.
    header_line : int
        The 1-based line number of the header (or of the ``----`` rule under a
        multi-line header, with ``columns`` naming the columns).
    columns : list of str, optional
        Names to use instead of the header's words (same count).
    by_position : bool
        Split rows at the header words' (or rule dashes') offsets, not at whitespace.
    positions : list of int, optional
        Explicit column start offsets (implies splitting by position).
    comment : str, optional
        Rows starting with this (after indentation) are skipped.
    converters : mapping, optional
        Column -> ``f(text, file=, line=, field=)`` returning the cell's value; by
        default cells stay strings.
    tokens : mapping, optional
        Column -> words (such as ``fail``) allowed in place of a value: the cell
        becomes NaN and the word goes to an added column ``<column>_token``
        (``""`` where the value was read).

    Returns
    -------
    DataFrame
        One row per table row, the columns, then ``line``.

    Examples
    --------
    >>> read_table(["bench  mi   vmi", "cfrac  4.6  fail"], file="log", header_line=1,
    ...            tokens={"vmi": ["fail"]}).values.tolist()
    [['cfrac', '4.6', nan, 'fail', 2]]
    """
    if not 1 <= header_line <= len(lines):
        raise OutputError(f"no header at line {header_line}", file=file, line=header_line)
    header = header_columns(lines[header_line - 1])
    names = list(columns) if columns is not None else [name for name, _ in header]
    if positions is None and by_position:
        positions = [start for _, start in header]
    width = len(positions) if positions is not None else len(header)
    if len(names) != width:
        raise OutputError(f"the header has {width} columns, expected {len(names)} "
                          f"({', '.join(names)})", file=file, line=header_line)
    converters, tokens = dict(converters or {}), {k: set(v) for k, v in (tokens or {}).items()}
    rows = []
    for no in range(header_line + 1, len(lines) + 1):
        text = lines[no - 1]
        if not text.strip():
            break
        if comment and text.lstrip().startswith(comment):
            continue
        cells = split_fields(text, positions=positions)
        if len(cells) != len(names):
            raise OutputError(f"expected {len(names)} columns ({', '.join(names)}), found "
                              f"{len(cells)}", file=file, line=no)
        row = {}
        for name, cell in zip(names, cells):
            if name in tokens:
                row[f"{name}_token"] = cell if cell in tokens[name] else ""
                if cell in tokens[name]:
                    row[name] = math.nan
                    continue
            row[name] = converters[name](cell, file=file, line=no, field=name) \
                if name in converters else cell
        rows.append({**row, "line": no})
    order = []
    for name in names:
        order += [name, f"{name}_token"] if name in tokens else [name]
    return pd.DataFrame(rows, columns=[*order, "line"])


def read_pdf_lines(path: str | Path) -> tuple[Path, list[str]]:
    """The text of a PDF (all pages, in reading order) as lines, for the rest of the kit.

    Line numbers in later errors count lines of this extracted text.
    """
    path = Path(path)
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError as exc:  # pragma: no cover - pypdf is a dependency
        raise OutputError("reading a PDF needs the pypdf package", file=path) from exc
    try:
        reader = PdfReader(path)
        text = "\n".join(page.extract_text() or "" for page in reader.pages)
    except (OSError, ValueError, PyPdfError) as exc:
        raise OutputError(f"cannot read the PDF ({exc})", file=path) from exc
    lines = text.split("\n")
    if not any(line.strip() for line in lines):
        raise OutputError("the PDF holds no text", file=path)
    return path, lines
