"""Aardvark's outputs: dictionary trial times (one row per trial) and Table 1
vector-commitment latencies (one row per iteration), as tidy DataFrames.

Malformed input raises :class:`~reprobook.errors.OutputError` naming the file,
the 1-based line and the field. The generic parts (reading lines, numbers and
counts, Go durations and ``go test`` timing lines) are the format kit's
(`reprobook.formats.text`, `reprobook.formats.gotest`); what is left here is
Aardvark's: the row names, the op letters and the file-name conventions.
"""

from __future__ import annotations

import csv
import functools
import io
import re
import statistics
import warnings
from pathlib import Path

from reprobook.errors import ConfigError, OutputError
from reprobook.formats.gotest import parse_go_duration, timings
from reprobook.formats.text import MAX_COUNT as _MAX_COUNT
from reprobook.formats.text import (LineIndex, parse_count, parse_number, parse_number_list, read_bytes,
                   read_lines, records, take_strings)
from reprobook.lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")

__all__ = ["VALIDATOR_OPS_PER_TRIAL", "ARCHIVE_OPS_PER_TRIAL", "parse_go_duration",
           "read_trials_csv", "read_go_test_times", "read_edrax", "read_veccom", "read_table1",
           "latency_summary", "throughput", "throughput_summary"]

VALIDATOR_OPS_PER_TRIAL = 100_000
"""Operations in one validator trial."""
ARCHIVE_OPS_PER_TRIAL = 10_000
"""Operations in one archive trial."""

_OPS = {"m": "modify", "c": "create", "d": "delete"}

_TRIAL_COLUMNS = ["role", "op", "cores", "trial", "seconds"]
_LATENCY_COLUMNS = ["system", "op", "iteration", "latency_us"]
_EDRAX_ROWS = ("verify", "commit_update", "proof_update", "100micros", "errs")
_VECCOM_SYSTEMS = {"pairing": "aardvark", "merkle": "merkle"}
_VECCOM_OPS = ("commit", "open", "verify", "commit_update", "proof_update")
_VECCOM_ROW = re.compile(rf"bench_({'|'.join(_VECCOM_SYSTEMS)})_({'|'.join(_VECCOM_OPS)})")
_TIMING_LABEL = r"(?:archive\s+)?[A-Za-z]"  # "m time: 33.5s", "archive d time: 13m2s"


@functools.cache
def _op_codes():
    """Byte -> the index of its operation in `_OPS` (-1: none)."""
    codes = np.full(256, -1, dtype="int64")
    codes[[ord(letter) for letter in _OPS]] = range(len(_OPS))
    return codes


def read_trials_csv(path: str | Path, *, role: str) -> pd.DataFrame:
    """Read the authors' merged trial times, ``validators.csv`` or ``archives.csv``.

    Parameters
    ----------
    path : str or Path
        Lines ``op,cores,seconds``, no header; op ``m``/``c``/``d``.
    role : {"validator", "archive"}
        The file does not say.

    Returns
    -------
    DataFrame
        Columns ``role``, ``op``, ``cores`` (int), ``trial`` (1-based per
        (op, cores), in file order), ``seconds`` (float); ``attrs["source"]``.
    """
    _check_role(role)
    fast = _trials_on_the_frame(path, role)
    if fast is not None:
        return fast
    path, lines = read_lines(path)
    rows = []
    for no, text in records(lines):
        fields = [field.strip() for field in text.split(",")]
        if len(fields) != 3:
            raise OutputError(f"expected 3 fields 'op,cores,seconds', found {len(fields)}",
                              file=path, line=no)
        letter, cores, seconds = fields
        rows.append((role, _op(letter, path, no),
                     parse_count(cores, file=path, line=no, field="cores"),
                     parse_number(seconds, file=path, line=no, field="seconds", positive=True)))
    return _trials_frame(rows, path)


def _trials_on_the_frame(path: str | Path, role: str) -> pd.DataFrame | None:
    """:func:`read_trials_csv` by pandas' C reader, checked on the frame; None if anything is off.

    The op letters are read straight from the bytes (each row starts with one and a comma),
    the numbers by the C reader. Anything else (blanks, quotes, signs, a longer first field,
    a value that does not convert) and the file is read again row by row, which names the
    line and field at fault.
    """
    try:
        path, data = read_bytes(path)
    except OutputError:
        return None
    if any(mark in data for mark in (b'"', b"+", b" ", b"\t")) or data.count(b"\r") != data.count(b"\r\n"):
        return None
    index = LineIndex(data)
    if (index.blank & (index.ends > index.starts)).any():
        return None
    lines = index.numbers()
    starts = index.starts[lines - 1]
    arr = index.array
    if (starts + 1 >= len(arr)).any() or not (arr[starts + 1] == ord(",")).all():
        return None
    codes = _op_codes()[arr[starts]]
    if (codes < 0).any() or data.count(b",") != 2 * len(lines):  # with the C reader's checks: three fields a row
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)  # a row of more than three fields
            warnings.simplefilter("ignore", RuntimeWarning)  # a value that does not cast: checked below
            frame = pd.read_csv(io.BytesIO(data), header=None, names=[0, 1, 2], usecols=[1, 2], index_col=False,
                                dtype={1: "int64", 2: "float64"}, na_filter=False, skip_blank_lines=True,
                                engine="c", quoting=csv.QUOTE_NONE)
    except (ValueError, OverflowError, pd.errors.ParserError, pd.errors.ParserWarning):
        return None
    cores, seconds = frame[1].to_numpy(), frame[2].to_numpy()
    if len(frame) != len(lines) or not (((cores >= 1) & (cores < _MAX_COUNT)).all()
                                        and (seconds > 0).all() and np.isfinite(seconds).all()):
        return None
    n = len(frame)
    key = codes * (int(cores.max()) + 1) + cores  # (op, cores): the trial counter's group
    trial = np.empty(n, dtype="int64")
    for group in np.flatnonzero(np.bincount(key)):  # a few groups: op letters times core counts
        rows = np.flatnonzero(key == group)
        trial[rows] = np.arange(1, len(rows) + 1)
    out = pd.DataFrame({"role": pd.Series(role, index=pd.RangeIndex(n), dtype="str"),
                        "op": pd.Categorical.from_codes(codes, list(_OPS.values())).astype("str"),
                        "cores": cores, "trial": trial, "seconds": seconds})
    out.attrs["source"] = str(path)
    return out


def read_go_test_times(path: str | Path, *, role: str | None = None,
                       cores: int | None = None) -> pd.DataFrame:
    """Read the timing lines of a raw ``outN.txt`` or ``aoutN.txt`` log.

    These are ``go test -v`` output of ``cores.sh`` (validators on N cores) and
    ``acores.sh`` (archives); only lines like ``archive m time: 6m51.5s`` count.

    Parameters
    ----------
    path : str or Path
    role : {"validator", "archive"}, optional
        Default: ``"archive"`` for lines with the ``archive`` prefix or files
        named ``aout*``, else ``"validator"``.
    cores : int, optional
        Default: the N in the file name.

    Returns
    -------
    DataFrame
        As :func:`read_trials_csv`; trials numbered per (role, op, cores).
    """
    if role is not None:
        _check_role(role)
    if cores is not None and (type(cores) is not int or not 0 < cores < _MAX_COUNT):
        raise ConfigError(f"cores must be a positive integer, not {cores!r}", key="cores")
    path, lines = read_lines(path)
    if cores is None:
        match = re.fullmatch(r"a?out([0-9]+)\.txt", path.name)
        if not match:
            raise OutputError("cannot tell the core count from the file name (expected outN.txt "
                              "or aoutN.txt); pass cores=", file=path, field="cores")
        cores = parse_count(match.group(1), file=path, field="cores")
    file_role = "archive" if path.name.startswith("aout") else "validator"
    rows = []
    for no, label, seconds in timings(lines, file=path, label=_TIMING_LABEL):
        prefix = label.startswith("archive ")
        if prefix and role == "validator":
            raise OutputError("an archive timing, but role='validator' was given",
                              file=path, line=no, field="role")
        if seconds <= 0:
            raise OutputError(f"time {seconds!r} s is not positive", file=path, line=no,
                              field="time")
        line_role = role or ("archive" if prefix else file_role)
        rows.append((line_role, _op(label[-1], path, no), cores, seconds))
    if not rows:
        raise OutputError("no timing lines such as 'm time: 33.5s'; did the go test run finish?",
                          file=path)
    return _trials_frame(rows, path)


def read_edrax(path: str | Path) -> pd.DataFrame:
    """Read EDRAX's ``results`` (or ``bench.csv``): lines ``name,v1,v2,...,`` in µs.

    Rows ``verify``, ``commit_update``, ``proof_update``; ``100micros`` (a
    timed 100 µs sleep, calibrating the timer); ``errs,N`` (a counter).

    Returns
    -------
    DataFrame
        Columns ``system`` (``"edrax"``), ``op``, ``iteration`` (1-based),
        ``latency_us``. ``attrs`` holds ``calibration_100us_us`` (median of
        the calibration row), ``errs`` and ``source``.
    """
    path, lines = read_lines(path)
    rows: dict[str, list[float]] = {}
    where: dict[str, int] = {}
    for no, text in records(lines):
        name, _, rest = text.partition(",")
        name = name.strip()
        if name not in _EDRAX_ROWS:
            raise OutputError(f"unknown row {name!r}; expected one of {', '.join(_EDRAX_ROWS)}",
                              file=path, line=no, field="name")
        if name in rows:
            raise OutputError(f"second {name!r} row (the first is on line {where[name]})",
                              file=path, line=no, field=name)
        values = rest.split(",")
        if " " in rest or "\t" in rest:
            values = [value.strip() for value in values]
        if values[-1] == "":
            values.pop()  # the trailing comma
        if name == "errs" and len(values) != 1:
            raise OutputError(f"expected 'errs,N', found {len(values)} values",
                              file=path, line=no, field=name)
        rows[name] = ([parse_count(values[0], file=path, line=no, field=name, minimum=0)]
                      if name == "errs" else parse_number_list(values, file=path, line=no, field=name))
        where[name] = no
    _require_rows([name for name in _EDRAX_ROWS if name not in rows], path)
    ops = _EDRAX_ROWS[:3]
    for op in ops:
        if len(rows[op]) != len(rows["verify"]):
            raise OutputError(f"{len(rows[op])} values, but 'verify' has {len(rows['verify'])}",
                              file=path, line=where[op], field=op)
    frame = _latency_frame([("edrax", op, rows[op]) for op in ops])
    frame.attrs.update(source=str(path), errs=int(rows["errs"][0]),
                       calibration_100us_us=float(statistics.median(rows["100micros"])))
    return frame


def read_veccom(path: str | Path) -> pd.DataFrame:
    """Read pointproofs' ``bench-results``: ``iters,N``, then ``bench_<scheme>_<op>,[v1, ...]``.

    Lists hold N latencies in µs. Scheme ``pairing`` is Aardvark's vector
    commitment, ``merkle`` the Merkle-tree baseline.

    Returns
    -------
    DataFrame
        Columns ``system`` (``"aardvark"`` or ``"merkle"``), ``op``,
        ``iteration`` (1-based), ``latency_us``; ``attrs`` holds ``iters``, ``source``.
    """
    path, lines = read_lines(path)
    numbered = records(lines)
    no, text = numbered[0]
    name, _, value = (part.strip() for part in text.partition(","))
    if name != "iters" or not re.fullmatch(r"[0-9]+", value) or not int(value):
        raise OutputError(f"the first line must be 'iters,N' with N > 0, not {text!r}",
                          file=path, line=no, field="iters")
    iters = int(value)
    found: dict[tuple[str, str], list[float]] = {}
    for no, text in numbered[1:]:
        name, _, rest = (part.strip() for part in text.partition(","))
        match = _VECCOM_ROW.fullmatch(name)
        if not match:
            raise OutputError(f"unknown row {name!r}; expected bench_<pairing|merkle>_<op>",
                              file=path, line=no, field="name")
        key = (_VECCOM_SYSTEMS[match.group(1)], match.group(2))
        if key in found:
            raise OutputError(f"second {name!r} row", file=path, line=no, field=name)
        if not (rest.startswith("[") and rest.endswith("]")):
            raise OutputError("expected a list '[v1, v2, ...]'", file=path, line=no, field=name)
        values = _json_numbers(rest)  # the list as JSON, by the C scanner; None: item by item below
        if values is not None and len(values) == iters:
            found[key] = values
            continue
        items = [item.strip() for item in rest[1:-1].split(",")] if rest[1:-1].strip() else []
        if len(items) != iters:
            raise OutputError(f"{len(items)} values, but the first line says iters,{iters}",
                              file=path, line=no, field=name)
        found[key] = parse_number_list(items, file=path, line=no, field=name)
    _require_rows([f"bench_{scheme}_{op}" for scheme, system in _VECCOM_SYSTEMS.items()
                   for op in _VECCOM_OPS if (system, op) not in found], path)
    frame = _latency_frame([(system, op, values) for (system, op), values in found.items()])
    frame.attrs.update(source=str(path), iters=iters)
    return frame


def _json_numbers(text: str):
    """A ``[v1, v2, ...]`` list read as JSON, if every item is a finite non-negative number; else None."""
    import json
    if not text.startswith("[") or '"' in text or "true" in text or "false" in text:
        return None  # strings or booleans, which numpy would turn into numbers: item by item
    try:
        items = json.loads(text)
        if "." in text or "e" in text or "E" in text or "-" in text:
            values = np.array(items, dtype=float)  # null, NaN and Infinity become NaN or inf: refused below
        else:  # integers only (as pointproofs prints them): numpy's int64 loop, then one cast
            values = np.fromiter(items, dtype=np.int64, count=len(items)).astype(np.float64)
    except (ValueError, TypeError, OverflowError):
        return None  # items JSON does not take (``+5``, ``.5``, ``05``), or not numbers: item by item
    if values.ndim != 1 or not np.isfinite(values).all() or (values < 0).any():
        return None
    return values


def read_table1(edrax_path: str | Path, veccom_path: str | Path) -> pd.DataFrame:
    """Read both Table 1 microbenchmarks into one frame, EDRAX rows first.

    Returns
    -------
    DataFrame
        Both readers' rows; ``attrs`` merges theirs, ``source`` names both files.
    """
    edrax, veccom = read_edrax(edrax_path), read_veccom(veccom_path)
    frame = pd.concat([edrax, veccom], ignore_index=True)
    frame.attrs = {**veccom.attrs, **edrax.attrs,
                   "source": f"{edrax.attrs['source']} + {veccom.attrs['source']}"}
    return frame


def latency_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Summarise latencies per (system, op), in order of first appearance.

    Returns
    -------
    DataFrame
        Columns ``system``, ``op``, ``median_us``, ``p5_us``, ``p95_us``
        (linearly interpolated percentiles) and ``n``.
    """
    _require_columns(df, _LATENCY_COLUMNS)
    groups = df.groupby(["system", "op"], sort=False)["latency_us"]
    return groups.agg(median_us="median", p5_us=lambda s: s.quantile(0.05),
                      p95_us=lambda s: s.quantile(0.95), n="size").reset_index()


def throughput(trials: pd.DataFrame, *, ops_per_trial: int) -> pd.DataFrame:
    """Add each trial's throughput, ``ops_per_s = ops_per_trial / seconds``.

    Parameters
    ----------
    trials : DataFrame
        From :func:`read_trials_csv` or :func:`read_go_test_times`.
    ops_per_trial : int
        :data:`VALIDATOR_OPS_PER_TRIAL` or :data:`ARCHIVE_OPS_PER_TRIAL`.

    Returns
    -------
    DataFrame
        A copy with ``ops_per_trial`` and ``ops_per_s`` added. A trial whose
        ``seconds`` is not positive raises :class:`OutputError`.
    """
    _require_columns(trials, _TRIAL_COLUMNS)
    if type(ops_per_trial) is not int or ops_per_trial <= 0:
        raise ConfigError(f"ops_per_trial must be a positive integer, not {ops_per_trial!r}",
                          key="ops_per_trial")
    seconds = pd.to_numeric(trials["seconds"], errors="coerce")
    bad = ~(seconds > 0)
    if bad.any():
        row = trials.loc[bad.idxmax()]
        raise OutputError(f"trial {row['trial']} ({row['role']} {row['op']}, {row['cores']} cores)"
                          f" has seconds={row['seconds']!r}; times must be positive",
                          file=trials.attrs.get("source", "<trials table>"), field="seconds")
    out = trials.copy()
    out["ops_per_trial"] = ops_per_trial
    out["ops_per_s"] = ops_per_trial / seconds
    return out


def throughput_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Summarise throughput per (role, op, cores), sorted by those keys.

    ``mean_ops_per_s`` is total operations over total time, that is
    ``ops_per_trial / mean(seconds)``: the throughput of the mean trial. The
    mean of the per-trial rates would be higher, as it over-weights fast trials.

    Returns
    -------
    DataFrame
        Columns ``role``, ``op``, ``cores``, ``mean_ops_per_s``,
        ``min_ops_per_s``, ``max_ops_per_s``, ``trials``, ``mean_seconds``.
    """
    _require_columns(df, [*_TRIAL_COLUMNS, "ops_per_trial", "ops_per_s"])
    out = df.groupby(["role", "op", "cores"]).agg(
        ops=("ops_per_trial", "sum"), total_seconds=("seconds", "sum"),
        min_ops_per_s=("ops_per_s", "min"), max_ops_per_s=("ops_per_s", "max"),
        trials=("seconds", "size"), mean_seconds=("seconds", "mean")).reset_index()
    out.insert(3, "mean_ops_per_s", out.pop("ops") / out.pop("total_seconds"))
    return out


def _check_role(role: object) -> None:
    if role not in ("validator", "archive"):
        raise ConfigError(f"role must be 'validator' or 'archive', not {role!r}", key="role")


def _op(letter: str, path: Path, line: int) -> str:
    if letter not in _OPS:
        raise OutputError(f"unknown op {letter!r}; expected m (modify), c (create) or d (delete)",
                          file=path, line=line, field="op")
    return _OPS[letter]


def _trials_frame(rows: list[tuple], path: Path) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["role", "op", "cores", "seconds"])
    frame = frame.astype({"cores": "int64", "seconds": "float64"})
    frame["trial"] = frame.groupby(["role", "op", "cores"], sort=False).cumcount() + 1
    frame = frame[_TRIAL_COLUMNS]
    frame.attrs["source"] = str(path)
    return frame


def _latency_frame(rows: list[tuple[str, str, list[float]]]) -> pd.DataFrame:
    counts = [len(values) for *_, values in rows]

    def column(names: list[str]):  # a few names, each over a long run of rows
        unique = list(dict.fromkeys(names))
        codes = np.repeat(np.array([unique.index(n) for n in names], dtype="int64"), counts)
        return take_strings(codes, unique)  # each name checked once, not once a row
    return pd.DataFrame({
        "system": column([system for system, _, _ in rows]),
        "op": column([op for _, op, _ in rows]),
        "iteration": np.concatenate([np.arange(1, n + 1, dtype="int64") for n in counts]) if rows
        else np.zeros(0, dtype="int64"),
        "latency_us": np.concatenate([np.asarray(values, dtype="float64") for *_, values in rows]) if rows
        else np.zeros(0, dtype="float64"),
    }, copy=False)  # every column is new: no copy needed


def _require_rows(missing: list[str], path: Path) -> None:
    if missing:
        raise OutputError(f"missing rows: {', '.join(missing)}; was the benchmark cut short?",
                          file=path, field=missing[0])


def _require_columns(df: pd.DataFrame, columns: list[str]) -> None:
    missing = [column for column in columns if column not in df.columns]
    if missing:
        raise ValueError(f"the frame lacks columns {missing}; pass a frame from this module "
                         "(and run throughput() before throughput_summary())")
