"""OPT-IN (``make live-verus-nr``): Verus's node replication (Fig 10) at rehearsal scale, built and run for real.

Nothing here is a stand-in. One sshd on loopback plays the host; its ``git_url_rewrites`` send GitHub's URLs to the
git mirror ``../shared/git``. The claim ``verus/node-replication`` runs at rehearsal scale through its notebook:
the host checks out verified-node-replication at the guide's commit with the verus submodule (not IronSync's two,
which cannot be reached here), applies the recorded patch to normal pages, installs Debian's urcu, hwloc and
libclang, builds Verus-NR (``benchmarks/verified``) and the unverified NR (``benchmarks/upstream``, node-replication
0.1.1 from crates.io) with rustup's stable toolchain, and runs both with the benchmark's own command line at the
host's CPU count of threads, at 0, 10 and 100 % writes, twice each. The page's verdict is checked against one
worked out here from the JSON records the benchmark wrote; the command line then judges the same run again. A
second test asks for 1 GiB huge pages (``pages=huge``): the run step reserves them if the host can, and gives back
what it took, whether the run goes on or stops.

It needs root (apt, huge pages), cargo with rustup's ``stable``, the git mirror (``$REPROBOOK_GIT_MIRROR`` when not
``../shared/git``) and, measured on two busy cores, 18 minutes the first time (the cargo builds: crates from the
package registry into a cargo home of its own), 9 once built: each run measures again. The workdir
and the cargo home are kept in ``$REPROBOOK_LIVE_DIR`` (default ``/var/tmp/reprobook-live-verus-nr``); a summary
(step times, the table, the verdict) is printed and written to ``summary.json`` there. The run goes to the project's
run store, so ``make book`` afterwards shows it in the page's "latest rehearsal" section.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from reprobook import api
from reprobook.core.config import load_project
from reprobook.core.loaders import load
from reprobook.core.runs import RunStore
from reprobook.sources import from_run
from tests.integration.conftest import ROOT
from tests.support.live import (REPROBOOK, latest_rehearsal, live_dir, needs_cargo, needs_mirror, needs_root, opt_in,
                                page_text, project_store_env, step_times, write_hosts, write_summary)
from tests.support.live import project_runs  # noqa: F401 - autouse: each test reads the project's run store
from tests.support.sshd import SshTestbed

pytestmark = [pytest.mark.ssh, pytest.mark.timeout(3600)]
LIVE_DIR = live_dir("/var/tmp/reprobook-live-verus-nr")
CLAIM = "verus/node-replication"
COMMIT = "341be41a31cfc5c7539f8b78a65f166a06251d02"
HOST = "nr-host"
HUGE = Path("/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages")


@pytest.fixture(scope="module")
def nr(tmp_path_factory):
    opt_in("REPROBOOK_LIVE_VERUS_NR", "`make live-verus-nr` builds Verus-NR and NR and runs them (about 18 minutes)")
    needs_root("Debian's urcu, hwloc and libclang are installed, and huge pages reserved")
    needs_mirror("verus-lang/verified-node-replication.git", "verus-lang/verus.git")
    needs_cargo("the host builds the benchmarks with rustup's stable toolchain")
    LIVE_DIR.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path_factory.mktemp("nr")
    with SshTestbed(tmp / "ssh") as bed:
        bed.add_host(HOST, "127.0.0.94")
        workdir = LIVE_DIR / "work"
        # a cargo home of its own (kept for the next run); RUSTUP_AUTO_INSTALL=0: a step that forgot the toolchain
        # override fails at once instead of downloading the pinned 1.76
        hosts = write_hosts(tmp / "hosts.yaml", HOST, workdir,
                            env={"CARGO_HOME": str(LIVE_DIR / "cargo-home"), "RUSTUP_AUTO_INSTALL": "0"})
        # the runs go to the project's run store, so that `make book` afterwards shows the run on the claim's page
        with project_store_env(hosts, bed):
            yield {"workdir": workdir, "tmp": tmp}


def _records(path: Path) -> list[dict]:
    """The benchmark's own JSON records, read with the standard library (not the project's loader)."""
    return json.loads(path.read_text())


def test_the_rehearsal_builds_both_implementations_runs_them_and_the_page_judges_them(nr):
    import papermill as pm

    project = load_project(ROOT)
    claim = project.claim(CLAIM)
    store = RunStore(project.settings.runs_dir)
    huge_before = HUGE.read_text() if HUGE.exists() else None
    t0 = time.monotonic()
    out = nr["tmp"] / "node-replication.ipynb"
    pm.execute_notebook(str(ROOT / "notebooks" / "verus" / "node-replication.ipynb"), str(out),
                        parameters={"source": "live", "host": HOST, "scale": "rehearsal", "new_run": True},
                        cwd=str(ROOT / "notebooks" / "verus"), progress_bar=False, kernel_name="python3")
    notebook_s = time.monotonic() - t0
    run = latest_rehearsal(store, claim)
    m = run.manifest
    assert m["status"] == "succeeded" and m["source"] == "live", m.get("status")
    assert m["parameters"]["pages"] == "normal" and m["parameters"]["repetitions"] == 2
    assert m["requirement_shortfalls"] == [], m["requirement_shortfalls"]   # the rehearsal's own requirements
    kinds = [d["kind"] for d in m["deviations"]]
    assert {"toolchain", "not run here", "machine", "harness", "patch"} <= set(kinds), kinds
    diffs = "".join(d.get("diff") or "" for d in m["deviations"])
    assert diffs.count("+        let mapping = alloc(3 * ONE_GIB, 4096);") == 2, diffs
    checkout = nr["workdir"] / "verified-node-replication"
    assert m["checkouts"][str(checkout)] == COMMIT
    # the verus submodule came; IronSync's two did not (nothing tried to fetch them)
    assert (checkout / "verus" / "source" / "builtin" / "Cargo.toml").is_file()
    assert not any((checkout / "benchmarks" / "ironsync" / "ironsync-osdi2023").glob("*"))
    assert HUGE.exists() is False or HUGE.read_text() == huge_before   # pages=normal: no huge page reserved

    # the job's log: every step ran, the toolchain named, both implementations at each point
    log = (nr["workdir"] / ".reprobook" / "runs" / run.id / "log").read_text()
    steps = step_times(log)
    assert "### reprobook: all steps done" in log
    assert re.search(r"### reprobook toolchain: rust: rustc 1\.\d+", log), log[-3000:]
    assert "patch nr-normal-pages.patch: applied" in log
    cpus = os.cpu_count() or 1
    threads = [cpus]   # threads=auto at rehearsal scale: the host's CPU count
    for impl in ("verified", "upstream"):
        for t in threads:
            assert f"{impl}: {t} thread(s), 0 % reads, run 2 of 2" in log, log[-3000:]

    # the files the benchmark wrote, read here without the project's loader
    files = {Path(f).name: Path(f) for f in run.files("data")}
    assert set(files) == {"data-verified.json", "data-upstream.json"}, files
    verified, upstream = _records(files["data-verified.json"]), _records(files["data-upstream.json"])
    assert len(verified) == len(upstream) == 3 * 2 * len(threads)
    assert all(r["bench_name"].startswith("vnr_vspace-") for r in verified)
    assert all(r["bench_name"].startswith("nr_vspace-") for r in upstream)
    assert {r["n_replicas"] for r in verified + upstream} == {1}   # one NUMA node here: one replica
    mops = {}
    for system, records in (("Verus-NR", verified), ("NR", upstream)):
        for r in records:
            mops.setdefault((system, 100 - r["reads_pct"], r["n_threads"]), []).append(r["ops_per_s"] / 1e6)
    assert all(v > 0 for vs in mops.values() for v in vs), mops

    measured = load(claim, from_run(claim, run))
    assert set(measured["system"]) == {"Verus-NR", "NR"}
    assert sorted(set(measured["threads"])) == threads and sorted(set(measured["write_pct"])) == [0, 10, 100]
    assert set(measured["run"]) == {1, 2}
    for (system, w, t), values in mops.items():
        got = measured[(measured["system"] == system) & (measured["write_pct"] == w) & (measured["threads"] == t)]
        assert sorted(got["mops"]) == pytest.approx(sorted(values)), (system, w, t)

    # the verdict: the side-by-side check worked out here from the records; the other two left inconclusive
    mean = {k: sum(v) / len(v) for k, v in mops.items()}
    ratios = {(w, t): mean["Verus-NR", w, t] / mean["NR", w, t] for (s, w, t) in mean if s == "Verus-NR"}
    margin = min(2 / max(r, 1 / r) - 1 for r in ratios.values())
    verdict = api.check(claim, measured, from_run(claim, run))
    side, ironsync, scaling = verdict.checks
    assert "cannot be judged" not in side.reason and side.margin == pytest.approx(margin, abs=1e-9), side.reason
    assert side.verdict.value in ("holds", "inconclusive") if margin > 0 else side.verdict.value in ("fails", "inconclusive")
    assert ironsync.verdict.value == "inconclusive" and "a rehearsal does not run IronSync-NR" in ironsync.reason
    assert scaling.verdict.value == "inconclusive" and "needs 2 NUMA nodes, has 1" in scaling.reason, scaling.reason
    expected = "fails" if side.verdict.value == "fails" else "inconclusive"
    assert verdict.verdict.value == expected

    page = page_text(out)
    shown = re.search(r"Verdict: <b[^>]*>([a-z ]+)</b>", page)
    assert shown and shown.group(1) == expected, page[:3000]
    assert "Scale of the run: <b>rehearsal</b>" in page
    assert "IronSync-NR is not run" in page and "normal 4 KiB pages" in page

    # the command line judges the recorded run again: nothing runs on the host again
    before = (nr["workdir"] / ".reprobook" / "runs" / run.id / "log").stat().st_mtime_ns
    ids = sorted(r.id for r in store.runs(claim))
    t1 = time.monotonic()
    cli = subprocess.run(REPROBOOK + ["run", CLAIM, "--source", run.id, "-p", "scale", "rehearsal", "-q"],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    cli_s = time.monotonic() - t1
    assert f"{CLAIM}: {expected.upper()}" in cli.stdout, cli.stdout + cli.stderr
    assert sorted(r.id for r in store.runs(claim)) == ids
    assert (nr["workdir"] / ".reprobook" / "runs" / run.id / "log").stat().st_mtime_ns == before

    table = {f"{s} {w}% writes, {t} thread(s)": [round(x, 3) for x in v] for (s, w, t), v in sorted(mops.items())}
    summary = {"run": run.id, "notebook_s": round(notebook_s), "cli_again_s": round(cli_s), "verdict": expected,
               "side_by_side": {"verdict": side.verdict.value, "margin": round(side.margin, 3),
                                "ratios": {f"{w}% writes, {t} thread(s)": round(r, 3) for (w, t), r in ratios.items()}},
               "steps_s": {f"{s.step} {s.name[:60]}": s.seconds for s in steps}, "mops": table}
    write_summary(LIVE_DIR / "summary.json", summary)


def test_huge_pages_are_reserved_only_for_the_run_and_given_back(nr):
    """pages=huge at rehearsal scale: the step reserves 3 GiB of 1 GiB pages for the one replica and gives back what
    it took, whether the host could grant them (the run goes on) or not (the run stops and says so)."""
    if not HUGE.exists():
        pytest.skip(f"this kernel has no 1 GiB huge pages ({HUGE})")
    project = load_project(ROOT)
    claim = project.claim(CLAIM)
    store = RunStore(project.settings.runs_dir)
    before = HUGE.read_text()
    cli = subprocess.run(REPROBOOK + ["run", CLAIM, "--source", "live", "--host", HOST, "-p", "scale", "rehearsal",
                                      "-p", "pages", "huge", "-p", "threads", "1", "-p", "seconds", "1",
                                      "-p", "repetitions", "1", "--new", "-q"],
                         capture_output=True, text=True, timeout=1800, cwd=ROOT)
    assert HUGE.read_text() == before, "the run did not give its huge pages back"
    runs = [r for r in store.runs(claim) if r.manifest.get("parameters", {}).get("pages") == "huge"]
    assert runs, f"no run with pages=huge was recorded: {cli.stdout}{cli.stderr}"
    run = latest_rehearsal(store, claim, pages="huge")
    log = (nr["workdir"] / ".reprobook" / "runs" / run.id / "log").read_text()
    assert f"1 GiB huge pages given back: {before.strip()} reserved, as before the run" in log, log[-3000:]
    assert "patch nr-normal-pages.patch: taken back" in log
    if run.manifest["status"] == "succeeded":
        assert "reserved 3 1 GiB huge pages" in log and cli.returncode in (0, 1, 3)
        assert len(_records(next(Path(f) for f in run.files("data") if Path(f).name == "data-verified.json"))) == 3
    else:
        assert "of the 3 1 GiB huge pages this run needs" in log and "run with -p pages normal" in log, log[-3000:]
        assert cli.returncode != 0
    print(f"\npages=huge: {run.manifest['status']}; huge pages before and after: {before.strip()}")
