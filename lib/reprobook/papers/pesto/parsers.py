"""Pesto (SOSP'25) and Basil (SOSP'21) outputs of the Pequin artifact's experiment scripts.

``experiment-scripts/run_multiple_experiments.py`` writes, for one experiment config, a
timestamped directory that holds one sub-directory per client setting (nested once more
when the config has several series)::

    <exp>/<point>/<name>-<i>-<j>.json     the resolved config of that setting
    <exp>/<point>/out/stats.json          the statistics of its runs
    <exp>/plots/tput-clients.csv          client_total,throughput   (one line per setting)
    <exp>/plots/lat-tput.csv              throughput,mean latency   (one line per setting)

``stats.json`` (``utils/eval_util.py``, ``calculate_statistics``) has three parts:
``runs`` (one object per run), ``aggregate`` (latencies pooled over the runs) and
``run_stats.<type>.<metric>``, where ``<type>`` is ``combined`` or a transaction type
(not necessarily in that order) and each metric is summarised over the runs as
``mean``, ``stddev`` (population), ``min``, ``max`` and percentiles. Latencies are in
milliseconds, throughputs in transactions per second; ``tput_s_honest`` is the
throughput divided by the number of correct clients (failure experiments).

This module reads those files (``json`` and pandas; every error names the file and the
key) and detects the knee of a throughput–latency curve (:func:`knee`).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Iterable, Mapping

from reprobook.errors import OutputError
from reprobook.formats import tables
from reprobook.lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")

METRICS = {"tput": "tput_tx_per_s", "mean": "latency_ms", "p50": "p50_ms", "p99": "p99_ms",
           "tput_s_honest": "tput_per_correct_client"}
"""``run_stats.<type>.<metric>`` -> the column it becomes (its ``mean`` over runs; the
``stddev`` over runs goes to ``<column>_std``)."""
REQUIRED = ("tput", "mean")
"""Metrics every type must have; the others become NaN when missing (``tput_s_honest`` is
written only when the config sets ``inject_failure_proportion``)."""
STATS_COLUMNS = ["type", *METRICS.values(), *(f"{c}_std" for c in METRICS.values()),
                 "aggregate_latency_ms", "runs"]
_RESOLVED = re.compile(r"(?P<name>.+)-(?P<series>[0-9]+)-(?P<point>[0-9]+)\.json")

KNEE_ALPHA = 0.3
"""Throughput gain per unit of latency growth below which more load is not worth it (see :func:`knee`)."""


def load_stats(path: str | Path) -> dict:
    """The parsed ``stats.json`` (an `OutputError` naming the line and column if it is not JSON)."""
    return _load_object(path, "a JSON object with run_stats, aggregate and runs")


def _load_object(path: str | Path, what: str) -> dict:
    path = Path(path)
    try:
        data = json.loads(path.read_bytes().decode("utf-8-sig"))
    except OSError as exc:
        raise OutputError(f"cannot read the file ({exc}); did the run finish and was it fetched?",
                          file=path) from exc
    except UnicodeDecodeError:
        raise OutputError("not UTF-8 text", file=path) from None
    except json.JSONDecodeError as exc:
        raise OutputError(f"invalid JSON at column {exc.colno}: {exc.msg}", file=path,
                          line=exc.lineno) from None
    if not isinstance(data, dict):
        raise OutputError(f"expected {what}", file=path)
    return data


def read_stats(path: str | Path) -> pd.DataFrame:
    """Read ``run_stats`` of one ``stats.json``: one row per transaction type.

    Returns
    -------
    DataFrame
        :data:`STATS_COLUMNS`: ``type`` (``combined`` first, then the others sorted), the
        mean over runs of each metric of :data:`METRICS` and its population standard
        deviation over runs (``*_std``), ``aggregate_latency_ms`` (the mean latency of
        all runs' transactions pooled, which the authors' ``lat-tput`` plot uses) and
        ``runs`` (the length of ``runs``). ``attrs["source"]`` is the path; ``attrs["runs"]`` each
        run's own ``combined`` metrics (column -> value, NaN where a run lacks one), or an empty list
        when the runs carry no per-run statistics.

    Raises
    ------
    OutputError
        Naming the file and the key (``run_stats.combined.tput.mean``) that is missing
        or not a finite number.
    """
    path = Path(path)
    data = load_stats(path)
    run_stats = _object(data, ["run_stats"], path)
    if "combined" not in run_stats:
        raise OutputError(f"no 'combined' entry (types: {', '.join(map(str, run_stats)) or 'none'})",
                          file=path, field="run_stats.combined")
    runs = data.get("runs")
    if not isinstance(runs, list) or not runs:
        raise OutputError("expected a non-empty list of runs", file=path, field="runs")
    aggregate = data.get("aggregate") if isinstance(data.get("aggregate"), dict) else {}
    types = ["combined", *sorted(t for t in run_stats if t != "combined" and isinstance(run_stats[t], dict)
                                  and not t.startswith("region-") and not t.endswith("_norm"))]
    rows = []
    for kind in types:
        stats = _object(data, ["run_stats", kind], path)
        row = {"type": kind}
        for metric, column in METRICS.items():
            if metric not in stats and metric not in REQUIRED:
                row[column] = row[f"{column}_std"] = math.nan
                continue
            summary = _object(data, ["run_stats", kind, metric], path)
            row[column] = _number(summary, ["run_stats", kind, metric, "mean"], path)
            row[f"{column}_std"] = _number(summary, ["run_stats", kind, metric, "stddev"], path)
        pooled = aggregate.get(kind, {}).get("mean") if isinstance(aggregate.get(kind), dict) else None
        row["aggregate_latency_ms"] = float(pooled) if _finite(pooled) else math.nan
        row["runs"] = len(runs)
        rows.append(row)
    frame = pd.DataFrame(rows, columns=STATS_COLUMNS).astype({"runs": "int64"})
    frame.attrs["source"] = str(path)
    frame.attrs["runs"] = _per_run(runs)
    return frame


def _per_run(runs: list) -> list[dict]:
    """Each run's ``combined`` metrics: the trials behind ``run_stats`` (empty if any run lacks them)."""
    out = []
    for run in runs:
        combined = run.get("combined") if isinstance(run, dict) else None
        if not isinstance(combined, dict) or not all(_finite(combined.get(m)) for m in REQUIRED):
            return []
        out.append({column: float(combined[m]) if _finite(combined.get(m)) else math.nan
                    for m, column in METRICS.items()})
    return out


def run_values(path: str | Path, key: str) -> list[float]:
    """A top-level number of every run of ``stats.json`` (e.g. ``tx_attempted_failure_percentage``);
    an empty list when no run has it."""
    data = load_stats(path)
    runs = data.get("runs") if isinstance(data.get("runs"), list) else []
    return [float(r[key]) for r in runs if isinstance(r, dict) and _finite(r.get(key))]


def _object(data: Mapping, keys: list, path: Path) -> Mapping:
    node = data
    for depth, key in enumerate(keys):
        if not isinstance(node, Mapping) or key not in node:
            where = ".".join(map(str, keys[:depth + 1]))
            have = ", ".join(map(str, node)) if isinstance(node, Mapping) else type(node).__name__
            raise OutputError(f"missing {where!r} (found: {have or 'nothing'})", file=path, field=where)
        node = node[key]
    if not isinstance(node, Mapping):
        raise OutputError(f"expected an object, found {type(node).__name__}", file=path,
                          field=".".join(map(str, keys)))
    return node


def _number(node: Mapping, keys: list, path: Path) -> float:
    where = ".".join(map(str, keys))
    if keys[-1] not in node:
        raise OutputError(f"missing {where!r}", file=path, field=where)
    value = node[keys[-1]]
    if not _finite(value):
        raise OutputError(f"{value!r:.40} is not a finite number", file=path, field=where)
    return float(value)


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# --------------------------------------------------------------------------- the resolved config

def read_config(path: str | Path) -> dict:
    """A resolved experiment config (``<name>-<i>-<j>.json``) or an authors' config, as a dict.

    Raises
    ------
    OutputError
        The file is not a JSON object (naming the line and column of a syntax error).
    """
    return _load_object(path, "a JSON object (an experiment config)")


def config_value(config: Mapping, key: str, path: str | Path, kind: type = int):
    """``config[key]``, checked to be a ``kind`` (an `OutputError` naming the file and the key)."""
    if key not in config:
        raise OutputError(f"the config has no {key!r}", file=path, field=key)
    value = config[key]
    ok = (isinstance(value, kind) and not isinstance(value, bool)) if kind in (int, float) else isinstance(value, kind)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        ok = True
    if not ok:
        raise OutputError(f"{key!r} is {value!r:.60}, expected {'a list' if kind is list else kind.__name__} "
                          "(is this a resolved config, one of <name>-<i>-<j>.json beside out/?)",
                          file=path, field=key)
    return value


def total_clients(config: Mapping, path: str | Path = "<config>") -> int:
    """The number of client threads one setting ran, as the experiment scripts count them.

    ``start_clients`` and ``calculate_statistics_for_run`` in ``experiment-scripts`` start
    ``client_processes_per_client_node`` processes on each of ``client_nodes_per_server``
    client nodes per server, server after server, until ``client_total`` processes run;
    each process runs ``client_threads_per_process`` clients. So::

        threads_per_process * min(client_total, servers * nodes_per_server * processes_per_node)

    The guide (seed 002, "Number of clients") prints this formula with ``max`` in place of
    ``min``; the scripts and the configs' own comment key use ``min``, and only ``min``
    gives the client counts of the guide's tables.
    """
    servers = config_value(config, "server_names", path, list)
    nodes = config_value(config, "client_nodes_per_server", path)
    processes = config_value(config, "client_processes_per_client_node", path)
    threads = config_value(config, "client_threads_per_process", path)
    total = config.get("client_total", nodes * processes * len(servers))
    if isinstance(total, bool) or not isinstance(total, int):
        raise OutputError(f"'client_total' is {total!r:.60}, expected an integer", file=path, field="client_total")
    return threads * min(total, len(servers) * nodes * processes)


def resolved_name(path: str | Path) -> tuple[str, int, int]:
    """``(config name, series, point)`` from a resolved config's file name ``<name>-<i>-<j>.json``."""
    match = _RESOLVED.fullmatch(Path(path).name)
    if not match:
        raise OutputError("not a resolved config name; expected <name>-<series>-<point>.json", file=path)
    return match.group("name"), int(match.group("series")), int(match.group("point"))


def point_config(stats_path: str | Path) -> Path:
    """The resolved config of the setting whose ``out/stats.json`` is ``stats_path``: the one
    ``<name>-<i>-<j>.json`` beside ``out/``."""
    point = Path(stats_path).parent.parent
    found = sorted(p for p in point.glob("*.json") if _RESOLVED.fullmatch(p.name))
    if len(found) != 1:
        raise OutputError(f"expected one resolved config <name>-<i>-<j>.json beside out/, found "
                          f"{len(found)}: {', '.join(p.name for p in found) or 'none'}", file=point)
    return found[0]


def find_stats(paths: Iterable[str | Path]) -> list[Path]:
    """Every ``out/stats.json`` among ``paths`` (files, or directories searched recursively)."""
    found = set()
    for path in map(Path, paths):
        if path.is_dir():
            found.update(p for p in path.rglob("stats.json") if p.parent.name == "out")
        elif path.name == "stats.json":
            found.add(path)
    return sorted(found)


# --------------------------------------------------------------------------- the authors' plot CSVs

def read_plot_csvs(plots: str | Path) -> pd.DataFrame:
    """The authors' ``plots/tput-clients.csv`` and ``plots/lat-tput.csv``, one row per setting.

    Returns
    -------
    DataFrame
        ``point`` (0-based line order), ``client_total``, ``tput_tx_per_s`` (from
        ``tput-clients``), ``lat_tput_tx_per_s`` and ``aggregate_latency_ms`` (from
        ``lat-tput``), ``tput_line``, ``lat_line``. ``attrs["files"]`` names both files.
    """
    plots = Path(plots)
    tc = tables.read_csv(plots / "tput-clients.csv", header=False, columns=["client_total", "tput_tx_per_s"],
                         types={"client_total": "int", "tput_tx_per_s": "float"}, line_column="tput_line")
    lt = tables.read_csv(plots / "lat-tput.csv", header=False,
                         columns=["lat_tput_tx_per_s", "aggregate_latency_ms"],
                         types={"lat_tput_tx_per_s": "float", "aggregate_latency_ms": "float"},
                         line_column="lat_line")
    if len(tc) != len(lt):
        raise OutputError(f"tput-clients.csv has {len(tc)} settings, lat-tput.csv {len(lt)}",
                          file=plots / "lat-tput.csv")
    frame = pd.concat([tc, lt], axis=1)
    frame.insert(0, "point", range(len(frame)))
    frame.attrs["files"] = [str(plots / "tput-clients.csv"), str(plots / "lat-tput.csv")]
    return frame


def check_plot_csvs(plots: str | Path, computed: pd.DataFrame, *, rel_tol: float = 1e-9,
                    findings: list[str] | None = None, name: str | None = None, medians=None) -> pd.DataFrame:
    """Check that the authors' plot CSVs say what the statistics say.

    ``computed`` has one row per setting of the experiment, in the order the scripts ran
    them, with ``client_total``, ``tput_tx_per_s`` and ``aggregate_latency_ms`` (the
    values the plot scripts take from ``stats.json``). ``medians`` (a function returning the pooled
    median latency of each setting, in the same order) is called only when the latencies disagree.

    Some versions of the plot script (the Basil-era outputs) write the pooled *median*
    latency to ``lat-tput.csv`` where later ones write the mean: a latency column that
    matches the medians throughout is checked against them, and that is said in a finding.

    Two files of one run that disagree are evidence about the artifact, not a reason to give
    no verdict: with ``findings`` (a list), each disagreement is appended to it as a sentence
    naming the file (as ``name``, e.g. the path inside an imported archive, when given), the
    line and the field, and the check goes on; without it, the first one raises.

    Returns
    -------
    DataFrame
        The CSV rows beside the computed values.

    Raises
    ------
    OutputError
        Without ``findings``: naming the CSV, the line and the field that disagrees.
    """
    csvs = read_plot_csvs(plots)
    plots = Path(plots)
    where = name or str(plots)
    if len(csvs) != len(computed):
        message = (f"the plot has {len(csvs)} settings, the experiment directory {len(computed)} "
                   "stats.json files")
        if findings is None:
            raise OutputError(message, file=plots / "tput-clients.csv")
        findings.append(f"{where}/tput-clients.csv: {message}; the plot files were not compared")
        return csvs
    latency = "aggregate_latency_ms"
    a = csvs["aggregate_latency_ms"].to_numpy(float)
    mean = computed["aggregate_latency_ms"].to_numpy(float)
    if medians is not None and not np.isclose(a, mean, rtol=rel_tol, atol=0).all():
        median = np.asarray(medians(), dtype=float)
        # the statistic the file records is the one most of its lines match; a line that matches neither is then
        # a disagreement of its own
        if np.isclose(a, median, rtol=1e-6, atol=0).sum() > np.isclose(a, mean, rtol=rel_tol, atol=0).sum():
            latency = "aggregate_p50_ms"
            computed = computed.assign(aggregate_p50_ms=median)
            k = int(np.flatnonzero(np.isclose(a, median, rtol=1e-6, atol=0))[0])
            note = (f"{where}/lat-tput.csv records the median latency of each setting (as this version of the "
                    f"authors' plot script writes it), not the mean that stats.json's aggregate gives: line {k + 1} "
                    f"has {a[k]:g} ms, the median {median[k]:g}, the mean {mean[k]:g}; it was checked against the "
                    f"medians")
            if findings is not None:
                findings.append(note)
    pairs = [("tput-clients.csv", "tput_line", "client_total", "client_total", 1e-9),
             ("tput-clients.csv", "tput_line", "tput_tx_per_s", "tput_tx_per_s", rel_tol),
             ("lat-tput.csv", "lat_line", "lat_tput_tx_per_s", "tput_tx_per_s", rel_tol),
             ("lat-tput.csv", "lat_line", "aggregate_latency_ms", latency,
              rel_tol if latency == "aggregate_latency_ms" else 1e-6)]
    for file, line, theirs, ours, tol in pairs:
        a = csvs[theirs].to_numpy(float)
        b = computed[ours].to_numpy(float)
        bad = ~np.isclose(a, b, rtol=tol, atol=0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            what = "the median" if ours == "aggregate_p50_ms" else "stats.json"
            message = f"the plot says {a[i]:g}, {what} says {b[i]:g}"
            if findings is None:
                raise OutputError(message, file=plots / file, line=int(csvs[line].iloc[i]), field=theirs)
            findings.append(f"{where}/{file}, line {int(csvs[line].iloc[i])}, field {theirs!r}: {message}"
                            + (f" (and {int(bad.sum()) - 1} more line(s))" if bad.sum() > 1 else "")
                            + "; the verdict is computed from stats.json")
    return csvs.assign(computed_tput_tx_per_s=computed["tput_tx_per_s"].to_numpy(),
                       computed_latency_ms=computed[latency].to_numpy())


def aggregate_value(path: str | Path, key: str, kind: str = "combined") -> float:
    """A number of ``aggregate.<kind>`` of one ``stats.json`` (``p50``: the pooled median latency); NaN if absent."""
    data = load_stats(Path(path))
    aggregate = data.get("aggregate") if isinstance(data.get("aggregate"), dict) else {}
    entry = aggregate.get(kind) if isinstance(aggregate.get(kind), dict) else {}
    value = entry.get(key)
    return float(value) if _finite(value) else math.nan


# --------------------------------------------------------------------------- knees

def knee(throughput: Iterable[float], latency: Iterable[float], *, alpha: float = KNEE_ALPHA) -> int:
    """The position of the knee of a throughput–latency curve.

    The points are taken in order of offered load (client count). A point is worth
    moving past when some later point raises throughput by at least ``alpha`` times the
    relative rise in mean latency it costs::

        X_j / X_i - 1  >=  alpha * max(0, R_j / R_i - 1)   and   X_j > X_i

    The knee is the first point not worth moving past: beyond it, more clients mostly
    queue. In a closed loop (``clients = X * R``, Little's law) added clients either raise
    throughput or wait; ``alpha = 0.3`` puts the knee where a step of load yields less
    than 0.3 % of throughput per 1 % of added latency. Points with a missing or
    non-positive value are skipped; the last valid point is the knee of a curve that never
    bends.

    On the guide's tables this gives the "ankle" points the guide names for Pesto (TPCC:
    1784 tx/s at 17.3 ms), Peloton-HS (758 at 68.3) and Peloton-Smart (785 at 39.4) on
    TPCC, and Postgres-PB on TPCC (1198 at 17.2); for Postgres-PB on Auctionmark and
    Seats it stops one setting earlier than the guide's ankle (5720 and 7471 tx/s, 6 %
    and 3 % below), where the next step buys 1–5 % throughput for over 20 % latency.

    Parameters
    ----------
    throughput, latency : array-like
        Same length, in load order.
    alpha : float
        The required throughput gain per unit of latency growth.

    Returns
    -------
    int
        The knee's position in the inputs.

    Examples
    --------
    >>> knee([1311, 1605, 1784, 1768, 1742, 1705], [11.8, 12.8, 17.3, 20.4, 23.7, 27.2])
    2
    """
    x = np.asarray(list(throughput), dtype=float)
    r = np.asarray(list(latency), dtype=float)
    if x.shape != r.shape:
        raise ValueError(f"{len(x)} throughputs but {len(r)} latencies")
    valid = np.flatnonzero(np.isfinite(x) & np.isfinite(r) & (x > 0) & (r > 0))
    if not len(valid):
        raise ValueError("no point has both a positive throughput and a positive latency")
    xs, rs = x[valid], r[valid]
    gain = xs[None, :] / xs[:, None] - 1
    cost = np.maximum(rs[None, :] / rs[:, None] - 1, 0)
    later = np.triu(np.ones((len(xs), len(xs)), dtype=bool), k=1)
    worth = later & (gain > 0) & (gain >= alpha * cost)
    return int(valid[np.flatnonzero(~worth.any(axis=1))[0]])


def mark_knees(frame: pd.DataFrame, *, by: list[str], order: str, x: str = "tput_tx_per_s",
               y: str = "latency_ms", alpha: float = KNEE_ALPHA) -> pd.DataFrame:
    """A copy of ``frame`` with a boolean column ``knee``: the :func:`knee` of each curve.

    A curve is the rows sharing the values of ``by`` (missing values count as a value),
    taken in increasing ``order`` (e.g. ``clients``); a curve without a valid point has
    no knee.
    """
    out = frame.copy()
    out["knee"] = False
    if out.empty:
        return out
    keys = [c for c in by if c in out.columns]
    groups = out.groupby(keys, dropna=False, sort=False) if keys else [((), out)]
    for _, curve in groups:
        curve = curve.sort_values(order, kind="stable")
        try:
            at = knee(curve[x], curve[y], alpha=alpha)
        except ValueError:
            continue
        out.loc[curve.index[at], "knee"] = True
    return out


# --------------------------------------------------------------------------- a benchmark client's own output

_CLIENT_NOTICES = {
    "warmup": re.compile(rb"Completed warmup period of (\d+) seconds with (\d+) requests"),
    # the interval is negative garbage when the client committed nothing in it (its start is set by the first commit)
    "completed": re.compile(rb"Completed (\d+) requests in (-?[0-9.]+) seconds"),
    "median_ns": re.compile(rb"Median latency is (\d+) ns"),
    "p90_ns": re.compile(rb"90th percentile latency is (\d+) ns"),
    "p99_ns": re.compile(rb"99th percentile latency is (\d+) ns"),
}
_OP_LINE = re.compile(rb"^([A-Za-z_][\w-]*),(\d+),(\d+),(\d+)\r?$", re.M)
_END_LINE = re.compile(rb"^#end,(\d+),(\d+)(?:,(\d+))?\r?$", re.M)
CLIENT_COLUMNS = ["file", "committed", "duration_s", "tput_tx_per_s", "latency_ms", "p50_ms", "p99_ms",
                  "reported_requests", "reported_s", "reported_p50_ms", "reported_p99_ms", "warmup_requests"]


def read_client_output(path: str | Path, stderr: str | Path | None = None) -> tuple[dict, pd.DataFrame]:
    """One benchmark client's output (``store/benchmark/async/benchmark`` stdout, stderr merged or not).

    The client prints a line ``<txn type>,<latency ns>,<end time ns>,<client id>`` for every
    transaction that committed (the lines the artifact's ``eval_util.py`` counts), ``#end,<s>,<us>,<id>``
    when its measured interval ends (its length), and on stderr ``Completed N requests in T seconds``
    and its median, 90th and 99th percentile latencies (``Notice`` lines; N counts every request,
    aborted ones too). Returns the summary (`CLIENT_COLUMNS`) and the committed transactions
    (``type``, ``latency_ms``, ``end_ms``, ``client``). ``stderr``: the client's stderr, where the
    harness keeps it apart (``client-<i>-<j>-<k>-stderr-<run>.log``).

    The clients of this artifact may crash in their clean-up after printing all this (their
    ``--stats_file`` then holds ``{}``): what is here is what they measured. A file with neither
    transactions nor a ``Completed`` line is an `OutputError` naming the file. A client that committed nothing in
    its measured interval (Basil's clients that stall their own transactions) prints its ``Completed`` line with a
    negative interval: it measured nothing (``committed`` 0, throughput 0, ``reported_s`` NaN).
    """
    path = Path(path)
    try:
        data = path.read_bytes() + (b"\n" + Path(stderr).read_bytes() if stderr else b"")
    except OSError as exc:
        raise OutputError(f"cannot read the client's output ({exc}); was it fetched?",
                          file=getattr(exc, "filename", None) or path) from exc
    ops = _OP_LINE.findall(data)
    txns = pd.DataFrame({"type": [o[0].decode() for o in ops],
                         "latency_ms": np.array([int(o[1]) for o in ops], dtype=float) / 1e6,
                         "end_ms": np.array([int(o[2]) for o in ops], dtype=float) / 1e6,
                         "client": np.array([int(o[3]) for o in ops], dtype=int)})
    notices = {k: rx.findall(data) for k, rx in _CLIENT_NOTICES.items()}
    ends = _END_LINE.findall(data)
    if not ops and not notices["completed"]:
        raise OutputError("no committed transaction lines ('<type>,<latency ns>,<end ns>,<client id>') and no "
                          "'Completed N requests in T seconds' line: the client did not get to measure "
                          "(look at its stderr and at the servers' logs)", file=path)
    duration = max((int(s) + int(us) / 1e6 for s, us, _ in ends), default=np.nan)
    reported_s = float(notices["completed"][-1][1]) if notices["completed"] else np.nan
    if not reported_s >= 0:  # no commit in the measured interval (a client that stalls its own transactions)
        reported_s = np.nan
    if not ends and notices["completed"]:
        duration = reported_s
    lat = txns["latency_ms"].to_numpy()
    summary = {
        "file": path.name, "committed": len(txns), "duration_s": duration,
        "tput_tx_per_s": 0.0 if txns.empty else (len(txns) / duration if duration and duration == duration else np.nan),
        "latency_ms": float(lat.mean()) if len(lat) else np.nan,
        "p50_ms": float(np.percentile(lat, 50)) if len(lat) else np.nan,
        "p99_ms": float(np.percentile(lat, 99)) if len(lat) else np.nan,
        "reported_requests": int(notices["completed"][-1][0]) if notices["completed"] else np.nan,
        "reported_s": reported_s,
        "reported_p50_ms": int(notices["median_ns"][-1]) / 1e6 if notices["median_ns"] else np.nan,
        "reported_p99_ms": int(notices["p99_ns"][-1]) / 1e6 if notices["p99_ns"] else np.nan,
        "warmup_requests": int(notices["warmup"][-1][1]) if notices["warmup"] else np.nan,
    }
    return summary, txns


def read_clients(paths: Iterable[str | Path | tuple]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Several clients of one setting: one summary row per client (`read_client_output`) and a last row
    ``file == "all"``: throughput summed over the clients, latencies pooled (as ``eval_util.py`` pools
    them), ``reported_*`` the clients' own figures summed (requests) or left out (percentiles). A path
    may be a pair (stdout, stderr)."""
    rows, frames = [], []
    for item in paths:
        p, err = item if isinstance(item, tuple) else (item, None)
        summary, txns = read_client_output(p, err)
        rows.append(summary)
        frames.append(txns.assign(file=Path(p).name))
    if not rows:
        raise OutputError("no client output files to read", file="<clients>")
    per = pd.DataFrame(rows, columns=CLIENT_COLUMNS)
    txns = pd.concat(frames, ignore_index=True)
    lat = txns["latency_ms"].to_numpy()
    total = {"file": "all", "committed": int(per["committed"].sum()), "duration_s": float(per["duration_s"].max()),
             "tput_tx_per_s": float(per["tput_tx_per_s"].sum()),
             "latency_ms": float(lat.mean()) if len(lat) else np.nan,
             "p50_ms": float(np.percentile(lat, 50)) if len(lat) else np.nan,
             "p99_ms": float(np.percentile(lat, 99)) if len(lat) else np.nan,
             "reported_requests": per["reported_requests"].sum(min_count=1), "reported_s": per["reported_s"].max(),
             "reported_p50_ms": np.nan, "reported_p99_ms": np.nan,
             "warmup_requests": per["warmup_requests"].sum(min_count=len(per))}
    return pd.concat([per, pd.DataFrame([total], columns=CLIENT_COLUMNS)], ignore_index=True), txns


def whole_run_requests(per: pd.DataFrame, cooldown_s: float) -> float:
    """The requests the clients of `read_clients` made over their whole run, warm-up and cool-down included.

    A client prints how many requests it completed in its warm-up and in its measured interval,
    not in its cool-down (``bench_client.cc``: the cool-down starts when the measured interval
    ends and lasts ``cooldown_s``, the config's ``client_ramp_down``); that part is estimated at
    the client's measured rate. This is the count a server's ``total_transactions_commit`` covers
    (less the few aborts), so the two can be compared. NaN if a client did not print both lines.
    The part the clients printed themselves is `printed_requests`: the server's count lies between
    the two unless the cool-down ran faster than the measured interval (on a loaded machine it runs
    slower, never faster: the estimate is the upper end).
    """
    clients = per[per["file"] != "all"]
    rate = clients["reported_requests"] / clients["reported_s"]
    return float((clients["warmup_requests"] + clients["reported_requests"] + rate * cooldown_s).sum(min_count=len(clients)))


def printed_requests(per: pd.DataFrame) -> float:
    """The requests the clients of `read_clients` printed as completed: warm-up and measured interval, the cool-down
    left out (see `whole_run_requests`). NaN if a client did not print both lines."""
    clients = per[per["file"] != "all"]
    return float((clients["warmup_requests"] + clients["reported_requests"]).sum(min_count=len(clients)))


def server_commits(path: str | Path) -> int | None:
    """The transactions a server's ``--stats_file`` says it committed (``total_transactions_commit``), over its
    whole run; None when it keeps no such count (TAPIR's server writes ``{}``)."""
    value = _load_object(Path(path), "a JSON object").get("total_transactions_commit")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def client_stats_state(path: str | Path) -> str:
    """What a client's ``--stats_file`` holds: ``"empty"`` (``{}``: the client crashed in its clean-up, as this
    artifact's clients do), ``"missing"``, or ``"written"``."""
    path = Path(path)
    if not path.exists():
        return "missing"
    data = _load_object(path, "a JSON object")
    return "written" if data else "empty"
