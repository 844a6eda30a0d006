"""``go test -v`` output: Go durations, test results, and ``<label> time: <duration>`` lines.

Examples
--------
>>> parse_go_duration("1m7.3s")
67.3
>>> timings(["=== RUN   TestTimeWorkload", "archive d time: 13m2s"], file="aout1.txt")
[Timing(line=2, label='archive d', seconds=782.0)]
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import NamedTuple

from reprobook.errors import OutputError
from reprobook.formats import text
from reprobook.lazy import lazy

pd = lazy("pandas")

GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1, "m": 60,
            "h": 3600}
"""The units of a Go ``time.Duration`` string, in seconds."""
LABEL = r"[A-Za-z][\w.-]*(?:[ \t]+[A-Za-z][\w.-]*)*"
"""The default label of a timing line: words, such as ``m`` or ``archive d``."""

_PART = re.compile(r"([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")
_DURATION = re.compile(rf"[+-]?(?:(?:{_PART.pattern})+|0)")
# "m time: 33.5s", "archive d time: 13m2s"; the optional "x.go:12:" prefix is t.Log's
_TIMING = r"\s*(?:\S+\.go:[0-9]+:\s+)?(?P<label>{label})\s+time:\s*(?P<duration>.*?)\s*"
_RESULT = re.compile(r"\s*--- (PASS|FAIL|SKIP): (\S+) \(([0-9.]+)s\)\s*")
_RUN = re.compile(r"\s*=== RUN\s+(\S+)\s*")


class Timing(NamedTuple):
    """A timing line: its line number, its label and the duration in seconds."""

    line: int
    label: str
    seconds: float


def parse_go_duration(text: str, *, file: str | Path = "<duration>",
                      line: int | None = None) -> float:
    """Convert a Go duration (``850ms``, ``33.5s``, ``1m7.3s``, ``1.5µs``) to seconds.

    Parameters
    ----------
    text : str
        Numbers with units ``ns``, ``us``/``µs``, ``ms``, ``s``, ``m``, ``h``; or ``0``.
    file, line : optional
        Where the text came from, named by the error.

    Returns
    -------
    float
        Seconds, at full precision; negative after a ``-`` sign.
    """
    value = text.strip()
    if not _DURATION.fullmatch(value):
        raise OutputError(f"{text!r} is not a Go duration such as '850ms', '33.5s' or '1m7.3s'",
                          file=file, line=line, field="time")
    total = sum(float(number) * GO_UNITS[unit] for number, unit in _PART.findall(value))
    if not math.isfinite(total):
        raise OutputError(f"duration {text!r} is too large", file=file, line=line, field="time")
    return -total if value.startswith("-") else total


def timings(lines: list[str], *, file: str | Path, label: str = LABEL) -> list[Timing]:
    """The ``<label> time: <duration>`` lines among other output, in file order.

    Parameters
    ----------
    lines : list of str
        From :func:`reprobook.formats.text.read_lines`.
    label : str
        A regular expression the label must match in full; other lines are ignored.

    Raises
    ------
    OutputError
        A timing line whose duration is not a Go duration (naming the line).
    """
    pattern = re.compile(_TIMING.format(label=label))
    found = []
    seconds: dict[str, float] = {}  # a log repeats its durations: each is converted once
    for no, line in enumerate(lines, start=1):
        if "time:" not in line:  # most lines of a log: no regular expression for them
            continue
        match = pattern.fullmatch(line)
        if match:
            label_text = " ".join(match.group("label").split())
            duration = match.group("duration")
            if duration not in seconds:
                seconds[duration] = parse_go_duration(duration, file=file, line=no)
            found.append(Timing(no, label_text, seconds[duration]))
    return found


def read_timings(path: str | Path, *, label: str = LABEL) -> pd.DataFrame:
    """A log's timing lines as a frame: ``label``, ``seconds``, ``line``.

    An empty result is an error (the run did not get as far as timing anything).
    """
    path, lines = text.read_lines(path)
    found = timings(lines, file=path, label=label)
    if not found:
        raise OutputError("no timing lines such as 'm time: 33.5s'; did the go test run finish?",
                          file=path)
    frame = pd.DataFrame([(t.label, t.seconds, t.line) for t in found],
                         columns=["label", "seconds", "line"])
    frame.attrs["source"] = str(path)
    return frame


def read_test_results(path: str | Path) -> pd.DataFrame:
    """The tests of a ``go test -v`` log and how each ended.

    Returns
    -------
    DataFrame
        One row per test (subtests ``TestA/case`` included), in order of first mention:
        ``test``, ``status`` (``"pass"``, ``"fail"``, ``"skip"``, or ``"unfinished"``
        when the log stops before its ``--- PASS/FAIL`` line), ``seconds`` (NaN if
        unfinished) and ``line`` (of the result, else of the ``=== RUN``).
    """
    path, lines = text.read_lines(path)
    tests: dict[str, list] = {}
    for no, line in enumerate(lines, start=1):
        run = _RUN.fullmatch(line)
        if run:
            tests.setdefault(run.group(1), [run.group(1), "unfinished", math.nan, no])
            continue
        result = _RESULT.fullmatch(line)
        if result:
            status, name, seconds = result.groups()
            seconds = text.parse_number(seconds, file=path, line=no, field=name)
            tests[name] = [name, status.lower(), seconds, no]
        elif line.lstrip().startswith(("--- PASS", "--- FAIL", "--- SKIP")):
            raise OutputError(f"a malformed test result {line.strip()!r}; expected "
                              "'--- PASS: TestName (1.23s)'", file=path, line=no)
    if not tests:
        raise OutputError("no '=== RUN' or '--- PASS/FAIL' lines: not `go test -v` output",
                          file=path)
    frame = pd.DataFrame(list(tests.values()), columns=["test", "status", "seconds", "line"])
    frame.attrs["source"] = str(path)
    return frame
