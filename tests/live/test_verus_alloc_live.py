"""OPT-IN (``make live-verus-alloc``): Verus-mimalloc (Fig 12) built and measured for real at rehearsal scale.

Nothing here is a stand-in. A loopback sshd host, whose ``git_url_rewrites`` send GitHub to the git mirror
``../shared/git``, runs ``reprobook run verus/mimalloc --scale rehearsal``: it checks out Verus (097ac7e) and
verified-memory-allocator (6ee4b4f), applies the three recorded patches, builds the allocator with the host's rustup
``stable`` the way Verus's compile pass builds it, builds the suite's in-tree programs and mimalloc v1.7.7 (cloned by
the authors' ``build-bench-env.sh mi``), and runs the seven buildable benchmarks of the paper under both allocators,
three times, at the host's core count. The verdicts are computed from that run. Then ``verus/macro-stats`` at
rehearsal scale counts the lines of the case studies whose source is mirrored (Verus-mimalloc, NR, the log).

It needs root (apt, when a package is missing), cargo, the git mirror and, for both claims, about 15 minutes cold on
two busy cores (7 warm).
The workdir is kept in ``$REPROBOOK_LIVE_DIR`` (default ``/var/tmp/reprobook-live-verus-alloc``), so that a second
run finds the builds; each run is a new one (``--new``: the benchmarks run again, they are not the earlier run's). A
summary (step times, the table, the verdicts) is printed and written to ``summary-<claim>.json`` there. A checkout
without ``../shared`` beside it (a git worktree) names the mirror with ``REPROBOOK_GIT_MIRROR``. The run is recorded in the project's run store, so ``make book`` afterwards shows it on the claim's page.
"""

from __future__ import annotations

import os
import re
import subprocess
import time

import pytest

from reprobook.core.checks import check_claim
from reprobook.core.config import load_project
from reprobook.core.loaders import load
from reprobook.core.runs import RunStore
from reprobook.sources import from_run
from tests.integration.conftest import ROOT
from tests.support.live import (REPROBOOK, latest_rehearsal, live_dir, needs_cargo, needs_mirror, needs_root, opt_in,
                                project_store_env, step_times, write_hosts, write_summary)
from tests.support.live import project_runs  # noqa: F401 - autouse: each test reads the project's run store
from tests.support.sshd import SshTestbed

pytestmark = [pytest.mark.ssh, pytest.mark.timeout(5400)]
LIVE_DIR = live_dir("/var/tmp/reprobook-live-verus-alloc")
PAPER_SEVEN = ["cfrac", "larsonN-sized", "xmalloc-testN", "cache-scratch1", "cache-scratchN", "glibc-simple",
               "glibc-thread"]


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    opt_in("REPROBOOK_LIVE_VERUS_ALLOC", "`make live-verus-alloc` builds Verus-mimalloc, the suite and mimalloc and "
                                         "runs them (about 15 minutes cold)")
    needs_root("the first step installs Debian's build packages when missing")
    needs_mirror("verus-lang/verus.git", "verus-lang/verified-memory-allocator.git", "microsoft/mimalloc.git")
    needs_cargo("the rehearsal builds Verus-mimalloc with rustup's stable toolchain")
    LIVE_DIR.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path_factory.mktemp("verus-alloc")
    with SshTestbed(tmp / "ssh") as bed:
        bed.add_host("va-host", "127.0.0.94")
        workdir = LIVE_DIR / "work"
        # the runs go to the project's run store, so that `make book` afterwards shows the run on the claim's page
        with project_store_env(write_hosts(tmp / "hosts.yaml", "va-host", workdir), bed):
            yield {"workdir": workdir, "tmp": tmp}


def test_mimalloc_rehearsal_builds_and_runs_both_allocators_and_judges_the_run(live):
    project = load_project(ROOT)
    claim = project.claim("verus/mimalloc")
    store = RunStore(project.settings.runs_dir)
    t0 = time.monotonic()
    cli = subprocess.run(REPROBOOK + ["run", "verus/mimalloc", "--source", "live", "--host", "va-host", "-p", "scale",
                                      "rehearsal", "--allow-insufficient-host", "--new", "-q"],
                         capture_output=True, text=True, timeout=5000, cwd=ROOT)
    seconds = time.monotonic() - t0
    run = latest_rehearsal(store, claim)
    m = run.manifest
    assert m["status"] == "succeeded" and m["source"] == "live", (m.get("status"), cli.stdout[-3000:], cli.stderr[-3000:])
    assert m["parameters"]["procs"] == 0 and m["parameters"]["repetitions"] == 3
    kinds = [d["kind"] for d in m["deviations"]]
    assert kinds.count("patch") == 3 and {"toolchain", "size"} <= set(kinds), kinds
    diffs = "".join(d.get("diff") or "" for d in m["deviations"])
    assert "+    match proc_macro::tracked::env_var(\"VERUSDOC\") {" in diffs
    assert m["checkouts"][str(live["workdir"] / "verus")] == "097ac7ed283ae60375cd9b2b6017b3c629883b2b"

    log = (live["workdir"] / ".reprobook" / "runs" / run.id / "log").read_text()
    steps = step_times(log)
    assert "### reprobook: all steps done" in log
    assert re.search(r"^[0-9a-f]+ T malloc$", log, re.M), "the built library does not define malloc"
    assert "mi: v1.7.7, " in log   # build-bench-env.sh's record of the baseline's version

    measured = load(claim, from_run(claim, run))
    assert sorted(set(measured["run"])) == [1, 2, 3]
    assert set(measured["benchmark"]) == set(PAPER_SEVEN)
    ok = measured[measured["status"] == "ok"]
    # both allocators complete every one of the seven, in each repetition
    assert len(ok) == 2 * 7 * 3, measured[measured["status"] != "ok"]
    assert (ok["seconds"] > 0).all()
    assert measured.attrs["procs"] == os.cpu_count()
    assert "rustc 1." in measured.attrs["toolchain"]

    verdict = check_claim(claim, measured, source=run.id, scale="rehearsal", host_facts=m.get("facts") or {})
    by_what = {r.what: r for r in verdict.checks}
    per_benchmark = next(r for w, r in by_what.items() if w.startswith("on none of"))
    assert per_benchmark.verdict.value in ("holds", "fails", "inconclusive")
    for what, r in by_what.items():
        if r is not per_benchmark:
            assert r.verdict.value == "inconclusive" and "rehearsal scale" in r.reason, (what, r.reason)
    assert f"verus/mimalloc: {verdict.verdict.value.upper()}" in cli.stdout, cli.stdout + cli.stderr

    means = (ok.groupby(["benchmark", "allocator"])["seconds"].agg(["mean", "std"]).round(3).reset_index()
             .to_dict("records"))
    summary = {"run": run.id, "seconds": round(seconds), "verdict": verdict.verdict.value,
               "checks": {w: [r.verdict.value, r.reason] for w, r in by_what.items()},
               "steps_s": {f"{s.step} {s.name[:50]}": s.seconds for s in steps}, "table": means}
    write_summary(LIVE_DIR / "summary-mimalloc.json", summary)


def test_macro_stats_rehearsal_counts_the_mirrored_case_studies_with_verus_line_count(live):
    """After the mimalloc rehearsal (same host and workdir: the allocator's build is found), the macro-stats rehearsal
    builds line_count at 9e6c6b9 and counts the lines of the three case studies whose source is mirrored:
    Verus-mimalloc (the paper's 282 / 13,703 / 3,178), NR and the persistent-memory log."""
    from reprobook.api import shown
    project = load_project(ROOT)
    claim = project.claim("verus/macro-stats")
    store = RunStore(project.settings.runs_dir)
    t0 = time.monotonic()
    cli = subprocess.run(REPROBOOK + ["run", "verus/macro-stats", "--source", "live", "--host", "va-host", "-p",
                                      "scale", "rehearsal", "--allow-insufficient-host", "--new", "-q"],
                         capture_output=True, text=True, timeout=3000, cwd=ROOT)
    seconds = time.monotonic() - t0
    run = latest_rehearsal(store, claim)
    m = run.manifest
    assert m["status"] == "succeeded", (m.get("status"), cli.stdout[-3000:], cli.stderr[-3000:])
    assert m["checkouts"][str(live["workdir"] / "verus-line-count")] == "9e6c6b917399250dd3ac292f7dbc6c3c944e90b1"
    measured = load(claim, from_run(claim, run))
    assert sorted(measured["system"]) == ["Mimalloc", "NR", "P. log"]
    rows = measured.set_index("system")
    row = rows.loc["Mimalloc"]
    assert (row["trusted_loc"], row["proof_loc"], row["code_loc"]) == (282, 13703, 3178)
    assert (rows[["trusted_loc", "proof_loc", "code_loc"]] > 0).all().all()
    assert measured[["time_1core_s", "time_8cores_s", "smt_mb"]].isna().all().all()
    page = shown(measured)
    for i in page.index:
        assert set(page.loc[i, ["time_1core_s", "time_8cores_s", "smt_mb"]]) == {
            "not run here: they need the Verus binary, which needs Rust 1.76 with rustc-dev"}
    verdict = check_claim(claim, measured, source=run.id, scale="rehearsal", host_facts=m.get("facts") or {})
    lines = [r for r in verdict.checks if "lines within 20 %" in r.what]
    # judged on the run's Mimalloc and P. log rows (the page table is not mirrored): holds or fails, from the counts
    assert len(lines) == 3 and all(r.verdict.value in ("holds", "fails") for r in lines), [(r.what, r.reason)
                                                                                          for r in lines]
    assert f"verus/macro-stats: {verdict.verdict.value.upper()}" in cli.stdout, cli.stdout + cli.stderr
    log = (live["workdir"] / ".reprobook" / "runs" / run.id / "log").read_text()
    summary = {"run": run.id, "seconds": round(seconds), "verdict": verdict.verdict.value,
               "checks": {r.what: [r.verdict.value, r.reason] for r in verdict.checks},
               "steps_s": {s.step: s.seconds for s in step_times(log)},
               "counts": {system: {k: int(r[k]) for k in ("trusted_loc", "proof_loc", "code_loc")}
                          for system, r in rows.iterrows()}}
    write_summary(LIVE_DIR / "summary-macro-stats.json", summary)
