"""The authors' harness for Pesto and TAPIR, unchanged, on a loopback cluster of four real sshd hosts.

Three claims of the Pesto chapter that run live (``pesto/basil-workloads``, whose rehearsal runs TAPIR on
Retwis, ``pesto/inconsistency``, whose rehearsal runs Pesto's U Ideal config, and ``pesto/point-scan``, whose
configs share their file names across folders) are taken from the project's own paper file and run at their rehearsal scale, with one change: instead of the 45-minute
build, their rehearsal's setup puts STAND-IN binaries in place (`tests.support.pequin_harness`, a fixture: paced no-op
clients in the real output format). Everything else is real: the Pequin checkout from the local git
mirror with the recorded source fixes applied, the adaptation to this 2-CPU machine (the
thread-pool fix, single-threaded Pesto), the configs generated from the authors' Tapir-Retwis.json
and Uniform-Eager.json for the placement, the ship step, the harness ``run_multiple_experiments.py``
on the control host reaching ``us-east-1-0``, ``client-0-0`` and ``client-0-1`` over SSH through the
control host's SSH configuration (host keys checked), the fetch, the loader reading both the
harness's ``stats.json`` and the clients' own outputs, and the verdict.

The real build and the real binaries run in ``make live-pesto`` (README, "Rehearsals").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reprobook.core.config import load_project
from reprobook.errors import ExperimentError
from reprobook.remote.live import perform, resume
from reprobook.core.loaders import load
from reprobook.core.runs import RunStore
from reprobook.sources import from_run
from tests.integration.conftest import GIT_MIRROR, ROOT, _wait_for, unavailable
from tests.support import pequin_harness as standin

pytestmark = pytest.mark.ssh
PEQUIN = GIT_MIRROR / "fsuri" / "Pequin-Artifact"
FAST = {"scale": "rehearsal", "duration_s": 6, "ramp_s": 1, "load_s": 1}


TAPIR, PESTO, POINT_SCAN = "standin/basil-workloads", "standin/inconsistency", "standin/point-scan"
FAILURES, BASIL_FAILURES = "standin/failures", "standin/basil-client-failures"
"""The claims whose rehearsals run here: TAPIR on Retwis, Pesto's U Ideal config on rw-sql, and Pesto's point
reads, scans and conditional scans (configs of one name in different folders)."""


def standin_paper(src: str, root: str) -> dict:
    """The project's claims that rehearse on a cluster of ours, their rehearsal's setup the stand-in's (keys only;
    the ship step is the real one)."""
    real = yaml.safe_load((ROOT / "configs" / "papers" / "pesto.yaml").read_text())
    claims = [c for c in real["claims"] if f"standin/{c['id']}" in (TAPIR, PESTO, POINT_SCAN, FAILURES, BASIL_FAILURES)]
    for c in claims:
        rehearsal = c["scales"]["rehearsal"]
        ship = next(s for s in rehearsal["setup"] if s["name"].startswith("ship "))
        rehearsal["setup"] = [{"name": "STAND-IN: key files where the configs name them (the real claim makes them with "
                               "create_key)",
                       "run": 'mkdir -p "$RB_ROOT/keys/donna" && touch "$RB_ROOT/keys/donna/0.pub"'}, ship]
        c["parameters"] = {**c["parameters"], "src_dir": {"default": src, "help": "the stand-in src"},
                           "root": {"default": root, "help": "one directory on every host"},
                           "output_dir": {"default": f"{root}/output", "help": "outputs"}}
        c["outputs"] = {"runs": {"path": f"{root}/output", "glob": "*", "description": "the harness's outputs"}}
    named = {t for c in claims for t in c.get("published_tables", ())}
    tables = [t for t in real["published_tables"] if t["id"] in named]
    return {"paper": {**real["paper"], "id": "standin", "title": "Pesto (stand-in binaries)"},
            "repositories": real["repositories"], "published_tables": tables, "claims": claims}


def standin_cluster(root, bed, addresses: dict[str, str] | None = None, *, isolated: bool = False,
                    roles: dict[str, list[str]] | None = None) -> dict[str, str]:
    """A project in ``root`` whose claims run the real harness with stand-in binaries on hosts of ``bed``
    (the harness's names, at ``addresses``; by default `standin.HOSTS`: a control host, one server, two
    client nodes), each host in namespaces of its own with ``isolated``; the cluster ``rehearsal`` has
    ``roles`` (by default those four hosts'). Returns the environment that points reprobook at it."""
    if not PEQUIN.is_dir():
        unavailable(f"the git mirror {PEQUIN} is absent")
    if not shutil.which("rsync") or not shutil.which("scp"):
        unavailable("rsync and scp are needed (.ci/install-system-deps.sh installs them)")
    addresses = addresses or standin.HOSTS
    # the harness runs `sudo rm -rf /dev/shm/*` and the like on its hosts: here sudo is a no-op
    shims = root / "shims"
    shims.mkdir(parents=True)
    (shims / "sudo").write_text('#!/bin/sh\necho "(test host: sudo $* skipped)" >&2\n')
    (shims / "sudo").chmod(0o755)
    path = f"{shims}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    # an isolated host has a home of its own, as a freshly installed node has (/etc/skel's): this machine's ~/.bashrc
    # runs `pyenv init` (0.11 s of CPU at every SSH session, about fifty of them before a point's load starts)
    for name, addr in addresses.items():
        bed.add_host(name, addr, extra_config=[f"SetEnv PATH={path}"], isolated=isolated, own_home=isolated)
    pequin_root = root / "pequin"
    src = standin.standin_src(root / "standin-src")
    proj = root / "project"
    (proj / "configs" / "papers").mkdir(parents=True)
    shutil.copytree(ROOT / "configs" / "patches", proj / "configs" / "patches")
    (proj / "configs" / "papers" / "standin.yaml").write_text(
        yaml.safe_dump(standin_paper(str(src), str(pequin_root)), sort_keys=False))
    hosts = {"hosts": {n: {"ssh": n, "workdir": str(root / "work" / n)} for n in addresses},
             "clusters": {"rehearsal": {"roles": roles or {"control": ["control"], "server": ["us-east-1-0"],
                                                           "client": ["client-0-0", "client-0-1"]}}}}
    hosts["hosts"]["control"]["git_url_rewrites"] = {"https://github.com/": f"{GIT_MIRROR}/"}
    hosts["hosts"]["control"]["env"] = {"RB_SSH_CONFIG": str(bed.ssh_config_path)}
    (proj / "configs" / "hosts.yaml").write_text(yaml.safe_dump(hosts))
    return {"REPROBOOK_ROOT": str(proj), "REPROBOOK_SSH_CONFIG": str(bed.ssh_config_path),
            "REPROBOOK_RUNS": str(root / "runs"),
            "REPROBOOK_GIT_BASE_URL": f"file://{GIT_MIRROR}/"}   # the authors' configs, from git


@pytest.fixture
def cluster(tmp_path, bed, monkeypatch):
    # the harness stops servers and clients with `ps aux | grep -i server | ... | xargs kill -9`: on hosts that
    # are this machine, that would reach every process whose command line says "server" (another test's Jupyter
    # server, say); isolated hosts (root only) keep its kills on their own processes
    env = standin_cluster(tmp_path, bed, isolated=os.geteuid() == 0)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("REPROBOOK_HOSTS", raising=False)
    return Path(env["REPROBOOK_ROOT"])


def _generated(run, name: str) -> dict:
    return json.loads((run.path / "inputs" / name).read_text())


def test_pesto_through_the_real_harness_adapted_to_a_small_host(cluster):
    project = load_project(cluster)
    claim = project.claim(PESTO)
    run = perform(project, claim, "rehearsal", {**FAST, "clients": [4]}, progress=False, poll_s=0.5)
    assert run.status == "succeeded", (run.manifest.get("error"), (run.path / "log.txt").read_text()[-3000:])
    m = run.manifest
    # adapted to this machine: fewer than 3 CPUs on the server, so the thread-pool fix and one request thread
    assert m["adapted"][0]["set"] == {"small_host": True} and m["adapted"][0]["hosts"] == ["us-east-1-0"]
    assert m["parameters"]["small_host"] is False and m["scale"] == "rehearsal"  # as asked; `adapted` says the rest
    assert any(d["kind"] == "small host" and d["what"].startswith("adapted to a server with fewer than 3 CPUs")
               for d in m["deviations"])
    assert any("threadpool-small-host.patch" in d["what"] and d["diff"] for d in m["deviations"])
    log = (run.path / "log.txt").read_text()
    assert "patch threadpool-small-host.patch: applied" in log and "patch gcc12-bitutil.patch: applied" in log
    assert "patch peloton-trafficcop-per-thread.patch: applied" in log
    assert "patch fallback-reply-self-deadlock.patch: applied" in log  # one request thread: no self-deadlock
    assert "patch phase2-valid-reply.patch: applied" in log  # one request thread: a valid Phase2 is answered
    assert "patch fallback-multicast-releases-clients.patch: applied" in log  # no spin on its own hash-map lock
    assert "patch client-exits-when-done.patch: applied" in log  # no idling to the harness's timeout
    assert "patch harness-rsync-keeps-times.patch: applied" in log
    # the harness's ssh and scp wrappers are /bin/sh scripts: about fifty calls before the clients start, each a
    # few milliseconds (Python took 20 to 30, and `env python3` could find pyenv's shim: a fifth of a second)
    shims = Path(m["remote_dir"]) / "harness-bin"
    for tool in ("ssh", "scp"):
        assert (shims / tool).read_text().splitlines()[0] == "#!/bin/sh", tool
    # the generated config: the placement's names, paths under the root, one thread, pins cut to the CPUs
    config = _generated(run, "Uniform-Eager-c4.json")
    assert config["server_names"] == [["us-east-1-0"]] and config["client_nodes_per_server"] == 2
    assert config["server_host_format_str"] == "%s%.0s%.0s" and config["fault_tolerance"] == 0
    settings = config["replication_protocol_settings"][0]
    assert settings["multi_threading"] is False and settings["parallel_queries"] is False
    assert settings["key_path"].endswith("/pequin/keys/donna") and config["pin_server_processes"] == [0, 1]
    assert config["num_tables"] == 10 and config["num_keys_per_table"] == 10000
    assert "/users/fs435" not in json.dumps(config) and "/mnt/extra" not in json.dumps(config)
    assert (run.path / "inputs" / "Uniform-Eager-c4.json.diff").read_text().startswith("---")
    # what the harness wrote, read two ways: its stats.json, and the clients' own outputs
    verdict, data = claim_verdict(claim, run)
    assert list(data["client_total"]) == [4] and list(data["config"]) == ["Uniform-Eager-c4"]
    # labelled as the authors' config is (U Ideal), and the system as it ran: one server, no replication
    assert (list(data["access"]), list(data["mode"]), list(data["system"])) == (["U"], ["Ideal"], ["Pesto-unreplicated"])
    assert list(data["client_processes"]) == [4]  # two processes on each of the two client nodes
    assert (data["tput_tx_per_s"] > 0).all() and set(data["client_stats"]) == {"empty"}
    assert (data["clients_tput_tx_per_s"] > 0).all()
    assert rehearsal_verdicts(verdict) == ["holds", "holds", "inconclusive"], verdict
    # the stand-in server keeps no count of commits: the clients' whole-run count is there, the server's is not
    point = data.iloc[0]
    assert point["clients_whole_run"] > point["clients_committed"] and point["server_commits"] != point["server_commits"]
    # the knees' ratios need the paper's scale (and all six curves)
    assert [v for w, v in verdict if w.startswith(("U:", "Z:"))] == ["inconclusive"] * 4


def claim_verdict(claim, run) -> tuple[list[tuple[str, str]], object]:
    """Each check's verdict on the run's outputs (what it checks, its verdict), as the claim's page judges them,
    and the measured table."""
    from reprobook.api import check
    outputs = from_run(claim, run)
    data = load(claim, outputs)
    return [(r.what, r.verdict.value) for r in check(claim, data, outputs).checks], data


REHEARSAL_CHECKS = ("the clients commit transactions", "the transactions the clients printed", "the server's own count")
"""The checks a run at any scale can judge (their ``what`` begins so), in the paper file's order."""


def rehearsal_verdicts(verdict: list[tuple[str, str]]) -> list[str]:
    """The verdicts of the checks a rehearsal judges."""
    return [v for w, v in verdict if w.startswith(REHEARSAL_CHECKS)]


def test_tapir_cut_in_the_middle_resumes_without_running_finished_points_again(cluster, bed):
    project = load_project(cluster)
    claim = project.claim(TAPIR)
    params = {**FAST, "clients": [2, 3]}
    code = ("from reprobook.core.config import load_project\nfrom reprobook.remote.live import perform\n"
            f"p = load_project(); c = p.claim({TAPIR!r})\n"
            f"perform(p, c, 'rehearsal', {params!r}, new=True, progress=False, poll_s=0.3)\n")
    follower = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
    store = RunStore(project.settings.runs_dir)
    run = _wait_for(lambda: next((r for r in store.runs() if r.status == "running"), None), timeout=120,
                    what="a running run")
    steps = Path(project.hosts.host("control").workdir + f"/.reprobook/runs/{run.id}/steps")
    _wait_for(lambda: steps.is_dir() and len(list(steps.glob("*-*.done"))) >= 1, timeout=240,
              what="the first point done")
    # the second point is under way (its third client, which the first has not, measuring): the reprobook
    # client goes, a client host's sshd restarts (what was started through it runs on, as after a dropped
    # connection) and that third client is killed: the harness computes the point from the two left, and the
    # step fails it for want of a client
    # the stand-in itself (python3 runs it), this test's, not the ssh or shell commands that name it
    third = rf"^\S*python3 {Path(project.hosts.host('control').workdir).parents[1]}/\S*bin/benchmark --client_id 2 "
    _wait_for(lambda: subprocess.run(["pgrep", "-f", third]).returncode == 0, timeout=120,
              what="the second point's third client")
    follower.kill()
    follower.wait(timeout=30)
    bed.servers["client-0-1"].restart()
    assert subprocess.run(["pkill", "-KILL", "-f", third]).returncode == 0
    first = sorted(p.name for p in steps.glob("*-*.done"))
    # a fresh run (new=True): its id is not what its parameters give, so it is resumed by id; the first call
    # follows the cut job to its failed point, the second launches it again
    cut, failures = run.id, []
    for _ in range(3):
        try:
            run = resume(project, cut, progress=False, poll_s=0.5)
        except ExperimentError as exc:
            failures.append(str(exc))
            continue
        if run.status == "succeeded":
            break
    assert run.id == cut and any("2 of 3 clients finished measuring" in f for f in failures), failures
    # launched again, it was adapted to the small host as the first launch was (the defaults are not a choice)
    assert run.manifest["adapted"][0]["set"] == {"small_host": True} and "not_made" not in run.manifest["adapted"][0]
    assert run.manifest["given"] == sorted(params)
    assert run.status == "succeeded", (run.manifest.get("error"), (run.path / "log.txt").read_text()[-3000:])
    log = (run.path / "log.txt").read_text()
    assert "[skipped: done in an earlier attempt]" in log
    assert len(first) >= 1 and all((steps / name).exists() for name in first)
    verdict, data = claim_verdict(claim, run)
    assert sorted(set(data["client_total"])) == [2, 3], data
    # each point's stats once: the finished one was not run again
    assert data.groupby(["config", "client_total"]).size().max() == 1 and len(data) == 2
    assert verdict == [(w, "holds") for w, _ in verdict] and len(verdict) == 2, verdict
    # TAPIR's config has no Pesto thread settings, even on a small host
    config = _generated(run, "Tapir-Retwis-c2.json")
    assert "multi_threading" not in json.dumps(config["replication_protocol_settings"])
    assert config["client_num_keys"] == 10000 and config["client_experiment_length"] == 6

