"""verus/node-replication at rehearsal scale: what it changes, and how its real outputs are read and judged.

The recorded patch is applied to the two files as the git mirror holds them at the guide's commit. The sample in
``tests/unit/data/verus-nr/`` is real and whole: the JSON records ``benchmarks/verified`` (Verus-NR) and
``benchmarks/upstream`` (NR) wrote in a ``make live-verus-nr`` run on a 2-CPU host with one NUMA node, 2 threads,
0, 10 and 100 % writes, each point run twice for 5 s (its README says when).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from reprobook.core.checks import check_claim
from reprobook.core.config import load_project
from reprobook.core.loaders import get_loader
from reprobook.core.plan import make_plan
from reprobook.sources import Outputs
from tests.conftest import ROOT
from tests.integration.conftest import unavailable
from tests.support.gitmirror import GIT_MIRROR

COMMIT = "341be41a31cfc5c7539f8b78a65f166a06251d02"
PATCH = ROOT / "configs" / "patches" / "verus" / "nr-normal-pages.patch"
FILES = ("benchmarks/verified/src/vnr_vspace.rs", "benchmarks/upstream/src/nr_vspace.rs")
DATA = Path(__file__).parent / "data" / "verus-nr"
# the facts a run on the host of the sample records (reprobook.core.requirements): 2 CPUs, one NUMA node
FACTS = {"cpus": 2, "physical_cores_per_socket": 2, "numa_nodes": 1, "mem_gib": 23.54,
         "os": "Debian GNU/Linux 12 (bookworm)", "os_id": "debian", "os_version": "12", "smt": "off"}


@pytest.fixture(scope="module")
def claim():
    return load_project(ROOT).claim("verus/node-replication")


def test_the_normal_pages_patch_applies_to_the_guides_commit_in_both_implementations(tmp_path):
    mirror = GIT_MIRROR / "verus-lang" / "verified-node-replication.git"
    if not mirror.is_dir():
        unavailable(f"the git mirror lacks {mirror}")
    for name in FILES:
        text = subprocess.run(["git", "--git-dir", str(mirror), "show", f"{COMMIT}:{name}"], capture_output=True,
                              text=True, check=True).stdout
        assert text.count("let mapping = alloc(3 * ONE_GIB, ONE_GIB);") == 1
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    out = subprocess.run(["git", "apply", str(PATCH)], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for name in FILES:
        text = (tmp_path / name).read_text()
        assert "alloc(3 * ONE_GIB, ONE_GIB)" not in text and text.count("alloc(3 * ONE_GIB, 4096);") == 1
        # 4096 is neither TWO_MIB nor ONE_GIB: alloc adds no MAP_HUGETLB flag
        assert "TWO_MIB => non_standard_flags |= MAP_HUGETLB | MAP_HUGE_2MB," in text


def test_the_rehearsal_checks_out_without_ironsync_and_records_what_it_changes(claim):
    plan = make_plan(claim, {"scale": "rehearsal"})
    assert plan.params["pages"] == "normal" and plan.params["seconds"] == 5 and plan.params["repetitions"] == 2
    assert plan.params["threads"] == "auto"
    repos = load_project(ROOT).paper("verus").repositories_for(plan.claim)
    assert [(r.name, r.checkout, r.exclude) for r in repos] == [
        ("verified-node-replication-rehearsal", "verified-node-replication",
         ("benchmarks/ironsync/ironsync-osdi2023", "benchmarks/lib/node-replication"))]
    assert repos[0].commit == COMMIT
    names = [s.name for s in plan.claim.setup + plan.claim.run]
    assert any("build Verus-NR" in n for n in names) and not any("IronSync" in n for n in names)
    devs = {d.kind: d for d in plan.deviations}
    assert "IronSync-NR is not run" in devs["not run here"].what and ".NET 5" in devs["not run here"].what
    assert devs["patch"].diff.count("+        let mapping = alloc(3 * ONE_GIB, 4096);") == 2
    # the paper's scale is the guide's: its own steps, huge pages, no patch
    paper = make_plan(claim, {})
    assert paper.params["pages"] == "huge" and [d.kind for d in paper.deviations] == []
    assert any("run_benchmarks.sh" in s.name for s in paper.claim.run)


@pytest.mark.parametrize("env, refused", [({}, False), ({"RB_THREADS": "1 2"}, True), ({"RB_SECONDS": "5"}, True),
                                          ({"RB_REPETITIONS": "2"}, True)])
def test_the_paper_scale_refuses_the_rehearsals_knobs_before_anything_runs(claim, tmp_path, env, refused):
    step = next(s for s in make_plan(claim, {}).claim.run if "run_benchmarks.sh" in s.name)
    head = step.run.split(". \"$HOME/.cargo/env\"")[0] + "echo reached\n"
    out = subprocess.run(["bash", "-c", head], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "RB_THREADS": "auto", "RB_SECONDS": "60", "RB_REPETITIONS": "1", **env})
    assert (out.returncode, "reached" in out.stdout) == ((2, False) if refused else (0, True))
    if refused:
        assert "at the paper's scale bench.py chooses them" in out.stderr


def _outputs() -> Outputs:
    files = tuple(sorted(DATA.glob("data-*.json")))
    assert [f.name for f in files] == ["data-upstream.json", "data-verified.json"]
    return Outputs("verus/node-replication", "live", "test", {"data": files}, location=str(DATA))


def _records() -> dict:
    """Throughput by (system, write %, threads), read from the sample with the standard library."""
    out: dict = {}
    for name, system in (("data-verified.json", "Verus-NR"), ("data-upstream.json", "NR")):
        for r in json.loads((DATA / name).read_text()):
            out.setdefault((system, 100 - r["reads_pct"], r["n_threads"]), []).append(r["ops_per_s"] / 1e6)
    return out


def test_the_loader_reads_the_real_rehearsal_outputs():
    measured = get_loader("verus.nr")(_outputs())
    records = _records()
    assert set(measured["system"]) == {"Verus-NR", "NR"} and set(measured["replicas"]) == {1}
    assert set(measured["threads"]) == {2} and set(measured["seconds"]) == {5.0}
    assert sorted(set(measured["write_pct"])) == [0, 10, 100] and set(measured["run"]) == {1, 2}
    assert set(records) == set(zip(measured["system"], measured["write_pct"], measured["threads"]))
    assert measured.attrs["trial_column"] == "run"
    for (system, w, t), values in records.items():
        got = measured[(measured["system"] == system) & (measured["write_pct"] == w) & (measured["threads"] == t)]
        assert list(got["mops"]) == pytest.approx(values) and list(got["run"]) == list(range(1, len(values) + 1))


def test_a_rehearsal_judges_verus_nr_against_nr_and_leaves_ironsync_and_scaling_inconclusive(claim):
    measured = get_loader("verus.nr")(_outputs())
    verdict = check_claim(claim, measured, source="test", scale="rehearsal", host_facts=FACTS)
    side, ironsync, scaling = verdict.checks
    mean = {k: sum(v) / len(v) for k, v in _records().items()}
    margin = min(2 / max(q, 1 / q) - 1 for q in
                 (mean["Verus-NR", w, t] / mean["NR", w, t] for (s, w, t) in mean if s == "Verus-NR"))
    assert "cannot be judged" not in side.reason and side.margin == pytest.approx(margin)
    # judged on each point's two runs: a bootstrap interval of the margin, which decides between a verdict and
    # inconclusive
    assert "the mean of 2 trials per point" in side.reason and side.trials == 2 and side.interval is not None
    lo, hi = side.interval
    assert lo <= side.margin <= hi
    assert side.verdict.value == ("holds" if lo >= 0 else "fails" if hi < 0 else "inconclusive")
    assert (side.verdict.value == "inconclusive") == ("spans 0" in side.reason)
    assert ironsync.verdict.value == "inconclusive" and "a rehearsal does not run IronSync-NR" in ironsync.reason
    assert ".NET 5 and Linear Dafny" in ironsync.reason
    assert "no measured rows match {'system': 'IronSync-NR'}" in ironsync.reason
    assert scaling.verdict.value == "inconclusive"
    assert "needs 2 NUMA nodes, has 1" in scaling.reason and "one NUMA node there is one replica" in scaling.reason
    # judged on the authors' machine at the paper's scale, the side-by-side check gives the same margin
    paper = check_claim(claim, measured, source="test", scale="paper", host_facts=None)
    assert paper.checks[0].margin == pytest.approx(margin)
