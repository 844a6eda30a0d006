"""Tests of the format kit (reprobook.formats.text, tables, jsonfmt, latex, gotest).

Real inputs come from the artifact mirror (`mirror` fixture) and, for the page-table
lines and the LMBench table, from the seed guides' example outputs. Formats with no
shipped sample use inputs constructed from the scripts that write them; each is
labelled where it is defined.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from reprobook.errors import OutputError
from reprobook.formats import gotest, jsonfmt, latex, tables, text
from tests.conftest import ROOT
from tests.support.artifacts import NR, STORAGE, VERUS
from tests.support.outputs import raises_at

LEDGER = ("github.com/derbear/aardvark-prototype/dd8f6aaf5f76173118f3f3decbe099bda5972ce2"
          "/go-algorand/ledger")
PESTO = ("github.com/fsuri/Pequin-Artifact/3f47079c96be29565e16cefc21d14eda519c14a3/sample-output/"
         "Pesto/1-Workloads/TPCC/2024-10-21-16-59-02")
SHARED = ROOT.parent / "shared"


def shipped(mirror: Path, relative: str) -> Path:
    path = mirror / relative
    assert path.is_file(), f"{path} is missing from the artifact mirror"
    return path


def seed_file(name: str) -> Path:
    path = SHARED / name
    if not path.is_file():
        pytest.skip(f"no {path}")
    return path


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", newline="")
    return path


# --- text: lines, numbers, labelled numbers ----------------------------------------------------

def test_read_lines_on_a_crlf_file(mirror):
    path, lines = text.read_lines(shipped(mirror, f"{LEDGER}/validators.csv"))
    assert lines[:2] == ["m,32,36", "m,32,33"]  # CRLF in the file, gone here
    assert text.records(lines)[0] == (1, "m,32,36")
    assert len(text.records(lines)) == 180


def test_read_lines_bom_blank_and_bad_bytes(tmp_path):
    path = write(tmp_path, "bom.txt", "\ufeffa\r\n\r\n  b \n".encode("utf-8"))
    assert text.read_lines(path)[1] == ["a", "", "  b ", ""]
    assert text.records(text.read_lines(path)[1]) == [(1, "a"), (3, "b")]
    raises_at(lambda: text.read_lines(write(tmp_path, "e.txt", " \n\t\n")), tmp_path / "e.txt",
              None, match="empty")
    raises_at(lambda: text.read_lines(write(tmp_path, "x.txt", b"ok\nok\n\xff\n")),
              tmp_path / "x.txt", 3, match="UTF-8")
    raises_at(lambda: text.read_lines(tmp_path / "absent"), tmp_path / "absent", None,
              match="cannot read")


@pytest.mark.parametrize("call, value", [
    (lambda: text.parse_number("3.5", file="f"), 3.5),
    (lambda: text.parse_number("-2e3", file="f", signed=True), -2000.0),
    (lambda: text.parse_count("16", file="f"), 16),
    (lambda: text.parse_count("0", file="f", minimum=0), 0),
    (lambda: text.parse_clock("04.60", file="f"), 4.6),
    (lambda: text.parse_clock("1:04.60", file="f"), 64.6),
    (lambda: text.parse_clock("1:02:03", file="f"), 3723.0),
    (lambda: text.convert(34.66863213, "ns", "ns"), 34.66863213),
    (lambda: text.convert(1.5, "min", "s"), 90.0),
    (lambda: text.convert(3.83, "sec", "ms"), 3830.0),
    (lambda: text.convert(2, "µs", "ns"), 2000.0),
    (lambda: text.convert(1, "h", "min"), 60.0),
])
def test_numbers_counts_clocks_units(call, value):
    assert call() == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize("call, field", [
    (lambda: text.parse_number("abc", file="out.txt", line=4, field="x"), "x"),
    (lambda: text.parse_number("-1", file="out.txt", line=4, field="x"), "x"),
    (lambda: text.parse_number("0", file="out.txt", line=4, field="x", positive=True), "x"),
    (lambda: text.parse_number("1e999", file="out.txt", line=4, field="x"), "x"),
    (lambda: text.parse_number("nan", file="out.txt", line=4, field="x"), "x"),
    (lambda: text.parse_count("3.0", file="out.txt", line=4, field="n"), "n"),
    (lambda: text.parse_count(str(2**31), file="out.txt", line=4, field="n"), "n"),
    (lambda: text.parse_clock("1:xx", file="out.txt", line=4, field="t"), "t"),
    (lambda: text.convert(1, "fortnight", "s", file="out.txt", line=4, field="t"), "t"),
])
def test_bad_numbers_name_file_and_line(call, field):
    error = raises_at(call, "out.txt", 4, field)
    assert error.file == "out.txt"


def test_measurement_maps_timeouts_to_nan():
    assert text.parse_measurement("0.66", file="f") == (0.66, False)
    for marker in ("inf", "INF", "timeout", "Infinity"):
        value, timed_out = text.parse_measurement(marker, file="f")
        assert math.isnan(value) and timed_out


def test_labelled_numbers_on_the_seed_page_table_output():
    # the Verus guide's example output of the page-table benchmark, inside the guide itself
    path, lines = text.read_lines(seed_file("seeds/000_d33474697f8e6648.txt"))
    found = text.labelled_numbers(lines, file=path, units={"ns"})
    assert [(n.label, n.value, n.unit, n.line) for n in found] == [
        ("Time Verified Mapping", 34.66863213, "ns", 257),
        ("Time Verified Unmap", 413.87505061, "ns", 258),
        ("Time Verified Unmap (no reclaim)", 30.91497891, "ns", 259),
        ("Time Base Mapping", 19.70236766, "ns", 260),
        ("Time Base Unmap", 10.0346619, "ns", 261)]
    assert not any(n.timed_out for n in found)


def test_labelled_numbers_strict_units_and_timeouts(tmp_path):
    # constructed from the format of milli/linked-list/oneshot.py, not a shipped output
    lines = ["Dafny: 3.83 sec", "Verus: 0.66 sec", "Prusti: inf sec"]
    found = text.labelled_numbers(lines, file="o.txt", strict=True, units={"sec"})
    assert [(n.label, n.value) for n in found[:2]] == [("Dafny", 3.83), ("Verus", 0.66)]
    assert found[2].timed_out and math.isnan(found[2].value) and found[2].line == 3
    raises_at(lambda: text.labelled_numbers([*lines, "b'error: aborting'"], file="o.txt",
                                            strict=True), "o.txt", 4)
    raises_at(lambda: text.labelled_numbers(["Verus: 0.66 ms"], file="o.txt", units={"sec"}),
              "o.txt", 1, "Verus", match="unit")
    assert text.labelled_numbers(["noise", "Verus: fast sec"], file="o.txt") == []


def test_fixed_width_table_on_the_seed_lmbench_output():
    # seed 003's example `make see` output (LMBench summary), a real fixed-width table
    path, lines = text.read_lines(seed_file("paper-numbers/ozz_lmbench_make_see_example_from_seed.txt"))
    rule = next(no for no, line in enumerate(lines, 1) if line.startswith("--------- "))
    columns = ["host", "os", "mhz", "null_call", "null_io", "stat", "open_clos", "slct_tcp",
               "sig_inst", "sig_hndl", "fork_proc", "exec_proc", "sh_proc"]
    table = text.read_table(lines, file=path, header_line=rule, columns=columns,
                            by_position=True, comment="#")
    assert table["os"].tolist() == ["Linux 6.8.0-g"] * 2
    assert table["null_call"].tolist() == ["1.88", "49.2"]
    assert table["sh_proc"].tolist() == ["60.K", "612K"]
    assert table["line"].tolist() == [rule + 1, rule + 2]
    assert text.rule_positions("---- -- ---") == [0, 5, 8]


# constructed from the format of verified-memory-allocator's process-benchmarks-output.py
BENCH_TABLE = """cores for mi: 16
bench           mi      vmi
cfrac           04.60   09.70
espresso        05.51   fail
larsonN         1:04.60 fail

tail
"""


def test_whitespace_table_with_fail_tokens():
    lines = BENCH_TABLE.split("\n")
    table = text.read_table(lines, file="log", header_line=2,
                            converters={"mi": text.parse_clock, "vmi": text.parse_clock},
                            tokens={"vmi": ["fail"]})
    assert list(table.columns) == ["bench", "mi", "vmi", "vmi_token", "line"]
    assert table["mi"].tolist() == [4.6, 5.51, 64.6]
    assert table["vmi"].tolist()[0] == 9.7 and table["vmi"].isna().tolist() == [False, True, True]
    assert table["vmi_token"].tolist() == ["", "fail", "fail"]
    assert table["line"].tolist() == [3, 4, 5]
    broken = BENCH_TABLE.replace("05.51   fail", "05.51").split("\n")
    raises_at(lambda: text.read_table(broken, file="log", header_line=2), "log", 4)
    bad = BENCH_TABLE.replace("09.70", "slow").split("\n")
    raises_at(lambda: text.read_table(bad, file="log", header_line=2,
                                      converters={"vmi": text.parse_clock}), "log", 3, "vmi")


def test_pdf_text_of_the_rendered_fig8(mirror, tmp_path):
    path, lines = text.read_pdf_lines(shipped(mirror, f"{VERUS}/site/assets/macro-table.pdf"))
    assert "→ Verus 1613 4513 1533 2.9 30 10 15" in lines
    assert "Mimalloc 282 13703 3178 4.3 247 46 127" in lines
    raises_at(lambda: text.read_pdf_lines(write(tmp_path, "x.pdf", b"%PDF-1.4 garbage")),
              tmp_path / "x.pdf", None, match="PDF")


def test_a_pdf_read_before_is_not_extracted_again_and_a_changed_one_is(mirror, tmp_path, monkeypatch):
    """The text is kept by the PDF's content: read again, the same bytes come from the cache (pypdf not asked); one
    byte more is another PDF; a damaged entry is extracted again."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    pdf = tmp_path / "fig8.pdf"
    pdf.write_bytes(shipped(mirror, f"{VERUS}/site/assets/macro-table.pdf").read_bytes())
    _, first = text.read_pdf_lines(pdf)
    entries = list((tmp_path / "cache" / "reprobook" / "pdf-text").glob("*.json"))
    assert len(entries) == 1 and "Mimalloc 282 13703 3178 4.3 247 46 127" in first
    def asked(*args, **kwargs):
        raise RuntimeError("pypdf was asked")
    with monkeypatch.context() as m:   # pypdf's reader refuses: only the cache can answer
        m.setattr("pypdf.PdfReader", asked)
        assert text.read_pdf_lines(pdf)[1] == first
        pdf.write_bytes(pdf.read_bytes() + b"\n")   # another PDF (a byte more): not in the cache
        with pytest.raises(RuntimeError, match="asked"):
            text.read_pdf_lines(pdf)
    entries[0].write_text("[1, 2")   # damaged: read again from the PDF it was made of
    pdf.write_bytes(pdf.read_bytes()[:-1])
    assert text.read_pdf_lines(pdf)[1] == first and len(json.loads(entries[0].read_text())) == len(first)


# --- tables: CSV and TSV -----------------------------------------------------------------------

def test_csv_without_header_and_trailing_commas(mirror):
    frame = tables.read_csv(shipped(mirror, f"{STORAGE}/results_128.csv"), header=False,
                            columns=["log", "us"], trailing_sep=True, types={"us": "int"})
    assert list(frame.columns) == ["log", "us", "line"] and len(frame) == 30
    assert frame.iloc[0].tolist() == ["pmdk", 13164376, 1]
    assert frame.iloc[-1].tolist() == ["old", 23262802, 30]
    assert frame["us"].dtype == "int64"
    assert frame["log"].tolist()[:3] == ["pmdk", "verif", "old"]


def test_tsv_with_header_and_typed_columns(mirror):
    path = shipped(mirror, f"{VERUS}/ironkv/recording/raw-data.txt")
    frame = tables.read_tsv(path, required=["Language", "Requests completed"],
                            types={"Seconds": "int", "Requests completed": "int"})
    assert len(frame) == 120
    assert frame.iloc[0][["Language", "Threads", "Workload", "Value size"]].tolist() == [
        "verus", "10", "g", "128"]  # untyped cells stay strings
    assert frame.iloc[0]["Requests completed"] == 529823 and frame.iloc[0]["line"] == 2
    assert set(frame["Seconds"]) == {30}
    assert frame.attrs["source"] == str(path)


def test_csv_with_header_nr_and_pesto(mirror):
    frame = tables.read_csv(shipped(mirror, f"{NR}/upstream/scaleout_benchmarks.csv"),
                            types={"iterations": "int", "duration": "float", "threads": "int"})
    assert len(frame) == 10
    assert frame.iloc[0]["name"] == "nr-counter-scaleout-wr0"  # the leading space is stripped
    assert frame["iterations"].sum() == 666825280 and frame["duration"].iloc[0] == 10.0
    pesto = tables.read_csv(shipped(mirror, f"{PESTO}/plots/tput-clients.csv"), header=False,
                            columns=["clients", "tput"], types={"clients": "int",
                                                                "tput": "float"})
    assert pesto["clients"].tolist() == [15, 20, 30, 35, 40, 45]
    assert pesto["tput"].iloc[0] == pytest.approx(1310.5666666666666)


@pytest.mark.parametrize("content, options, line, field", [
    ("a,1\nb,2,3\n", {"header": False, "columns": ["k", "v"]}, 2, None),
    ("a,1,2\nb,2,3\n", {"header": False, "columns": ["k", "v"]}, 1, None),
    ("a,1,\nb,2,3\n", {"header": False, "columns": ["k", "v"], "trailing_sep": True}, 2, None),
    ("a,1\nb,99999999999999999999\n", {"header": False, "columns": ["k", "v"],
                                        "types": {"v": "int"}}, 2, "v"),
    ("a,1\n\nb,\n", {"header": False, "columns": ["k", "v"], "types": {"v": "int"}}, 3, "v"),
    ("a,1\nb,2.5\n", {"header": False, "columns": ["k", "v"], "types": {"v": "int"}}, 2, "v"),
    ("a,1\nb,x\n", {"header": False, "columns": ["k", "v"], "types": {"v": "float"}}, 2, "v"),
    ("a,1\nb,inf\n", {"header": False, "columns": ["k", "v"], "types": {"v": "float"}}, 2, "v"),
    ("k,w\na,1\n", {"required": ["k", "v"]}, 1, "v"),
    ("\n\nk,v\na,1\nb,\"2\n", {}, 5, None),
])
def test_malformed_csv_names_file_and_line(tmp_path, content, options, line, field):
    path = write(tmp_path, "t.csv", content)
    raises_at(lambda: tables.read_csv(path, **options), path, line, field)


def test_empty_csv_and_tsv_trailing_tab(tmp_path):
    raises_at(lambda: tables.read_csv(write(tmp_path, "e.csv", "\n")), tmp_path / "e.csv", None,
              match="empty")
    frame = tables.read_tsv(write(tmp_path, "t.tsv", "a\tb\t\n1\t2\t\n"), trailing_sep=True,
                            types={"a": "int"})
    assert frame[["a", "b"]].values.tolist() == [[1, "2"]]


# --- jsonfmt -----------------------------------------------------------------------------------

def test_json_manual_values_and_object_lines(mirror):
    path = shipped(mirror, f"{VERUS}/macro-stats/summarize/manual.json")
    data = jsonfmt.load_json(path)
    assert [(item.line, item["project-id"]) for item in data] == [
        (2, "ironsht"), (7, "nr"), (18, "page-table")]
    assert jsonfmt.get(data, "[1].dafny-baseline.linecount.proof-code-ratio", file=path,
                       kind=float) == 10.7
    assert jsonfmt.get(data, [0, "dafny-baseline", "encoding-size-mbs"], file=path,
                       kind=int) == 352
    assert jsonfmt.get(data, "[2].verus.linecount-delta.exec", file=path) == 93
    assert jsonfmt.get(data, "[0].verus", file=path, default=None) is None
    error = raises_at(lambda: jsonfmt.get(data, "[2].verus.linecount", file=path), path, 20,
                      "[2].verus.linecount", match="linecount-delta")
    assert "missing" in str(error)
    raises_at(lambda: jsonfmt.get(data, "[1].project-id", file=path, kind=int), path, 7,
              "[1].project-id", match="expected int")
    raises_at(lambda: jsonfmt.get(data, "[3]", file=path), path, None, "[3]")


def test_json_pesto_stats(mirror):
    path = shipped(mirror, f"{PESTO}/2024-10-21-16-59-15/out/stats.json")
    data = jsonfmt.load_json(path)
    assert jsonfmt.get(data, "aggregate.combined.cdf[0]", file=path, kind=list) == [
        1, 4.783085000000001]
    assert data.line == 1 and data["aggregate"].line == 2


@pytest.mark.parametrize("content, line, match", [
    ('{"a": [1,\n 2,, 3]}', 2, "column 4"),
    ('{"a": 1}\n{"b": 2}\n', 2, "Extra data"),
    ('[\n\n{"a": 1,}]', 3, "column 9"),
    ('{"a": tru}', 1, "column 7"),
])
def test_malformed_json_names_line_and_column(tmp_path, content, line, match):
    path = write(tmp_path, "r.json", content)
    raises_at(lambda: jsonfmt.load_json(path), path, line, match=match)


def test_json_numbers_must_be_finite(tmp_path):
    path = write(tmp_path, "r.json", '{\n"x": {"t": NaN}}')
    data = jsonfmt.load_json(path)
    raises_at(lambda: jsonfmt.get(data, "x.t", file=path, kind=float), path, 2, "x.t")
    raises_at(lambda: jsonfmt.get({"b": True}, "b", file=path, kind=int), path, None, "b")


# --- latex -------------------------------------------------------------------------------------

# constructed from the format of process-benchmarks-output.py's print_latex_table, not shipped
MIMALLOC_LATEX = r"""\begin{tabular}{|l|r|r|}
\hline
Benchmark & mimalloc & Verus mimalloc \\ \hline
cfrac           & 4.6\invizero s.   & 9.7\invizero s.       \\ \hline
sh6benchN       & 0.14 s.    & 2.0\invizero s.       \\ \hline
\end{tabular}
"""

# constructed from the format of macro-stats/summarize/render/macro-table.tex, not shipped
FIG8_LATEX = r"""\newcommand*{\tablerot}{\rotatebox{90}}
\newcommand*{\name}{Verus\xspace}
\begin{tabular}{l|rrr|r|rr|r}
    \multirow{2}{1.6cm}{\vfill{}System \\ $\rightarrow$ Verifier}
    & \multicolumn{3}{c|}{Line Count}
    & \multirow{2}{.2cm}{\tablerot{P/C Ratio}}
    & \multicolumn{2}{c|}{Time (s)}
    & \multirow{2}{.2cm}{\tablerot{SMT (MB)}} \\
     & \tablerot{trusted} & \tablerot{proof} & \tablerot{code} &
     & \tablerot{1 core} & \tablerot{8\xspace cores} & \\ \hline
    IronKV &   &   &   &   &   &   &   \\
    $\rightarrow$ \name & 1613 & 4513 & 1533 & 2.9 & 30 & 10 & 15 \\
   \hline \hline  Verus total & 4.8K & 32.7K & 6.9K & 4.8 \\
\end{tabular}
"""


def test_latex_mimalloc_table():
    rows = latex.tabular_rows(MIMALLOC_LATEX, file="log", first_line=40)
    assert rows == [(42, ["Benchmark", "mimalloc", "Verus mimalloc"]),
                    (43, ["cfrac", "4.6 s.", "9.7 s."]),
                    (44, ["sh6benchN", "0.14 s.", "2.0 s."])]
    frame = latex.tabular_frame(rows, file="log")
    assert list(frame.columns) == ["Benchmark", "mimalloc", "Verus mimalloc", "line"]
    assert frame["mimalloc"].tolist() == ["4.6 s.", "0.14 s."]


def test_latex_multicolumn_multirow_and_macros(tmp_path):
    path = write(tmp_path, "macro-table.tex", FIG8_LATEX)
    frame = latex.read_tabular(path, header_rows=2)
    assert list(frame.columns) == ["System → Verifier", "Line Count trusted", "proof", "code",
                                   "P/C Ratio", "Time (s) 1 core", "8 cores", "SMT (MB)", "line"]
    assert frame.iloc[1, :8].tolist() == ["→ Verus", "1613", "4513", "1533", "2.9", "30", "10",
                                          "15"]
    assert frame.iloc[2, :8].tolist() == ["Verus total", "4.8K", "32.7K", "6.9K", "4.8", "", "",
                                          ""]  # a short row is padded
    assert frame["line"].tolist() == [11, 12, 13]


def test_latex_booktabs_comments_and_escapes():
    source = ("\\begin{tabular}{lr} % a comment & not a cell\n\\toprule\n"
              "\\textbf{Op} & \\emph{Time} \\\\ \\midrule\n"
              "map \\& unmap & 50\\,\\% \\\\[2pt]\n\\bottomrule\n\\end{tabular}")
    assert latex.tabular_rows(source, file="t.tex") == [
        (3, ["Op", "Time"]), (4, ["map & unmap", "50 %"])]
    assert latex.clean(r"\textcolor{red}{\textbf{4.6}}~s", {}) == "4.6 s"


@pytest.mark.parametrize("source, line, match", [
    ("no table here", None, "no tabular"),
    ("x\n\\begin{tabular}{ll}\na & b \\\\\n", 2, "never closed"),
    ("\\begin{tabular}{ll}\na & b \\\\\na & b & c \\\\\n\\end{tabular}", 3, "3 cells"),
    ("\\begin{tabular}{ll}\na & \\textbf{b \\\\\n\\end{tabular}", 1, "unbalanced"),
    ("\\begin{tabular}\na & b\n\\end{tabular}", 1, "argument"),
])
def test_malformed_latex_names_file_and_line(source, line, match):
    raises_at(lambda: latex.tabular_rows(source, file="table.tex"), "table.tex", line,
              match=match)


# --- gotest ------------------------------------------------------------------------------------

# constructed from the format of Aardvark's cores.sh (`go test -v` with t.Log timings)
GO_LOG = """\
=== RUN   TestTimeWorkload
    perf_test.go:321: m time: 33.5s
archive d time: 13m2s
d time: 1m7.3s
--- PASS: TestTimeWorkload (179.50s)
=== RUN   TestOther
=== RUN   TestOther/case_1
    --- FAIL: TestOther/case_1 (0.01s)
--- SKIP: TestSkipped (0.00s)
=== RUN   TestCut
FAIL
"""


def test_go_timings_full_precision(tmp_path):
    found = gotest.timings(GO_LOG.split("\n"), file="out1.txt")
    assert found == [gotest.Timing(2, "m", 33.5), gotest.Timing(3, "archive d", 782.0),
                     gotest.Timing(4, "d", 67.3)]
    frame = gotest.read_timings(write(tmp_path, "out1.txt", GO_LOG))
    assert frame.values.tolist() == [["m", 33.5, 2], ["archive d", 782.0, 3], ["d", 67.3, 4]]
    assert gotest.parse_go_duration("1.5µs") == pytest.approx(1.5e-6)
    assert gotest.parse_go_duration("1h2m3.5s") == 3723.5


def test_go_test_results(tmp_path):
    frame = gotest.read_test_results(write(tmp_path, "out1.txt", GO_LOG))
    assert frame[["test", "status", "line"]].values.tolist() == [
        ["TestTimeWorkload", "pass", 5], ["TestOther", "unfinished", 6],
        ["TestOther/case_1", "fail", 8], ["TestSkipped", "skip", 9],
        ["TestCut", "unfinished", 10]]
    assert frame["seconds"].iloc[0] == 179.5 and math.isnan(frame["seconds"].iloc[1])


def test_malformed_go_output(tmp_path):
    path = write(tmp_path, "out2.txt", "=== RUN   TestA\nm time: 3 seconds\n")
    raises_at(lambda: gotest.read_timings(path), path, 2, "time", match="not a Go duration")
    path = write(tmp_path, "out3.txt", "=== RUN   TestA\n--- PASS: TestA (fast)\n")
    raises_at(lambda: gotest.read_test_results(path), path, 2, match="malformed")
    path = write(tmp_path, "out4.txt", "ok\n")
    raises_at(lambda: gotest.read_timings(path), path, None, match="no timing lines")
    raises_at(lambda: gotest.read_test_results(path), path, None, match="not `go test -v`")


# --- every reader raises OutputError and nothing else on garbage -------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from reprobook.papers.verus import parsers as verus  # noqa: E402

TOKENS = [",", "\t", "\n", "\r\n", '"', "{", "}", "[", "]", ":", "\\\\", "&", "\\hline",
          "\\begin{tabular}{ll}", "\\end{tabular}", "\\multicolumn{2}{c}{x}", "inf", "nan", "-1",
          "0", "3.5", "1e999", "x", " ", "µ", "\x00", "\ufeff", "Time Verified Map: ", " ns",
          "=== RUN   T", "--- PASS: T (", "s)", "m time: ", "1m7.3s", "bench mi vmi", "fail",
          "Verus: ", " sec", "# test alloc time", "Command exited"]
READERS = {
    "csv": ("t.csv", lambda p: tables.read_csv(p, types={"a": "int"})),
    "csv-no-header": ("t.csv", lambda p: tables.read_csv(p, header=False, columns=["a", "b"],
                                                         trailing_sep=True, types={"b": "float"})),
    "json": ("r.json", lambda p: jsonfmt.get(jsonfmt.load_json(p), "a[0].b", file=p, kind=int)),
    "latex": ("t.tex", latex.read_tabular),
    "timings": ("out1.txt", gotest.read_timings),
    "go-tests": ("out1.txt", gotest.read_test_results),
    "labelled": ("o.txt", lambda p: text.labelled_numbers(text.read_lines(p)[1], file=p,
                                                          strict=True)),
    "oneshot": ("linked-list-oneshot.txt", verus.read_milli),
    "repeat": ("linked-list-repeat.csv", verus.read_milli),
    "errors": ("linked-list-errors.csv", verus.read_milli),
    "page-table": ("log.txt", verus.read_page_table_log),
    "mimalloc": ("log.txt", verus.read_mimalloc_log),
}
garbage = st.one_of(st.binary(max_size=200),
                    st.lists(st.sampled_from(TOKENS), max_size=40).map(
                        lambda tokens: "".join(tokens).encode("utf-8")))


@pytest.mark.parametrize("kind", sorted(READERS))
@settings(max_examples=60, deadline=None)
@given(content=garbage)
def test_property_readers_raise_only_output_error(tmp_path_factory, kind, content):
    name, reader = READERS[kind]
    path = tmp_path_factory.mktemp(kind) / name
    path.write_bytes(content)
    try:
        reader(path)
    except OutputError as error:
        assert str(path) in str(error)


def test_blank_and_repeated_header_names_are_read_as_pandas_names_them(tmp_path):
    """Real artifacts have such headers: they are read (not refused), and the notes say how columns were named."""
    import pandas as pd
    path = tmp_path / "x.csv"
    path.write_text(",time,time,x\na,1,2,3\nb,4,5,6\n")
    frame = tables.read_csv(path)
    assert list(frame.columns[:-1]) == list(pd.read_csv(path).columns) == ["Unnamed: 0", "time", "time.1", "x"]
    assert frame["time.1"].tolist() == ["2", "5"]
    notes = frame.attrs["notes"]
    assert len(notes) == 2 and "x.csv, line 1: column 1" in notes[0] and "'time.1'" in notes[1]
