"""The command line in pipes and scripts: a reader that stops early is no error, and claims/runs speak JSON.

Each subcommand runs with its standard output a pipe whose reader has already gone (the hardest case of
``reprobook claims | head -1``: the very first write fails). It must end as it ends with its output read in full
(same exit code), with no traceback and no complaint about the pipe.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reprobook.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]

CLI = [sys.executable, "-m", "reprobook"]
LOG = ("=== RUN   TestTimeArchive\narchive d time: 13m20s\narchive m time: 6m40s\n"
       "archive c time: 6m40s\n--- PASS: TestTimeArchive\n")


def _closed_pipe(argv, **kw) -> subprocess.CompletedProcess:
    """Run ``argv`` with stdout a pipe closed before it writes anything."""
    r, w = os.pipe()
    os.close(r)   # the reader is gone before the command starts: its first write fails with EPIPE
    try:
        return subprocess.run(argv, stdout=w, stderr=subprocess.PIPE, text=True, timeout=300, **kw)
    finally:
        os.close(w)


def _read_in_full(argv, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, **kw)


@pytest.fixture
def imported_run(tmp_path):
    log = tmp_path / "aout1.txt"
    log.write_text(LOG)
    out = _read_in_full(CLI + ["import", "aardvark/archive-throughput", str(log), "--machine", "a 2-core VM"])
    assert out.returncode == 0, out.stderr
    return out.stdout.split(" as run ")[1].split()[0]


def _commands(run_id: str, tmp_path) -> dict[str, list[list[str]]]:
    """Command lines for every subcommand, each printing something on stdout (or failing as it should)."""
    log = tmp_path / "again" / "aout1.txt"
    log.parent.mkdir()
    log.write_text(LOG)
    return {
        "claims": [["claims"], ["claims", "--json"]],
        "runs": [["runs"], ["runs", "--json"]],
        "status": [["status", run_id]],
        "attach": [["attach", run_id]],   # nothing to attach to: exit 2, said on stderr
        "cancel": [["cancel", run_id]],
        "plan": [["plan", "aardvark/archive-throughput"], ["plan", "aardvark/archive-throughput", "--json"]],
        "run": [["run", "aardvark/archive-throughput", "--dry-run"]],
        "check-host": [["check-host", "local"]],
        "trust-host": [["trust-host", "local", "--yes"]],
        "import": [["import", "aardvark/archive-throughput", str(log), "--machine", "a 2-core VM"]],
        "report": [["report", "aardvark", "--out", str(tmp_path / "report")]],
        "export": [["export", run_id, "-o", str(tmp_path / "run.zip")]],
        "new": [["new", "pipetest"]],
        "check-paper": [["check-paper", "aardvark"]],
        "reference": [["reference"]],
        "cloudlab": [["cloudlab", "profile", "pesto/inconsistency"]],
        "book": [["book", "--help"]],   # a real build takes minutes; its progress lines are covered by the book's tests
    }


@pytest.mark.slow
# every subcommand in turn, each a new Python process: 313 s in a whole-suite run on a loaded 2-core machine
# (a make -j2 loop beside it, load average 6 to 11), half the suite's 600 s default; 1200 s is four times it
@pytest.mark.timeout(1200)
def test_every_subcommand_survives_a_reader_that_closes_early(imported_run, tmp_path):
    commands = _commands(imported_run, tmp_path)
    assert set(commands) == set(build_parser()._subparsers._group_actions[0].choices), "a subcommand not tried here"
    # `new` writes a paper into the project: a project of its own
    scratch = _scratch(tmp_path, "scratch")
    failures, printed = [], set()
    for name, argvs in commands.items():
        for argv in argvs:
            env = {**os.environ, "REPROBOOK_ROOT": str(scratch)} if name == "new" else None
            if name == "import":   # it adds a run: the reference run goes to a store of its own
                ref = _read_in_full(CLI + argv, env={**os.environ, "REPROBOOK_RUNS": str(tmp_path / "runs-ref")})
            elif name == "new":      # it writes a paper: the reference run writes into a project of its own
                ref = _read_in_full(CLI + argv, env={**os.environ, "REPROBOOK_ROOT": str(_scratch(tmp_path))})
            else:
                ref = _read_in_full(CLI + argv)
            cut = _closed_pipe(CLI + argv, env=env)
            what = " ".join(argv)
            if ref.stdout.strip():
                printed.add(name)
            if cut.returncode != ref.returncode:
                failures.append(f"{what}: exit {cut.returncode} with a closed pipe, {ref.returncode} without\n"
                                f"{cut.stderr[-800:]}")
            for bad in ("Traceback", "BrokenPipe", "Broken pipe", "Exception ignored"):
                if bad in cut.stderr:
                    failures.append(f"{what}: {bad!r} on stderr:\n{cut.stderr[-800:]}")
    assert not failures, "\n".join(failures)
    # those whose output was cut (the others report on stderr, or write files, in the cases tried)
    assert printed >= {"claims", "runs", "status", "plan", "run", "check-host", "import", "cloudlab", "book",
                       "check-paper", "reference"}


def _scratch(tmp_path, name="scratch-ref"):
    """A project of its own for `new` to write a paper into."""
    d = tmp_path / name
    (d / "configs" / "papers").mkdir(parents=True, exist_ok=True)
    (d / "_config.yml").write_text("title: scratch\n")
    (d / "_toc.yml").write_text((ROOT / "_toc.yml").read_text())
    return d


def test_claims_and_runs_json_have_the_documented_fields(imported_run):
    claims = json.loads(_read_in_full(CLI + ["claims", "--json"]).stdout)
    fields = {"claim", "paper", "id", "title", "refs", "machine", "roles", "expected_minutes", "authors_outputs"}
    assert claims and all(set(c) == fields for c in claims)
    pesto = next(c for c in claims if c["claim"] == "pesto/inconsistency")
    assert pesto["roles"] and pesto["expected_minutes"] > 0 and isinstance(pesto["machine"], list)
    assert {c["claim"] for c in json.loads(_read_in_full(CLI + ["claims", "aardvark", "--json"]).stdout)} == {
        c["claim"] for c in claims if c["paper"] == "aardvark"}
    runs = json.loads(_read_in_full(CLI + ["runs", "--json"]).stdout)
    assert [r["id"] for r in runs] == [imported_run]
    assert runs[0] == {"id": imported_run, "claim": "aardvark/archive-throughput", "source": "import",
                       "host": runs[0]["host"], "status": "succeeded", "verdict": runs[0]["verdict"],
                       "parameters": runs[0]["parameters"], "created": runs[0]["created"]}
    assert runs[0]["parameters"]["trials"] and runs[0]["created"].startswith("20")
    helps = {cmd: _read_in_full(CLI + [cmd, "--help"]).stdout for cmd in ("claims", "runs")}
    for f in fields:
        assert f in " ".join(helps["claims"].split()), f"claims --help does not document {f}"
    for f in ("id", "claim", "source", "host", "status", "verdict", "parameters", "created"):
        assert f in " ".join(helps["runs"].split()), f"runs --help does not document {f}"
