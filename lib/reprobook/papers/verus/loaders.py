"""Verus (SOSP'24): Claims A–E (Figs 6–8, 11–13), IronKV (Fig 9), node replication (Fig 10).

Each loader takes the authors' shipped files or the raw files of a live run and
returns one tidy frame; the formats are read by `reprobook.papers.verus.parsers` and the
format kit. Aggregations follow the authors' scripts, named in each docstring.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path
from typing import Callable

from reprobook.errors import OutputError
from reprobook.formats import jsonfmt, tables
from reprobook.papers.verus import parsers as parse
from reprobook.core.loaders import loader
from reprobook.lazy import lazy

pd = lazy("pandas")

PMLOG_MIB_APPENDED = 8192
"""MiB appended per iteration by the guide's run (``BYTES_TO_APPEND`` = 8 GiB in ``verif-storage-eval``); a live
run says its own with the parameter ``append_gib``."""
PMLOG_LOGS = {"pmdk": "pmdk", "old": "initial", "verif": "latest"}
"""The experiment's log names -> Fig 13's: libpmemlog, the initial and the latest verified log."""
IRONKV_COLUMNS = ["Language", "Threads", "Seconds", "Workload", "Number of keys", "Value size",
                  "Requests completed"]
NR_SYSTEMS = {"vnr": "Verus-NR", "verus_nr": "Verus-NR", "dafny_nr": "IronSync-NR",
              "rust_nr": "NR", "nr": "NR", "upstream_nr": "NR"}
"""Benchmark-name prefixes -> Fig 10's systems (``nr``/``upstream_nr`` is the unverified Rust NR)."""
NR_OTHER_BENCHES = ("dafny_rwlock", "shfllock", "mcs", "cpp_shared_mutex")
"""IronSync's lock benchmarks, which share its data file but are not in Fig 10."""
_NR_NAME = re.compile(r"(?P<system>vnr|verus_nr|dafny_nr|rust_nr|upstream_nr|nr)(?=$|[-_])"
                      r"(?:[-_](?P<bench>[a-z]+))?.*?(?:-wr(?P<wr>[0-9]+))?")


WORDS = {"system": "system", "verifier": "verifier", "tool": "tool", "benchmark": "benchmark", "seconds": ("time", "s"),
         "time_1core_s": ("verification time on 1 core", "s"), "time_8cores_s": ("verification time on 8 cores", "s"),
         "smt_mb": ("SMT query size", "MB"), "proof_code_ratio": "proof-to-code ratio",
         "trusted_loc": ("trusted code", "lines"), "proof_loc": ("proof", "lines"), "code_loc": ("code", "lines"),
         "mib_per_s": ("throughput", "MiB/s"), "mib_per_s_std": ("throughput's deviation", "MiB/s"),
         "mib_per_s_ci95": ("throughput's 95 % interval", "MiB/s"), "append_kib": ("append size", "KiB"),
         "append_bytes": ("append size", "bytes"), "log": "log", "iterations": "iterations",
         "kops": ("throughput", "kops/s"), "kops_ci95": ("throughput's 95 % interval", "kops/s"),
         "payload_bytes": ("value size", "bytes"), "workload": "workload", "trials": "trials",
         "mops": ("throughput", "Mops/s"), "threads": "threads", "write_pct": ("writes", "%"), "ns": ("time", "ns"),
         "timed_out": "timed out", "sample": "sample", "repetition": "repetition", "run": "run"}
"""What the columns of the Verus tables are, to a reader (`reprobook.core.loaders.column_words`)."""


@loader("verus.milli", words=WORDS)
def milli(outputs) -> pd.DataFrame:
    """Claim A (Figs 6a, 6b, 7): verification times of the linked-list millibenchmarks.

    Outputs ``oneshot`` (``results/*-oneshot.txt``), ``repeat`` (``*-repeat.csv``) and
    ``errors`` (``*-errors.csv``); the benchmark comes from each file's name.

    Columns: ``benchmark``, ``experiment``, ``tool``, ``pushes`` (Int64, repeat only),
    ``function`` (errors only: ``pop``/``index``), ``outcome`` (``success``/``error``),
    ``sample`` (1-based, per value of the other keys: the Nth file giving it),
    ``seconds`` (the median of the script's samples; NaN on timeout), ``timed_out``.
    """
    frames = []
    for experiment in ("oneshot", "repeat", "errors"):
        for path in _expand(outputs.files.get(experiment, ()), f"*-{experiment}.*"):
            if parse.milli_benchmark(path)[1] != experiment:
                raise OutputError(f"given as output {experiment!r}, but the file name says "
                                  f"{parse.milli_benchmark(path)[1]!r}", file=path,
                                  field="experiment")
            frames.append(parse.read_milli(path))
    if not frames:
        raise OutputError("none of the outputs oneshot, repeat, errors was fetched",
                          file=outputs.location or "verus.milli")
    frame = pd.concat(frames, ignore_index=True)
    keys = ["benchmark", "experiment", "tool", "pushes", "function", "outcome"]
    frame["sample"] = frame.groupby(keys, dropna=False, sort=False).cumcount() + 1
    out = frame[[*keys, "sample", "seconds", "timed_out"]]
    out.attrs["trial_column"] = "sample"   # repeated files of one benchmark: the checks judge their spread
    return out


@loader("verus.macro_stats", words=WORDS)
def macro_stats(outputs) -> pd.DataFrame:
    """Claim B (Fig 8): line counts, verification times and SMT encoding sizes.

    Outputs ``results`` (``macro-stats/results/results.json``, a live run) or, in
    reference mode, ``table_pdf`` (the artifact-rendered ``site/assets/macro-table.pdf``;
    without that name, any ``.pdf`` output); and ``manual`` (``summarize/manual.json``),
    whose hand-entered baseline values are merged as the summarizer does.

    Columns: ``system``, ``verifier``, ``trusted_loc``, ``proof_loc``, ``code_loc``,
    ``proof_code_ratio``, ``time_1core_s``, ``time_8cores_s``, ``smt_mb``.
    """
    counts = list(outputs.files.get("linecount", ())) if outputs.has("linecount") else []
    results = _files(outputs, "results", lambda p: p.name == "results.json")
    if counts and not results:
        return _macro_linecounts(counts)
    if results:
        frame = parse.read_macro_results(_only(results, "results", outputs))
    else:
        pdfs = _files(outputs, "table_pdf", lambda p: p.suffix.lower() == ".pdf")
        if not pdfs:
            raise OutputError("neither results.json (output 'results') nor the rendered "
                              "macro-table.pdf (output 'table_pdf') was fetched",
                              file=outputs.location or "verus.macro_stats")
        frame = parse.read_fig8_pdf(_only(pdfs, "table_pdf", outputs))
    manual = _files(outputs, "manual", lambda p: p.name == "manual.json")
    if manual:
        frame = parse.merge_manual(frame, _only(manual, "manual", outputs))
    order = {system: i for i, system in enumerate(parse.FIG8_SYSTEMS)}
    frame = frame.sort_values(["system", "verifier"], key=lambda s: s.map(order) if s.name ==
                              "system" else s.ne("Verus"), kind="stable")
    out = frame[parse.FIG8_COLUMNS].reset_index(drop=True)
    out.attrs = dict(frame.attrs)
    return out


def _macro_linecounts(paths) -> pd.DataFrame:
    """A rehearsal's Fig 8: the line counts of ``<project-id>/verus-linecount.json`` files, one Verus row each; the
    times and SMT size are NaN, and ``attrs["not_run"]`` says why for each of those columns."""
    rows = []
    for path in sorted(map(Path, paths)):
        project = path.parent.name
        if project not in parse.FIG8_PROJECTS:
            raise OutputError(f"the directory {project!r} names no case study; expected one of "
                              f"{', '.join(parse.FIG8_PROJECTS)}", file=path, field="project-id")
        rows.append({"system": parse.FIG8_PROJECTS[project], "verifier": "Verus", **parse.read_verus_linecount(path),
                     "time_1core_s": math.nan, "time_8cores_s": math.nan, "smt_mb": math.nan})
    frame = pd.DataFrame(rows, columns=parse.FIG8_COLUMNS)
    frame.attrs["not_run"] = {c: parse.NOT_RUN_WITHOUT_VERUS for c in ("time_1core_s", "time_8cores_s", "smt_mb")}
    return frame


@loader("verus.page_table", words=WORDS)
def page_table(outputs) -> pd.DataFrame:
    """Claim C (Fig 11): map and unmap latency of the verified and the base page table.

    Output ``log``: the benchmark's stdout (one or more runs of five lines each).

    Columns: ``op`` (``map``, ``unmap``, ``unmap-no-reclaim``), ``impl`` (``verified``,
    ``base``), ``repetition`` (1-based over all files), ``ns``.
    """
    frames, offset, toolchains = [], 0, []
    for path in _required(outputs, "log"):
        frame = parse.read_page_table_log(path)
        frame["repetition"] += offset
        offset = int(frame["repetition"].max())
        frames.append(frame)
        # a live run's log names the compiler first ("# rust: host, rustc 1.95.0 …"): it moves these timings
        with open(path, errors="replace") as f:
            toolchains += [line[len("# rust:"):].strip() for line in f if line.startswith("# rust:")]
    out = pd.concat(frames, ignore_index=True)[["op", "impl", "repetition", "ns"]]
    out.attrs["toolchain"] = "; ".join(dict.fromkeys(toolchains))
    out.attrs["trial_column"] = "repetition"   # the checks judge the mean over repetitions, with its interval
    return out


@loader("verus.mimalloc", words=WORDS)
def mimalloc(outputs) -> pd.DataFrame:
    """Claim D (Fig 12): mimalloc-bench times with mimalloc and the verified allocator.

    Output ``log``: the stdout of ``macro-perf/entry-mimalloc.sh``.

    Columns: ``benchmark``, ``allocator`` (``mimalloc``, ``verus-mimalloc``), ``seconds``
    (NaN if the run failed), ``status`` (``ok``, ``fail``), ``run`` (1-based result table).
    ``attrs``: ``procs`` (the suite's ``--procs``, from ``cores for <allocator>: N``, when the
    log says it) and ``toolchain`` (a rehearsal's ``# rust: ...`` line, else empty).
    """
    path = _only(_required(outputs, "log"), "log", outputs)
    frame = parse.read_mimalloc_log(path)
    out = frame[["benchmark", "allocator", "seconds", "status", "run"]]
    out.attrs["trial_column"] = "run"   # each result table is a trial of every benchmark
    out.attrs.update(parse.mimalloc_log_facts(path))
    return out


@loader("verus.pmlog", words=WORDS)
def pmlog(outputs) -> pd.DataFrame:
    """Claim E (Fig 13): append throughput of libpmemlog and the two verified logs.

    Output ``results``: ``results_<append size in bytes>.csv`` files, lines
    ``<log>,<µs to append 8 GiB>,`` (``artifact_eval/experiment/run.sh``); the sizes
    run 128 B to 256 KiB, Fig 13's 0.125–256 KiB axis (``run.sh`` passes bytes). As
    ``plot_verif_comparison.py`` does, each iteration's throughput is
    8192 MiB / seconds (a live run's ``append_gib`` × 1024 MiB, when it appended
    another amount); the mean and the population standard deviation are over
    iterations, and ``mib_per_s_ci95`` is the plot's error bar (Student t at 95 %
    with that standard deviation as scale).

    Columns: ``log`` (``pmdk``, ``initial``, ``latest``), ``append_kib``, ``mib_per_s``,
    ``mib_per_s_std``, ``iterations``, ``append_bytes``, ``mib_per_s_ci95``.
    """
    raw = pd.concat([_pmlog_file(path) for path in
                     _expand(_required(outputs, "results"), "results_*.csv")], ignore_index=True)
    appended = _pmlog_mib_appended(outputs)
    raw["mib_per_s"] = appended / (raw["us"] / 1e6)
    groups = raw.groupby(["append_bytes", "log"], sort=False)["mib_per_s"]
    out = groups.agg(mib_per_s="mean", mib_per_s_std=lambda s: s.std(ddof=0),
                     iterations="size").reset_index()
    out["log"] = out["log"].map(PMLOG_LOGS)
    out["append_kib"] = out["append_bytes"] / 1024
    out["mib_per_s_ci95"] = [_t_quantile(0.975, n - 1) * sd if n > 1 else math.nan
                             for n, sd in zip(out["iterations"], out["mib_per_s_std"])]
    rank = {name: i for i, name in enumerate(PMLOG_LOGS.values())}
    out = out.sort_values(["append_bytes", "log"], key=lambda s: s.map(rank) if s.name == "log"
                          else s, kind="stable").reset_index(drop=True)
    return out[["log", "append_kib", "mib_per_s", "mib_per_s_std", "iterations", "append_bytes",
                "mib_per_s_ci95"]]


@loader("verus.ironkv", words=WORDS)
def ironkv(outputs) -> pd.DataFrame:
    """Set 2 (Fig 9): IronKV throughput, the Verus port against IronFleet's Dafny original.

    Output ``raw``: ``raw-data.txt`` from ``ironkv/compare.py``. As ``gengraph.py``
    does, each trial's rate is requests × 0.001 / seconds (kop/s); a bar is the mean,
    its error bar the 95 % Student t interval with the standard error of the mean.
    (``gengraph.py`` skips a short line; here it is an error naming the line.)

    Columns: ``system`` (``Verus``, ``IronFleet``), ``workload`` (``Get``, ``Set``),
    ``payload_bytes``, ``kops``, ``kops_ci95``, ``trials``.
    """
    raw = pd.concat([_ironkv_file(path) for path in
                     _expand(_required(outputs, "raw"), "raw-data.txt")], ignore_index=True)
    raw["kops"] = raw["Requests completed"] * 0.001 / raw["Seconds"]
    groups = raw.groupby(["system", "workload", "payload_bytes"])["kops"]
    out = groups.agg(kops="mean", sem=lambda s: s.std(ddof=1) / math.sqrt(len(s)),
                     trials="size").reset_index()
    out["kops_ci95"] = [_t_quantile(0.975, n - 1) * sem if n > 1 else math.nan
                        for n, sem in zip(out["trials"], out["sem"])]
    out = out.sort_values(["system", "workload", "payload_bytes"],
                          key=lambda s: s.ne("IronFleet") if s.name == "system" else s)
    return out[["system", "workload", "payload_bytes", "kops", "kops_ci95",
                "trials"]].reset_index(drop=True)


@loader("verus.nr", words=WORDS)
def nr(outputs) -> pd.DataFrame:
    """Set 3 (Fig 10): node-replication throughput against threads, per write ratio.

    Any output; each file is read by its kind:

    * ``*.json`` (``data-verified.json``, ``data-ironsync.json`` of
      ``benchmarks/run_benchmarks.sh``): records with the fields
      ``plot_throughput.py`` reads: ``bench_name`` (system: ``verus_nr``/``vnr...``,
      ``dafny_nr`` = IronSync-NR, ``rust_nr`` = NR; else the file name),
      ``n_threads``, ``reads_pct`` (``write_pct`` = 100 − it), ``n_replicas``,
      ``numa_policy`` (``NUMAFill``/0 = fill, ``Interleave``/1), ``ops_per_s``
      (``mops`` = it / 10⁶) and ``run_seconds``;
    * ``*.csv`` (``scaleout_benchmarks.csv`` of node-replication's ``mkbench``):
      one row per thread and second, ``name`` (``<vnr|nr>-<bench>-scaleout-wr<W>``
      gives system, benchmark and ``write_pct``), ``tm`` (the NUMA policy),
      ``threads``, ``thread_id``, ``exp_time_in_sec``, ``iterations``. A run is
      the rows from a ``thread_id`` 0, ``exp_time_in_sec`` 1 row to the next;
      ``mops`` is its iterations summed over threads and seconds, divided by its
      seconds (``mkbench``'s ``>> X Mops`` line).

    Columns: ``system``, ``write_pct``, ``threads``, ``mops``, ``benchmark``,
    ``numa_policy``, ``replicas`` (Int64), ``run`` (1-based per system, write ratio,
    threads, benchmark and policy), ``seconds`` (measured), ``file`` (``dir/name``).
    ``attrs["note"]`` flags counter-benchmark smoke data (Fig 10 measures ``vspace``);
    ``attrs["trial_column"]`` is ``run``: a point's repetitions are its trials.
    """
    paths = sorted(set(_expand([p for files in outputs.files.values() for p in files],
                               "*.json", "*.csv")))
    if not paths:
        raise OutputError("no NR benchmark output was fetched", file=outputs.location or "verus.nr")
    frames = []
    for path in paths:
        if path.suffix.lower() == ".json":
            frames.append(_nr_json(path))
        elif path.suffix.lower() == ".csv":
            frames.append(_nr_csv(path))
        else:
            raise OutputError("expected a .csv (scaleout_benchmarks.csv) or .json (data-*.json) "
                              "file", file=path)
    frame = pd.concat(frames, ignore_index=True)
    keys = ["system", "write_pct", "threads", "benchmark", "numa_policy"]
    frame["run"] = frame.groupby(keys, dropna=False, sort=False).cumcount() + 1
    frame = frame[["system", "write_pct", "threads", "mops", "benchmark", "numa_policy",
                   "replicas", "run", "seconds", "file"]].astype({"replicas": "Int64"})
    # the repeated runs of a point are its trials: the checks judge their mean, with its spread (one run: as it is)
    frame.attrs["trial_column"] = "run"
    benches = set(frame["benchmark"].dropna())
    if "counter" in benches:
        frame.attrs["note"] = ("smoke data of NR's counter benchmark, not the vspace benchmark "
                               "Fig 10 measures: parsed all the same, not comparable with Fig 10")
    return frame


def _expand(paths, *patterns: str) -> list[Path]:
    """The paths, each directory replaced by its files matching ``patterns`` (a reference may
    name a directory, such as ``example_dram_results``)."""
    out = []
    for path in map(Path, paths):
        if path.is_dir():
            found = sorted({p for pattern in patterns for p in path.glob(pattern) if p.is_file()})
            if not found:
                raise OutputError(f"the directory holds no {' or '.join(patterns)} file",
                                  file=path)
            out.extend(found)
        else:
            out.append(path)
    return out


def _files(outputs, name: str, matches: Callable[[Path], bool]) -> list[Path]:
    if outputs.has(name):
        return list(outputs.files[name])
    return sorted({p for files in outputs.files.values() for p in files if matches(Path(p))})


def _required(outputs, name: str) -> list[Path]:
    if not outputs.has(name):
        raise OutputError(f"output {name!r} was not fetched (have: "
                          f"{', '.join(outputs.files) or 'none'})", file=outputs.location or name)
    return list(outputs.files[name])


def _only(paths: list[Path], name: str, outputs) -> Path:
    if len(paths) != 1:
        raise OutputError(f"expected one file for output {name!r}, found {len(paths)}",
                          file=outputs.location or name)
    return paths[0]


def _pmlog_mib_appended(outputs) -> float:
    """The MiB each log appended per iteration: the run's ``append_gib`` (a live run), else the guide's 8 GiB."""
    value = (getattr(outputs, "parameters", None) or {}).get("append_gib")
    if value is None:
        return PMLOG_MIB_APPENDED
    try:
        gib = float(value)
    except (TypeError, ValueError):
        gib = 0.0
    if not gib > 0:
        raise OutputError(f"the run's parameter append_gib is {value!r}, not a positive number of GiB",
                          file=getattr(outputs, "location", None) or "parameters", field="append_gib")
    return gib * 1024


def _pmlog_file(path: Path) -> pd.DataFrame:
    match = re.fullmatch(r"results_([0-9]+)\.csv", Path(path).name)
    if not match or int(match.group(1)) == 0:
        raise OutputError("cannot tell the append size from the file name; expected "
                          "results_<bytes>.csv", file=path, field="append_bytes")
    frame = tables.read_csv(path, header=False, columns=["log", "us"], trailing_sep=True,
                            types={"us": "int"})
    for record in frame.to_dict("records"):
        if record["log"] not in PMLOG_LOGS:
            raise OutputError(f"unknown log {record['log']!r}; expected pmdk, verif or old",
                              file=path, line=record["line"], field="log")
        if record["us"] <= 0:
            raise OutputError(f"{record['us']} µs is not a positive time", file=path,
                              line=record["line"], field="us")
    frame["append_bytes"] = int(match.group(1))
    return frame


def _ironkv_file(path: Path) -> pd.DataFrame:
    counts = {name: "int" for name in IRONKV_COLUMNS[1:] if name != "Workload"}
    frame = tables.read_tsv(path, required=IRONKV_COLUMNS, types=counts)
    checks = [("Language", lambda v: v in ("verus", "dafny"), "verus or dafny"),
              ("Workload", lambda v: v in ("g", "s"), "g (Get) or s (Set)"),
              ("Seconds", lambda v: v > 0, "positive"),
              ("Requests completed", lambda v: v >= 0, "non-negative")]
    for column, ok, need in checks:
        bad = frame.index[~frame[column].map(ok)]
        if len(bad):
            raise OutputError(f"{frame.loc[bad[0], column]!r} is not {need}", file=path,
                              line=int(frame.loc[bad[0], "line"]), field=column)
    frame["system"] = frame["Language"].map({"verus": "Verus", "dafny": "IronFleet"})
    frame["workload"] = frame["Workload"].map({"g": "Get", "s": "Set"})
    frame["payload_bytes"] = frame["Value size"]
    return frame


def _nr_csv(path: Path) -> pd.DataFrame:
    ints = ["threads", "thread_id", "exp_time_in_sec", "iterations"]
    frame = tables.read_csv(path, required=["name", "tm", *ints],
                            types={name: "int" for name in ints})
    runs, current = [], None
    for record in frame.to_dict("records"):
        config = (record["name"], record["tm"], record["threads"])
        if current is None or config != current["config"] or (
                record["thread_id"] == 0 and record["exp_time_in_sec"] == 1 and current["rows"]):
            current = {"config": config, "line": record["line"], "rows": []}
            runs.append(current)
        current["rows"].append(record)
    out = []
    for run in runs:
        name, tm, threads = run["config"]
        system, bench, write_pct = _nr_name(name, path, run["line"])
        if write_pct is None:
            raise OutputError(f"cannot tell the write ratio from {name!r} (no '-wr<N>')",
                              file=path, line=run["line"], field="name")
        seen = {r["thread_id"] for r in run["rows"]}
        if len(seen) != threads:
            raise OutputError(f"the run has rows for {len(seen)} threads, but says threads="
                              f"{threads}; was it cut short?", file=path, line=run["line"],
                              field="thread_id")
        per_thread = max(sum(r["thread_id"] == t for r in run["rows"]) for t in seen)
        total = sum(r["iterations"] for r in run["rows"])
        out.append((system, write_pct, threads, total / per_thread / 1e6, bench,
                    _numa(tm), None, per_thread, _short(path)))
    return pd.DataFrame(out, columns=["system", "write_pct", "threads", "mops", "benchmark",
                                      "numa_policy", "replicas", "seconds", "file"])


def _nr_json(path: Path) -> pd.DataFrame:
    data = jsonfmt.load_json(path)
    records = [item for entry in (data if isinstance(data, list) else [data])
               for item in (entry if isinstance(entry, list) else [entry])]
    out = []
    for record in records:
        line = getattr(record, "line", None)
        if not isinstance(record, dict):
            raise OutputError("expected a list of benchmark records (objects)", file=path,
                              line=line)
        name = jsonfmt.get(record, "bench_name", file=path, kind=str)
        if name.startswith(NR_OTHER_BENCHES):
            continue
        system, bench, _ = _nr_name(name, path, line, fallback=path)

        def get(key: str, kind: type = float):
            return jsonfmt.get(record, key, file=path, kind=kind)
        reads = get("reads_pct", int)
        if not 0 <= reads <= 100:
            raise OutputError(f"reads_pct {reads} is not a percentage", file=path, line=line,
                              field="reads_pct")
        seconds = jsonfmt.get(record, "run_seconds", file=path, kind=float, default=math.nan)
        out.append((system, 100 - reads, get("n_threads", int), get("ops_per_s") / 1e6,
                    bench or "vspace", _numa(get("numa_policy", object)),
                    get("n_replicas", int), seconds, _short(path)))
    return pd.DataFrame(out, columns=["system", "write_pct", "threads", "mops", "benchmark",
                                      "numa_policy", "replicas", "seconds", "file"])


def _nr_name(name: str, path: Path, line, fallback: Path | None = None):
    match = _NR_NAME.fullmatch(name.strip())
    if match:
        wr = match.group("wr")
        return NR_SYSTEMS[match.group("system")], match.group("bench"), \
            int(wr) if wr is not None else None
    if fallback is not None and "verified" in fallback.name:
        return "Verus-NR", None, None
    raise OutputError(f"cannot tell the system from the benchmark name {name!r}; expected it "
                      f"to start with one of {', '.join(NR_SYSTEMS)}", file=path, line=line,
                      field="name")


def _short(path: Path) -> str:
    return f"{Path(path).parent.name}/{Path(path).name}"


def _numa(value) -> str:
    names = {"numafill": "fill", "fill": "fill", "0": "fill", "interleave": "interleave",
             "1": "interleave"}
    return names.get(str(value).strip().casefold(), str(value).strip().casefold())


@functools.lru_cache(maxsize=256)
def _t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile (0.5 < p < 1) of Student's t with ``df`` degrees of freedom."""
    def upper_tail(t: float) -> float:  # P(T > t) = I_x(df/2, 1/2) / 2, x = df / (df + t²)
        return 0.5 * _incomplete_beta(df / 2, 0.5, df / (df + t * t))
    low, high = 0.0, 1.0
    while upper_tail(high) > 1 - p:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        if middle in (low, high):   # adjacent floats: the halving can change nothing more
            break
        low, high = (middle, high) if upper_tail(middle) > 1 - p else (low, middle)
    return (low + high) / 2


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction."""
    if x <= 0 or x >= 1:
        return 0.0 if x <= 0 else 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x)
                     + b * math.log1p(-x))
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _incomplete_beta(b, a, 1 - x)
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
    result = d
    for m in range(1, 500):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
            c = 1.0 + numerator / c
            c = c if abs(c) > 1e-300 else 1e-300
            result *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return front * result / a
