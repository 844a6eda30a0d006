"""`reprobook import` reads the files through the claim's loader before it stores anything, and ``--source auto``
passes over a recorded run that cannot be loaded, saying which and why, and judges the next good one."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reprobook.core.config import load_project
from reprobook.core.runs import RunStore
from tests.support.artifacts import VERUS

CLI = [sys.executable, "-m", "reprobook"]
ARCHIVE_LOG = ("=== RUN   TestTimeArchive\narchive d time: 13m20s\narchive m time: 6m40s\n"
               "archive c time: 6m40s\n--- PASS: TestTimeArchive\n")   # 10,000 ops in 800 s / 400 s


def _store_state(root: Path) -> dict[str, str]:
    """Every file under the run store with its hash: 'unchanged' means this is equal."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _import(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + ["import", *args, "--machine", "a 2-core VM"], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


@pytest.fixture
def junk(tmp_path, mirror):
    d = tmp_path / "given"
    d.mkdir()
    (d / "host.txt").write_text("node-7.cluster.example\n")   # the case: a file holding a host name
    (d / "out1.txt").write_text("node-7.cluster.example\n")   # named as the loader wants, the content still junk
    (d / "empty.txt").write_bytes(b"")
    (d / "blob.bin").write_bytes(bytes(range(256)) * 8)
    (d / "raw-data.txt").write_bytes((mirror / VERUS / "ironkv/recording/raw-data.txt").read_bytes())  # Verus's
    (d / "aout1.txt").write_text(ARCHIVE_LOG)                                                          # Aardvark's
    return d


def test_junk_is_refused_with_exit_2_and_the_store_unchanged(junk, tmp_path):
    runs = Path(os.environ["REPROBOOK_RUNS"])
    good = _import("aardvark/archive-throughput", "aout1.txt", cwd=junk)   # something in the store already
    assert good.returncode == 0, good.stderr
    before = _store_state(runs)
    cases = [
        (["aardvark/vector-commitments", "edrax=host.txt", "veccom=host.txt"], "host.txt", "unknown row"),
        (["aardvark/archive-throughput", "out1.txt"], "out1.txt", "no timing lines"),
        (["aardvark/archive-throughput", "empty.txt"], "empty.txt", "empty"),
        (["verus/ironkv", "blob.bin"], "blob.bin", "not UTF-8"),
        (["verus/ironkv", "empty.txt"], "empty.txt", "empty"),
        (["verus/ironkv", "aout1.txt"], "aout1.txt", "lacks the column"),                 # the wrong claim's file
        (["aardvark/archive-throughput", "raw-data.txt"], "raw-data.txt", "core count"),  # and the other way
    ]
    for args, name, why in cases:
        out = _import(*args, cwd=junk)
        said = " ".join(out.stderr.split())
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        assert why in said and name in said and "Nothing was imported" in said and "It expects" in said, said
        assert str(junk) not in said and "Traceback" not in said   # the file as given, not where it lies
        assert _store_state(runs) == before, f"{args}: the run store changed"


def test_auto_passes_over_an_unloadable_run_and_judges_the_next_good_one(junk, tmp_path):
    project = load_project()
    claim = project.claim("aardvark/archive-throughput")
    good = _import("aardvark/archive-throughput", "aout1.txt", cwd=junk)
    assert good.returncode == 0, good.stderr
    good_id = good.stdout.split(" as run ")[1].split()[0]
    # a run stored before imports were checked (the store's own call, which does not read the files)
    bad = RunStore(project.settings.runs_dir).import_files(claim, {"logs": [junk / "out1.txt"]}, machine="node-7",
                                                           who="someone", params=None)
    from reprobook import sources
    outputs = sources.obtain(project, claim, "auto")
    assert outputs.run_id == good_id
    assert (f"run {bad.id} skipped: its outputs cannot be loaded (outputs/logs/out1.txt: no timing lines"
            in outputs.detail)   # the run's file named relative to the run
    run = subprocess.run(CLI + ["run", "aardvark/archive-throughput", "-q"], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode in (0, 1, 3), run.stderr   # a verdict, from the good run
    assert "aardvark/archive-throughput: " in run.stdout and "Traceback" not in run.stderr
    (evaluation,) = [r for r in RunStore(project.settings.runs_dir).runs(claim) if r.manifest["source"] == "auto"]
    assert evaluation.manifest.get("outputs_source") == good_id, evaluation.manifest


def test_with_only_unloadable_runs_the_page_says_which_were_passed_over(junk):
    """Not "no run is recorded yet": the runs are there and cannot be loaded; the reason names each. Where the
    authors ship outputs, those are judged, and the skipped run is still named."""
    from reprobook import sources
    project = load_project()
    store = RunStore(project.settings.runs_dir)
    for key, output, shipped in (("verus/page-table", "log", False), ("aardvark/archive-throughput", "logs", True)):
        claim = project.claim(key)
        bad = store.import_files(claim, {output: [junk / "out1.txt" if shipped else junk / "blob.bin"]},
                                 machine="node-7", who="someone", params=None)
        outputs = sources.obtain(project, claim, "auto")
        assert f"run {bad.id} skipped: its outputs cannot be loaded" in outputs.detail, outputs.detail
        assert "is recorded yet" not in outputs.detail
        assert outputs.kind == ("reference" if shipped else "none"), outputs


def test_a_run_at_other_parameters_than_the_claims_defaults_changes_its_pages_fingerprint(junk, mirror):
    """A rehearsal page asks for its rehearsal scale, not the claim's default: a run it would judge must make the
    book execute it again (found by the hostile site, whose rehearsal runs the cached pages never showed)."""
    from reprobook.book.site import fingerprints
    project = load_project()
    claim = project.claim("aardvark/archive-throughput")
    page = f"notebooks/{claim.paper}/{claim.id}.ipynb"
    before = fingerprints(project)
    out = _import("aardvark/archive-throughput", "aout1.txt", "-p", "scale", "rehearsal", cwd=junk)
    assert out.returncode == 0, out.stderr
    after = fingerprints(project)
    assert after[page] != before[page] and after["book/summary.ipynb"] != before["book/summary.ipynb"]
    assert {k for k in after if after[k] != before[k]} == {page, f"book/{claim.paper}/index.ipynb",
                                                           "book/summary.ipynb"}
