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

import bisect
import json
import json.decoder
import json.scanner
import math
import re
from pathlib import Path
from typing import Any, Iterable

from ..errors import OutputError
from . import text

_STEP = re.compile(r"\[(-?[0-9]+)\]|([^.\[\]]+)")


class JsonObject(dict):
    """A JSON object; ``line`` is the 1-based line of its opening brace."""

    line: int | None = None


def load_json(path: str | Path) -> Any:
    """Load a JSON file (UTF-8, optional BOM).

    Raises
    ------
    OutputError
        Unreadable or empty file, or invalid JSON: the message names the line
        and column where parsing stopped.
    """
    path, lines = text.read_lines(path)
    source = "\n".join(lines)
    starts = [0] + [i + 1 for i, char in enumerate(source) if char == "\n"]
    decoder = json.JSONDecoder()  # NaN and Infinity load; get(kind=float) rejects them

    def parse_object(state, *args):
        obj, end = json.decoder.JSONObject(state, *args)
        found = JsonObject(obj)
        found.line = bisect.bisect_right(starts, state[1] - 1)
        return found, end

    decoder.parse_object = parse_object
    decoder.scan_once = json.scanner.py_make_scanner(decoder)
    try:
        return decoder.decode(source)
    except json.JSONDecodeError as exc:
        raise OutputError(f"invalid JSON at column {exc.colno}: {exc.msg}", file=path,
                          line=exc.lineno) from None
    except (ValueError, RecursionError) as exc:
        raise OutputError(f"invalid JSON: {exc}", file=path) from None


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
