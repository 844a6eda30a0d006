"""A check is judged only where its claim can be judged (issue 32): the paper's scale on a machine meeting the
claim's requirements, unless the check declares it may be judged elsewhere; machine facts of an imported run."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import types

import pandas as pd
import pytest

import reprobook as rb
from reprobook import sources
from reprobook.core.checks import Verdict, check_claim, applies
from reprobook.core import rules
from reprobook.core.config import load_project

SMALL = sources.facts_from_flags(cores=1, os="Debian 12", memory_gib=1.0, smt="on", numa_nodes=1,
                                 physical_cores_per_socket=1)
assert SMALL == rules.SMALL_MACHINE   # the machine `reprobook check-paper` judges on is the one of these tests


def _measured(project, claim):
    """The authors' outputs as measured data where they ship them (so checks that may be judged are judged on
    real numbers), else one row of the value columns."""
    try:
        out = sources.reference(project, claim)
        if out.available:
            return rb.load(claim, out)
    except Exception:  # noqa: BLE001 - no mirror here: the rule does not depend on the numbers
        pass
    return pd.DataFrame({spec.value: [1.0] for spec in claim.checks})


def test_a_small_machine_at_rehearsal_scale_judges_only_what_declares_it_may(root, mirror):
    project = load_project(root)
    seen = {"judged": 0, "not judged": 0}
    for claim in project.all_claims():
        scale = "rehearsal" if "rehearsal" in claim.scales else None
        measured = _measured(project, claim)
        # the rule in the words `reprobook check-paper` and a new paper's page say it
        assert rules.small_import_problems(claim, measured) == [], claim.key
        v = check_claim(claim, measured, source="imported", scale=scale, host_facts=SMALL, imported=True)
        specs = [spec for spec in claim.checks if applies(spec, scale)]
        assert len(specs) == len(v.checks), claim.key
        for spec, r in zip(specs, v.checks):
            declared = bool(spec.needs and spec.needs.judged_at and (scale or "paper") in spec.needs.allowed
                            and not spec.needs.requires)
            if declared:
                seen["judged"] += 1
                assert spec.needs.judged_why, (claim.key, spec.what)
                assert not r.reason.startswith("cannot be judged"), (claim.key, r.reason)
            else:
                seen["not judged"] += 1
                assert r.verdict is Verdict.INCONCLUSIVE, (claim.key, spec.what, r.reason)
                assert r.reason.startswith("cannot be judged on this run: "), (claim.key, r.reason)
                assert ("this run is at rehearsal scale" in r.reason or "the run's host needs" in r.reason
                        or "does not say" in r.reason), (claim.key, r.reason)
    # the 31 checks that say why they may be judged at rehearsal scale (Aardvark's two comparisons of systems measured
    # side by side, the nineteen on the readings of one run of Pesto's stress test, its point and scan reads, its
    # TPCC sample, its shards, its replica failure, its comparison of systems (two) and Basil's workloads, client
    # failures and microbenchmarks, the persistent-memory log's three ratios between logs of one run, Verus-mimalloc
    # against mimalloc per benchmark, Verus-NR against NR, and macro-stats' three line counts), and every other check
    assert seen == {"judged": 31, "not judged": seen["not judged"]} and seen["not judged"] >= 75, seen


def test_an_imported_run_without_facts_names_what_it_does_not_say(root):
    claim = load_project(root).claim("aardvark/validator-throughput")
    data = pd.DataFrame({"op": ["create"] * 2, "cores": [1, 32], "mean_ops_per_s": [300.0, 2200.0]})
    v = check_claim(claim, data, source="imported", scale="paper", host_facts={}, imported=True)
    assert v.verdict is Verdict.INCONCLUSIVE
    for r in v.checks:
        assert "the imported run does not say whether its machine has at least 32 cores (CPUs online)" in r.reason
        assert "Ubuntu 18.04 or Ubuntu 20.04" in r.reason


def test_an_imported_run_with_facts_is_judged_as_a_live_run_on_that_host(root, mirror):
    project = load_project(root)
    claim = project.claim("aardvark/validator-throughput")
    ref = sources.reference(project, claim)
    facts = sources.facts_from_flags(cores=32, os="Ubuntu 20.04", memory_gib=128, smt="on")
    live = dataclasses.replace(ref, kind="live", scale="paper", host_facts=facts, run_id="live-1")
    imported = dataclasses.replace(live, kind="import", run_id="import-1")
    measured = rb.load(claim, ref)
    a, b = rb.check(claim, measured, live), rb.check(claim, measured, imported)
    assert [(r.verdict, r.reason) for r in a.checks] == [(r.verdict, r.reason) for r in b.checks]
    assert a.verdict is b.verdict and [c.judged_on for c in a.checks] == [c.judged_on for c in b.checks]
    assert "95 % interval of the margin" in a.checks[1].reason   # judged over the authors' 10 trials per point
    # below the requirement, both say so in the same words
    small = {**facts, "cpus": 2}
    a = rb.check(claim, measured, dataclasses.replace(live, host_facts=small))
    b = rb.check(claim, measured, dataclasses.replace(imported, host_facts=small))
    assert [r.reason for r in a.checks] == [r.reason for r in b.checks]
    assert all("the run's host needs 32 cores (CPUs online), has 2" in r.reason for r in a.checks)


def test_a_facts_file_made_by_the_probe_on_this_machine(root, tmp_path):
    claim = load_project(root).claim("aardvark/validator-throughput")
    script = tmp_path / "facts.sh"
    script.write_text(sources.facts_script(claim))
    out = subprocess.run(["bash", str(script), str(tmp_path)], capture_output=True, text=True, check=True).stdout
    (tmp_path / "facts.txt").write_text(out)
    facts = sources.read_facts(tmp_path / "facts.txt")
    assert facts["cpus"] == os.cpu_count() and facts["os_id"]
    (tmp_path / "empty.txt").write_text("nothing here\n")
    with pytest.raises(Exception, match="holds no machine facts"):
        sources.read_facts(tmp_path / "empty.txt")


def test_the_command_line_records_facts_from_a_file_and_flags(root, mirror, tmp_path):
    """`reprobook import --facts FILE --cores N`: the flags win over the file; the manifest keeps them."""
    import json
    import sys
    from tests.support.artifacts import VERUS
    raw = tmp_path / "raw-data.txt"
    raw.write_bytes((mirror / VERUS / "ironkv/recording/raw-data.txt").read_bytes())
    (tmp_path / "facts.json").write_text(json.dumps({"cpus": 4, "os": "Windows 11", "os_id": "windows",
                                                     "os_version": "11"}))
    out = subprocess.run([sys.executable, "-m", "reprobook.cli", "import", "verus/ironkv", str(raw), "--machine",
                          "laptop", "--facts", str(tmp_path / "facts.json"), "--cores", "8"],
                         capture_output=True, text=True, cwd=root, env={**os.environ, "REPROBOOK_ROOT": str(root)})
    assert out.returncode == 0, out.stderr
    run = rb.obtain(rb.claim("verus/ironkv"), "auto")
    assert dict(run.host_facts) == {"cpus": 8, "os": "Windows 11", "os_id": "windows", "os_version": "11"}
    assert str(rb.check(rb.claim("verus/ironkv"), rb.load(rb.claim("verus/ironkv"), run), run).verdict) == "holds"


def test_a_failing_verdict_on_the_authors_files_says_their_files_do_not_support_the_numbers(root, mirror):
    project = load_project(root)
    claim = project.claim("aardvark/archive-throughput")
    ref = sources.reference(project, claim)
    slow = rb.load(claim, ref).assign(ops_per_s_per_core=[6.0, 6.0, 6.0])
    v = rb.check(claim, slow, ref)
    assert v.verdict is Verdict.FAILS
    assert v.reason.startswith("the authors' own files do not support the published numbers: "), v.reason


def test_the_rule_names_a_check_a_small_machine_would_judge(root):
    """`reprobook check-paper`'s rule on a claim that keeps it, and on the same claim whose requires name only
    commands (not probed on an imported run): each check it would judge is named, with the rule's words."""
    from reprobook.core.requirements import Requirements
    # a claim that asks for 32 cores, with its checks relying on that alone (no needs of their own) and no scales
    claim = load_project(root).claim("aardvark/validator-throughput")
    claim = dataclasses.replace(claim, checks=tuple(dataclasses.replace(c, needs=None) for c in claim.checks),
                                scales=types.MappingProxyType({}))
    assert rules.small_import_problems(claim) == []
    bare = dataclasses.replace(claim, requires=Requirements(commands=["make"]))
    problems = rules.small_import_problems(bare)
    undeclared = list(claim.checks)
    assert len(problems) == len(undeclared)
    for spec, problem in zip(undeclared, problems):
        assert problem.startswith(f"{claim.key}: check {spec.what!r} breaks the rule that {rules.SMALL_IMPORT}")
        assert "would be judged there" in problem and "requires: {cores: 8" in problem
