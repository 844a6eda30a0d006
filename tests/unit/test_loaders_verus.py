"""Tests of the Verus loaders (reprobook.papers.verus.loaders) and their parsers (reprobook.papers.verus.parsers).

Real inputs: the artifact mirror's shipped files (Fig 8 PDF and manual.json, IronKV
raw-data.txt and ironfleet-port-plot.tex, the persistent-memory log's DRAM results,
NR's scaleout CSVs) and the seed guide's page-table example output. Formats without a
shipped sample use inputs constructed from the scripts that write them, each
labelled where it is defined.
"""

from __future__ import annotations

import csv
import math
import re
import statistics
from pathlib import Path

import pandas as pd
import pytest

from reprobook.errors import OutputError
from reprobook.core.loaders import get_loader, names
from reprobook.sources import Outputs
from tests.conftest import ROOT
from tests.support.artifacts import NR, STORAGE, VERUS
from tests.support.outputs import raises_at

SHARED = ROOT.parent / "shared"
MILLI_COLUMNS = ["benchmark", "experiment", "tool", "pushes", "function", "outcome", "sample",
                 "seconds", "timed_out"]
FIG8_COLUMNS = ["system", "verifier", "trusted_loc", "proof_loc", "code_loc", "proof_code_ratio",
                "time_1core_s", "time_8cores_s", "smt_mb"]


def shipped(mirror: Path, relative: str) -> Path:
    path = mirror / relative
    assert path.is_file(), f"{path} is missing from the artifact mirror"
    return path


def outputs(**files) -> Outputs:
    return Outputs("verus/test", "reference", "test", {name: tuple(Path(p) for p in paths)
                                                      for name, paths in files.items()},
                   location="test outputs")


def load(name: str, **files) -> pd.DataFrame:
    return get_loader(name)(outputs(**files))


def write(directory: Path, name: str, content: str) -> Path:
    path = directory / name
    path.write_text(content, encoding="utf-8", newline="")
    return path


def test_every_verus_loader_is_registered():
    assert {"verus.milli", "verus.macro_stats", "verus.page_table", "verus.mimalloc",
            "verus.pmlog", "verus.ironkv", "verus.nr"} <= set(names())


# --- Claim A: millibenchmarks ------------------------------------------------------------------

# constructed from the format of milli/linked-list/oneshot.py (`{Tool}: {median:.2f} sec`)
ONESHOT = "Dafny: 3.83 sec\nVerus: 0.66 sec\nPrusti: inf sec\nFstarlowstar: 7.16 sec\nCreusot: 1.88 sec\n"
# constructed from the format of milli/*/repeat.py (`{pushes},{Tool},{median}`)
REPEAT = "1,Dafny,2.1\n2,Dafny,3.25\n1,Verus,0.55\n2,Verus,0.56\n1,Prusti,4.0\n2,Prusti,inf\n"
# constructed from the format of milli/linked-list/errors.py (`{mode},{case},{Tool},{median}`)
ERRORS = "base,1,Dafny,2.94\nbase,2,Dafny,3.0\nerror,1,Dafny,2.91\nerror,1,Verus,0.57\n"


@pytest.fixture
def milli_files(tmp_path) -> dict[str, list[Path]]:
    return {"oneshot": [write(tmp_path, "linked-list-oneshot.txt", ONESHOT),
                        write(tmp_path, "doubly-linked-list-oneshot.txt",
                              ONESHOT.replace("0.66", "1.15"))],
            "repeat": [write(tmp_path, "linked-list-repeat.csv", REPEAT)],
            "errors": [write(tmp_path, "linked-list-errors.csv", ERRORS)]}


def test_milli_frame(milli_files):
    frame = load("verus.milli", **milli_files)
    assert list(frame.columns) == MILLI_COLUMNS
    assert len(frame) == 10 + 6 + 4
    assert frame["pushes"].dtype == "Int64" and frame["timed_out"].dtype == bool
    single = frame[(frame["benchmark"] == "linked-list") & (frame["experiment"] == "oneshot")]
    assert dict(zip(single["tool"], single["seconds"].fillna(-1))) == {
        "Dafny": 3.83, "Verus": 0.66, "Prusti": -1, "F*": 7.16, "Creusot": 1.88}
    assert single.set_index("tool").loc["Prusti", "timed_out"]
    double = frame[frame["benchmark"] == "doubly-linked-list"]
    assert double.set_index("tool").loc["Verus", "seconds"] == 1.15
    assert set(frame[frame["experiment"] == "oneshot"]["outcome"]) == {"success"}
    assert frame[frame["experiment"] != "repeat"]["pushes"].isna().all()
    repeat = frame[frame["experiment"] == "repeat"]
    assert repeat[["pushes", "tool", "seconds"]].fillna(-1).values.tolist() == [
        [1, "Dafny", 2.1], [2, "Dafny", 3.25], [1, "Verus", 0.55], [2, "Verus", 0.56],
        [1, "Prusti", 4.0], [2, "Prusti", -1]]
    errors = frame[frame["experiment"] == "errors"]
    assert errors[["function", "outcome", "tool", "seconds"]].values.tolist() == [
        ["pop", "success", "Dafny", 2.94], ["index", "success", "Dafny", 3.0],
        ["pop", "error", "Dafny", 2.91], ["pop", "error", "Verus", 0.57]]
    assert frame[frame["experiment"] != "errors"]["function"].isna().all()
    assert set(frame["sample"]) == {1}


def test_milli_samples_count_repeated_files(milli_files, tmp_path):
    again = tmp_path / "run2"
    again.mkdir()
    milli_files["oneshot"].append(write(again, "linked-list-oneshot.txt",
                                        ONESHOT.replace("0.66", "0.70")))
    frame = load("verus.milli", **milli_files)
    verus = frame[(frame["tool"] == "Verus") & (frame["benchmark"] == "linked-list")
                  & (frame["experiment"] == "oneshot")]
    assert verus[["sample", "seconds"]].values.tolist() == [[1, 0.66], [2, 0.70]]


@pytest.mark.parametrize("name, content, line, field", [
    ("linked-list-oneshot.txt", "Verus: 0.66 sec\nb'error: aborting due to previous error'\n", 2,
     None),
    ("linked-list-oneshot.txt", "Verus: 0.66 sec\nKani: 1.0 sec\n", 2, "tool"),
    ("linked-list-oneshot.txt", "Verus: 0.66 ms\n", 1, "Verus"),
    ("linked-list-repeat.csv", "1,Dafny,2.1\nx,Dafny,2.2\n", 2, "pushes"),
    ("linked-list-repeat.csv", "1,Dafny,2.1\n0,Dafny,2.2\n", 2, "pushes"),
    ("linked-list-repeat.csv", "1,Dafny,2.1\n2,Dafny\n", 2, "seconds"),
    ("linked-list-repeat.csv", "1,Dafny,2.1\n2,Dafny,slow\n", 2, "seconds"),
    ("linked-list-errors.csv", "base,1,Dafny,2.9\nbroken,1,Dafny,2.9\n", 2, "mode"),
    ("linked-list-errors.csv", "base,3,Dafny,2.9\n", 1, "case"),
    ("linked-list-errors.csv", "base,1,Dafny,2.9,7\n", 1, None),
])
def test_malformed_milli_names_file_and_line(tmp_path, name, content, line, field):
    path = write(tmp_path, name, content)
    raises_at(lambda: load("verus.milli", **{name.split("-")[-1].split(".")[0]: [path]}), path,
              line, field)


def test_milli_file_names_must_say_what_they_are(tmp_path):
    path = write(tmp_path, "results.txt", ONESHOT)
    raises_at(lambda: load("verus.milli", oneshot=[path]), path, None, "benchmark")
    path = write(tmp_path, "linked-list-repeat.csv", REPEAT)
    raises_at(lambda: load("verus.milli", oneshot=[path]), path, None, "experiment")
    with pytest.raises(OutputError, match="none of the outputs"):
        load("verus.milli", logs=[path])


# --- Claim B: Fig 8 ----------------------------------------------------------------------------

def fig8_reference(mirror) -> pd.DataFrame:
    return load("verus.macro_stats",
                table_pdf=[shipped(mirror, f"{VERUS}/site/assets/macro-table.pdf")],
                manual=[shipped(mirror, f"{VERUS}/macro-stats/summarize/manual.json")])


def test_fig8_from_the_rendered_pdf_matches_every_published_value(mirror):
    frame = fig8_reference(mirror)
    assert list(frame.columns) == FIG8_COLUMNS
    assert frame[["system", "verifier"]].values.tolist() == [
        ["IronKV", "Verus"], ["IronKV", "Dafny"], ["NR", "Verus"], ["NR", "Linear Dafny"],
        ["Page table", "Verus"], ["Mimalloc", "Verus"], ["P. log", "Verus"]]
    numbers = SHARED / "paper-numbers" / "verus_fig8_macro_stats.csv"
    if not numbers.is_file():
        pytest.skip(f"no {numbers}")
    published = pd.read_csv(numbers)
    published = published[published["source"] == "artifact-rendered site/assets/macro-table.pdf"]
    assert len(published) == 7
    for row in published.to_dict("records"):
        got = frame[(frame["system"] == row["system"]) & (frame["verifier"] == row["verifier"])]
        assert len(got) == 1, row
        for column in FIG8_COLUMNS[2:]:
            assert got.iloc[0][column] == pytest.approx(row[column]), (row["system"], column)
    assert frame.attrs["parallel_threads"] == 8
    assert ("NR", "Linear Dafny", "proof_loc") in frame.attrs["manual"]
    assert frame["trusted_loc"].dtype == "int64" and frame["smt_mb"].dtype == "int64"


def test_fig8_pdf_under_another_output_name(mirror):
    pdf = shipped(mirror, f"{VERUS}/site/assets/macro-table.pdf")
    frame = load("verus.macro_stats", rendered=[pdf])
    assert frame.set_index(["system", "verifier"]).loc[("NR", "Verus"), "proof_loc"] == 6791


def test_fig8_claim_b_holds_in_the_rendered_table(mirror):
    frame = fig8_reference(mirror).set_index(["system", "verifier"])
    for system, baseline in (("IronKV", "Dafny"), ("NR", "Linear Dafny")):
        verus, other = frame.loc[(system, "Verus")], frame.loc[(system, baseline)]
        assert verus["time_1core_s"] < other["time_1core_s"]
        assert verus["proof_code_ratio"] < other["proof_code_ratio"]
        assert verus["smt_mb"] < other["smt_mb"]


def results_json(ironsht_dafny_smt: int = 352) -> str:
    """Constructed from the structs of macro-stats/summarize/src/main.rs (serde, kebab-case).

    Values: the rendered PDF's, with the precision results.json keeps.
    """
    def verus(pid, trusted, proof, code, ratio, t1, t8, smt):
        return (f'"verus": {{"project-id": "{pid}", "success": true, '
                f'"singlethread": {{"wall-time-verus-s": {t1 - 1.5}, "wall-time-s": {t1}, '
                f'"estimated-cpu-time-verus-s": {t1 - 2}}}, '
                f'"parallel": {{"wall-time-verus-s": {t8 - 1}, "wall-time-s": {t8}, '
                f'"estimated-cpu-time-verus-s": {t8 * 6}}}, '
                f'"linecount": {{"trusted": {trusted}, "proof": {proof}, "exec": {code}, '
                f'"both-proof-exec": 7, "proof-exec-ratio": {ratio}}}, '
                f'"encoding-size-mb": {smt}}}')

    def dafny(pid, name, trusted, proof, code, ratio, t1, t8, smt):
        return (f'"dafny-baseline": {{"project-id": "{pid}", "dafny-name": "{name}", '
                f'"singlethread": {{"wall-time-s": {t1}}}, "parallel": {{"wall-time-s": {t8}}}, '
                f'"linecount": {{"trusted": {trusted}, "proof": {proof}, "exec": {code}, '
                f'"proof-exec-ratio": {ratio}}}, "encoding-size-mb": {smt}}}')
    projects = [
        ("ironsht", verus("ironsht", 1613, 4513, 1533, 2.9439008, 30.21, 10.4, 15),
         dafny("ironsht", "dafny", 1205, 8070, 1923, 4.1965678, 424.3, 187.1, ironsht_dafny_smt)),
        ("nr", verus("nr", 469, 6791, 1005, 6.757214, 16.2, 9.1, 20),
         dafny("nr", "linear-dafny", 104, 7828, 730, 10.7, 1099.4, 207.2, 2063)),
        ("page-table", verus("page-table", 1118, 5330, 400, 13.325, 63.7, 30.1, 38), None),
        ("mimalloc", verus("mimalloc", 282, 13703, 3178, 4.311831, 247.0, 45.8, 127), None),
        ("verified-storage", verus("verified-storage", 1301, 2396, 739, 3.2422192, 10.2, 4.9, 7),
         None),
    ]
    null = '"dafny-baseline": null'
    items = [f'{{"project-id": "{pid}",\n  {v},\n  {d or null}}}' for pid, v, d in projects]
    return "[\n" + ",\n".join(items) + "\n]\n"


def test_fig8_from_a_live_results_json_agrees_with_the_rendered_table(mirror, tmp_path):
    path = write(tmp_path, "results.json", results_json())
    manual = shipped(mirror, f"{VERUS}/macro-stats/summarize/manual.json")
    live = load("verus.macro_stats", results=[path], manual=[manual])
    assert list(live.columns) == FIG8_COLUMNS
    assert live.iloc[0]["time_1core_s"] == 30.21  # full precision, not the table's 30
    rendered = fig8_reference(mirror)
    # the table prints times with {:.0} and ratios with {:.1}
    rounded = live.assign(time_1core_s=live["time_1core_s"].round(0),
                          time_8cores_s=live["time_8cores_s"].round(0),
                          proof_code_ratio=live["proof_code_ratio"].round(1))
    pd.testing.assert_frame_equal(rounded, rendered, check_exact=False, check_dtype=False)


def test_fig8_manual_values_override_as_the_summarizer_does(mirror, tmp_path):
    path = write(tmp_path, "results.json", results_json(ironsht_dafny_smt=999))
    manual = shipped(mirror, f"{VERUS}/macro-stats/summarize/manual.json")
    without = load("verus.macro_stats", results=[path])
    merged = load("verus.macro_stats", results=[path], manual=[manual])
    pick = lambda f: f.set_index(["system", "verifier"]).loc[("IronKV", "Dafny"), "smt_mb"]
    assert (pick(without), pick(merged)) == (999, 352)
    # the page table's linecount-delta is already in results.json: not added twice
    assert merged.set_index(["system", "verifier"]).loc[("Page table", "Verus"), "code_loc"] == 400


def test_malformed_fig8_inputs(mirror, tmp_path):
    text = results_json().replace('"proof": 6791, ', "")
    path = write(tmp_path, "results.json", text)
    error = raises_at(lambda: load("verus.macro_stats", results=[path]), path, 6,
                      "[1].verus.linecount.proof")
    assert "missing" in str(error)
    path = write(tmp_path, "results.json", results_json().replace('"nr"', '"nr2"', 1))
    raises_at(lambda: load("verus.macro_stats", results=[path]), path, 5, "project-id")
    path = write(tmp_path, "results.json", results_json().replace("[\n{", "[\n{,", 1))
    raises_at(lambda: load("verus.macro_stats", results=[path]), path, 2, match="invalid JSON")
    with pytest.raises(OutputError, match="neither results.json"):
        load("verus.macro_stats", manual=[shipped(mirror,
                                                  f"{VERUS}/macro-stats/summarize/manual.json")])


# --- Claim C: page table -----------------------------------------------------------------------

# constructed from the format of verified-nrkernel's benchmarks/single-threaded (the guide's
# current example output, relabelled "Map"), twice, amid cargo's output
PAGE_TABLE_LOG = """   Compiling single-threaded v0.1.0 (/root/eval/verified-nrkernel/benchmarks)
    Finished release [optimized] target(s) in 41.03s
     Running `target/release/single-threaded`
Time Verified Map: 23.08858679 ns
Time Verified Unmap: 303.26841955 ns
Time Verified Unmap (no reclaim): 7.66253143 ns
Time Base Map: 34.33901477 ns
Time Base Unmap: 8.37488886 ns
Time Verified Map: 23.5 ns
Time Verified Unmap: 301 ns
Time Verified Unmap (no reclaim): 7.7 ns
Time Base Map: 34.1 ns
Time Base Unmap: 8.4 ns
"""


def test_page_table_from_the_seed_guide_example():
    seed = SHARED / "seeds" / "000_d33474697f8e6648.txt"
    if not seed.is_file():
        pytest.skip(f"no {seed}")
    frame = load("verus.page_table", log=[seed])  # the whole guide is the "other output"
    assert list(frame.columns) == ["op", "impl", "repetition", "ns"]
    assert frame.values.tolist() == [
        ["map", "verified", 1, 34.66863213], ["unmap", "verified", 1, 413.87505061],
        ["unmap-no-reclaim", "verified", 1, 30.91497891], ["map", "base", 1, 19.70236766],
        ["unmap", "base", 1, 10.0346619]]


def test_page_table_repetitions(tmp_path):
    frame = load("verus.page_table", log=[write(tmp_path, "log.txt", PAGE_TABLE_LOG)])
    assert len(frame) == 10 and frame["repetition"].tolist() == [1] * 5 + [2] * 5
    table = frame.pivot_table(index=["impl", "op"], columns="repetition", values="ns")
    assert table.loc[("verified", "unmap"), 1] == 303.26841955
    assert table.loc[("base", "map"), 2] == 34.1
    # Claim C: mapping is comparable; verified unmap pays for reclaiming directories
    assert table.loc[("verified", "map"), 1] < 3 * table.loc[("base", "map"), 1]
    assert table.loc[("verified", "unmap"), 1] > 10 * table.loc[("base", "unmap"), 1]


@pytest.mark.parametrize("drop, line, field", [
    ("Time Base Unmap: 8.4 ns\n", 9, "Time Base Unmap"),
    ("Time Verified Unmap (no reclaim): 7.66253143 ns\n", 4, "Time Verified Unmap (no reclaim)"),
])
def test_page_table_missing_line_names_it(tmp_path, drop, line, field):
    path = write(tmp_path, "log.txt", PAGE_TABLE_LOG.replace(drop, ""))
    error = raises_at(lambda: load("verus.page_table", log=[path]), path, line, field)
    assert "lacks" in str(error) and field in str(error)


def test_page_table_without_results(tmp_path):
    path = write(tmp_path, "log.txt", "error: could not compile `single-threaded`\n")
    raises_at(lambda: load("verus.page_table", log=[path]), path, None, match="no 'Time")


# --- Claim D: mimalloc -------------------------------------------------------------------------

# constructed from the format of mimalloc-bench's bench.sh summary tables (GNU time's %E with
# " 0:" removed, "Command exited ..." before a failed run) and of verified-memory-allocator's
# process-benchmarks-output.py; the times are Fig 12's
BENCH_SH = """#------------------------------------------------------------------
# test    alloc   time  rss    user  sys  page-faults page-reclaims
cfrac       {a}   {cfrac} 10736 9.68 0.01 0 2735
Command exited with non-zero status 1
espresso    {a}   00.02 4112 0.00 0.00 0 310
larsonN-sized {a}   {larson} 94712 60.1 1.9 0 20021
sh6benchN   {a}   {sh6} 188224 3.86 0.16 0 47151
xmalloc-testN {a}   {xmalloc} 79556 28.6 1.12 0 19412

"""
MIMALLOC_LOG = ("Reading package lists...\nbenchmarking on 16 cores.\n"
                + BENCH_SH.format(a="vmi", cfrac="09.70", larson="12.000", sh6="02.00",
                                  xmalloc="0.730")
                + "benchmarking on 16 cores.\n"
                + BENCH_SH.replace("Command exited with non-zero status 1\n", "").format(
                    a="mi", cfrac="04.60", larson="4.100", sh6="00.14", xmalloc="0.340")
                + """cores for vmi: 16
cores for mi: 16
bench           mi      vmi
cfrac           04.60   09.70
espresso        00.02   fail
larsonN-sized   4.100   12.000
sh6benchN       00.14   02.00
xmalloc-testN   0.340   0.730

\\begin{tabular}{|l|r|r|}
\\hline
Benchmark & mimalloc & Verus mimalloc \\\\ \\hline
cfrac           & 4.6\\invizero s.   & 9.7\\invizero s.       \\\\ \\hline
larsonN-sized   & 4.1\\invizero s.   & 12.0\\invizero s.       \\\\ \\hline
sh6benchN       & 0.14 s.    & 2.0\\invizero s.       \\\\ \\hline
xmalloc-testN   & 0.34 s.    & 0.73 s.       \\\\ \\hline
\\end{tabular}
""")
FIG12 = {"cfrac": (4.6, 9.7), "larsonN-sized": (4.1, 12.0), "sh6benchN": (0.14, 2.0),
         "xmalloc-testN": (0.34, 0.73)}


def assert_fig12(frame: pd.DataFrame) -> None:
    """The benchmarks both allocators completed, with Fig 12's times."""
    ok = frame[frame["status"] == "ok"]
    table = ok.pivot(index="benchmark", columns="allocator", values="seconds").dropna()
    assert sorted(table.index) == sorted(FIG12)
    for benchmark, (mi, vmi) in FIG12.items():
        assert table.loc[benchmark, "mimalloc"] == pytest.approx(mi)
        assert table.loc[benchmark, "verus-mimalloc"] == pytest.approx(vmi)


def test_mimalloc_summary_table(tmp_path):
    frame = load("verus.mimalloc", log=[write(tmp_path, "log.txt", MIMALLOC_LOG)])
    assert list(frame.columns) == ["benchmark", "allocator", "seconds", "status", "run"]
    assert len(frame) == 10 and set(frame["run"]) == {1}
    assert_fig12(frame)
    failed = frame[frame["status"] == "fail"]
    assert failed[["benchmark", "allocator"]].values.tolist() == [["espresso", "verus-mimalloc"]]
    assert math.isnan(failed["seconds"].iloc[0])


def test_mimalloc_falls_back_to_bench_sh_tables_and_to_latex(tmp_path):
    without_summary = MIMALLOC_LOG.split("cores for vmi")[0]
    frame = load("verus.mimalloc", log=[write(tmp_path, "a.txt", without_summary)])
    assert_fig12(frame)
    assert frame.set_index(["benchmark", "allocator"]).loc[
        ("espresso", "verus-mimalloc"), "status"] == "fail"
    latex_only = "\\begin" + MIMALLOC_LOG.split("\\begin")[1]
    frame = load("verus.mimalloc", log=[write(tmp_path, "b.txt", latex_only)])
    assert len(frame) == 8
    assert_fig12(frame)


def test_malformed_mimalloc_logs(tmp_path):
    lines = MIMALLOC_LOG.split("\n")
    latex_line = next(i for i, line in enumerate(lines, 1)
                      if line.startswith("cfrac    ") and "&" in line)
    path = write(tmp_path, "a.txt", MIMALLOC_LOG.replace("& 9.7\\invizero", "& 9.9\\invizero"))
    raises_at(lambda: load("verus.mimalloc", log=[path]), path, latex_line, "verus-mimalloc",
              match="LaTeX table says cfrac")
    summary_line = next(i for i, line in enumerate(lines, 1) if line.startswith("sh6benchN  ")
                        and "188224" not in line)
    path = write(tmp_path, "b.txt", MIMALLOC_LOG.replace("00.14   02.00", "00.14   two"))
    raises_at(lambda: load("verus.mimalloc", log=[path]), path, summary_line, "vmi")
    path = write(tmp_path, "c.txt", MIMALLOC_LOG.split("cores for vmi")[0].replace(
        "cfrac       vmi", "cfrac       je"))
    raises_at(lambda: load("verus.mimalloc", log=[path]), path, 5, match="alloc mi or vmi")
    path = write(tmp_path, "d.txt", "Reading package lists...\nE: Unable to locate package\n")
    raises_at(lambda: load("verus.mimalloc", log=[path]), path, None, match="no result table")


# --- Claim E: persistent-memory log ------------------------------------------------------------

def test_pmlog_from_the_shipped_dram_results(mirror):
    directory = shipped(mirror, STORAGE + "/results_128.csv").parent
    files = sorted(directory.glob("results_*.csv"))
    frame = load("verus.pmlog", results=files)
    # the reference names the directory; it reads the same
    pd.testing.assert_frame_equal(load("verus.pmlog", results=[directory]), frame)
    assert list(frame.columns) == ["log", "append_kib", "mib_per_s", "mib_per_s_std",
                                   "iterations", "append_bytes", "mib_per_s_ci95"]
    assert len(frame) == 27 and (frame["iterations"] == 10).all()
    assert sorted(set(frame["append_kib"])) == [0.125, 0.25, 0.5, 1, 4, 8, 64, 128, 256]
    assert frame["log"].tolist()[:3] == ["pmdk", "initial", "latest"]
    # independently: mean and population std of 8192 MiB / (µs / 1e6), as the authors' plot
    with open(files[0].parent / "results_128.csv", newline="") as f:
        rows = list(csv.reader(f))
    pmdk = [8192 / (int(r[1]) / 1e6) for r in rows if r[0] == "pmdk"]
    got = frame[(frame["log"] == "pmdk") & (frame["append_bytes"] == 128)].iloc[0]
    assert got["mib_per_s"] == pytest.approx(statistics.fmean(pmdk), rel=1e-12)
    assert got["mib_per_s_std"] == pytest.approx(statistics.pstdev(pmdk), rel=1e-12)
    assert got["mib_per_s_ci95"] == pytest.approx(2.2621571627 * statistics.pstdev(pmdk))
    assert got["mib_per_s"] == pytest.approx(633.178, abs=1e-3)
    # Claim E on DRAM: the initial log trails at every size; the latest is close to PMDK
    table = frame.pivot(index="append_kib", columns="log", values="mib_per_s")
    assert (table["initial"] < table["latest"]).all()
    assert ((table["latest"] / table["pmdk"]).between(0.85, 1.15)).all()


@pytest.mark.parametrize("name, content, line, field", [
    ("results_128.csv", "pmdk,100,\nnew,100,\n", 2, "log"),
    ("results_128.csv", "pmdk,100,\nold,-5,\n", 2, "us"),
    ("results_128.csv", "pmdk,100,\nold,fast,\n", 2, "us"),
    ("results_128.csv", "pmdk,100,\nold,\n", 2, "us"),
    ("results.csv", "pmdk,100,\n", None, "append_bytes"),
])
def test_malformed_pmlog_results(tmp_path, name, content, line, field):
    path = write(tmp_path, name, content)
    raises_at(lambda: load("verus.pmlog", results=[path]), path, line, field)


def test_pmlog_directory_without_results(tmp_path):
    raises_at(lambda: load("verus.pmlog", results=[tmp_path]), tmp_path, None,
              match="no results_")


# --- Set 2: IronKV -----------------------------------------------------------------------------

def test_ironkv_reproduces_the_shipped_plot(mirror):
    raw = shipped(mirror, f"{VERUS}/ironkv/recording/raw-data.txt")
    frame = load("verus.ironkv", raw=[raw])
    assert list(frame.columns) == ["system", "workload", "payload_bytes", "kops", "kops_ci95",
                                   "trials"]
    assert len(frame) == 12 and (frame["trials"] == 10).all()
    plot = (raw.parent / "ironfleet-port-plot.tex").read_text()
    series = re.findall(r"\\addplot \[.*?fill=(red|teal).*?coordinates \{(.*?)\};", plot)
    assert [color for color, _ in series] == ["red", "teal"]  # IronFleet, then Verus
    expected = []
    for color, coordinates in series:
        for workload, payload, mean, ci in re.findall(
                r"\((Get|Set) ([0-9]+),([0-9.]+)\) \+= \(0, ([0-9.]+)\)", coordinates):
            expected.append(("IronFleet" if color == "red" else "Verus", workload, int(payload),
                             float(mean), float(ci)))
    assert len(expected) == 12
    got = frame.set_index(["system", "workload", "payload_bytes"])
    for system, workload, payload, mean, ci in expected:
        assert got.loc[(system, workload, payload), "kops"] == pytest.approx(mean, abs=1e-6)
        assert got.loc[(system, workload, payload), "kops_ci95"] == pytest.approx(ci, abs=1e-6)
    # Set 2's claim: comparable throughput (within 10 %) on every workload
    ratio = got.xs("Verus")["kops"] / got.xs("IronFleet")["kops"]
    assert ratio.between(0.9, 1.1).all()


@pytest.mark.parametrize("row, field", [
    ("rust\t10\t30\tg\t1000\t128\t529823", "Language"),
    ("verus\t10\t30\tx\t1000\t128\t529823", "Workload"),
    ("verus\t10\t0\tg\t1000\t128\t529823", "Seconds"),
    ("verus\t10\t30\tg\t1000\t128", "Requests completed"),
    ("verus\t10\t30\tg\t1000\t128b\t529823", "Value size"),
])
def test_malformed_ironkv_rows(tmp_path, row, field):
    header = "Language\tThreads\tSeconds\tWorkload\tNumber of keys\tValue size\tRequests completed\n"
    path = write(tmp_path, "raw-data.txt", header + "dafny\t10\t30\tg\t1000\t128\t500000\n"
                 + row + "\n")
    raises_at(lambda: load("verus.ironkv", raw=[path]), path, 3, field)
    path = write(tmp_path, "raw-data.txt", header.replace("Seconds", "Secs") + row + "\n")
    raises_at(lambda: load("verus.ironkv", raw=[path]), path, 1, "Seconds")


# --- Set 3: node replication -------------------------------------------------------------------

def test_nr_from_the_shipped_scaleout_csvs(mirror):
    verified = shipped(mirror, f"{NR}/verified/scaleout_benchmarks.csv")
    upstream = shipped(mirror, f"{NR}/upstream/scaleout_benchmarks.csv")
    frame = load("verus.nr", verified=[verified], upstream=[upstream])
    assert list(frame.columns) == ["system", "write_pct", "threads", "mops", "benchmark",
                                   "numa_policy", "replicas", "run", "seconds", "file"]
    assert frame[["system", "write_pct", "threads", "run", "seconds", "file"]].values.tolist() == [
        ["NR", 0, 1, 1, 10, "upstream/scaleout_benchmarks.csv"],
        ["Verus-NR", 10, 1, 1, 60, "verified/scaleout_benchmarks.csv"],
        ["Verus-NR", 10, 7, 1, 60, "verified/scaleout_benchmarks.csv"],
        ["Verus-NR", 10, 1, 2, 60, "verified/scaleout_benchmarks.csv"]]
    with open(verified, newline="") as f:
        rows = list(csv.DictReader(f))
    seven = [int(r["iterations"]) for r in rows if r["threads"] == "7"]
    first = [int(r["iterations"]) for r in rows[:60]]
    got = frame.set_index(["system", "threads", "run"])["mops"]
    assert got[("Verus-NR", 7, 1)] == pytest.approx(sum(seven) / 60 / 1e6, rel=1e-12)
    assert got[("Verus-NR", 1, 1)] == pytest.approx(sum(first) / 60 / 1e6, rel=1e-12)
    assert got[("NR", 1, 1)] == pytest.approx(66.682528, abs=1e-6)
    assert set(frame["benchmark"]) == {"counter"} and set(frame["numa_policy"]) == {"interleave"}
    assert frame["replicas"].isna().all()
    assert "smoke data" in frame.attrs["note"]


# constructed from the fields benchmarks/plot_throughput.py reads from data-*.json
NR_JSON = """[
{"bench_name": "vnr_vspace-4-10-NUMAFill-run20240801-0", "n_threads": 4, "reads_pct": 90,
 "n_replicas": 1, "run_seconds": 60, "numa_policy": "NUMAFill", "total_ops": 3000000000,
 "ops_per_s": 50000000.0},
{"bench_name": "vnr_vspace-4-10-Interleave-run20240801-0", "n_threads": 4, "reads_pct": 90,
 "n_replicas": 2, "run_seconds": 60, "numa_policy": "Interleave", "total_ops": 1,
 "ops_per_s": 40000000.0}
]
"""
IRONSYNC_JSON = """[
{"bench_name": "dafny_nr", "n_threads": 4, "reads_pct": 100, "n_replicas": 1,
 "run_seconds": 60, "numa_policy": 0, "total_ops": 1, "ops_per_s": 12520000.0},
{"bench_name": "rust_nr", "n_threads": 4, "reads_pct": 0, "n_replicas": 1,
 "run_seconds": 60, "numa_policy": 0, "total_ops": 1, "ops_per_s": 12610000.0},
{"bench_name": "shfllock", "n_threads": 4, "reads_pct": 0, "n_replicas": 1,
 "run_seconds": 60, "numa_policy": 0, "total_ops": 1, "ops_per_s": 1.0}
]
"""


def test_nr_system_from_the_file_name(tmp_path):
    # plot_throughput.py overwrites bench_name of data-verified.json: the file name is enough
    path = write(tmp_path, "data-verified.json", NR_JSON.replace("vnr_vspace", "vspace"))
    assert set(load("verus.nr", data=[path])["system"]) == {"Verus-NR"}


def test_nr_from_data_json(tmp_path):
    frame = load("verus.nr", data=[write(tmp_path, "data-verified.json", NR_JSON),
                                   write(tmp_path, "data-ironsync.json", IRONSYNC_JSON)])
    assert frame[["system", "write_pct", "threads", "mops", "benchmark", "numa_policy",
                  "replicas"]].values.tolist() == [
        ["IronSync-NR", 0, 4, 12.52, "vspace", "fill", 1],
        ["NR", 100, 4, 12.61, "vspace", "fill", 1],
        ["Verus-NR", 10, 4, 50.0, "vspace", "fill", 1],
        ["Verus-NR", 10, 4, 40.0, "vspace", "interleave", 2]]
    assert "note" not in frame.attrs


@pytest.mark.parametrize("name, content, line, field", [
    ("data-verified.json", NR_JSON.replace('"reads_pct": 90,\n "n_replicas": 2',
                                           '"n_replicas": 2'), 5, "reads_pct"),
    ("data.json", NR_JSON.replace('"vnr_vspace-4-10-Interleave', '"xyz'), 5, "name"),
    ("data-verified.json", NR_JSON.replace('"ops_per_s": 40000000.0', '"ops_per_s": "fast"'), 5,
     "ops_per_s"),
    ("data-verified.json", NR_JSON.replace("[\n{", "[\n{{"), 2, None),
])
def test_malformed_nr_json(tmp_path, name, content, line, field):
    path = write(tmp_path, name, content)
    raises_at(lambda: load("verus.nr", data=[path]), path, line, field)


def test_malformed_nr_csv(mirror, tmp_path):
    lines = shipped(mirror, f"{NR}/verified/scaleout_benchmarks.csv").read_text().splitlines()
    path = write(tmp_path, "scaleout_benchmarks.csv", "\n".join(lines[:200]) + "\n")
    raises_at(lambda: load("verus.nr", verified=[path]), path, 62, "thread_id", match="cut short")
    path = write(tmp_path, "scaleout_benchmarks.csv", "\n".join(lines[:3] + ["x,y"]) + "\n")
    raises_at(lambda: load("verus.nr", verified=[path]), path, 4)
    path = write(tmp_path, "scaleout_benchmarks.csv",
                 "\n".join([lines[0], lines[1].replace("vnr-", "foo-")]) + "\n")
    raises_at(lambda: load("verus.nr", verified=[path]), path, 2, "name")
    path = write(tmp_path, "notes.txt", "hello\n")
    raises_at(lambda: load("verus.nr", other=[path]), path, None)


def test_page_table_checks_judge_the_repetitions_with_an_interval(tmp_path):
    """Repeated runs are trials (issue 26): each check judges their mean and gives the margin's interval."""
    from reprobook.core.checks import evaluate_check
    from reprobook.core.config import load_project
    frame = load("verus.page_table", log=[write(tmp_path, "log.txt", PAGE_TABLE_LOG)])
    assert frame.attrs["trial_column"] == "repetition"
    claim = load_project().claim("verus/page-table")
    for spec in claim.checks:
        r = evaluate_check(spec, frame, {})
        assert r.trials == 2 and r.interval is not None and r.interval[0] <= r.margin <= r.interval[1], r
        assert "95 % interval of the margin" in r.reason and "the mean of 2 trials per point" in r.reason
    one = load("verus.page_table", log=[write(tmp_path, "one.txt", "".join(PAGE_TABLE_LOG.splitlines(True)[:8]))])
    assert one["repetition"].max() == 1
    r = evaluate_check(claim.checks[0], one, {})
    assert r.interval is None and "no spread could be measured" in r.reason


def test_a_loader_of_one_paper_imports_that_paper_alone():
    """Asking for ``verus.mimalloc`` imports Verus's package, not the other papers' (a command about one paper
    pays for that one); an unknown name still finds every paper, to list the known loaders."""
    import subprocess
    import sys
    code = ("import sys\nfrom reprobook.core.loaders import get_loader\nget_loader('verus.mimalloc')\n"
            "print(sorted(m for m in sys.modules if m.count('.') == 2 and m.startswith('reprobook.papers.')))\n"
            "from reprobook.errors import ConfigError\n"
            "try:\n    get_loader('verus.nothing')\nexcept ConfigError as e:\n    print('pesto.curves' in str(e))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["['reprobook.papers.verus']", "True"]
