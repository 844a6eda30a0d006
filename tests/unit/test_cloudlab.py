"""reprobook cloudlab import: real CloudLab manifests into hosts.yaml and an SSH config, and what is refused.

The manifests are the real ones in ../shared/cloudlab/manifests (read there, never copied); the hostile
ones are written here. The command runs in-process through `reprobook.cli.main`, against a hosts file
and an SSH config in tmp_path (``REPROBOOK_HOSTS``, ``REPROBOOK_SSH_CONFIG``), with ``--no-check``: the
check of imported hosts on real sshd is tests/integration/test_cloudlab_roundtrip.py.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from reprobook import cloudlab
from reprobook.cli import main
from reprobook.core.config import load_hosts, load_project

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT.parent / "shared" / "cloudlab" / "manifests"
BIG = MANIFESTS / "utah-101-nodes.xml"
ONE = MANIFESTS / "utah-1-node-m510.xml"

HOSTS_YAML = """\
# Hosts for the evaluation. A comment at the top.
hosts:
  lab1:
    ssh: me@lab1.example.org   # a comment on a line of another host
    workdir: /data
  lab2:
    ssh: lab2
    workdir: /data

# a comment between the sections
clusters:
  mine:   # another cluster, with its own comment
    roles:
      control: [lab1]
      worker: [lab2]
# a comment at the end
"""


@pytest.fixture
def env(tmp_path, monkeypatch):
    if not BIG.is_file():
        pytest.skip(f"no real manifests at {MANIFESTS}")
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text(HOSTS_YAML)
    ssh = tmp_path / "ssh" / "config"
    ssh.parent.mkdir()
    ssh.write_text("Host lab2\n    HostName lab2.example.org\n")
    monkeypatch.setenv("REPROBOOK_ROOT", str(ROOT))
    monkeypatch.setenv("REPROBOOK_HOSTS", str(hosts))
    monkeypatch.setenv("REPROBOOK_SSH_CONFIG", str(ssh))
    return tmp_path


def _import(*args) -> int:
    return main(["cloudlab", "import", *map(str, args), "--no-check"])


def _is_subsequence(small: list[str], big: list[str]) -> bool:
    it = iter(big)
    return all(line in it for line in small)


def test_the_real_101_node_manifest_imports_in_under_a_second_and_again_changes_nothing_else(env, capsys):
    hosts_path = env / "hosts.yaml"
    t0 = time.monotonic()
    m = cloudlab.read_manifest(BIG)
    parsed = time.monotonic() - t0
    assert _import(BIG, "--cluster", "hyperion") == 0
    out = capsys.readouterr().out
    took = float(out.split("(", 1)[1].split(" s;", 1)[0])   # the import's own time: read, map, write, validate
    print(f"\n101-node manifest: parsed in {parsed * 1000:.0f} ms, imported in {took:.2f} s")
    assert took < 1.0, out
    cfg = load_hosts(hosts_path)
    cluster = cfg.clusters["hyperion"]
    members = [h for hs in cluster.roles.values() for h in hs]
    assert len(members) == 101 and len(set(members)) == 101
    # each node is the cluster's own host <cluster>-<node>, with its name inside the cluster
    assert set(members) == {f"hyperion-{n.name}" for n in m.nodes} and "hyperion-node1" in members
    assert cfg.hosts["hyperion-node1"].node == "node1" and "node1" not in cfg.hosts
    # the right user, host name and port: as the manifest says, node by node
    for n in m.nodes:
        assert cfg.hosts[f"hyperion-{n.name}"].target() == (
            "asdwb", f"{n.name}.asdwb-264395.hyperion-PG0.utah.cloudlab.us", None)
    # the cluster records its experiment, project and domain (from the nodes' host names) and the user
    assert dict(cluster.cloudlab) == {"experiment": "asdwb-264395", "project": "hyperion-pg0",
                                      "domain": "utah.cloudlab.us", "user": "asdwb"}
    hw = {}
    for n in m.nodes:
        hw[n.hardware_type] = hw.get(n.hardware_type, 0) + 1
    assert hw == {"m510": 40, "xl170": 25, "c6525-25g": 18, "c6620": 17, "d6515": 1}  # as the README counts them
    assert "c6525-25g" in cfg.hosts["hyperion-node1"].description
    assert "amd117.utah.cloudlab.us" in cfg.hosts["hyperion-node1"].description
    # the other cluster, its hosts and every comment are as they were, in the same order
    text = hosts_path.read_text()
    assert _is_subsequence(HOSTS_YAML.splitlines(), text.splitlines())
    assert cfg.clusters["mine"].roles == {"control": ("lab1",), "worker": ("lab2",)}
    # the SSH config: short name -> HostName, User, Port, included from the user's config (at its top)
    ssh_cfg = env / "ssh" / "reprobook" / "hyperion.conf"
    blocks = ssh_cfg.read_text().split("\nHost ")[1:]
    assert len(blocks) == 101
    assert blocks[0].split() == ["hyperion-node1", "HostName", "node1.asdwb-264395.hyperion-PG0.utah.cloudlab.us", "User",
                                 "asdwb", "Port", "22"]
    user_cfg = (env / "ssh" / "config").read_text().splitlines()
    assert user_cfg[0] == f"Include {ssh_cfg}" and "Host lab2" in user_cfg
    # importing again: the same file but for the time of the import, one Include
    before = text
    assert _import(BIG, "--cluster", "hyperion") == 0
    changed = [(a, b) for a, b in zip(before.splitlines(), hosts_path.read_text().splitlines()) if a != b]
    assert len(before.splitlines()) == len(hosts_path.read_text().splitlines())
    assert all("imported from utah-101-nodes.xml at" in a for a, _ in changed), changed
    assert (env / "ssh" / "config").read_text().count("Include") == 1


def test_the_1_node_manifest_pc_hardware_is_read_from_vnode_and_a_second_import_replaces_the_cluster(env):
    (node,) = cloudlab.read_manifest(ONE).nodes
    assert (node.name, node.hardware_type, node.user, node.port) == ("node-0", "m510", "tmitchel", 22)
    assert node.disk_image == "urn:publicid:IDN+emulab.net+image+emulab-ops:UBUNTU14-64-X86"
    assert node.hostname == "node-0.pisces.tcm-test-PG0.utah.cloudlab.us" and node.physical == "ms1041.utah.cloudlab.us"
    assert _import(BIG, "--cluster", "exp") == 0
    assert _import(ONE, "--cluster", "exp") == 0   # the experiment was replaced by another: its hosts go
    cfg = load_hosts(env / "hosts.yaml")
    assert dict(cfg.clusters["exp"].roles) == {"node": ("exp-node-0",)}
    assert not any(h.startswith("exp-node1") for h in cfg.hosts) and {"lab1", "lab2", "exp-node-0"} <= set(cfg.hosts)
    assert dict(cfg.clusters["exp"].cloudlab) == {"experiment": "pisces", "project": "tcm-test-pg0",
                                                  "domain": "utah.cloudlab.us", "user": "tmitchel"}
    assert _is_subsequence(HOSTS_YAML.splitlines(), (env / "hosts.yaml").read_text().splitlines())


def _variant(tmp_path, name, old, new, source=ONE) -> Path:
    text = source.read_text()
    assert old in text
    p = tmp_path / name
    p.write_text(text.replace(old, new, 1))
    return p


LOGIN = '<login authentication="ssh-keys" hostname="ms1041.utah.cloudlab.us" port="22" username="tmitchel"/>'


def test_a_login_per_project_member_needs_user(env, capsys):
    shared = _variant(env, "shared.xml", LOGIN, LOGIN + '\n      <login authentication="ssh-keys" '
                      'hostname="ms1041.utah.cloudlab.us" port="22" username="alice"/>')
    before = (env / "hosts.yaml").read_text()
    assert _import(shared, "--cluster", "c") == 2
    err = capsys.readouterr().err
    assert str(shared) in err and "tmitchel, alice" in err and "--user" in err
    assert (env / "hosts.yaml").read_text() == before
    assert _import(shared, "--cluster", "c", "--user", "alice") == 0
    assert load_hosts(env / "hosts.yaml").hosts["c-node-0"].ssh == "alice@node-0.pisces.tcm-test-PG0.utah.cloudlab.us"
    assert _import(shared, "--cluster", "c", "--user", "bob") == 2
    assert "no login for user 'bob'" in capsys.readouterr().err


BOMB = """<?xml version="1.0"?>
<!DOCTYPE rspec [
  <!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">
  <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
  <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
  <!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
  <!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;">
  <!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">
]>
<rspec xmlns="http://www.geni.net/resources/rspec/3" type="manifest"><node client_id="&f;"/></rspec>
"""
EXTERNAL = """<?xml version="1.0"?>
<!DOCTYPE rspec [ <!ENTITY secret SYSTEM "file:///etc/passwd"> ]>
<rspec xmlns="http://www.geni.net/resources/rspec/3" type="manifest"><node client_id="n">&secret;</node></rspec>
"""


@pytest.mark.parametrize("name, text, words", [
    ("malformed.xml", ONE, "malformed XML"),
    ("html.xml", "<html><body><node client_id='x'/></body></html>", "not a CloudLab manifest"),
    ("empty.xml", '<rspec xmlns="http://www.geni.net/resources/rspec/3" type="manifest"/>', "has no <node>"),
    ("bomb.xml", BOMB, "declares an entity 'a'"),
    ("external.xml", EXTERNAL, "external entity 'secret' (file:///etc/passwd)"),
    ("request.xml", '<rspec xmlns="http://www.geni.net/resources/rspec/3" type="request"><node client_id="control">'
                    '<hardware_type name="m510"/></node></rspec>', "this is a request RSpec"),
    ("inject.xml", ONE, "its client_id is not a host name"),
    ("badhost.xml", ONE, r"its host name 'x\ny' is not one"),
])
def test_what_is_not_a_usable_manifest_is_refused_with_exit_2_and_nothing_written(env, capsys, name, text, words):
    p = env / name
    if text is ONE:
        original = ONE.read_text()
        if name == "malformed.xml":
            p.write_text(original[: len(original) // 2])
        elif name == "inject.xml":   # a name that would add an SSH option to the config file
            p.write_text(original.replace('client_id="node-0"', 'client_id="node-0&#10;    ProxyCommand sh -c x"', 1))
        else:
            p.write_text(original.replace('name="node-0.pisces.tcm-test-PG0.utah.cloudlab.us"', 'name="x&#10;y"', 1))
    else:
        p.write_text(text)
    hosts_before = (env / "hosts.yaml").read_bytes()
    ssh_before = (env / "ssh" / "config").read_bytes()
    t0 = time.monotonic()
    assert _import(p, "--cluster", "c") == 2
    # the bomb is refused at its first entity declaration (the message says so), not expanded: expanded, it would
    # be 4 GB of text, minutes of work. A refusal takes under a second idle and 5 s on a loaded machine (seen):
    # 60 s tells the two apart without depending on the load.
    took = time.monotonic() - t0
    assert took < 60, f"refusing {name} took {took:.0f} s: was it expanded?"
    err = capsys.readouterr().err
    assert f"reprobook: error: {p}: not imported: " in err and words in err, err
    assert "Traceback" not in err
    assert (env / "hosts.yaml").read_bytes() == hosts_before
    assert (env / "ssh" / "config").read_bytes() == ssh_before
    assert not (env / "ssh" / "reprobook").exists()


def test_node_names_that_do_not_fill_the_claims_roles_are_refused_naming_roles_and_counts(env, capsys):
    before = (env / "hosts.yaml").read_bytes()
    assert _import(BIG, "--cluster", "pesto", "--claim", "pesto/sample-runs") == 2
    err = capsys.readouterr().err
    assert "do not match the roles of pesto/sample-runs" in err
    assert "role 'server' takes 6 hosts and the manifest has 0 (named us-east-1-0" in err
    assert "role 'control' takes 1 host and the manifest has 0" in err and "nodes of no role: node1" in err
    assert (env / "hosts.yaml").read_bytes() == before


def test_a_host_name_another_cluster_uses_is_refused(env, capsys):
    """Names are <cluster>-<node>: a node "lab2" of cluster "c" is c-lab2, no clash with the host lab2; a cluster
    whose qualified names are another cluster's hosts (cluster "c" with node-0, cluster "c-node" with "0") is
    refused, naming that cluster and the way out."""
    clash = _variant(env, "clash.xml", 'client_id="node-0"', 'client_id="lab2"')
    assert _import(clash, "--cluster", "c") == 0
    cfg = load_hosts(env / "hosts.yaml")
    assert cfg.hosts["c-lab2"].node == "lab2" and cfg.hosts["lab2"].ssh == "lab2"
    assert dict(cfg.clusters["mine"].roles) == {"control": ("lab1",), "worker": ("lab2",)}
    assert _import(ONE, "--cluster", "c") == 0          # the same cluster again: replaced, c-lab2 gone
    assert set(load_hosts(env / "hosts.yaml").hosts) == {"local", "lab1", "lab2", "c-node-0"}
    split = _variant(env, "split.xml", 'client_id="node-0"', 'client_id="0"')
    before = (env / "hosts.yaml").read_bytes()
    assert _import(split, "--cluster", "c-node") == 2
    err = capsys.readouterr().err
    assert "c-node-0 (a host of cluster 'c')" in err and "reprobook cloudlab forget c" in err, err
    assert (env / "hosts.yaml").read_bytes() == before


def test_roles_file_and_the_claims_names(env, tmp_path):
    roles = tmp_path / "roles.yaml"
    roles.write_text("control: [node1]\nworker: [node2, node3]\n")
    assert _import(BIG, "--cluster", "three", "--roles", roles) == 0
    cfg = load_hosts(env / "hosts.yaml")
    assert dict(cfg.clusters["three"].roles) == {"control": ("three-node1",), "worker": ("three-node2", "three-node3")}
    # the names the profile gives pesto/sample-runs fill its roles
    project = load_project(ROOT)
    names = [n for ns in cloudlab.role_names(project, project.claim("pesto/sample-runs")).values() for n in ns]
    assert names == ["control", "us-east-1-0", "us-east-1-1", "us-east-1-2", "eu-west-1-0", "eu-west-1-1",
                     "eu-west-1-2", "client-0-0", "client-1-0", "client-2-0", "client-3-0", "client-4-0", "client-5-0"]
    got = cloudlab.roles_for_claim(Path("m.xml"), project, project.claim("pesto/sample-runs"), names)
    assert got["server"][0] == "us-east-1-0" and len(got["client"]) == 6 and got["control"] == ["control"]


def test_an_empty_flow_style_hosts_file_takes_the_cluster(env):
    (env / "hosts.yaml").write_text("# only a comment\nhosts: {}\n")
    assert _import(ONE, "--cluster", "one") == 0
    text = (env / "hosts.yaml").read_text()
    assert text.startswith("# only a comment\nhosts:\n  one-node-0:\n") and yaml.safe_load(text)["clusters"]["one"]


# --------------------------------------------------------------------------- the Lab panel

def test_the_lab_panel_offers_a_profile_and_imports_an_uploaded_manifest(env, monkeypatch):
    """The panel's two halves without a browser: the profile of a claim (the same text as the command's, offered
    as a file to download, its nodes listed), and an uploaded manifest written into hosts.yaml (a real one,
    of one CloudLab node) with the check's report shown; a bad upload is said in the panel, nothing written."""
    import base64
    import datetime
    import re

    import matplotlib
    matplotlib.use("Agg")
    from reprobook import widgets
    monkeypatch.setenv("REPROBOOK_RUNS", str(env / "runs"))
    _NOW = datetime.datetime.now(datetime.timezone.utc)   # what the browser sends with a file (ipywidgets 8)
    panel = widgets.cloudlab_panel("pesto/sample-runs")
    panel.scale.value = "rehearsal"
    text = panel.profile()
    expected, nodes = cloudlab.make_profile(load_project(ROOT), "pesto/sample-runs", "rehearsal")
    assert text == expected and panel.script.value == expected
    link = re.search(r'download="([^"]+)" href="data:text/x-python;base64,([^"]+)"', panel.download.value)
    assert link and link.group(1) == "pesto-sample-runs-rehearsal.py"
    assert base64.b64decode(link.group(2)).decode() == expected
    assert all(n.role in panel.nodes.value for n in nodes) and "m510" in panel.nodes.value

    # nothing uploaded yet
    assert panel.import_manifest() is None and "upload the experiment's manifest first" in panel.status.value
    before = (env / "hosts.yaml").read_text()
    panel.upload.value = ({"name": "bad.xml", "type": "text/xml", "size": 9, "last_modified": _NOW,
                           "content": memoryview(b"<rspec><")},)
    panel.import_manifest().join(60)
    assert "bad.xml" in panel.status.value and "color:#b00" in panel.status.value
    assert (env / "hosts.yaml").read_text() == before

    panel.upload.value = ({"name": ONE.name, "type": "text/xml", "size": ONE.stat().st_size,
                           "last_modified": _NOW, "content": memoryview(ONE.read_bytes())},)
    panel.cluster.value = "onenode"
    panel.import_manifest().join(120)
    hosts = load_hosts(env / "hosts.yaml")
    assert "onenode" in hosts.clusters and "mine" in hosts.clusters
    assert "cluster onenode: 1 hosts written" in panel.report.value
    assert "cluster onenode: 0 of 1 hosts answered" in panel.report.value   # no network here: named, not raised
    assert "tick the box to record them" in panel.report.value   # its key is not recorded, and the panel says how
    assert (env / "runs" / "cloudlab-manifests" / ONE.name).read_bytes() == ONE.read_bytes()   # the manifest the cluster came from
