"""A written report names no place on the machine that wrote it: artifact files as owner/repo@commit:path, a run's
files relative to the run, and no build directory, home or temporary directory."""

from __future__ import annotations

import os
from pathlib import Path

from reprobook.core.config import load_project
from tests.book.test_book import machine_paths


def test_reports_name_no_machine_path(tmp_path, mirror):
    from reprobook.report import write_report
    log = tmp_path / "given" / "aout1.txt"
    log.parent.mkdir()
    log.write_text("=== RUN   TestTimeArchive\narchive d time: 13m20s\narchive m time: 6m40s\n"
                   "archive c time: 6m40s\n--- PASS: TestTimeArchive\n")
    from reprobook import api
    api.import_run(load_project().claim("aardvark/archive-throughput"), [log], machine="a 2-core VM")
    runs = Path(os.environ["REPROBOOK_RUNS"])
    for paper in load_project().papers:
        out = tmp_path / "report" / paper
        md, js = write_report(paper, out)
        for written in (md, js):
            text = Path(written).read_text()
            assert text.strip()
            assert not machine_paths(text, mirror, runs, tmp_path), (written, machine_paths(text, mirror, runs, tmp_path))
