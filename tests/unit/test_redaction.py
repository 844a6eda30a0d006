"""With redact_hosts, pages built from a recorded run name neither the host nor the local path."""

from __future__ import annotations

import hashlib

from reprobook import api
from reprobook.core.config import load_project
from reprobook.core.runs import RunStore


def _recorded_run(root, mirror, runs):
    claim = load_project(root).claim("aardvark/archive-throughput")
    run = RunStore(runs).create(claim, "run-on-secret-host", source="live", host="lab-node-7.secret.example",
                                status="succeeded")
    src = (mirror / "github.com/derbear/aardvark-prototype/dd8f6aaf5f76173118f3f3decbe099bda5972ce2"
           "/go-algorand/ledger/archives.csv").read_bytes()
    dest = run.path / "outputs" / "archives" / "archives.csv"
    dest.parent.mkdir(parents=True)
    dest.write_bytes(src)
    run.update(files=[{"output": "archives", "path": "outputs/archives/archives.csv", "size": len(src),
                       "sha256": hashlib.sha256(src).hexdigest()}])
    return claim


def test_host_named_without_redaction(root, mirror, tmp_path):
    claim = _recorded_run(root, mirror, tmp_path / "runs")
    ev = api.evaluate(claim)
    assert "lab-node-7.secret.example" in ev.verdict.source


def test_redacted(root, mirror, tmp_path, monkeypatch):
    monkeypatch.setenv("REPROBOOK_REDACT_HOSTS", "1")
    claim = _recorded_run(root, mirror, tmp_path / "runs")
    ev = api.evaluate(claim)
    text = ev.verdict.source + ev.outputs._repr_html_() + ev.outputs.location + ev.verdict._repr_html_()
    assert ev.outputs.run_id == "run-on-secret-host"
    assert "secret" not in text.replace("run-on-secret-host", "") and str(tmp_path) not in text
    assert "name withheld" in ev.verdict.source
