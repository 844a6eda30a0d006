"""OPT-IN (``make live-guest``): Ozz's LMBench (Table 5) at rehearsal scale in a real QEMU guest.

Nothing here is a stand-in. One sshd on loopback plays the AE host (this machine); the claim
``ozz/lmbench-overhead`` runs at rehearsal scale through ``reprobook run``: the host makes a Debian 12 guest
image with debootstrap from Debian's packages (once: it is kept in the workdir, named by its recipe), boots it
with QEMU on Debian's own kernel (KVM where the host's can run a standard guest, QEMU's emulation, TCG,
otherwise), reaches it over SSH on the port QEMU forwards through the engine's guest path (``rb_guest``, the
guest's host key trusted on first use and kept in the run's directory), uploads the patched LMBench, builds
it there and runs its system-call, select and process-creation benchmarks, copies the results back and
powers the guest off; reprobook fetches and parses them. The instrumented kernel is not run (its source and
compiler cannot be had here), so the verdict is inconclusive and says why.

It needs root (debootstrap; the packages step installs QEMU and debootstrap with apt), the git mirror
``../shared/git`` and network access to Debian's archive for the first image. The workdir is kept in
``$REPROBOOK_LIVE_DIR`` (default ``/var/tmp/reprobook-live-guest``), so a second run finds the image; a
summary (step times) is printed and written to ``summary.json`` there. The run is recorded in the project's
run store, so ``make book`` afterwards shows it on the claim's page.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from reprobook.core.config import load_project
from reprobook.core.loaders import load
from reprobook.core.runs import RunStore
from reprobook.papers.ozz import lmbench
from reprobook.papers.ozz.loaders import phases
from reprobook.sources import from_run
from tests.integration.conftest import ROOT
from tests.support.live import (REPROBOOK, latest_rehearsal, live_dir, needs_mirror, needs_root, opt_in,
                                project_store_env, write_hosts)
from tests.support.live import project_runs  # noqa: F401 - autouse: each test reads the project's run store
from tests.support.sshd import SshTestbed, free_port

pytestmark = [pytest.mark.ssh, pytest.mark.timeout(3600)]
LIVE_DIR = live_dir("/var/tmp/reprobook-live-guest")
CLAIM = "ozz/lmbench-overhead"


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    opt_in("REPROBOOK_LIVE_GUEST", "`make live-guest` makes a Debian guest image, boots it with QEMU and runs "
                                   "LMBench in it (about 20 minutes the first time, 7 once the image is made, on two "
                                   "busy cores)")
    needs_root("debootstrap makes the guest image, and apt installs QEMU")
    needs_mirror("intel/lmbench", "casys-kaist/ozz_artifact")
    LIVE_DIR.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path_factory.mktemp("guest")
    with SshTestbed(tmp / "ssh") as bed:
        bed.add_host("ozz-ae", "127.0.0.92")
        workdir = LIVE_DIR / "work"
        # the CLI's runs go to the project's run store, so that `make book` afterwards shows them on the claim's page
        with project_store_env(write_hosts(tmp / "hosts.yaml", "ozz-ae", workdir), bed) as env:
            yield {"bed": bed, "workdir": workdir, "env": env, "tmp": tmp}


def _cli(host, *args: str, timeout: float = 3000) -> subprocess.CompletedProcess:
    return subprocess.run(REPROBOOK + list(args), capture_output=True, text=True, timeout=timeout, env=host["env"],
                          cwd=ROOT)


def _qemu_running(pid_file: Path) -> bool:
    try:
        pid = int(pid_file.read_text())
    except (OSError, ValueError):
        return False
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() == "qemu-system-x86"
    except OSError:
        return False


def test_the_rehearsal_boots_a_real_guest_and_brings_back_real_lmbench_results(host):
    project = load_project(ROOT)
    claim = project.claim(CLAIM)
    store = RunStore(project.settings.runs_dir)
    images = host["workdir"] / "guest-images"
    cached = any(images.glob("debian-12-*/disk.img"))
    port = free_port()
    t0 = time.monotonic()
    res = _cli(host, "run", CLAIM, "--source", "live", "--host", "ozz-ae", "-p", "scale", "rehearsal",
               "-p", "guest_port", str(port), "--new", "-q")
    elapsed = time.monotonic() - t0
    out = res.stdout + res.stderr
    assert res.returncode == 3, out  # inconclusive: the instrumented kernel is not run here
    assert f"{CLAIM}: INCONCLUSIVE" in res.stdout, out

    run = latest_rehearsal(store, claim)
    m = run.manifest
    assert m["status"] == "succeeded" and m["exit_code"] == 0 and m["verdict"] == "inconclusive", m.get("status")
    facts = m["host_facts"]["ozz-ae"]
    accel = "kvm" if facts["kvm"] else "tcg"
    kinds = {d["kind"]: d["what"] for d in m["deviations"]}
    assert "Debian 12's own kernel" in kinds["kernel"] and "the instrumented (OEMU) kernel is not run" in kinds["kernel"]
    if accel == "tcg":  # the host's KVM cannot run a standard guest: the run adapted, and says so
        assert [a["set"] for a in m["adapted"]] == [{"accel": "tcg"}], m.get("adapted")
        assert "QEMU emulates the guest (TCG)" in kinds["machine"]
    else:
        assert "machine" not in kinds and not m.get("adapted")

    log = (run.path / "log.txt").read_text()
    assert re.search(rf"booting Debian's kernel from \S+ with QEMU \({accel}, \d CPUs, 2 GiB\)", log), log
    assert re.search(r"the guest is up: rb-guest, kernel \d+\.\d+\.\d+-\d+-amd64", log), log
    assert ("the guest image is made already" in log) == cached
    assert "the guest is down" in log
    remote = host["workdir"] / ".reprobook" / "runs" / run.id
    known = (remote / "guest_known_hosts").read_text()  # the guest's host key, trusted on first use, kept with the run
    assert re.search(rf"^\[localhost\]:{port} ssh-ed25519 ", known, re.M), known  # guest_host is localhost
    assert not _qemu_running(remote / "qemu-baseline.pid")

    # real LMBench results, parsed: the processes section of the baseline (Debian's kernel) only
    (summary,) = run.files("summary")
    (raw,) = run.files("results")
    printed, derived = lmbench.read_summary(summary), lmbench.summarise([raw])
    lmbench.agree(printed, derived, file=summary)
    frame = load(claim, from_run(claim, run))
    assert set(frame["setting"]) == {"baseline"} and "processes" in set(frame["section"])
    proc = frame[frame["section"] == "processes"].set_index("column")["value"]
    for column in ("null call", "null I/O", "stat", "open clos", "slct TCP", "fork proc", "exec proc", "sh proc"):
        assert proc[column] > 0, (column, proc)
    assert proc["fork proc"] > proc["null call"]
    (config,) = run.files("config")
    recorded = dict(line.split("=", 1) for line in config.read_text().splitlines() if "=" in line)
    assert (recorded["BENCHMARK_OS"], recorded["BENCHMARK_SYSCALL"], recorded["BENCHMARK_PROC"],
            recorded["BENCHMARK_CTX"]) == ("NO", "YES", "YES", "NO")
    verdict = json.loads((run.path / "verdict.json").read_text())
    assert {c["verdict"] for c in verdict["checks"]} == {"inconclusive"}
    assert all("the OEMU kernel is not run here" in c["reason"] for c in verdict["checks"]), verdict["checks"]

    steps = phases(from_run(claim, run)).set_index("step")
    secs = {name: steps.loc[i, "seconds"] for i, name in steps["name"].items()}
    image_s = next(v for k, v in secs.items() if k.startswith("guest=debian: make the Debian 12 guest image"))
    boot_s = next(v for k, v in secs.items() if k.startswith("baseline: boot"))
    build_s = next(v for k, v in secs.items() if k.startswith("baseline, in the guest: build LMBench"))
    first_s = next(v for k, v in secs.items() if k.startswith("baseline, in the guest: first LMBench run"))
    summary_json = {"run": run.id, "accel": accel, "image": "cached" if cached else "made", "whole_s": round(elapsed),
                    "image_s": image_s, "boot_s": boot_s, "build_s": build_s, "lmbench_s": first_s,
                    "processes_us": {k: float(v) for k, v in proc.items()}}
    (LIVE_DIR / "summary.json").write_text(json.dumps(summary_json, indent=1) + "\n")
    print(f"\nozz/lmbench-overhead rehearsal in a real guest ({accel}, image {summary_json['image']}): whole "
          f"{elapsed:.0f} s; image {image_s:.0f} s, boot {boot_s:.0f} s, LMBench build {build_s:.0f} s, LMBench "
          f"run {first_s:.0f} s; processes (µs): " + ", ".join(f"{k} {v:g}" for k, v in proc.items()))


def test_a_stopped_run_leaves_no_guest_behind(host):
    """The guest goes down with the job also when the job does not end well: here it is cancelled once the guest is up."""
    project = load_project(ROOT)
    claim = project.claim(CLAIM)
    store = RunStore(project.settings.runs_dir)
    if not any((host["workdir"] / "guest-images").glob("debian-12-*/disk.img")):
        pytest.skip("the guest image is made by the test above")
    before = {r.id for r in store.runs(claim)}
    port = free_port()
    client = subprocess.Popen(REPROBOOK + ["run", CLAIM, "--source", "live", "--host", "ozz-ae", "-p", "scale",
                                           "rehearsal", "-p", "guest_port", str(port), "--new", "-q"],
                              env=host["env"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 600
        run = None
        while time.monotonic() < deadline:
            run = next((r for r in store.runs(claim) if r.id not in before), None)
            log = (host["workdir"] / ".reprobook" / "runs" / run.id / "log") if run else None
            if log and log.exists() and "the guest is up" in log.read_text(errors="replace"):
                break
            time.sleep(3)
        else:
            pytest.fail("the guest did not come up within 10 minutes")
        pid_file = host["workdir"] / ".reprobook" / "runs" / run.id / "qemu-baseline.pid"
        assert _qemu_running(pid_file)
        res = _cli(host, "cancel", run.id, timeout=120)
        assert res.returncode == 0, res.stdout + res.stderr
        deadline = time.monotonic() + 60
        while _qemu_running(pid_file) and time.monotonic() < deadline:
            time.sleep(2)
        assert not _qemu_running(pid_file), "QEMU outlived the cancelled run by a minute"
        assert store.load(run.id).status == "cancelled"
    finally:
        client.kill()
        client.wait(30)
