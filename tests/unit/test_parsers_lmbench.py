"""LMBench's summary and raw results files: the guide's example read cell by cell, a real run's summary
against its own results files, LMBench's printing rules, and malformed input named by file and line."""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from reprobook.errors import OutputError
from reprobook.papers.ozz.loaders import lmbench_overhead, overhead, phases, sections
from reprobook.papers.ozz import lmbench
from reprobook.sources import Outputs

ROOT = Path(__file__).resolve().parents[1].parent
EXAMPLE = ROOT.parent / "shared" / "paper-numbers" / "ozz_lmbench_make_see_example_from_seed.txt"
DATA = Path(__file__).resolve().parent / "data" / "lmbench"
RESULTS = sorted((DATA / "results" / "x86_64-linux-gnu").glob("vm.*"))

# The guide's example `make see` output (seed 003, Step 9), every cell as printed, by section and row.
EXAMPLE_CELLS = {
    "processes": [
        ["1494", "1.88", "2.43", "101.", "212.", "46.6", "3.15", "45.0", "11.K", "28.K", "60.K"],
        ["1494", "49.2", "33.9", "701.", "1335", "1531", "49.9", "574.", "144K", "326K", "612K"],
        ["2964", "1.33", "1.72", "72.0", "134.", "32.6", "2.15", "32.0", "14.K", "33.K", "62.K"]],
    "context-switch": [
        ["101.3", "98.5", "94.4", "210.3", "277.9", "231.7", "224.8"],
        ["12.6", "17.6", "73.0", "426.1", "385.1", "306.0", "612.7"]],
    "local-latency": [
        ["101.3", "150.8", "275.", "374.0", "", "494.1", "", "1328"],
        ["12.6", "569.9", "3074", "4316.", "", "5220.", "", "14.1"]],
    "file-vm": [
        ["", "", "", "", "753.4K", "9.776", "16.4", "19.2"],
        ["", "", "", "", "8014.2K", "146.0", "332.6", "475.0"]],
    "local-bandwidth": [
        ["109.", "349.", "210.", "3224.8", "8988.1", "9381.1", "4419.1", "9083", "6642."],
        ["4.61", "21.4", "12.7", "207.8", "14.1K", "10.5K", "7833.2", "10.K", "9200."]],
}
EXAMPLE_LINES = {"processes": [15, 16, 20], "context-switch": [27, 28], "local-latency": [35, 36], "file-vm": [43, 44],
                 "local-bandwidth": [51, 52]}
# the same cells as numbers: K is thousands, a blank is no value; "TCP conn" 14.1 lost its K to the column's width
EXAMPLE_VALUES = {
    ("processes", 2, "fork proc"): 144_000, ("processes", 1, "fork proc"): 11_000, ("processes", 3, "sh proc"): 62_000,
    ("processes", 2, "open clos"): 1335, ("processes", 1, "stat"): 101, ("file-vm", 2, "Mmap Latency"): 8_014_200,
    ("file-vm", 1, "Mmap Latency"): 753_400, ("local-latency", 2, "TCP conn"): 14_100,
    ("local-latency", 1, "TCP conn"): 1328, ("local-bandwidth", 2, "Mem read"): 10_000,
    ("local-bandwidth", 2, "Mmap reread"): 14_100, ("file-vm", 1, "Prot Fault"): 9.776,
}


def _need(path: Path) -> None:
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"CI is set, so this test must run, but {path} is absent")
        pytest.skip(f"{path} is absent")


# --------------------------------------------------------------------------- the guide's example

def test_the_guides_example_is_read_exactly_every_cell_of_every_section():
    _need(EXAMPLE)
    frame = lmbench.read_summary(EXAMPLE)
    assert list(dict.fromkeys(frame["section"])) == list(EXAMPLE_CELLS)
    for section, rows in EXAMPLE_CELLS.items():
        names = [c.name for c in lmbench.BY_ID[section].columns]
        got = frame[frame["section"] == section]
        assert sorted(set(got["row"])) == list(range(1, len(rows) + 1)), section
        for i, cells in enumerate(rows, start=1):
            row = got[got["row"] == i]
            assert list(row["column"]) == names
            assert list(row["text"]) == cells, (section, i)
            assert set(row["line"]) == {EXAMPLE_LINES[section][i - 1]}
            assert set(row["host"]) == {"syzkaller"} and set(row["os"]) == {"Linux 6.8.0-g"}
            for name, text, value in zip(names, cells, row["value"]):
                if not text:
                    assert math.isnan(value), (section, i, name)
                elif (section, i, name) in EXAMPLE_VALUES:
                    assert value == pytest.approx(EXAMPLE_VALUES[section, i, name]), (section, i, name)
                elif text[-1] not in "KM" and not (name == "TCP conn" and text == "14.1"):
                    assert value == pytest.approx(float(text)), (section, i, name)
    assert len(frame) == sum(len(r) * len(r[0]) for r in EXAMPLE_CELLS.values()) == 97
    units = frame.drop_duplicates("section").set_index("section")["unit"].to_dict()
    assert units == {"processes": "MHz", "context-switch": "µs", "local-latency": "µs", "file-vm": "µs",
                     "local-bandwidth": "MB/s"}  # the processor section's first column is its clock
    assert set(frame.loc[frame["section"] == "local-bandwidth", "direction"]) == {"bigger"}
    assert set(frame.loc[(frame["section"] == "processes") & (frame["column"] != "Mhz"), "direction"]) == {"smaller"}
    assert set(frame.loc[frame["column"] == "Mhz", "direction"]) == {""}


def test_the_published_example_in_the_paper_file_is_the_guides_example():
    """configs/papers/ozz.yaml transcribes the example; the parser reads the same numbers from the guide's text."""
    _need(EXAMPLE)
    from reprobook.core.config import load_project
    claim = load_project(ROOT).claim("ozz/lmbench-overhead")
    frame = lmbench.read_summary(EXAMPLE)
    row_of = {"oemu-off": 1, "oemu": 2, "baseline": 3}
    assert len(claim.published) == 27 * 2 + 10 + 9 * 2
    for n in claim.published:
        lab = dict(n.labels)
        cell = frame[(frame["section"] == lab["section"]) & (frame["column"] == lab["column"])
                     & (frame["row"] == row_of[lab["setting"]])]
        assert len(cell) == 1, lab
        assert n.value == pytest.approx(cell["value"].iloc[0]), lab
        assert n.unit == cell["unit"].iloc[0]
        assert "not the paper's Table 5" in n.source


# --------------------------------------------------------------------------- a real run: summary and raw files

def test_a_real_summary_says_what_its_results_files_hold():
    summary = lmbench.read_summary(DATA / "summary.txt")
    derived = lmbench.summarise(RESULTS)
    lmbench.agree(summary, derived, file=DATA / "summary.txt")
    assert set(summary["section"]) == {"basic", "processes", "context-switch", "local-latency", "file-vm",
                                       "local-bandwidth"}
    key = ["section", "row", "column"]
    both = summary.merge(derived, on=key, suffixes=("_printed", "_raw"))
    assert len(both) == len(summary) == len(derived) == 96
    assert (both["text_printed"] == both["text_raw"]).all()
    # the printed value is the raw one cut to the column: within the printed resolution, never above it
    shown = both.dropna(subset=["value_printed"])
    assert ((shown["value_raw"] - shown["value_printed"]).abs() <= 0.05 * shown["value_raw"] + 1e-9).all()
    cell = both.set_index(key)
    assert cell.loc[("processes", 1, "null call"), "value_raw"] == pytest.approx(0.5497)
    assert cell.loc[("processes", 1, "null I/O"), "value_raw"] == pytest.approx((0.2826 + 0.3251) / 2)
    assert cell.loc[("processes", 2, "exec proc"), "text_printed"] == "3704"
    assert cell.loc[("file-vm", 1, "0K File Create"), "value_raw"] == pytest.approx(1e6 / 85343)
    assert cell.loc[("local-bandwidth", 1, "Mem read"), ("text_printed", "value_raw")].tolist() == ["23.K", 23927.24]
    assert cell.loc[("local-latency", 2, "TCP conn"), ("text_printed", "value_raw")].tolist() == ["37.", 37.7407]
    assert math.isnan(cell.loc[("local-latency", 1, "RPC/UDP"), "value_raw"])  # no rpcbind on that machine
    assert set(derived["number"]) == {0, 1} and set(derived["host"]) == {"vm"}


def test_a_summary_that_differs_from_its_results_file_is_named_with_line_and_cell(tmp_path):
    text = (DATA / "summary.txt").read_text().replace(" 1189\n", " 1190\n", 1)
    (tmp_path / "summary.txt").write_text(text)
    with pytest.raises(OutputError) as err:
        lmbench.agree(lmbench.read_summary(tmp_path / "summary.txt"), lmbench.summarise(RESULTS),
                      file=tmp_path / "summary.txt")
    msg = str(err.value)
    assert "summary.txt" in msg and "line 21" in msg and "processes: sh proc" in msg
    assert "'1190'" in msg and "vm.0 gives 1189" in msg
    third = tmp_path / "x86_64-linux-gnu" / "vm.2"
    third.parent.mkdir()
    shutil.copy(RESULTS[1], third)
    with pytest.raises(OutputError, match="the results files give row 3 of section 'basic', which the summary lacks"):
        lmbench.agree(lmbench.read_summary(DATA / "summary.txt"), lmbench.summarise([*RESULTS, third]),
                      file="summary.txt")


def test_files_are_taken_in_the_order_make_summary_takes_them(tmp_path):
    d = tmp_path / "results" / "x86_64-linux-gnu"
    d.mkdir(parents=True)
    for n, src in ((2, RESULTS[0]), (10, RESULTS[1])):
        shutil.copy(src, d / f"vm.{n}")
    frame = lmbench.summarise([d / "vm.2", d / "vm.10"])
    rows = frame[frame["column"] == "exec proc"].sort_values("row")
    assert rows["number"].tolist() == [10, 2]  # "vm.10" sorts before "vm.2", as in LMBench's getlist
    assert rows["text"].tolist() == ["3704", "595."]


def test_lmbench_prints_values_as_getsummary_does():
    t = lmbench.summary_text
    assert [t(v, "processes", "fork proc") for v in (144213.0, 11949.0, 11960.0, 152.2895, 1189.0, 0.5497)] == \
        ["144K", "11.K", "12.K", "152.", "1189", "0.55"]
    assert t(8014213.0, "file-vm", "Mmap Latency") == "8014.2K"
    assert t(12345678.0, "file-vm", "Mmap Latency") == "  12.3M"
    assert t(0.179, "file-vm", "Page Fault") == "0.17900"
    assert t(math.nan, "local-latency", "UDP") == "     " and t(-1, "local-latency", "UDP") == "     "
    # "TCP conn" is formatted five wide and printed four wide: the K goes
    assert [t(v, "local-latency", "TCP conn") for v in (14123.0, 122.2481, 37.0669, 1328.4, 1.2345)] == \
        ["14.1", "122.", " 37.", "1328", "1.23"]
    assert t(1, "local-latency", "TCP conn", copies=4) == "    "  # several copies: no file-system or connect cells
    assert t(3704, "processes", "Mhz") == "3704" and t(16, "basic", "cache line bytes") == "   16"


def test_printing_agrees_with_lmbenchs_own_num_routine(tmp_path):
    """getsummary's num() itself, taken from intel/lmbench at 701c6c3 and run by perl, on values of every range."""
    mirror = ROOT.parent / "shared" / "git" / "github.com" / "intel" / "lmbench"
    _need(mirror)
    if not shutil.which("perl"):
        pytest.skip("perl is not installed")
    import subprocess
    source = subprocess.run(["git", "-C", str(mirror), "show", "701c6c35b0270d4634fb1dc5272721340322b8ed:scripts/getsummary"],
                            capture_output=True, text=True, check=True).stdout
    num = source[source.index("sub num\n"):source.index("# Input looks like")]
    values = [0.0001, 0.0009, 0.001, 0.179, 0.5497, 1.2345, 9.999, 10.0, 37.0669, 99.96, 122.2481, 999.97, 1328.4,
              9999.9, 10000.0, 11949.0, 11960.0, 99949.0, 144213.0, 999999.0, 8014213.0, 9999999.0, 12345678.0, 1.5e9]
    widths = {"4": ("processes", "null call"), "5": ("local-latency", "Pipe"), "6": ("context-switch", "2p/0K ctxsw"),
              "7": ("file-vm", "Mmap Latency")}
    script = tmp_path / "num.pl"
    script.write_text(f"$M = 1000000.; $K = 1000.;\n{num}\nwhile (<STDIN>) {{ chop; @a = split; "
                      f"print num($a[0], $a[1]), \"|\\n\"; }}\n")
    lines = "".join(f"{v!r} {w}\n" for v in values for w in widths)
    out = subprocess.run(["perl", str(script)], input=lines, capture_output=True, text=True, check=True).stdout
    # what getsummary prints: num()'s text through printf "%W.Ws" with the column's width W
    perl = ["%*.*s" % (int(w), int(w), line[:-1]) for line, w in zip(out.splitlines(), [w for _ in values for w in widths])]
    ours = [lmbench.summary_text(v, *widths[w]) for v in values for w in widths]
    assert ours == perl
    assert "11.K" in ours and " 144.2K" in ours and "  12.3M" in ours and "%4.-" in ours  # every branch was taken
    # "TCP conn": num() five wide, printed four wide
    out = subprocess.run(["perl", str(script)], input="".join(f"{v!r} 5\n" for v in values), capture_output=True,
                         text=True, check=True).stdout
    assert [lmbench.summary_text(v, "local-latency", "TCP conn") for v in values] == \
        ["%4.4s" % line[:-1] for line in out.splitlines()]


@pytest.mark.parametrize("cell, cut, value", [
    ("11.K", False, 11e3), ("144K", False, 144e3), ("8014.2K", False, 8014.2e3), ("1.5M", False, 1.5e6),
    ("101.", False, 101.0), ("0.17930", False, 0.1793), ("   ", False, math.nan),
    ("14.1", True, 14.1e3), (" 14.", True, 14.0), ("1328", True, 1328.0), ("1.23", True, 1.23), ("122.", True, 122.0)])
def test_cells_read_back_as_numbers(cell, cut, value):
    got = lmbench.decode(cell, file="s", line=1, field="f", thousands_cut=cut)
    assert (math.isnan(got) and math.isnan(value)) or got == pytest.approx(value)


# --------------------------------------------------------------------------- malformed summaries and results

GOOD = (DATA / "summary.txt").read_text()


@pytest.mark.parametrize("change, line, words", [
    (lambda s: s.replace("L M B E N C H  3 . 0   S U M M A R Y", "S U M M A R Y"), None, "banner"),
    (lambda s: s.replace("Context switching - times", "Context swapping - times"), 24,
     "nor the title of a section LMBench prints"),
    (lambda s: s.replace("ctxsw  ctxsw  ctxsw ctxsw", "ctxsw  ctxsw  ctxsw csw  ", 1), 27, "expected the header"),
    (lambda s: s.replace("0.7300 1.8900", "0.7300 1.89x0", 1), 29, "'1.89x0' is not an LMBench summary value"),
    (lambda s: s.replace("vm        Linux 6.18.44 3704 0.55", "vm        Linux 6.18.44 3704_0.55", 1), 21,
     "blank between them"),
    (lambda s: s.replace("4.11000 4.47000\n", "4.11000 4.47000 extra\n", 1), 29, "unexpected text after the last"),
    (lambda s: s + "\nContext switching - times in microseconds - smaller is better\n", 57, "appears twice"),
    (lambda s: s.replace("--------- ------------- ------ ------ ------ ------ ------ ------- -------", "", 1), 28,
     "the rule under the column headers"),
    (lambda s: s.split("Basic system parameters")[0], None, "no rows"),
])
def test_malformed_summaries_are_named_by_file_and_line(tmp_path, change, line, words):
    bad = tmp_path / "summary-baseline.txt"
    bad.write_text(change(GOOD))
    with pytest.raises(OutputError) as err:
        lmbench.read_summary(bad)
    msg = str(err.value)
    assert str(bad) in msg and words in msg, msg
    if line:
        assert f"line {line}" in msg, msg


def test_malformed_results_files_are_named(tmp_path):
    bad = tmp_path / "x86_64-linux-gnu" / "vm.0"
    bad.parent.mkdir()
    bad.write_text("Simple syscall: 0.5 microseconds\n")
    with pytest.raises(OutputError, match=r"vm\.0.*line 1.*\[lmbench3\.0 results for"):
        lmbench.read_results(bad)
    named = tmp_path / "results.txt"
    named.write_text(RESULTS[0].read_text())
    with pytest.raises(OutputError, match=r"results\.txt.*named <host>\.<n>"):
        lmbench.read_results(named)


# --------------------------------------------------------------------------- the paper's loader

def _outputs(tmp_path: Path, kernels=("baseline", "oemu"), summary=True, data: dict | None = None) -> Outputs:
    """A live run's outputs: each kernel's results files and summary, from ``data[kernel]`` (default `DATA`)."""
    files: dict[str, list[Path]] = {"summary": [], "results": []}
    for kernel in kernels:
        src_dir = (data or {}).get(kernel, DATA)
        d = tmp_path / "outputs" / "results" / kernel / "results" / "x86_64-linux-gnu"
        d.mkdir(parents=True)
        for src in sorted((src_dir / "results" / "x86_64-linux-gnu").glob("*.[0-9]*")):
            shutil.copy(src, d / src.name)
            files["results"].append(d / src.name)
        if summary:
            s = tmp_path / "outputs" / "summary" / kernel / f"summary-{kernel}.txt"
            s.parent.mkdir(parents=True)
            shutil.copy(src_dir / "summary.txt", s)
            files["summary"].append(s)
    return Outputs("ozz/lmbench-overhead", "live", "test", {k: tuple(v) for k, v in files.items()})


def test_the_loader_keeps_the_instrumented_kernels_first_run_apart(tmp_path):
    frame = lmbench_overhead(_outputs(tmp_path))
    assert list(frame.columns) == ["kernel", "setting", "section", "column", "row", "value", "unit", "direction"]
    assert set(frame["section"]) == {"processes", "context-switch", "local-latency", "file-vm", "local-bandwidth"}
    assert "Mhz" not in set(frame["column"]) and frame["value"].notna().all()
    settings = frame.groupby(["kernel", "row"])["setting"].unique().map(list).to_dict()
    assert settings == {("baseline", 1): ["baseline"], ("baseline", 2): ["baseline"], ("oemu", 1): ["oemu-off"],
                        ("oemu", 2): ["oemu"]}
    null = frame[(frame["column"] == "null call") & (frame["setting"] == "oemu")]["value"]
    assert null.tolist() == [pytest.approx(0.1892)]  # the raw file's value, not the summary's 0.19


def test_the_loader_reads_a_summary_alone_and_refuses_a_disagreeing_one(tmp_path):
    out = _outputs(tmp_path, kernels=("baseline",))
    alone = Outputs(out.claim, out.kind, out.label, {"summary": out.files["summary"]})
    frame = lmbench_overhead(alone)
    assert set(frame["setting"]) == {"baseline"}
    assert frame.loc[frame["column"] == "null call", "value"].tolist() == [0.55, 0.19]
    s = out.files["summary"][0]
    s.write_text(s.read_text().replace("0.55 0.30", "0.56 0.30"))
    with pytest.raises(OutputError, match=r"summary-baseline\.txt.*line 21.*processes: null call"):
        lmbench_overhead(out)


NO_BASIC = Path(__file__).resolve().parent / "data" / "lmbench-no-basic"  # see its README: derived from DATA


def test_a_section_lmbench_left_out_is_not_measured_on_the_page_and_in_the_verdict(tmp_path):
    """The real summary without "Basic system parameters" (a busy machine's run): reported as not measured."""
    from reprobook import api
    from reprobook.core.config import load_project
    claim = load_project(ROOT).claim("ozz/lmbench-overhead")
    complete = lmbench_overhead(_outputs(tmp_path / "complete", kernels=("baseline",)))
    out = _outputs(tmp_path / "no-basic", kernels=("baseline",), data={"baseline": NO_BASIC})
    frame = lmbench_overhead(out)  # the summary agrees with its results files row for row: no error
    pd.testing.assert_frame_equal(frame, complete)  # the measured cells are the same: only a section is gone
    page = sections(frame).set_index("section")
    assert page.loc["Basic system parameters", ["runs", "status"]].tolist() == ["0 of 2", "not measured"]
    assert (page.drop("Basic system parameters")["status"] == "measured").all() and len(page) == 6
    assert sections(complete)["status"].eq("measured").all()
    verdict = api.check(claim, frame, out)
    assert verdict.verdict == "inconclusive"  # one kernel: nothing to compare, as without the section
    assert verdict.reason.endswith("; not measured: baseline: 'Basic system parameters': not measured (LMBench "
                                   "printed no such section: none of its measurements came out) in runs 0, 1"), \
        verdict.reason
    assert "not measured" not in api.check(claim, complete, out).reason
    # the summary alone (no results files fetched) says the same, for every run at once
    alone = Outputs(out.claim, out.kind, out.label, {"summary": out.files["summary"]})
    frame = lmbench_overhead(alone)
    assert sections(frame).set_index("section").loc["Basic system parameters", "status"] == "not measured"
    assert "baseline: 'Basic system parameters': not measured" in api.check(claim, frame, alone).reason


def test_a_measured_section_left_out_says_not_measured_in_its_cells_never_zero(tmp_path):
    """The baseline's results files without their process measurements: the processes cells say not measured."""
    from reprobook import api
    from reprobook.core.config import load_project
    claim = load_project(ROOT).claim("ozz/lmbench-overhead")
    gone = ("Simple syscall:", "Simple read:", "Simple write:", "Simple stat:", "Simple open/close:",
            "Select on 100 tcp fd", "Signal handler installation:", "Signal handler overhead:", "Process fork+")
    src = tmp_path / "no-processes"
    (src / "results" / "x86_64-linux-gnu").mkdir(parents=True)
    for path in RESULTS:
        kept = [l for l in path.read_text().split("\n") if not l.startswith(gone)]
        (src / "results" / "x86_64-linux-gnu" / path.name).write_text("\n".join(kept))
    out = _outputs(tmp_path, summary=False, data={"baseline": src})
    frame = lmbench_overhead(out)
    assert "processes" not in set(frame.loc[frame["kernel"] == "baseline", "section"])
    table = overhead(frame).set_index("column")
    procs = table[table["section"] == "processes"]
    assert list(procs.index) == ["null call", "null I/O", "stat", "open clos", "slct TCP", "sig inst", "sig hndl",
                                 "fork proc", "exec proc", "sh proc"]
    assert (procs["baseline"] == "not measured").all() and procs["oemu"].map(lambda v: v > 0).all()
    assert procs["slowdown"].isna().all()
    assert (table.loc[table["section"] != "processes", "baseline"].dropna() > 0).all()  # the others keep numbers
    page = sections(frame).set_index(["setting", "section"])["status"]
    assert page["baseline", "Processor, Processes - times in microseconds - smaller is better"] == "not measured"
    assert page["oemu", "Processor, Processes - times in microseconds - smaller is better"] == "measured"
    verdict = api.check(claim, frame, out)
    assert verdict.verdict == "inconclusive"
    assert all("no measured rows for {'setting': 'baseline'}" in c.reason for c in verdict.checks)
    assert "not measured: baseline: 'Processor, Processes': not measured" in verdict.reason, verdict.reason


def test_overhead_is_a_ratio_per_column_turned_by_direction():
    measured = pd.DataFrame([
        {"setting": "baseline", "section": "processes", "column": "null call", "value": 2.0, "unit": "µs",
         "direction": "smaller"},
        {"setting": "oemu", "section": "processes", "column": "null call", "value": 50.0, "unit": "µs",
         "direction": "smaller"},
        {"setting": "oemu-off", "section": "processes", "column": "null call", "value": 3.0, "unit": "µs",
         "direction": "smaller"},
        {"setting": "baseline", "section": "local-bandwidth", "column": "Pipe", "value": 100.0, "unit": "MB/s",
         "direction": "bigger"},
        {"setting": "oemu", "section": "local-bandwidth", "column": "Pipe", "value": 5.0, "unit": "MB/s",
         "direction": "bigger"},
        {"setting": "baseline", "section": "file-vm", "column": "Prot Fault", "value": 1.0, "unit": "µs",
         "direction": "smaller"}])
    table = overhead(measured).set_index("column")
    assert table.loc["null call", ["baseline", "oemu", "ratio", "slowdown"]].tolist() == [2.0, 50.0, 25.0, 25.0]
    assert table.loc["Pipe", ["ratio", "slowdown"]].tolist() == [0.05, 20.0]
    assert table.loc["Pipe", "direction"] == "bigger is better"
    assert math.isnan(table.loc["Prot Fault", "oemu"]) and math.isnan(table.loc["Prot Fault", "slowdown"])
    alone = overhead(measured[measured["setting"] == "baseline"]).set_index("column")  # no OEMU kernel in the run
    assert (alone["oemu"] == "not run").all() and alone["slowdown"].isna().all()
    assert alone["baseline"].tolist() == [2.0, 1.0, 100.0]


def test_phases_read_the_step_lines_of_every_attempt(tmp_path):
    t = tmp_path / "timings.txt"
    t.write_text("### reprobook step 1/3: check out lmbench (expected 1 min)\n### reprobook: step 1 done in 4 s\n"
                 "### reprobook step 2/3: first run (expected 120 min)\n"
                 "### reprobook step 1/3: check out lmbench (expected 1 min) [skipped: done in an earlier attempt]\n"
                 "### reprobook step 2/3: first run (expected 120 min)\n### reprobook: step 2 done in 7200 s\n"
                 "### reprobook step 3/3: rerun\n")
    frame = phases(Outputs("ozz/lmbench-overhead", "live", "test", {"timings": (t,)}))
    assert frame["name"].tolist() == ["check out lmbench", "first run", "rerun"]
    assert frame["seconds"].tolist()[:2] == [4, 7200] and math.isnan(frame["seconds"].iloc[2])
    assert frame["hours"].tolist()[1] == 2.0


TCG = Path(__file__).resolve().parent / "data" / "lmbench-tcg"  # see its README: a real rehearsal in a QEMU guest


def test_a_real_run_in_an_emulated_guest_parses_and_cannot_judge_the_overhead(tmp_path):
    """`make live-guest`'s output: LMBench's system-call, select and process benchmarks (DEVELOPMENT answers) on
    Debian's kernel under TCG. Only the processor section's measured columns come out; the verdict says why it
    cannot judge (no instrumented kernel at the rehearsal scale)."""
    from reprobook import api
    from reprobook.core.config import load_project
    claim = load_project(ROOT).claim("ozz/lmbench-overhead")
    (raw,) = sorted((TCG / "results" / "x86_64-linux-gnu").glob("rb-guest.*"))
    printed, derived = lmbench.read_summary(TCG / "summary.txt"), lmbench.summarise([raw])
    lmbench.agree(printed, derived, file=TCG / "summary.txt")
    results = lmbench.read_results(raw)
    assert results.expected() is None  # single benchmarks: the header names no subset
    assert results.header["BENCHMARK_OS"] == "NO" and results.header["BENCHMARK_HARDWARE"] == "NO"
    out = _outputs(tmp_path, kernels=("baseline",), data={"baseline": TCG})
    out = Outputs(out.claim, out.kind, out.label, out.files, scale="rehearsal")
    frame = lmbench_overhead(out)
    assert set(frame["setting"]) == {"baseline"} and set(frame["section"]) == {"processes"}
    proc = frame.set_index("column")["value"]
    assert set(proc.index) == {"null call", "null I/O", "stat", "open clos", "slct TCP", "fork proc", "exec proc",
                               "sh proc"}  # no signals: LMBench's DEVELOPMENT questions do not ask about them
    assert (proc > 0).all() and proc["null call"] < proc["fork proc"] < proc["exec proc"] < proc["sh proc"]
    page = sections(frame).set_index("section")
    assert page.loc["Processor, Processes - times in microseconds - smaller is better", "status"] == "measured"
    table = overhead(frame)
    assert (table["oemu"] == "not run").all() and table["slowdown"].isna().all()  # no OEMU kernel here
    verdict = api.check(claim, frame, out)
    assert verdict.verdict == "inconclusive"
    assert all("this run is at rehearsal scale; the check needs the paper scale" in c.reason
               and "the OEMU kernel is not run here" in c.reason for c in verdict.checks)
