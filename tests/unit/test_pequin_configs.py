"""Experiment configs derived from the authors' ones (reprobook.papers.pesto.pequin), tested on the real files.

The inputs are the 221 JSON files under ``experiment-configs/`` of fsuri/Pequin-Artifact at the pinned
commit, taken from the local bare clone in ``../shared/git`` (folder names with spaces and colons, ``_``
comment keys, series configs the script wrote and the authors copied back, and four files the script cannot
run), and the series config the script wrote
beside the authors' shipped TPCC output.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import subprocess
import tarfile
from pathlib import Path

import pytest

from reprobook.core.plan import make_plan
from reprobook.errors import ConfigError
from reprobook.core.loaders import get_loader
from reprobook.papers.pesto.pequin import ClientSetting, ExperimentParams, generate, load_config
from reprobook.papers.pesto.systems import TLS_DISABLED
from reprobook.sources import Outputs
from tests.conftest import ROOT

GIT = ROOT.parent / "shared" / "git" / "github.com" / "fsuri" / "Pequin-Artifact"
COMMIT = "3f47079c96be29565e16cefc21d14eda519c14a3"
SAMPLE = ("github.com/fsuri/Pequin-Artifact/3f47079c96be29565e16cefc21d14eda519c14a3/sample-output/Pesto/"
          "1-Workloads/TPCC")
GUIDE_SERVERS = [f"{region}-{i}" for region in ("us-east-1", "eu-west-1", "ap-northeast-1", "us-west-1",
                                                "eu-central-1", "ap-southeast-2") for i in range(3)]
PARAMS = ExperimentParams(project="myproject-pg0", experiment="pesto", user="alice",
                          local_output_dir="/home/alice/pesto output", src_dir="/home/alice/Pequin-Artifact/src")
# the authors' files the experiment script cannot run as they are, and the key generate() names
UNRUNNABLE = {
    "Config-Override-Test/user_override.json": "experiment_independent_vars",
    "Config-Override-Test/backups/user_override.json": "experiment_independent_vars",
    "Cockroach-Deprecated/CRDB-TPCC-SQL-9s.json": "server_regions",
    "Pesto/2-Microbenchmarks/3-ReplicaFailure/Uniform-Failure-2-high.json": "client_total",
}


@pytest.fixture(scope="module")
def configs(tmp_path_factory) -> Path:
    """``experiment-configs/`` of the pinned commit, extracted from the bare clone."""
    if not GIT.is_dir():
        why = f"no clone of fsuri/Pequin-Artifact at {GIT}"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    archive = subprocess.run(["git", "--git-dir", str(GIT), "archive", COMMIT, "experiment-configs"],
                             capture_output=True, check=True).stdout
    root = tmp_path_factory.mktemp("pequin")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(root, filter="data")
    return root / "experiment-configs"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_authors_config_is_derived_or_refused_by_name(configs):
    files = sorted(configs.rglob("*.json"))
    assert len(files) == 221
    before = {p: digest(p) for p in files}
    refused = {}
    params = ExperimentParams(**{**PARAMS.__dict__, "clients": [5, 10, ClientSetting(20, 8, 2)], "duration_s": 30,
                                 "ramp_s": 5, "runs": 2})
    for path in files:
        try:
            generated = generate(path, params, placement={"server": GUIDE_SERVERS})
        except ConfigError as exc:
            refused[str(path.relative_to(configs))] = exc.key
            assert str(path) in str(exc)
            continue
        config = generated.config
        assert (config["project_name"], config["experiment_name"], config["emulab_user"]) == \
            ("myproject-pg0", "pesto", "alice")
        assert config["base_remote_bin_directory_nfs"] == "/users/alice/indicus"
        assert config["client_experiment_length"] == 30 and config["num_experiment_runs"] == 2
        assert not any("fs435" in str(config.get(k, ""))
                       for k in ("benchmark_schema_file_path", "bftsmart_codebase_dir"))
        # the comments are the authors': every _key kept as it was
        assert {k: v for k, v in config.items() if k.startswith("_")} == \
            {k: v for k, v in generated.original.items() if k.startswith("_")}
    assert refused == UNRUNNABLE
    assert {p: digest(p) for p in files} == before  # the authors' files are untouched


def test_tpcc_config_diff_and_write(configs, tmp_path):
    source = configs / "Pesto/1-Workloads/TPCC/LAN/Pequin-TPCC-SQL-20wh.json"
    params = ExperimentParams(**{**PARAMS.__dict__, "clients": [15, 30, 45], "duration_s": 30, "ramp_s": 5,
                                 "labels": {"system": "Pesto", "workload": "TPCC"}})
    generated = generate(source, params, placement={"server": [f"node-{i}" for i in range(6)]})
    c = generated.config
    assert c["client_total"] == [[15, 30, 45]] and c["client_processes_per_client_node"] == [[8, 8, 8]]
    assert c["client_threads_per_process"] == [[1, 1, 1]]
    assert c["server_names"] == [[f"node-{i}" for i in range(6)]]
    assert c["server_regions"] == [{"us-east-1": ["node-0", "node-1", "node-2"],
                                    "eu-west-1": ["node-3", "node-4", "node-5"]}]
    assert c["_reprobook_labels"] == {"system": "Pesto", "workload": "TPCC"}
    keys = [change.key for change in generated.changes]
    assert keys == ["benchmark_schema_file_path", "experiment_name", "client_total", "client_processes_per_client_node",
                    "client_threads_per_process", "client_experiment_length", "client_ramp_down", "client_ramp_up",
                    "project_name", "server_names", "server_regions", "base_local_exp_directory",
                    "base_remote_bin_directory_nfs", "emulab_user", "src_directory", "_reprobook_labels"]
    diff = generated.diff()
    assert diff.startswith(f"--- {source} (the authors')\n+++ Pequin-TPCC-SQL-20wh.json (generated)\n")
    assert '-  "emulab_user": "fs435",\n+  "emulab_user": "alice",' in diff
    assert '+  "base_local_exp_directory": "/home/alice/pesto output",' in diff
    removed = [line for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = {line[1:] for line in diff.splitlines() if line.startswith("+")}
    assert len(removed) == 35  # a comment key's line only gains the comma before the added _reprobook_labels
    assert all(line[1:] + "," in added for line in removed if line.startswith('-  "_'))
    assert len(generated.table()) == len(keys)
    written = generated.write(tmp_path / "run dir")
    assert written == tmp_path / "run dir" / "Pequin-TPCC-SQL-20wh.json"
    assert json.loads(written.read_text()) == c
    assert generate(written, PARAMS).original == c  # a generated config is itself an experiment config
    with pytest.raises(ConfigError, match="refusing to overwrite the authors' config"):
        generated.write(source.parent)


def test_series_shapes(configs, mirror):
    # a series the script wrote, which the authors kept as a config: one client setting, flat values
    eager = generate(configs / "Pesto/2-Microbenchmarks/3-ReplicaFailure/Uniform-Eager-0.json",
                     ExperimentParams(**{**PARAMS.__dict__, "clients": [10, 20]}))
    assert eager.config["client_total"] == [10, 20] and eager.config["replication_protocol"] == "pequin"
    # three series of 14 points each (Basil's read quorums): the client series goes to every series
    combined = generate(configs / "Basil/4-Micro: Reads/combined.json", ExperimentParams(**{**PARAMS.__dict__,
                        "clients": [40, 80]}))
    assert combined.config["client_total"] == [[40, 80]] * 3
    # one series as the script wrote it beside the authors' output: the client keys are its only group
    series = mirror / SAMPLE / "Pequin-TPCC-SQL-20wh-0.json"
    generated = generate(series, ExperimentParams(**{**PARAMS.__dict__, "clients": [15, 30]}))
    assert generated.config["client_total"] == [15, 30] and generated.config["client_threads_per_process"] == [1, 1]
    assert generated.config["server_names"] == load_config(series)["server_names"]
    point = mirror / SAMPLE / "2024-10-21-16-59-02" / "Pequin-TPCC-SQL-20wh-0-0.json"
    with pytest.raises(ConfigError, match="resolved down to one client setting") as info:
        generate(point, PARAMS)
    assert info.value.key == "experiment_independent_vars_unused"


def test_placement(configs):
    sharded = configs / "Pesto/1-Workloads/TPCC/LAN/Pequin-TPCC-SQL-20wh-3s.json"
    with pytest.raises(ConfigError, match="runs 18 servers .* gives 6") as info:
        generate(sharded, PARAMS, placement={"server": GUIDE_SERVERS[:6]})
    assert info.value.key == "server_names" and str(sharded) in str(info.value)
    assert len(generate(sharded, PARAMS, placement={"server": GUIDE_SERVERS}).config["server_names"][0]) == 18
    hotstuff = configs / "Peloton/TPCC/1-LAN/Peloton-HS-TPCC-20wh.json"
    same = generate(hotstuff, PARAMS, placement={"server": GUIDE_SERVERS[:3] + ["eu-west-1-0"]})
    assert same.warnings == () and not [c for c in same.changes if c.key == "server_names"]
    moved = generate(hotstuff, PARAMS, placement={"server": ["a", "b", "c", "d"]})
    assert moved.config["server_names"] == [["a", "b", "c", "d"]]
    assert any("hotstuff.gen.conf" in w for w in moved.warnings)
    with pytest.raises(ConfigError, match="client-<server>-<node>") as info:
        generate(hotstuff, PARAMS, placement={"server": GUIDE_SERVERS[:4], "client": ["client-0-0", "laptop"]})
    assert info.value.key == "placement.client"
    generate(hotstuff, PARAMS, placement={"client": ["client-0-0.pesto.myproject-pg0.utah.cloudlab.us", "client-3-0"]})
    with pytest.raises(ConfigError, match="unknown role 'storage'"):
        generate(hotstuff, PARAMS, placement={"storage": ["x"]})
    with pytest.raises(ConfigError, match="placed twice"):
        generate(hotstuff, PARAMS, placement={"server": ["a", "a", "b", "c"]})


@pytest.mark.parametrize("change, key, words", [
    ({"duration_s": 20, "ramp_s": 10}, "client_experiment_length", "leaves nothing to measure"),
    ({"duration_s": -1}, "client_experiment_length", "non-negative integer"),
    ({"runs": 0}, "num_experiment_runs", "positive integer"),
    ({"clients": []}, "client_total", "empty"),
    ({"clients": [ClientSetting(10, 0, 1)]}, "client_total", "positive integers"),
    ({"user": ""}, "emulab_user", "non-empty string"),
])
def test_bad_parameters_name_the_key(configs, change, key, words):
    with pytest.raises(ConfigError, match=words) as info:
        generate(configs / "Pesto/1-Workloads/Seats/Pequin-Seats-sf1.json",
                 ExperimentParams(**{**PARAMS.__dict__, **change}))
    assert info.value.key == key


def test_cluster_domain_and_commented_keys(configs):
    path = configs / "Pesto/2-Microbenchmarks/3-ReplicaFailure/Uniform-Failure-2-high.json"
    with pytest.raises(ConfigError, match="commented out as '_client_total'"):
        generate(path, PARAMS)
    generated = generate(configs / "Pesto/1-Workloads/Auctionmark/Pequin-Auction-sf1.json",
                         ExperimentParams(**{**PARAMS.__dict__, "cluster_domain": "wisc.cloudlab.us"}))
    assert generated.config["server_host_format_str"] == "%s.%s.%s.wisc.cloudlab.us"
    assert generated.config["client_host_format_str"] == "client-%d-%d.%s.%s.wisc.cloudlab.us"


def test_a_generated_configs_labels_reach_the_loader(mirror, tmp_path):
    """The shipped TPCC setting, its resolved config carrying labels as a generated config would."""
    import shutil
    point = mirror / SAMPLE / "2024-10-21-16-59-02" / "2024-10-21-17-04-33"
    shutil.copytree(point, tmp_path / "exp" / point.name)
    resolved = tmp_path / "exp" / point.name / "Pequin-TPCC-SQL-20wh-0-2.json"
    data = json.loads(resolved.read_text())
    data["_reprobook_labels"] = {"system": "Pesto", "workload": "TPCC", "experiment": "sharding"}
    resolved.write_text(json.dumps(data))
    outputs = Outputs("pesto/test", "live", "test", {"runs": (tmp_path / "exp",)}, location="test")
    row = get_loader("pesto.curves")(outputs).iloc[0]
    assert (row["experiment"], row["system"], row["client_total"]) == ("sharding", "Pesto", 30)


ALICE = {"cloudlab_user": "alice", "cloudlab_experiment": "pequin", "cloudlab_project": "pequin-pg0"}
"""The CloudLab names a run on a hand-written cluster (no experiment recorded) is given: the authors' own."""


def _project_from_git(tmp_path, monkeypatch):
    """The project, with the authors' files taken from the local git mirror at their commits (no file mirror)."""
    from reprobook.core.config import load_project
    if not GIT.is_dir():
        pytest.skip("no local mirror of fsuri/Pequin-Artifact")
    monkeypatch.setenv("REPROBOOK_GIT_BASE_URL", f"file://{GIT.parent.parent.parent}/github.com/")
    monkeypatch.setenv("REPROBOOK_ARTIFACT_MIRROR", str(tmp_path / "no-mirror"))
    monkeypatch.setenv("REPROBOOK_RUNS", str(tmp_path / "runs"))
    return load_project(ROOT)


def test_a_live_run_of_the_sample_runs_derives_its_configs_at_the_pinned_commit(tmp_path, monkeypatch):
    """The claim's input generator takes the authors' files from git at the paper's commit (here the local
    mirror as the git base URL), derives each for the placement's servers, and keeps the diff."""
    from reprobook.core.inputs import generate as generate_inputs
    from reprobook.remote.placement import Placement

    project = _project_from_git(tmp_path, monkeypatch)
    claim = project.claim("pesto/sample-runs")
    servers = [f"node-{i}" for i in range(6)]
    placement = Placement({"control": ("local",), "server": tuple(servers), "client": ("local",)}, "control")
    with pytest.raises(ConfigError, match="set the parameter cloudlab_user"):
        generate_inputs(project, make_plan(claim, {}), placement)
    with pytest.raises(ConfigError, match="client_experiment_length: an experiment of 30 s leaves nothing"):
        generate_inputs(project, make_plan(claim, {**ALICE, "duration_s": 30}), placement)   # 15 s ramps
    made = generate_inputs(project, make_plan(claim, {**ALICE, "duration_s": 30, "ramp_s": 5}), placement)
    assert [m.name for m in made] == ["Pequin-TPCC-SQL-20wh.json", "100000.json", "Zipf-Inconsistent.json",
                                      "Uniform-Failure-2.json"]
    tpcc = json.loads(made[0].data)
    assert tpcc["emulab_user"] == "alice" and tpcc["server_names"][0] == servers
    assert tpcc["client_experiment_length"] == 30
    assert made[1].source.endswith("experiment-configs/Pesto/2-Microbenchmarks/1-Scan-Point/Scan/with condition/100000.json")
    assert '-  "emulab_user": "fs435"' in made[0].diff or "emulab_user" in made[0].diff
    # the authors' file at the commit is what the diff starts from, and it is untouched
    original = subprocess.run(["git", "-C", str(GIT), "show", f"{COMMIT}:experiment-configs/Pesto/1-Workloads/TPCC/LAN/"
                               "Pequin-TPCC-SQL-20wh.json"], capture_output=True, text=True, check=True).stdout
    assert json.loads(original)["emulab_user"] != "alice"


# --------------------------------------------------------------------------- the harness on a cluster of ours

def _cluster_inputs(tmp_path, monkeypatch, claim_id: str, facts: dict, params: dict | None = None,
                    clients=("client-0-0", "client-0-1"), servers=("us-east-1-0",)):
    from reprobook.core.inputs import generate as generate_inputs
    from reprobook.remote.placement import Placement
    project = _project_from_git(tmp_path, monkeypatch)
    claim = project.claim(claim_id)
    placement = Placement({"control": ("local",), "server": tuple(servers), "client": tuple(clients)}, "control")
    made = generate_inputs(project, make_plan(claim, {"scale": "rehearsal", **(params or {})}), placement, facts)
    return project, claim, {m.name: json.loads(m.data) for m in made if m.name.endswith(".json")}, made


def _labels(made) -> dict:
    """The Pesto loader's labels of a generated input, as the harness resolves it for one point: its one protocol,
    settings and shard count, the name without ``.json``."""
    from reprobook.papers.pesto.loaders import _pesto_labels
    resolved = {k: (v[0] if k in ("replication_protocol", "replication_protocol_settings", "num_shards")
                    and isinstance(v, list) else v) for k, v in json.loads(made.data).items()}
    return _pesto_labels(resolved, Path(made.name), made.name[:-len(".json")], Path("stats.json"))


def test_the_rehearsal_configs_run_the_authors_harness_on_our_cluster(tmp_path, monkeypatch):
    facts = {h: {"cpus": 2, "user": "evaluator"} for h in ("local", "us-east-1-0", "client-0-0", "client-0-1")}
    project, claim, configs, made = _cluster_inputs(tmp_path, monkeypatch, "pesto/inconsistency", facts,
                                                    {"small_host": True})
    assert sorted(configs) == ["Uniform-Eager-c2.json", "Uniform-Eager-c4.json"]
    c = configs["Uniform-Eager-c4.json"]
    workdir = project.hosts.host("local").workdir.rstrip("/")
    # the placement: one unreplicated shard, the client nodes, the bare names the control host's SSH knows
    assert c["server_names"] == [["us-east-1-0"]] and c["server_regions"] == [{"us-east-1": ["us-east-1-0"]}]
    assert (c["fault_tolerance"], c["num_shards"], c["num_groups"], c["client_nodes_per_server"]) == (0, [1], [1], 2)
    assert c["server_host_format_str"] % ("us-east-1-0", "x", "y") == "us-east-1-0"
    assert c["client_host_format_str"] % (0, 1, "x", "y") == "client-0-1"
    assert c["emulab_user"] == "evaluator"  # the hosts' login user, from their facts
    # the authors' paths moved under one directory of ours
    assert c["base_remote_bin_directory_nfs"] == f"{workdir}/pequin/bin-nfs"
    assert c["base_local_exp_directory"] == f"{workdir}/pequin/output"
    assert c["src_directory"] == f"{workdir}/Pequin-Artifact/src"
    assert c["benchmark_schema_file_path"] == f"{workdir}/pequin/data/rw-sql.json"
    assert c["replication_protocol_settings"][0]["key_path"] == f"{workdir}/pequin/keys/donna"
    text = json.dumps(c)
    assert "/users/fs435" not in text and "/mnt/extra" not in text and "floriansuri" not in text
    # the rehearsal's sizes and times, one client setting, one run, no retries
    assert (c["num_tables"], c["num_keys_per_table"]) == (10, 10000)
    assert (c["client_experiment_length"], c["client_ramp_up"], c["client_ramp_down"], c["server_load_time"]) == \
        (10, 2, 2, 15)
    assert c["client_total"] == [[4]] and c["client_processes_per_client_node"] == [[2]]
    assert (c["num_experiment_runs"], c["max_retries"], c["make_args"]) == (1, 0, "store/server")
    # pinning follows the hosts' CPUs; the small host's one request thread
    assert c["pin_server_processes"] == [0, 1] and c["pin_client_processes"] == [0, 1]
    assert {k: c["replication_protocol_settings"][0][k] for k in
            ("multi_threading", "mainThreadDispatching", "parallel_reads", "parallel_queries")} == \
        dict.fromkeys(("multi_threading", "mainThreadDispatching", "parallel_reads", "parallel_queries"), False)
    # the labels the loader reads, and the diff against the authors' file
    assert c["_reprobook_labels"] == {"experiment": "snapshot", "access": "U", "mode": "Ideal"}
    assert '-  "emulab_user": "fs435",' in made[1].diff and '+  "fault_tolerance": 0,' in made[1].diff


def test_on_a_big_host_pins_keep_the_authors_cores_and_requests_stay_multi_threaded(tmp_path, monkeypatch):
    facts = {h: {"cpus": 16, "user": "root"} for h in ("local", "us-east-1-0", "client-0-0", "client-0-1")}
    _, _, configs, _ = _cluster_inputs(tmp_path, monkeypatch, "pesto/inconsistency", facts)
    c = configs["Uniform-Eager-c2.json"]
    assert c["pin_server_processes"] == list(range(8))
    assert "multi_threading" not in c["replication_protocol_settings"][0] or \
        c["replication_protocol_settings"][0]["multi_threading"] is not False
    _, _, tapir, _ = _cluster_inputs(tmp_path, monkeypatch, "pesto/basil-workloads", facts, {"small_host": True})
    t = tapir["Tapir-Retwis-c2.json"]
    assert t["client_num_keys"] == 10000 and t["replication_protocol"] == ["tapir"]
    assert "multi_threading" not in json.dumps(t["replication_protocol_settings"])  # TAPIR has no such threads


@pytest.mark.parametrize("clients, facts, words", [
    (("client-0-0", "client-1-0"), {}, "needs client-0-0, client-0-1, not client-0-0, client-1-0"),
    (("client-0-0",), {"local": {"user": "a"}, "us-east-1-0": {"user": "b"}}, "logs in to every host as one user"),
])
def test_a_placement_the_harness_cannot_name_is_refused_before_anything_starts(tmp_path, monkeypatch, clients,
                                                                              facts, words):
    with pytest.raises(ConfigError, match=words):
        _cluster_inputs(tmp_path, monkeypatch, "pesto/basil-workloads", facts, clients=clients)


def test_a_server_with_fewer_than_three_cpus_gets_the_small_host_adaptation(tmp_path, monkeypatch):
    """The adaptation is decided from the server's facts only (a small control host does not matter)."""
    from reprobook.core.config import load_project
    from reprobook.core.scales import adapt
    claim = load_project(ROOT).claim("pesto/inconsistency")
    roles = {"control": ("control",), "us-east-1-0": ("server",), "client-0-0": ("client",)}
    small_server = {"control": {"cpus": 16}, "us-east-1-0": {"cpus": 2}, "client-0-0": {"cpus": 16}}
    used, made = adapt(claim.adaptations, {"scale": "rehearsal"}, small_server, roles)
    assert used["small_host"] is True and made[0]["hosts"] == ["us-east-1-0"]
    assert "needs 3 cores (CPUs online), has 2" in made[0]["shortfalls"][0]
    devs = claim.deviations_for(used)
    assert [d.kind for d in devs].count("small host") == 1
    assert any("threadpool-small-host.patch" in d.what and "threadpool.cc" in d.diff for d in devs)
    assert any("peloton-trafficcop-per-thread.patch" in d.what for d in devs)
    assert any("fallback-reply-self-deadlock.patch" in d.what and "sendCBmutex" in d.diff for d in devs)
    assert any("phase2-valid-reply.patch" in d.what and "cleanCB, (void*) true)" in d.diff for d in devs)
    assert any("fallback-multicast-releases-clients.patch" in d.what  # Basil's server and Pesto's
               and d.diff.count("i.release();") == 2 and "indicusstore/concurrencycontrol.cc" in d.diff
               and "pequinstore/servertools.cc" in d.diff for d in devs)
    # a rehearsal point ends when its clients do, not at the harness's timeout; Postgres's client is left alone
    assert any("client-exits-when-done.patch" in d.what and "mode != PROTO_POSTGRES" in d.diff for d in devs)
    small_control = {**small_server, "control": {"cpus": 1}, "us-east-1-0": {"cpus": 8}}
    assert adapt(claim.adaptations, {}, small_control, roles) == ({}, [])
    assert not any(d.kind == "small host" for d in claim.deviations_for({}))


@pytest.mark.parametrize("config, labels, words", [
    ("experiment-configs/Peloton/TPCC/1-LAN/Peloton-HS-TPCC-20wh.json", None,
     r"pesto/inconsistency: Peloton-HS needs 4 server hosts \(HotStuff's 3f\+1 replicas with f = 1.*gives 1 "
     r"\(us-east-1-0\)"),
    ("experiment-configs/Postgres/primary-backup/PG-TPCC.json", None, "Postgres-PB needs 2 server hosts"),
    ("experiment-configs/Pesto/2-Microbenchmarks/2-Snapshot/Uniform-Eager.json", {"system": "Peloton-XS"},
     "pesto/inconsistency: the config names an unknown system 'Peloton-XS'"),
])
def test_a_system_the_placement_cannot_hold_is_refused_before_anything_starts(tmp_path, monkeypatch, config, labels,
                                                                             words):
    from reprobook.papers.pesto.pequin import cluster_configs
    from reprobook.remote.placement import Placement
    project = _project_from_git(tmp_path, monkeypatch)
    claim = project.claim("pesto/inconsistency")
    placement = Placement({"control": ("local",), "server": ("us-east-1-0",),
                           "client": ("client-0-0", "client-0-1")}, "control")
    with pytest.raises(ConfigError, match=words):
        cluster_configs(project, claim, make_plan(claim, {"scale": "rehearsal"}).params, placement, config=config,
                        labels=labels, facts={})


def test_the_paper_scale_derives_the_authors_configs_for_the_cloudlab_cluster_and_a_rehearsal_sets_its_clients(
        tmp_path, monkeypatch):
    """One claim, two scales: at the paper's, the authors' eight stress-test configs for the guide's six servers
    (pequin.configs); at the rehearsal's, the U Ideal config for one server of ours per client count
    (pequin.cluster). Each refuses the other's client counts, before anything starts."""
    from reprobook.core.inputs import generate as generate_inputs
    from reprobook.remote.placement import Placement
    project = _project_from_git(tmp_path, monkeypatch)
    claim = project.claim("pesto/inconsistency")
    servers = ("us-east-1-0", "us-east-1-1", "us-east-1-2", "eu-west-1-0", "eu-west-1-1", "eu-west-1-2")
    cloudlab = Placement({"control": ("local",), "server": servers, "client": ("client-0-0",)}, "control")
    paper = make_plan(claim, {**ALICE})
    assert paper.claim.inputs["generator"] == "pequin.configs" and paper.claim.roles["server"].min == 6
    made = generate_inputs(project, paper, cloudlab)
    assert [m.name for m in made] == ["Uniform-Eager-low.json", "Uniform-Eager.json", "Uniform-FailEager-low.json",
                                      "Uniform-FailEager.json", "Uniform-Inconsistent.json", "Zipf-Eager.json",
                                      "Zipf-FailEager.json", "Zipf-Inconsistent.json"]
    config = json.loads(made[4].data)
    assert config["emulab_user"] == "alice" and config["fault_tolerance"] == 1   # the authors' replication kept
    assert [n for names in config["server_names"] for n in names] == list(servers)
    with pytest.raises(ConfigError, match=r"each config runs its own client settings; -p clients \(2, 4\)"):
        generate_inputs(project, make_plan(claim, {**ALICE, "clients": [2, 4]}), cloudlab)
    ours = Placement({"control": ("local",), "server": ("us-east-1-0",), "client": ("client-0-0",)}, "control")
    rehearsal = make_plan(claim, {"scale": "rehearsal"})
    assert rehearsal.claim.inputs["generator"] == "pequin.cluster" and rehearsal.claim.roles["server"].max == 1
    assert [m.name for m in generate_inputs(project, rehearsal, ours, {})] == ["Uniform-Eager-c2.json",
                                                                             "Uniform-Eager-c4.json"]
    with pytest.raises(ConfigError, match="a run on a cluster of ours sets its client counts"):
        generate_inputs(project, make_plan(claim, {"scale": "rehearsal", "clients": [0]}), ours, {})


def test_configs_of_one_name_in_different_folders_get_their_folder_and_each_point_reads_its_own(tmp_path, monkeypatch):
    """The point-scan configs are all named after their range (100.json in Point, Scan/no condition and Scan/with
    condition): the generated ones carry their folder, each is made for its point of the sweep, and the job script
    gives each point's step the name of its own ($RB_INPUT)."""
    from reprobook.papers.pesto.pequin import input_names
    from reprobook.remote.steps import build_script
    from reprobook.core.config import HostSpec
    base = "experiment-configs/Pesto/2-Microbenchmarks/1-Scan-Point/"
    assert input_names([base + "Point/100.json", base + "Scan/no condition/100.json", base + "Scan/with condition/100.json",
                        base + "Point/10.json"]) == {
        base + "Point/100.json": "Point-100", base + "Scan/no condition/100.json": "no_condition-100",
        base + "Scan/with condition/100.json": "with_condition-100", base + "Point/10.json": "10"}
    assert input_names(["a/x/1.json", "b/x/1.json"]) == {"a/x/1.json": "a-x-1", "b/x/1.json": "b-x-1"}

    facts = {h: {"cpus": 2, "user": "root"} for h in ("local", "us-east-1-0", "client-0-0")}
    project, claim, configs, made = _cluster_inputs(tmp_path, monkeypatch, "pesto/point-scan", facts,
                                                    clients=("client-0-0",))
    assert [m.name for m in made] == ["Point-10-c1.json", "no_condition-10-c1.json", "with_condition-10-c1.json",
                                      "Point-100-c1.json", "no_condition-100-c1.json", "with_condition-100-c1.json"]
    assert made[2].point == {"clients": 1, "configs": base + "Scan/with condition/10.json"}
    c = configs["with_condition-100-c1.json"]
    assert (c["max_range"], c["scan_as_point"], c["rw_secondary_condition"], c["client_total"]) == (100, False, True, [[1]])
    # the job script: every point of the sweep step exports the name of the config made for it
    plan = make_plan(claim, {"scale": "rehearsal"})
    script = build_script(project.paper(claim.paper), plan, HostSpec("local", "local", str(tmp_path / "w")),
                          str(tmp_path / "rd"), inputs={m.name: m.data for m in made},
                          input_points={m.name: m.point for m in made})
    exported = [line.split("=", 1)[1] for line in script.splitlines() if line.startswith("export RB_INPUT=")]
    assert exported == [m.name for m in made]
    # the loader labels each kind of read by its config, not by its name (the point reads' configs set a condition too)
    for m in made:
        row = _labels(m)
        kind = {"Point": "Point", "no_condition": "Scan", "with_condition": "Scan-Cond"}[m.name.split("-")[0]]
        assert (row["experiment"], row["type"], row["range_size"]) == ("point-scan", kind, json.loads(m.data)["max_range"])


def test_the_tpcc_rehearsal_runs_the_samples_config_on_the_warehouses_it_generates(tmp_path, monkeypatch):
    """The sample runs' rehearsal: the authors' TPCC config of the sample, with the warehouses of the parameter
    (the data the control host generates into the run's data directory, which the config names)."""
    facts = {h: {"cpus": 2, "user": "root"} for h in ("local", "us-east-1-0", "client-0-0", "client-0-1")}
    project, claim, configs, made = _cluster_inputs(tmp_path, monkeypatch, "pesto/sample-runs", facts)
    assert sorted(configs) == ["Pequin-TPCC-SQL-20wh-c2.json", "Pequin-TPCC-SQL-20wh-c4.json"]
    c = configs["Pequin-TPCC-SQL-20wh-c4.json"]
    workdir = project.hosts.host("local").workdir.rstrip("/")
    assert (c["tpcc_num_warehouses"], c["benchmark_name"], c["fault_tolerance"]) == (1, "tpcc-sql", 0)
    assert c["benchmark_schema_file_path"] == f"{workdir}/pequin/data/sql-tpcc-tables-schema.json"
    assert c["client_total"] == [[4]] and c["server_load_time"] == 25
    assert '-  "tpcc_num_warehouses": 20,' in made[1].diff and '+  "tpcc_num_warehouses": 1,' in made[1].diff
    plan = make_plan(claim, {"scale": "rehearsal"})
    assert any(d.kind == "size" and "warehouses" in d.what for d in plan.deviations)
    assert "generate the benchmark data the configs name" in plan.claim.setup[-1].name
    five = _cluster_inputs(tmp_path, monkeypatch, "pesto/sample-runs", facts, {"warehouses": 5})[2]
    assert five["Pequin-TPCC-SQL-20wh-c2.json"]["tpcc_num_warehouses"] == 5


SIX = ("us-east-1-0", "us-east-1-1", "us-east-1-2", "eu-west-1-0", "eu-west-1-1", "eu-west-1-2")


def test_the_failure_rehearsal_runs_six_replicas_with_one_failed(tmp_path, monkeypatch):
    """A failed replica needs replication: the failures' rehearsal keeps the authors' f = 1 (six replicas, 5f+1) on six
    servers with a client host each, and the failure configs keep replica 0 failed and their fast-path timeout."""
    clients = tuple(f"client-{i}-0" for i in range(6))
    facts = {h: {"cpus": 2, "user": "root"} for h in ("local", *SIX, *clients)}
    project, claim, configs, made = _cluster_inputs(tmp_path, monkeypatch, "pesto/failures", facts, clients=clients,
                                                    servers=SIX)
    assert [m.name for m in made] == ["Uniform-Eager-c6.json", "Uniform-Eager-c12.json", "Uniform-NoFP-c6.json",
                                      "Uniform-NoFP-c12.json", "Uniform-Failure-2-c6.json", "Uniform-Failure-2-c12.json"]
    fp = configs["Uniform-Failure-2-c12.json"]
    assert fp["fault_tolerance"] == 1 and fp["server_names"] == [list(SIX)] and fp["client_nodes_per_server"] == 1
    settings = fp["replication_protocol_settings"][0]
    assert (settings["simulate_replica_failure"], settings["p1_decision_timeout"]) == (True, 2)
    assert configs["Uniform-NoFP-c6.json"]["replication_protocol_settings"][0]["simulate_replica_failure"] is False
    assert fp["client_total"] == [[12]]
    modes = {}
    for m in made:
        row = _labels(m)
        modes[m.name] = (row["system"], row["access"], row["mode"])
    assert set(modes.values()) == {("Pesto", "U", "Ideal"), ("Pesto", "U", "NoFP"), ("Pesto", "U", "FP")}
    plan = make_plan(claim, {"scale": "rehearsal"})
    assert [d.kind for d in plan.deviations if d.kind == "cluster"] and \
        "six replicas" in next(d.what for d in plan.deviations if d.kind == "cluster")


def test_a_replicated_rehearsal_on_too_few_servers_is_refused_naming_the_replicas_it_needs(tmp_path, monkeypatch):
    from reprobook.papers.pesto.pequin import ClusterRun, for_cluster
    clients = tuple(f"client-{i}-0" for i in range(3))
    facts = {h: {"cpus": 2, "user": "root"} for h in ("local", *SIX[:3], *clients)}
    with pytest.raises(ConfigError, match=r"fault_tolerance 1: pequin needs 6 replicas \(5f\+1\) in its shard, and "
                                          r"the placement gives 3 server\(s\): us-east-1-0, us-east-1-1, us-east-1-2"):
        _cluster_inputs(tmp_path, monkeypatch, "pesto/failures", facts, clients=clients, servers=SIX[:3])
    # TAPIR's shard needs 2f+1: three servers hold f = 1
    tapir = json.loads(subprocess.run(["git", "-C", str(GIT), "show", f"{COMMIT}:experiment-configs/Basil/1-Workloads/"
                                       "1. Tapir/Tapir-Retwis.json"], capture_output=True, text=True, check=True).stdout)
    run = ClusterRun(user="root", root="/r", src_dir="/s", output_dir="/o", servers=SIX[:3], client_nodes=1, clients=3,
                     processes_per_node=1, duration_s=10, ramp_s=2, load_s=5, keys=100, fault_tolerance=1)
    assert for_cluster(tapir, run, name="Tapir-Retwis.json").config["fault_tolerance"] == 1
    with pytest.raises(ConfigError, match=r"tapir needs 5 replicas \(2f\+1\)"):
        for_cluster(tapir, ClusterRun(**{**run.__dict__, "fault_tolerance": 2}), name="Tapir-Retwis.json")


def test_the_basil_rehearsals_name_their_configs_so_the_loader_finds_the_authors_names(tmp_path, monkeypatch):
    """The Basil claims run live: their rehearsals run Basil itself (Indicus) on one unreplicated server, and the
    names of the configs reprobook derives (folders, client counts) still give the authors' names and labels."""
    from reprobook.papers.pesto.loaders import _basil_name
    from reprobook.papers.pesto.pequin import input_names
    facts = {h: {"cpus": 2, "user": "root"} for h in ("local", "us-east-1-0", "client-0-0", "client-0-1")}
    _, _, configs, made = _cluster_inputs(tmp_path, monkeypatch, "pesto/basil-client-failures", facts)
    assert [m.name for m in made] == ["Indicus-NoFailures-c4.json", "Indicus-NoFailures-c8.json",
                                      "Indicus-90-2-c4.json", "Indicus-90-2-c8.json"]
    stall = configs["Indicus-90-2-c8.json"]
    assert stall["replication_protocol"] == ["indicus"] or stall["replication_protocol"] == "indicus"
    assert stall["fault_tolerance"] == 0 and stall["client_total"] == [[8]]
    # the harness starts at most servers x nodes x processes clients: 8 on one server's two client nodes take four
    # processes a node (two, the rehearsal's processes_per_node, would have started four clients of the eight)
    assert stall["client_processes_per_client_node"] == [[4]]
    assert configs["Indicus-90-2-c4.json"]["client_processes_per_client_node"] == [[2]]
    assert [_basil_name(m.name[:-len(".json")])[0] for m in made] == ["Indicus-NoFailures"] * 2 + ["Indicus-90-2"] * 2
    _, _, micro, made = _cluster_inputs(tmp_path, monkeypatch, "pesto/basil-microbenchmarks", facts)
    assert [m.name for m in made] == ["Indicus-c2.json", "Indicus-c4.json", "Indicus-NoCrypto-c2.json",
                                      "Indicus-NoCrypto-c4.json"]
    assert [_basil_name(m.name[:-len(".json")])[1]["crypto"] for m in made] == ["on", "on", "off", "off"]
    # the paper scale's ten client-failure configs: RW-U and RW-Z, the same file names in four folders each
    from reprobook.core.config import load_project
    names = input_names(load_project(ROOT).claim("pesto/basil-client-failures").parameters["configs"].default)
    assert sorted(_basil_name(n)[0] for n in names.values()) == ["Indicus-90-2"] * 8 + ["Indicus-NoFailures"] * 2
    assert "RW-Z-StallEarly-Indicus-90-2" in names.values()


def test_the_sharding_rehearsal_keeps_each_configs_shards_on_two_servers(tmp_path, monkeypatch):
    """Sharding's rehearsal: the authors' one- and two-shard TPC-C configs keep their own shard counts (shards 0), one
    unreplicated replica a shard, on two servers with a client node each; the harness puts shard g on server g."""
    servers, clients = ("us-east-1-0", "us-east-1-1"), ("client-0-0", "client-1-0")
    facts = {h: {"cpus": 2, "user": "root"} for h in ("local", *servers, *clients)}
    project, claim, configs, made = _cluster_inputs(tmp_path, monkeypatch, "pesto/sharding", facts, clients=clients,
                                                    servers=servers)
    assert [m.name for m in made] == ["Pequin-TPCC-SQL-20wh-c2.json", "Pequin-TPCC-SQL-20wh-c4.json",
                                      "Pequin-TPCC-SQL-20wh-2s-c2.json", "Pequin-TPCC-SQL-20wh-2s-c4.json",
                                      "sql-data.txt"]
    # the data step's list: TPC-C once, at the two warehouses both configs load
    assert made[-1].data == b"tpcc -num_warehouses=2\n"
    one, two = configs["Pequin-TPCC-SQL-20wh-c4.json"], configs["Pequin-TPCC-SQL-20wh-2s-c4.json"]
    assert (one["num_shards"], one["num_groups"], two["num_shards"], two["num_groups"]) == ([1], [1], [2], [2])
    assert two["server_names"] == [list(servers)] and two["fault_tolerance"] == 0 and two["client_nodes_per_server"] == 1
    assert two["tpcc_num_warehouses"] == 2 and two["client_total"] == [[4]]
    scales = []
    for m in made[:-1]:
        scales.append(_labels(m)["scale"])
    assert scales == [1, 1, 2, 2]
    # shards 1 puts every config on one shard, as the other rehearsals do
    one_shard = _cluster_inputs(tmp_path / "again", monkeypatch, "pesto/sharding", facts, {"shards": 1},
                                clients=clients, servers=servers)[2]
    assert one_shard["Pequin-TPCC-SQL-20wh-2s-c2.json"]["num_shards"] == [1]
    # CockroachDB's part stays by hand, and the page says so
    assert claim.manual and any("never run by reprobook" in s.name for s in claim.manual)


# --------------------------------------------------------------------------- the comparison systems, prepared

WORKLOAD_SYSTEMS = {
    "Peloton-HS": "experiment-configs/Peloton/TPCC/1-LAN/Peloton-HS-TPCC-20wh.json",
    "Peloton-Smart": "experiment-configs/Peloton/TPCC/1-LAN/Peloton-BFTSMART-TPCC-20wh.json",
    "Peloton": "experiment-configs/Peloton/TPCC/1-LAN/Peloton-TPCC-20wh.json",
    "Postgres-PB": "experiment-configs/Postgres/primary-backup/PG-TPCC.json",
    "Pesto": "experiment-configs/Pesto/1-Workloads/TPCC/LAN/Pequin-TPCC-SQL-20wh.json",
}
FOUR = ("us-east-1-0", "us-east-1-1", "us-east-1-2", "eu-west-1-0")


def test_the_comparison_systems_get_their_preparation_generated_for_the_placement(tmp_path, monkeypatch):
    """On a cluster of ours with four servers, each system that needs files in place before the harness runs it gets
    a script for the control host; the configs follow what each system needs (f = 1 for the four HotStuff and
    BFT-SMaRt replicas, one database server running the harness's server process, BFT-SMaRt's files under the
    run's root), and the Postgres client and server get the placement's connection string, with no password."""
    from reprobook.papers.pesto.pequin import cluster_configs
    from reprobook.remote.placement import Placement
    project = _project_from_git(tmp_path, monkeypatch)
    claim = project.claim("pesto/inconsistency")
    clients = tuple(f"client-{i}-0" for i in range(4))
    placement = Placement({"control": ("local",), "server": FOUR, "client": clients}, "control")
    params = {**make_plan(claim, {"scale": "rehearsal"}).params, "clients": [2],
              "configs": list(WORKLOAD_SYSTEMS.values()), "batch_size": 16}
    made = {m.name: m for m in cluster_configs(project, claim, params, placement, facts={})}
    root = project.hosts.host("local").workdir.rstrip("/") + "/pequin"
    assert sorted(n for n in made if n.endswith(".prepare.sh")) == [
        "PG-TPCC.prepare.sh", "Peloton-BFTSMART-TPCC-20wh.prepare.sh", "Peloton-HS-TPCC-20wh.prepare.sh"]
    assert not any(n.startswith(("Peloton-TPCC-20wh.prepare", "Pequin-TPCC")) and n.endswith(".sh") for n in made)
    hs = json.loads(made["Peloton-HS-TPCC-20wh-c2.json"].data)
    assert hs["fault_tolerance"] == 1 and hs["server_names"] == [list(FOUR)]
    smart = json.loads(made["Peloton-BFTSMART-TPCC-20wh-c2.json"].data)
    assert smart["fault_tolerance"] == 1 and smart["bftsmart_codebase_dir"] == f"{root}/bftsmart"
    pb = json.loads(made["PG-TPCC-c2.json"].data)
    assert pb["server_names"] == [["us-east-1-0"]] and pb["pg_replicated"] is True
    assert json.loads(made["Peloton-TPCC-20wh-c2.json"].data)["fault_tolerance"] == 0
    # the scripts: HotStuff's four replicas and batch size, BFT-SMaRt's hosts by address, Postgres's steps in order
    hotstuff = made["Peloton-HS-TPCC-20wh.prepare.sh"].data.decode()
    assert f'want="#define REMOTE_CONFIG_DIR \\"$root/config_pghs/\\""' in hotstuff
    assert "for h in us-east-1-0 us-east-1-1 us-east-1-2 eu-west-1-0; do" in hotstuff
    unpacked = _unpack(hotstuff)
    conf = unpacked["config_pghs/shard0/hotstuff.gen.conf"].decode()
    assert [line.split("=", 1)[1].split(":")[0].strip() for line in conf.splitlines() if line.startswith("replica")] \
        == list(FOUR)
    assert "block-size = 16" in conf.splitlines()
    smart_files = _unpack(made["Peloton-BFTSMART-TPCC-20wh.prepare.sh"].data.decode())
    assert smart_files["java-config/hosts.config"].decode().splitlines()[:2] == [
        "0 @@addr:us-east-1-0@@ 7088 7089", "1 @@addr:us-east-1-1@@ 7088 7089"]
    # every host's java.security carries the TLS work-around (test_bftsmart_tls makes the handshake with it)
    securities = {k: v.decode() for k, v in smart_files.items() if k.endswith("java-config/java.security")}
    assert len(securities) == 8 and all(f"jdk.tls.disabledAlgorithms={TLS_DISABLED}\n" in t for t in securities.values())
    pg = made["PG-TPCC.prepare.sh"].data.decode()
    order = [pg.index(x) for x in ('on us-east-1-0 "bash $q_root/pg-scripts/pg-primary.sh"', "copy_password us-east-1-1",
                                   'on us-east-1-1 "bash $q_root/pg-scripts/pg-backup.sh"',
                                   'on us-east-1-0 "bash $q_root/pg-scripts/pg-check.sh"', "copy_password client-0-0")]
    assert order == sorted(order)
    # the sources: the connection string names the primary and the run's pgpass; the diff is recorded
    for part in ("client", "server"):
        src = made[f"postgresstore-{part}.cc"]
        live = [line for line in src.data.decode().splitlines() if "connection_str = \"host=" in line
                and not line.lstrip().startswith("//")]
        assert len(live) == 1 and f"host=us-east-1-0 port=5433 user=pequin_user dbname=db1 passfile={root}/pg/pgpass" in live[0]
        assert "password=123" in src.diff and "+" in src.diff
        assert "password=" not in live[0]
    # shellcheck passes on every script
    for name, m in made.items():
        if name.endswith(".sh"):
            f = tmp_path / name
            f.write_bytes(m.data)
            r = subprocess.run(["shellcheck", "-s", "bash", str(f)], capture_output=True, text=True)
            assert r.returncode == 0, f"{name}:\n{r.stdout}"


def _unpack(script: str) -> dict[str, bytes]:
    """The files a preparation script carries (its base64 tarball)."""
    import base64
    import io
    import tarfile
    blob = re.search(r"^echo ([A-Za-z0-9+/=]+) \| base64 -d", script, re.M).group(1)
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(blob))) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_a_peloton_hs_placement_with_three_servers_is_refused_naming_the_claim_role_and_number(tmp_path, monkeypatch):
    from reprobook.papers.pesto.pequin import cluster_configs
    from reprobook.remote.placement import Placement
    project = _project_from_git(tmp_path, monkeypatch)
    claim = project.claim("pesto/inconsistency")
    placement = Placement({"control": ("local",), "server": FOUR[:3], "client": ("client-0-0", "client-1-0",
                                                                                "client-2-0")}, "control")
    params = {**make_plan(claim, {"scale": "rehearsal"}).params, "clients": [2],
              "configs": [WORKLOAD_SYSTEMS["Peloton-HS"]]}
    with pytest.raises(ConfigError, match=r"pesto/inconsistency: Peloton-HS needs 4 server hosts .* gives 3"):
        cluster_configs(project, claim, params, placement, facts={})


def test_the_workloads_rehearsal_runs_six_systems_on_tpcc_each_labelled_and_prepared(tmp_path, monkeypatch):
    """The headline claim at rehearsal scale: six systems' TPCC configs, one warehouse, on four servers, and Pesto's
    Auctionmark and Seats; each
    point's config carries the system and workload the loader and the checks select by, and the three systems that
    need files in place get their preparation."""
    facts = {h: {"cpus": 2, "user": "root"} for h in ("local", *FOUR, *(f"client-{i}-0" for i in range(4)))}
    _, claim, _, made = _cluster_inputs(tmp_path, monkeypatch, "pesto/workloads", facts,
                                        servers=FOUR, clients=tuple(f"client-{i}-0" for i in range(4)))
    configs = [m for m in made if m.name.endswith(".json")]
    # six systems on TPCC (replicated Pesto needs six servers), Pesto-unreplicated on Auctionmark and Seats too; 2 and 4
    # clients each
    assert len(configs) == 16
    systems_seen = {}
    for m in configs:
        labels = _labels(m)
        systems_seen.setdefault(labels["system"], set()).add(labels["workload"])
        config = json.loads(m.data)
        if labels["workload"] == "TPCC":
            assert config["tpcc_num_warehouses"] == 1
        else:   # the data step generates what these name, at the authors' scale factor
            assert config["benchmark_name"] in ("auctionmark-sql", "seats-sql") and config["scale_factor"] == 1
        assert config["benchmark_schema_file_path"].endswith(
            f"/data/sql-{config['benchmark_name'][:-4]}-tables-schema.json")
        # on one machine the four replicas of Peloton-HS and Peloton-Smart load the database on the same CPUs: the
        # clients wait for all four loads (the leader stops on the authors' assertion if they time out meanwhile)
        replicated = labels["system"] in ("Peloton-HS", "Peloton-Smart")
        assert config["server_load_time"] == (25 * 4 if replicated else 25), (labels, config["server_load_time"])
        # HotStuff proposes only when commands arrive: Peloton-HS's client processes run five clients each
        assert config["client_threads_per_process"] == [[5 if labels["system"] == "Peloton-HS" else 1]], labels
        if labels["system"] in ("Postgres", "Postgres-PB"):
            # one database server and its one client node (client-0-0): the node runs every client of the point
            assert config["server_names"] == [["us-east-1-0"]] and config["client_nodes_per_server"] == 1
            assert config["client_processes_per_client_node"] == [[max(2, config["client_total"][0][0])]], config
    assert systems_seen == {**dict.fromkeys(["Peloton", "Peloton-HS", "Peloton-Smart", "Postgres", "Postgres-PB"],
                                            {"TPCC"}),
                            "Pesto-unreplicated": {"TPCC", "Auctionmark", "Seats"}}
    assert sorted(m.name for m in made if m.name.endswith(".prepare.sh")) == [
        "PG-TPCC.prepare.sh", "Peloton-BFTSMART-TPCC-20wh.prepare.sh", "Peloton-HS-TPCC-20wh.prepare.sh",
        "Postgres-TPCC-20wh.prepare.sh"]
    assert {m.name for m in made if m.name.endswith(".cc")} == {"postgresstore-client.cc", "postgresstore-server.cc"}
    # the loopback cluster's hosts share one network: HotStuff's replicas listen on ports of their own
    conf = _unpack(next(m for m in made if m.name == "Peloton-HS-TPCC-20wh.prepare.sh").data.decode())[
        "config_pghs/shard0/hotstuff.gen.conf"].decode()
    assert [line.split(",")[0].rsplit(":", 1)[1] for line in conf.splitlines() if line.startswith("replica")] == \
        ["30000;40000", "30001;40001", "30002;40002", "30003;40003"]
    # the database servers' memory at rehearsal scale (the authors' 30GB of shared buffers do not fit a small host)
    primary = _unpack(next(m for m in made if m.name == "PG-TPCC.prepare.sh").data.decode())["pg-primary.sh"].decode()
    assert 'ALTER SYSTEM SET shared_buffers = \'256MB\'' in primary and "SET work_mem = '64MB'" in primary
    assert "30GB" not in primary
    unreplicated = next(m for m in made if m.name == "Postgres-TPCC-20wh.prepare.sh").data.decode()
    assert "pg-backup.sh" not in unreplicated and 'on us-east-1-0 "bash $q_root/pg-scripts/pg-primary.sh"' in unreplicated


def test_the_workloads_paper_scale_prepares_each_system_in_the_cloudlab_home_with_the_images_postgres(
        tmp_path, monkeypatch):
    """On the guide's cluster the configs keep the authors' layout under /users/<user>: HotStuff's and BFT-SMaRt's files
    go there, and the Postgres systems use the PostgreSQL of the profile's stock Ubuntu 22.04, 14 (the authors' image
    had 12; 15 at rehearsal scale, from Debian 12)."""
    from reprobook.core.inputs import generate as generate_inputs
    from reprobook.remote.placement import Placement
    project = _project_from_git(tmp_path, monkeypatch)
    claim = project.claim("pesto/workloads")
    servers = ("us-east-1-0", "us-east-1-1", "us-east-1-2", "eu-west-1-0", "eu-west-1-1", "eu-west-1-2")
    placement = Placement({"control": ("local",), "server": servers,
                           "client": tuple(f"client-{i}-0" for i in range(6))}, "control")
    assert len(claim.parameters["configs"].default) == 27   # the seven systems' configs of the guide
    tpcc = [c for c in claim.parameters["configs"].default if "TPCC" in c and "low" not in c]   # one per system
    made = {m.name: m for m in generate_inputs(project, make_plan(claim, {**ALICE, "configs": tpcc}),
                                               placement)}
    assert len([n for n in made if n.endswith(".json")]) == 7
    prepared = sorted(n for n in made if n.endswith(".prepare.sh"))
    assert len(prepared) == 4   # Peloton-HS, Peloton-Smart, Postgres and Postgres-PB
    hs = made["Peloton-HS-TPCC-20wh.prepare.sh"].data.decode()
    assert "root=/users/alice\n" in hs and "for h in us-east-1-0 us-east-1-1 us-east-1-2 eu-west-1-0; do" in hs
    pg = _unpack(made["PG-TPCC.prepare.sh"].data.decode())["pg-primary.sh"].decode()
    assert "PGBIN=/usr/lib/postgresql/14/bin" in pg and "ROOT=/users/alice" in pg
    smart = json.loads(made["Peloton-BFTSMART-TPCC-20wh.json"].data)
    assert smart["bftsmart_codebase_dir"] == "/users/alice/"   # the authors' layout: java-config and jars in the home
    assert "codebase=/users/alice\n" in made["Peloton-BFTSMART-TPCC-20wh.prepare.sh"].data.decode()


def test_every_harness_claim_fetches_the_directory_its_harness_writes_to():
    """The harness collects each point's outputs into ``output_dir`` (base_local_exp_directory); the claim fetches its
    ``runs`` output from a path: at every scale they must be one directory, or a run's outputs are never fetched (the
    workloads claim once fetched ``output`` while its harness wrote ``pequin/output``)."""
    from reprobook.core.config import load_project
    checked = 0
    for claim in load_project(ROOT).all_claims():
        if claim.paper != "pesto" or "output_dir" not in claim.parameters or "runs" not in claim.outputs:
            continue
        for scale in (list(claim.scales) or [None]):
            output_dir = make_plan(claim, {"scale": scale} if scale else {}).params["output_dir"]
            assert claim.at_scale(scale).outputs["runs"].path == output_dir, (claim.key, scale, output_dir)
            checked += 1
    assert checked >= 10
