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

import functools
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, NamedTuple

from reprobook.errors import OutputError
from reprobook.lazy import lazy

pd = lazy("pandas")

if TYPE_CHECKING:
    import numpy as np

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


_SOLID = re.compile(rb"[^ \t\n\r\x0b\x0c\x1c-\x1f]")


def read_bytes(path: str | Path) -> tuple[Path, bytes]:
    """Read an output whole, checked as :func:`read_lines` checks it (UTF-8, not blank); without a BOM.

    For the readers that hand the bytes to a C parser (pandas, ``json``) and number
    lines with a `LineIndex`.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except (OSError, ValueError) as exc:
        raise OutputError(f"cannot read the file ({exc}); check that the run finished and the "
                          "file was fetched", file=path) from exc
    if not data.isascii():  # ASCII is UTF-8: only other bytes need decoding to be checked
        try:
            decoded = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise OutputError("not UTF-8 text", file=path,
                              line=data.count(b"\n", 0, exc.start) + 1) from None
        if data.startswith(b"\xef\xbb\xbf"):
            data, decoded = data[3:], decoded[1:]
        empty = not decoded.strip()
    else:
        empty = _SOLID.search(data) is None
    if empty:
        raise OutputError("the file is empty; check that the run finished", file=path)
    return path, data


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
    path, data = read_bytes(path)
    return path, split_lines(data)


def split_lines(data: bytes) -> list[str]:
    """The lines of :func:`read_bytes`' bytes, as :func:`read_lines` gives them (decoded, no line ends)."""
    text = data.decode("utf-8")
    lines = text.split("\n")
    if "\r" in text:
        lines = [line.rstrip("\r") for line in lines]
    return lines


_BLANKS_TO_SPACE = bytes.maketrans(b"\t\r\x0b\x0c", b"    ")
@functools.cache
def _blank_table():
    """Byte -> whether it is a blank (space, tab, CR, VT, FF); made at first use, numpy with it."""
    import numpy as np
    table = np.zeros(256, dtype=bool)
    table[[32, 9, 13, 11, 12]] = True
    return table


class LineIndex:
    """Where the lines of a file's bytes start and end, and which hold more than blanks.

    Computed with numpy over the bytes (no Python loop over lines), so that a reader
    which parses a file with a C parser can still name the 1-based line of every row.

    Attributes
    ----------
    starts, ends : ndarray
        Offset of each line's first byte and of its end (the ``\\n`` or the end of data).
    blank : ndarray of bool
        Lines holding nothing but spaces and tabs (or nothing).
    """

    def __init__(self, data: bytes):
        import numpy as np
        arr = np.frombuffer(data, dtype=np.uint8)
        self.data, self.array = data, arr
        newlines = np.flatnonzero(arr == 10)
        self.ends = np.append(newlines, len(data))
        self.starts = np.concatenate(([0], newlines + 1))
        self._blank = None
        self._blanks = None

    @property
    def blanks(self):
        """Offsets of every blank byte (space, tab, CR, VT, FF)."""
        import numpy as np
        if self._blanks is None:  # every blank byte made a space, in one C pass over the bytes
            self._blanks = np.flatnonzero(np.frombuffer(self.data.translate(_BLANKS_TO_SPACE), dtype=np.uint8) == 32)
        return self._blanks

    @property
    def blank(self):
        if self._blank is None:
            import numpy as np
            arr = self.array
            empty = self.ends == self.starts
            first = arr[np.minimum(self.starts, max(len(arr) - 1, 0))] if len(arr) else np.zeros(0, np.uint8)
            maybe = ~empty & _blank_table()[first]  # a line of blanks starts with one
            self._blank = empty
            if maybe.any():
                self._blank = empty | (maybe & ((self.ends - self.starts) - self._per_line(self.blanks) == 0))
        return self._blank

    def _per_line(self, offsets):
        """How many of the (sorted) ``offsets`` fall on each line."""
        import numpy as np
        return np.searchsorted(offsets, self.ends) - np.searchsorted(offsets, self.starts)

    def numbers(self, mask=None):
        """1-based numbers of the lines where ``mask`` (default: not blank) holds."""
        import numpy as np
        return np.flatnonzero(~self.blank if mask is None else mask) + 1

    def count(self, byte: int):
        """How many times ``byte`` occurs on each line."""
        import numpy as np
        return self._per_line(np.flatnonzero(self.array == byte))

    def line_of(self, offsets):
        """1-based line numbers of byte offsets."""
        import numpy as np
        return np.searchsorted(self.ends, offsets, side="left") + 1


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


_NOT_NUMBER_CHARS = re.compile(r"[^0-9.eE+\-]")


def parse_number_list(items: list[str], *, file: str | Path, line: int, field: str):
    """:func:`parse_numbers` for a long row: the same values, as a float array, converted in one go.

    Items made only of digits, ``.``, ``e``/``E`` and signs are converted by numpy; within
    that alphabet Python's ``float`` accepts exactly :data:`NUMBER`. Anything else, and any
    value that does not convert or is negative, goes to :func:`parse_numbers`, which names
    the item at fault.
    """
    import numpy as np
    if items and "" not in items and not _NOT_NUMBER_CHARS.search("".join(items)):
        try:
            values = np.array(items, dtype=float)
        except ValueError:
            values = None
        if values is not None and np.isfinite(values).all() and not (values < 0).any():
            return values
    return np.array(parse_numbers(items, file=file, line=line, field=field), dtype=float)


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


_COLON_TO_SPACE = bytes.maketrans(b":", b" ")
_TIMEOUT_WORDS = [w for word in ("inf", "+inf", "infinity", "timeout") for w in (word, word.capitalize(), word.upper())]
_UNIT = re.compile(r"[A-Za-zµμ/%][\w/%.]*")


class LabelledColumns(NamedTuple):
    """The lines of a ``label: value unit`` file as columns: labels and units factorized (codes into names)."""

    label_codes: "np.ndarray"
    labels: list[str]
    value: "np.ndarray"
    timed_out: "np.ndarray"
    unit_codes: "np.ndarray"
    units: list[str]
    line: "np.ndarray"


def labelled_columns(path: str | Path, *, units: Iterable[str] | None = None,
                     signed: bool = False) -> LabelledColumns | None:
    """A file of nothing but ``label: value unit`` lines (and blanks), read by pandas' C reader.

    The same lines as :func:`labelled_numbers` with ``strict=True`` reads, checked on the
    columns: every label non-empty, every value a number (or an ``inf``/``timeout`` marker),
    every unit one of ``units``. Labels and units come factorized, since a few of them
    repeat over many lines.

    Returns
    -------
    LabelledColumns or None
        None when the file is anything else (another line among them, a value that is not a
        number, tabs between value and unit, carriage returns): then :func:`labelled_numbers`
        reads it line by line and names the line at fault.
    """
    import csv
    import io
    import warnings

    import numpy as np

    path, data = read_bytes(path)
    arr = np.frombuffer(data, dtype=np.uint8)
    counts = np.bincount(arr, minlength=256)
    if counts[ord('"')] or counts[ord("\t")] or counts[ord("\r")]:
        return None
    index = LineIndex(data)
    lines = index.numbers()
    if (index.blank & (index.ends > index.starts)).any() or counts[ord(":")] != len(lines):
        return None  # a line of blanks, or a line with no colon or two
    options = dict(header=None, index_col=False, na_filter=False, keep_default_na=False, skip_blank_lines=True,
                   engine="c", quoting=csv.QUOTE_NONE)
    numbers = {0: "float64", 1: object}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            # one word before the colon on every line (as ``Verus: 0.66 sec``): one pass, the colon read as a space
            seps = np.flatnonzero((arr == ord(":")) | (arr == ord(" ")))
            starts = index.starts[lines - 1]
            firsts = np.searchsorted(seps, starts)
            if (firsts < len(seps)).all() and (arr[seps[np.minimum(firsts, len(seps) - 1)]] == ord(":")).all() \
                    and not (arr[starts] == ord(":")).any():
                table = pd.read_csv(io.BytesIO(data.translate(_COLON_TO_SPACE)), sep=" ", names=[0, 1, 2],
                                    dtype={0: object, 1: "float64", 2: object}, skipinitialspace=True,
                                    **{**options, "na_filter": True}, na_values={0: [], 1: _TIMEOUT_WORDS, 2: []})
                halves, numbers = table[[0]], table[[1, 2]].set_axis([0, 1], axis=1)
            else:  # labels of several words: split at the colon, then the rest at spaces
                halves = pd.read_csv(io.BytesIO(data), sep=":", names=[0, 1], dtype=object, **options)
                if len(halves) != len(lines):
                    return None
                numbers = pd.read_csv(io.BytesIO("\n".join(halves[1].tolist()).encode()), sep=" ", names=[0, 1],
                                      dtype=numbers, skipinitialspace=True,
                                      **{**options, "na_filter": True, "skip_blank_lines": False},
                                      na_values={0: _TIMEOUT_WORDS, 1: []})
    except (ValueError, OverflowError, pd.errors.ParserError, pd.errors.ParserWarning):
        return None
    if len(numbers) != len(lines) or len(halves) != len(lines):
        return None
    value = numbers[0].to_numpy()
    timed_out = np.isnan(value)
    finite = value[~timed_out]
    if not np.isfinite(finite).all() or (not signed and (finite < 0).any()):
        return None
    codes, raw = pd.factorize(halves[0].to_numpy())  # a few labels, many lines: strip each label once
    labels = [label.strip() for label in raw]
    unit_codes, found = pd.factorize(numbers[1].to_numpy(), use_na_sentinel=False)
    found = ["" if u is None or u != u else u for u in found]
    allowed = None if units is None else set(units)
    if "" in labels or any((u and not _UNIT.fullmatch(u)) or (allowed is not None and u not in allowed)
                           for u in found):
        return None
    return LabelledColumns(codes, labels, value, timed_out, unit_codes, found, lines.astype("int64"))


def read_labelled(path: str | Path, *, units: Iterable[str] | None = None,
                  signed: bool = False) -> pd.DataFrame | None:
    """:func:`labelled_columns` as a frame: ``label``, ``value`` (NaN for a marker), ``unit``, ``line``, ``timed_out``."""
    found = labelled_columns(path, units=units, signed=signed)
    if found is None:
        return None
    frame = pd.DataFrame({"label": take_strings(found.label_codes, found.labels), "value": found.value,
                          "unit": take_strings(found.unit_codes, found.units), "line": found.line,
                          "timed_out": found.timed_out})
    frame.attrs["source"] = str(path)
    return frame


def take_strings(codes, names) -> pd.Series:
    """A string column from factorized ``codes`` and the ``names`` they stand for (names may repeat)."""
    import numpy as np
    return pd.array(list(names), dtype="str").take(np.asarray(codes))  # each name checked once, not each row


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
    if columns is None and not by_position and positions is None and comment is None:
        data = "\n".join(lines[header_line - 1:]).encode("utf-8")
        fast = _whitespace_table(data, 0, file=file, header_line=header_line, converters=converters or {},
                                 tokens=tokens or {})
        if fast is not None:
            return fast
    return _table_rows(lines, file=file, header_line=header_line, columns=columns, by_position=by_position,
                       positions=positions, comment=comment, converters=converters, tokens=tokens)


def read_table_at(data: bytes, at: int, *, file: str | Path, header_line: int,
                  converters: Mapping[str, Callable] | None = None,
                  tokens: Mapping[str, Iterable[str]] | None = None,
                  token_columns: bool = True) -> pd.DataFrame:
    """:func:`read_table` (split at whitespace) of the table whose header starts at byte ``at`` of ``data``.

    For a reader that holds the whole output as bytes (:func:`read_bytes`): a regular table is
    read by pandas' C reader straight from them, without decoding the rest of the output into
    lines; anything else is decoded and read row by row, naming the line at fault.

    Parameters
    ----------
    data : bytes
        The whole output, from :func:`read_bytes`.
    at : int
        Offset of the header line's first byte; ``header_line`` is its 1-based number.
    converters, tokens
        As for :func:`read_table`.
    token_columns : bool
        False: leave out the ``<column>_token`` columns, for a caller to whom a token's NaN
        says enough (there is only one token word per column).

    Returns
    -------
    DataFrame
        As :func:`read_table`.
    """
    fast = _whitespace_table(data, at, file=file, header_line=header_line, converters=converters or {},
                             tokens=tokens or {}, token_columns=token_columns)
    if fast is not None:
        return fast
    lines = split_lines(data)
    if not 1 <= header_line <= len(lines):
        raise OutputError(f"no header at line {header_line}", file=file, line=header_line)
    table = _table_rows(lines, file=file, header_line=header_line, converters=converters, tokens=tokens)
    return table if token_columns else table.drop(columns=[f"{name}_token" for name in tokens or {}])


def _table_rows(lines: list[str], *, file, header_line: int, columns=None, by_position: bool = False,
                positions=None, comment=None, converters=None, tokens=None) -> pd.DataFrame:
    """:func:`read_table` row by row: any table it reads, and the line and field of any fault."""
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


_VECTORISED = {parse_clock, parse_number}
"""Converters whose cells :func:`read_table` converts on the whole column at once (pandas' C reader)."""


_EMPTY_LINE = re.compile(rb"\n\n")
_BLANK_LINE = re.compile(rb"\n[ \t\r\x0b\x0c]*(?=\n|\Z)")
"""A line end, then a line of nothing but blanks (or nothing)."""


def _has_exponent(arr, work, scratch) -> bool:
    """Whether the bytes ``arr`` hold a number with an exponent (``1e5``, ``2.E-3``).

    ``work`` (bool) and ``scratch`` (uint8) are arrays of ``arr``'s length, written over.
    """
    import numpy as np
    at = np.flatnonzero(np.equal(np.bitwise_or(arr, 32, out=scratch), ord("e"), out=work))  # e or E
    at = at[(at > 0) & (at < len(arr) - 1)]
    before, after = arr[at - 1], arr[at + 1]
    number_before = ((before >= 48) & (before <= 57)) | (before == ord("."))
    number_after = ((after >= 48) & (after <= 57)) | (after == ord("+")) | (after == ord("-"))
    return bool((number_before & number_after).any())


def _regular_rows(body: bytes, width: int, *, clock: bool) -> int | None:
    """How many rows ``body`` holds, if it is printable ASCII (and blanks) with ``width`` cells on every row.

    Else None; None too for what :func:`parse_clock` refuses (signs, exponents, clock readings), if
    ``clock``. The count of cells is for the whole body: a row of more cells than ``width``, which
    could make up for one of fewer, makes pandas' C reader fail (``Expected N fields``).
    """
    import numpy as np
    if not body:
        return None
    arr = np.frombuffer(body, dtype=np.uint8)
    # two scratch arrays for the checks below, each written over: a fresh megabyte per check costs more than the check
    work, other = np.empty(len(arr), dtype=bool), np.empty(len(arr), dtype=bool)
    count = int(np.count_nonzero(np.equal(arr, 10, out=work))) + 1
    controls = int(np.count_nonzero(np.less(arr, 32, out=work)))
    if (not body.isascii() or b'"' in body or b"\x7f" in body
            or (controls != count - 1 and controls != count - 1 + body.count(b"\t"))):
        return None  # other bytes than printable ASCII, tabs and line ends (or quotes, which the C reader takes off)
    if clock and (b"+" in body or b":" in body or (
            (b"e" in body or b"E" in body) and _has_exponent(arr, work, other.view(np.uint8)))):
        return None
    solid = np.greater(arr, 32, out=work)
    starts = np.greater(solid[1:], solid[:-1], out=other[1:])  # a cell starts where blanks end
    if int(np.count_nonzero(starts)) + int(solid[0]) != count * width:
        return None
    return count


def _whitespace_table(data: bytes, at: int, *, file, header_line: int, converters: Mapping, tokens: Mapping,
                      token_columns: bool = True):
    """:func:`read_table` of a table split at whitespace, by pandas' C reader; None to read it row by row.

    ``data`` holds the output's bytes and ``at`` the offset of the header line. The table's rows
    run to the first blank line. Converted columns are parsed as decimals by the C reader, and the
    table is checked for what :func:`parse_clock` would not take (signs, exponents, clock
    readings: then None). Every check is on the bytes or the frame, none per row.
    """
    import io
    import warnings

    import numpy as np
    if any(c not in _VECTORISED for c in converters.values()):
        return None
    end = data.find(b"\n", at)
    if end < 0:
        return None
    names = [name for name, _ in header_columns(data[at:end].decode("utf-8"))]
    if not names or len(set(names)) != len(names):
        return None
    # the rows run to the first empty line (from the header's own line end: an empty first row is found too)
    empty = _EMPTY_LINE.search(data, end)  # quicker than bytes.find for a needle this short
    stop = empty.start() if empty else len(data) - data.endswith(b"\n")
    clock = parse_clock in converters.values()
    body = data[end + 1:stop]
    count = _regular_rows(body, len(names), clock=clock)
    if count is None:  # perhaps a row of no cells: a line of blanks ends the table too, so read the rows above it
        blank = _BLANK_LINE.search(data, end, stop)
        if blank is None:
            return None
        body = data[end + 1:blank.start()]
        count = _regular_rows(body, len(names), clock=clock)
        if count is None:
            return None
    dtypes = {i: ("float64" if name in converters else "str" if name not in tokens else object)
              for i, name in enumerate(names)}
    na_values = {i: list(tokens.get(name, ())) for i, name in enumerate(names)}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(io.BytesIO(body), sep=r"\s+", header=None,
                                names=list(range(len(names))), index_col=False, dtype=dtypes, na_filter=True,
                                na_values=na_values, keep_default_na=False, skip_blank_lines=False, engine="c",
                                low_memory=False)  # one chunk: a table is a few MB at most
    except (ValueError, OverflowError, pd.errors.ParserError, pd.errors.ParserWarning):
        return None
    if len(frame) != count:
        return None
    out = {}
    for i, name in enumerate(names):
        column = frame[i].array if dtypes[i] == "str" else frame[i].to_numpy()
        if name in converters:
            marked = np.isnan(column)  # every row has all its cells: an empty one is a token
            if not np.isfinite(column[~marked]).all() or np.signbit(column[~marked]).any():
                return None
        elif name in tokens:
            marked = pd.isna(column)
        out[name] = column
        if name in tokens:
            words = set(tokens[name])
            if len(words) != 1:
                return None  # which word stood in each cell is not kept: read row by row
            if token_columns:
                out[f"{name}_token"] = take_strings(marked.astype(np.intp), ["", next(iter(words))])
    order = []
    for name in names:
        order += [name, f"{name}_token"] if name in tokens and token_columns else [name]
    out["line"] = np.arange(header_line + 1, header_line + 1 + count, dtype="int64")
    return pd.DataFrame({key: out[key] for key in [*order, "line"]}, copy=False)


def read_pdf_lines(path: str | Path) -> tuple[Path, list[str]]:
    """The text of a PDF (all pages, in reading order) as lines, for the rest of the kit.

    Line numbers in later errors count lines of this extracted text. The text of a PDF read before (the same bytes,
    by the same pypdf) is taken from `PDF_TEXT_CACHE` rather than extracted again (a tenth of a second).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise OutputError(f"cannot read the PDF ({exc.strerror or exc})", file=path) from exc
    cached, key = _pdf_text_cached(data)
    if cached is not None:
        return path, cached
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError as exc:  # pragma: no cover - pypdf is a dependency
        raise OutputError("reading a PDF needs the pypdf package", file=path) from exc
    try:
        import io
        reader = PdfReader(io.BytesIO(data))
        text = "\n".join(page.extract_text() or "" for page in reader.pages)
    except (OSError, ValueError, PyPdfError) as exc:
        raise OutputError(f"cannot read the PDF ({exc})", file=path) from exc
    lines = text.split("\n")
    if not any(line.strip() for line in lines):
        raise OutputError("the PDF holds no text", file=path)
    _pdf_text_keep(key, lines)
    return path, lines


def _pdf_cache_dir() -> Path:
    import os
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "reprobook" / "pdf-text"


PDF_TEXT_CACHE = "$XDG_CACHE_HOME/reprobook/pdf-text (~/.cache/reprobook/pdf-text)"
"""Where the text of each PDF read is kept, a file per content hash (of the PDF's bytes and the pypdf that read
them): a PDF changed, or read by another pypdf, is a new key. An entry that cannot be read is read again."""


def _pdf_text_cached(data: bytes) -> tuple[list[str] | None, str | None]:
    import hashlib
    import importlib.util
    import json
    spec = importlib.util.find_spec("pypdf")
    if spec is None or not spec.origin:
        return None, None
    try:   # the pypdf installed: its version file's size and time change with it
        st = (Path(spec.origin).parent / "_version.py").stat()
    except OSError:
        return None, None
    key = hashlib.sha256(data + f"\0pypdf {st.st_size} {st.st_mtime_ns}".encode()).hexdigest()
    try:
        lines = json.loads((_pdf_cache_dir() / f"{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, key
    ok = isinstance(lines, list) and all(isinstance(x, str) for x in lines)
    return (lines if ok else None), key


def _pdf_text_keep(key: str | None, lines: list[str]) -> None:
    if key is None:
        return
    import json
    import os
    import tempfile
    try:
        folder = _pdf_cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".part-")
    except OSError:   # a cache that cannot be written is no cache: the text is extracted again next time
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(lines, f)
        os.replace(tmp, folder / f"{key}.json")
    except OSError:
        Path(tmp).unlink(missing_ok=True)
