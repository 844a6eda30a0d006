"""OPT-IN (``make live-pmlog``): Verus's persistent-memory log (Fig 13) built and run for real, in a guest.

Nothing here is a stand-in. Two sshd processes on loopback play the Set 1 host and its guest; the guest
runs in namespaces of its own (its own processes and its own ``/dev/shm``), as a VM would. The claim
``verus/pm-log`` runs at rehearsal scale through its notebook: the host checks out
``microsoft/verified-storage`` at the pinned commit and ``verus-lang/verus`` at the revision its crates pin
(from the git mirror ``../shared/git``), sets the source constants, applies the recorded tmpfs patch and
uploads both to the guest; the guest installs Debian's libpmem and libpmemlog, builds the benchmark with
cargo (crates from the package registry, Verus's from the upload) and runs the authors' loop at the nine
append sizes, the persistent memory emulated on tmpfs. The page's table, plot and verdict come from that
run; the command line then reuses it.

It needs root (Debian packages in the guest), cargo, the git mirror and about ten minutes (more when
cargo's registry cache is cold). The workdir is kept in ``$REPROBOOK_LIVE_DIR`` (default
``/var/tmp/reprobook-live-pmlog``) so that a second run finds the build; a summary (step times, the
table) is printed and written to ``summary.json`` there. The run is recorded in the project's run store,
so ``make book`` afterwards shows it on the claim's page.

The mirror's ``microsoft/verified-storage.git`` lacks its ``refs/`` directory, so git does not take it for a
repository; the test copies it (about 1 MB) with the directory added, and points the host's
``git_url_rewrites`` at a mirror made of that copy and links to the rest.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from html import unescape
from pathlib import Path

import pytest
import yaml

from reprobook.core.config import load_project
from reprobook.core.loaders import load
from reprobook.core.runs import RunStore
from reprobook.sources import from_run
from tests.integration.conftest import ROOT
from tests.support.gitmirror import GIT_MIRROR, repaired_copy
from tests.support.sshd import SshTestbed

pytestmark = [pytest.mark.ssh, pytest.mark.timeout(3600)]
LIVE_DIR = Path(os.environ.get("REPROBOOK_LIVE_DIR", "/var/tmp/reprobook-live-pmlog"))
REPROBOOK = [sys.executable, "-m", "reprobook"]
CLAIM = "verus/pm-log"
SIZES = [128, 256, 512, 1024, 4096, 8192, 65536, 131072, 262144]
_DONE = re.compile(r"^### reprobook: step (\S+) done in (\d+) s", re.M)
_STEP = re.compile(r"^### reprobook step (\S+): (.*?)(?: \(expected .*\))?(?: \[point .*\])?$", re.M)


def _mirror(root: Path) -> Path:
    """A mirror of the three repositories the claim checks out, verified-storage's with a ``refs/`` directory."""
    mirror = root / "mirror" / "github.com"
    repaired_copy("microsoft/verified-storage.git", mirror / "microsoft" / "verified-storage.git")
    for repo in ("verus-lang/verus.git", "verus-lang/paper-sosp24-artifact"):
        link = mirror / repo
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(GIT_MIRROR / repo)
    return mirror


@pytest.fixture(scope="module")
def pm(tmp_path_factory):
    if os.environ.get("REPROBOOK_LIVE_PMLOG") != "1":
        pytest.skip("opt-in: `make live-pmlog` builds verified-storage's benchmark and runs it (about ten minutes)")
    if os.geteuid() != 0:
        pytest.skip("needs root: Debian's libpmem packages are installed in the guest")
    for repo in ("microsoft/verified-storage.git", "verus-lang/verus.git", "verus-lang/paper-sosp24-artifact"):
        if not (GIT_MIRROR / repo).is_dir():
            pytest.fail(f"the git mirror lacks {repo} ({GIT_MIRROR})")
    if not (shutil.which("cargo") or (Path.home() / ".cargo" / "bin" / "cargo").exists()):
        pytest.fail("no cargo on this machine: the guest builds the benchmark with its own Rust (rust=host)")
    LIVE_DIR.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path_factory.mktemp("pmlog")
    mirror = _mirror(LIVE_DIR)
    with SshTestbed(tmp / "ssh") as bed:
        bed.add_host("pm-host", "127.0.0.90")
        guest = bed.add_host("pm-guest", "127.0.0.91", isolated=True)
        workdir = LIVE_DIR / "work"
        hosts = {"hosts": {"pm-host": {"ssh": "pm-host", "workdir": str(workdir),
                                       "git_url_rewrites": {"https://github.com/": f"{mirror}/"}}}}
        (tmp / "hosts.yaml").write_text(yaml.safe_dump(hosts))
        # the runs go to the project's run store, so that `make book` afterwards shows the run on the claim's page
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("REPROBOOK_ROOT", str(ROOT))
            mp.setenv("REPROBOOK_HOSTS", str(tmp / "hosts.yaml"))
            mp.setenv("REPROBOOK_SSH_CONFIG", str(bed.ssh_config_path))
            mp.delenv("REPROBOOK_VERDICT_FILE", raising=False)
            yield {"bed": bed, "guest": guest, "workdir": workdir, "tmp": tmp,
                   "params": {"guest_host": guest.addr, "guest_port": guest.port, "guest_user": bed.user,
                              "guest_key": str(bed.client_key_path), "guest_dir": str(LIVE_DIR / "guest")}}


def run_dir_time(run) -> float:
    """When the run's record was last written (the newest of the claim's runs is this test's)."""
    return (Path(run.path) / "manifest.json").stat().st_mtime


def _page(notebook: Path) -> str:
    nb = json.loads(notebook.read_text())
    return unescape("".join("".join(o["data"].get("text/html", "")) + "".join(o["data"].get("text/markdown", ""))
                            + "".join(o["data"].get("text/plain", ""))
                            for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
                            if "data" in o))


def test_the_rehearsal_builds_and_runs_the_real_logs_in_a_guest_and_the_page_judges_them(pm, monkeypatch):
    import papermill as pm_

    monkeypatch.delenv("REPROBOOK_RUNS")  # the project's run store, not the test's own (tests/conftest.py)
    project = load_project(ROOT)
    claim = project.claim(CLAIM)
    store = RunStore(project.settings.runs_dir)
    t0 = time.monotonic()
    out = pm["tmp"] / "pm-log.ipynb"
    pm_.execute_notebook(str(ROOT / "notebooks" / "verus" / "pm-log.ipynb"), str(out),
                         parameters={"source": "live", "host": "pm-host", "allow_small_host": True,
                                     "scale": "rehearsal", **pm["params"]},
                         cwd=str(ROOT / "notebooks" / "verus"), progress_bar=False, kernel_name="python3")
    notebook_s = time.monotonic() - t0
    run = max((r for r in store.runs(claim) if r.manifest.get("scale") == "rehearsal"),
              key=lambda r: (run_dir_time(r), r.id))
    m = run.manifest
    assert m["status"] == "succeeded" and m["scale"] == "rehearsal" and m["source"] == "live", m.get("status")
    assert m["parameters"]["pm"] == "tmpfs" and m["parameters"]["append_gib"] == 1
    kinds = [d["kind"] for d in m["deviations"]]
    assert {"persistent memory", "machine", "toolchain"} <= set(kinds) and kinds.count("patch") == 2, kinds
    diffs = "".join(d.get("diff") or "" for d in m["deviations"])
    assert "+pub const LOG_SIZE: usize = 1024 * 1024 * 1024 * 1;" in diffs
    assert "+const BYTES_TO_APPEND: usize = 1024 * 1024 * 1024 * 1;" in diffs
    assert '+    if device == "none" {' in diffs
    assert m["checkouts"][str(pm["workdir"] / "verified-storage")] == "31b2256b06413c71245baf4b2bec9cea5b20e51b"

    # the job's log: every step ran, each size a point of its own, the guest's Rust named
    log = (pm["workdir"] / ".reprobook" / "runs" / run.id / "log").read_text()
    names = {k.split("/")[0]: v for k, v in _STEP.findall(log)}
    secs = {k: int(v) for k, v in _DONE.findall(log)}
    assert "### reprobook: all steps done" in log
    assert [k for k in secs if k.startswith("9-")] == [f"9-{i}" for i in range(1, 10)], secs
    assert re.search(r"### reprobook toolchain: rust: rustc \d", log), log[-3000:]
    assert "pm_dir /dev/shm/reprobook-pmlog: tmpfs" in log

    # the files as the guest wrote them: two iterations, each a line per log
    outputs = from_run(claim, run)
    files = sorted(run.files("results"), key=lambda p: int(re.search(r"_(\d+)\.csv$", str(p)).group(1)))
    assert [int(re.search(r"_(\d+)\.csv$", str(p)).group(1)) for p in files] == SIZES
    for f in files:
        lines = Path(f).read_text().splitlines()
        assert [line.split(",")[0] for line in lines] == ["pmdk", "verif", "old"] * 2, (f, lines)
    measured = load(claim, outputs)
    assert len(measured) == 27 and set(measured["iterations"]) == {2}
    assert set(measured["log"]) == {"pmdk", "initial", "latest"}
    # 1 GiB appended per log and run: the throughput follows from the file's microseconds
    first = Path(files[0]).read_text().splitlines()
    us = [int(line.split(",")[1]) for line in first if line.startswith("pmdk,")]
    row = measured[(measured["log"] == "pmdk") & (measured["append_bytes"] == 128)].iloc[0]
    assert row["mib_per_s"] == pytest.approx(sum(1024 / (u / 1e6) for u in us) / 2)
    # the 1 GiB file is gone from the guest's tmpfs
    assert not list(Path("/proc", str(pm["guest"].machine_pid), "root", "dev", "shm").glob("reprobook-pmlog/pool"))

    page = _page(out)
    verdict = re.search(r"Verdict: <b[^>]*>([a-z ]+)</b>", page)
    assert verdict and verdict.group(1) in ("holds", "fails", "inconclusive"), page[:3000]
    assert "Scale of the run: <b>rehearsal</b>" in page
    assert "persistent memory emulated by a file on tmpfs" in page
    assert "not run" not in page.split("Verdict")[-1][:400]

    # the command line reuses the recorded run: nothing runs on the host again
    before = (pm["workdir"] / ".reprobook" / "runs" / run.id / "log").stat().st_mtime_ns
    ids = sorted(r.id for r in store.runs(claim))
    args = [x for k, v in pm["params"].items() for x in ("-p", k, str(v))]
    t1 = time.monotonic()
    cli = subprocess.run(REPROBOOK + ["run", CLAIM, "--source", "live", "--host", "pm-host", "-p", "scale",
                                      "rehearsal", *args, "--allow-insufficient-host", "-q"],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    cli_s = time.monotonic() - t1
    assert f"{CLAIM}: {verdict.group(1).upper()}" in cli.stdout, cli.stdout + cli.stderr
    assert sorted(r.id for r in store.runs(claim)) == ids
    assert (pm["workdir"] / ".reprobook" / "runs" / run.id / "log").stat().st_mtime_ns == before

    table = measured[["log", "append_kib", "mib_per_s", "mib_per_s_std"]].round(1).to_dict("records")
    summary = {"run": run.id, "notebook_s": round(notebook_s), "cli_again_s": round(cli_s), "verdict": verdict.group(1),
               "steps_s": {f"{k} {names.get(k, '')[:50]}": v for k, v in secs.items()}, "table": table}
    (LIVE_DIR / "summary.json").write_text(json.dumps(summary, indent=1))
    print("\n" + json.dumps(summary, indent=1))
