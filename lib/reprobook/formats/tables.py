"""CSV and TSV outputs, read by pandas' C reader and validated on the frame.

Blank lines are skipped and surrounding whitespace is stripped from every line
and cell; line numbers in errors (and in the ``line`` column) are the file's.

A file of regular rows (no quotes, the same number of fields on every line, no
stray carriage returns) is read in one pass of pandas' C reader, typed columns
converted by it, and checked on the frame; line numbers come from a
`~reprobook.formats.text.LineIndex` of the bytes. Anything else, and any value
that does not convert, sends the file down the careful path, which reads it
row by row and names the line and field at fault.

Examples
--------
``results_128.csv`` of the verified-storage artifact (``pmdk,13164376,``)::

    read_csv(path, header=False, columns=["log", "us"], trailing_sep=True,
             types={"us": "int"})
"""

from __future__ import annotations

import csv
import io
import math
import re
import warnings
from pathlib import Path
from typing import Callable, Iterable, Mapping

from reprobook.errors import OutputError
from reprobook.formats import text
from reprobook.lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")

_TYPES = ("int", "float", "str")


def read_csv(path: str | Path, *, header: bool = True, columns: Iterable[str] | None = None,
             required: Iterable[str] = (), types: Mapping[str, str | Callable] | None = None,
             sep: str = ",", trailing_sep: bool = False,
             line_column: str | None = "line") -> pd.DataFrame:
    """Read a CSV (or, with ``sep="\\t"``, TSV) file into a validated frame.

    Parameters
    ----------
    path : str or Path
    header : bool
        Whether the first non-blank line names the columns.
    columns : iterable of str, optional
        The column names when there is no header (then required: every row must
        have exactly these fields); with a header, ``columns`` renames them in order.
    required : iterable of str
        Columns a header must have (an error names the header line and the column).
    types : mapping, optional
        Column -> ``"int"``, ``"float"`` (finite), ``"str"`` or a function
        ``f(text, file=, line=, field=)``. Typed cells must not be empty.
    sep : str
        The field separator.
    trailing_sep : bool
        Rows may end with one separator (``a,1,``), whose empty field is dropped.
    line_column : str or None
        Name of an added column holding each row's line number (None: no column).

    Returns
    -------
    DataFrame
        Cells are stripped strings unless typed; ``attrs["source"]`` is the path.
    """
    path, data = text.read_bytes(path)
    fast = _read_regular(path, data, header=header, columns=columns, required=required, types=types or {},
                         sep=sep, trailing_sep=trailing_sep, line_column=line_column)
    if fast is not None:
        return fast
    lines = data.decode("utf-8").split("\n")
    lines = [line.rstrip("\r") for line in lines]
    recs = text.records(lines)
    frame = _parse(path, recs, sep)
    if trailing_sep and frame.shape[1] > 1 and (frame.iloc[:, -1] == "").all():
        frame = frame.iloc[:, :-1]
    body_lines = [no for no, _ in recs]
    if header:
        names = [str(name) for name in frame.iloc[0]]
        header_no, body_lines, frame = body_lines[0], body_lines[1:], frame.iloc[1:]
        if columns is not None:
            wanted = list(columns)
            if len(wanted) != len(names):
                raise OutputError(f"the header has {len(names)} columns, expected "
                                  f"{len(wanted)} ({', '.join(wanted)})", file=path,
                                  line=header_no)
            names = wanted
        names, notes = pandas_names(names)
        for name in required:
            if name not in names:
                raise OutputError(f"the header lacks the column {name!r} (it has "
                                  f"{', '.join(names)})", file=path, line=header_no, field=name)
    else:
        if columns is None:
            raise ValueError("read_csv(header=False) needs columns=[...]")
        names = list(columns)
        if frame.shape[1] != len(names):
            widths = [_width(row) for _, row in frame.iterrows()]
            wrong = [i for i, width in enumerate(widths) if width > len(names)] or [0]
            raise OutputError(f"expected {len(names)} fields ({', '.join(names)}), found "
                              f"{widths[wrong[0]]}", file=path, line=body_lines[wrong[0]])
    frame = frame.set_axis(names, axis=1).reset_index(drop=True)
    short = _short_rows(frame, names, types or {})
    if short:
        row, missing = short
        raise OutputError(f"the row has no value for {missing!r}", file=path,
                          line=body_lines[row], field=missing)
    for name, kind in (types or {}).items():
        if name not in frame.columns:
            raise OutputError(f"no column {name!r} (columns: {', '.join(names)})", file=path,
                              line=header_no if header else None, field=name)
        frame[name] = _convert(frame[name], kind, path, body_lines, name)
    if line_column is not None:
        frame[line_column] = pd.Series(body_lines, dtype="int64")
    frame.attrs["source"] = str(path)
    if header and notes:
        frame.attrs["notes"] = [f"{path.name}, line {header_no}: {n}" for n in notes]
    return frame


def pandas_names(names: list[str]) -> tuple[list[str], list[str]]:
    """A header's names made unique the way pandas makes them, and a note for each name it made.

    A blank name becomes ``Unnamed: <i>`` (``i`` counted from 0); a repeated one ``<name>.1``,
    ``<name>.2``, ... in order. Real artifacts have such headers (a spreadsheet's export with an
    empty first column, two columns both called ``time``); they are read, and the notes say how
    their columns were named, rather than refused.
    """
    out: list[str] = []
    notes: list[str] = []
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        new = name if name else f"Unnamed: {i}"
        if new in seen:
            k = seen[new]
            while f"{new}.{k}" in names or f"{new}.{k}" in seen:
                k += 1
            seen[new] = k + 1
            new, was = f"{new}.{k}", new
            notes.append(f"column {i + 1} repeats the name {was!r}: it is read as {new!r} (as pandas names it)")
        elif not name:
            notes.append(f"column {i + 1} of the header has no name: it is read as {new!r} (as pandas names it)")
        seen.setdefault(new, 1)
        out.append(new)
    return out, notes


def _read_regular(path: Path, data: bytes, *, header: bool, columns, required, types: Mapping, sep: str,
                  trailing_sep: bool, line_column: str | None) -> pd.DataFrame | None:
    """The frame :func:`read_csv` returns, read in one pass of the C reader; None if the file needs the careful path."""
    if (len(sep) != 1 or b'"' in data or data.count(b"\r") != data.count(b"\r\n")
            or any(kind not in _TYPES for kind in types.values())):
        return None  # quoting, or a carriage return the C reader would take for a line end
    if not header and columns is None:
        raise ValueError("read_csv(header=False) needs columns=[...]")
    index = text.LineIndex(data)
    if (index.blank & (index.ends > index.starts)).any():  # a line of blanks would be a row for the C reader
        return None
    lines = index.numbers()
    first = data[index.starts[lines[0] - 1]:index.ends[lines[0] - 1]].decode("utf-8")
    width = first.count(sep) + 1
    body_lines = lines[1:] if header else lines
    if not len(body_lines):
        return None
    names = [cell.strip() for cell in first.split(sep)] if header else list(columns)
    tail = first.rstrip("".join(c for c in " \t\x0b\x0c" if c != sep))
    extra = int(trailing_sep and width > 1 and tail.endswith(sep))  # a last column of nothing
    if header:
        names = names[:width - extra]
        if columns is not None:
            if len(list(columns)) != len(names):
                return None
            names = list(columns)
        if len(set(names)) != len(names) or "" in names or any(name not in names for name in required):
            return None
    elif len(names) != width - extra:
        return None
    if any(name not in names for name in types):
        return None
    dtypes = {i: ("int64" if types.get(n) == "int" else "float64" if types.get(n) == "float" else str)
              for i, n in enumerate(names)}
    dtypes.update({len(names) + i: str for i in range(extra)})
    try:
        with warnings.catch_warnings():
            # a row longer than the first: the C reader would drop its extra fields (with this warning)
            warnings.simplefilter("error", pd.errors.ParserWarning)
            warnings.simplefilter("ignore", RuntimeWarning)  # a value that does not cast: checked on the frame below
            frame = pd.read_csv(io.BytesIO(data), sep=sep, header=None, names=list(range(len(names) + extra)),
                                index_col=False, dtype=dtypes, skiprows=int(lines[0]) if header else 0,
                                na_filter=False, keep_default_na=False, skip_blank_lines=True,
                                skipinitialspace=True, engine="c", quoting=csv.QUOTE_NONE)
    except (ValueError, OverflowError, pd.errors.ParserError, pd.errors.ParserWarning):
        return None  # a value that does not convert, or a row the C reader will not take: name it carefully
    if len(frame) != len(body_lines):
        return None
    if extra:
        if not (frame[len(names)] == "").all():
            return None
        frame = frame.drop(columns=[len(names)])
    for i in _padded_columns(index, body_lines, sep, len(names)):
        if dtypes[i] is str:
            frame[i] = frame[i].str.strip()
    for i, name in enumerate(names):
        if types.get(name) == "float" and not np.isfinite(frame[i].to_numpy()).all():
            return None  # nan, inf: the careful path says which line
    frame.columns = names
    if line_column is not None:
        frame[line_column] = pd.Series(body_lines, dtype="int64")
    frame.attrs["source"] = str(path)
    return frame


def _padded_columns(index, lines, sep: str, width: int) -> set[int]:
    """The columns (by position) where some cell of ``lines`` has blanks around it that the C reader keeps."""
    arr = index.array
    body = int(index.starts[lines[0] - 1]) if len(lines) else 0  # blanks in a header line do not matter here
    if index.data.find(b" ", body) < 0 and (sep == "\t" or index.data.find(b"\t", body) < 0):
        return set()
    where = index.blanks[np.isin(arr[index.blanks], (32, 9) if sep != "\t" else (32,))]
    if not len(where):
        return set()
    after = np.where(where + 1 < len(arr), arr[np.minimum(where + 1, len(arr) - 1)], 10)
    before = np.where(where > 0, arr[np.maximum(where - 1, 0)], 10)
    # kept by the C reader: blanks before a separator or a line end (trailing), blanks at a line start (leading)
    kept = where[(after == ord(sep)) | (after == 10) | (after == 13) | (before == 10)]
    if not len(kept):
        return set()
    line = np.searchsorted(index.ends, kept, side="left")
    seps = np.flatnonzero(arr == ord(sep))
    column = np.searchsorted(seps, kept) - np.searchsorted(seps, index.starts[line])
    keep = np.isin(line + 1, lines)
    return {int(c) for c in np.unique(column[keep]) if c < width}


def read_tsv(path: str | Path, **options) -> pd.DataFrame:
    """Read a tab-separated file; options as :func:`read_csv`."""
    return read_csv(path, sep="\t", **options)


def _parse(path: Path, recs: list[tuple[int, str]], sep: str) -> pd.DataFrame:
    data = io.StringIO("\n".join(line for _, line in recs))
    try:
        frame = pd.read_csv(data, sep=sep, header=None, dtype=str, keep_default_na=False,
                            na_filter=False, skip_blank_lines=False, engine="c", lineterminator="\n",
                            quoting=csv.QUOTE_MINIMAL)
    except (pd.errors.ParserError, ValueError) as exc:
        message = str(exc).replace("Error tokenizing data. C error: ", "").strip()
        line = re.search(r"line ([0-9]+)", message)
        row = re.search(r"row ([0-9]+)", message)
        index = int(line.group(1)) - 1 if line else int(row.group(1)) if row else None
        no = recs[index][0] if index is not None and 0 <= index < len(recs) else None
        message = re.sub(r" in line [0-9]+| starting at row [0-9]+", "", message)
        raise OutputError(f"malformed {'TSV' if sep == chr(9) else 'CSV'}: {message}",
                          file=path, line=no) from None
    return frame.apply(lambda column: column.str.strip())


def _width(row: pd.Series) -> int:
    cells = list(row)
    while cells and cells[-1] == "":
        cells.pop()
    return len(cells)


def _short_rows(frame: pd.DataFrame, names: list[str], types: Mapping) -> tuple | None:
    # the C reader pads a short row with empty cells: an empty typed cell is a missing field
    empty = [(int(frame.index[frame[name] == ""][0]), name) for name in names
             if name in types and (frame[name] == "").any()]
    return min(empty) if empty else None


def _convert(column: pd.Series, kind, path: Path, lines: list[int], name: str) -> pd.Series:
    if callable(kind):
        return pd.Series([kind(cell, file=path, line=lines[i], field=name)
                          for i, cell in enumerate(column)], index=column.index)
    if kind not in _TYPES:
        raise ValueError(f"type of column {name!r} must be one of {_TYPES} or a function")
    if kind == "str":
        return column
    values = pd.to_numeric(column, errors="coerce")
    bad = values.isna() | ~values.map(lambda v: math.isfinite(v) if v == v else False)
    if kind == "int":
        bad |= ~column.str.fullmatch(r"[+-]?[0-9]+") | ~(values.abs() < 2**63)
    if bad.any():
        i = int(bad.to_numpy().nonzero()[0][0])
        need = "an integer (of at most 63 bits)" if kind == "int" else "a finite number"
        raise OutputError(f"{column.iloc[i]!r} is not {need}", file=path, line=lines[i],
                          field=name)
    return values.astype("int64" if kind == "int" else "float64")
