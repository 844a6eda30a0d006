"""Runs done by hand: `rb.import_run` records them, and from then on they are runs like any other."""

from __future__ import annotations

import json

import pytest

import reprobook as rb
from reprobook.errors import ConfigError
from reprobook.remote.transfer import sha256_file
from tests.support.artifacts import VERUS


def test_windows_ironkv_run_brought_back_by_hand(mirror, tmp_path):
    """Set 2 cannot run here (Windows): the evaluator runs compare.py by hand and imports raw-data.txt."""
    claim = rb.claim("verus/ironkv")
    assert not claim.runs_live and claim.manual  # reprobook shows the steps and never runs them
    with pytest.raises(ConfigError, match="cannot be run by reprobook"):
        rb.obtain(claim, "live", host="local")
    raw = tmp_path / "raw-data.txt"
    raw.write_bytes((mirror / VERUS / "ironkv/recording/raw-data.txt").read_bytes())
    # first without machine facts: the checks that depend on the machine cannot be judged, and say so
    bare = rb.import_run(claim, [raw], machine="Windows 11 laptop", note="no facts")
    bare_outputs = rb.obtain(claim, bare.id)
    verdict = rb.check(claim, rb.load(claim, bare_outputs), bare_outputs)
    assert str(verdict.verdict) == "inconclusive", verdict.reason
    assert "the imported run does not say whether its machine has Windows" in verdict.reason
    # with the facts stated (as flags would: the OS), the requirement is checked as for a live host
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(rb.sources.facts_from_flags(os="Windows 11", cores=16)))
    run = rb.import_run(claim, [raw], machine="Windows 11 laptop, i9-10885H, 64 GB", note="plugged in",
                        facts=facts)
    m = json.loads((run.path / "manifest.json").read_text())
    assert m["source"] == "import" and m["status"] == "succeeded"
    assert m["imported"]["machine"] == "Windows 11 laptop, i9-10885H, 64 GB" and m["imported"]["by"]
    assert m["files"] == [{"output": "raw", "path": "outputs/raw/raw-data.txt", "size": raw.stat().st_size,
                           "sha256": sha256_file(raw), "original": str(raw.resolve())}]
    assert m["host_facts"] == {"imported": {"cpus": 16, "os": "Windows 11", "os_id": "windows", "os_version": "11"}}
    outputs = rb.obtain(claim, "auto")
    assert outputs.run_id == run.id and "Windows 11 laptop" in outputs.label
    measured = rb.load(claim, outputs)
    verdict = rb.check(claim, measured, outputs)
    assert str(verdict.verdict) == "holds" and run.id in verdict.source
    reference = rb.load(claim, rb.obtain(claim, "reference"))
    assert measured.equals(reference)  # the same file: the same numbers, whichever way it came
    # the imported run is listed with its id like any run
    assert rb.obtain(claim, run.id).run_id == run.id


def test_import_refuses_what_it_cannot_record(tmp_path):
    claim = rb.claim("verus/macro-stats")  # two outputs: each file must be named
    f = tmp_path / "results.json"
    f.write_text("{}")
    with pytest.raises(ConfigError, match="NAME=PATH"):
        rb.import_run(claim, [f], machine="node")
    with pytest.raises(ConfigError, match="no output 'resultz'"):
        rb.import_run(claim, {"resultz": [f]}, machine="node")
    with pytest.raises(ConfigError, match="describe the machine"):
        rb.import_run(claim, {"results": [f]}, machine=" ")
    with pytest.raises(ConfigError, match="no such file"):
        rb.import_run(claim, {"results": [tmp_path / "nope.json"]}, machine="node")
