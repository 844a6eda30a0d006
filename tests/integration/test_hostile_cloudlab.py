"""Hostile manifests, second round: node names that would take over SSH, and clusters whose names collide.

Each experiment's nodes are real sshd servers on loopback (`tests.support.sshd`); the user's SSH config is the
testbed's (``REPROBOOK_SSH_CONFIG``), never the real ~/.ssh. A manifest names its nodes ``local``, ``github.com``,
an alias of the user's own SSH config and a host of hosts.yaml: after ``reprobook cloudlab import`` each of those
names means what it meant before. Two experiments with the same node names are both imported, both checked with
``check-host``, and ``cloudlab forget`` takes one out, leaving the other and the user's SSH config as they were.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from reprobook.core.config import load_hosts

pytestmark = pytest.mark.ssh
ROOT = Path(__file__).resolve().parents[2]
REPROBOOK = [sys.executable, "-m", "reprobook"]
RSPEC = "http://www.geni.net/resources/rspec/3"
EMULAB = "http://www.protogeni.net/resources/rspec/ext/emulab/1"


def _manifest(bed, path: Path, nodes: dict[str, str], experiment: str) -> None:
    """A manifest of ``nodes`` (client_id -> the testbed host that is that node), as the portal writes one."""
    ET.register_namespace("", RSPEC)
    ET.register_namespace("emulab", EMULAB)
    root = ET.Element(f"{{{RSPEC}}}rspec", {"type": "manifest"})
    for name, host in nodes.items():
        server = bed.servers[host]
        node = ET.SubElement(root, f"{{{RSPEC}}}node", {"client_id": name, "exclusive": "true"})
        ET.SubElement(node, f"{{{RSPEC}}}hardware_type", {"name": "m510"})
        services = ET.SubElement(node, f"{{{RSPEC}}}services")
        ET.SubElement(services, f"{{{RSPEC}}}login", {"authentication": "ssh-keys", "hostname": server.addr,
                                                      "port": str(server.port), "username": bed.user})
        ET.SubElement(node, f"{{{RSPEC}}}host", {"name": server.addr, "ipv4": server.addr})
    ET.SubElement(root, f"{{{EMULAB}}}portal", {"name": "cloudlab", "project": "Hostile", "experiment": experiment})
    path.write_text(ET.tostring(root, encoding="unicode"))


@pytest.fixture
def user(bed, tmp_path, monkeypatch):
    """The user's SSH config (the testbed's, with their own github.com entry and alias `lab`) and hosts.yaml."""
    bed.add_host("lab", "127.0.0.150")      # the user's own alias, and a host of hosts.yaml
    with open(bed.ssh_config_path, "a") as f:
        f.write("\nHost github.com\n    HostName github.com\n    User git\n"
                f"\nHost *\n    IdentityFile {bed.client_key_path}\n    IdentitiesOnly yes\n"
                f"    UserKnownHostsFile {bed.known_hosts_path}\n    GlobalKnownHostsFile /dev/null\n"
                f"    StrictHostKeyChecking yes\n    ConnectTimeout 5\n")
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text(f"# mine\nhosts:\n  lab:\n    ssh: lab\n    workdir: {tmp_path / 'lab-work'}\n")
    monkeypatch.setenv("REPROBOOK_ROOT", str(ROOT))
    monkeypatch.setenv("REPROBOOK_HOSTS", str(hosts))
    monkeypatch.setenv("REPROBOOK_SSH_CONFIG", str(bed.ssh_config_path))
    monkeypatch.setenv("REPROBOOK_RUNS", str(tmp_path / "runs"))
    return hosts


def _rb(*args, timeout=180):
    return subprocess.run(REPROBOOK + [str(a) for a in args], capture_output=True, text=True, timeout=timeout)


def _ssh_G(bed, name: str) -> str:
    return subprocess.run(["ssh", "-G", "-F", str(bed.ssh_config_path), name], capture_output=True, text=True,
                          check=True, timeout=30).stdout


def test_node_names_that_mean_something_already_keep_their_meaning(bed, user, tmp_path):
    for i, name in enumerate(["n-local", "n-github", "n-lab", "n-node"]):
        bed.add_host(name, f"127.0.0.{151 + i}", trust=False)
    _manifest(bed, tmp_path / "hostile.xml", {"local": "n-local", "github.com": "n-github", "lab": "n-lab",
                                              "node-0": "n-node"}, "takeover")
    before = {n: _ssh_G(bed, n) for n in ("github.com", "lab")}
    hosts_before = load_hosts(user).hosts["lab"]
    res = _rb("cloudlab", "import", tmp_path / "hostile.xml", "--cluster", "x", "--workdir", tmp_path / "w" / "{name}",
              "--yes")
    assert res.returncode == 0, res.stdout + res.stderr
    # ssh resolves the user's names exactly as before; the nodes are reached by the cluster's own names
    assert {n: _ssh_G(bed, n) for n in ("github.com", "lab")} == before
    assert "hostname github.com\n" in before["github.com"]
    assert "added hosts and SSH aliases x-local, x-github.com, x-lab, x-node-0" in res.stdout
    assert "cluster x: 4 of 4 hosts answered" in res.stdout
    out = subprocess.run(["ssh", "-F", str(bed.ssh_config_path), "x-github.com", "echo", "reached"],
                         capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "reached", out.stderr
    cfg = load_hosts(user)
    assert cfg.hosts["lab"] == hosts_before and cfg.hosts["x-lab"].node == "lab"
    assert cfg.hosts["local"].is_local and cfg.hosts["x-local"].node == "local"
    # `local` is still this machine, without SSH: with the node's sshd down, check-host local still answers
    bed.servers["n-local"].stop()
    chk = _rb("check-host", "local", "--claim", "aardvark/vector-commitments")
    assert chk.returncode in (0, 1) and "host local: reachable" in chk.stdout, chk.stdout + chk.stderr
    assert "not reachable" not in chk.stdout
    down = _rb("check-host", "x-local", "--claim", "aardvark/vector-commitments")
    assert down.returncode == 2 and "x-local" in down.stderr, down.stdout + down.stderr


def test_two_experiments_with_the_same_node_names_are_both_checked_and_one_is_forgotten(bed, user, tmp_path):
    """Two rehearsal experiments of one Pesto claim: both name their nodes control, us-east-1-0, client-0-0."""
    claim = "pesto/basil-workloads"
    names = ["control", "us-east-1-0", "client-0-0"]
    for i, name in enumerate([f"{c}{k}" for c in "ab" for k in range(3)]):
        bed.add_host(name, f"127.0.0.{160 + i}", trust=False)
    _manifest(bed, tmp_path / "a.xml", {n: f"a{k}" for k, n in enumerate(names)}, "first")
    _manifest(bed, tmp_path / "b.xml", {n: f"b{k}" for k, n in enumerate(names)}, "second")

    def imported(manifest, cluster):
        res = _rb("cloudlab", "import", manifest, "--cluster", cluster, "--claim", claim, "--workdir",
                  tmp_path / "w" / "{name}", "--yes")
        assert f"cluster {cluster}: 3 of 3 hosts answered" in res.stdout, res.stdout + res.stderr
    imported(tmp_path / "a.xml", "a")
    ssh_with_a, hosts_with_a = bed.ssh_config_path.read_bytes(), user.read_bytes()
    imported(tmp_path / "b.xml", "b")
    for cluster, first in (("a", 160), ("b", 163)):
        chk = _rb("check-host", cluster, "--claim", claim)
        assert f"cluster {cluster}: 3 hosts reachable" in chk.stdout, chk.stdout + chk.stderr
        assert f"  {cluster}-us-east-1-0 (server): " in chk.stdout and f"  {cluster}-control (control): " in chk.stdout
        cfg = load_hosts(user)
        assert [cfg.hosts[f"{cluster}-{n}"].target()[1] for n in names] == [f"127.0.0.{first + k}" for k in range(3)]
        assert [cfg.hosts[f"{cluster}-{n}"].node for n in names] == names
    # forget b: a and the user's SSH config as they were before b came; b's host keys leave known_hosts, a's stay
    known = bed.known_hosts_path
    port = {n: bed.servers[n].port for n in ("a0", "b0")}
    assert f"[127.0.0.163]:{port['b0']}" in known.read_text() and f"[127.0.0.160]:{port['a0']}" in known.read_text()
    res = _rb("cloudlab", "forget", "b")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "host keys: 3 removed" in res.stdout, res.stdout
    assert "[127.0.0.16" in known.read_text() and not any(f"[127.0.0.{163 + k}]:" in known.read_text() for k in range(3))
    assert all(f"[127.0.0.{160 + k}]:" in known.read_text() for k in range(3))
    assert bed.ssh_config_path.read_bytes() == ssh_with_a and user.read_bytes() == hosts_with_a
    assert not (bed.ssh_config_path.parent / "reprobook" / "b.conf").exists()
    chk = _rb("check-host", "a", "--claim", claim)
    assert "cluster a: 3 hosts reachable" in chk.stdout, chk.stdout + chk.stderr
    gone = _rb("check-host", "b", "--claim", claim)
    assert gone.returncode == 2 and "no host named 'b'" in gone.stderr, gone.stdout + gone.stderr
    # an import of another experiment under a cluster name already there replaces it (no "remove that cluster first")
    imported(tmp_path / "b.xml", "a")
    cfg = load_hosts(user)
    assert cfg.hosts["a-control"].target()[1] == "127.0.0.163" and cfg.clusters["a"].cloudlab["experiment"] == "second"
