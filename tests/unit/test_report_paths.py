"""A written report names no place on the machine that wrote it: artifact files as owner/repo@commit:path, a run's
files relative to the run, and no build directory, home or temporary directory. The reports' directory, an imported
run and its export as a zip are RO-Crates that roc-validator passes (Process Run Crate 0.5, RO-Crate 1.1)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from reprobook.core import provenance
from reprobook.core.config import load_project
from tests.integration.conftest import unavailable
from tests.support import validators
from tests.book.test_book import machine_paths


def test_reports_name_no_machine_path(tmp_path, mirror):
    from reprobook.report import write_report
    log = tmp_path / "given" / "aout1.txt"
    log.parent.mkdir()
    log.write_text("=== RUN   TestTimeArchive\narchive d time: 13m20s\narchive m time: 6m40s\n"
                   "archive c time: 6m40s\n--- PASS: TestTimeArchive\n")
    from reprobook import api
    run = api.import_run(load_project().claim("aardvark/archive-throughput"), [log], machine="a 2-core VM")
    runs = Path(os.environ["REPROBOOK_RUNS"])
    out = tmp_path / "report"   # every paper's report in one directory: its crate describes each (one validation)
    for paper in load_project().papers:
        md, js = write_report(paper, out)
        for written in (md, js, out / provenance.CRATE):
            text = Path(written).read_text()
            assert text.strip()
            assert not machine_paths(text, mirror, runs, tmp_path), (written, machine_paths(text, mirror, runs, tmp_path))
        crate = json.loads((out / provenance.CRATE).read_text())
        data = json.loads(js.read_text())
        described = {e["name"]: e for e in crate["@graph"] if e["@id"].startswith(f"#{paper}/")}
        assert {c["claim"] for c in data["claims"]} == {n.split(":")[0].removeprefix("claim ") for n in described}
        for c in data["claims"]:   # each claim's verdict, status, time to reproduce and badges, as the report says
            e = described[f"claim {c['claim']}: {c['title']}"]
            assert e["value"] == c["verdict"] and f"Status: {c['status']}." in e["description"]
    root = next(e for e in crate["@graph"] if e["@id"] == "./")
    assert {p["@id"] for p in root["hasPart"]} == {f"{p}-report.{x}" for p in load_project().papers
                                                    for x in ("md", "json")}
    if not validators.available():
        unavailable(f"roc-validator is not installed in {validators.VENV} (make validators)")
    zipped = provenance.export_run(load_project(), run, tmp_path / "run.zip")   # as `reprobook export RUN` packs it
    crates = [run.path, out, zipped]
    issues = validators.rocrate_issues(crates, tmp_path / "rocv")
    assert set(issues) == {str(c) for c in crates}
    for crate, found in issues.items():   # the profile's MUSTs; its SHOULDs are reported, and some left (no URL yet)
        assert not [i for i in found if i["severity"] == "REQUIRED"], (crate, found)
