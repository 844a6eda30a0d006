"""Verus (SOSP'24) outputs, read with the format kit into tidy frames, one row per value.

Formats, from the scripts of ``verus-lang/paper-sosp24-artifact`` (and the
repositories they call):

* milli ``results/<benchmark>-oneshot.txt``: ``Verus: 0.66 sec`` per tool
  (``oneshot.py``: the median of the samples, ``inf`` on timeout);
  ``<benchmark>-repeat.csv``: ``pushes,Tool,seconds`` (``repeat.py``);
  ``<benchmark>-errors.csv``: ``base|error,case,Tool,seconds`` (``errors.py``;
  case 1 is ``pop``, 2 is ``index``, as ``plot/error_times.py`` titles them);
* the page-table benchmark's stdout: ``Time Verified Map: 23.09 ns`` and four more;
* ``entry-mimalloc.sh``'s stdout: mimalloc-bench ``bench.sh`` tables, then the
  ``bench mi vmi`` table and the LaTeX table of ``process-benchmarks-output.py``;
* Fig 8 as ``macro-stats/results/results.json`` (written by ``summarize/src/main.rs``),
  the hand-entered values of ``summarize/manual.json``, and the table as the
  artifact's ``macro-table.pdf`` renders it.

The persistent-memory log, IronKV and NR files are plain CSV/TSV, read in
`reprobook.papers.verus.loaders` with `tables`.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from reprobook.errors import OutputError
from reprobook.formats import jsonfmt, latex, tables, text
from reprobook.lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")

MILLI_COLUMNS = ["benchmark", "experiment", "tool", "pushes", "function", "outcome",
                 "seconds", "timed_out", "line"]
TOOLS = {"verus": "Verus", "dafny": "Dafny", "creusot": "Creusot", "prusti": "Prusti",
         "fstarlowstar": "F*", "f*": "F*", "fstar": "F*", "low*": "F*", "low*(f*)": "F*"}
"""Tool names as the scripts print them (``tool.capitalize()``), folded, -> the figures' names."""
ERROR_FUNCTIONS = {1: "pop", 2: "index"}
PAGE_TABLE_OPS = {"Map": "map", "Mapping": "map", "Unmap": "unmap",
                  "Unmap (no reclaim)": "unmap-no-reclaim"}
_PRINTED_OPS = {"map": "Map", "unmap": "Unmap", "unmap-no-reclaim": "Unmap (no reclaim)"}
PAGE_TABLE_LINES = [("verified", "map"), ("verified", "unmap"), ("verified", "unmap-no-reclaim"),
                    ("base", "map"), ("base", "unmap")]
"""The five lines of one page-table run, as (impl, op), in the order the benchmark prints them."""
ALLOCATORS = {"mi": "mimalloc", "vmi": "verus-mimalloc"}
FIG8_COLUMNS = ["system", "verifier", "trusted_loc", "proof_loc", "code_loc", "proof_code_ratio",
                "time_1core_s", "time_8cores_s", "smt_mb"]
"""Fig 8's columns; ``time_8cores_s`` is the parallel run (8 threads on the guide's machine)."""
FIG8_SYSTEMS = ["IronKV", "NR", "Page table", "Mimalloc", "P. log"]
FIG8_PROJECTS = {"ironsht": "IronKV", "nr": "NR", "page-table": "Page table",
                 "mimalloc": "Mimalloc", "verified-storage": "P. log"}
"""``project-id`` of ``results.json`` -> the system's name in Fig 8."""
FIG8_BASELINES = {"dafny": "Dafny", "linear-dafny": "Linear Dafny"}
FIG8_VERIFIERS = {"Verus": "Verus", "Dafny": "Dafny", "L.Dafny": "Linear Dafny",
                  "Linear Dafny": "Linear Dafny"}

_MILLI_FILE = re.compile(r"(doubly-linked-list|linked-list)-(oneshot|repeat|errors)\.(?:txt|csv)")
_PAGE_TABLE = re.compile(rf"\s*Time (?P<label>(?P<impl>Verified|Base) (?P<op>Map|Mapping|Unmap"
                         rf"(?: \(no reclaim\))?))\s*:\s*(?P<value>{text.NUMBER})\s*"
                         rf"(?P<unit>ns|us|µs|μs|ms|s)\s*")
_FIG8_ROW = re.compile(r"(?P<arrow>→\s*)?(?P<name>\S.*?)\s+(?P<values>(?:[0-9.]+\s+){6}[0-9.]+)")


def milli_benchmark(path: str | Path) -> tuple[str, str]:
    """``(benchmark, experiment)`` from a milli result's file name, e.g. ``linked-list-repeat.csv``."""
    match = _MILLI_FILE.fullmatch(Path(path).name)
    if not match:
        raise OutputError("cannot tell the benchmark from the file name; expected "
                          "<linked-list|doubly-linked-list>-<oneshot|repeat|errors>.<txt|csv>",
                          file=path, field="benchmark")
    return match.group(1), match.group(2)


def tool_name(name: str, *, file: str | Path, line: int | None = None) -> str:
    """The figures' name of a tool: ``Fstarlowstar`` -> ``F*``, ``verus`` -> ``Verus``."""
    try:
        return TOOLS[name.strip().casefold()]
    except KeyError:
        raise OutputError(f"unknown tool {name.strip()!r}; expected one of Verus, Dafny, "
                          "Creusot, Fstarlowstar (F*), Prusti", file=file, line=line,
                          field="tool") from None


def read_milli(path: str | Path) -> pd.DataFrame:
    """Read one millibenchmark result file, whichever of the three its name says it is.

    Returns
    -------
    DataFrame
        :data:`MILLI_COLUMNS`: ``pushes`` (Int64) only for ``repeat``, ``function``
        only for ``errors`` (else missing); ``outcome`` ``"error"`` for the errors
        experiment's error mode, else ``"success"``; ``seconds`` NaN and
        ``timed_out`` True where the script printed ``inf``. Every value is the
        median of ``EVAL_SAMPLES`` runs, as the script printed it.
    """
    benchmark, experiment = milli_benchmark(path)
    rows = []
    if experiment == "oneshot" and (fast := _oneshot_on_the_frame(path, benchmark)) is not None:
        return fast
    if experiment == "oneshot":
        path, lines = text.read_lines(path)
        for found in text.labelled_numbers(lines, file=path, strict=True,
                                           units=("sec", "secs", "s")):
            rows.append((tool_name(found.label, file=path, line=found.line), None, None,
                         "success", found.value, found.timed_out, found.line))
    else:
        names = ["pushes", "tool", "seconds"] if experiment == "repeat" else \
            ["mode", "case", "tool", "seconds"]
        frame = tables.read_csv(path, header=False, columns=names,
                                types={"seconds": _measurement,
                                       "pushes" if experiment == "repeat" else "case": "int"})
        for record in frame.to_dict("records"):
            no = record["line"]
            tool = tool_name(record["tool"], file=path, line=no)
            seconds, timed_out = record["seconds"]
            if experiment == "repeat":
                if record["pushes"] < 1:
                    raise OutputError(f"pushes must be at least 1, not {record['pushes']}",
                                      file=path, line=no, field="pushes")
                rows.append((tool, record["pushes"], None, "success", seconds, timed_out, no))
                continue
            if record["mode"] not in ("base", "error"):
                raise OutputError(f"mode {record['mode']!r} is neither 'base' nor 'error'",
                                  file=path, line=no, field="mode")
            if record["case"] not in ERROR_FUNCTIONS:
                raise OutputError(f"case {record['case']} is neither 1 (pop) nor 2 (index)",
                                  file=path, line=no, field="case")
            rows.append((tool, None, ERROR_FUNCTIONS[record["case"]],
                         "success" if record["mode"] == "base" else "error", seconds, timed_out,
                         no))
    frame = pd.DataFrame([(benchmark, experiment, *row) for row in rows], columns=MILLI_COLUMNS)
    frame = frame.astype({"pushes": "Int64", "seconds": "float64", "timed_out": "bool",
                          "line": "int64"})
    frame["function"] = frame["function"].astype(object).where(frame["function"].notna(), None)
    frame.attrs["source"] = str(path)
    return frame


def _oneshot_on_the_frame(path: str | Path, benchmark: str) -> pd.DataFrame | None:
    """:func:`read_milli` of a oneshot file by pandas' C reader (`text.labelled_columns`); None if anything is off."""
    found = text.labelled_columns(path, units=("sec", "secs", "s"))
    if found is None:
        return None
    tools = [TOOLS.get(label.casefold()) for label in found.labels]
    if None in tools:
        return None  # an unknown tool: read line by line, to name the line
    n = len(found.value)
    frame = pd.DataFrame({"benchmark": pd.Series(benchmark, index=pd.RangeIndex(n), dtype="str"),
                          "experiment": pd.Series("oneshot", index=pd.RangeIndex(n), dtype="str"),
                          "tool": text.take_strings(found.label_codes, tools),
                          "pushes": pd.arrays.IntegerArray(np.zeros(n, dtype="int64"), np.ones(n, dtype=bool)),
                          "function": np.full(n, None, dtype=object),
                          "outcome": pd.Series("success", index=pd.RangeIndex(n), dtype="str"),
                          "seconds": found.value, "timed_out": found.timed_out, "line": found.line})
    frame.attrs["source"] = str(Path(path))
    return frame


def read_page_table_log(path: str | Path) -> pd.DataFrame:
    """Read the page-table benchmark's stdout: blocks of five ``Time ...: N ns`` lines.

    Other output (cargo's, say) is ignored. A file may hold several runs, one block
    each; ``Map`` and ``Mapping`` are the same line (the benchmark was relabelled).

    Returns
    -------
    DataFrame
        ``op`` (``map``, ``unmap``, ``unmap-no-reclaim``), ``impl`` (``verified``,
        ``base``), ``repetition`` (1-based block), ``ns``, ``line``.

    Raises
    ------
    OutputError
        No such lines; or a block lacking one of the five (naming its first line
        and the missing line).
    """
    fast = _page_table_on_the_frame(path)
    if fast is not None:
        return fast
    path, lines = text.read_lines(path)
    found = text.labelled_numbers(lines, file=path, pattern=_PAGE_TABLE)
    if not found:
        raise OutputError("no 'Time Verified Map: <n> ns' lines; did the benchmark run?",
                          file=path)
    blocks: list[dict] = [{}]
    for entry in found:
        impl, op = entry.label.split(" ", 1)
        key = (impl.lower(), PAGE_TABLE_OPS[op])
        if key in blocks[-1]:
            blocks.append({})
        blocks[-1][key] = entry
    rows = []
    for number, block in enumerate(blocks, start=1):
        first = min(entry.line for entry in block.values())
        for impl, op in PAGE_TABLE_LINES:
            if (impl, op) not in block:
                label = f"Time {impl.capitalize()} {_PRINTED_OPS[op]}"
                raise OutputError(f"run {number} (from line {first}) lacks its line "
                                  f"'{label}: <n> ns'", file=path, line=first, field=label)
        for (impl, op), entry in block.items():
            rows.append((op, impl, number, text.convert(entry.value, entry.unit, "ns"),
                         entry.line))
    frame = pd.DataFrame(rows, columns=["op", "impl", "repetition", "ns", "line"])
    frame.attrs["source"] = str(path)
    return frame


def _page_table_on_the_frame(path: str | Path) -> pd.DataFrame | None:
    """:func:`read_page_table_log` of a log of nothing but whole runs of the five lines, by pandas' C reader.

    None for anything else (other output among the lines, a run cut short, another order):
    then the log is read line by line.
    """
    found = text.labelled_columns(path, units=("ns", "us", "µs", "μs", "ms", "s"))
    if found is None or len(found.value) % len(PAGE_TABLE_LINES):
        return None
    keys = []
    for label in found.labels:
        match = re.fullmatch(r"Time (Verified|Base) (Map|Mapping|Unmap(?: \(no reclaim\))?)", label)
        if not match:
            return None
        keys.append((match.group(1).lower(), PAGE_TABLE_OPS[match.group(2)]))
    codes = found.label_codes
    runs = np.asarray(codes).reshape(-1, len(PAGE_TABLE_LINES))
    first = [keys[c] for c in runs[0]]
    if sorted(first) != sorted(PAGE_TABLE_LINES) or not (runs == runs[0]).all():
        return None  # each run the five lines, in the same order
    per_code = np.array([text.TIME_UNITS[u] for u in found.units] or [1.0])[found.unit_codes]
    is_ns = np.array([u == "ns" for u in found.units] or [True])[found.unit_codes]
    ns = np.where(is_ns, found.value, found.value * per_code / text.TIME_UNITS["ns"])  # as text.convert does it
    n = len(found.value)
    frame = pd.DataFrame({
        "op": text.take_strings(codes, [op for _, op in keys]),
        "impl": text.take_strings(codes, [impl for impl, _ in keys]),
        "repetition": np.arange(n, dtype="int64") // len(PAGE_TABLE_LINES) + 1,
        "ns": ns, "line": found.line})
    frame.attrs["source"] = str(Path(path))
    return frame


def read_mimalloc_log(path: str | Path) -> pd.DataFrame:
    """Read the stdout of ``entry-mimalloc.sh``: seconds per benchmark and allocator.

    Uses the ``bench mi vmi`` table(s) of ``process-benchmarks-output.py`` (``fail``
    for a failed run); without one, the two ``# test alloc time ...`` tables of
    mimalloc-bench's ``bench.sh`` (a ``Command exited``/``Command terminated``
    line marks the next row failed); without those, the final LaTeX table alone.
    When the LaTeX table is there too, its rounded values must agree.

    Returns
    -------
    DataFrame
        ``benchmark``, ``allocator`` (``mimalloc``, ``verus-mimalloc``), ``seconds``
        (NaN if failed), ``status`` (``ok``, ``fail``), ``run`` (1-based table), ``line``.
    """
    path, data = text.read_bytes(path)
    columns = ["benchmark", "allocator", "seconds", "status", "run", "line"]
    tables = []
    for run, (header, at) in enumerate(_lines_matching(data, "bench", r"bench\s+mi\s+vmi\s*"), start=1):
        # read from the bytes: a regular table never has the rest of the log decoded into lines
        table = text.read_table_at(data, at, file=path, header_line=header, tokens={"mi": ["fail"],
                                   "vmi": ["fail"]}, converters={"mi": text.parse_clock,
                                                                  "vmi": text.parse_clock}, token_columns=False)
        # one row per benchmark and allocator: mi, then vmi, as the table reads
        n = len(table)
        seconds = np.column_stack([table["mi"].to_numpy(dtype=float), table["vmi"].to_numpy(dtype=float)]).ravel()
        tables.append(pd.DataFrame({
            "benchmark": pd.array(np.repeat(table["bench"].to_numpy(dtype=object), 2), dtype="str", copy=False),
            "allocator": text.take_strings(np.tile(np.arange(2), n), [ALLOCATORS["mi"], ALLOCATORS["vmi"]]),
            "seconds": seconds,
            "status": text.take_strings(np.isnan(seconds).astype(np.intp), ["ok", "fail"]),  # NaN: a fail token
            "run": np.full(2 * n, run, dtype="int64"),
            "line": np.repeat(table["line"].to_numpy(dtype="int64"), 2)}, copy=False))
    if tables:
        frame = pd.concat(tables, ignore_index=True) if len(tables) > 1 else tables[0]
        if data.rfind(b"\\begin{tabular}") >= 0:
            lines = text.split_lines(data)
            latex_rows = _mimalloc_latex(path, lines, "\n".join(lines))
            if latex_rows:
                _check_latex(path, list(frame.itertuples(index=False, name=None)), latex_rows)
    else:
        lines = text.split_lines(data)
        whole = "\n".join(lines)
        rows = _bench_sh_rows(path, lines)
        latex_rows = _mimalloc_latex(path, lines, whole)
        if not rows:
            rows = latex_rows
            if not rows:
                raise OutputError("no result table ('bench mi vmi', '# test alloc time' or the "
                                  "LaTeX table); did the benchmarks run?", file=path)
        else:
            _check_latex(path, rows, latex_rows)
        frame = pd.DataFrame(rows, columns=columns)
    if frame["seconds"].dtype != "float64":
        frame = frame.astype({"seconds": "float64"})
    frame.attrs["source"] = str(path)
    return frame


def mimalloc_log_facts(path: str | Path) -> dict:
    """What a mimalloc log says of how it ran: ``procs`` (``cores for vmi: 2``, printed by
    ``process-benchmarks-output.py``; every table must say the same) and ``toolchain`` (the ``# rust: ...`` line a
    rehearsal writes first: the compiler that built Verus-mimalloc, since no Verus did).

    Raises `OutputError` naming the line when two tables ran at different core counts.
    """
    path, data = text.read_bytes(path)
    out: dict = {"toolchain": ""}
    for no, line in enumerate(text.split_lines(data), start=1):
        if line.startswith("# rust:") and not out["toolchain"]:
            out["toolchain"] = line[len("# rust:"):].strip()
        cores = re.fullmatch(r"cores for (?:mi|vmi): ([0-9]+)\s*", line)
        if cores:
            procs = int(cores.group(1))
            if out.setdefault("procs", procs) != procs:
                raise OutputError(f"the suite ran at {procs} cores here and at {out['procs']} before; one run's "
                                  f"tables must share their --procs", file=path, line=no, field="procs")
    return out


def _lines_matching(data: bytes, start: str, pattern: str) -> list[tuple[int, int]]:
    """The lines of ``data`` that begin with ``start`` and match ``pattern`` in full (as decoded lines).

    Returns (1-based line number, offset of the line's first byte) for each.
    """
    found, prefix = [], start.encode("utf-8")
    after = re.compile(b"\n" + re.escape(prefix))  # a line starting so: the search skips the others
    if data.startswith(prefix):
        at = 0
    else:
        first = after.search(data)
        at = first.start() + 1 if first else -1
    line, counted = 1, 0
    while at >= 0:
        end = data.find(b"\n", at)
        end = len(data) if end < 0 else end
        line += data.count(b"\n", counted, at)
        counted = at
        if re.fullmatch(pattern, data[at:end].decode("utf-8").rstrip("\r")):
            found.append((line, at))
        following = after.search(data, at)
        at = following.start() + 1 if following else -1
    return found


def _bench_sh_rows(path: Path, lines: list[str]) -> list[tuple]:
    rows, runs = [], {}
    for header, line in enumerate(lines, start=1):
        if not re.fullmatch(r"#\s*test\s+alloc\s+time\b.*", line.strip()):
            continue
        failed, in_table = False, set()
        for no in range(header + 1, len(lines) + 1):
            cells = lines[no - 1].split()
            if not cells:
                break
            if lines[no - 1].startswith(("Command exited", "Command terminated")):
                failed = True  # GNU time's note, written just before the failed run's line
                continue
            if len(cells) not in (6, 7, 8) or cells[1] not in ALLOCATORS:
                raise OutputError("expected 'test alloc time rss user sys ...' with alloc mi "
                                  "or vmi", file=path, line=no)
            allocator = ALLOCATORS[cells[1]]
            if allocator not in in_table:
                in_table.add(allocator)
                runs[allocator] = runs.get(allocator, 0) + 1
            seconds = math.nan if failed else text.parse_clock(cells[2], file=path, line=no,
                                                               field="time")
            rows.append((cells[0], allocator, seconds, "fail" if failed else "ok",
                         runs[allocator], no))
            failed = False
    return rows


def _mimalloc_latex(path: Path, lines: list[str], whole: str) -> list[tuple]:
    at = whole.rfind(r"\begin{tabular}")
    if at < 0:
        return []
    start = whole.count("\n", 0, at)
    found = latex.tabular_rows("\n".join(lines[start:]), file=path, first_line=start + 1)
    header = [cell.casefold() for cell in found[0][1]] if found else []
    if header != ["benchmark", "mimalloc", "verus mimalloc"]:
        raise OutputError("the LaTeX table's header is not 'Benchmark & mimalloc & Verus "
                          "mimalloc'", file=path, line=found[0][0] if found else start + 1)
    rows = []
    for no, (name, *values) in found[1:]:
        for short, value in zip(("mi", "vmi"), values):
            number = re.fullmatch(rf"({text.NUMBER})\s*s\.?", value)
            if not number:
                raise OutputError(f"{value!r} is not a time such as '4.6 s.'", file=path, line=no,
                                  field=short)
            rows.append((name, ALLOCATORS[short], float(number.group(1)), "ok", 1, no))
    return rows


def _check_latex(path: Path, rows: list[tuple], latex_rows: list[tuple]) -> None:
    def printed(seconds: float) -> str:  # process-benchmarks-output.py's float_to_string
        return f"{seconds:.2f}" if seconds < 1 else f"{seconds:.1f}"

    last = {(row[0], row[1]): row for row in rows}
    for name, allocator, value, _, _, no in latex_rows:
        row = last.get((name, allocator))
        found = "no result" if row is None else "a failure" if row[3] == "fail" else \
            f"{printed(row[2])} s"
        if found != f"{printed(value)} s":
            raise OutputError(f"the LaTeX table says {name} took {printed(value)} s with "
                              f"{allocator}, the result table has {found}", file=path, line=no,
                              field=allocator)


def read_fig8_pdf(path: str | Path) -> pd.DataFrame:
    """Read Fig 8 (verification statistics) from the artifact's rendered ``macro-table.pdf``.

    Returns
    -------
    DataFrame
        ``system``, ``verifier``, ``trusted_loc``, ``proof_loc``, ``code_loc``,
        ``proof_code_ratio``, ``time_1core_s``, ``time_8cores_s``, ``smt_mb``, ``line``
        (of the extracted text); ``attrs``: ``parallel_threads`` (the "N cores"
        header) and ``verus_total`` (the last row's rounded totals, as printed).
    """
    path, lines = text.read_pdf_lines(path)
    rows, group, attrs = [], None, {"source": str(path)}
    for no, line in enumerate(lines, start=1):
        line = line.strip()
        cores = re.fullmatch(r"([0-9]+) cores", line)
        if cores:
            attrs["parallel_threads"] = int(cores.group(1))
        if line in ("IronKV", "NR"):
            group = line
            continue
        if line.startswith("Verus total"):
            attrs["verus_total"] = dict(zip(("trusted_loc", "proof_loc", "code_loc",
                                             "proof_code_ratio"), line.split()[2:]))
            continue
        match = _FIG8_ROW.fullmatch(line)
        if not match:
            continue
        name = match.group("name")
        if match.group("arrow"):
            if group is None or name not in FIG8_VERIFIERS:
                raise OutputError(f"a verifier row {line!r} outside a system group",
                                  file=path, line=no, field="verifier")
            system, verifier = group, FIG8_VERIFIERS[name]
        elif name in FIG8_SYSTEMS:
            system, verifier, group = name, "Verus", None
        else:
            raise OutputError(f"unknown system {name!r}", file=path, line=no, field="system")
        rows.append((system, verifier, *_fig8_values(match.group("values").split(), path, no),
                     no))
    frame = pd.DataFrame(rows, columns=[*FIG8_COLUMNS, "line"])
    missing = [s for s in FIG8_SYSTEMS if s not in set(frame["system"])]
    if missing:
        raise OutputError(f"the table lacks rows for {', '.join(missing)}", file=path,
                          field="system")
    frame.attrs.update(attrs)
    return frame


def _fig8_values(cells: list[str], path: Path, no: int) -> list:
    names = FIG8_COLUMNS[2:]
    out = []
    for name, cell in zip(names, cells):
        if name in ("proof_code_ratio", "time_1core_s", "time_8cores_s"):
            out.append(text.parse_number(cell, file=path, line=no, field=name))
        else:
            out.append(text.parse_count(cell, file=path, line=no, field=name, minimum=0))
    return out


def _measurement(cell: str, *, file, line, field) -> tuple[float, bool]:
    return text.parse_measurement(cell, file=file, line=line, field=field)


def read_macro_results(path: str | Path) -> pd.DataFrame:
    """Read Fig 8 from ``results.json``: one row per project, then one per Dafny baseline.

    ``time_1core_s``/``time_8cores_s`` are the ``wall-time-s`` of the singlethread and
    parallel runs at full precision (the rendered table rounds them); the line counts
    already carry ``manual.json``'s ``linecount-delta``, which the summarizer applied.

    Returns
    -------
    DataFrame
        :data:`FIG8_COLUMNS`, ``success`` (Verus rows: both verifications succeeded;
        baselines: NA) and ``line`` (of the project's object).
    """
    data = jsonfmt.load_json(path)
    path = Path(path)
    if not isinstance(data, list) or not data:
        raise OutputError("expected a non-empty list of projects", file=path, line=1)
    rows = []
    for i, project in enumerate(data):
        pid = jsonfmt.get(data, [i, "project-id"], file=path, kind=str)
        if pid not in FIG8_PROJECTS:
            raise OutputError(f"unknown project {pid!r}; expected one of "
                              f"{', '.join(FIG8_PROJECTS)}", file=path,
                              line=getattr(project, "line", None), field="project-id")
        for key in ("verus", "dafny-baseline"):
            entry = jsonfmt.get(data, [i, key], file=path, default=None)
            if entry is None and key == "dafny-baseline":
                continue
            at = [i, key]
            if key == "verus":
                verifier = "Verus"
                success = jsonfmt.get(data, [*at, "success"], file=path, kind=bool)
            else:
                name = jsonfmt.get(data, [*at, "dafny-name"], file=path, kind=str)
                if name not in FIG8_BASELINES:
                    raise OutputError(f"unknown baseline {name!r}", file=path,
                                      line=getattr(entry, "line", None), field="dafny-name")
                verifier, success = FIG8_BASELINES[name], None
            rows.append((FIG8_PROJECTS[pid], verifier, *_fig8_entry(data, at, path), success,
                         getattr(entry, "line", None)))
    frame = pd.DataFrame(rows, columns=[*FIG8_COLUMNS, "success", "line"])
    frame["success"] = frame["success"].astype("boolean")
    frame.attrs["source"] = str(path)
    return frame


def _fig8_entry(data, at: list, path: Path) -> list:
    """The Fig 8 numbers of one summary (``verus`` or ``dafny-baseline``) of results.json."""
    keys = [("linecount", "trusted"), ("linecount", "proof"), ("linecount", "exec"),
            ("linecount", "proof-exec-ratio"), ("singlethread", "wall-time-s"),
            ("parallel", "wall-time-s"), ("encoding-size-mb",)]
    values = []
    for column, key in zip(FIG8_COLUMNS[2:], keys):
        kind = float if column in ("proof_code_ratio", "time_1core_s", "time_8cores_s") else int
        value = jsonfmt.get(data, [*at, *key], file=path, kind=kind)
        values.append(float(value) if kind is float else value)
    return values


NOT_RUN_WITHOUT_VERUS = "not run here: they need the Verus binary, which needs Rust 1.76 with rustc-dev"
"""What a line-count rehearsal says in the columns only a verification fills (times, SMT size)."""


def read_verus_linecount(path: str | Path) -> dict[str, int | float]:
    """Read ``line_count --json``'s output (Verus's ``source/tools/line_count``) as the summariser reads it.

    ``summarize/src/main.rs``: trusted = ``total.trusted``; proof = ``proof`` + ``spec`` + ``proof,exec``;
    code = ``exec`` + ``proof,exec``; the ratio is proof / code. A missing kind counts 0.

    Returns
    -------
    dict
        ``trusted_loc``, ``proof_loc``, ``code_loc``, ``proof_code_ratio``.
    """
    data = jsonfmt.load_json(path)
    total = jsonfmt.get(data, ["total"], file=path, kind=dict)

    def count(kind: str) -> int:
        value = jsonfmt.get(data, ["total", kind], file=path, default=0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise OutputError(f"total.{kind} is {value!r}, not a count of lines", file=path, field=kind)
        return value
    if not total:
        raise OutputError("total is empty: line_count counted no file", file=path, field="total")
    trusted = count("trusted")
    proof = count("proof") + count("spec") + count("proof,exec")
    code = count("exec") + count("proof,exec")
    return {"trusted_loc": trusted, "proof_loc": proof, "code_loc": code,
            "proof_code_ratio": proof / code if code else math.nan}


def merge_manual(frame: pd.DataFrame, path: str | Path) -> pd.DataFrame:
    """Put ``manual.json``'s hand-entered baseline values into a Fig 8 frame, as the summarizer does.

    A baseline's ``linecount`` replaces its four line-count columns and
    ``encoding-size-mbs`` its ``smt_mb``. A Verus ``linecount-delta`` is not added
    again: ``results.json`` and the rendered table already include it.

    Returns
    -------
    DataFrame
        A copy; ``attrs["manual"]`` lists the ``(system, verifier, column)`` cells set.
    """
    data = jsonfmt.load_json(path)
    path = Path(path)
    if not isinstance(data, list):
        raise OutputError("expected a list of projects", file=path, line=1)
    out, cells = frame.copy(), []
    for i, project in enumerate(data):
        pid = jsonfmt.get(data, [i, "project-id"], file=path, kind=str)
        baseline = jsonfmt.get(data, [i, "dafny-baseline"], file=path, default=None)
        if pid not in FIG8_PROJECTS:
            raise OutputError(f"unknown project {pid!r}", file=path,
                              line=getattr(project, "line", None), field="project-id")
        if baseline is None:
            continue
        rows = out.index[(out["system"] == FIG8_PROJECTS[pid]) & (out["verifier"] != "Verus")]
        if len(rows) != 1:
            raise OutputError(f"hand-entered values for {pid}'s baseline, but the results have "
                              f"{len(rows)} baseline rows for {FIG8_PROJECTS[pid]}", file=path,
                              line=getattr(baseline, "line", None), field=pid)
        updates = {}
        if "linecount" in baseline:
            at = [i, "dafny-baseline", "linecount"]
            for key, column in (("trusted", "trusted_loc"), ("proof", "proof_loc"),
                                ("exec", "code_loc")):
                updates[column] = jsonfmt.get(data, [*at, key], file=path, kind=int)
            updates["proof_code_ratio"] = float(jsonfmt.get(data, [*at, "proof-code-ratio"],
                                                            file=path, kind=float))
        if "encoding-size-mbs" in baseline:
            updates["smt_mb"] = jsonfmt.get(data, [i, "dafny-baseline", "encoding-size-mbs"],
                                            file=path, kind=int)
        for column, value in updates.items():
            out.loc[rows[0], column] = value
            cells.append((FIG8_PROJECTS[pid], out.loc[rows[0], "verifier"], column))
    out.attrs = {**frame.attrs, "manual": cells, "manual_source": str(path)}
    return out
