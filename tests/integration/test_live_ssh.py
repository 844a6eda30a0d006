"""The live path against real OpenSSH sshd processes on loopback, with a FIXTURE artifact.

Each test starts its own sshd(s) on 127.0.0.x with throwaway keys, builds a
throwaway project whose paper points at a fixture git repository (served to
the host as its GitHub mirror), and drives reprobook as a user would.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reprobook.remote import jobs
from reprobook.core.config import load_project
from reprobook.errors import ExperimentError, HostBusy, HostKeyError
from reprobook.remote.hosts import open_host
from reprobook.remote.live import perform
from reprobook.core.runs import RunStore
from reprobook.sources import from_run
from reprobook.remote.transfer import sha256_file
from tests.integration.conftest import _wait_for, unavailable
from tests.support import validators
from tests.support.fixture_project import make_project

pytestmark = pytest.mark.ssh
REPROBOOK = [sys.executable, "-m", "reprobook"]


def test_run_survives_killed_client_and_sshd_restart(fixture, bed):
    """Kill the client mid-run, restart sshd, re-attach by id from a new process: nothing is lost."""
    project = load_project(fixture.root)
    store = RunStore(project.settings.runs_dir)
    client = subprocess.Popen(REPROBOOK + ["run", "fixture/validator-throughput", "--source", "live",
                                           "--host", "node1", "-p", "duration", "6", "-q"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    run = _wait_for(lambda: next((r for r in store.runs() if r.status == "running"), None), what="a running run")
    client.send_signal(signal.SIGKILL)  # the evaluator's laptop dies
    client.wait(10)
    rid = run.id
    remote = fixture.workdirs["node1"] / ".reprobook" / "runs" / rid
    assert (remote / "pid").exists()
    assert not (remote / "exit_code").exists(), "the job must still be running after the client died"

    bed.servers["node1"].restart()  # sshd restarts: every session dropped
    time.sleep(0.5)
    assert not (remote / "exit_code").exists()

    attach = subprocess.run(REPROBOOK + ["attach", rid, "-q"], capture_output=True, text=True, timeout=180)
    assert attach.returncode == 0, attach.stdout + attach.stderr
    assert "HOLDS" in attach.stdout
    assert (remote / "exit_code").read_text().strip() == "0"

    run = store.load(rid)
    m = run.manifest
    assert m["status"] == "succeeded" and m["exit_code"] == 0 and m["verdict"] == "holds"
    assert {f["output"] for f in m["files"]} == {"logs", "label"}
    for f in m["files"]:
        assert sha256_file(run.path / f["path"]) == f["sha256"]
    assert m["checkouts"][str(fixture.workdirs["node1"] / "bench")] == fixture.commit
    assert m["checkouts"][str(fixture.workdirs["node1"] / "bench" / "helper")] == fixture.sub_commit
    assert m["host_facts"]["node1"]["cpus"] >= 1 and m["host_facts"]["node1"]["kernel"]
    assert "fixture step 4/4" in (run.path / "log.txt").read_text()
    verdict = json.loads((run.path / "verdict.json").read_text())
    assert verdict["verdict"] == "holds" and rid in verdict["source"]
    # the verdict is computed from the fetched files: 100000 / 34 s = 2941 ops/s for 32-core modify
    from reprobook.api import load
    claim = project.claim("fixture/validator-throughput")
    measured = load(claim, from_run(claim, run))
    row = measured[(measured["op"] == "modify") & (measured["cores"] == 32)]
    assert row["mean_ops_per_s"].iloc[0] == pytest.approx(100000 / 34)
    # its RO-Crate, written when the notebook gave its verdict: roc-validator passes it, and it reads back
    crate = {e["@id"]: e for e in json.loads((run.path / "ro-crate-metadata.json").read_text())["@graph"]}
    for f in m["files"]:
        assert crate[f["path"]]["sha256"] == f["sha256"]
    assert crate["#verdict"]["value"] == "holds" and crate["#verdict"]["description"] == verdict["reason"]
    assert crate["#parameter-duration"]["value"] == "6"
    assert {crate[r["@id"]]["version"] for r in crate["#run"]["object"] if r["@id"].startswith("#repository-")} == {
        fixture.commit}
    host = next(e for e in crate.values() if e.get("@type") == "Thing")
    assert host["name"] == "node1" and crate[f"{host['@id']}-cpus"]["value"] == str(m["host_facts"]["node1"]["cpus"])
    if not validators.available():
        unavailable(f"roc-validator is not installed in {validators.VENV} (make validators)")
    issues = validators.rocrate_issues([run.path], fixture.root.parent / "rocv")[str(run.path)]
    assert not [i for i in issues if i["severity"] == "REQUIRED"], issues


def test_cut_tcp_connection_mid_poll_reconnects(fixture, bed):
    """In-process: the sessions are killed while the job is polled; polling reconnects and the run completes."""
    project = load_project(fixture.root)
    claim = project.claim("fixture/validator-throughput")
    import threading
    killer = threading.Timer(2.0, lambda: bed.servers["node1"].kill_sessions())
    killer.start()
    try:
        run = perform(project, claim, "node1", {"duration": 5}, progress=False, poll_s=0.3)
    finally:
        killer.cancel()
    assert run.status == "succeeded"
    assert len(run.files("logs")) == 2
    run.verify()
    # the same claim, host and parameters again: the recorded run comes back, nothing starts twice
    again = perform(project, claim, "node1", {"duration": 5}, progress=False, poll_s=0.3)
    assert again.id == run.id
    assert len(list((fixture.workdirs["node1"] / ".reprobook" / "runs").iterdir())) == 1


def test_lock_refuses_concurrent_launch_and_relaunch_attaches(fixture):
    project = load_project(fixture.root)
    with open_host(project.hosts.host("node2"), project.settings) as host:
        a, started = jobs.launch(host, "long-run-a", "sleep 30")
        assert started
        with pytest.raises(HostBusy) as err:
            jobs.launch(host, "other-run-b", "echo never")
        assert "long-run-a" in str(err.value) and err.value.holder == "long-run-a"
        again, started = jobs.launch(host, "long-run-a", "sleep 30")
        assert not started and again.status().state == "running"
        st = a.cancel()
        assert st.state == "cancelled"
        b, started = jobs.launch(host, "other-run-b", "echo now")  # the lock went with the cancelled run
        assert started
        assert b.wait(progress=False, poll_s=0.2).state == "succeeded"


def test_failing_remote_command_reports_exit_code_and_saves_partial_outputs(fixture):
    project = load_project(fixture.root)
    claim = project.claim("fixture/validator-throughput")
    with pytest.raises(ExperimentError) as err:
        perform(project, claim, "node2", {"duration": 0.2, "fail": "yes"}, progress=False, poll_s=0.2)
    msg = str(err.value)
    assert "exit code: 7" in msg and "failing on purpose" in msg and "node2" in msg
    run = RunStore(project.settings.runs_dir).runs(claim)[-1]
    assert run.status == "failed" and run.manifest["partial"] is True
    saved = [p.name for p in run.files("logs")]
    assert "out1.txt" in saved  # written before the failure, fetched before the error was raised
    run.verify()


def test_parameters_reach_the_host_literally(fixture):
    project = load_project(fixture.root)
    claim = project.claim("fixture/validator-throughput")
    nasty = "; touch /tmp/reprobook-pwned-$$ $(id) `id` 'q' \"d\" \n rm -rf ~ #"
    run = perform(project, claim, "node1", {"duration": 0.1, "label": nasty}, progress=False, poll_s=0.2)
    assert run.files("label")[0].read_text() == nasty
    assert not any(Path("/tmp").glob("reprobook-pwned-*"))


def test_unknown_and_changed_host_keys_are_refused(tmp_path, bed, monkeypatch):
    bed.add_host("stranger", "127.0.0.4", trust=False)
    known = bed.add_host("known", "127.0.0.5")
    fx = make_project(tmp_path / "fx", {"stranger": "stranger", "known": "known"})
    monkeypatch.setenv("REPROBOOK_SSH_CONFIG", str(bed.ssh_config_path))
    project = load_project(fx.root)
    with open_host(project.hosts.host("stranger"), project.settings) as host:
        with pytest.raises(HostKeyError) as err:
            host.run("true")
    assert "not in known_hosts" in str(err.value) and "SHA256:" in str(err.value)
    assert "trust-host stranger" in str(err.value)
    with open_host(project.hosts.host("known"), project.settings) as host:
        assert host.run("echo ok").stdout.strip() == "ok"
    known.regenerate_host_key()
    with open_host(project.hosts.host("known"), project.settings) as host:
        with pytest.raises(HostKeyError, match="CHANGED"):
            host.run("true")


def test_failed_step_is_resumed_not_restarted(fixture):
    """A run that failed in its benchmark step, launched again, skips the checkout and build it had finished."""
    project = load_project(fixture.root)
    claim = project.claim("fixture/validator-throughput")
    wd = fixture.workdirs["node1"]
    (wd / "fail-once").write_text("")
    with pytest.raises(ExperimentError) as err:
        perform(project, claim, "node1", {"duration": 0.2}, progress=False, poll_s=0.2)
    assert "exit code: 9" in str(err.value) and "fail-once is there" in str(err.value)
    assert (wd / "build-count.txt").read_text().splitlines() == ["built"]
    first = RunStore(project.settings.runs_dir).runs(claim)[-1]
    assert first.status == "failed"

    (wd / "fail-once").unlink()  # the evaluator fixes the cause; same claim, host and parameters
    run = perform(project, claim, "node1", {"duration": 0.2}, progress=False, poll_s=0.2)
    assert run.id == first.id and run.status == "succeeded"
    assert (wd / "build-count.txt").read_text().splitlines() == ["built"], "the finished build step ran again"
    log = (run.path / "log.txt").read_text()
    assert "step 1/3: check out bench [skipped: done in an earlier attempt]" in log
    assert "step 2/3: fixture build (counts its runs in build-count.txt) [skipped: done in an earlier attempt]" in log
    assert "step 3/3: fixture benchmark" in log and "skipped" not in log.split("step 3/3")[1].splitlines()[0]
    remote = wd / ".reprobook" / "runs" / run.id
    assert (remote / "attempt-1" / "exit_code").read_text().strip() == "9"  # the failed attempt is kept
    assert len(run.files("logs")) == 2

    # other parameters are another run: everything from scratch
    perform(project, claim, "node1", {"duration": 0.3}, progress=False, poll_s=0.2)
    assert (wd / "build-count.txt").read_text().splitlines() == ["built", "built"]


def test_a_fresh_run_that_failed_is_resumed_by_id_from_the_command_line(fixture):
    """A run started with --new has an id its parameters do not give: `attach RUN_ID --resume` launches it again,
    and it skips what it had finished; plain `attach` only follows it (and says it failed)."""
    project = load_project(fixture.root)
    claim = project.claim("fixture/validator-throughput")
    wd = fixture.workdirs["node1"]
    (wd / "fail-once").write_text("")
    env = {**os.environ, "REPROBOOK_ROOT": str(fixture.root)}
    cut = subprocess.run(REPROBOOK + ["run", claim.key, "--host", "node1", "--source", "live", "--new", "-q",
                                      "-p", "duration", "0.2"], capture_output=True, text=True, env=env, timeout=180)
    assert cut.returncode == 2 and "exit code: 9" in cut.stderr, cut.stderr
    first = RunStore(project.settings.runs_dir).runs(claim)[-1]
    assert first.status == "failed" and first.manifest["parameters"]["duration"] == 0.2

    (wd / "fail-once").unlink()
    again = subprocess.run(REPROBOOK + ["attach", first.id, "-q"], capture_output=True, text=True, env=env, timeout=180)
    assert again.returncode == 2 and RunStore(project.settings.runs_dir).load(first.id).status == "failed"
    resumed = subprocess.run(REPROBOOK + ["attach", first.id, "--resume", "-q"], capture_output=True, text=True,
                             env=env, timeout=180)
    assert resumed.returncode in (0, 1, 3), resumed.stderr  # a verdict was printed: the run finished
    run = RunStore(project.settings.runs_dir).load(first.id)
    assert run.status == "succeeded" and len(RunStore(project.settings.runs_dir).runs(claim)) == 1
    assert (wd / "build-count.txt").read_text().splitlines() == ["built"], "the finished build step ran again"
    assert "[skipped: done in an earlier attempt]" in (run.path / "log.txt").read_text()
