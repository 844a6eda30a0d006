"""Configuration: the real files load; every kind of mistake names the file and the key path."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from reprobook.core.config import load_hosts, load_paper, load_project
from reprobook.errors import ConfigError


def test_project_loads_every_paper(root):
    project = load_project(root)
    assert "aardvark" in project.papers
    claims = project.paper("aardvark").claims
    assert list(claims) == ["vector-commitments", "validator-throughput", "archive-throughput"]
    v = claims["validator-throughput"]
    assert v.requires.cores == 32
    assert v.requires.os == ("Ubuntu 18.04", "Ubuntu 20.04")  # inherited from the paper's machine
    assert [s.name for s in v.setup][0].startswith("install build dependencies")  # paper setup comes first
    assert {n.id for n in v.published} >= {"validator-32-modify", "validator-32-delete"}
    assert all(n.unit and n.source and n.precision for n in project.paper("aardvark").published.values())


def _paper(tmp_path: Path, root: Path, mutate) -> Path:
    data = yaml.safe_load((root / "configs/papers/aardvark.yaml").read_text())
    mutate(data)
    p = tmp_path / "aardvark.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


@pytest.mark.parametrize("mutate, key, words", [
    (lambda d: d["claims"][1].update(colour="red"), "claims[1].colour", "unknown key"),
    (lambda d: d["claims"][0]["checks"][0].update(kind="roughly"), "claims[0].checks[0].kind", "is not one of"),
    (lambda d: d["claims"][2].pop("loader"), "claims[2].loader", "required key is missing"),
    (lambda d: d["claims"][2].update(loader="aardvark.archivez"), "claims[2].loader", "no loader 'aardvark.archivez'"),
    (lambda d: d["claims"][1]["requires"].update(gpus=4), "claims[1].requires.gpus", "unknown requirement"),
    (lambda d: d["machine"].update(smt="maybe"), "machine.smt", "smt"),
    (lambda d: d["claims"][2]["checks"][0].update(factr=2), "claims[2].checks[0].factr", "unknown option"),
    (lambda d: d["claims"][2]["checks"][0].update(factor="big"), "claims[2].checks[0].factor", "is not of type"),
    (lambda d: d["claims"][1]["checks"][1].update(target=5), "claims[1].checks[1]", "exactly one of"),
    (lambda d: d["published"][0].update(value="many"), "published[0].value", "is not of type"),
    (lambda d: d["repositories"]["edrax-vcs"].update(commit="abc"), "repositories.edrax-vcs.commit", "does not match"),
    (lambda d: d["claims"][1]["checks"][0]["min"].update(published="nope"), "claims[1].checks[0].min.published",
     "no published number"),
    (lambda d: d["claims"][1]["published"].append("ghost"), "claims[1].published[4]", "no published number"),
    (lambda d: d["claims"][2]["checks"][0].pop("factor"), "claims[2].checks[0].factor", "needs 'factor'"),
    (lambda d: d["claims"][0]["reference"].update(extra="nosuchrepo@" + "a" * 40 + ":x"),
     "claims[0].reference.extra", "unknown repository"),
    (lambda d: d["claims"].append(dict(d["claims"][0])), "claims[3].id", "duplicate claim id"),
])
def test_bad_paper_names_file_and_key(tmp_path, root, mutate, key, words):
    path = _paper(tmp_path, root, mutate)
    with pytest.raises(ConfigError) as err:
        load_paper(path)
    msg = str(err.value)
    assert str(path) in msg and key in msg and words in msg, msg


def test_not_yaml_and_missing_file(tmp_path):
    bad = tmp_path / "aardvark.yaml"
    bad.write_text("paper: [unclosed\n")
    with pytest.raises(ConfigError, match=r"aardvark.yaml: line \d+: not valid YAML"):
        load_paper(bad)
    with pytest.raises(ConfigError, match="nothere.yaml: file not found"):
        load_paper(tmp_path / "nothere.yaml")


def test_hosts_file(tmp_path):
    p = tmp_path / "hosts.yaml"
    p.write_text(textwrap.dedent("""
        hosts:
          node0: {ssh: alice@pc1.example.org:2222, workdir: /mydata, host_key_policy: accept-new,
                  git_url_rewrites: {"https://github.com/": "/mydata/mirror/"}}
          alias: {ssh: cloudlab-node, workdir: /mydata}
        clusters:
          pair: {roles: {client: [node0], server: [alias, local]}}
    """))
    cfg = load_hosts(p)
    assert cfg.host("node0").target() == ("alice", "pc1.example.org", 2222)
    assert cfg.host("alias").target() == (None, "cloudlab-node", None)
    assert cfg.host("local").is_local
    assert cfg.clusters["pair"].roles["server"] == ("alias", "local")
    with pytest.raises(ConfigError, match="no host named 'nope'"):
        cfg.host("nope")


@pytest.mark.parametrize("text, key", [
    ("hosts: {a: {ssh: x, workdir: /w, port: 22}}", "hosts.a.port"),
    ("hosts: {a: {ssh: x}}", "hosts.a.workdir"),
    ("hosts: {a: {ssh: 'bad host name', workdir: /w}}", "hosts.a.ssh"),
    ("hosts: {a: {ssh: x, workdir: /w}}\nclusters: {c: {roles: {r: [b]}}}", "clusters.c.roles.r[0]"),
])
def test_bad_hosts_file(tmp_path, text, key):
    p = tmp_path / "hosts.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_hosts(p)
    assert f"hosts.yaml: {key}" in str(err.value)


def test_published_table_expands_into_numbers_with_every_source(tmp_path, root):
    def add(d):
        d["published_tables"] = [{
            "id": "fig-x", "what": "time per op", "unit": "ns", "labels": ["op"], "column_label": "impl",
            "columns": ["base", "verified"],
            "sources": [
                {"name": "draft", "source": "draft Fig 1", "precision": "read-off-figure",
                 "rows": [["map", 64.2, 51.2], ["unmap", 47.9, None]]},
                {"name": "final", "source": "final Fig 2", "precision": "exact", "target": True,
                 "rows": [["map", 34.34, 23.09], ["unmap", 8.37, 303.27]]}]}]
        d["claims"][0]["published_tables"] = ["fig-x"]
    paper = load_paper(_paper(tmp_path, root, add))
    nums = {n.id: n for n in paper.claims["vector-commitments"].published}
    assert set(nums) == {"fig-x-map-base", "fig-x-map-verified", "fig-x-unmap-base", "fig-x-unmap-verified"}
    n = nums["fig-x-map-verified"]
    assert (n.value, n.source, n.precision) == (23.09, "final Fig 2", "exact")  # the target source
    assert dict(n.labels) == {"op": "map", "impl": "verified"} and n.unit == "ns"
    assert [(s.name, s.value) for s in n.others] == [("draft", 51.2)]
    assert nums["fig-x-unmap-verified"].others == ()  # the draft has no value there


@pytest.mark.parametrize("mutate, key, words", [
    (lambda t: t["sources"][0]["rows"].append(["map"]), "published_tables[0].sources[0].rows[1]", "this one has 1"),
    (lambda t: t["sources"][0]["rows"].append(["unmap", "fast"]), "published_tables[0].sources[0].rows[1][1]",
     "not a number"),
    (lambda t: t.update(wrong=1), "published_tables[0].wrong", "unknown key"),
])
def test_bad_published_table(tmp_path, root, mutate, key, words):
    def add(d):
        t = {"id": "t", "unit": "ns", "labels": ["op"], "columns": ["ns"],
             "sources": [{"name": "a", "source": "Fig 1", "precision": "exact", "rows": [["map", 1.0]]}]}
        mutate(t)
        d["published_tables"] = [t]
    path = _paper(tmp_path, root, add)
    with pytest.raises(ConfigError) as err:
        load_paper(path)
    assert key in str(err.value) and words in str(err.value), str(err.value)
