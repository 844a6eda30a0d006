"""CSV and TSV outputs, read by pandas' C reader and validated on the frame.

Blank lines are skipped and surrounding whitespace is stripped from every line
and cell; line numbers in errors (and in the ``line`` column) are the file's.

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
from pathlib import Path
from typing import Callable, Iterable, Mapping

import pandas as pd

from ..errors import OutputError
from . import text

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
    path, lines = text.read_lines(path)
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
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise OutputError(f"the header names {duplicates} more than once", file=path,
                              line=header_no)
        if "" in names:
            raise OutputError(f"column {names.index('') + 1} of the header has no name",
                              file=path, line=header_no)
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
    return frame


def read_tsv(path: str | Path, **options) -> pd.DataFrame:
    """Read a tab-separated file; options as :func:`read_csv`."""
    return read_csv(path, sep="\t", **options)


def _parse(path: Path, recs: list[tuple[int, str]], sep: str) -> pd.DataFrame:
    data = io.StringIO("\n".join(line for _, line in recs))
    try:
        frame = pd.read_csv(data, sep=sep, header=None, dtype=str, keep_default_na=False,
                            na_filter=False, skip_blank_lines=False, engine="c",
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
