"""Loopback hosts that behave like machines: each in PID, mount and UTS namespaces of its own.

On a loopback cluster every "host" is this one machine, so the authors' harness, which stops
servers and clients by name (``pkill``, ``ps aux | grep ... | xargs kill``, ``lsof -i :port``),
would reach every host's processes at once, and only one run could go at a time. An isolated test
host (``SshTestbed.add_host(..., isolated=True)``) sees only its own processes, as a CloudLab node
does, so two clusters' runs can go side by side.
"""

from __future__ import annotations

import os
import pwd
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reprobook.core.config import load_project
from reprobook.core.runs import RunStore
from tests.integration.conftest import unavailable
from tests.integration.test_pequin_harness import FAST, claim_verdict, standin_cluster, PESTO, TAPIR, rehearsal_verdicts
from tests.support.sshd import SshTestbed

pytestmark = [pytest.mark.ssh]


def needs_namespaces() -> None:
    if os.geteuid() != 0:
        unavailable("isolated test hosts are made with unshare and nsenter, as root")


def run_on(bed, host: str, command: str) -> subprocess.CompletedProcess:
    return subprocess.run(bed.ssh_argv(host) + [command], capture_output=True, text=True, timeout=60)


def test_a_host_sees_and_kills_only_its_own_processes_and_keeps_them_over_an_sshd_restart(bed):
    needs_namespaces()
    a = bed.add_host("alpha", "127.0.0.71", isolated=True)
    bed.add_host("beta", "127.0.0.72", isolated=True)
    assert run_on(bed, "alpha", "hostname").stdout.strip() == "alpha"
    for host in ("alpha", "beta"):
        assert run_on(bed, host, "nohup sleep 4321 >/dev/null 2>&1 & echo started").returncode == 0
    # beta's kill by name, as the harness kills: alpha's process lives on
    # (slee[p]: the pattern does not match the shell that runs it)
    run_on(bed, "beta", "pkill -f 'slee[p] 4321'; true")
    assert run_on(bed, "beta", "pgrep -f 'slee[p] 4321'").stdout == ""
    survivor = run_on(bed, "alpha", "pgrep -f 'slee[p] 4321'").stdout.split()
    assert len(survivor) == 1
    # alpha's process table holds alpha's processes only: its init, its sshd, the sleep, this session
    names = set(run_on(bed, "alpha", "ps -e -o comm=").stdout.split())
    assert names <= {"bash", "sshd", "sshd-session", "sleep", "ps"}, names
    # an sshd restart that keeps the sessions, as `systemctl restart ssh` does: the host's processes stay
    a.restart(kill_sessions=False)
    assert run_on(bed, "alpha", "pgrep -f 'slee[p] 4321'").stdout.split() == survivor
    # and the machine ends with the testbed: nothing of it is left on this machine
    machine = a.machine_pid
    a.shutdown()
    stat = Path(f"/proc/{machine}/stat")
    assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"


def test_a_hosts_private_directory_is_its_own(bed, tmp_path):
    """On CloudLab each node has its own disk: BFT-SMaRt's replicas each read their own java-config (their own bind
    address) at one path. Isolated hosts given that path as a private directory keep what they write there."""
    needs_namespaces()
    shared = tmp_path / "root" / "bftsmart"
    for name, addr in (("gamma", "127.0.0.73"), ("delta", "127.0.0.74")):
        bed.add_host(name, addr, isolated=True, private_dirs=[shared])
    for host in ("gamma", "delta"):
        assert run_on(bed, host, f"mkdir -p {shared}/java-config && hostname > {shared}/java-config/own").returncode == 0
    assert run_on(bed, "gamma", f"cat {shared}/java-config/own").stdout == "gamma\n"
    assert run_on(bed, "delta", f"cat {shared}/java-config/own").stdout == "delta\n"
    # the machine's own view of the path is untouched, and the rest of the directory above stays shared
    assert not (shared / "java-config").exists()
    assert run_on(bed, "gamma", f"echo both > {shared.parent}/common").returncode == 0
    assert run_on(bed, "delta", f"cat {shared.parent}/common").stdout == "both\n"
    with pytest.raises(ValueError, match="needs an isolated host"):
        bed.add_host("epsilon", "127.0.0.75", private_dirs=[shared])


def test_an_isolated_hosts_home_is_its_own_as_on_a_fresh_machine(bed):
    """A CloudLab node's user has a home of its own, filled from /etc/skel when the machine was installed: a host
    made with own_home reads that ~/.bashrc in its SSH sessions (not this machine's), and what one host writes in
    its home the others do not see."""
    needs_namespaces()
    if not Path("/etc/skel/.bashrc").is_file():
        pytest.skip("this machine has no /etc/skel/.bashrc to fill a new home from")
    home = Path(pwd.getpwnam(bed.user).pw_dir)
    for name, addr in (("zeta", "127.0.0.76"), ("eta", "127.0.0.77")):
        bed.add_host(name, addr, isolated=True, own_home=True)
    skel = Path("/etc/skel/.bashrc").read_bytes()
    for host in ("zeta", "eta"):
        got = run_on(bed, host, 'cat ~/.bashrc; echo "HOME=$HOME"')
        assert got.returncode == 0 and got.stdout.encode() == skel + f"HOME={home}\n".encode(), got.stderr
        assert run_on(bed, host, "hostname > ~/mine").returncode == 0
    assert run_on(bed, "zeta", "cat ~/mine").stdout == "zeta\n"
    assert run_on(bed, "eta", "cat ~/mine").stdout == "eta\n"
    assert not (home / "mine").exists() or (home / "mine").read_text() not in ("zeta\n", "eta\n")


PERFORM = """
import sys
from reprobook.core.config import load_project
from reprobook.remote.live import perform
p = load_project()
run = perform(p, p.claim(sys.argv[1]), "rehearsal", eval(sys.argv[2]), progress=False, poll_s=0.5)
print("RUN", run.id, run.status)
"""


@pytest.mark.slow
def test_two_rehearsals_at_once_on_disjoint_isolated_hosts_both_finish_right(tmp_path, monkeypatch):
    """Two clusters of four isolated hosts; the Pesto and the TAPIR rehearsal (stand-in binaries, the
    authors' real harness) run at the same time, each harness killing its servers and clients by name
    and port at the end of every point; both finish, and each is judged from its own outputs."""
    needs_namespaces()
    second = {"control": "127.0.0.54", "us-east-1-0": "127.0.0.55", "client-0-0": "127.0.0.56",
              "client-0-1": "127.0.0.57"}
    with SshTestbed(tmp_path / "ssh-a") as bed_a, SshTestbed(tmp_path / "ssh-b") as bed_b:
        envs = {PESTO: standin_cluster(tmp_path / "a", bed_a, isolated=True),
                TAPIR: standin_cluster(tmp_path / "b", bed_b, second, isolated=True)}
        params = {**FAST, "clients": [2, 3]}
        procs = {}
        for claim, env in envs.items():
            full = {k: v for k, v in os.environ.items() if k != "REPROBOOK_HOSTS"} | env
            procs[claim] = subprocess.Popen([sys.executable, "-c", PERFORM, claim, repr(params)], env=full,
                                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        outputs = {claim: p.communicate(timeout=900)[0] for claim, p in procs.items()}
        for claim, p in procs.items():
            assert p.returncode == 0 and " succeeded" in outputs[claim], (claim, outputs[claim][-3000:])

    windows = []
    for claim, env in envs.items():
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        project = load_project()
        run = next(r for r in RunStore(project.settings.runs_dir).runs())
        verdict, data = claim_verdict(project.claim(claim), run)
        assert sorted(set(data["client_total"])) == [2, 3], (claim, data)
        assert rehearsal_verdicts(verdict)[:2] == ["holds", "holds"], (claim, verdict)
        windows.append(_sweep_window(Path(env["REPROBOOK_ROOT"]).parent / "pequin" / "output"))
    # the two sweeps overlapped in time: each harness's kills ran while the other's servers were up
    (a0, a1), (b0, b1) = windows
    assert a0 < b1 and b0 < a1, windows


def _sweep_window(output: Path) -> tuple[float, float]:
    """When the harness's sweep began and ended on a control host: it names each point's directory by its
    start time, and writes the point's stats.json at its end."""
    points = [d for d in output.iterdir() if d.is_dir() and re.fullmatch(r"\d{4}(-\d\d){5}", d.name)]
    stats = [p.stat().st_mtime for p in output.rglob("stats.json")]
    assert len(points) >= 2 and len(stats) >= 2, f"the harness's outputs in {output}: {sorted(output.iterdir())}"
    began = min(time.mktime(time.strptime(d.name, "%Y-%m-%d-%H-%M-%S")) for d in points)
    return began, max(stats)
