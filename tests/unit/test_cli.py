"""The command line: help everywhere, clear errors, and a real claim run through papermill."""

from __future__ import annotations

import json
import subprocess
import sys


from reprobook.cli import build_parser

CLI = [sys.executable, "-m", "reprobook"]
COMMANDS = ["claims", "run", "runs", "status", "attach", "cancel", "check-host", "trust-host", "book", "import", "plan", "new",
            "check-paper", "reference", "report", "cloudlab", "export"]


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
    assert "without encryption" not in out.stderr + out.stdout  # the kernel's channels are encrypted, no noise
    # the evaluation is a run like any other: usable as a source; attach says why there is nothing to attach to
    again = subprocess.run(CLI + ["run", "aardvark/archive-throughput", "--source", runs[0].name, "-q"],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "HOLDS (margin +20.5%)" in again.stdout, again.stderr
    attach = subprocess.run(CLI + ["attach", runs[0].name], capture_output=True, text=True)
    assert attach.returncode == 2 and "no job on a host to attach to" in attach.stderr
    assert "Traceback" not in attach.stderr


def test_unavailable_outputs_and_bad_sources_are_clear_errors(tmp_path, monkeypatch):
    """No mirror and no network: exit 2 with the places tried, no traceback, and no run left 'evaluating'."""
    monkeypatch.setenv("REPROBOOK_ARTIFACT_MIRROR", str(tmp_path / "empty"))
    monkeypatch.setenv("REPROBOOK_GIT_BASE_URL", f"file://{tmp_path}/no-git/")
    out = subprocess.run(CLI + ["run", "aardvark/validator-throughput", "--source", "reference", "-q"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "cannot obtain derbear/aardvark-prototype" in out.stderr and "tried:" in out.stderr
    assert "Traceback" not in out.stderr + out.stdout and "without encryption" not in out.stderr
    (run,) = (tmp_path / "runs" / "aardvark" / "validator-throughput").iterdir()
    assert json.loads((run / "manifest.json").read_text())["status"] == "error"
    typo = subprocess.run(CLI + ["run", "aardvark/validator-throughput", "--source", "refrence", "-q"],
                          capture_output=True, text=True)
    assert typo.returncode == 2 and "unknown source 'refrence'" in typo.stderr
    assert "auto, reference, live" in typo.stderr and run.name in typo.stderr


def test_live_run_on_a_small_host_is_refused_with_the_reason():
    out = subprocess.run(CLI + ["run", "aardvark/validator-throughput", "--source", "live", "--host", "local", "-q"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "needs 32 cores" in out.stderr and "--allow-insufficient-host" in out.stderr


def test_import_records_a_run_that_auto_then_uses(tmp_path, mirror):
    """Outputs produced by hand become a run: checksummed, described, and the claim's verdict comes from them."""
    src = mirror / "github.com/derbear/aardvark-prototype/dd8f6aaf5f76173118f3f3decbe099bda5972ce2/go-algorand/ledger"
    log = tmp_path / "aout1.txt"
    log.write_text("=== RUN   TestTimeArchive\narchive d time: 13m20s\narchive m time: 6m40s\n"
                   "archive c time: 6m40s\n--- PASS: TestTimeArchive\n")  # constructed: 10,000 ops in 800 s / 400 s
    out = subprocess.run(CLI + ["import", "aardvark/archive-throughput", str(log)], capture_output=True, text=True)
    assert out.returncode == 2 and "--machine" in out.stderr  # the machine must be described
    out = subprocess.run(CLI + ["import", "aardvark/archive-throughput", str(log), "--machine", "a 2-core VM"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.split(" as run ")[1].split()[0]
    from reprobook.core.config import load_project
    from reprobook.core.runs import RunStore
    from reprobook.remote.transfer import sha256_file
    project = load_project()
    run = RunStore(project.settings.runs_dir).load(run_id)
    m = run.manifest
    assert m["source"] == "import" and m["status"] == "succeeded" and m["imported"]["machine"] == "a 2-core VM"
    assert m["files"][0]["sha256"] == sha256_file(log) and m["files"][0]["output"] == "logs"
    import reprobook as rb
    claim = rb.claim("aardvark/archive-throughput")
    outputs = rb.obtain(claim, "auto")
    assert outputs.run_id == run_id and "done by hand on a 2-core VM" in outputs.label
    measured = rb.load(claim, outputs)
    per_core = dict(zip(measured["op"], measured["ops_per_s_per_core"]))
    assert per_core == {"create": 25.0, "delete": 12.5, "modify": 25.0}
    # other parameters: this run does not count, and the page says why nothing was found
    other = rb.obtain(claim, "auto", params={"trials": 10})
    assert other.kind == "reference" and src.is_dir()
    bad = subprocess.run(CLI + ["import", "aardvark/archive-throughput", "nosuchfile", "--machine", "x"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "no such file: nosuchfile" in bad.stderr


def test_ill_typed_and_unknown_parameters_are_refused():
    out = subprocess.run(CLI + ["run", "aardvark/archive-throughput", "-p", "trials", "abc"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "takes a int" in out.stderr and "abc" in out.stderr
    out = subprocess.run(CLI + ["run", "aardvark/archive-throughput", "-p", "trails", "3"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "no parameter(s) trails" in out.stderr and "(it has: trials, accounts, txns_per_block, workload_blocks, rust, go, scale)" in out.stderr
