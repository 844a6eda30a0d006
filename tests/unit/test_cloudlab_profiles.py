"""reprobook cloudlab profile: each live claim's and each paper's profile runs under the real geni-lib.

The request RSpec geni-lib builds from the profile is compared field by field with the claim's machine
section (node names per role, hardware type, disk image, one LAN holding every node) and with the
request RSpec reprobook writes itself (``--rspec``). geni-lib is installed once per session into a
throwaway directory (tests/support/genilib.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from reprobook import cloudlab
from reprobook.cli import main
from reprobook.core.config import load_project
from tests.support import genilib

ROOT = Path(__file__).resolve().parents[2]
NS = {"r": "http://www.geni.net/resources/rspec/3"}
IMAGES = {"Ubuntu 18.04": "UBUNTU18-64-STD", "Ubuntu 20.04": "UBUNTU20-64-STD", "Ubuntu 22.04": "UBUNTU22-64-STD"}
PROJECT = load_project(ROOT)
LIVE = [c.key for c in cloudlab.live_claims(PROJECT)]


@pytest.fixture(scope="module")
def site():
    try:
        return genilib.site_dir()
    except genilib.Unavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set, so geni-lib must install, but {exc}")
        pytest.skip(str(exc))


def _nodes(rspec: str) -> dict[str, tuple[str, str]]:
    """client_id -> (hardware type, disk image) of a request RSpec; asserts one LAN holds every node."""
    root = ET.fromstring(rspec)
    out = {}
    for n in root.findall("r:node", NS):
        hw = n.find("r:hardware_type", NS)
        img = n.find("r:sliver_type/r:disk_image", NS)
        out[n.get("client_id")] = (hw.get("name") if hw is not None else "", img.get("name") if img is not None else "")
        assert n.find("r:sliver_type", NS).get("name") == "raw"
    (lan,) = root.findall("r:link", NS)
    assert lan.find("r:link_type", NS).get("name") == "lan"
    assert sorted(i.get("client_id") for i in lan.findall("r:interface_ref", NS)) == sorted(f"{n}:if0" for n in out)
    return out


def _expected(claim, scale="paper") -> dict[str, tuple[str, str]]:
    """From the paper file: each role's names, hardware type (the guide's first) and image (named, else the OS's)."""
    paper = PROJECT.paper(claim.paper)
    roles = dict(claim.roles) or {claim.control_role: claim.role(claim.control_role)}
    out = {}
    for r, spec in roles.items():
        entry = {**(paper.machine.get("cloudlab") or {}), **(claim.requires.get("cloudlab") or {}),
                 **((spec.requires.get("cloudlab") or {}) if claim.roles and spec.requires else {})}
        reqs = spec.requires or claim.requires
        image = entry.get("disk_image") or next(
            (cloudlab.IMAGE_PREFIX + IMAGES[o] for o in reqs.get("os") if o in IMAGES), "")
        names = list(entry.get("names") or [])
        n = spec.min if scale == "rehearsal" or not names else len(names)
        names = (names + [f"{r}-{i}" for i in range(len(names), n)])[:n] if names else (
            [r] if n == 1 else [f"{r}-{i}" for i in range(n)])
        for name in names:
            out[name] = ((entry.get("hardware_type") or [""])[0], image)
    return out


@pytest.mark.parametrize("key", LIVE)
def test_each_live_claims_profile_runs_under_geni_lib_and_asks_for_what_its_machine_section_names(site, key, tmp_path):
    script = tmp_path / "profile.py"
    assert main(["cloudlab", "profile", key, "-o", str(script)]) == 0
    got = _nodes(genilib.run_profile(script, tmp_path / "request.xml"))
    assert got == _expected(PROJECT.claim(key))
    # reprobook's own request RSpec says the same, field by field
    assert main(["cloudlab", "profile", key, "--rspec", "-o", str(tmp_path / "own.xml")]) == 0
    assert _nodes((tmp_path / "own.xml").read_text()) == got


def test_the_guides_machines_by_name(site, tmp_path):
    """What the guides say, written out: Pesto's 13 m510 nodes under the harness's names, Verus's d6515 and r650."""
    got = {}
    for key in ("pesto/sample-runs", "verus/millibenchmarks", "verus/node-replication"):
        script = tmp_path / f"{key.replace('/', '-')}.py"
        assert main(["cloudlab", "profile", key, "-o", str(script)]) == 0
        got[key] = _nodes(genilib.run_profile(script, script.with_suffix(".xml")))
    pesto = got["pesto/sample-runs"]
    assert list(pesto) == ["control", "us-east-1-0", "us-east-1-1", "us-east-1-2", "eu-west-1-0", "eu-west-1-1",
                           "eu-west-1-2", "client-0-0", "client-1-0", "client-2-0", "client-3-0", "client-4-0",
                           "client-5-0"]
    # the stock Ubuntu 22.04 image, which the paper scale's steps install for (not the authors' private pequin-base)
    assert set(pesto.values()) == {("m510", "urn:publicid:IDN+emulab.net+image+emulab-ops//UBUNTU22-64-STD")}
    assert got["verus/millibenchmarks"] == {"control": ("d6515", "urn:publicid:IDN+emulab.net+image+emulab-ops//UBUNTU22-64-STD")}
    assert got["verus/node-replication"] == {"control": ("r650", "urn:publicid:IDN+emulab.net+image+emulab-ops//UBUNTU22-64-STD")}


def test_portal_parameters_change_hardware_and_counts_and_a_count_out_of_range_is_an_error(site, tmp_path):
    script = tmp_path / "p.py"
    assert main(["cloudlab", "profile", "pesto/sample-runs", "--scale", "rehearsal", "-o", str(tmp_path / "r.py")]) == 0
    rehearsal = _nodes(genilib.run_profile(tmp_path / "r.py", tmp_path / "r.xml"))
    assert sorted(rehearsal) == ["client-0-0", "control", "us-east-1-0"]   # one server, a client at least
    assert main(["cloudlab", "profile", "pesto/sample-runs", "--scale", "paper", "-o", str(script)]) == 0
    paper = _nodes(genilib.run_profile(script, tmp_path / "p.xml"))
    # the guide's cluster: the control machine, six servers and a client node for each, as the configs name them
    assert len(paper) == 13 and {f"client-{i}-0" for i in range(6)} <= set(paper) and "client-0-1" not in paper
    got = _nodes(genilib.run_profile(script, tmp_path / "q.xml", {"hw_server": "c6525-25g", "n_client": 3}))
    assert [n for n in got if n.startswith("client")] == ["client-0-0", "client-1-0", "client-2-0"]
    assert got["us-east-1-0"][0] == "c6525-25g" and got["control"][0] == "m510"
    # more client nodes than the guide's six go on as the harness names them (client-<server>-<node>)
    more = _nodes(genilib.run_profile(script, tmp_path / "m.xml", {"n_client": 8}))
    assert [n for n in more if n.startswith("client")] == [f"client-{i}-0" for i in range(8)]
    with pytest.raises(AssertionError, match="the client role takes 1 to any number of nodes"):
        genilib.run_profile(script, tmp_path / "bad.xml", {"n_client": 0})


@pytest.mark.parametrize("paper", sorted(PROJECT.papers))
def test_each_papers_profile_packs_its_live_claims_on_one_experiment(site, paper, tmp_path, capsys):
    script = tmp_path / "paper.py"
    assert main(["cloudlab", "profile", paper, "-o", str(script)]) == 0
    got = _nodes(genilib.run_profile(script, tmp_path / "paper.xml"))
    err = capsys.readouterr().err
    # every live claim of the paper finds its hardware type and image on some node, unless it is named as left out
    for key in (k for k in LIVE if k.startswith(paper + "/")):
        if f"not in the profile of {paper}: {key}" in err:
            continue
        wanted = _expected(PROJECT.claim(key))
        if PROJECT.claim(key).roles:
            assert {n: got.get(n) for n in wanted} == wanted, key
        else:
            assert set(wanted.values()) <= set(got.values()), key
    if paper == "verus":
        assert sorted(got.values()) == [("d6515", cloudlab.IMAGE_PREFIX + "UBUNTU22-64-STD"),
                                        ("r650", cloudlab.IMAGE_PREFIX + "UBUNTU22-64-STD")]
    if paper == "pesto":
        assert len(got) == 37 and "not in the profile of pesto" not in err   # 18 servers, 18 clients (Basil's)
