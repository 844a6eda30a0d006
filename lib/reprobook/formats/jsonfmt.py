"""JSON outputs: load with errors naming file, line and column; fetch nested keys by path.

Objects come back as :class:`JsonObject` (a ``dict`` that remembers the line
where it starts), so an error about a missing or ill-typed key can name the line
of the object that should hold it.

Examples
--------
>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "r.json"
>>> _ = path.write_text('[{"project-id": "nr",\\n  "verus": {"encoding-size-mb": 20}}]')
>>> data = load_json(path)
>>> get(data, "[0].verus.encoding-size-mb", file=path, kind=int)
20
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Iterable

from reprobook.errors import OutputError
from reprobook.formats import text

_STEP = re.compile(r"\[(-?[0-9]+)\]|([^.\[\]]+)")


class JsonObject(dict):
    """A JSON object; ``line`` is the 1-based line of its opening brace."""

    line: int | None = None


def load_json(path: str | Path) -> Any:
    """Load a JSON file (UTF-8, optional BOM).

    Parsed by the ``json`` module's C scanner; the line of every object's opening brace
    is then found with numpy over the bytes (`_object_lines`), not by a Python scanner.

    Raises
    ------
    OutputError
        Unreadable or empty file, or invalid JSON: the message names the line
        and column where parsing stopped.
    """
    path, data = text.read_bytes(path)
    source = data.decode("utf-8")
    if "\r" in source:  # lines and columns as read_lines counts them
        source = "\n".join(line.rstrip("\r") for line in source.split("\n"))
        data = source.encode("utf-8")
    objects: list[JsonObject] = []

    def make(pairs):  # called as each object closes: the objects come in the order of their closing braces
        obj = JsonObject(pairs)
        objects.append(obj)
        return obj

    try:
        value = json.loads(source, object_pairs_hook=make)  # NaN and Infinity load; get(kind=float) rejects them
    except json.JSONDecodeError as exc:
        raise OutputError(f"invalid JSON at column {exc.colno}: {exc.msg}", file=path,
                          line=exc.lineno) from None
    except (ValueError, RecursionError) as exc:
        raise OutputError(f"invalid JSON: {exc}", file=path) from None
    if objects:
        for obj, line in zip(objects, _object_lines(data, len(objects)).tolist()):
            obj.line = line
    return value


def _object_lines(data: bytes, count: int):
    """The 1-based line of the opening brace of each object of valid JSON ``data``, in closing order.

    Braces inside strings are told apart by the parity of the quotes before them (escapes
    blanked out first); each closing brace is paired with its opening one by depth.
    """
    import numpy as np
    if b"\\" in data:  # in valid JSON a backslash only starts an escape, inside a string
        data = re.sub(rb"\\.", b"__", data)
    arr = np.frombuffer(data, dtype=np.uint8)
    quotes = np.flatnonzero(arr == ord('"'))
    braces = np.flatnonzero((arr == ord("{")) | (arr == ord("}")))
    braces = braces[np.searchsorted(quotes, braces) % 2 == 0]  # outside strings
    step = np.where(arr[braces] == ord("{"), 1, -1)
    depth = np.cumsum(step)
    level = np.where(step == 1, depth, depth + 1)  # the depth of the object each brace opens or closes
    order = np.lexsort((braces, level))  # per level, by position: open, close, open, close, ...
    opens, closes = braces[order[0::2]], braces[order[1::2]]
    opens = opens[np.argsort(closes, kind="stable")]  # in closing order, as the objects were made
    if len(opens) != count:  # pragma: no cover - the scanner accepted it, so the braces balance
        raise AssertionError(f"found {len(opens)} objects, the parser made {count}")
    newlines = np.flatnonzero(arr == 10)
    return np.searchsorted(newlines, opens) + 1


def get(data: Any, path: str | Iterable, *, file: str | Path, kind: type | None = None,
        default: Any = ...) -> Any:
    """Fetch the value at ``path``, such as ``"verus.linecount.trusted"`` or ``"[0].name"``.

    Parameters
    ----------
    data : object
        From :func:`load_json`.
    path : str or iterable
        Keys separated by dots, ``[i]`` for list items; or a sequence of keys and ints.
    file : path
        Named by errors.
    kind : type, optional
        ``int`` (not bool), ``float`` (any finite number, not bool), ``str``, ``bool``,
        ``dict`` or ``list``.
    default : optional
        Returned when a key is missing (instead of raising).

    Raises
    ------
    OutputError
        A missing key or a value of the wrong kind; the message names the key path,
        the line is that of the innermost object found on the way.
    """
    steps = _steps(path)
    value, line = data, getattr(data, "line", None)
    for depth, step in enumerate(steps):
        where = _render(steps[:depth + 1])
        if isinstance(step, int) and isinstance(value, list) and -len(value) <= step < len(value):
            value = value[step]
        elif isinstance(step, str) and isinstance(value, dict) and step in value:
            value = value[step]
        else:
            if default is not ...:
                return default
            have = (f"its keys are {', '.join(map(repr, value))}" if isinstance(value, dict)
                    else f"it is a list of {len(value)}" if isinstance(value, list)
                    else f"it is {_kind(value)}")
            raise OutputError(f"missing {where!r} ({_render(steps[:depth]) or 'the top level'}"
                              f": {have})", file=file, line=line, field=where)
        line = getattr(value, "line", line)
    if kind is not None and not _is(value, kind):
        raise OutputError(f"{_render(steps)!r} is {_kind(value)} {value!r:.60}, expected "
                          f"{kind.__name__}", file=file, line=line, field=_render(steps))
    return value


def _is(value: Any, kind: type) -> bool:
    if isinstance(value, bool):
        return kind is bool
    if kind is float:
        return isinstance(value, (int, float)) and math.isfinite(value)
    return isinstance(value, kind)


def _kind(value: Any) -> str:
    for kind, name in ((bool, "a boolean"), (dict, "an object"), (list, "a list"),
                       (str, "a string"), (int, "an integer"), (float, "a number")):
        if isinstance(value, kind):
            return name
    return "null" if value is None else "a value"


def _steps(path: str | Iterable) -> list:
    if not isinstance(path, str):
        return list(path)
    steps = []
    for part in path.split("."):
        for index, key in _STEP.findall(part):
            steps.append(int(index) if index else key)
    return steps


def _render(steps: list) -> str:
    out = ""
    for step in steps:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else step)
    return out


def read_stats_tree(root: str | Path, *, name: str = "stats.json", section: str = "run_stats"):
    """Every ``<name>`` under ``root`` (Pesto's ``stats.json``), its ``<section>.<type>.<metric>`` values as one long frame.

    A Pesto sweep leaves one ``stats.json`` per run, each with ``run_stats`` holding, per
    transaction type (``combined``, ``rw_sql``, ...), per metric (``tput``, ``p50``, ...), the
    statistics of that metric over the run's clients (``mean``, ``min``, ``p99``, ...).
    Only that section is parsed (by ``json``'s C scanner, from the top-level key on), not the
    latency CDFs that make up most of each file.

    Returns
    -------
    DataFrame
        ``file`` (relative to ``root``), ``type``, ``metric``, ``stat``, ``value`` (float);
        sorted by file. ``attrs["source"]`` is ``root``.

    Raises
    ------
    OutputError
        No such file under ``root``; a file without the section, or with a value that is not
        a finite number (naming the file, the line and the key path).

    Examples
    --------
    >>> frame = read_stats_tree("sample-output/Pesto")  # doctest: +SKIP
    >>> frame.pivot_table(index="file", columns="metric", values="value").head()  # doctest: +SKIP
    """
    import numpy as np
    import pandas as pd

    root = Path(root)
    paths = sorted(root.rglob(name))
    if not paths:
        raise OutputError(f"no {name} under this directory", file=root)
    decoder = json.JSONDecoder()
    files, types, metrics, stats, values = [], [], [], [], []
    for path in paths:
        rel = path.relative_to(root).as_posix()
        found = _top_level_value(path, section, decoder)
        if not isinstance(found, dict):
            get(load_json(path), [section], file=path, kind=dict)  # raises, naming the line
        for kind, by_metric in found.items():
            if not isinstance(by_metric, dict):
                get(load_json(path), [section, kind], file=path, kind=dict)
            for metric, by_stat in by_metric.items():
                if not isinstance(by_stat, dict):
                    get(load_json(path), [section, kind, metric], file=path, kind=dict)
                n = len(by_stat)
                files += [rel] * n
                types += [kind] * n
                metrics += [metric] * n
                stats.extend(by_stat)
                values.extend(by_stat.values())
    numeric = np.fromiter((type(v) in (int, float) for v in values), dtype=bool, count=len(values))
    array = np.array([v if ok else np.nan for v, ok in zip(values, numeric)], dtype=float) if not numeric.all() \
        else np.array(values, dtype=float)
    bad = ~numeric | ~np.isfinite(array)
    if bad.any():  # checked on the frame; the file is read again only to name the line
        i = int(np.flatnonzero(bad)[0])
        path = root / files[i]
        get(load_json(path), [section, types[i], metrics[i], stats[i]], file=path, kind=float)
    frame = pd.DataFrame({"file": files, "type": types, "metric": metrics, "stat": stats, "value": array})
    frame.attrs["source"] = str(root)
    return frame


def _top_level_value(path: Path, key: str, decoder: json.JSONDecoder) -> Any:
    """The value of ``key`` in the top-level object of the JSON file at ``path``, parsed alone (None if absent)."""
    import numpy as np

    _, data = text.read_bytes(path)
    needle = json.dumps(key).encode()
    start = 0
    while True:
        at = data.find(needle, start)
        if at < 0:
            return None
        start = at + len(needle)
        colon = re.match(rb"\s*:", data[start:start + 64])
        if not colon:
            continue
        prefix = data[:at]
        if b"\\" in prefix:
            prefix = re.sub(rb"\\.", b"__", prefix)
        arr = np.frombuffer(prefix, dtype=np.uint8)
        quotes = np.flatnonzero(arr == ord('"'))
        if len(quotes) % 2:
            continue  # the key is inside a string
        marks = np.flatnonzero((arr == ord("{")) | (arr == ord("[")) | (arr == ord("}")) | (arr == ord("]")))
        marks = marks[np.searchsorted(quotes, marks) % 2 == 0]
        depth = int(np.isin(arr[marks], (ord("{"), ord("["))).sum() * 2 - len(marks))
        if depth != 1 or not len(marks) or arr[marks[0]] != ord("{"):
            continue  # nested deeper, or not in an object at the top
        text_ = data.decode("utf-8")
        offset = start + colon.end()
        index = offset if len(text_) == len(data) else len(data[:offset].decode("utf-8"))
        index = len(text_) - len(text_[index:].lstrip())
        try:
            return decoder.raw_decode(text_, index)[0]
        except json.JSONDecodeError:
            load_json(path)  # the whole file is invalid: say where
            raise
