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

import re
import subprocess
import time
from pathlib import Path

import pytest

from reprobook.core.config import load_project
from reprobook.core.loaders import load
from reprobook.core.runs import RunStore
from reprobook.sources import from_run
from tests.integration.conftest import ROOT
from tests.support.gitmirror import GIT_MIRROR, repaired_copy
from tests.support.live import (REPROBOOK, latest_rehearsal, live_dir, needs_cargo, needs_mirror, needs_root, opt_in,
                                page_text, project_store_env, step_times, write_hosts, write_summary)
from tests.support.live import project_runs  # noqa: F401 - autouse: each test reads the project's run store
from tests.support.sshd import SshTestbed

pytestmark = [pytest.mark.ssh, pytest.mark.timeout(3600)]
LIVE_DIR = live_dir("/var/tmp/reprobook-live-pmlog")
CLAIM = "verus/pm-log"
SIZES = [128, 256, 512, 1024, 4096, 8192, 65536, 131072, 262144]


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
    opt_in("REPROBOOK_LIVE_PMLOG",
           "`make live-pmlog` builds verified-storage's benchmark and runs it (about ten minutes)")
    needs_root("Debian's libpmem packages are installed in the guest")
    needs_mirror("microsoft/verified-storage.git", "verus-lang/verus.git", "verus-lang/paper-sosp24-artifact")
    needs_cargo("the guest builds the benchmark with its own Rust (rust=host)")
    LIVE_DIR.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path_factory.mktemp("pmlog")
    mirror = _mirror(LIVE_DIR)
    with SshTestbed(tmp / "ssh") as bed:
        bed.add_host("pm-host", "127.0.0.90")
        guest = bed.add_host("pm-guest", "127.0.0.91", isolated=True)
        workdir = LIVE_DIR / "work"
        # the runs go to the project's run store, so that `make book` afterwards shows the run on the claim's page
        with project_store_env(write_hosts(tmp / "hosts.yaml", "pm-host", workdir, mirror), bed):
            yield {"bed": bed, "guest": guest, "workdir": workdir, "tmp": tmp,
                   "params": {"guest_host": guest.addr, "guest_port": guest.port, "guest_user": bed.user,
                              "guest_key": str(bed.client_key_path), "guest_dir": str(LIVE_DIR / "guest")}}


def test_the_rehearsal_builds_and_runs_the_real_logs_in_a_guest_and_the_page_judges_them(pm):
    import papermill as pm_

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
    run = latest_rehearsal(store, claim)
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
    steps = step_times(log)
    assert "### reprobook: all steps done" in log
    assert [s.step for s in steps if s.step.startswith("9-")] == [f"9-{i}" for i in range(1, 10)], steps
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

    page = page_text(out)
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
               "steps_s": {f"{s.step} {s.name[:50]}": s.seconds for s in steps}, "table": table}
    write_summary(LIVE_DIR / "summary.json", summary)
