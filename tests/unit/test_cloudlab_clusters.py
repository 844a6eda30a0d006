"""Clusters imported from CloudLab are first-class: their names are their own, they record their experiment, a run
takes its CloudLab parameters from them, and `cloudlab forget` takes one out again.

No host is contacted (``--no-check``); the loopback checks of imported clusters are
tests/integration/test_hostile_cloudlab.py. The manifests are the real ones in ../shared/cloudlab/manifests, or
made here from a claim's request RSpec the way the portal makes one.
"""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from reprobook import cloudlab
from reprobook.cli import main
from reprobook.core.config import load_hosts, load_project
from reprobook.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT.parent / "shared" / "cloudlab" / "manifests"
ONE = MANIFESTS / "utah-1-node-m510.xml"
RSPEC = "http://www.geni.net/resources/rspec/3"
EMULAB = "http://www.protogeni.net/resources/rspec/ext/emulab/1"

HOSTS = """\
# the evaluator's hosts
hosts:
  lab1:
    ssh: me@lab1.example.org   # a comment
    workdir: /data

clusters:
  mine:   # a cluster of their own
    roles:
      control: [lab1]
# the end
"""
SSH = "Host lab1\n    HostName lab1.example.org\n    User me\n"


@pytest.fixture
def env(tmp_path, monkeypatch):
    if not ONE.is_file():
        pytest.skip(f"no real manifests at {MANIFESTS}")
    (tmp_path / "hosts.yaml").write_text(HOSTS)
    ssh = tmp_path / "ssh" / "config"
    ssh.parent.mkdir()
    ssh.write_text(SSH)
    monkeypatch.setenv("REPROBOOK_ROOT", str(ROOT))
    monkeypatch.setenv("REPROBOOK_HOSTS", str(tmp_path / "hosts.yaml"))
    monkeypatch.setenv("REPROBOOK_SSH_CONFIG", str(ssh))
    monkeypatch.setenv("REPROBOOK_RUNS", str(tmp_path / "runs"))
    return tmp_path


def _import(*args) -> int:
    return main(["cloudlab", "import", *map(str, args), "--no-check"])


def _renamed(tmp_path: Path, name: str, node: str, host: str | None = None) -> Path:
    text = ONE.read_text().replace('client_id="node-0"', f'client_id="{node}"', 1)
    if host is not None:
        text = text.replace('name="node-0.pisces.tcm-test-PG0.utah.cloudlab.us"', f'name="{host}"', 1)
    p = tmp_path / name
    p.write_text(text)
    return p


# --------------------------------------------------------------------------- names in the cluster's namespace

def test_two_experiments_with_the_same_node_names_live_side_by_side_and_forget_takes_one_out(env, capsys):
    hosts_before, ssh_before = (env / "hosts.yaml").read_bytes(), (env / "ssh" / "config").read_bytes()
    other = _renamed(env, "other.xml", "node-0", "node-0.other.tcm-test-PG0.utah.cloudlab.us")
    assert _import(ONE, "--cluster", "a") == 0
    with_a = (env / "hosts.yaml").read_bytes(), (env / "ssh" / "config").read_bytes()
    assert _import(other, "--cluster", "b") == 0
    out = capsys.readouterr().out
    assert "added hosts and SSH aliases b-node-0" in out and "experiment: other, project tcm-test-pg0" in out
    cfg = load_hosts(env / "hosts.yaml")
    assert dict(cfg.clusters["a"].roles) == {"node": ("a-node-0",)} and dict(cfg.clusters["b"].roles) == {
        "node": ("b-node-0",)}
    assert cfg.hosts["a-node-0"].node == cfg.hosts["b-node-0"].node == "node-0"
    assert cfg.hosts["b-node-0"].target()[1] == "node-0.other.tcm-test-PG0.utah.cloudlab.us"
    assert cfg.clusters["b"].cloudlab["experiment"] == "other" and cfg.clusters["a"].cloudlab["experiment"] == "pisces"
    # each SSH alias is the cluster's own, in its own file, included at the top of the user's config
    a_conf, b_conf = env / "ssh" / "reprobook" / "a.conf", env / "ssh" / "reprobook" / "b.conf"
    assert "Host a-node-0\n" in a_conf.read_text() and "Host node-0" not in a_conf.read_text()
    assert (env / "ssh" / "config").read_text() == f"Include {b_conf}\nInclude {a_conf}\n" + SSH

    # forget b: hosts.yaml and the user's SSH config byte for byte as they were with a alone
    assert main(["cloudlab", "forget", "b"]) == 0
    out = capsys.readouterr().out
    assert "cluster b: removed" in out and "b-node-0" in out
    assert not b_conf.exists() and a_conf.exists()
    assert ((env / "hosts.yaml").read_bytes(), (env / "ssh" / "config").read_bytes()) == with_a
    # and a: both files exactly as before any import
    assert main(["cloudlab", "forget", "a"]) == 0
    assert ((env / "hosts.yaml").read_bytes(), (env / "ssh" / "config").read_bytes()) == (hosts_before, ssh_before)
    # forgetting what is not there: one line, exit 2
    assert main(["cloudlab", "forget", "a"]) == 2
    assert "no cluster named 'a'" in capsys.readouterr().err


def test_forget_restores_a_file_that_had_no_hosts_and_an_ssh_config_that_did_not_exist(env):
    (env / "hosts.yaml").write_text("# only a comment\nhosts: {}\n")
    (env / "ssh" / "config").unlink()
    assert _import(ONE, "--cluster", "one") == 0
    assert main(["cloudlab", "forget", "one"]) == 0
    assert (env / "hosts.yaml").read_text() == "# only a comment\nhosts: {}\n"   # the clusters section it added: gone
    assert not (env / "ssh" / "config").exists()


def yaml_load(path: Path):
    import yaml
    return yaml.safe_load(path.read_text())


def test_a_node_named_like_a_host_never_replaces_it_unless_replace(env, capsys):
    # node "lab1" is one-lab1: lab1 stays; a standalone host one-spare is taken only with --replace, and named
    (env / "hosts.yaml").write_text(HOSTS.replace("clusters:", "  one-spare:\n    ssh: spare.example.org\n"
                                                               "    workdir: /s\n\nclusters:"))
    before = (env / "hosts.yaml").read_bytes()
    assert _import(_renamed(env, "lab1.xml", "lab1"), "--cluster", "one") == 0
    cfg = load_hosts(env / "hosts.yaml")
    assert cfg.hosts["lab1"].ssh == "me@lab1.example.org" and cfg.hosts["one-lab1"].node == "lab1"
    spare = _renamed(env, "spare.xml", "spare")
    (env / "hosts.yaml").write_bytes(before)
    assert _import(spare, "--cluster", "one") == 2
    err = capsys.readouterr().err
    assert "already has host(s) one-spare" in err and "--replace" in err and "Traceback" not in err
    assert (env / "hosts.yaml").read_bytes() == before
    assert _import(spare, "--cluster", "one", "--replace") == 0
    assert "replaced host(s) one-spare (--replace)" in capsys.readouterr().out
    assert load_hosts(env / "hosts.yaml").hosts["one-spare"].node == "spare"


def test_an_alias_the_users_ssh_config_already_resolves_is_refused(env, capsys):
    """The user's own `Host one-node-0` (or a pattern that sends it elsewhere) is theirs: refused, nothing written;
    a `Host *` that only adds options does not make a name taken."""
    (env / "ssh" / "config").write_text(SSH + "Host *\n    ServerAliveInterval 10\n")
    assert _import(ONE, "--cluster", "one") == 0
    assert main(["cloudlab", "forget", "one"]) == 0
    ssh = SSH + "Host one-*\n    HostName jump.example.org\n"
    (env / "ssh" / "config").write_text(ssh)
    before = (env / "hosts.yaml").read_bytes()
    assert _import(ONE, "--cluster", "one") == 2
    err = capsys.readouterr().err
    assert "already gives one-node-0 a meaning" in err and "hostname jump.example.org" in err, err
    assert (env / "hosts.yaml").read_bytes() == before and (env / "ssh" / "config").read_text() == ssh
    assert not (env / "ssh" / "reprobook" / "one.conf").exists()


@pytest.mark.parametrize("cluster", ["c2\n", "c2\nHost *", "-c", "a b", ""])
def test_a_cluster_name_is_matched_whole(env, capsys, cluster):
    before = (env / "hosts.yaml").read_bytes(), (env / "ssh" / "config").read_bytes()
    assert _import(ONE, f"--cluster={cluster}") == 2
    err = capsys.readouterr().err
    assert "--cluster" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert ((env / "hosts.yaml").read_bytes(), (env / "ssh" / "config").read_bytes()) == before
    assert not (env / "ssh" / "reprobook").exists()


def test_patterns_are_matched_whole():
    assert cloudlab._NAME.fullmatch("c2\n") is None and cloudlab._HOSTNAME.fullmatch("h.example.org\n") is None
    assert cloudlab._USER.fullmatch("alice\n") is None
    from reprobook.core.config import HostSpec
    with pytest.raises(ConfigError):
        HostSpec("x", "alice@host\n", "/w").target()


# --------------------------------------------------------------------------- any valid hosts.yaml

@pytest.mark.parametrize("text", [
    "hosts: {lab1: {ssh: me@lab1.example.org,\n          workdir: /data}}\nclusters: {mine: {roles: {control: [lab1]}}}\n",
    "hosts: {\n  lab1: {ssh: me@lab1.example.org, workdir: /data}\n  }\nclusters:\n  mine:\n    roles: {control: [lab1]}\n",
    "{hosts: {lab1: {ssh: me@lab1.example.org, workdir: /data}},\n clusters: {mine: {roles: {control: [lab1]}}}}\n",
])
def test_flow_mappings_over_several_lines_are_read_and_kept(env, text):
    (env / "hosts.yaml").write_text(text)
    assert _import(ONE, "--cluster", "one") == 0
    cfg = load_hosts(env / "hosts.yaml")
    assert cfg.hosts["lab1"].ssh == "me@lab1.example.org" and dict(cfg.clusters["mine"].roles) == {"control": ("lab1",)}
    assert dict(cfg.clusters["one"].roles) == {"node": ("one-node-0",)}
    assert main(["cloudlab", "forget", "one"]) == 0
    cfg = load_hosts(env / "hosts.yaml")
    assert set(cfg.hosts) == {"local", "lab1"} and set(cfg.clusters) == {"mine"}


@pytest.mark.parametrize("text, words", [
    ("hosts: {lab1: {ssh: x, workdir: /w}\n", "hosts.yaml: line 2: not valid YAML: while parsing a flow mapping"),
    ("hosts:\n  - lab1\n", "hosts.yaml: hosts: ['lab1'] is not of type 'object'"),
    ("- a\n- b\n", "hosts.yaml: (top level): ['a', 'b'] is not of type 'object'"),
])
def test_a_hosts_file_that_cannot_be_read_is_refused_in_one_line(env, capsys, text, words):
    (env / "hosts.yaml").write_text(text)
    assert _import(ONE, "--cluster", "one") == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert (env / "hosts.yaml").read_text() == text


@pytest.mark.parametrize("entry, key", [
    ('  "-oProxyCommand=sh":\n    ssh: a.example.org\n    workdir: /w\n', "hosts.'-oProxyCommand=sh'"),
    ('  "a b":\n    ssh: a.example.org\n    workdir: /w\n', "hosts.'a b'"),
    ('  ok:\n    ssh: "alice@a.example.org\\n"\n    workdir: /w\n', "hosts.ok.ssh"),
    ('  ok:\n    ssh: "-oProxyCommand=sh@a"\n    workdir: /w\n', "hosts.ok.ssh"),
    ('  ok:\n    ssh: a.example.org\n    workdir: /w\n    node: "n\\n"\n', "hosts.ok.node"),
    ('  local:\n    ssh: evil.example.org\n    workdir: /w\n', "hosts.local"),
])
def test_host_names_and_users_are_validated_when_the_file_is_loaded(tmp_path, entry, key):
    path = tmp_path / "hosts.yaml"
    path.write_text("hosts:\n" + entry)
    with pytest.raises(ConfigError) as exc:
        load_hosts(path)
    assert str(exc.value).startswith(f"{path}: {key}: "), str(exc.value)


# --------------------------------------------------------------------------- the experiment travels with its cluster

def _pesto_manifest(tmp_path: Path, claim_key: str, domain: str = "clemson.cloudlab.us") -> tuple[Path, list[str]]:
    """The manifest CloudLab would return for the claim's profile: every node logged in to as alice, named
    <node>.myexp.myproj-PG0.<domain> (another experiment, project and cluster than the authors')."""
    project = load_project(ROOT)
    nodes = cloudlab.nodes_for_claim(project, project.claim(claim_key))
    ET.register_namespace("", RSPEC)
    ET.register_namespace("emulab", EMULAB)
    root = ET.fromstring(cloudlab.request_rspec(nodes))
    names = []
    for i, node in enumerate(root.findall(f"{{{RSPEC}}}node")):
        name = node.get("client_id")
        services = node.find(f"{{{RSPEC}}}services")
        ET.SubElement(services, f"{{{RSPEC}}}login", {"authentication": "ssh-keys", "hostname": f"ms{1000 + i}.{domain}",
                                                      "port": "22", "username": "alice"})
        ET.SubElement(node, f"{{{RSPEC}}}host", {"name": f"{name}.myexp.myproj-PG0.{domain}", "ipv4": f"10.0.0.{i}"})
        names.append(name)
    ET.SubElement(root, f"{{{EMULAB}}}portal", {"name": "cloudlab", "project": "MyProj", "experiment": "myexp"})
    path = tmp_path / f"{claim_key.replace('/', '-')}.xml"
    path.write_text(ET.tostring(root, encoding="unicode"))
    return path, names


def _pequin_project(tmp_path, monkeypatch):
    git = ROOT.parent / "shared" / "git" / "github.com" / "fsuri" / "Pequin-Artifact"
    if not git.is_dir():
        pytest.skip("no local mirror of fsuri/Pequin-Artifact")
    monkeypatch.setenv("REPROBOOK_GIT_BASE_URL", f"file://{git.parent.parent.parent}/github.com/")
    monkeypatch.setenv("REPROBOOK_ARTIFACT_MIRROR", str(tmp_path / "no-mirror"))
    return load_project(ROOT)


@pytest.mark.parametrize("claim_key", ["pesto/sample-runs", "pesto/workloads"])
def test_the_paper_scale_configs_on_an_imported_cluster_name_only_its_hosts(env, monkeypatch, capsys, claim_key):
    """At the paper's scale on a cluster imported from its manifest: no -p for the CloudLab names; every host the
    configs name is a host of the cluster (with the manifest's experiment, project and domain), the comparison
    systems' set-up names the nodes by their names inside the cluster, and the dry run says where each came from."""
    from reprobook.core.inputs import generate as generate_inputs
    from reprobook.remote.live import plan_live
    from reprobook.remote.placement import Placement
    manifest, names = _pesto_manifest(env, claim_key)
    assert _import(manifest, "--cluster", "pesto", "--claim", claim_key) == 0
    project = _pequin_project(env, monkeypatch)
    claim = project.claim(claim_key)
    cluster = project.hosts.clusters["pesto"]
    assert dict(cluster.cloudlab) == {"experiment": "myexp", "project": "myproj-pg0", "domain": "clemson.cloudlab.us",
                                      "user": "alice"}
    params = {"configs": [c for c in claim.parameters["configs"].default if "TPCC" in c and "low" not in c]}
    plan = plan_live(project, claim, "pesto", params)
    assert (plan.params["cloudlab_experiment"], plan.params["cloudlab_project"], plan.params["cloudlab_domain"],
            plan.params["cloudlab_user"]) == ("myexp", "myproj-pg0", "clemson.cloudlab.us", "alice")
    text = plan.describe()
    assert "cloudlab_experiment=myexp (from cluster pesto: its CloudLab experiment)" in text, text
    assert "cloudlab_project=myproj-pg0 (from cluster pesto: its CloudLab project)" in text
    assert any(d.what.startswith("upload_data_remote.sh names the nodes") for d in plan.deviations)
    placement = Placement.of(project, dict(plan.roles), "control", "pesto")
    assert placement.env()["RB_HOSTS_SERVER"].split()[0] == "us-east-1-0"   # the harness's name, not pesto-us-east-1-0
    made = generate_inputs(project, plan, placement)
    configs = [json.loads(m.data) for m in made if m.name.endswith(".json")]
    assert configs
    fqdns = {project.hosts.host(h).target()[1].lower() for h in cluster.hosts}
    for config in configs:
        assert (config["experiment_name"], config["project_name"], config["emulab_user"]) == (
            "myexp", "myproj-pg0", "alice")
        exp, proj = config["experiment_name"], config["project_name"]
        servers = config["server_names"]
        servers = [n for ns in servers for n in ns] if servers and isinstance(servers[0], list) else servers
        named = {(config["server_host_format_str"] % (s, exp, proj)).lower() for s in servers}
        per = config.get("client_nodes_per_server", 1)
        per = per if isinstance(per, int) else max(per)
        named |= {(config["client_host_format_str"] % (i, j, exp, proj)).lower()
                  for i in range(len(set(servers))) for j in range(per)}
        assert named <= fqdns, sorted(named - fqdns)
    for m in made:
        if m.name.endswith(".prepare.sh"):
            assert "pesto-" not in m.data.decode()   # the nodes by their names inside the cluster
    # a name given by hand that is not the cluster's: refused before anything runs, naming the parameter and the fix
    for param, value in (("cloudlab_experiment", "pequin"), ("cloudlab_project", "pequin-pg0"),
                         ("cloudlab_domain", "utah.cloudlab.us")):
        with pytest.raises(ConfigError) as exc:
            plan_live(project, claim, "pesto", {**params, param: value})
        msg = str(exc.value)
        assert f"-p {param} {value} is not the cluster's" in msg and "outside cluster 'pesto'" in msg, msg
        assert f"leave -p {param} out" in msg
    capsys.readouterr()
    assert main(["run", claim_key, "--source", "live", "--host", "pesto", "--dry-run"]) == 0   # the README's
    out = capsys.readouterr().out
    assert "cloudlab_user=alice (from cluster pesto: its CloudLab user)" in out and "nothing was started" in out
    assert "cloudlab_domain=clemson.cloudlab.us (from cluster pesto: its CloudLab domain)" in out
    assert main(["run", claim_key, "--source", "live", "--host", "pesto", "-p", "cloudlab_experiment", "pequin",
                 "--dry-run"]) == 2
    assert "-p cloudlab_experiment pequin is not the cluster's myexp" in capsys.readouterr().err


def test_a_hand_written_cluster_of_cloudlab_host_names_is_checked_too(tmp_path, monkeypatch):
    """No record (a cluster written by hand, as the book's getting-started page shows), but host names of the
    CloudLab form: the authors' defaults no longer reach the configs, and a wrong name is refused."""
    from reprobook.remote.live import plan_live
    servers = ["us-east-1-0", "us-east-1-1", "us-east-1-2", "eu-west-1-0", "eu-west-1-1", "eu-west-1-2"]
    clients = [f"client-{i}-0" for i in range(6)]
    lines = ["hosts:"] + [f"  {n}: {{ssh: me@{n}.pesto.myproject-pg0.utah.cloudlab.us, workdir: /w}}"
                          for n in ["control", *servers, *clients]]
    lines += ["clusters:", "  pesto:", "    roles:", "      control: [control]", f"      server: [{', '.join(servers)}]",
              f"      client: [{', '.join(clients)}]"]
    (tmp_path / "hosts.yaml").write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("REPROBOOK_HOSTS", str(tmp_path / "hosts.yaml"))
    project = load_project(ROOT)
    claim = project.claim("pesto/sample-runs")
    plan = plan_live(project, claim, "pesto", {})
    assert plan.params["cloudlab_experiment"] == "" and "cluster pesto records no CloudLab experiment" in plan.describe()
    with pytest.raises(ConfigError, match=r"-p cloudlab_project pequin-pg0 is not the cluster's myproject-pg0"):
        plan_live(project, claim, "pesto", {"cloudlab_experiment": "pesto", "cloudlab_project": "pequin-pg0",
                                            "cloudlab_user": "me"})
    ok = plan_live(project, claim, "pesto", {"cloudlab_experiment": "pesto", "cloudlab_project": "myproject-pg0",
                                             "cloudlab_user": "me"})
    assert ok.origins["cloudlab_experiment"] == "given"


def test_the_upload_script_patched_sends_the_data_to_the_clusters_project(tmp_path):
    """The authors' upload_data_remote.sh at the paper's commit, with the recorded patch: -P and -D name the
    project and domain of the nodes' host names (the cluster's), where it had the authors' pequin-pg0 fixed.
    GNU parallel is replaced by a shim that writes down each command it is given."""
    import subprocess
    git = ROOT.parent / "shared" / "git" / "github.com" / "fsuri" / "Pequin-Artifact"
    if not git.is_dir():
        pytest.skip("no local mirror of fsuri/Pequin-Artifact")
    commit = load_project(ROOT).paper("pesto").repositories["pequin-artifact"].commit
    work = tmp_path / "Pequin-Artifact"
    (work / "src").mkdir(parents=True)
    script = subprocess.run(["git", "-C", str(git), "show", f"{commit}:src/upload_data_remote.sh"], check=True,
                            capture_output=True).stdout
    (work / "src" / "upload_data_remote.sh").write_bytes(script)
    patch = ROOT / "configs" / "patches" / "pequin" / "upload-data-project.patch"
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run(["git", "-C", str(work), "apply", str(patch)], check=True, capture_output=True)
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "parallel").write_text('#!/bin/sh\nprintf "%s\\n" "$1" >> "$PARALLEL_LOG"\n')
    (shims / "parallel").chmod(0o755)

    def commands(*args) -> str:
        log = tmp_path / f"parallel-{len(args)}.log"
        subprocess.run(["bash", "upload_data_remote.sh", "-u", "alice", "-e", "myexp", *args, "-b", "tpcc"],
                       cwd=work / "src", check=True, capture_output=True, timeout=60,
                       env={"PATH": f"{shims}:/usr/bin:/bin", "PARALLEL_LOG": str(log)})
        return log.read_text()
    ours = commands("-P", "myproj-pg0", "-D", "clemson.cloudlab.us")
    assert ours.count("alice@{}.myexp.myproj-pg0.clemson.cloudlab.us:/users/alice/benchmark_data/") == 3, ours
    assert "pequin" not in ours and "utah" not in ours
    # without them, the script does what it did: the authors' project and Utah
    assert "alice@{}.myexp.pequin-pg0.utah.cloudlab.us:" in commands()
