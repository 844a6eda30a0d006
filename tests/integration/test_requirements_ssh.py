"""Machine requirements judged over SSH: a real sshd on loopback, this machine's real facts.

The "host" is this machine, reached through an sshd on 127.0.0.x, so every
fact the probe returns can be checked against what the test reads here
directly (``getconf``, ``/etc/os-release``, ``df``, ``/sys``). Each test works
out from this machine which outcome to expect, so none can pass vacuously.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from reprobook.core.config import HostSpec, load_project
from reprobook.errors import RequirementsNotMet
from reprobook.remote.hosts import open_host
from reprobook.remote.live import perform
from reprobook.remote.placement import check_host
from reprobook.core.requirements import Requirements, shortfalls
from reprobook.core.runs import RunStore

pytestmark = pytest.mark.ssh
REPROBOOK = [sys.executable, "-m", "reprobook"]


# --------------------------------------------------------------------------- this machine, read directly

def _os_release() -> dict[str, str]:
    for p in ("/etc/os-release", "/usr/lib/os-release"):
        if Path(p).is_file():
            out = {}
            for line in Path(p).read_text().splitlines():
                k, sep, v = line.partition("=")
                if sep:
                    out[k] = v.strip().strip('"')
            return out
    return {}


def _smt_here() -> str:
    p = Path("/sys/devices/system/cpu/smt/active")
    if p.is_file():
        return "on" if p.read_text().strip() == "1" else "off"
    return "unknown"


def _numa_nodes_here() -> int:
    return len(list(Path("/sys/devices/system/node").glob("node[0-9]*"))) or 1


def _free_gib(path: Path) -> float:
    out = subprocess.run(["df", "-Pk", str(path)], capture_output=True, text=True, check=True).stdout
    return int(out.splitlines()[1].split()[3]) / 2**20


def _physical_cores_here() -> tuple[int, int]:
    """(physical cores, the most on one socket) from sysfs, one core per set of hardware threads."""
    per = {}
    for topo in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/topology"):
        pkg = (topo / "physical_package_id").read_text().strip()
        per.setdefault(pkg, set()).add((topo / "thread_siblings_list").read_text().strip())
    return sum(map(len, per.values())), max(map(len, per.values()))


@dataclass(frozen=True)
class StandIn:
    """What `check_host` reads of a claim."""

    key: str
    requires: Requirements


@pytest.fixture
def node(bed, tmp_path):
    """This machine as host ``node1`` over SSH, with a workdir that does not exist yet."""
    bed.add_host("node1", "127.0.0.2")
    spec = HostSpec(name="node1", ssh="node1", workdir=str(tmp_path / "work" / "not-yet"))
    with open_host(spec, SimpleNamespace(ssh_config=bed.ssh_config_path)) as host:
        yield host


# --------------------------------------------------------------------------- facts

def test_facts_are_this_machines_and_come_back_in_one_round_trip(node, tmp_path, monkeypatch):
    calls = []
    real_run = node._run

    def counting(command, timeout):
        calls.append(command)
        return real_run(command, timeout)

    monkeypatch.setattr(node, "_run", counting)
    facts = node.facts([Requirements(commands=["git", "no-such-cmd-xyz"]), Requirements(commands=["sh"])])
    assert len(calls) == 1, "gathering the facts must be one command on the host"

    getconf = int(subprocess.run(["getconf", "_NPROCESSORS_ONLN"], capture_output=True, text=True).stdout)
    nproc = int(subprocess.run(["nproc"], capture_output=True, text=True).stdout)
    assert facts.cpus == getconf and facts.cpus >= nproc
    cores, per_socket = _physical_cores_here()
    assert (facts.physical_cores, facts.physical_cores_per_socket) == (cores, per_socket)
    assert facts.hostname == socket.gethostname() and facts.kernel == os.uname().release
    rel = _os_release()
    assert (facts.os_id, facts.os_version, facts.os) == (rel.get("ID", ""), rel.get("VERSION_ID", ""),
                                                          rel.get("PRETTY_NAME", ""))
    mem_kib = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                       if line.startswith("MemTotal:")))
    assert facts.mem_gib == pytest.approx(mem_kib / 2**20, abs=0.01)
    assert facts.numa_nodes == _numa_nodes_here() and facts.smt == _smt_here()
    # the workdir does not exist yet: free space is measured at its nearest existing parent
    assert facts.disk_path == str(tmp_path)
    assert facts.disk_free_gib == pytest.approx(_free_gib(tmp_path), abs=0.5)
    assert dict(facts.commands) == {"git": True, "no-such-cmd-xyz": False, "sh": True}


# --------------------------------------------------------------------------- refusals

def test_docker_is_refused_when_only_the_command_exists(node):
    """This machine has a docker command and no daemon: a claim needing Docker is refused, saying so."""
    has_cmd = node.run("command -v docker", check=False).ok  # as the SSH user sees PATH
    here = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                          timeout=30) if has_cmd else None
    claim = StandIn("fixture/docker", Requirements(docker=True, why="the benchmark runs in containers"))
    if has_cmd and here.returncode != 0:
        with pytest.raises(RequirementsNotMet) as err:
            check_host(node, claim, allow_insufficient=False)
        msg = str(err.value)
        assert "host 'node1'" in msg and "fixture/docker" in msg
        assert "needs Docker usable by the user; docker command found but the daemon does not answer: " in msg
        assert here.stderr.strip().splitlines()[-1] in msg  # the daemon's own words, e.g. "Cannot connect to ..."
        assert "because: the benchmark runs in containers" in msg
        facts, short = check_host(node, claim, allow_insufficient=True)
        assert facts.docker is False and short and short[0].startswith("needs Docker usable by the user; ")
    elif not has_cmd:
        with pytest.raises(RequirementsNotMet, match="docker command not found"):
            check_host(node, claim, allow_insufficient=False)
    else:
        facts, short = check_host(node, claim, allow_insufficient=False)
        assert facts.docker is True and short == []


def test_numa_nodes_beyond_this_machine_are_refused(node):
    n = _numa_nodes_here()
    with pytest.raises(RequirementsNotMet) as err:
        check_host(node, StandIn("fixture/numa", Requirements(numa_nodes=n + 1)), allow_insufficient=False)
    assert f"needs {n + 1} NUMA nodes, has {n}" in str(err.value)
    _, short = check_host(node, StandIn("fixture/numa", Requirements(numa_nodes=n)), allow_insufficient=False)
    assert short == []


def test_smt_is_judged_from_this_machines_state(node):
    state = _smt_here()
    facts = node.facts()
    for wanted in ("on", "off"):
        claim = StandIn(f"fixture/smt-{wanted}", Requirements(smt=wanted))
        if state == wanted:
            assert check_host(node, claim, allow_insufficient=False)[1] == []
        else:
            with pytest.raises(RequirementsNotMet) as err:
                check_host(node, claim, allow_insufficient=False)
            said = (f"needs SMT {wanted}, it is {state}" if state != "unknown"
                    else f"needs SMT {wanted}, but the host's SMT state is unknown")
            assert said in str(err.value)
            assert len(shortfalls(facts, claim.requires)) == 1 and shortfalls(facts, claim.requires)[0].startswith(said)


def test_disk_beyond_the_free_space_of_the_workdir_is_refused(node, tmp_path):
    free = _free_gib(tmp_path)
    need = round(free * 2 + 100)
    with pytest.raises(RequirementsNotMet) as err:
        check_host(node, StandIn("fixture/disk", Requirements(disk_gib=need)), allow_insufficient=False)
    assert f"needs {need} GiB free in the workdir, has " in str(err.value)
    assert f"GiB free at {tmp_path}" in str(err.value)
    _, short = check_host(node, StandIn("fixture/disk", Requirements(disk_gib=0.01)), allow_insufficient=False)
    assert short == []


# --------------------------------------------------------------------------- through the engine and the CLI

def _rewrite_fixture(fixture, requires: dict, extra: list[dict] = ()) -> None:
    path = fixture.root / "configs" / "papers" / "fixture.yaml"
    paper = yaml.safe_load(path.read_text())
    paper["claims"][0]["requires"] = requires
    for e in extra:
        paper["claims"].append({**paper["claims"][0], **e})
    path.write_text(yaml.safe_dump(paper, sort_keys=False))


def test_perform_refuses_an_insufficient_host_before_anything_starts(fixture):
    n = _numa_nodes_here()
    _rewrite_fixture(fixture, {"numa_nodes": n + 1, "cores": 1, "why": "the paper pins one shard per NUMA node"})
    project = load_project(fixture.root)
    claim = project.claim("fixture/validator-throughput")
    with pytest.raises(RequirementsNotMet) as err:
        perform(project, claim, "node1", {"duration": 0.1}, progress=False, poll_s=0.2)
    msg = str(err.value)
    assert f"needs {n + 1} NUMA nodes, has {n}" in msg and "cores" not in msg.split("because")[0]
    assert "because: the paper pins one shard per NUMA node" in msg and "--allow-insufficient-host" in msg
    assert not (fixture.workdirs["node1"] / ".reprobook").exists(), "nothing may be launched on a refused host"
    assert RunStore(project.settings.runs_dir).runs(claim) == []


def test_check_host_judges_each_claim_by_its_own_requirements(fixture):
    """A command only another claim asks for is not this claim's shortfall; exit 1 when any claim falls short."""
    _rewrite_fixture(fixture, {"commands": ["git"], "why": "fixture"},
                     [{"id": "needs-missing-command", "requires": {"commands": ["no-such-cmd-xyz"]}}])
    res = subprocess.run(REPROBOOK + ["check-host", "node1"], capture_output=True, text=True, timeout=120)
    lines = res.stdout.splitlines()
    assert res.returncode == 1, res.stdout + res.stderr
    assert "fixture/validator-throughput: meets the requirements" in lines
    assert "fixture/needs-missing-command: falls short: needs the command 'no-such-cmd-xyz' on PATH" in lines
    assert f"  smt: {_smt_here()}" in lines and any(line.startswith("  docker_detail: ") for line in lines)
    assert "  commands: {'git': True, 'no-such-cmd-xyz': False}" in lines

    only = subprocess.run(REPROBOOK + ["check-host", "node1", "--claim", "fixture/validator-throughput"],
                          capture_output=True, text=True, timeout=120)
    assert only.returncode == 0, only.stdout + only.stderr
    assert "no-such-cmd-xyz" not in only.stdout
