"""Parsing: each output format's reader on an input of at least 1 MB, against the bare pandas/json read of
the same file; and a Pesto-like tree of 500 ``stats.json`` files.

The authors ship files of a few KiB, so the inputs are **synthetic**: each is built by repeating the rows (or
records) of a real shipped file, or of the format its script prints where nothing is shipped, until it
passes 1 MB. Each reader is the one a loader calls, with the same options (required columns, types, units),
so it checks every value and names the file and line of anything malformed. The bare read gets the same
values out of the same file with pandas or ``json`` and checks nothing:

* CSV, TSV, whitespace tables, and the Aardvark files: ``pandas.read_csv`` itself (``sep="\\t"``,
  ``sep=r"\\s+"``); JSON: ``json.loads`` of the file.
* Formats pandas has no reader for (``label: value unit`` lines, ``go test`` logs, LaTeX tables): the shortest
  pandas code that gets the numbers out: ``read_csv`` to split the lines, then the ``str`` accessor and
  ``to_numeric``/``to_timedelta``. For these, the time ``read_csv`` alone takes to split the lines is given
  too, in the notes: it is the floor of any reader built on pandas.

Target: each reader at most 2x its bare read. The tree: 500 synthetic ``stats.json`` (copies of a shipped
Pesto file, with perturbed numbers), read by ``jsonfmt.read_stats_tree`` into a long frame of
``run_stats.<type>.<metric>`` values in under 2 s, against ``json.load`` of the same files.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from pathlib import Path
from typing import Callable

from .common import Context, Result, fmt_s

AARDVARK = "github.com/derbear/aardvark-prototype/dd8f6aaf5f76173118f3f3decbe099bda5972ce2/go-algorand/ledger"
EDRAX = "github.com/derbear/edrax-vcs/1f1a3748d1530da1e75fadbce987ee6e6fa3fd1d/results"
VECCOM = "github.com/derbear/pointproofs/d72ed3c8b0e4624053360591fcc8d03ce720ae90/bench-results"
VERUS = "github.com/verus-lang/paper-sosp24-artifact/5e2b290cdd1eec1e0d4d44417ef7b078c2f93266"
NR = "github.com/verus-lang/verified-node-replication/341be41a31cfc5c7539f8b78a65f166a06251d02/benchmarks"
PESTO = ("github.com/fsuri/Pequin-Artifact/3f47079c96be29565e16cefc21d14eda519c14a3/sample-output/Pesto/"
         "2-Microbenchmarks/2-Snapshot/Zipf-Inconsistent/2024-11-01-10-29-31/2024-11-01-10-29-31/"
         "2024-11-01-10-35-03/out/stats.json")
MB = 1_000_000
TARGET = 2.0
TREE_FILES = 500
TREE_TARGET_S = 2.0


def _paired(read: Callable[[], object], bare: Callable[[], object], min_s: float) -> tuple[list[float], list[float]]:
    """Time ``read`` and ``bare`` by turns (so that the machine's load weighs on both alike) until ``min_s`` has
    passed for each and each ran at least 5 times; return the per-call times of each."""
    read(), bare()  # warm-up: first-call costs (imports, regex compilation) are not the steady rate
    ours, theirs = [], []
    while sum(ours) < min_s or sum(theirs) < min_s or len(ours) < 5:
        for fn, out in ((read, ours), (bare, theirs)):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return ours, theirs


def _alone(fn: Callable[[], object], min_s: float) -> list[float]:
    """Time ``fn`` until ``min_s`` has passed and it ran at least 5 times; return the per-call times."""
    fn()
    times = []
    while sum(times) < min_s or len(times) < 5:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def _grow(path: Path, header: str, rows: list[str], footer: str = "") -> Path:
    """Write ``header``, then ``rows`` over and over until the file passes 1 MB, then ``footer``."""
    body, size, i = [], len(header) + len(footer), 0
    while size <= MB:
        row = rows[i % len(rows)]
        body.append(row)
        size += len(row) + 1
        i += 1
    path.write_text(header + "\n".join(body) + "\n" + footer)
    return path


def _bare_labelled(path: Path):
    """``label: value unit`` lines with pandas: split at the colon, then the rest at the first space."""
    import pandas as pd
    halves = pd.read_csv(path, sep=":", header=None, names=["label", "rest"])
    parts = halves["rest"].str.split(n=1, expand=True)
    return pd.DataFrame({"label": halves["label"], "value": pd.to_numeric(parts[0], errors="coerce"),
                         "unit": parts[1]})


def _bare_gotest(path: Path):
    """``<label> time: <duration>`` lines of a ``go test -v`` log with pandas: the lines, ``str.extract``, ``to_timedelta``."""
    import csv

    import pandas as pd
    lines = pd.read_csv(path, sep="\x1f", header=None, names=["line"], dtype=str, quoting=csv.QUOTE_NONE)["line"]
    found = lines.str.extract(r"(?P<label>[A-Za-z][\w.-]*(?: [A-Za-z][\w.-]*)*) time: (?P<duration>\S+)$").dropna()
    return found.assign(seconds=pd.to_timedelta(found["duration"]).dt.total_seconds())


def _bare_latex(path: Path):
    """A LaTeX table with pandas: cells split at ``&``, markup taken off with ``str.replace``."""
    import pandas as pd
    cells = pd.read_csv(path, sep="&", header=None, names=["a", "b", "c"], skiprows=3, dtype=str)
    return cells.apply(lambda c: c.str.replace(r"\\\\|\\[A-Za-z]+|\\.|[{}]", " ", regex=True).str.strip())


def _bare_rows(path: Path):
    """Rows ``name,v1,v2,...`` with pandas: the lines, then ``to_numeric`` of each row's values."""
    import csv

    import pandas as pd
    lines = pd.read_csv(path, sep="\x1f", header=None, names=["line"], dtype=str, quoting=csv.QUOTE_NONE)["line"]
    return {name: pd.to_numeric(pd.Series(rest.rstrip(",").split(",")))
            for name, _, rest in (line.partition(",") for line in lines)}


def _bare_lists(path: Path):
    """Rows ``name,[v1, v2, ...]`` with ``json``: each list parsed by ``json.loads``."""
    rows = Path(path).read_text().splitlines()
    return {name: json.loads(rest) for name, _, rest in (row.partition(",") for row in rows[1:] if row.strip())}


def _split_only(sep: str, names: list[str]):
    def read(path: Path):
        import csv

        import pandas as pd
        return pd.read_csv(path, sep=sep, header=None, names=names, dtype=str, quoting=csv.QUOTE_NONE)
    return read


def inputs(mirror: Path, tmp: Path) -> list[tuple]:
    """The synthetic inputs: (format, path, reader, bare read, bare read's name, pandas' split alone or None,
    what the file is built from)."""
    import pandas as pd

    from reprobook.papers.verus.loaders import IRONKV_COLUMNS
    from reprobook.papers.aardvark import parsers as pa
    from reprobook.formats import jsonfmt, latex, tables
    from reprobook.papers.verus import parsers as pv

    tmp.mkdir(parents=True, exist_ok=True)
    out = []

    nr = (mirror / NR / "verified" / "scaleout_benchmarks.csv").read_text().splitlines()
    ints = ["threads", "thread_id", "exp_time_in_sec", "iterations"]
    out.append(("CSV", _grow(tmp / "scaleout_benchmarks.csv", nr[0] + "\n", nr[1:]),
                lambda p: tables.read_csv(p, required=["name", "tm", *ints], types={n: "int" for n in ints}),
                lambda p: pd.read_csv(p), "pandas.read_csv", None, "rows of NR's verified/scaleout_benchmarks.csv"))

    kv = (mirror / VERUS / "ironkv" / "recording" / "raw-data.txt").read_text().splitlines()
    counts = {name: "int" for name in IRONKV_COLUMNS[1:] if name != "Workload"}
    out.append(("TSV", _grow(tmp / "raw-data.txt", kv[0] + "\n", kv[1:]),
                lambda p: tables.read_tsv(p, required=IRONKV_COLUMNS, types=counts),
                lambda p: pd.read_csv(p, sep="\t"), "pandas.read_csv", None, "rows of IronKV's raw-data.txt"))

    stats = (mirror / PESTO).read_text()
    copies = -(-MB // len(stats)) + 1
    path = tmp / "stats-list.json"
    path.write_text("[\n" + ",\n".join([stats.strip()] * copies) + "\n]\n")
    out.append(("JSON", path, jsonfmt.load_json, lambda p: json.loads(Path(p).read_bytes()), "json.loads", None,
                f"{copies} copies of a shipped Pesto stats.json in one list"))

    tools = ["Dafny: 3.83 sec", "Verus: 0.66 sec", "Prusti: inf sec", "Fstarlowstar: 7.16 sec", "Creusot: 1.88 sec"]
    out.append(("labelled numbers", _grow(tmp / "linked-list-oneshot.txt", "", tools), pv.read_milli,
                _bare_labelled, "pandas read_csv + str.split + to_numeric", _split_only(":", ["a", "b"]),
                "oneshot.py's `Tool: 1.23 sec` lines"))

    block = ["Time Verified Map: 23.08858679 ns", "Time Verified Unmap: 303.26841955 ns",
             "Time Verified Unmap (no reclaim): 7.66253143 ns", "Time Base Map: 19.70236766 ns",
             "Time Base Unmap: 10.0346619 ns"]
    out.append(("label: value unit", _grow(tmp / "page-table.log", "", ["\n".join(block)]), pv.read_page_table_log,
                _bare_labelled, "pandas read_csv + str.split + to_numeric", _split_only(":", ["a", "b"]),
                "the page-table benchmark's five `Time ...: N ns` lines per run"))

    names = ["cfrac", "espresso", "barnes", "larsonN", "sh6benchN", "xmalloc-testN", "cache-scratch1", "glibc-simple"]
    rows = [f"{n}{i}  {random.Random(i).uniform(0.1, 60):.2f}  {random.Random(-i).uniform(0.1, 60):.2f}"
            for i, n in enumerate(names * 4)]
    out.append(("whitespace table", _grow(tmp / "mimalloc.log", "bench mi vmi\n", rows), pv.read_mimalloc_log,
                lambda p: pd.read_csv(p, sep=r"\s+"), "pandas.read_csv", None,
                "process-benchmarks-output.py's `bench mi vmi` table"))

    rows = [rf"{n}{i} & {random.Random(i).uniform(0.1, 60):.2f}\,s & \textbf{{{random.Random(-i).uniform(0.1, 60):.1f}}} s \\"
            for i, n in enumerate(names * 4)]
    out.append(("LaTeX tabular", _grow(tmp / "table.tex", "\\begin{tabular}{l|r|r}\n\\hline\nBenchmark & mimalloc & "
                                       "Verus mimalloc \\\\ \\hline\n", rows, "\\end{tabular}\n"),
                latex.read_tabular, _bare_latex, "pandas read_csv + str.replace", _split_only("&", ["a", "b", "c"]),
                "a benchmark table as process-benchmarks-output.py prints it, with markup in cells"))

    log = ["=== RUN   TestTimeWorkload", "ledger_test.go:812: generated 1000000 accounts",
           "archive m time: 6m51.5s", "archive c time: 7m2.25s", "archive d time: 13m2s",
           "--- PASS: TestTimeWorkload (2345.12s)"]
    out.append(("go test -v log", _grow(tmp / "aout4.txt", "", log), pa.read_go_test_times,
                _bare_gotest, "pandas read_csv + str.extract + to_timedelta", _split_only("\x1f", ["line"]),
                "acores.sh's `go test -v` output (timing lines among others)"))

    trials = (mirror / AARDVARK / "validators.csv").read_text().splitlines()
    out.append(("trial CSV", _grow(tmp / "validators.csv", "", trials), lambda p: pa.read_trials_csv(p, role="validator"),
                lambda p: pd.read_csv(p, header=None, names=["op", "cores", "seconds"]), "pandas.read_csv", None,
                "rows of Aardvark's validators.csv"))

    edrax = (mirror / EDRAX).read_text().splitlines()
    per_row = len(edrax[0].split(",")) - 2
    grows = sum(len(line) for line in edrax if line.partition(",")[0] not in ("errs", "100micros"))
    reps = -(-MB // grows) + 1
    grown = []
    for line in edrax:
        name, _, rest = line.partition(",")
        grown.append(line if name in ("errs", "100micros") else name + "," + ",".join([rest.rstrip(",")] * reps) + ",")
    path = tmp / "results"
    path.write_text("\n".join(grown) + "\n")
    out.append(("EDRAX rows", path, pa.read_edrax, _bare_rows, "pandas read_csv + to_numeric per row", None,
                f"EDRAX's results with each row's {per_row} values repeated {reps} times"))

    veccom = [line for line in (mirror / VECCOM).read_text().splitlines() if line.strip()]
    iters = int(veccom[0].split(",")[1])
    reps = -(-MB // len("\n".join(veccom))) + 1
    grown = [f"iters,{iters * reps}"]
    for line in veccom[1:]:
        name, _, rest = line.partition(",")
        grown.append(name + ",[" + ", ".join([rest.strip()[1:-1]] * reps) + "]")
    path = tmp / "bench-results"
    path.write_text("\n".join(grown) + "\n")
    out.append(("pointproofs lists", path, pa.read_veccom, _bare_lists, "json.loads of each list", None,
                f"pointproofs' bench-results with each list repeated {reps} times"))
    return out


def stats_tree(mirror: Path, root: Path, n: int = TREE_FILES) -> list[Path]:
    """``n`` synthetic ``stats.json`` under ``root`` in a Pesto-like layout, numbers perturbed per file."""
    source = json.loads((mirror / PESTO).read_text())
    rng = random.Random(12)
    paths = []
    for i in range(n):
        data = json.loads(json.dumps(source))
        for stats in data["run_stats"].values():
            for metric in stats.values():
                for key, value in metric.items():
                    if isinstance(value, (int, float)) and not isinstance(value, bool):
                        metric[key] = value * rng.uniform(0.9, 1.1)
        path = root / f"experiment-{i // 50:02d}" / f"2024-11-01-10-{i % 60:02d}-{i:03d}" / "out" / "stats.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2))
        paths.append(path)
    return paths


def run(ctx: Context) -> list[Result]:
    from reprobook.formats import jsonfmt

    m = ctx.mirror
    if not m.is_dir():
        raise RuntimeError(f"no artifact mirror at {m}; set REPROBOOK_ARTIFACT_MIRROR")
    min_s = 0.3 if ctx.quick else 1.0
    results = []
    for name, path, read, bare, bare_name, split, built_from in inputs(m, ctx.tmp / "parse"):
        size = path.stat().st_size
        rows = len(read(path))
        ours, theirs = _paired(lambda: read(path), lambda: bare(path), min_s)
        per, plain = statistics.median(ours), statistics.median(theirs)
        ratio = per / plain
        notes = [f"synthetic input: {built_from}"]
        split_s = None
        if split is not None:
            split_s = statistics.median(_alone(lambda: split(path), min_s / 3))
            notes.append(f"pandas.read_csv alone, splitting the lines: {fmt_s(split_s)} "
                         f"(reprobook {per / split_s:.1f}x that)")
        ctx.log(f"{name}: {fmt_s(per)} per file, {bare_name} {fmt_s(plain)}")
        results.append(Result(
            "parse", f"parse {name} (synthetic, {size / MB:.1f} MB)",
            f"reprobook {fmt_s(per)} ({size / MB / per:.0f} MB/s, {rows} rows), {bare_name} {fmt_s(plain)}",
            value=per, unit="s", plain_tool=bare_name, plain_value=plain, ratio=ratio,
            comparison=f"{ratio:.2f}x the bare read", target=f"<= {TARGET:g}x", passed=ratio <= TARGET,
            notes=notes,
            samples={"seconds_per_file": per, "bare_seconds_per_file": plain, "calls": len(ours),
                     "bytes": size, "rows": rows, "seconds": ours, "bare_seconds": theirs,
                     "split_only_seconds": split_s}))

    tree = ctx.tmp / "pesto-tree"
    paths = stats_tree(m, tree)
    size = sum(p.stat().st_size for p in paths)
    jsonfmt.read_stats_tree(tree)  # warm the page cache as for the bare read below
    reps = ctx.repeats(3, 1)
    loader = []
    for _ in range(reps):
        t0 = time.perf_counter()
        frame = jsonfmt.read_stats_tree(tree)
        loader.append(time.perf_counter() - t0)
    bare = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for p in sorted(tree.rglob("stats.json")):
            json.loads(p.read_bytes())
        bare.append(time.perf_counter() - t0)
    took, plain = min(loader), min(bare)
    results.append(Result(
        "parse", f"Pesto-like tree: {len(paths)} stats.json (synthetic, {size / MB:.0f} MB)",
        f"jsonfmt.read_stats_tree {fmt_s(took)} ({len(frame)} rows: run_stats.<type>.<metric>.<stat>), "
        f"json.load of every file {fmt_s(plain)}",
        value=took, unit="s", plain_tool="json.load", plain_value=plain, ratio=took / plain,
        comparison=f"{took:.2f} s ({took / plain:.2f}x json.load)", target=f"< {TREE_TARGET_S:g} s",
        passed=took < TREE_TARGET_S,
        notes=["synthetic tree: copies of a shipped Pesto stats.json with every run_stats number scaled by "
               "0.9-1.1, 50 files per experiment directory"],
        samples={"seconds": loader, "bare_seconds": bare, "files": len(paths), "bytes": size, "rows": len(frame)}))
    return results
