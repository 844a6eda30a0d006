"""Findings, not failures (issue 26): two files of one run that disagree are evidence about the artifact, shown with
the verdict (page, report), never a reason to give none. Built from the Pequin artifact's shipped TPCC outputs."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest

from reprobook.core.checks import Verdict, check_claim
from reprobook.core.config import load_project
from reprobook.core.loaders import get_loader
from reprobook.papers.pesto import parsers as parse
from reprobook.sources import Outputs
from tests.unit.test_parsers_pesto import PEQUIN, TPCC


def _outputs(*paths) -> Outputs:
    return Outputs("pesto/workloads", "import", "test", {"runs": tuple(Path(p) for p in paths)}, location="test")


@pytest.fixture
def basil_era(mirror, tmp_path) -> Path:
    """The shipped TPCC experiment with its lat-tput.csv as the Basil-era plot script wrote it: each setting's pooled
    median latency (stats.json's aggregate p50) where the later script writes the mean."""
    exp = tmp_path / "TPCC"
    shutil.copytree(mirror / PEQUIN / TPCC, exp)
    stats = parse.find_stats([exp])
    medians = [parse.aggregate_value(s, "p50") for s in stats]   # find_stats: in the order the scripts ran them
    csv = exp / "plots" / "lat-tput.csv"
    lines = [f"{line.split(',')[0]},{m!r}" for line, m in zip(csv.read_text().splitlines(), medians)]
    csv.write_text("\n".join(lines) + "\n")
    return exp


def test_a_plot_that_records_the_median_is_said_so_and_checked_against_the_medians(basil_era):
    frame = get_loader("pesto.curves")(_outputs(basil_era))
    assert len(frame) == 6
    (finding,) = frame.attrs["findings"]
    assert "lat-tput.csv records the median latency of each setting" in finding and "checked against the medians" \
        in finding
    assert "not the mean" in finding


def test_a_run_whose_files_disagree_gets_a_verdict_and_a_finding(basil_era, root):
    csv = basil_era / "plots" / "lat-tput.csv"
    lines = csv.read_text().splitlines()
    lines[1] = lines[1].split(",")[0] + ",99.5"       # one setting that is neither median nor mean
    csv.write_text("\n".join(lines) + "\n")
    archive = basil_era.parent / "pequin-tpcc.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(basil_era, arcname="TPCC")
    claim = load_project(root).claim("pesto/workloads")
    import reprobook as rb
    run = rb.import_run(claim, [archive], machine="a cluster")   # unpacked once, here
    frame = rb.load(claim, rb.obtain(claim, run.id))
    note, finding = frame.attrs["findings"]
    inside = "outputs/runs/pequin-tpcc.tar.gz/TPCC/plots/lat-tput.csv"
    assert "records the median latency" in note and note.startswith(inside)
    # named as the evaluator knows it: inside the archive they gave, in the run, never where the machine keeps it
    assert finding.startswith(f"{inside}, line 2, field 'aggregate_latency_ms': "
                              "the plot says 99.5, the median says "), finding
    assert "/tmp" not in finding and str(run.path) not in finding
    verdict = check_claim(claim, frame, source="imported")
    assert verdict.verdict in (Verdict.HOLDS, Verdict.FAILS, Verdict.INCONCLUSIVE)
    assert verdict.findings == (note, finding)
    assert verdict.as_dict()["findings"] == [note, finding]
    assert f"Finding about the artifact:</b> {inside}" in verdict.badge_html()
    json.dumps(verdict.as_dict())


def test_the_report_counts_findings(root):
    from reprobook import report
    schema = json.loads(report.SCHEMA.read_text())
    assert "findings" in schema["properties"] and "findings" in schema["$defs"]["claim"]["properties"]
