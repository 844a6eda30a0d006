"""Outputs are untrusted (issue 30): each proof of the issue, as a test.

1. a ``# rust:`` line of a page-table log, and the strings of a run's manifest and log, reach the
   page as text: rendered by MyST, they make no element, attribute, link, role or math;
2. a guest parameter (or an SSH target) that ssh would read as an option is refused, naming it;
3. with ``REPROBOOK_REDACT_HOSTS=1`` the report (Markdown and JSON) names no host, user, imported
   machine or local directory;
4. an archive of outputs is checked and unpacked once, at import, within limits: a gzip bomb is
   refused with exit 2 in seconds, storing nothing; a 50 MB archive imports, and evaluating its run
   twice unpacks nothing;
5. run ids are literal, artifact paths stay in their repository, URL credentials are masked.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import resource
import subprocess
import sys
import tarfile
import time
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from docutils import nodes
from docutils.core import publish_doctree, publish_parts

import reprobook as rb
from reprobook.core.plan import make_plan
from reprobook import api, report, sources
from reprobook.core import archives
from reprobook.core.artifacts import ArtifactRef
from reprobook.core.config import HostSpec, load_project
from reprobook.core.runs import RunStore
from reprobook.core.secrets import mask_credentials
from reprobook.errors import ConfigError, OutputError
from reprobook.core.plan import resolve
from tests.support.artifacts import VERUS

myst = pytest.importorskip("myst_parser.parsers.docutils_")

CLI = [sys.executable, "-m", "reprobook"]
ROOT = Path(__file__).resolve().parents[2]
IMG = '<img src=x onerror="alert(document.domain)">'
HOSTILE = [f"x` {IMG} `y", "<script>alert(1)</script>", "[click](javascript:alert(1))", "{raw}`html <b>x</b>`",
           "$$\\alert$$", "```{raw} html\n<script>alert(2)</script>\n```", "![i](https://evil.example/p.png)",
           "<https://evil.example>"]
# MyST as the site configures it (_config.yml) and more: a string safe here is safe there
_SETTINGS = {"myst_enable_extensions": ["colon_fence", "deflist", "dollarmath", "substitution", "amsmath",
                                        "attrs_inline", "html_image", "html_admonition", "fieldlist"],
             "report_level": 5, "halt_level": 5, "warning_stream": False}
_MARKUP = (nodes.raw, nodes.reference, nodes.image, nodes.math, nodes.math_block, nodes.target, nodes.substitution_reference)


class _Elements(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs = set(), set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs |= {k for k, _ in attrs}


def assert_plain(markdown: str, *, literally: list[str] = ()) -> None:
    """``markdown``, rendered by MyST, holds no markup from run data, and shows each of ``literally`` as text."""
    doc = publish_doctree(markdown, parser=myst.Parser(), settings_overrides=_SETTINGS)
    bad = [n for n in doc.findall() if isinstance(n, _MARKUP)]
    assert not bad, f"markup from the run survived: {bad[0].pformat()}"
    shown = " ".join(doc.astext().split())
    for s in literally:
        assert " ".join(s.split()) in shown, (s, shown)
    html = publish_parts(markdown, parser=myst.Parser(), writer_name="html5", settings_overrides=_SETTINGS)["body"]
    p = _Elements()
    p.feed(html)
    assert not p.tags & {"img", "script", "a", "iframe", "object", "svg", "math", "b"}, p.tags
    assert not p.attrs & {"onerror", "onload", "href", "src"}, p.attrs


# --------------------------------------------------------------------------- 1. pages

PAGE_TABLE_LOG = """Time Verified Map: 23.08858679 ns
Time Verified Unmap: 303.26841955 ns
Time Verified Unmap (no reclaim): 7.66253143 ns
Time Base Map: 34.33901477 ns
Time Base Unmap: 8.37488886 ns
"""


def _cell(notebook: str, marker: str) -> str:
    nb = json.loads((ROOT / "notebooks" / notebook).read_text())
    found = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code" and marker in "".join(c["source"])]
    assert len(found) == 1, f"{notebook}: no single cell with {marker!r}"
    return found[0]


def test_a_rust_line_with_a_backtick_reaches_the_page_table_page_as_text(tmp_path):
    """The proof of the issue: an imported log's ``# rust:`` line, through the page's own cell."""
    log = tmp_path / "page-table.log"
    rust = f"x` {IMG} `y"
    log.write_text(f"# rust: {rust}\n" + PAGE_TABLE_LOG)
    claim = rb.claim("verus/page-table")
    rb.import_run(claim, [log], machine="a laptop")
    outputs = rb.obtain(claim, "auto")
    shown = []
    scope = {"rb": rb, "claim": claim, "outputs": outputs, "display": lambda *objs: shown.extend(objs)}
    exec(_cell("verus/page-table.ipynb", "Compiler of the measured run"), scope)
    markdown = [o.data for o in shown if type(o).__name__ == "Markdown"]
    assert len(markdown) == 1 and "Compiler of the measured run" in markdown[0]
    assert_plain(markdown[0], literally=[rust])


@pytest.mark.parametrize("hostile", HOSTILE)
def test_scale_and_deviations_show_every_run_string_as_text(hostile):
    claim = rb.claim("verus/page-table")
    outputs = sources.Outputs(
        claim.key, "live", "run r", {"log": (Path("/nonexistent"),)}, run_id="r",
        parameters={"rust": hostile, f"p{hostile[:3]}": 1}, scale=hostile,
        deviations=({"kind": hostile, "what": hostile, "diff": f"--- a\n+++ b\n+{hostile}\n```\n"},),
        toolchains=(hostile, f"go: {hostile}"))
    markdown = api.deviations(claim, outputs).data
    assert_plain(markdown, literally=[hostile.replace("\n", " ")])


def test_the_evidence_of_each_check_is_text(monkeypatch):
    """The per-check lines under the verdict carry the check's reason, which quotes the run's labels."""
    from IPython.display import Markdown
    from reprobook.book.text import markdown_str
    line = markdown_str("**{}** — {}: {}", "checks", "holds", f"row system={IMG} reads 3")
    assert isinstance(Markdown(line).data, str)
    assert_plain(line, literally=[f"row system={IMG} reads 3"])


# --------------------------------------------------------------------------- 2. command lines

@pytest.mark.parametrize("name, value", [("guest_host", "-oProxyCommand=touch /tmp/x"),
                                         ("guest_user", "-oProxyCommand=x"), ("guest_key", "-F/tmp/evil"),
                                         ("guest_host", "a b"), ("guest_port", "22 -oX=y")])
def test_a_guest_parameter_ssh_would_read_as_an_option_is_refused_naming_it(tmp_path, name, value):
    from reprobook.core.config import load_paper
    from reprobook.remote.steps import build_script
    import yaml
    params = {"guest_port": {"default": 2222, "help": "p"}, "guest_host": {"default": "localhost", "help": "h"},
              "guest_user": {"default": "root", "help": "u"}, "guest_key": {"default": "", "help": "k"}}
    claim_doc = {"id": "c", "title": "t", "statement": "s", "refs": ["r"], "loader": "ozz.lmbench",
                 "checks": [{"kind": "at_least", "what": "w", "value": "value", "min": 0}], "parameters": params,
                 "run": [{"name": "g", "where": "guest", "run": "true"}], "outputs": {"out": {"path": "o", "glob": "*"}}}
    path = tmp_path / "hostilefx.yaml"
    path.write_text(yaml.safe_dump({"paper": {"id": "hostilefx", "title": "H", "venue": "tests"}, "repositories": {},
                                    "claims": [claim_doc]}))
    paper = load_paper(path)
    with pytest.raises(ConfigError, match=name) as info:
        build_script(paper, make_plan(paper.claim("c"), {name: value}), HostSpec("h", "h", str(tmp_path / "w")), str(tmp_path))
    assert repr(value) in str(info.value)
    assert not Path("/tmp/x").exists() or Path("/tmp/x").stat().st_mtime < time.time() - 60


@pytest.mark.parametrize("target", ["-oProxyCommand=touch /tmp/x", "-oProxyCommand=x@host", "u@-oX", "u@h:-1"])
def test_an_ssh_target_that_reads_as_an_option_is_refused(target):
    with pytest.raises(ConfigError, match="cannot read SSH target") as info:
        HostSpec("h", target, "/w").target()
    assert info.value.key == "hosts.h.ssh"


# --------------------------------------------------------------------------- 3. redaction

IRONKV_RAW = Path(VERUS) / "ironkv/recording/raw-data.txt"
SECRET_HOST, SECRET_USER, SECRET_MACHINE = "lab-node-7.secret.example", "alice-secret", "Secret Lab Box 42"


def _runs_with_secrets(tmp_path):
    """An imported run judged for verus/ironkv (its machine described) and a live one for verus/page-table."""
    raw = tmp_path / "raw-data.txt"
    raw.write_bytes((Path(os.environ["REPROBOOK_ARTIFACT_MIRROR"]) / IRONKV_RAW).read_bytes())
    imported = rb.import_run(rb.claim("verus/ironkv"), [raw], machine=SECRET_MACHINE)
    claim = rb.claim("verus/page-table")
    store = RunStore(Path(os.environ["REPROBOOK_RUNS"]))
    run = store.create(claim, "live-run-1", source="live", host=SECRET_HOST, status="succeeded",
                       parameters=resolve(claim, {}),
                       host_facts={SECRET_HOST: {"hostname": SECRET_HOST, "user": SECRET_USER, "cpus": 4}})
    dest = run.path / "outputs" / "log" / "page-table.log"
    dest.parent.mkdir(parents=True)
    dest.write_text(PAGE_TABLE_LOG)
    from reprobook.core.runs import sha256_file
    run.update(files=[{"output": "log", "path": "outputs/log/page-table.log", "size": dest.stat().st_size,
                       "sha256": sha256_file(dest)}], created="2099-01-01T00:00:00+00:00")
    return imported, run


def test_redacted_report_names_no_host_user_machine_or_directory(mirror, tmp_path, monkeypatch):
    monkeypatch.setenv("REPROBOOK_REDACT_HOSTS", "1")
    _runs_with_secrets(tmp_path)
    data = report.paper_report("verus")
    report.validate_report(data)
    text = json.dumps(data, ensure_ascii=False) + report.report_markdown(data)
    for secret in (SECRET_HOST, SECRET_USER, SECRET_MACHINE, str(tmp_path)):
        assert secret not in text, secret
    assert "(withheld)" in text


def test_without_redaction_the_report_names_them(mirror, tmp_path):
    _runs_with_secrets(tmp_path)
    data = report.paper_report("verus")
    text = json.dumps(data)
    assert SECRET_HOST in text and SECRET_MACHINE in text and SECRET_USER in text


def test_redacted_page_withholds_the_guest_parameters(monkeypatch):
    monkeypatch.setenv("REPROBOOK_REDACT_HOSTS", "1")
    claim = rb.claim("verus/page-table")
    outputs = sources.Outputs(claim.key, "live", "run r", {"log": (Path("/x"),)}, run_id="r",
                              parameters={"guest_host": SECRET_HOST, "guest_user": SECRET_USER, "rust": "host"})
    markdown = api.deviations(claim, outputs).data
    assert SECRET_HOST not in markdown and SECRET_USER not in markdown and "withheld" in markdown


# --------------------------------------------------------------------------- 4. archives

def _gzip_bomb(path: Path, gib: int = 1) -> Path:
    """A tar.gz of ``gib`` GiB of zeros in about a megabyte, written in a moment (gzip members concatenated)."""
    header = tarfile.TarInfo("zeros.bin")
    header.size = gib * 1024 ** 3
    chunk = gzip.compress(b"\0" * 1024 ** 2, compresslevel=9)
    with open(path, "wb") as f:
        f.write(gzip.compress(header.tobuf(format=tarfile.GNU_FORMAT)))
        for _ in range(gib * 1024):
            f.write(chunk)
        f.write(gzip.compress(b"\0" * 1024))  # the end-of-archive blocks
    return path


def test_a_gzip_bomb_is_refused_at_import_with_exit_2_storing_nothing(tmp_path):
    bomb = _gzip_bomb(tmp_path / "runs.tar.gz")
    assert bomb.stat().st_size < 2 * 1000 ** 2
    claim = rb.claim("pesto/sample-runs")
    t0 = time.monotonic()
    with pytest.raises(archives.ArchiveRefused, match="zeros.bin"):
        rb.import_run(claim, [bomb], machine="a cluster")
    assert time.monotonic() - t0 < 5  # the refusal reads one header: milliseconds, not a GiB of zeros
    # the command line: exit 2, naming the archive, the member and the limit; its CPU time beyond the
    # command's own start (a command refused before any archive is read) is the refusal's. CPU time, not wall
    # time: on a loaded machine two starts of the same command differed by more than the margin in wall time
    # (5.1 s against 3.4 s), while reading the bomb's GiB of zeros costs seconds of CPU whatever the load.
    def cpu_of(argv):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return done, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    base, baseline = cpu_of(CLI + ["import", "pesto/sample-runs", str(tmp_path / "none.tar.gz"), "--machine", "m"])
    t0 = time.monotonic()
    out, took = cpu_of(CLI + ["import", "pesto/sample-runs", str(bomb), "--machine", "a cluster"])
    wall = time.monotonic() - t0
    assert base.returncode == 2 and out.returncode == 2, out.stderr
    assert took < baseline + 1.0, (took, baseline)
    assert str(bomb) in out.stderr and "zeros.bin" in out.stderr and "REPROBOOK_MAX_EXPANSION" in out.stderr
    assert "Traceback" not in out.stderr
    runs = Path(os.environ["REPROBOOK_RUNS"])
    assert not list(runs.glob("pesto/*/*")), "a refused archive left a run behind"
    print(f"bomb refused: command {took:.2f} s of CPU ({wall:.2f} s wall), its start alone {baseline:.2f} s of CPU")


@pytest.mark.parametrize("limit, env, value", [("files", "REPROBOOK_MAX_RUN_FILES", "3"),
                                               ("one file's size", "REPROBOOK_MAX_FILE_BYTES", "100"),
                                               ("total", "REPROBOOK_MAX_RUN_BYTES", "250")])
def test_each_limit_refuses_naming_archive_member_and_limit(tmp_path, monkeypatch, limit, env, value):
    archive = tmp_path / "a.tar"
    with tarfile.open(archive, "w") as tar:
        for i in range(5):
            info = tarfile.TarInfo(f"d/f{i}.txt")
            info.size = 120
            tar.addfile(info, io.BytesIO(b"x" * 120))
    monkeypatch.setenv(env, value)
    with pytest.raises(archives.ArchiveRefused, match=env) as info:
        archives.unpack(archive, tmp_path / "out")
    assert str(archive) in str(info.value) and "d/f" in str(info.value)
    assert not (tmp_path / "out").exists()


def test_links_outside_and_devices_are_refused(tmp_path):
    archive = tmp_path / "a.tar"
    with tarfile.open(archive, "w") as tar:
        link = tarfile.TarInfo("evil")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    with pytest.raises(OutputError, match="cannot unpack"):
        archives.unpack(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    dev = tmp_path / "d.tar"
    with tarfile.open(dev, "w") as tar:
        node = tarfile.TarInfo("null")
        node.type = tarfile.CHRTYPE
        tar.addfile(node)
    with pytest.raises(OutputError, match="neither a file"):
        archives.unpack(dev, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_50_mb_archive_imports_once_and_evaluating_twice_unpacks_nothing(mirror, tmp_path, monkeypatch):
    claim = rb.claim("pesto/sample-runs")
    paper = load_project().paper("pesto")
    from reprobook.core import artifacts
    archive = tmp_path / "sample-runs.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
        for name, ref in claim.reference.items():
            tar.add(artifacts.resolve(artifacts.parse_ref(ref, paper), load_project().settings), arcname=name)
        filler = tarfile.TarInfo("extra/notes.bin")  # incompressible: the archive is really 50 MB
        filler.size = 45 * 1000 ** 2
        tar.addfile(filler, io.BytesIO(os.urandom(filler.size)))
    assert archive.stat().st_size > 50 * 1000 ** 2 * 0.9
    t0 = time.monotonic()
    run = rb.import_run(claim, [archive], machine="a cluster")
    took_import = time.monotonic() - t0
    files = run.manifest["files"]
    assert len(files) > 10 and all(f["archive"]["name"] == archive.name for f in files)
    assert not any(Path(f["path"]).name.endswith(".tar.gz") for f in files)
    calls = []
    real_unpack, real_open = archives.unpack, tarfile.open
    monkeypatch.setattr(archives, "unpack", lambda *a, **k: calls.append(a) or real_unpack(*a, **k))
    monkeypatch.setattr(tarfile, "open", lambda *a, **k: calls.append(a) or real_open(*a, **k))
    verdicts = [api.evaluate(claim, run.id).verdict for _ in range(2)]
    assert calls == [], "an evaluation unpacked the archive again"
    assert verdicts[0].verdict == verdicts[1].verdict and str(verdicts[0].verdict) != "not run"
    print(f"50 MB import took {took_import:.1f} s")


# --------------------------------------------------------------------------- 5. smaller

def test_run_ids_are_literal(mirror, tmp_path):
    _runs_with_secrets(tmp_path)
    store = RunStore(Path(os.environ["REPROBOOK_RUNS"]))
    assert store.load("live-run-1").id == "live-run-1"
    for pattern in ("*", "live-run-?", "[l]ive-run-1", "live*", "../*", ".."):
        with pytest.raises(ConfigError, match="no run"):
            store.load(pattern)
    with pytest.raises(ConfigError, match="unknown source"):
        rb.obtain(rb.claim("verus/page-table"), "*")
    out = subprocess.run(CLI + ["status", "*"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "no run '*'" in out.stderr and "live-run-1" not in out.stdout + out.stderr


@pytest.mark.parametrize("path", ["/etc/passwd", "../../../../etc/passwd", "a/../../b", "-oFoo", ""])
def test_an_artifact_path_from_a_parameter_stays_in_its_repository(path):
    with pytest.raises(ConfigError, match="may not leave the repository"):
        ArtifactRef("fsuri/Pequin-Artifact", "3f47079c96be29565e16cefc21d14eda519c14a3", path)


def test_configs_parameter_with_an_absolute_path_reads_no_local_file(mirror):
    from reprobook.papers.pesto.pequin import run_configs
    from reprobook.remote.placement import Placement
    claim = rb.claim("pesto/sample-runs")
    params = {**resolve(claim, {}), "configs": ["/etc/passwd"], "cloudlab_project": "p",
              "cloudlab_experiment": "e", "cloudlab_user": "u"}
    placement = Placement({claim.control_role: ("local",), "server": ("local",)}, claim.control_role)
    with pytest.raises(ConfigError, match="may not leave the repository"):
        run_configs(load_project(), claim, params, placement)


def test_credentials_in_url_rewrites_are_masked_in_the_manifest_and_log(tmp_path):
    claim = rb.claim("verus/page-table")
    store = RunStore(Path(os.environ["REPROBOOK_RUNS"]))
    script = "export GIT_CONFIG_KEY_0='url.https://bot:ghp_SECRETTOKEN@git.example.org/.insteadOf'\n"
    run = store.create(claim, "cred-run", source="live", host="h", status="created", script=script,
                       rewrites={"https://github.com/": "https://ghp_OTHERTOKEN@mirror.example/"})
    disk = (run.path / "manifest.json").read_text()
    assert "SECRETTOKEN" not in disk and "OTHERTOKEN" not in disk and "git.example.org" in disk
    json.loads(disk)
    assert "SECRETTOKEN" not in mask_credentials("fatal: unable to access 'https://bot:ghp_SECRETTOKEN@h/x'")
