"""The parsers' vectorised paths: the same frames as the row-by-row paths, line numbers from the bytes, and
the Pesto-like stats tree.

Each reader reads a regular file in one pass of a C parser (pandas, ``json``) and checks the frame; anything
else goes down the careful path, which reads row by row and names the line. The tests below force the
careful path (by switching the fast one off) and compare: a difference in any value, dtype or attribute
fails. Inputs are constructed here (labelled) or shipped in the artifact mirror.
"""

from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path

import pandas as pd
import pytest

from reprobook.errors import OutputError
from reprobook.papers.aardvark import parsers as aardvark
from reprobook.formats import jsonfmt, latex, tables, text
from reprobook.papers.verus import parsers as verus
from tests.support.artifacts import NR, STORAGE, VERUS

LEDGER = "github.com/derbear/aardvark-prototype/dd8f6aaf5f76173118f3f3decbe099bda5972ce2/go-algorand/ledger"
PESTO = "github.com/fsuri/Pequin-Artifact/3f47079c96be29565e16cefc21d14eda519c14a3/sample-output/Pesto"


def write(tmp_path: Path, name: str, content: str) -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8"))
    return path


def both_ways(monkeypatch, module, fast: str, call):
    """``call()`` with the fast path, then with it switched off: (result or error text, ditto, fast path taken)."""
    taken = []
    original = getattr(module, fast)

    def spy(*args, **kwargs):
        out = original(*args, **kwargs)
        taken.append(out is not None)
        return out

    def run():
        try:
            return call()
        except OutputError as exc:
            return str(exc)
    with monkeypatch.context() as m:
        m.setattr(module, fast, spy)
        quick = run()
    with monkeypatch.context() as m:
        m.setattr(module, fast, lambda *args, **kwargs: None)
        careful = run()
    return quick, careful, any(taken)


def assert_same(quick, careful):
    if isinstance(careful, str) or isinstance(quick, str):
        assert quick == careful
        return
    pd.testing.assert_frame_equal(quick, careful, check_exact=True)
    assert quick.attrs == careful.attrs


# --- the line index ---------------------------------------------------------------------------------

def test_line_index_numbers_lines_from_the_bytes():
    index = text.LineIndex(b"a,1\n \t\nb c\n\nlast")
    assert index.starts.tolist() == [0, 4, 7, 11, 12] and index.ends.tolist() == [3, 6, 10, 11, 16]
    assert index.blank.tolist() == [False, True, False, True, False]
    assert index.numbers().tolist() == [1, 3, 5]
    assert index.count(ord(" ")).tolist() == [0, 1, 1, 0, 0]
    assert index.line_of([0, 3, 4, 12, 15]).tolist() == [1, 1, 2, 5, 5]
    assert text.LineIndex(b"x\n").numbers().tolist() == [1]  # the empty line after a final newline is blank


# --- CSV and TSV ------------------------------------------------------------------------------------

CSV_CASES = [  # constructed: each shape the careful path knows, read both ways
    ("a,b\n1,2\n", {}),
    (" a , b \n 1 , x y \n\n3,4\n", {"types": {"a": "int"}}),
    ("a\tb\t\n1\t2\t\n", {"sep": "\t", "trailing_sep": True, "types": {"a": "int"}}),
    ("a,b,\n1,2,\n3,4,\n", {"trailing_sep": True}),
    ("a,b\n1,2\n3\n", {}),
    ("a,b\n1,2,3\n", {}),
    ("k,v\nx,1.5\ny,2e3\nz,-0\n", {"types": {"v": "float"}}),
    ("k,v\nx,+5\ny,007\n", {"types": {"v": "int"}}),
    ("k,v\nx, 5 \n", {"types": {"v": "int"}}),
    ("\ufeffk,v\r\nx,1\r\n\r\ny,2\r\n", {"types": {"v": "int"}}),
    ("k,v\nx,\n", {"types": {"v": "int"}}),
    ("k,v\nx,nan\n", {"types": {"v": "float"}}),
    ("k,v\nx,inf\n", {"types": {"v": "float"}}),
    ("k,v\nx,99999999999999999999\n", {"types": {"v": "int"}}),
    ("a,b\n1,2\n   \n3,4\n", {}),
    ("a,1\nb,2\n", {"header": False, "columns": ["k", "v"], "types": {"v": "int"}}),
    ("a,1,\nb,2,\n", {"header": False, "columns": ["k", "v"], "trailing_sep": True}),
    ('k,v\n"x,y",1\n', {}),
    ("k,v\nx,1\rz\n", {}),
]


@pytest.mark.parametrize("content, options", CSV_CASES, ids=[repr(c[0][:20]) for c in CSV_CASES])
def test_csv_read_in_one_pass_equals_the_careful_read(tmp_path, monkeypatch, content, options):
    path = write(tmp_path, "t.csv", content)
    quick, careful, _ = both_ways(monkeypatch, tables, "_read_regular", lambda: tables.read_csv(path, **options))
    assert_same(quick, careful)


def test_shipped_tables_take_the_one_pass_read(mirror, monkeypatch):
    for path, options in [
        (mirror / STORAGE / "results_128.csv", {"header": False, "columns": ["log", "us"], "trailing_sep": True,
                                                "types": {"us": "int"}}),
        (mirror / VERUS / "ironkv/recording/raw-data.txt", {"sep": "\t", "types": {"Seconds": "int"}}),
        (mirror / NR / "verified/scaleout_benchmarks.csv", {"types": {"iterations": "int", "duration": "float"}}),
    ]:
        quick, careful, fast = both_ways(monkeypatch, tables, "_read_regular",
                                         lambda: tables.read_csv(path, **options))
        assert fast, path
        assert_same(quick, careful)


def test_aardvark_trials_crlf_one_pass(mirror, monkeypatch, tmp_path):
    shipped = mirror / LEDGER / "validators.csv"
    assert b"\r\n" in shipped.read_bytes()  # the authors' file has Windows line ends
    for path in (shipped, mirror / LEDGER / "archives.csv", write(tmp_path, "x.csv", "m,1,2\nc,1,3\nm,1,4\n")):
        quick, careful, fast = both_ways(monkeypatch, aardvark, "_trials_on_the_frame",
                                         lambda: aardvark.read_trials_csv(path, role="archive"))
        assert fast
        assert_same(quick, careful)
    assert quick["trial"].tolist() == [1, 1, 2]
    for bad in ("m,1,2\nx,1,3\n", "m,1,2\nm,0,3\n", "m,+1,2\n", "m,1,2,4\n", "m,1\n", "m,1,-2\n", "m,1,inf\n"):
        path = write(tmp_path, "bad.csv", bad)
        quick, careful, fast = both_ways(monkeypatch, aardvark, "_trials_on_the_frame",
                                         lambda: aardvark.read_trials_csv(path, role="validator"))
        assert not fast and isinstance(careful, str) and "bad.csv, line" in careful
        assert quick == careful


# --- labelled numbers -------------------------------------------------------------------------------

# constructed from the format of milli/linked-list/oneshot.py (`{Tool}: {median:.2f} sec`)
ONESHOT = "Dafny: 3.83 sec\nVerus: 0.66 sec\n\nPrusti: inf sec\nFstarlowstar: 7.16 sec\nF*: 1e1 sec\n"


@pytest.mark.parametrize("content, fast", [
    (ONESHOT * 50, True),
    ("Verus:0.66 sec\nDafny:   12   secs\nCreusot: INF sec\n", True),
    ("Verus 0.66: sec\n", False),  # the colon must follow the label
    ("Verus: 0.66 ms\n", False),
    ("Verus: -1 sec\n", False),
    ("Verus: nan sec\n", False),
    ("Kani: 1.0 sec\n", False),
    ("Verus: 0.66\tsec\n", False),
])
def test_oneshot_one_pass_equals_line_by_line(tmp_path, monkeypatch, content, fast):
    path = write(tmp_path, "linked-list-oneshot.txt", content)
    quick, careful, taken = both_ways(monkeypatch, verus, "_oneshot_on_the_frame", lambda: verus.read_milli(path))
    assert taken == fast
    assert_same(quick, careful)


# constructed from the page-table benchmark's output (five `Time ...: N ns` lines a run)
RUN = ("Time Verified Map: 23.08858679 ns\nTime Verified Unmap: 303.26841955 ns\n"
       "Time Verified Unmap (no reclaim): 7.66253143 ns\nTime Base Map: 0.0197 us\nTime Base Unmap: 1.0e-8 s\n")


@pytest.mark.parametrize("content, fast", [
    (RUN * 40, True),
    (RUN + RUN.replace("Map:", "Mapping:"), False),  # the runs must repeat one order: else line by line
    (RUN + "Time Verified Map: 2 ns\n", False),
    ("Compiling pt v0.1.0\n" + RUN, False),
])
def test_page_table_one_pass_equals_line_by_line(tmp_path, monkeypatch, content, fast):
    path = write(tmp_path, "pt.log", content)
    quick, careful, taken = both_ways(monkeypatch, verus, "_page_table_on_the_frame",
                                      lambda: verus.read_page_table_log(path))
    assert taken == fast
    assert_same(quick, careful)


# --- whitespace tables ------------------------------------------------------------------------------

@pytest.mark.parametrize("lines, fast", [
    (["bench  mi   vmi", "cfrac  4.6  fail", "x .5 3.", "", "after"], True),
    (["bench  mi   vmi", "cfrac  4.6  fail", "x .5 3.", "  ", "after"], True),
    (["bench  mi   vmi", "cfrac  4.6  fail", "x 1:02.5 3"], False),
    (["bench  mi   vmi", "cfrac  4.6  fail", "x 1e3 3"], False),
    (["bench  mi   vmi", "cfrac  4.6  fail", "x -0 3"], False),
    (["bench  mi   vmi", "cfrac  4.6  fail", "x 5"], False),
    (["bench  mi   vmi", "cfrac  4.6  fail 7"], False),
])
def test_whitespace_table_one_pass_equals_row_by_row(monkeypatch, lines, fast):
    def call():
        return text.read_table(lines, file="log", header_line=1, tokens={"mi": ["fail"], "vmi": ["fail"]},
                               converters={"mi": text.parse_clock, "vmi": text.parse_clock})
    quick, careful, taken = both_ways(monkeypatch, text, "_whitespace_table", call)
    assert taken == fast
    assert_same(quick, careful)



MIMALLOC_TABLE = {"tokens": {"mi": ["fail"], "vmi": ["fail"]},
                  "converters": {"mi": text.parse_clock, "vmi": text.parse_clock}}


# constructed from the format of process-benchmarks-output.py's `bench mi vmi` table, inside other output
@pytest.mark.parametrize("content, fast", [
    ("cargo noise\nbench  mi   vmi\ncfrac  4.6  fail\nx .5 3.\n\nafter 1 2\n", True),
    ("bench mi vmi\ncfrac\t4.6\t5\nx 1 2", True),  # tabs; no line end after the last row
    ("bench mi vmi\nx 1 2\n \t \ny 2 3\n", True),  # a line of blanks ends the table
    ("bench mi vmi\r\ncfrac 4.6 5\r\n", False),  # carriage returns: row by row
    ("bench mi vmi\nx 1\ny 2 3 4\n", False),  # as many cells as 2 full rows, but one short: named
    ("bench mi vmi\nx\u00a01 2 3\n", False),  # a blank that is not ASCII: row by row
    ("bench mi vmi\nx 1e3 2\n", False),
    ("bench mi vmi\n\nx 1 2\n", False),  # no row
])
def test_whitespace_table_from_the_bytes_equals_row_by_row(monkeypatch, content, fast):
    data = content.encode("utf-8")
    at = data.find(b"bench")
    for token_columns in (True, False):
        def call():
            return text.read_table_at(data, at, file="log", header_line=data.count(b"\n", 0, at) + 1,
                                      token_columns=token_columns, **MIMALLOC_TABLE)
        quick, careful, taken = both_ways(monkeypatch, text, "_whitespace_table", call)
        assert taken == fast
        assert_same(quick, careful)
        if not isinstance(quick, str) and len(quick):
            assert ("mi_token" in quick.columns) == token_columns
            assert quick["line"].iloc[0] == data.count(b"\n", 0, at) + 2


def test_mimalloc_log_tables_from_the_bytes(tmp_path, monkeypatch):
    # constructed: two runs of process-benchmarks-output.py, between lines of other output
    content = ("Compiling mimalloc\nbench mi vmi\ncfrac 4.60 fail\nespresso 1:02.5 5.1\n\n"
               "bench: done\nbench   mi   vmi\ncfrac 4.7 9.8\nespresso 5.2 5.3\n")
    path = write(tmp_path, "log.txt", content)
    quick, careful, _ = both_ways(monkeypatch, text, "_whitespace_table", lambda: verus.read_mimalloc_log(path))
    assert_same(quick, careful)
    assert quick["run"].tolist() == [1, 1, 1, 1, 2, 2, 2, 2]
    assert quick["line"].tolist() == [3, 3, 4, 4, 8, 8, 9, 9]
    assert quick["status"].tolist()[:2] == ["ok", "fail"] and math.isnan(quick["seconds"].iloc[1])
    assert quick["seconds"].iloc[2] == 62.5  # the clock reading, read row by row in that table
    assert list(quick.dtypes.astype(str)) == ["str", "str", "float64", "str", "int64", "int64"]


# --- LaTeX tables -----------------------------------------------------------------------------------

def tabular(rows: str, spec: str = "lll", before: str = "") -> str:
    return before + "\\begin{tabular}{" + spec + "}\n\\hline\n" + rows + "\n\\end{tabular}\n"


# constructed: the table process-benchmarks-output.py prints, and the markup the cell-by-cell reading knows
LATEX_CASES = [
    (tabular("Benchmark & mimalloc & Verus mimalloc \\\\ \\hline\ncfrac & 4.6\\invizero s. & \\textbf{9.7}\\,s "
             "\\\\ \\hline\nsh6benchN & 0.14 s. & 2.0\\invizero s. \\\\ \\hline"), True),
    (tabular("a & $\\rightarrow$ b~c & \\to*{x}\\textasciitilde \\\\[2pt]\n\\toprule\nx & \\foo[a] z & "
             "\\bar [q]{w}{v} \\\\ \\cline{2-3}\nlast & 50\\,\\% & \\_\\#"), True),
    (tabular("a & \\leq\\textbf{b} & \\emph\\quad{c} \\\\ d & \\textbf~{x} & \\foo$ {y} \\\\"), True),
    (tabular("a & b \\\\ short \\\\"), True),  # a short row is padded
    (tabular("a & \\textbf{\\foo[x}]{y} & c \\\\"), False),  # a [...] reaching out of its group
    (tabular("a & \\leq\\foo[$a\n& [x]{} \\\\"), True),  # a [...] does not reach into the next cell
    (tabular("\\hline[{] a & b & c \\\\"), False),
    (tabular("a & b & c \\\\[3pt \\\\ x] d & e & f \\\\"), False),
    (tabular("a & \\multicolumn{2}{c}{b} \\\\"), False),
    (tabular("a & \\name & c \\\\", before="\\newcommand{\\name}{Verus}\n"), False),
    (tabular("map \\& unmap & b & c \\\\"), False),
    (tabular("a & \\textbf{b \\\\ c} & d \\\\"), False),
    (tabular("a & b & c & d \\\\"), False),  # more cells than the spec: named
]


@pytest.mark.parametrize("source, fast", LATEX_CASES, ids=[str(i) for i in range(len(LATEX_CASES))])
def test_latex_one_pass_equals_cell_by_cell(monkeypatch, tmp_path, source, fast):
    quick, careful, taken = both_ways(monkeypatch, latex, "_rows_in_one_pass",
                                      lambda: latex.tabular_rows(source, file="t.tex", first_line=3))
    assert taken == fast
    assert quick == careful
    path = write(tmp_path, "t.tex", source)
    for header_rows in (1, 2):
        quick, careful, _ = both_ways(monkeypatch, latex, "_rows_in_one_pass",
                                      lambda: latex.read_tabular(path, header_rows=header_rows))
        assert_same(quick, careful)


# pieces of LaTeX the two readings treat differently if either is wrong: markup, escapes, braces, rules, spacing
LATEX_PIECES = ["a", "1.5", " ", "\n", "\t", "&", "\\\\", "\\\\[2pt]", "\\hline ", "\\toprule\n", "\\cmidrule(lr){1-2}",
                "\\cline{1-2}", "\\textbf{", "\\textbf {", "\\textbf*", "{", "}", "{x}", "[x]", "[", "]", "\\emph", "\\foo",
                "\\,", "\\;", "\\ ", "\\\n", "\\%", "\\_", "\\&", "\\", "~", "$", "*", "\\to", "\\to{", "\\le", "\\leq",
                "\\quad", "\\textasciitilde", "\\multicolumn{2}{c}{", "\\2", "\u00a0", "\x1c"]


def test_latex_one_pass_equals_cell_by_cell_on_generated_tables(monkeypatch):
    rng = random.Random(20261123)
    taken_any = 0
    for _ in range(2000):
        source = ("x\n\\begin{tabular}{" + rng.choice(["ll", "l", "lll", ""]) + "}"
                  + "".join(rng.choice(LATEX_PIECES) for _ in range(rng.randint(1, 25))) + "\\end{tabular}")
        quick, careful, taken = both_ways(monkeypatch, latex, "_rows_in_one_pass",
                                          lambda: latex.tabular_rows(source, file="t.tex"))
        assert quick == careful, source
        taken_any += taken
    assert taken_any > 200  # the one-pass reading was tried on a good share of them


def test_latex_markup_taken_off_in_one_pass(monkeypatch):
    rows = latex.tabular_rows(LATEX_CASES[2][0], file="t.tex")
    assert rows == [(3, ["a", "b", "c"]), (3, ["d", "x", "y"])]  # \leq is no symbol here: it goes
    rows = latex.tabular_rows(LATEX_CASES[1][0], file="t.tex")
    assert rows[0] == (3, ["a", "→ b c", "→x~"]) and rows[2] == (6, ["last", "50 %", "_#"])


def test_latex_table_of_many_rows_read_by_columns(tmp_path, monkeypatch):
    # constructed: a long table as process-benchmarks-output.py would print it for many benchmarks
    body = "\n".join(f"bench{i} & {i}.5\\,s & \\textbf{{{i}.1}} s \\\\" for i in range(2000))
    path = write(tmp_path, "t.tex", tabular("Benchmark & mimalloc & Verus mimalloc \\\\ \\hline\n" + body))
    quick, careful, taken = both_ways(monkeypatch, latex, "_rows_in_one_pass", lambda: latex.read_tabular(path))
    assert taken
    assert_same(quick, careful)
    assert list(quick.columns) == ["Benchmark", "mimalloc", "Verus mimalloc", "line"]
    assert quick.iloc[1999].tolist() == ["bench1999", "1999.5 s", "1999.1 s", 2003]


# --- pointproofs lists ------------------------------------------------------------------------------

@pytest.mark.parametrize("values, fast", [
    ("38677, 39772, 0", True),
    ("1.5, 2e3, 0.25", True),
    ("99999999999999999999999, 1", False),  # beyond int64: item by item
    ("1, true", False),
    ("1, null", False),
    ("1, -2", False),
])
def test_veccom_lists_read_as_json_equal_item_by_item(tmp_path, monkeypatch, values, fast):
    # constructed from the format of pointproofs' bench-results
    n = values.count(",") + 1
    rows = "".join(f"bench_{s}_{op},[{values}]\n" for s in ("pairing", "merkle")
                   for op in ("commit", "open", "verify", "commit_update", "proof_update"))
    path = write(tmp_path, "bench-results", f"iters,{n}\n{rows}")
    quick, careful, taken = both_ways(monkeypatch, aardvark, "_json_numbers", lambda: aardvark.read_veccom(path))
    assert taken == fast
    assert_same(quick, careful)
    if fast:
        assert quick["latency_us"].tolist()[:n] == [float(v) for v in values.split(",")]

# --- JSON -------------------------------------------------------------------------------------------

def _objects(value, out):
    if isinstance(value, dict):
        out.append((value.line, sorted(value)[:2]))
        for v in value.values():
            _objects(v, out)
    elif isinstance(value, list):
        for v in value:
            _objects(v, out)
    return out


def test_json_object_lines_with_braces_and_escapes_in_strings(tmp_path):
    content = ('{"a": "{", "b": {"c": "}\\\\"},\n "d": [{"e": "\\"{"},\n\n  {"f": {"g": {}}}],\n'
               ' "h\\u007b": "}}}", "i": "\\\\\\\\"}')
    data = jsonfmt.load_json(write(tmp_path, "r.json", content))
    assert _objects(data, []) == [(1, ["a", "b"]), (1, ["c"]), (2, ["e"]), (4, ["f"]), (4, ["g"]), (4, [])]
    crlf = jsonfmt.load_json(write(tmp_path, "w.json", '\ufeff[\r\n{"x": 1},\r\n{"y": {"z": 2}}]'))
    assert [o.line for o in crlf] == [2, 3] and crlf[1]["y"].line == 3


# --- the Pesto-like stats tree ----------------------------------------------------------------------

def test_stats_tree_reads_run_stats_of_every_file(mirror):
    root = mirror / PESTO
    frame = jsonfmt.read_stats_tree(root)
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("stats.json"))
    assert list(frame.columns) == ["file", "type", "metric", "stat", "value"] and frame["value"].dtype == "float64"
    assert sorted(frame["file"].unique()) == files
    first = json.loads((root / files[0]).read_text())["run_stats"]
    mine = frame[frame["file"] == files[0]]
    expected = [(t, m, s, float(v)) for t, metrics in first.items() for m, stats in metrics.items()
                for s, v in stats.items()]
    assert list(mine[["type", "metric", "stat", "value"]].itertuples(index=False, name=None)) == expected
    assert {"combined", "rw_sql"} <= set(frame["type"]) and "tput" in set(frame["metric"])


def test_stats_tree_names_the_file_line_and_key_of_a_bad_value(mirror, tmp_path):
    source = mirror / PESTO / "1-Workloads/TPCC/2024-10-21-16-59-02/2024-10-21-16-59-15/out/stats.json"
    for i in range(3):
        dest = tmp_path / f"run{i}" / "out" / "stats.json"
        dest.parent.mkdir(parents=True)
        shutil.copy(source, dest)
    good = jsonfmt.read_stats_tree(tmp_path)
    assert good["file"].nunique() == 3
    bad = tmp_path / "run1" / "out" / "stats.json"
    data = json.loads(bad.read_text())
    kind = next(iter(data["run_stats"]))
    data["run_stats"][kind]["tput"]["mean"] = "fast"
    bad.write_text(json.dumps(data, indent=2))
    with pytest.raises(OutputError) as info:
        jsonfmt.read_stats_tree(tmp_path)
    line = next(no for no, text_ in enumerate(bad.read_text().splitlines(), 1) if '"fast"' in text_)
    assert info.value.file == str(bad) and info.value.field == f"run_stats.{kind}.tput.mean"
    assert info.value.line is not None and 0 < line - info.value.line <= 12  # the line of the object holding it
    data["run_stats"][kind]["tput"]["mean"] = math.inf
    bad.write_text(json.dumps(data))
    with pytest.raises(OutputError, match="expected float"):
        jsonfmt.read_stats_tree(tmp_path)
    del data["run_stats"]
    bad.write_text(json.dumps(data))
    with pytest.raises(OutputError, match="missing 'run_stats'") as info:
        jsonfmt.read_stats_tree(tmp_path)
    assert info.value.file == str(bad)
    with pytest.raises(OutputError, match="no stats.json"):
        jsonfmt.read_stats_tree(tmp_path / "run0" / "out" / "nothing-here-dir-that-is-missing")
