"""The command line: help everywhere, clear errors, and a real claim run through papermill."""

from __future__ import annotations

import json
import subprocess
import sys


from reprobook.cli import build_parser

CLI = [sys.executable, "-m", "reprobook"]
COMMANDS = ["claims", "run", "runs", "status", "attach", "cancel", "check-host", "trust-host", "book"]


def test_every_command_has_help():
    assert set(build_parser()._subparsers._group_actions[0].choices) == set(COMMANDS)
    for cmd in COMMANDS:
        out = subprocess.run(CLI + [cmd, "--help"], capture_output=True, text=True)
        assert out.returncode == 0 and "usage: reprobook " + cmd in out.stdout, cmd


def test_claims_lists_aardvark():
    out = subprocess.run(CLI + ["claims", "aardvark"], capture_output=True, text=True)
    assert out.returncode == 0
    for key in ("aardvark/vector-commitments", "aardvark/validator-throughput", "aardvark/archive-throughput"):
        assert key in out.stdout


def test_unknown_claim_and_host_are_clear_errors():
    out = subprocess.run(CLI + ["run", "aardvark/nope"], capture_output=True, text=True)
    assert out.returncode == 2 and "has no claim 'nope'" in out.stderr and "vector-commitments" in out.stderr
    out = subprocess.run(CLI + ["check-host", "ghost"], capture_output=True, text=True)
    assert out.returncode == 2 and "no host named 'ghost'" in out.stderr


def test_run_reference_prints_verdict_and_records_it(mirror, tmp_path):
    out = subprocess.run(CLI + ["run", "aardvark/archive-throughput", "--source", "reference", "-q"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "aardvark/archive-throughput: HOLDS (margin +20.5%)" in out.stdout
    runs = list((tmp_path / "runs" / "aardvark" / "archive-throughput").iterdir())
    assert len(runs) == 1
    manifest = json.loads((runs[0] / "manifest.json").read_text())
    assert manifest["verdict"] == "holds" and manifest["source"] == "reference"
    assert (runs[0] / "notebook.ipynb").is_file()
    listing = subprocess.run(CLI + ["runs"], capture_output=True, text=True)
    assert runs[0].name in listing.stdout and "holds" in listing.stdout


def test_live_run_on_a_small_host_is_refused_with_the_reason():
    out = subprocess.run(CLI + ["run", "aardvark/validator-throughput", "--source", "live", "--host", "local", "-q"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "needs 32 cores" in out.stderr and "--allow-insufficient-host" in out.stderr
