"""Redaction is part of what a page is built from (issue 50): a site built without it, then built again with it,
names no host, user or build directory on any page; turning it on (or changing the hosts file) changes the page
fingerprints, so a rebuild cannot answer "up to date" from the pages of the first build.

A small fixture project (one claim page and the summary) with one recorded run on a host whose name, and whose
user, appear on the pages of the first build.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.fixture_project import make_project

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.book

HOST, FQDN, USER = "secret-host-xyz", "Secret-Host-XYZ.lab.example", "alice-secret"
LOGS = {"out1.txt": "=== RUN   TestTimeWorkload\nm time: 5m40s\nc time: 5m50s\nd time: 11m30s\n--- PASS: TestTimeWorkload\n",
        "out32.txt": "=== RUN   TestTimeWorkload\nm time: 34s\nc time: 45.5s\nd time: 1m7s\n--- PASS: TestTimeWorkload\n"}


CELLS = ["import matplotlib.pyplot as plt\nimport reprobook as rb\n\nclaim = rb.claim('fixture/validator-throughput')\n"
         "rb.describe(claim)",
         "outputs = rb.obtain(claim, 'auto')\noutputs", "rb.deviations(claim, outputs)",
         "measured = rb.load(claim, outputs)\nmeasured",
         "verdict = rb.judge(claim, measured, outputs)\nverdict", "rb.evidence(claim, measured, verdict)"]
"""The real claim page's cells without its parameters (the fixture claim has others)."""


def _project(tmp_path: Path):
    import nbformat
    fx = make_project(tmp_path / "fx", {HOST: HOST})
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# Fixture claim")] + [nbformat.v4.new_code_cell(c) for c in CELLS]
    nbformat.write(nb, str(fx.root / "notebooks" / "fixture" / "validator-throughput.ipynb"))
    shutil.copy(ROOT / "_config.yml", fx.root / "_config.yml")
    (fx.root / "book").mkdir()
    shutil.copy(ROOT / "book" / "summary.ipynb", fx.root / "book" / "summary.ipynb")
    (fx.root / "_toc.yml").write_text(yaml.safe_dump({"format": "jb-book", "root": "notebooks/fixture/validator-throughput",
                                                      "chapters": [{"file": "book/summary"}]}))
    return fx


def _recorded_run(root: Path, runs: Path) -> str:
    from reprobook.core.config import load_project
    from reprobook.core.plan import resolve
    from reprobook.core.runs import RunStore
    claim = load_project(root).claim("fixture/validator-throughput")
    run = RunStore(runs).create(claim, "fixture-run-1", source="live", host=HOST, status="succeeded",
                                parameters=resolve(claim, {}), created="2099-01-01T00:00:00+00:00",
                                ended="2099-01-01T01:00:00+00:00",
                                host_facts={HOST: {"hostname": FQDN, "user": USER, "cpus": 4, "os": "Debian 12"}})
    files = []
    for name, text in LOGS.items():
        p = run.path / "outputs" / "logs" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        files.append({"output": "logs", "path": f"outputs/logs/{name}", "size": p.stat().st_size,
                      "sha256": hashlib.sha256(p.read_bytes()).hexdigest()})
    run.update(files=files)
    return run.id


def _named(html: Path, secrets) -> dict[str, list[str]]:
    found = {}
    for page in sorted(html.rglob("*.html")):
        text = page.read_text(errors="replace").lower()
        hits = [s for s in secrets if s.lower() in text]
        if hits:
            found[str(page.relative_to(html))] = hits
    return found


def test_a_site_built_then_rebuilt_with_redaction_names_no_host_user_or_build_directory(tmp_path, monkeypatch):
    fx = _project(tmp_path)
    runs = tmp_path / "runs"
    run_id = _recorded_run(fx.root, runs)
    env = {**os.environ, "REPROBOOK_ROOT": str(fx.root), "REPROBOOK_RUNS": str(runs),
           "REPROBOOK_HOSTS": str(fx.root / "configs" / "hosts.yaml")}
    env.pop("REPROBOOK_REDACT_HOSTS", None)
    cmd = [sys.executable, "-m", "reprobook", "book", "--workers", "2"]
    first = subprocess.run(cmd, cwd=fx.root, env=env, capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    html = fx.root / "_build" / "html"
    page = (html / "notebooks/fixture/validator-throughput.html").read_text()
    assert run_id in page and HOST in page   # the first build judged the run and names its host: what redaction hides
    assert HOST in (html / "book/summary.html").read_text()

    second = subprocess.run(cmd, cwd=fx.root, env={**env, "REPROBOOK_REDACT_HOSTS": "1"}, capture_output=True,
                            text=True, timeout=900)
    log = second.stdout + second.stderr
    assert second.returncode == 0, log[-3000:]
    assert "up to date" not in log
    assert run_id in (html / "notebooks/fixture/validator-throughput.html").read_text()   # still judged, redacted
    secrets = [HOST, FQDN, USER, str(fx.root), str(tmp_path), str(runs)]
    assert not _named(html, secrets), _named(html, secrets)


def test_the_redaction_setting_and_the_hosts_file_enter_every_page_fingerprint(tmp_path, monkeypatch):
    from reprobook.book import site
    from reprobook.core.config import load_project
    fx = _project(tmp_path)
    monkeypatch.setenv("REPROBOOK_ROOT", str(fx.root))
    monkeypatch.delenv("REPROBOOK_REDACT_HOSTS", raising=False)
    monkeypatch.delenv("REPROBOOK_HOSTS", raising=False)
    plain = site.fingerprints(load_project(fx.root))
    (fx.root / "configs" / "reprobook.yaml").write_text("redact_hosts: true\n")
    redacted = site.fingerprints(load_project(fx.root))
    assert plain.keys() == redacted.keys()
    assert all(plain[p] != redacted[p] for p in plain), "turning redaction on must rebuild every page"
    hosts = fx.root / "configs" / "hosts.yaml"
    data = yaml.safe_load(hosts.read_text())
    data["hosts"]["another-secret"] = {**data["hosts"][HOST], "ssh": "another-secret"}
    hosts.write_text(yaml.safe_dump(data))
    more = site.fingerprints(load_project(fx.root))
    assert all(more[p] != redacted[p] for p in more), "a new host name to withhold must rebuild every page"
    # a hosts file outside configs/ (REPROBOOK_HOSTS) enters the quick stamp by its content
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text(hosts.read_text())
    monkeypatch.setenv("REPROBOOK_HOSTS", str(outside))
    before = site.quick_stamp(fx.root, None)
    data["hosts"]["third-secret"] = {**data["hosts"][HOST], "ssh": "third-secret"}
    outside.write_text(yaml.safe_dump(data))
    assert site.quick_stamp(fx.root, None) != before
