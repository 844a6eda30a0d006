"""The website built with hostile runs (issue 30): nothing a run says becomes markup, and redaction holds.

Every claim has a hostile run in the store. Verus page-table and Aardvark archive-throughput have live runs
whose output, log, manifest and deviations are full of backticks, ``<script>``, ``<img onerror>``,
``javascript:`` links, MyST roles and directives and ``$$``, on a host with a secret name; Verus IronKV an
imported run whose machine description is hostile and secret; each other claim a run with a hostile manifest
and log whose files are the authors' shipped outputs (the page judges it) or, for a claim that ships none, a
hostile text file its loader refuses (the page says why it passed the run over). The book is built for real
(``reprobook book``, with ``REPROBOOK_REDACT_HOSTS=1``); every HTML page is parsed, and every claim's page is
loaded in headless Chromium, where the payloads would set ``document.title`` if they ran.
"""

from __future__ import annotations

from reprobook.core.plan import resolve

import hashlib
import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.support.artifacts import VERUS
from tests.support.web import browser, serve_directory

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.book

RAN = "document.title='PWNED'"
PAYLOADS = [f"x` <img src=x onerror=\"{RAN}\"> `y", f"<script>{RAN}</script>", f"[click](javascript:{RAN})",
            f"{{raw}}`html <img src=x onerror=\"{RAN}\">`", "$$\\PWNMATH$$",
            f"```{{raw}} html\n<script>{RAN}</script>\n```", "<https://evil.example/pwn>"]
SECRET_HOST, SECRET_MACHINE = "lab-node-7.secret.example", "Secret Lab Box 42"
PAGE_TABLE_LOG = """Time Verified Map: 23.08858679 ns
Time Verified Unmap: 303.26841955 ns
Time Verified Unmap (no reclaim): 7.66253143 ns
Time Base Map: 34.33901477 ns
Time Base Unmap: 8.37488886 ns
"""


def _file(run: Path, rel: str, data: bytes, output: str) -> dict:
    p = run / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return {"output": output, "path": rel, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _hostile_runs(runs: Path, mirror: Path) -> None:
    os.environ["REPROBOOK_RUNS"] = str(runs)
    import reprobook as rb
    from reprobook.core.runs import RunStore
    from reprobook.core.scales import TOOLCHAIN_MARKER
    store = RunStore(runs)
    claim = rb.claim("verus/page-table")
    run = store.create(claim, "hostile-page-table", source="live", host=SECRET_HOST, status="succeeded",
                       parameters=resolve(claim, {}), created="2099-01-01T00:00:00+00:00",
                       ended="2099-01-01T01:00:00+00:00",
                       deviations=[{"kind": p, "what": p, "diff": f"--- a\n+++ b\n+{p}\n"} for p in PAYLOADS],
                       host_facts={SECRET_HOST: {"hostname": SECRET_HOST, "user": "alice-secret", "cpus": 4}})
    log = "".join(f"# rust: {p.splitlines()[0]}\n" for p in PAYLOADS) + PAGE_TABLE_LOG
    files = [_file(run.path, "outputs/log/page-table.log", log.encode(), "log")]
    (run.path / "log.txt").write_text("".join(f"{TOOLCHAIN_MARKER} rust: {p.splitlines()[0]}\n" for p in PAYLOADS))
    run.update(files=files)
    # a page that shows "Scale and deviations": the manifest's deviations and the log's toolchain lines
    claim = rb.claim("aardvark/archive-throughput")
    run = store.create(claim, "hostile-archive-throughput", source="live", host=SECRET_HOST, status="succeeded",
                       parameters=resolve(claim, {}), created="2099-01-01T00:00:00+00:00",
                       deviations=[{"kind": p, "what": p, "diff": f"--- a\n+++ b\n+{p}\n"} for p in PAYLOADS])
    csv = (mirror / "github.com/derbear/aardvark-prototype/dd8f6aaf5f76173118f3f3decbe099bda5972ce2"
           "/go-algorand/ledger/archives.csv").read_bytes()
    run.update(files=[_file(run.path, "outputs/archives/archives.csv", csv, "archives")])
    (run.path / "log.txt").write_text("".join(f"{TOOLCHAIN_MARKER} go: {p.splitlines()[0]}\n" for p in PAYLOADS))
    # and its latest rehearsal, which the page shows in a section of its own
    run = store.create(claim, "hostile-archive-throughput-rehearsal", source="live", host=SECRET_HOST,
                       status="succeeded", scale="rehearsal", parameters=resolve(claim, {"scale": "rehearsal"}),
                       created="2099-01-01T00:00:00+00:00", ended="2099-01-01T02:00:00+00:00",
                       deviations=[{"kind": p, "what": p, "diff": f"--- a\n+++ b\n+{p}\n"} for p in PAYLOADS],
                       host_facts={SECRET_HOST: {"hostname": SECRET_HOST, "user": "alice-secret", "cpus": 4}})
    run.update(files=[_file(run.path, "outputs/archives/archives.csv", csv, "archives")])
    (run.path / "log.txt").write_text("".join(f"{TOOLCHAIN_MARKER} go: {p.splitlines()[0]}\n" for p in PAYLOADS))
    raw = runs.parent / f"raw {PAYLOADS[0].replace('/', '_')}.txt"
    raw.write_bytes((mirror / VERUS / "ironkv/recording/raw-data.txt").read_bytes())
    rb.import_run(rb.claim("verus/ironkv"), [raw], machine=f"{SECRET_MACHINE} {PAYLOADS[0]}", note=PAYLOADS[1])
    for claim in _every_claim():
        if claim.key not in DONE:
            _hostile_run(store, claim, runs.parent)


DONE = ("verus/page-table", "aardvark/archive-throughput", "verus/ironkv")
"""The claims with a hand-made hostile run above; every other claim gets one from `_hostile_run`."""


def _shows_rehearsal(claim) -> bool:
    """The claim's page has a "latest rehearsal" section (rb.rehearsal)."""
    return "rb.rehearsal(claim)" in (ROOT / "notebooks" / claim.paper / f"{claim.id}.ipynb").read_text()


def _every_claim():
    from reprobook.api import project
    p = project()
    return [p.paper(pid).claim(cid) for pid in p.papers for cid in p.paper(pid).claims]


def _hostile_run(store, claim, scratch: Path) -> None:
    """A run of ``claim`` whose manifest, log and file names are hostile: the authors' shipped outputs as its
    files where there are some (so the page judges it), else one hostile text file its loader refuses (so the
    page says the run was passed over, and why)."""
    from reprobook import sources
    from reprobook.api import project
    from reprobook.core.plan import make_plan
    from reprobook.core.scales import TOOLCHAIN_MARKER
    hostile = {"deviations": [{"kind": p, "what": p, "diff": f"--- a\n+++ b\n+{p}\n"} for p in PAYLOADS],
               "host_facts": {SECRET_HOST: {"hostname": SECRET_HOST, "user": "alice-secret", "cpus": 4}}}
    asks = {}   # the scale the page asks for by default (a rehearsal page asks for its rehearsal)
    if claim.scales:
        import papermill as pm
        page = pm.inspect_notebook(str(ROOT / "notebooks" / claim.paper / f"{claim.id}.ipynb"))
        if "scale" in page:
            asks["scale"] = json.loads(page["scale"]["default"].replace("'", '"'))
    run = store.create(claim, f"hostile-{claim.id}", source="live", host=SECRET_HOST, status="succeeded",
                       parameters=dict(make_plan(claim, asks).params), created="2099-01-01T00:00:00+00:00",
                       ended="2099-01-01T01:00:00+00:00", **hostile)
    files = []
    if claim.reference:
        ref = sources.reference(project(), claim)
        for name, paths in ref.files.items():
            for path in paths:
                root = next(r for r in sorted(ref.names, key=len, reverse=True) if str(path).startswith(r))
                rel = Path(path).relative_to(root) if str(path) != root else Path(Path(path).name)
                files.append(_file(run.path, f"outputs/{name}/{rel.as_posix()}", Path(path).read_bytes(), name))
    else:
        name = next(iter(claim.outputs))
        junk = "\n".join(PAYLOADS).encode()
        files.append(_file(run.path, f"outputs/{name}/{PAYLOADS[0].replace('/', '_')}.txt", junk, name))
    run.update(files=files)
    (run.path / "log.txt").write_text("".join(f"{TOOLCHAIN_MARKER} tool: {p.splitlines()[0]}\n" for p in PAYLOADS))
    if _shows_rehearsal(claim):   # the page's "latest rehearsal" section shows this one
        rehearsal = store.create(claim, f"hostile-{claim.id}-rehearsal", source="live", host=SECRET_HOST,
                                 status="succeeded", scale="rehearsal",
                                 parameters=dict(make_plan(claim, {"scale": "rehearsal"}).params),
                                 created="2099-01-01T00:00:00+00:00", ended="2099-01-01T02:00:00+00:00", **hostile)
        rehearsal.update(files=[_file(rehearsal.path, f["path"], (run.path / f["path"]).read_bytes(), f["output"])
                                for f in files])
        (rehearsal.path / "log.txt").write_text((run.path / "log.txt").read_text())


TEXT_ATTRIBUTES = ("title", "alt", "aria-label")
"""Attributes whose value is text shown to the reader, never run nor fetched: a run's words may be in them (the
summary's tooltip holds a reason), as text. Any other attribute holding a payload is a finding."""


class _Scan(HTMLParser):
    def __init__(self):
        super().__init__()
        self.bad: list[str] = []
        self.script = False

    def handle_starttag(self, tag, attrs):
        self.script = tag == "script"
        for k, v in attrs:
            if k in TEXT_ATTRIBUTES:   # plain text a browser only shows (a tooltip): the run's words may be there
                continue
            if "PWNED" in (v or "") or (v or "").strip().lower().startswith("javascript:") or "evil.example" in (v or ""):
                self.bad.append(f"<{tag} {k}={v!r}>")
        if tag == "img" and dict(attrs).get("src") == "x":
            self.bad.append(f"<img src=x>")

    def handle_data(self, data):
        if self.script and "PWNED" in data:
            self.bad.append(f"<script>{data[:80]}")

    def handle_endtag(self, tag):
        self.script = False


@pytest.fixture(scope="module")
def hostile_site(mirror, tmp_path_factory):
    runs = tmp_path_factory.mktemp("hostile") / "runs"
    env = {**os.environ, "REPROBOOK_ROOT": str(ROOT), "REPROBOOK_ARTIFACT_MIRROR": str(mirror),
           "REPROBOOK_RUNS": str(runs), "REPROBOOK_REDACT_HOSTS": "1"}
    before = {k: os.environ.get(k) for k in ("REPROBOOK_RUNS", "REPROBOOK_ARTIFACT_MIRROR", "REPROBOOK_ARTIFACT_CACHE")}
    os.environ.update(REPROBOOK_ARTIFACT_MIRROR=str(mirror), REPROBOOK_ARTIFACT_CACHE=str(runs.parent / "cache"))
    try:
        _hostile_runs(runs, mirror)
    finally:
        for k, v in before.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    out = subprocess.run([sys.executable, "-m", "reprobook", "book"], cwd=ROOT, capture_output=True, text=True,
                         timeout=1500, env=env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    yield ROOT / "_build" / "html", runs


def test_no_element_attribute_or_url_from_the_runs(hostile_site):
    html, _ = hostile_site
    pages = sorted(html.rglob("*.html"))
    bad = {}
    for page in pages:
        scan = _Scan()
        scan.feed(page.read_text(errors="replace"))
        if scan.bad:
            bad[str(page.relative_to(html))] = scan.bad
    assert not bad, bad
    text = _Text()
    text.feed((html / "notebooks/verus/page-table.html").read_text())
    shown = " ".join("".join(text.parts).split())
    assert "hostile-page-table" in shown, "the page did not judge the hostile run"
    assert PAYLOADS[0] in shown and PAYLOADS[1] in shown  # shown, as text
    text = _Text()
    text.feed((html / "notebooks/aardvark/archive-throughput.html").read_text())
    shown = " ".join("".join(text.parts).split())
    assert "hostile-archive-throughput" in shown and "Deviations from the guide" in shown
    for payload in PAYLOADS:  # each deviation, its patch and each toolchain line: shown, as text
        assert " ".join(payload.split()) in shown, payload


def test_every_claim_page_met_its_hostile_run(hostile_site):
    """Each claim's page judged its hostile run, or says it passed over it and why: the run reached every page."""
    html, _ = hostile_site
    missed = []
    for claim in _every_claim():
        if claim.key == "verus/ironkv":
            continue   # imported under a generated id; checked by the scan and in Chromium
        text = _Text()
        text.feed((html / "notebooks" / claim.paper / f"{claim.id}.html").read_text())
        shown = " ".join("".join(text.parts).split())
        if f"hostile-{claim.id}" not in shown:
            missed.append(claim.key)
        if _shows_rehearsal(claim) and f"hostile-{claim.id}-rehearsal" not in shown:
            missed.append(f"{claim.key} (its latest rehearsal)")
    assert not missed, f"pages that never met their hostile run: {missed}"


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data):
        self.parts.append(data)


def test_redacted_site_names_no_host_machine_or_directory(hostile_site):
    html, runs = hostile_site
    for page in sorted(html.rglob("*.html")):
        text = page.read_text(errors="replace")
        for secret in (SECRET_HOST, SECRET_MACHINE, "alice-secret", str(runs.parent)):
            assert secret not in text, f"{page.relative_to(html)} names {secret!r}"


@pytest.mark.browser
def test_no_payload_runs_in_chromium(hostile_site):
    html, _ = hostile_site
    with serve_directory(html) as base, browser() as b:
        page = b.new_page()
        dialogs = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        for path in [f"notebooks/{c.paper}/{c.id}.html" for c in _every_claim()] + ["book/summary.html"]:
            page.goto(base + path)
            page.wait_for_load_state("load")
            page.wait_for_timeout(300)
            assert page.title() != "PWNED" and "PWNED" != page.evaluate("document.title"), path
        assert not dialogs


def test_redacted_report_of_every_paper_names_no_host_machine_or_directory(hostile_site, monkeypatch):
    """The reports (JSON and Markdown) of every paper, over the same hostile runs, redaction on."""
    from reprobook import report
    from reprobook.api import project
    _, runs = hostile_site
    monkeypatch.setenv("REPROBOOK_RUNS", str(runs))
    monkeypatch.setenv("REPROBOOK_REDACT_HOSTS", "1")
    for paper in project().papers:
        data = report.paper_report(paper)
        report.validate_report(data)
        text = json.dumps(data, ensure_ascii=False) + report.report_markdown(data)
        for secret in (SECRET_HOST, SECRET_MACHINE, "alice-secret", str(runs.parent)):
            assert secret not in text, f"the {paper} report names {secret!r}"
        assert "hostile-" in text, f"the {paper} report judged none of the hostile runs"
