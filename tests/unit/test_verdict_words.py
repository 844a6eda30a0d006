"""A verdict says what it compared: the authors' files against themselves, or a run on a host unlike theirs."""

from __future__ import annotations

import hashlib

import reprobook as rb
from reprobook.core.requirements import differences, facts_from
from reprobook.core.runs import RunStore

VECCOM = "github.com/derbear/pointproofs/d72ed3c8b0e4624053360591fcc8d03ce720ae90/bench-results"
EDRAX = "github.com/derbear/edrax-vcs/1f1a3748d1530da1e75fadbce987ee6e6fa3fd1d/results"


def test_the_authors_files_judged_against_their_own_medians_say_so(mirror):
    ev = rb.evaluate("aardvark/vector-commitments", "reference")
    v = ev.verdict
    assert v.verdict is rb.Verdict.HOLDS  # the exit code and the run store keep the verdict itself
    assert v.says == "consistent with the authors' raw results" and v.as_dict()["wording"] == v.says
    assert v.reason.startswith("the published numbers are computed from these same files")
    assert v.statement.startswith("Aardvark's pairing-based vector commitments")
    other = rb.evaluate("aardvark/archive-throughput", "reference").verdict  # a real comparison: plain words
    assert other.says == "holds" and other.wording == ""


def test_a_run_is_a_measurement_and_its_host_is_compared_with_the_authors_machine(mirror, tmp_path):
    import os
    claim = rb.claim("aardvark/vector-commitments")
    facts = facts_from("cpus=8\nkernel=6.1.0\ncpu_model=Some CPU\nnuma_nodes=1").as_dict()
    run = RunStore(os.environ["REPROBOOK_RUNS"]).create(claim, "vc-on-a-small-host", source="live", host="node1",
                                                        status="succeeded", host_facts={"node1": facts})
    records = []
    for name, rel in (("edrax", EDRAX), ("veccom", VECCOM)):
        data = (mirror / rel).read_bytes()
        dest = run.path / "outputs" / name / rel.rsplit("/", 1)[-1]
        dest.parent.mkdir(parents=True)
        dest.write_bytes(data)
        records.append({"output": name, "path": str(dest.relative_to(run.path)), "size": len(data),
                        "sha256": hashlib.sha256(data).hexdigest()})
    run.update(files=records)
    v = rb.evaluate(claim, run.id).verdict
    assert v.says == "holds"  # numbers measured on a host: a real comparison
    assert v.warnings == ("the host differs from the machine the authors measured on: cores (CPUs online): 8 here, "
                          "64 on the authors' machine.",)
    assert "64 on the authors&#x27; machine" in v._repr_html_()


def test_differences_name_each_fact_that_differs_and_each_that_is_unknown():
    facts = facts_from("cpus=96\nkernel=5.15.0-91\ncpu_model=Intel(R) Xeon(R) Platinum 8260 CPU\nnuma_nodes=2\n"
                       "smt_active=1\nmem_kib=67108864\ncpu_topology=0:0 0:1 1:0 1:1")
    stated = {"machine": "words", "cpu_model": "Xeon Platinum 8260", "cores": 96, "numa_nodes": 4, "smt": "on",
              "memory_gib": 64, "kernel": "5.15", "os": "Ubuntu 22.04", "source": "guide"}
    assert differences(facts, stated) == ["NUMA nodes: 2 here, 4 on the authors' machine",
                                          "OS: not known here, Ubuntu 22.04 on the authors' machine"]
    assert differences(facts, {"cpu_model": "Intel Platinum 8260", "kernel": "5.15", "memory_gib": 64}) == []
    assert differences(facts, {"cpu_model": "AMD EPYC", "kernel": "6.1", "memory_gib": 128, "sockets": 1}) == [
        "sockets: 2 here, 1 on the authors' machine",
        "CPU model: Intel(R) Xeon(R) Platinum 8260 CPU here, AMD EPYC on the authors' machine",
        "memory (GiB): 64 here, 128 on the authors' machine", "kernel: 5.15.0-91 here, 6.1 on the authors' machine"]
    assert differences(None, stated) == []
