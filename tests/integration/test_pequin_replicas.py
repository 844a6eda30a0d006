"""The replica-failure and Basil rehearsals through the authors' real harness, with stand-in binaries, on real sshd hosts.

A failed replica needs replication: ``pesto/failures`` rehearses on one shard of six replicas (f = 1) on six
server hosts with a client node each, thirteen hosts with the control host, and the failure configs keep the
authors' replica 0 failed. The harness must start a replica on every server and a client on every client node,
and the loader must label the points as the authors' curves (FP). Basil's client failures rehearse Basil itself
(Indicus) on one server: the harness's Indicus path, and the loader's Basil labels from the names reprobook gives
the configs it derives (the microbenchmarks' rehearsal takes the same path; its names are tested in
`tests/unit/test_pequin_configs.py`). The set-up is `tests.integration.test_pequin_harness`'s.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from reprobook.core.config import load_project
from reprobook.remote.live import perform
from tests.integration.test_pequin_harness import BASIL_FAILURES, FAILURES, FAST, claim_verdict, standin_cluster

pytestmark = pytest.mark.ssh

SERVERS = ["us-east-1-0", "us-east-1-1", "us-east-1-2", "eu-west-1-0", "eu-west-1-1", "eu-west-1-2"]
CLIENTS = [f"client-{i}-0" for i in range(6)]
SIX = {"control": "127.0.0.130", **{h: f"127.0.0.{131 + i}" for i, h in enumerate(SERVERS + CLIENTS)}}
"""Thirteen addresses of their own (127.0.0.130 to 142): clear of the other harness modules' clusters and of the
CloudLab round trip's hosts (127.0.0.70 to 92)."""
ONE = {"control": "127.0.0.124", "us-east-1-0": "127.0.0.125", "client-0-0": "127.0.0.126", "client-0-1": "127.0.0.127"}


def _cluster(tmp_path, bed, monkeypatch, addresses, roles=None) -> Path:
    env = standin_cluster(tmp_path, bed, addresses, isolated=os.geteuid() == 0, roles=roles)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("REPROBOOK_HOSTS", raising=False)
    return Path(env["REPROBOOK_ROOT"])


def _ok(run):
    assert run.status == "succeeded", (run.manifest.get("error"), (run.path / "log.txt").read_text()[-3000:])


@pytest.mark.timeout(1200)   # one point through the harness on 13 hosts: 100 s idle, 317 s measured beside two suites and a build
def test_six_replicas_one_failed_run_through_the_real_harness_on_thirteen_hosts(tmp_path, bed, monkeypatch):
    root = _cluster(tmp_path, bed, monkeypatch, SIX,
                    {"control": ["control"], "server": SERVERS, "client": CLIENTS})
    project = load_project(root)
    claim = project.claim(FAILURES)
    configs = ["experiment-configs/Pesto/2-Microbenchmarks/3-ReplicaFailure/Uniform-Failure-2.json"]
    run = perform(project, claim, "rehearsal", {**FAST, "clients": [6], "configs": configs}, progress=False,
                  poll_s=0.5)
    _ok(run)
    fp = json.loads((run.path / "inputs" / "Uniform-Failure-2-c6.json").read_text())
    assert fp["fault_tolerance"] == 1 and fp["server_names"] == [SERVERS] and fp["client_nodes_per_server"] == 1
    assert fp["replication_protocol_settings"][0]["simulate_replica_failure"] is True
    verdict, data = claim_verdict(claim, run)
    assert list(data["config"]) == ["Uniform-Failure-2-c6"]
    assert list(data["mode"]) == ["FP"] and list(data["system"]) == ["Pesto"] and (data["tput_tx_per_s"] > 0).all()
    # the harness made one shard of six replicas with f = 1, and ran the six client processes two to a client node,
    # filling the nodes in order (processes_per_node 2)
    point = next(p for p in run.path.rglob(data["directory"].iloc[0]) if (p / "shard.config").is_file())
    shard = (point / "shard.config").read_text().split("\n")
    assert shard[0] == "f 1" and [line.split()[1].split(":")[0] for line in shard if line.startswith("replica ")] == SERVERS
    processes = {p.name.split("-stdout")[0] for p in (point / "out").rglob("client-*-stdout-*.log")}
    assert len(processes) == 6 and {p.rsplit("-", 1)[0] for p in processes} == set(CLIENTS[:3]), processes
    checks = dict(verdict)
    assert checks["the clients commit transactions at every point, with replica 0 failed in the failure configs "
                  "(the harness's statistics)"] == "holds"
    assert checks["the transactions the clients printed, counted by reprobook over the same window, give the "
                  "harness's throughput within 2 % at every point"] == "holds"
    # the knees and their ratios need the paper's cluster
    assert [v for w, v in verdict if w.startswith(("NoFP", "FP"))] == ["inconclusive"] * 3, verdict
    assert any(d["kind"] == "cluster" and "six replicas" in d["what"] for d in run.manifest["deviations"])


def test_basil_runs_through_the_harnesss_indicus_path_and_is_labelled_by_the_authors_names(tmp_path, bed, monkeypatch):
    root = _cluster(tmp_path, bed, monkeypatch, ONE)
    project = load_project(root)
    claim = project.claim(BASIL_FAILURES)
    run = perform(project, claim, "rehearsal", {**FAST, "clients": [4]}, progress=False, poll_s=0.5)
    _ok(run)
    assert sorted(run.manifest["inputs"]) == ["Indicus-90-2-c4.json", "Indicus-NoFailures-c4.json"]
    verdict, data = claim_verdict(claim, run)
    rows = data.sort_values("config")
    assert list(rows["config"]) == ["Indicus-90-2", "Indicus-NoFailures"]
    assert list(rows["failure_type"]) == ["stall-early", "no-failures"] and set(rows["system"]) == {"Basil"}
    assert set(rows["workload"]) == {"RW-U"} and (rows["tput_per_correct_client"] > 0).all()
    checks = dict(verdict)
    assert checks["the clients commit transactions at every point (the harness's statistics)"] == "holds"
    assert checks["the correct clients commit transactions at every point (throughput per correct client)"] == "holds"
    assert [v for w, v in verdict if " at Indicus-90-2 keeps" in w] == ["inconclusive"] * 4, verdict

