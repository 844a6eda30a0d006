"""OPT-IN (``make live-pesto``): Pesto and TAPIR for real, built from source and run through the authors' harness.

Nothing here is a stand-in. The project's own claims ``pesto/basil-workloads`` (TAPIR on Retwis),
``pesto/inconsistency`` (Pesto's U Ideal config) and ``pesto/point-scan`` (Pesto's point reads, scans and
conditional scans over 10 and 100 rows), at their rehearsal scale, run on a loopback cluster of four real sshd hosts on this machine, named as
the harness names them (``control``, ``us-east-1-0``, ``client-0-0``, ``client-0-1``): the control host
checks out Pequin at the pinned commit from the local mirror, installs the Debian packages and the
libraries Debian lacks, builds the server and the benchmark client (about 45 minutes on two cores the
first time; the compiler cache and the kept workdir make a second run take minutes), and runs the
harness on the configs derived for the cluster. The runs are recorded in the project's run store, so
``make book`` afterwards shows them on the Pesto pages.

It needs root (packages, ``/usr/local``, and the server's name in ``/etc/hosts``, which the replica
binds to; the block added is removed at the end), the git mirror beside the project, and time. The
workdir is kept in ``$REPROBOOK_LIVE_DIR`` (default ``/var/tmp/reprobook-live-pesto``). A summary
(per step times, throughput and latency of each point, verdicts) is printed and written to
``summary.json`` there.

The second test cuts a real run in the middle: the reprobook process following it is killed while the
harness runs its second client count, and a client host's sshd is restarted with its sessions (so the
benchmark clients running there die with them); the run is then resumed by id and must finish
without running the finished client count again.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from reprobook.api import check
from reprobook.core.config import load_project
from reprobook.errors import ExperimentError
from reprobook.remote.live import cancel, perform, resume
from reprobook.core.loaders import load
from reprobook.sources import from_run
from reprobook.core.runs import RunStore
from tests.integration.conftest import GIT_MIRROR, ROOT, _wait_for
from tests.integration.test_pequin_harness import REHEARSAL_CHECKS
from tests.support.sshd import SshTestbed

pytestmark = [pytest.mark.ssh, pytest.mark.timeout(4 * 3600)]
LIVE_DIR = Path(os.environ.get("REPROBOOK_LIVE_DIR", "/var/tmp/reprobook-live-pesto"))
HOSTS = {"control": "127.0.0.100", "us-east-1-0": "127.0.0.101", "client-0-0": "127.0.0.102", "client-0-1": "127.0.0.103"}
MARK = "# reprobook live-pesto: the loopback cluster's names (removed when the run ends)"
_STEP = re.compile(r"^### reprobook step (\S+): (.*?)(?: \(expected .*\))?(?: \[point .*\])?$")
FOURTH = r"^\S*/bin-nfs/bin/benchmark --client_id 3 "
"""The fourth benchmark client itself (taskset execs it), not the ssh or shell commands that name it."""
_DONE = re.compile(r"^### reprobook: step (\S+) done in (\d+) s")


@pytest.fixture(scope="module")
def cluster():
    if os.environ.get("REPROBOOK_LIVE_PESTO") != "1":
        pytest.skip("opt-in: `make live-pesto` builds Pequin from source (about 45 minutes) and runs it")
    if os.geteuid() != 0:
        pytest.skip("needs root: Debian packages, libraries in /usr/local, the server's name in /etc/hosts")
    if not (GIT_MIRROR / "fsuri" / "Pequin-Artifact").is_dir():
        pytest.fail(f"the git mirror {GIT_MIRROR}/fsuri/Pequin-Artifact is absent")
    LIVE_DIR.mkdir(parents=True, exist_ok=True)
    shims = LIVE_DIR / "shims"
    shims.mkdir(exist_ok=True)
    # the harness runs `sudo disable_HT.sh`, `sudo rm -rf /dev/shm/*` ... on its hosts: all this very machine
    (shims / "sudo").write_text('#!/bin/sh\necho "(loopback host: sudo $* skipped)" >&2\n')
    (shims / "sudo").chmod(0o755)
    path = f"{shims}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

    def stop(signum, frame):  # a `kill` of make or pytest cleans up as Ctrl-C does: runs cancelled, sshd stopped
        raise KeyboardInterrupt(f"signal {signum}")
    previous = signal.signal(signal.SIGTERM, stop)
    _names(add=True)
    started: list[str] = []
    try:
        with SshTestbed(LIVE_DIR / "ssh") as bed:
            # isolated: the harness's `ps aux | grep -i server | ... | xargs kill -9` stays on each host's own
            # processes instead of reaching every "server" on this machine (a Jupyter server, say)
            for name, addr in HOSTS.items():
                bed.add_host(name, addr, extra_config=[f"SetEnv PATH={path}"], isolated=True)
            hosts = {"hosts": {n: {"ssh": n, "workdir": str(LIVE_DIR / "work" / n)} for n in HOSTS},
                     "clusters": {"rehearsal": {"roles": {"control": ["control"], "server": ["us-east-1-0"],
                                                          "client": ["client-0-0", "client-0-1"]}}}}
            hosts["hosts"]["control"]["git_url_rewrites"] = {"https://github.com/": f"{GIT_MIRROR}/"}
            hosts["hosts"]["control"]["env"] = {"RB_SSH_CONFIG": str(bed.ssh_config_path)}
            (LIVE_DIR / "hosts.yaml").write_text(yaml.safe_dump(hosts))
            env = {"REPROBOOK_ROOT": str(ROOT), "REPROBOOK_HOSTS": str(LIVE_DIR / "hosts.yaml"),
                   "REPROBOOK_SSH_CONFIG": str(bed.ssh_config_path),
                   "REPROBOOK_GIT_BASE_URL": f"file://{GIT_MIRROR}/"}
            old = {k: os.environ.get(k) for k in env}
            os.environ.update(env)
            project = load_project(ROOT)
            try:
                yield SimpleNamespace(project=project, bed=bed, started=started)
            finally:
                _cancel_unfinished(project, started)
                for k, v in old.items():
                    os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    finally:
        _names(add=False)
        signal.signal(signal.SIGTERM, previous)


def _cancel_unfinished(project, run_ids: list[str]) -> None:
    """Runs this module started that did not end (the test failed or was interrupted): their jobs stopped and
    their hosts' holds released, before the testbed goes."""
    store = RunStore(project.settings.runs_dir)
    for rid in run_ids:
        try:
            if store.load(rid).status not in ("succeeded", "failed", "cancelled"):
                cancel(project, rid)
                print(f"live-pesto: run {rid} cancelled (it had not ended)")
        except Exception as exc:  # noqa: BLE001 - clean-up goes on; say what could not be done
            print(f"live-pesto: could not cancel run {rid}: {exc}")


def _names(*, add: bool) -> None:
    """The cluster's names in /etc/hosts (the replica binds to its name; CloudLab's DNS has them), or taken out."""
    hosts = Path("/etc/hosts")
    lines = hosts.read_text().splitlines()
    if MARK in lines:
        i = lines.index(MARK)
        lines = lines[:i] + lines[i + 1 + len(HOSTS):]
    if add:
        lines += [MARK, *(f"{addr} {name}" for name, addr in HOSTS.items())]
    hosts.write_text("\n".join(lines) + "\n")


def _step_times(log: str) -> list[dict]:
    steps, names = [], {}
    for line in log.splitlines():
        m = _STEP.match(line)
        if m:
            names[m.group(1).split("/")[0]] = m.group(2)  # "5/10" or "10-1/10"
            continue
        m = _DONE.match(line)
        if m:
            steps.append({"step": m.group(1), "name": names.get(m.group(1), "")[:90], "seconds": int(m.group(2))})
    return steps


def test_tapir_and_pesto_built_from_source_and_run_through_the_authors_harness(cluster):
    project = cluster.project
    attempt = {"started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "claims": {}}
    for claim_id in ("pesto/basil-workloads", "pesto/inconsistency", "pesto/point-scan"):
        claim = project.claim(claim_id)
        t0 = time.monotonic()
        run = perform(project, claim, "rehearsal", {"scale": "rehearsal"}, new=True,
                      progress=True, poll_s=5, on_run=lambda r: cluster.started.append(r.id))
        wall = time.monotonic() - t0
        log = (run.path / "log.txt").read_text()
        assert run.status == "succeeded", log[-4000:]
        outputs = from_run(claim, run)
        data = load(claim, outputs)
        verdict = check(claim, data, outputs)
        attempt["claims"][claim_id] = {
            "run": run.id, "wall_s": round(wall), "steps": _step_times(log),
            "adapted": run.manifest.get("adapted", []), "points": json.loads(data.to_json(orient="records")),
            "checks": [(r.what, r.verdict.value, r.reason) for r in verdict.checks]}
        print(f"\n{claim_id}: {run.id}, {wall:.0f} s")
        for s in _step_times(log):
            print(f"  step {s['step']}: {s['seconds']} s  {s['name']}")
        print(data.drop(columns=["directory"]).round(2).to_string())
        for r in verdict.checks:
            print(f"  {r.verdict.value}: {r.what}")
        judged = [r for r in verdict.checks if r.what.startswith(REHEARSAL_CHECKS)]
        assert [r.verdict.value for r in judged[:2]] == ["holds", "holds"], verdict
        if claim_id != "pesto/basil-workloads":  # Pesto: the server's own count beside the clients'
            assert judged[2].verdict.value == "holds", judged[2].reason
        assert (data["tput_tx_per_s"] > 0).all()
    _record(attempt)


def test_pesto_on_tpcc_commits_at_every_client_count(cluster):
    """#24, item 5: TPC-C at one warehouse once stalled after about 600 commits (the clients never printed
    "Completed"). The sample runs' TPCC config at rehearsal scale: its data generated here and shipped, and every
    point must commit, with the harness's, the clients' and the server's counts in agreement."""
    project = cluster.project
    attempt = {"started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "claims": {}}
    claim = project.claim("pesto/sample-runs")
    t0 = time.monotonic()
    run = perform(project, claim, "rehearsal", {"scale": "rehearsal"}, new=True, progress=True, poll_s=5,
                  on_run=lambda r: cluster.started.append(r.id))
    wall = time.monotonic() - t0
    log = (run.path / "log.txt").read_text()
    assert run.status == "succeeded", log[-4000:]
    outputs = from_run(claim, run)
    data = load(claim, outputs)
    verdict = check(claim, data, outputs)
    attempt["claims"][claim.key] = {
        "run": run.id, "wall_s": round(wall), "steps": _step_times(log), "adapted": run.manifest.get("adapted", []),
        "points": json.loads(data.to_json(orient="records")),
        "checks": [(r.what, r.verdict.value, r.reason) for r in verdict.checks]}
    print(f"\n{claim.key}: {run.id}, {wall:.0f} s")
    for s in _step_times(log):
        print(f"  step {s['step']}: {s['seconds']} s  {s['name']}")
    print(data.drop(columns=["directory"]).round(2).to_string())
    for r in verdict.checks:
        print(f"  {r.verdict.value}: {r.what}")
    _record(attempt)
    judged = [r for r in verdict.checks if r.what.startswith(REHEARSAL_CHECKS)]
    assert [r.verdict.value for r in judged] == ["holds"] * 3, [(r.what, r.reason) for r in judged]
    assert list(data["client_total"]) == [2, 4] and (data["tput_tx_per_s"] > 0).all()


def _record(attempt: dict) -> None:
    summary_path = LIVE_DIR / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {"attempts": []}
    summary["attempts"].append(attempt)
    summary_path.write_text(json.dumps(summary, indent=1))


def test_a_real_run_cut_in_the_middle_resumes_and_finishes(cluster):
    project, bed = cluster.project, cluster.bed
    claim = project.claim("pesto/inconsistency")
    store = RunStore(project.settings.runs_dir)
    before = {r.id for r in store.runs()}
    code = ("from reprobook.core.config import load_project\nfrom reprobook.remote.live import perform\n"
            "p = load_project(); c = p.claim('pesto/inconsistency')\n"
            "perform(p, c, 'rehearsal', {'scale': 'rehearsal'}, new=True, progress=False, poll_s=2)\n")
    t0 = time.monotonic()
    # the follower records in the project's run store, where the first test's runs are (not the test's own)
    env = {**os.environ, "REPROBOOK_RUNS": str(project.settings.runs_dir)}
    follower = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=env)
    try:
        run = _wait_for(lambda: next((r for r in store.runs() if r.id not in before and r.status == "running"), None),
                        timeout=600, what="the run to start")
        cluster.started.append(run.id)
        steps = Path(project.hosts.host("control").workdir) / ".reprobook" / "runs" / run.id / "steps"
        _wait_for(lambda: steps.is_dir() and len(list(steps.glob("*-*.done"))) >= 1, timeout=3 * 3600,
                  what="the first client count done")
        first = sorted(p.name for p in steps.glob("*-*.done"))
        # the second client count under way: its fourth benchmark client (there is none in the first) measuring
        _wait_for(lambda: subprocess.run(["pgrep", "-f", FOURTH], capture_output=True).returncode == 0,
                  timeout=300, what="the second client count's benchmark clients")
        time.sleep(5)
    finally:
        follower.kill()  # the reprobook process following the run goes, at any instant
        follower.wait(timeout=30)
    cut_at = time.monotonic() - t0
    # a client host's sshd restarted with its sessions (the processes started through them run on, their output
    # going to files, as after a dropped connection), and one benchmark client on it killed
    bed.servers["client-0-1"].restart()
    killed = subprocess.run(["pkill", "-KILL", "-f", FOURTH]).returncode == 0
    print(f"\ncut {run.id} at {cut_at:.0f} s: follower killed, client-0-1's sshd restarted, client 3 "
          f"{'killed' if killed else 'already gone'}; done before: {first}")
    t1 = time.monotonic()
    attempts = []
    for _ in range(3):  # following it to its end; the cut point fails on its host; resuming runs it again
        try:
            run = resume(project, run.id, progress=True, poll_s=5)
        except ExperimentError as exc:
            attempts.append(str(exc))
            continue
        if run.status == "succeeded":
            break
    resumed_s = time.monotonic() - t1
    if killed:  # the point that lost a client failed, and was run again
        assert any("finished measuring" in (a or "") for a in attempts) or "finished measuring" in \
            (run.path / "log.txt").read_text(), attempts
    log = (run.path / "log.txt").read_text()
    assert run.status == "succeeded", log[-4000:]
    assert all((steps / name).exists() for name in first)
    if killed:  # launched again: what had finished (the build, the first client count) was skipped
        assert "[skipped: done in an earlier attempt]" in log
    outputs = from_run(claim, run)
    data = load(claim, outputs)
    verdict = check(claim, data, outputs)
    print(data.drop(columns=["directory"]).round(2).to_string())
    for r in verdict.checks:
        print(f"  {r.verdict.value}: {r.what} — {r.reason}")
    # every client count once, the finished one not run again, and all its client processes there
    assert data.groupby(["config", "client_total"]).size().max() == 1 and sorted(set(data["client_total"])) == [2, 4]
    assert (data["client_processes"] == data["client_total"]).all(), data
    assert [r.verdict.value for r in verdict.checks if r.what.startswith(REHEARSAL_CHECKS)] == ["holds"] * 3, verdict
    _record({"started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "cut": {
        "run": run.id, "cut_after_s": round(cut_at), "resumed_in_s": round(resumed_s), "done_before_cut": first,
        "client_killed": killed, "failed_attempts": attempts,
        "points": json.loads(data.to_json(orient="records")),
        "checks": [(r.what, r.verdict.value, r.reason) for r in verdict.checks]}})
