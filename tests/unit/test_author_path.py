"""What an author of a new paper needs beyond the reference (issue 53): bounds relative to a published value,
required parameters, and a published table's misspelt row label named on the page."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from reprobook.core.checks import Verdict, check_claim, evaluate_check, unmatched_labels
from reprobook.core.config import CheckSpec, PublishedNumber, load_paper
from reprobook.core.plan import make_plan
from reprobook.errors import ConfigError

PUB = {"p": PublishedNumber(id="p", value=2.0, unit="x", source="Table 2", precision="exact")}


def _spec(kind, **opts):
    return CheckSpec(kind=kind, what=f"a {kind} check", value="v", options=opts)


@pytest.mark.parametrize("kind, opts, value, verdict", [
    ("at_least", {"min": {"published": "p", "within": 0.1}}, 1.85, Verdict.HOLDS),     # 10 % below 2.0 is 1.8
    ("at_least", {"min": {"published": "p", "within": 0.1}}, 1.75, Verdict.FAILS),
    ("at_most", {"max": {"published": "p", "within": 0.1}}, 2.15, Verdict.HOLDS),      # 10 % above is 2.2
    ("in_range", {"min": {"published": "p", "within": 0.05}, "max": {"published": "p", "within": 0.05}}, 2.12,
     Verdict.FAILS),
    ("ratio", {"numerator": {"s": "new"}, "denominator": {"s": "old"}, "max": {"published": "p", "within": 0.02}},
     2.03, Verdict.HOLDS),                                                              # the paper's 2.0, +2 %
])
def test_a_bound_relative_to_a_published_value(kind, opts, value, verdict):
    if kind == "ratio":
        data = pd.DataFrame({"s": ["new", "old"], "v": [value, 1.0]})
    else:
        data = pd.DataFrame({"v": [value]})
    result = evaluate_check(_spec(kind, **opts), data, PUB)
    assert result.verdict is verdict, result.reason


def _aardvark(tmp_path: Path, root: Path, mutate) -> Path:
    data = yaml.safe_load((root / "configs/papers/aardvark.yaml").read_text())
    mutate(data)
    path = tmp_path / "aardvark.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_a_relative_bound_is_checked_when_the_paper_loads(tmp_path, root):
    def bad(d):
        d["claims"][1]["checks"][0]["min"] = {"published": "nope", "within": 0.1}
    with pytest.raises(ConfigError, match="no published number 'nope'") as err:
        load_paper(_aardvark(tmp_path, root, bad))
    assert "claims[1].checks[0].min.published" in str(err.value)


def test_a_required_parameter_is_refused_when_missing_naming_it(tmp_path, root):
    def add(d):
        d["claims"][1].setdefault("parameters", {})["test_machine"] = {
            "required": True, "help": "the machine the numbers come from", "pattern": "hostname"}
    claim = load_paper(_aardvark(tmp_path, root, add)).claims["validator-throughput"]
    for given in ({}, {"test_machine": ""}):
        with pytest.raises(ConfigError) as err:
            make_plan(claim, given, source="live")
        assert "needs test_machine (the machine the numbers come from)" in str(err.value)
        assert "-p test_machine VALUE" in str(err.value)
    assert make_plan(claim, {"test_machine": "node7"}, source="live").params["test_machine"] == "node7"
    assert make_plan(claim, {}, source="reference").params["test_machine"] == ""   # a page judging shipped files

    def no_default(d):
        d["claims"][1].setdefault("parameters", {})["test_machine"] = {"help": "the machine"}
    with pytest.raises(ConfigError, match="required key is missing") as err:
        load_paper(_aardvark(tmp_path, root, no_default))
    assert "claims[1].parameters.test_machine.default" in str(err.value)


def _cell(label, value):
    return PublishedNumber(id=f"t-{label}", value=value, unit="s", source="Table 3", precision="exact",
                           labels={"workload": label, "threads": 8}, table="t", column_label="threads")


def test_a_misspelt_table_label_is_named_on_the_page():
    measured = pd.DataFrame({"workload": ["memcached", "redis", "TPCC"], "threads": [8, 8, 8], "v": [1.0, 2.0, 3.0]})
    cells = [_cell("memcache", 1.0), _cell("redis", 2.0), _cell("tpcc", 3.0), _cell("nginx", 4.0)]
    words = unmatched_labels(cells, measured)
    assert words == [
        "published table 't': no measured row has workload 'memcache' (the run has 'memcached'): a label misspelt "
        "in the paper file? Its published numbers are compared with nothing",
        "published table 't': no measured row has workload 'tpcc' (the run has 'TPCC'): a label misspelt in the "
        "paper file? Its published numbers are compared with nothing"]
    # nginx is no misspelling of a measured value: a row this run did not measure, not named


def test_the_verdict_carries_the_label_warning(tmp_path, root):
    claim = load_paper(root / "configs/papers/aardvark.yaml").claims["archive-throughput"]
    import dataclasses
    claim = dataclasses.replace(claim, published=(*claim.published, _cell("memcache", 1.0)))
    measured = pd.DataFrame({"workload": ["memcached"], "threads": [8]})
    verdict = check_claim(claim, measured, source="test")
    assert any("'memcache' (the run has 'memcached')" in w for w in verdict.warnings)
    assert not any("memcache" in w for w in check_claim(claim, measured, source="test", scale="rehearsal").warnings)


def test_a_directory_is_matched_to_the_outputs_by_their_patterns(tmp_path, root):
    from reprobook.sources import match_directory

    def outputs(d):
        d["claims"][2]["outputs"] = {"params": {"path": "results", "glob": "*.params"},
                                     "runtime": {"path": "results", "glob": "*.runtime"},
                                     "log": {"path": "logs", "glob": "*.log"}, "any": {"path": "raw", "glob": "*.log"}}
    claim = load_paper(_aardvark(tmp_path, root, outputs)).claims["archive-throughput"]
    runs = tmp_path / "runs"
    for exp in ("exp1", "exp2"):
        (runs / "results" / exp).mkdir(parents=True)
        (runs / "results" / exp / "a.params").write_text("{}")
        (runs / "results" / exp / "a.runtime").write_text("1")
    (runs / "logs").mkdir()
    (runs / "logs" / "run.log").write_text("x")
    (runs / "results" / "notes.txt").write_text("x")
    (runs / "raw").mkdir()
    (runs / "raw" / "trace.log").write_text("x")   # matched by log's and any's patterns: any's path holds it
    found, unmatched = match_directory(claim, runs)
    rel = {k: [p.relative_to(runs).as_posix() for p in v] for k, v in found.items()}
    assert rel == {"params": ["results/exp1/a.params", "results/exp2/a.params"],
                   "runtime": ["results/exp1/a.runtime", "results/exp2/a.runtime"], "log": ["logs/run.log"],
                   "any": ["raw/trace.log"]}
    assert unmatched == ["results/notes.txt"]   # named, not imported


def test_a_claim_judged_on_the_machine_its_numbers_come_from(tmp_path, root):
    """measured_on: the checks are judged on the measured role's facts and requires, not the driver's."""
    from types import SimpleNamespace

    from reprobook.sources import run_host_facts

    def roles(d):
        c = d["claims"][2]   # archive-throughput
        c["roles"] = {"driver": {"description": "runs the harness"},
                      "testbox": {"requires": {"cores": 8, "why": "the paper's test machine"}}}
        c["measured_on"] = "testbox"
        for check in c["checks"]:
            check.pop("judged_at", None), check.pop("why", None)
    claim = load_paper(_aardvark(tmp_path, root, roles)).claims["archive-throughput"]
    manifest = {"host": "drv", "placement": {"roles": {"driver": ["drv"], "testbox": ["box"]}, "control": "drv"},
                "host_facts": {"drv": {"cpus": 64}, "box": {"cpus": 4}}}
    facts = run_host_facts(SimpleNamespace(manifest=manifest), claim.measured_on)
    assert facts == {"cpus": 4}   # the test machine's, not the 64-core driver's
    measured = pd.DataFrame({c.value: [1.0] for c in claim.checks})
    v = check_claim(claim, measured, source="run", scale="paper", host_facts=facts)
    assert all(r.verdict is Verdict.INCONCLUSIVE and "needs 8 cores (CPUs online), has 4" in r.reason
               for r in v.checks), [r.reason for r in v.checks]

    def wrong(d):
        roles(d)
        d["claims"][2]["measured_on"] = "tester"
    with pytest.raises(ConfigError, match="no role 'tester'") as err:
        load_paper(_aardvark(tmp_path, root, wrong))
    assert "claims[2].measured_on" in str(err.value)


def test_an_estimate_scales_with_the_parameters_it_declares(tmp_path, root):
    def per_trial(d):
        d["claims"][1]["scales"]["rehearsal"]["scales_with"] = ["trials"]   # 6 minutes at its one trial
    claim = load_paper(_aardvark(tmp_path, root, per_trial)).claims["validator-throughput"]
    assert make_plan(claim, {"scale": "rehearsal"}).expected_minutes == 6
    assert make_plan(claim, {"scale": "rehearsal", "trials": 3}).expected_minutes == 18

    def not_a_number(d):
        d["claims"][1]["scales"]["rehearsal"]["scales_with"] = ["rust"]
    with pytest.raises(ConfigError, match="'rust' is not a number parameter") as err:
        load_paper(_aardvark(tmp_path, root, not_a_number))
    assert "claims[1].scales.rehearsal.scales_with[0]" in str(err.value)
