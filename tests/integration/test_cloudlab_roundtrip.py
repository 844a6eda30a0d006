"""From a profile to a checked cluster, on loopback: profile -> geni-lib's request RSpec -> a manifest -> import.

The profile of a Pesto claim at rehearsal scale runs under the real geni-lib; its request RSpec becomes a
manifest the way the portal makes one (a ``<login>`` and a ``<host>`` per node, ``hardware_type`` "pc" with
the real type in ``emulab:vnode``, the root still saying ``type="request"``), whose hosts are this test's
sshd servers on loopback. ``reprobook cloudlab import`` then writes the cluster, records the host keys
through trust-host (none is trusted beforehand) and checks every host at once. The user's SSH setup is
the testbed's: its key and known_hosts for every 127.0.0.* address, as ~/.ssh would give them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import yaml

from reprobook.core.config import load_hosts
from tests.integration.conftest import unavailable
from tests.support import genilib

pytestmark = pytest.mark.ssh
ROOT = Path(__file__).resolve().parents[2]
REPROBOOK = [sys.executable, "-m", "reprobook"]
RSPEC = "http://www.geni.net/resources/rspec/3"
EMULAB = "http://www.protogeni.net/resources/rspec/ext/emulab/1"


def _request(tmp_path: Path, claim: str, scale: str = "rehearsal") -> str:
    try:
        genilib.site_dir()
    except genilib.Unavailable as exc:
        unavailable(str(exc))
    script = tmp_path / "profile.py"
    subprocess.run(REPROBOOK + ["cloudlab", "profile", claim, "--scale", scale, "-o", str(script)],
                   check=True, capture_output=True, text=True, timeout=120)
    return genilib.run_profile(script, tmp_path / "request.xml")


def _manifest(request: str, bed, first_addr: int, path: Path) -> list[str]:
    """The request RSpec as the portal's manifest of it, each node one of ``bed``'s sshd hosts."""
    ET.register_namespace("", RSPEC)
    ET.register_namespace("emulab", EMULAB)
    root = ET.fromstring(request)
    names = []
    for i, node in enumerate(root.findall(f"{{{RSPEC}}}node")):
        name = node.get("client_id")
        addr = f"127.0.0.{first_addr + i}"
        server = bed.add_host(f"lo-{name}", addr, trust=False)   # no key recorded: import must do it
        hw = node.find(f"{{{RSPEC}}}hardware_type")
        real = hw.get("name")
        hw.set("name", "pc")
        node.set("sliver_id", f"urn:publicid:IDN+utah.cloudlab.us+sliver+{1000 + i}")
        services = node.find(f"{{{RSPEC}}}services")
        ET.SubElement(services, f"{{{RSPEC}}}login", {"authentication": "ssh-keys", "hostname": addr,
                                                      "port": str(server.port), "username": bed.user})
        ET.SubElement(node, f"{{{EMULAB}}}vnode", {"name": f"ms{1000 + i}", "hardware_type": real})
        ET.SubElement(node, f"{{{RSPEC}}}host", {"name": addr, "ipv4": addr})
        names.append(name)
    ET.SubElement(root, f"{{{EMULAB}}}portal", {"name": "cloudlab", "project": "reprobook-PG0",
                                                 "experiment": "loopback"})
    path.write_text(ET.tostring(root, encoding="unicode"))
    return names


@pytest.fixture
def user_ssh(bed, tmp_path, monkeypatch):
    """The testbed's key and known_hosts for every host, as a user's ~/.ssh gives them (last: the first value wins)."""
    with open(bed.ssh_config_path, "a") as f:
        f.write(f"\nHost *\n    IdentityFile {bed.client_key_path}\n    IdentitiesOnly yes\n"
                f"    UserKnownHostsFile {bed.known_hosts_path}\n    GlobalKnownHostsFile /dev/null\n"
                f"    StrictHostKeyChecking yes\n    ConnectTimeout 5\n")
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text("# the evaluator's hosts\nhosts:\n  laptop:\n    ssh: me@laptop.example.org\n    workdir: /w\n"
                     "clusters:\n  other:   # kept as it is\n    roles:\n      control: [laptop]\n")
    monkeypatch.setenv("REPROBOOK_ROOT", str(ROOT))
    monkeypatch.setenv("REPROBOOK_HOSTS", str(hosts))
    monkeypatch.setenv("REPROBOOK_SSH_CONFIG", str(bed.ssh_config_path))
    monkeypatch.setenv("REPROBOOK_RUNS", str(tmp_path / "runs"))
    return hosts


def _import(manifest: Path, cluster: str, claim: str, workdir: Path):
    t0 = time.monotonic()
    res = subprocess.run(REPROBOOK + ["cloudlab", "import", str(manifest), "--cluster", cluster, "--claim", claim,
                                      "--workdir", str(workdir), "--yes"], capture_output=True, text=True, timeout=300)
    return res, time.monotonic() - t0


def test_pesto_rehearsal_profile_to_a_checked_cluster(bed, user_ssh, tmp_path):
    claim = "pesto/basil-workloads"   # its rehearsal: the experiment's three nodes fill the rehearsal scale's roles
    names = _manifest(_request(tmp_path, claim), bed, 70, tmp_path / "manifest.xml")
    assert names == ["control", "us-east-1-0", "client-0-0"]
    assert bed.known_hosts_path.read_text().strip() == ""
    res, took = _import(tmp_path / "manifest.xml", "rehearsal", claim, tmp_path / "work")
    print(f"\n{res.stdout}\nimport and check of 3 loopback hosts: {took:.1f} s")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "cluster rehearsal: 3 of 3 hosts answered" in res.stdout
    assert f"{claim}: every host answers and meets its role's requirements" in res.stdout
    assert "  rehearsal-us-east-1-0 (server): " in res.stdout and "SHA256:" in res.stdout   # each fingerprint shown
    # the keys were recorded through trust-host, one per host, into the known_hosts the SSH config names
    assert len(bed.known_hosts_path.read_text().splitlines()) == 3
    cfg = load_hosts(user_ssh)
    # the cluster's own names (<cluster>-<node>), each with its name inside the cluster
    assert dict(cfg.clusters["rehearsal"].roles) == {"control": ("rehearsal-control",),
                                                     "server": ("rehearsal-us-east-1-0",),
                                                     "client": ("rehearsal-client-0-0",)}
    assert cfg.hosts["rehearsal-us-east-1-0"].ssh == f"{bed.user}@127.0.0.71:{bed.servers['lo-us-east-1-0'].port}"
    assert cfg.hosts["rehearsal-us-east-1-0"].node == "us-east-1-0"
    assert "m510" in cfg.hosts["rehearsal-control"].description and "laptop" in cfg.hosts
    assert user_ssh.read_text().startswith("# the evaluator's hosts\nhosts:\n  laptop:\n")
    # the SSH config the user's includes reaches each node by its short name with plain OpenSSH
    out = subprocess.run(["ssh", "-F", str(bed.ssh_config_path), "rehearsal-us-east-1-0", "echo", "reached"],
                         capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "reached", out.stderr
    # check-host and plan see the imported cluster as any other
    chk = subprocess.run(REPROBOOK + ["check-host", "rehearsal", "--claim", claim], capture_output=True, text=True,
                         timeout=120)
    assert chk.returncode == 0 and "rehearsal-control (control)" in chk.stdout, chk.stdout + chk.stderr
    plan = subprocess.run(REPROBOOK + ["plan", claim, "--host", "rehearsal", "-p", "scale", "rehearsal"],
                          capture_output=True, text=True, timeout=120)
    assert plan.returncode == 0 and "role server: rehearsal-us-east-1-0" in plan.stdout, plan.stdout + plan.stderr


def test_sample_runs_paper_cluster_with_a_host_down_names_it_and_writes_the_others(bed, user_ssh, tmp_path):
    claim = "pesto/sample-runs"   # the guide's cluster: the control machine, six servers and a client node for each
    names = _manifest(_request(tmp_path, claim, "paper"), bed, 80, tmp_path / "manifest.xml")
    assert names == ["control", "us-east-1-0", "us-east-1-1", "us-east-1-2", "eu-west-1-0", "eu-west-1-1",
                     "eu-west-1-2", *(f"client-{i}-0" for i in range(6))]
    bed.servers["lo-eu-west-1-1"].stop()
    res, took = _import(tmp_path / "manifest.xml", "pesto", claim, tmp_path / "work")
    print(f"\n{res.stdout}\nimport and check of 13 loopback hosts, one down: {took:.1f} s")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "cluster pesto: 12 of 13 hosts answered" in res.stdout
    assert "pesto-eu-west-1-1 (server): not reachable" in res.stdout
    assert "  pesto-us-east-1-0 (server): " in res.stdout and "us-east-1-0 (server): not reachable" not in res.stdout
    assert len(load_hosts(user_ssh).clusters["pesto"].roles["server"]) == 6   # written all the same
    # the host back: importing again records its key and every host answers
    bed.servers["lo-eu-west-1-1"].start()
    res, _ = _import(tmp_path / "manifest.xml", "pesto", claim, tmp_path / "work")
    assert "cluster pesto: 13 of 13 hosts answered" in res.stdout, res.stdout + res.stderr
    assert len(bed.known_hosts_path.read_text().splitlines()) == 13
    # what may still fall short here is the guide's machine (Ubuntu, GNU parallel), never a host's reachability
    for line in res.stdout.splitlines():
        if "falls short" in line:
            assert all(("Ubuntu" in s or "'parallel'" in s) for s in line.split("falls short: ", 1)[1].split("; ")), line


def test_a_rehearsal_runs_on_the_imported_cluster(tmp_path, bed, monkeypatch):
    """The Pesto rehearsal (stand-in binaries, the authors' real harness) on a cluster that only an import wrote.

    The project, stand-in paper and sshd hosts are those of tests/integration/test_pequin_harness.py; its
    hosts file is emptied, and the cluster comes from the manifest of the claim's profile. Two settings are
    added by hand after the import because they are loopback's, not CloudLab's: the control host clones
    from the local git mirror, and reaches the others by their names through the testbed's SSH config (on
    CloudLab the experiment's nodes resolve each other's short names themselves).
    """
    from reprobook.core.config import load_project
    from reprobook.core.runs import RunStore
    from tests.integration import test_pequin_harness as harness
    proj = harness.cluster.__wrapped__(tmp_path, bed, monkeypatch)
    hosts_file = proj / "configs" / "hosts.yaml"
    hosts_file.write_text("# written by the import below\nhosts: {}\n")
    claim = "standin/basil-workloads"
    try:
        genilib.site_dir()
    except genilib.Unavailable as exc:
        unavailable(str(exc))
    script = tmp_path / "profile.py"
    subprocess.run(REPROBOOK + ["cloudlab", "profile", claim, "--scale", "rehearsal", "-o", str(script)], check=True,
                   capture_output=True, text=True, timeout=120)
    ET.register_namespace("", RSPEC)
    root = ET.fromstring(genilib.run_profile(script, tmp_path / "request.xml", {"n_client": 2}))   # two client nodes
    names = []
    for node in root.findall(f"{{{RSPEC}}}node"):
        name = node.get("client_id")
        server = bed.servers[name]   # the harness test's sshd of that name
        services = node.find(f"{{{RSPEC}}}services")
        ET.SubElement(services, f"{{{RSPEC}}}login", {"authentication": "ssh-keys", "hostname": server.addr,
                                                      "port": str(server.port), "username": bed.user})
        ET.SubElement(node, f"{{{RSPEC}}}host", {"name": server.addr})
        names.append(name)
    assert names == ["control", "us-east-1-0", "client-0-0", "client-0-1"]
    (tmp_path / "manifest.xml").write_text(ET.tostring(root, encoding="unicode"))
    with open(bed.ssh_config_path, "a") as f:   # the user's key and known_hosts, for the addresses too
        f.write(f"\nHost *\n    IdentityFile {bed.client_key_path}\n    IdentitiesOnly yes\n"
                f"    UserKnownHostsFile {bed.known_hosts_path}\n    GlobalKnownHostsFile /dev/null\n")
    res = subprocess.run(REPROBOOK + ["cloudlab", "import", str(tmp_path / "manifest.xml"), "--cluster", "rehearsal",
                                      "--claim", claim, "--workdir", str(tmp_path / "work" / "{name}"), "--yes"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "every host answers and meets its role's requirements" in res.stdout
    data = yaml.safe_load(hosts_file.read_text())
    data["hosts"]["rehearsal-control"]["git_url_rewrites"] = {"https://github.com/": f"{harness.GIT_MIRROR}/"}
    data["hosts"]["rehearsal-control"]["env"] = {"RB_SSH_CONFIG": str(bed.ssh_config_path)}
    hosts_file.write_text(yaml.safe_dump(data, sort_keys=False))
    project = load_project(proj)
    # the README's two commands after the import: the dry run, then the run, on the cluster by its name
    params = [a for k, v in {**harness.FAST, "clients": [4]}.items() for a in ("-p", k, json.dumps(v))]
    dry = subprocess.run(REPROBOOK + ["run", claim, "--source", "live", "--host", "rehearsal", "--dry-run", *params],
                         capture_output=True, text=True, timeout=300)
    assert dry.returncode == 0 and "rehearsal-us-east-1-0" in dry.stdout, dry.stdout + dry.stderr
    cli = subprocess.run(REPROBOOK + ["run", claim, "--source", "live", "--host", "rehearsal", "-q", *params],
                         capture_output=True, text=True, timeout=1200)
    runs = RunStore(project.settings.runs_dir).runs(project.claim(claim))
    assert len(runs) == 1, (runs, cli.stdout + cli.stderr)
    run = runs[0]
    assert run.status == "succeeded", (run.manifest.get("error"), (run.path / "log.txt").read_text()[-3000:])
    # the stand-in paper has no notebook pages, so the command stops after the run, before its page's verdict (the
    # real claims' pages judge it; the same checks judge it below)
    assert cli.returncode in (0, 3) or f"no notebook for {claim}" in cli.stderr, cli.stdout + cli.stderr
    # the run placed the cluster's hosts, and the harness reached them by their names inside the cluster
    assert run.manifest["placement"]["roles"] == {"control": ["rehearsal-control"], "server": ["rehearsal-us-east-1-0"],
                                                  "client": ["rehearsal-client-0-0", "rehearsal-client-0-1"]}
    assert run.manifest["placement"]["nodes"] == {f"rehearsal-{n}": n for n in names}
    verdict, frame = harness.claim_verdict(project.claim(claim), run)
    assert list(frame["client_total"]) == [4] and harness.rehearsal_verdicts(verdict) == ["holds", "holds"], verdict
