"""Pesto (SOSP'25) and the Basil (SOSP'21) sections of its artifact guide: loaders and knees.

Every experiment of the Pequin artifact writes the same files (`reprobook.papers.pesto.parsers`):
one ``out/stats.json`` per client setting with its resolved config beside ``out/``. The
loaders read every ``stats.json`` among a claim's outputs, label each setting from its
resolved config, pool repeated settings, and mark the knee of each throughput–latency
curve (`reprobook.papers.pesto.parsers.knee`). Where an experiment directory holds the authors'
``plots/*.csv``, they are checked against the statistics.

Labels come from the config (``replication_protocol`` and its settings, ``benchmark_name``,
``num_shards``, ...) and, for the microbenchmarks, from the authors' config names; a
config that reprobook generated carries them in its ``_reprobook_labels`` comment key,
which wins.

The helpers at the end draw throughput–latency curves with their knees and tabulate the
knees and the guide's ratios, for the claim pages.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Iterable, Mapping

from reprobook.errors import OutputError
from reprobook.papers.pesto import parsers as parse
from reprobook.core.loaders import loader
from reprobook.lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")

LABELS_KEY = "_reprobook_labels"
"""The comment key (underscore: the experiment scripts ignore it) holding a generated config's labels."""
WORKLOADS = {"tpcc-sql": "TPCC", "auctionmark-sql": "Auctionmark", "seats-sql": "Seats", "rw-sql": "RW-SQL",
             "tpcc": "TPCC", "tpcc-sync": "TPCC", "smallbank": "Smallbank", "retwis": "Retwis", "rw": "RW"}
"""``benchmark_name`` -> the guide's workload name."""
MICRO = {"Uniform-Eager": ("snapshot", "U", "Ideal"), "Uniform-Eager-low": ("snapshot", "U", "Ideal"),
         "Zipf-Eager": ("snapshot", "Z", "Ideal"),
         "Uniform-FailEager": ("snapshot", "U", "FailEager"), "Uniform-FailEager-low": ("snapshot", "U", "FailEager"),
         "Zipf-FailEager": ("snapshot", "Z", "FailEager"),
         "Uniform-Inconsistent": ("snapshot", "U", "Incon"), "Zipf-Inconsistent": ("snapshot", "Z", "Incon"),
         "Uniform-NoFP": ("failure", "U", "NoFP"), "Uniform-Failure-0": ("failure", "U", "NoFP"),
         "Zipf-Failure-0": ("failure", "Z", "NoFP"),
         "Uniform-Failure-2": ("failure", "U", "FP"), "Uniform-Failure-2-high": ("failure", "U", "FP"),
         "Zipf-Failure-2": ("failure", "Z", "FP")}
"""The authors' microbenchmark config names (``experiment-configs/Pesto/2-Microbenchmarks``) ->
(experiment, access pattern, mode) as the guide's tables name them."""
FAILURE_TYPES = {"client-equivocate-simulated": "equiv-forced", "client-equivocate": "equiv-real",
                 "client-crash": "stall-early", "client-stall-after-p1": "stall-late"}
"""Basil's ``inject_failure_type`` -> the guide's failure types (a proportion of 0 is ``no-failures``)."""
CURVE = ["experiment", "system", "workload", "shards", "scale", "access", "mode", "type", "range_size"]
"""The labels that make one throughput–latency curve (several configs may add points to one curve,
e.g. the authors' ``-low`` configs hold the light-load settings)."""
COLUMNS = ["experiment", "system", "workload", "access", "mode", "type", "range_size", "shards", "scale",
           "config", "client_total", "clients", "runs", "tput_tx_per_s", "tput_tx_per_s_std", "latency_ms",
           "latency_ms_std", "p50_ms", "p99_ms", "tput_per_correct_client", "tput_per_correct_client_std",
           "knee", "knee_tput_tx_per_s", "knee_latency_ms"]
CLIENT_COLUMNS = ["window_s", "client_processes", "clients_committed", "clients_tput_tx_per_s", "clients_latency_ms",
                  "clients_p99_ms", "measured_s", "measured_tput_tx_per_s", "client_stats", "server_commits",
                  "clients_printed", "clients_whole_run"]
"""What the clients' own outputs say of a setting, beside the harness's statistics (`client_readings`): on a
live run of ours, where the harness leaves the clients' logs beside ``stats.json``; NaN (empty) for the
authors' outputs, which do not keep them."""
COLUMNS += [*CLIENT_COLUMNS, "directory"]
BASIL_COLUMNS = ["experiment", "system", "workload", "microbenchmark", "failure_type", "config", "crypto",
                 "shards", "reads", "fast_path", "batch", "client_total", "clients", "runs", "faulty_pct",
                 "tput_tx_per_s", "tput_tx_per_s_std", "latency_ms", "p99_ms", "tput_per_correct_client",
                 "tput_per_correct_client_std", *CLIENT_COLUMNS, "directory"]
_METRICS = ["tput_tx_per_s", "latency_ms", "p50_ms", "p99_ms", "tput_per_correct_client", "aggregate_latency_ms"]
_SETTING = ["experiment", "system", "workload", "access", "mode", "type", "range_size", "shards", "scale", "config",
            "client_total", "clients"]
"""What makes one setting: rows that agree on all of these are runs of the same setting, pooled."""
_BASIL_SETTING = ["experiment", "system", "workload", "microbenchmark", "failure_type", "config", "crypto", "shards",
                  "reads", "fast_path", "batch", "client_total", "clients"]

WORDS = {"experiment": "experiment", "system": "system", "workload": "workload", "access": "access", "mode": "mode",
         "type": "read type", "range_size": "range size", "shards": "shards", "scale": "nodes", "config": "config",
         "client_total": "clients", "clients": "client processes", "runs": "runs",
         "tput_tx_per_s": ("throughput", "tx/s"), "tput_tx_per_s_std": ("throughput's deviation", "tx/s"),
         "latency_ms": ("mean latency", "ms"), "latency_ms_std": ("mean latency's deviation", "ms"),
         "p50_ms": ("median latency", "ms"), "p99_ms": ("99th percentile latency", "ms"),
         "tput_per_correct_client": ("throughput per correct client", "tx/s"),
         "tput_per_correct_client_std": ("its deviation", "tx/s"), "knee": "knee",
         "knee_tput_tx_per_s": ("throughput at the knee", "tx/s"), "knee_latency_ms": ("latency at the knee", "ms"),
         "window_s": ("measured window", "s"), "client_processes": "client processes",
         "clients_committed": "clients that committed", "clients_tput_tx_per_s": ("the clients' own throughput", "tx/s"),
         "clients_latency_ms": ("the clients' own mean latency", "ms"),
         "clients_p99_ms": ("the clients' own 99th percentile", "ms"), "measured_s": ("measured time", "s"),
         "measured_tput_tx_per_s": ("throughput over the measured time", "tx/s"),
         "server_commits": "server commits", "microbenchmark": "microbenchmark", "failure_type": "failure type",
         "crypto": "cryptography", "reads": "reads", "fast_path": "fast path", "batch": "batch size",
         "faulty_pct": ("faulty transactions", "%"), "directory": "directory"}
"""What the columns of the Pesto and Basil tables are, to a reader (`reprobook.core.loaders.column_words`)."""


@loader("pesto.curves", words=WORDS)
def curves(outputs) -> pd.DataFrame:
    """Every Pesto claim: one row per labelled client setting, with the knee of each curve.

    Any output (files or directories) holding ``out/stats.json`` files. A setting run
    several times (``num_experiment_runs``, or again in another directory) is pooled: the
    mean over all runs and the population standard deviation (``*_std``), as
    ``eval_util.py`` summarises runs.

    Columns: :data:`COLUMNS` — ``experiment`` (``workloads``, ``point-scan``,
    ``snapshot``, ``failure``), ``system`` (``Pesto``, ``Pesto-unreplicated``,
    ``Peloton``, ``Peloton-HS``, ``Peloton-Smart``, ``Postgres``, ``Postgres-PB``,
    ``CRDB``), ``workload``, ``access`` (``U``/``Z``) and ``mode`` (``Ideal``,
    ``FailEager``, ``Incon``, ``NoFP``, ``FP``) for the microbenchmarks, ``type``
    (``Point``, ``Scan``, ``Scan-Cond``) and ``range_size`` for range reads, ``shards``,
    ``scale`` (shards; CockroachDB's node count), ``config`` (the authors' config name),
    ``client_total`` and ``clients`` (`reprobook.papers.pesto.parsers.total_clients`), ``runs``,
    the metrics of ``run_stats.combined``, ``knee`` (the curve's knee) and, on the knee's
    row only, ``knee_tput_tx_per_s`` and ``knee_latency_ms``; ``directory`` (the
    setting's directory name). ``attrs["plot_csvs"]`` lists the authors' plot CSVs
    checked against the statistics.
    """
    settings = _settings(outputs, _pesto_labels)
    frame = _pool(settings, _SETTING, extra_means=_CLIENT_MEANS)
    frame = parse.mark_knees(frame, by=CURVE, order="clients")
    frame["knee_tput_tx_per_s"] = frame["tput_tx_per_s"].where(frame["knee"])
    frame["knee_latency_ms"] = frame["latency_ms"].where(frame["knee"])
    frame = frame.sort_values([c for c in (*CURVE, "clients") if c in frame.columns], kind="stable",
                              na_position="last")
    frame = frame.reset_index(drop=True)
    out = frame.reindex(columns=COLUMNS)
    out.attrs = dict(settings.attrs)
    trials = _trial_rows(frame, out, [*_SETTING, "knee"])
    if trials:
        out.attrs["trials"] = trials
    return out


@loader("pesto.basil", words=WORDS)
def basil(outputs) -> pd.DataFrame:
    """The guide's Basil sections: client failures and the microbenchmarks on Basil's YCSB-like workloads.

    Any output holding ``out/stats.json`` files of Basil (``replication_protocol``
    ``indicus``) configs. ``workload`` is ``RW-U`` or ``RW-Z`` (``client_key_selector``
    uniform or zipf); ``failure_type`` comes from ``inject_failure_type`` (see
    :data:`FAILURE_TYPES`); ``faulty_pct`` is the runs' mean
    ``tx_attempted_failure_percentage`` when ``stats.json`` has it. The
    microbenchmark and its setting (``crypto``, ``shards``, ``reads``, ``fast_path``,
    ``batch``) come from the authors' config names in
    ``experiment-configs/Basil/<3-7>-Micro: ...``.

    Columns: :data:`BASIL_COLUMNS`.
    """
    settings = _settings(outputs, _basil_labels)
    frame = _pool(settings, _BASIL_SETTING, extra_means=("faulty_pct", *_CLIENT_MEANS))
    frame = frame.reset_index(drop=True)
    out = frame.reindex(columns=BASIL_COLUMNS)
    out.attrs = dict(settings.attrs)
    trials = _trial_rows(frame, out, _BASIL_SETTING)
    if trials:
        out.attrs["trials"] = trials
    return out


_CLIENT_MEANS = tuple(c for c in CLIENT_COLUMNS if c != "client_stats")


def client_readings(point: Path, config: Mapping, config_path: Path) -> dict:
    """A setting as its clients' own outputs tell it, beside the harness's ``out/stats.json`` (`CLIENT_COLUMNS`);
    empty when the clients' logs are not there (the authors' outputs keep only the statistics).

    ``clients_*``: the committed transactions the clients printed (``out/client-*/client-*-stdout-<run>.log``
    and their stderr, `reprobook.papers.pesto.parsers.read_clients`), divided as the harness divides them,
    by the nominal window ``window_s`` (the run's length less both ramps, from the setting's resolved
    ``config``), and their latencies pooled. The
    clients' own measured interval is longer (they end it at the first whole second past the nominal end,
    about one second more): ``measured_s`` and ``measured_tput_tx_per_s`` (each client's committed
    transactions over its own interval, summed) say what the harness's figure leaves out. ``client_stats``
    says what the clients' ``--stats_file`` JSONs hold (``empty``: ``{}``, as when the clients crash in their
    clean-up; ``written``; ``missing``). ``server_commits``: what the one server's ``--stats_file`` says it
    committed over the whole run (NaN when it keeps no count, as TAPIR's, or when there are several servers,
    whose counts overlap); ``clients_whole_run``: what the clients' own lines add up to over the same whole
    run (`reprobook.papers.pesto.parsers.whole_run_requests`, the cool-down estimated at the measured rate),
    and ``clients_printed``: the same without the cool-down (what the clients printed themselves), the two
    ends between which the server's count lies. On a cluster that shares one file system (a loopback testbed) every client directory receives
    every client's files: each file counts once.
    """
    stdout = _unique(point.glob("out/client-*/client-*-stdout-*.log"))
    if not stdout:
        return {}
    window_s, cooldown_s = _window(config, config_path)
    stderr = {p.name.replace("-stderr-", "-stdout-"): p for p in _unique(point.glob("out/client-*/client-*-stderr-*.log"))}
    clients, _ = parse.read_clients([(p, stderr.get(p.name)) for p in stdout])
    total = clients.iloc[-1]
    states = sorted({parse.client_stats_state(p) for p in _unique(point.glob("out/client-*/client-*-stats-*.json"))})
    servers = _unique(point.glob("out/*/server-*-stats-*.json"))
    counted = parse.server_commits(servers[0]) if len(servers) == 1 else None
    return {"window_s": window_s, "client_processes": len(stdout), "clients_committed": int(total["committed"]),
            "clients_tput_tx_per_s": total["committed"] / window_s, "clients_latency_ms": total["latency_ms"],
            "clients_p99_ms": total["p99_ms"], "measured_s": total["duration_s"],
            "measured_tput_tx_per_s": total["tput_tx_per_s"], "client_stats": ", ".join(states) or "missing",
            "server_commits": counted if counted is not None else math.nan,
            "clients_printed": parse.printed_requests(clients),
            "clients_whole_run": parse.whole_run_requests(clients, cooldown_s)}


def _unique(paths: Iterable[Path]) -> list[Path]:
    """One path per file name (a shared file system gives every client directory every client's files)."""
    seen: dict[str, Path] = {}
    for p in sorted(paths):
        seen.setdefault(p.name, p)
    return sorted(seen.values(), key=lambda p: p.name)


# --------------------------------------------------------------------------- reading and labelling

def _settings(outputs, label) -> pd.DataFrame:
    """One row per ``stats.json``: its labels and the metrics of ``run_stats.combined``.

    An archive of output directories (how an imported run keeps its tree whole, or one a host left among
    the outputs) was unpacked once, when the run was imported or fetched (`reprobook.core.archives`): the
    loader reads the files it held and never opens an archive itself. An archive still packed among the
    outputs is refused, naming it.
    """
    from reprobook.core import archives
    paths = [Path(p) for files in outputs.files.values() for p in files]
    packed = [p for p in paths if archives.is_archive(p.name) and p.is_file()]
    if packed:
        raise OutputError("an archive of outputs that was never unpacked: reprobook unpacks an archive once, when "
                          "a run is imported or fetched, and never while it evaluates one. Import the archive "
                          "again (`reprobook import`), or unpack it and import its files",
                          file=packed[0])
    return _read_settings(outputs, paths, label)


def _read_settings(outputs, paths: list[Path], label) -> pd.DataFrame:
    stats = parse.find_stats(paths)
    if not stats:
        raise OutputError("no out/stats.json among the outputs; did the experiment finish, and was its "
                          "timestamped output directory fetched?", file=outputs.location or "outputs")
    rows, checked = [], []
    findings: list[str] = []  # the authors' files of one run disagreeing: shown with the verdict, not an error
    for path in stats:
        config_path = parse.point_config(path)
        config = parse.read_config(config_path)
        name, series, point = parse.resolved_name(config_path)
        stats_frame = parse.read_stats(path)
        combined = stats_frame.iloc[0]
        row = {"config": name, "series": series, "point": point, "directory": path.parent.parent.name,
               "experiment_dir": str(path.parent.parent.parent),
               "client_total": parse.config_value(config, "client_total", config_path),
               "clients": parse.total_clients(config, config_path), "runs": int(combined["runs"]),
               **{m: combined[m] for m in _METRICS}, **{f"{m}_std": combined.get(f"{m}_std", math.nan)
                                                        for m in _METRICS}}
        row.update(label(config, config_path, name, path))
        row.update(client_readings(path.parent.parent, config, config_path))
        generated = config.get(LABELS_KEY)
        if isinstance(generated, Mapping):
            row.update({k: v for k, v in generated.items() if k in COLUMNS or k in BASIL_COLUMNS})
        row["_trials"] = _run_trials(stats_frame.attrs["runs"], combined, path, findings)
        rows.append(row)
    frame = pd.DataFrame(rows)
    for directory, group in frame.groupby("experiment_dir", sort=True):
        plots = Path(directory) / "plots"
        if (plots / "tput-clients.csv").is_file() and (plots / "lat-tput.csv").is_file():
            ordered = group.sort_values(["series", "point"])
            parse.check_plot_csvs(plots, ordered, findings=findings,
                                  medians=lambda idx=list(ordered.index): [parse.aggregate_value(stats[i], "p50")
                                                                           for i in idx])
            checked += [str(plots / "tput-clients.csv"), str(plots / "lat-tput.csv")]
    frame.attrs["plot_csvs"] = checked
    frame.attrs["findings"] = findings
    frame.attrs["stats_files"] = [str(p) for p in stats]
    return frame


def _window(config: Mapping, path: Path) -> tuple[float, float]:
    """The measured window of a setting as the harness computes throughput over it (the run's length less both
    ramps), and its cool-down, from its resolved config."""
    length, up, down = (float(parse.config_value(config, k, path)) for k in
                        ("client_experiment_length", "client_ramp_up", "client_ramp_down"))
    return length - up - down, down


def _run_trials(runs: list[dict], combined: pd.Series, path: Path, findings: list[str]) -> list[dict]:
    """A setting's runs as trials of its metrics, when their mean is what ``run_stats`` says.

    ``run_stats.combined`` summarises the runs; where the two disagree (a hand-edited or partly
    rewritten ``stats.json``) that is a finding, and the setting is judged on ``run_stats`` alone.
    """
    for column in ("tput_tx_per_s", "latency_ms"):
        values = [r[column] for r in runs]
        if values and not math.isclose(float(np.mean(values)), float(combined[column]), rel_tol=1e-9, abs_tol=1e-12):
            metric = {"tput_tx_per_s": "tput", "latency_ms": "mean"}[column]
            findings.append(f"{path}, field 'run_stats.combined.{metric}.mean': it says {combined[column]:.6g}, "
                            f"but the mean of its {len(values)} runs (runs[*].combined.{metric}) is "
                            f"{float(np.mean(values)):.6g}; the setting is judged on run_stats, without trials")
            return []
    return runs


def _trial_rows(frame: pd.DataFrame, out: pd.DataFrame, labels: list[str]) -> dict | None:
    """``attrs["trials"]`` of a loader's table: each setting's runs, labelled as its row (see
    `reprobook.core.checks`), so that a setting run several times is judged with an interval."""
    keys = [c for c in labels if c in out.columns]
    rows = []
    for (_, setting), trials in zip(out.iterrows(), frame["_trials"]):
        if not trials:
            return None    # a setting without per-run statistics: the table is judged as it is
        base = {k: setting[k] for k in keys}
        rows += [{**base, "trial": i, **t} for i, t in enumerate(trials)]
    return {"column": "trial", "statistic": "mean", "keys": keys, "rows": rows} if rows else None


def _pesto_labels(config: Mapping, path: Path, name: str, stats: Path) -> dict:
    protocol = _scalar(config, "replication_protocol", path)
    settings = _protocol_settings(config, path)
    benchmark = _scalar(config, "benchmark_name", path)
    workload = WORKLOADS.get(benchmark, benchmark)
    shards = _int(config, "num_shards", path)
    row = {"system": _system(protocol, config, settings, path), "workload": workload, "shards": shards,
           "scale": len(config["server_names"]) if protocol == "crdb" else shards}
    if workload in ("TPCC", "Auctionmark", "Seats"):
        row["experiment"] = "workloads"
    authors = re.sub(r"-c[0-9]+$", "", name)   # a config reprobook derived for a client count: <name>-c<clients>
    # the authors name the point-scan configs by their range, <rows>.json (reprobook: <folder>-<rows>.json)
    rows = re.fullmatch(r"(?:.*-)?([0-9]+)", authors)
    if benchmark == "rw-sql" and rows and config.get("max_range") == int(rows.group(1)):
        row["experiment"] = "point-scan"
        # the point reads' configs set rw_secondary_condition too: scan_as_point decides
        row["type"] = ("Point" if config.get("scan_as_point") is True else
                       "Scan-Cond" if config.get("rw_secondary_condition") is True else "Scan")
        row["range_size"] = config.get("max_range")
    if authors in MICRO:
        row["experiment"], row["access"], row["mode"] = MICRO[authors]
    return row


def _basil_labels(config: Mapping, path: Path, name: str, stats: Path) -> dict:
    protocol = _scalar(config, "replication_protocol", path)
    settings = _protocol_settings(config, path)
    benchmark = _scalar(config, "benchmark_name", path)
    selector = config.get("client_key_selector")
    workload = ({"uniform": "RW-U", "zipf": "RW-Z"}.get(selector, "RW") if benchmark == "rw"
                else WORKLOADS.get(benchmark, benchmark))
    row = {"system": {"indicus": "Basil", "tapir": "Tapir", "hotstuff": "TxHotstuff",
                      "bftsmart": "TxBFTSmart"}.get(protocol, protocol),
           "workload": workload, "shards": _int(config, "num_shards", path)}
    proportion = settings.get("inject_failure_proportion", 0)
    faulty = parse.run_values(stats, "tx_attempted_failure_percentage")
    row["faulty_pct"] = float(np.mean(faulty)) if faulty else math.nan
    authors, labels = _basil_name(name)
    if authors != name:   # the authors' name of a config reprobook derived and named (folders, client count)
        row["config"] = authors
    if labels is None:
        row["experiment"] = "client-failures"
        kind = settings.get("inject_failure_type")
        row["failure_type"] = "no-failures" if not proportion else FAILURE_TYPES.get(kind, kind)
        return row
    row["experiment"] = "micro"
    row.update(labels)
    return row


_BASIL_FAILURES = r"Indicus-(NoFailures|0|[0-9]+-[0-9]+)"


def _basil_name(name: str) -> tuple[str, dict | None]:
    """The authors' name of a Basil config and its microbenchmark labels (None: a client-failures config).

    reprobook names the configs it derives so that they stay apart (`reprobook.papers.pesto.pequin.input_names`):
    the folders that tell two same-named files apart come first (``RW-U-EquivReal-Indicus-90-2``) and a
    cluster of ours adds the client count (``...-c4``). The authors' name is the longest ``-``-separated tail
    that is one of theirs; a name that is none of theirs stays as it is, with no microbenchmark labels."""
    bare = re.sub(r"-c[0-9]+$", "", name)
    parts = bare.split("-")
    for k in range(len(parts)):
        tail = "-".join(parts[k:])
        if re.fullmatch(_BASIL_FAILURES, tail):
            return tail, None
        for pattern, labels in _BASIL_MICRO:
            match = re.fullmatch(pattern, tail)
            if match:
                return tail, {key: (v(match) if callable(v) else v) for key, v in labels.items()}
    return name, {}


_BASIL_MICRO = [
    (r"Indicus", {"microbenchmark": "crypto", "crypto": "on"}),
    (r"Indicus-NoCrypto", {"microbenchmark": "crypto", "crypto": "off"}),
    (r"(1|f\+1|2f\+1)", {"microbenchmark": "reads", "reads": lambda m: m.group(1)}),
    (r"([0-9]+)-Indicus-RW-U", {"microbenchmark": "sharding", "crypto": "on", "shards": lambda m: int(m.group(1))}),
    (r"(?:([0-9]+)-RW-U-cryptoOFF|base-config_cryptoOFF_([0-9]+))",
     {"microbenchmark": "sharding", "crypto": "off", "shards": lambda m: int(m.group(1) or m.group(2))}),
    (r"Indicus_([0-9]+)_FP_(ON|OFF)", {"microbenchmark": "fast-path", "fast_path": lambda m: m.group(2).lower()}),
    (r"Indicus_([0-9]+)", {"microbenchmark": "batching", "batch": lambda m: int(m.group(1))}),
]
"""The authors' Basil microbenchmark config names -> the microbenchmark and its setting."""


def _system(protocol: str, config: Mapping, settings: Mapping, path: Path) -> str:
    if protocol == "pequin":
        return "Pesto-unreplicated" if config.get("fault_tolerance") == 0 else "Pesto"
    if protocol == "peloton-smr":
        return {0: "Peloton", 1: "Peloton-HS", 2: "Peloton-Smart"}.get(settings.get("SMR_mode"), "Peloton-SMR")
    if protocol == "pg":
        return "Postgres-PB" if config.get("pg_replicated") is True else "Postgres"
    return {"crdb": "CRDB", "indicus": "Basil", "tapir": "Tapir"}.get(protocol, protocol)


def _scalar(config: Mapping, key: str, path: Path) -> str:
    return parse.config_value(config, key, path, str)


def _int(config: Mapping, key: str, path: Path) -> int:
    return parse.config_value(config, key, path, int) if key in config else 1


def _protocol_settings(config: Mapping, path: Path) -> Mapping:
    settings = config.get("replication_protocol_settings", {})
    if not isinstance(settings, Mapping):
        raise OutputError(f"'replication_protocol_settings' is {type(settings).__name__}, expected an object "
                          "(is this a resolved config?)", file=path, field="replication_protocol_settings")
    return settings


def _pool(frame: pd.DataFrame, keys: list[str], extra_means: Iterable[str] = ()) -> pd.DataFrame:
    """Pool the rows sharing ``keys`` (and client count): run-weighted means, pooled population spread."""
    keys = [k for k in keys if k in frame.columns]
    metrics = [m for m in _METRICS if m in frame.columns]
    rows = []
    for _, g in frame.groupby(keys, dropna=False, sort=False):
        n = g["runs"].to_numpy(float)
        row = {k: g[k].iloc[0] for k in keys}
        row["runs"] = int(n.sum())
        for m in metrics:
            means, std = g[m].to_numpy(float), g[f"{m}_std"].to_numpy(float)
            ok = np.isfinite(means)
            if not ok.any():
                row[m] = row[f"{m}_std"] = math.nan
                continue
            w, means, std = n[ok], means[ok], np.nan_to_num(std[ok])
            mean = float(np.sum(w * means) / w.sum())
            row[m] = mean
            row[f"{m}_std"] = float(math.sqrt(max(np.sum(w * (std ** 2 + means ** 2)) / w.sum() - mean ** 2, 0)))
        for m in extra_means:
            row[m] = float(g[m].mean()) if m in g else math.nan
        if "client_stats" in g:
            row["client_stats"] = ", ".join(sorted({str(v) for v in g["client_stats"] if isinstance(v, str)}))
        row["directory"] = ", ".join(g["directory"])
        if "_trials" in g:
            row["_trials"] = [t for ts in g["_trials"] for t in ts] if all(len(ts) for ts in g["_trials"]) else []
        rows.append(row)
    out = pd.DataFrame(rows)
    out.attrs = dict(frame.attrs)
    return out


def series_configs(outputs) -> list[Path]:
    """The configs among ``outputs`` that ``run_multiple_experiments.py`` can run again.

    The script writes, beside its output, each series of a config as ``<name>-<i>.json``
    with the groups of settings it has yet to iterate (``experiment_independent_vars_unused``);
    those are the authors' configs as they ran them. The resolved configs beside ``out/``
    have none left.
    """
    found = []
    for path in sorted({Path(p) for files in outputs.files.values() for p in files}):
        if path.suffix != ".json" or path.name == "stats.json" or (path.parent / "out").is_dir():
            continue
        try:
            config = parse.read_config(path)
        except OutputError:
            continue
        if config.get("experiment_independent_vars_unused"):
            found.append(path)
    return found


# --------------------------------------------------------------------------- knees and curves for the pages

def published_curves(claim, *, x: str = "tput_tx_per_s", y: str = "latency_ms") -> pd.DataFrame:
    """The claim's published throughput and latency cells paired into points, with each curve's knee.

    The cells of ``x`` and ``y`` that share their labels make one point; a curve is the
    points that share every label but the load, which is ``client_total`` where the
    table gives it and else ``point`` (the column order of the guide's table). The knee
    is :func:`reprobook.papers.pesto.parsers.knee`, as for measured curves.

    Returns
    -------
    DataFrame
        The labels, ``x``, ``y`` and ``knee``; empty when the claim has no such cells.
    """
    from reprobook.core.published import published_frame
    xs, ys = published_frame(claim.published, y=x), published_frame(claim.published, y=y)
    if xs.empty or ys.empty:
        return pd.DataFrame()
    meta = {"published_id", "precision", "source", "source_name"}
    labels = [c for c in xs.columns if c not in meta and c != x and c in ys.columns]
    points = xs.drop(columns=list(meta)).merge(ys.drop(columns=list(meta)), on=labels, how="left")
    points = points.dropna(subset=[x]).reset_index(drop=True)
    loads = [c for c in ("client_total", "point") if c in points]
    if not loads:
        return parse.mark_knees(points, by=labels, order=labels[-1], x=x, y=y)
    points["_load"] = points[loads].bfill(axis=1).iloc[:, 0].astype(float)
    by = [c for c in labels if c not in loads]
    return parse.mark_knees(points, by=by, order="_load", x=x, y=y).drop(columns="_load")


def knees(frame: pd.DataFrame, *, by: Iterable[str], x: str = "tput_tx_per_s",
          y: str = "latency_ms") -> pd.DataFrame:
    """The knee rows of ``frame`` (measured or :func:`published_curves`), one per curve, labelled by ``by``."""
    if frame is None or frame.empty or "knee" not in frame:
        return pd.DataFrame(columns=[*by, x, y])
    by = [c for c in by if c in frame.columns]
    return frame[frame["knee"]][[*by, x, y]].reset_index(drop=True)


def knee_ratios(claim, measured: pd.DataFrame | None = None, *, by: str = "system",
                where: str = "workload") -> pd.DataFrame:
    """The guide's ratios beside the same ratios at the knees of the published curves and of the measured ones.

    The guide's ratios are the claim's published numbers labelled ``numerator``,
    ``denominator``, ``measure`` (``throughput`` or ``latency``) and ``workload``; each is
    recomputed as numerator / denominator of the knee values. ``measured`` rows other than
    one shard are left out.
    """
    columns = {"throughput": "tput_tx_per_s", "latency": "latency_ms"}
    pk = knees(published_curves(claim), by=[by, where])
    if measured is not None and not measured.empty and "shards" in measured:
        measured = measured[measured["shards"] == 1]
    mk = knees(measured, by=[by, where]) if measured is not None and not measured.empty else pk.iloc[0:0]
    rows = []
    for n in claim.published:
        lab = n.labels
        if not {"numerator", "denominator", "measure", where} <= set(lab):
            continue
        col = columns[lab["measure"]]

        def ratio(k):
            top = k[(k[by] == lab["numerator"]) & (k[where] == lab[where])][col]
            bottom = k[(k[by] == lab["denominator"]) & (k[where] == lab[where])][col]
            return float(top.iloc[0] / bottom.iloc[0]) if len(top) and len(bottom) else math.nan
        rows.append({where: lab[where], "ratio": f"{lab['numerator']} / {lab['denominator']}",
                     "measure": lab["measure"], "guide": n.value, "published curves' knees": ratio(pk),
                     "measured knees": ratio(mk)})
    return pd.DataFrame(rows)


def plot_curves(data: pd.DataFrame | None, published: pd.DataFrame | None = None, *, x: str = "tput_tx_per_s",
                y: str = "latency_ms", hue: str = "system", select: Mapping | None = None, ax=None,
                title: str | None = None, xlabel: str = "throughput (tx/s)", ylabel: str = "mean latency (ms)"):
    """Latency against throughput: measured curves solid, published ones hollow and dashed, knees as stars.

    Parameters
    ----------
    data : DataFrame or None
        Measured rows (:func:`curves`), with ``knee``; drawn in load order (``clients``).
    published : DataFrame or None
        :func:`published_curves`.
    select : mapping, optional
        ``{column: value or list}`` applied to both.

    Returns
    -------
    matplotlib.axes.Axes
    """
    import matplotlib.pyplot as plt
    import seaborn as sns
    from reprobook.core.checks import matches
    ax = ax or plt.gca()

    def pick(frame):
        if frame is None or frame.empty:
            return pd.DataFrame(columns=[x, y, hue, "knee"])
        for col, want in dict(select or {}).items():
            if col in frame:
                frame = frame[matches(frame[col], want)]
        return frame

    data, published = pick(data), pick(published)
    groups = list(dict.fromkeys([*published.get(hue, pd.Series(dtype=object)).dropna(),
                                 *data.get(hue, pd.Series(dtype=object)).dropna()]))
    colours = dict(zip(groups, sns.color_palette("colorblind", max(len(groups), 1))))
    # each system its marker as well as its colour: colour is never the only thing telling the curves apart
    shapes = ("o", "s", "^", "v", "P", "X", "<", ">", "h", "d")
    markers = {g: shapes[i % len(shapes)] for i, g in enumerate(groups)}
    for g in groups:
        pub = published[published[hue] == g] if hue in published else published.iloc[0:0]
        if not pub.empty:
            order = "client_total" if "client_total" in pub else "point" if "point" in pub else x
            pub = pub.sort_values(order)
            ax.plot(pub[x], pub[y], linestyle="--", marker=markers[g], markerfacecolor="none", color=colours[g],
                    alpha=0.8, label=f"{g} (published)")
            k = pub[pub["knee"]]
            ax.plot(k[x], k[y], marker="*", markersize=16, markerfacecolor="none", markeredgewidth=1.5,
                    linestyle="none", color=colours[g], zorder=5)
        mine = data[data[hue] == g] if hue in data else data.iloc[0:0]
        if not mine.empty:
            mine = mine.sort_values("clients" if "clients" in mine else x)
            ax.plot(mine[x], mine[y], linestyle="-", marker=markers[g], color=colours[g], label=f"{g} (measured)",
                    zorder=4)
            k = mine[mine["knee"].astype(bool)]
            ax.plot(k[x], k[y], marker="*", markersize=18, linestyle="none", color=colours[g], zorder=6,
                    markeredgecolor="black")
            for _, row in k.iterrows():
                ax.annotate(f"knee {row[x]:.0f} tx/s, {row[y]:.1f} ms", (row[x], row[y]),
                            textcoords="offset points", xytext=(8, -14), fontsize="small")
    if data.empty:
        ax.text(0.98, 0.97, "no measured data: not run", transform=ax.transAxes, ha="right", va="top",
                fontsize="small", color="0.35")
    ax.plot([], [], marker="*", linestyle="none", color="0.3", markersize=12, label="knee")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return ax
