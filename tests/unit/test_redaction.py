"""With redact_hosts, pages built from a recorded run name neither the host nor the local path."""

from __future__ import annotations

import hashlib

from reprobook import api
from reprobook.core.config import load_project
from reprobook.core.runs import RunStore


def _recorded_run(root, mirror, runs):
    claim = load_project(root).claim("aardvark/archive-throughput")
    run = RunStore(runs).create(claim, "run-on-secret-host", source="live", host="lab-node-7.secret.example",
                                status="succeeded")
    src = (mirror / "github.com/derbear/aardvark-prototype/dd8f6aaf5f76173118f3f3decbe099bda5972ce2"
           "/go-algorand/ledger/archives.csv").read_bytes()
    dest = run.path / "outputs" / "archives" / "archives.csv"
    dest.parent.mkdir(parents=True)
    dest.write_bytes(src)
    run.update(files=[{"output": "archives", "path": "outputs/archives/archives.csv", "size": len(src),
                       "sha256": hashlib.sha256(src).hexdigest()}])
    return claim


def test_host_named_without_redaction(root, mirror, tmp_path):
    claim = _recorded_run(root, mirror, tmp_path / "runs")
    ev = api.evaluate(claim)
    assert "lab-node-7.secret.example" in ev.verdict.source


def test_redacted(root, mirror, tmp_path, monkeypatch):
    monkeypatch.setenv("REPROBOOK_REDACT_HOSTS", "1")
    claim = _recorded_run(root, mirror, tmp_path / "runs")
    ev = api.evaluate(claim)
    text = ev.verdict.source + ev.outputs._repr_html_() + ev.outputs.location + ev.verdict._repr_html_()
    assert ev.outputs.run_id == "run-on-secret-host"
    assert "secret" not in text.replace("run-on-secret-host", "") and str(tmp_path) not in text
    assert "name withheld" in ev.verdict.source


# --------------------------------------------------------------------------- by value (issue 50)

def test_the_redactor_withholds_known_names_as_whole_names_in_any_case():
    from reprobook.core.redaction import Redactor
    r = Redactor(["run", "fqdn", "ab", "Node-7"], ["/home/alice"])
    assert r("not run; RUN-7 and rerun stay; ran on Run") == "not (withheld); RUN-7 and rerun stay; ran on (withheld)"
    assert r("host fqdn.corp.example, FQDN, fqdnx") == "host (withheld), (withheld), fqdnx"
    assert r("ab@AB.lab.example ran; a tab, lab-ab and abc stay") == "(withheld)@(withheld) ran; a tab, lab-ab and abc stay"
    assert r("node-7 NODE-7.cluster node-70") == "(withheld) (withheld) node-70"
    assert r("/home/alice/x and /home/alicex") == "(withheld)/x and /home/alicex"
    assert r({"a": ["on ab"], "n": 3}) == {"a": ["on (withheld)"], "n": 3}
    assert r.facts({"hostname": "x1", "user": "ab", "fqdn": "fqdn.corp.example", "cpus": 4, "os": "Debian on AB"}) == {
        "hostname": "(withheld)", "user": "(withheld)", "fqdn": "(withheld)", "cpus": 4, "os": "Debian on (withheld)"}


def test_a_redacted_report_withholds_hosts_named_like_words_and_still_validates(root, mirror, tmp_path, monkeypatch):
    """A host named ``run``, facts naming ``fqdn`` and two-letter users, in mixed case: the report validates against
    its schema (its verdicts and statuses are words the schema allows), and names none of them."""
    import json
    import os
    from pathlib import Path

    import yaml

    from reprobook import report
    from reprobook.core.plan import resolve
    hosts = tmp_path / "hosts.yaml"
    # and hosts named like the words the schema allows for verdicts, sources, statuses, scales and badges
    words = ["holds", "fails", "inconclusive", "reference", "live", "succeeded", "paper", "rehearsal", "Functional",
             "Reproduced", "Available"]
    hosts.write_text(yaml.safe_dump({"hosts": {"run": {"ssh": "Zo@run", "workdir": "/w"},
                                               "n7": {"ssh": "n7", "workdir": "/w"},
                                               **{w: {"ssh": w, "workdir": "/w"} for w in words}}}))
    monkeypatch.setenv("REPROBOOK_HOSTS", str(hosts))
    monkeypatch.setenv("REPROBOOK_REDACT_HOSTS", "1")
    claim = load_project(root).claim("aardvark/archive-throughput")
    runs = Path(os.environ["REPROBOOK_RUNS"])
    _recorded_run(root, mirror, runs)
    run = RunStore(runs).load("run-on-secret-host")
    run.update(host="Run", parameters=resolve(claim, {}),
               host_facts={"Run": {"hostname": "fqdn", "user": "Zo", "cpus": 4, "os": "Debian 12 on FQDN.corp.example",
                                   "kernel": "6.1 built by zo@n7"}})
    data = report.paper_report("aardvark")
    report.validate_report(data)
    c = next(c for c in data["claims"] if c["claim"] == claim.key)
    assert c["judged_run"] == "run-on-secret-host" and c["host"] == "(withheld)"
    assert c["host_facts"]["hostname"] == c["host_facts"]["user"] == "(withheld)"
    assert c["host_facts"]["os"] == "Debian 12 on (withheld)" and c["host_facts"]["kernel"] == "6.1 built by (withheld)@(withheld)"
    assert all(r["host"] == "(withheld)" for r in c["runs"])
    text = json.dumps(data) + report.report_markdown(data)
    assert "fqdn" not in text.lower() and ".corp.example" not in text and "zo@" not in text.lower()
    assert "'Run'" not in text and "n7" not in text
    import re
    assert "not (withheld)" not in text, re.findall(r".{200}not \(withheld\).{40}", text)[:3]
    assert "a successful run of the experiment" in text   # the report's own words stay


def test_a_redacted_page_withholds_the_parameters_that_name_someone(root, mirror, tmp_path, monkeypatch):
    """The CloudLab user, experiment and project a Pesto run was given, and any parameter whose value is a host
    redaction knows, are not on a redacted page; the other parameters are."""
    from pathlib import Path

    from reprobook import sources
    claim = load_project(root).claim("aardvark/archive-throughput")
    import os
    _recorded_run(root, mirror, Path(os.environ["REPROBOOK_RUNS"]))   # its host, lab-node-7.secret.example, is known
    params = {"cloudlab_user": "alice-cl", "cloudlab_experiment": "exp-secret", "cloudlab_project": "proj-secret",
              "target": "LAB-NODE-7.secret.example", "small_host": True, "trials": 3}
    outputs = sources.Outputs(claim.key, "live", "run r", {"archives": (Path("/x"),)}, run_id="r", parameters=params)
    shown = api.deviations(claim, outputs).data
    assert "alice\\-cl" in shown and "exp\\-secret" in shown   # without redaction they are shown
    monkeypatch.setenv("REPROBOOK_REDACT_HOSTS", "1")
    shown = api.deviations(claim, outputs).data
    assert "alice" not in shown and "secret" not in shown.lower() and "node" not in shown.lower(), shown
    assert "small\\_host=True" in shown and "trials=3" in shown and shown.count("(withheld") == 4, shown


def test_the_names_of_a_clusters_members_and_their_facts_are_known(root, tmp_path):
    from reprobook.core.redaction import known_names
    project = load_project(root)
    claim = project.claim("pesto/sample-runs")
    RunStore(tmp_path / "runs").create(claim, "cluster-run", source="live", host="control", status="succeeded",
                                       hosts={"client-0-0": {"roles": ["client"], "facts": {
                                           "hostname": "node3.exp.proj.utah.cloudlab.us", "user": "bob"}}})
    known = known_names(project, RunStore(tmp_path / "runs"))
    assert {"control", "client-0-0", "node3.exp.proj.utah.cloudlab.us", "bob"} <= known.names
    assert known("ssh bob@node3.exp.proj.utah.cloudlab.us from control to CLIENT-0-0") == \
        "ssh (withheld)@(withheld) from (withheld) to (withheld)"


def test_the_experiment_a_cluster_was_imported_from_is_known(root, tmp_path, monkeypatch):
    """A cluster imported from a manifest records its CloudLab experiment, project and user: redaction withholds them
    (the run's parameters and the configs name them), not the public domain."""
    from reprobook.core.redaction import known_names
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text("hosts:\n  ex-node-0: {ssh: alice@node-0.myexp.myproj-pg0.utah.cloudlab.us, node: node-0, workdir: /users/alice/rb}\n"
                     "clusters:\n  ex:\n    roles: {server: [ex-node-0]}\n"
                     "    cloudlab: {experiment: myexp, project: myproj-pg0, domain: utah.cloudlab.us, user: alice}\n")
    monkeypatch.setenv("REPROBOOK_HOSTS", str(hosts))
    project = load_project(root)
    known = known_names(project, RunStore(tmp_path / "runs"))
    assert {"myexp", "myproj-pg0", "alice"} <= known.names
    assert "utah.cloudlab.us" not in known.names
    assert known("experiment myexp of MyProj-pg0") == "experiment (withheld) of (withheld)"
