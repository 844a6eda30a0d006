"""A whole paper on a pool of real sshd hosts: placement by requirements, claims in parallel, one summary."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import yaml

from reprobook.core.config import load_project
from reprobook.errors import ConfigError
from reprobook.pool import plan, run_all
from reprobook.core.runs import RunStore
from tests.support.fixture_project import make_project

pytestmark = pytest.mark.ssh
REPROBOOK = [sys.executable, "-m", "reprobook"]
DURATIONS = {"claim-a": 8.0, "claim-b": 10.0, "claim-c": 12.0}   # seconds each fixture benchmark takes


@pytest.fixture
def pool_project(tmp_path, bed, monkeypatch):
    """Three loopback hosts and a FIXTURE paper with three claims (benchmarks of 8, 10 and 12 s) and a 64-core one."""
    for i, name in enumerate(("node1", "node2", "node3")):
        bed.add_host(name, f"127.0.0.{i + 2}")
    fx = make_project(tmp_path / "fx", {"node1": "node1", "node2": "node2", "node3": "node3"})
    path = fx.root / "configs" / "papers" / "fixture.yaml"
    paper = yaml.safe_load(path.read_text())
    base = paper["claims"][0]
    claims = []
    for cid, seconds in DURATIONS.items():
        c = yaml.safe_load(yaml.safe_dump(base))
        c["id"], c["title"] = cid, f"FIXTURE {cid}"
        c["parameters"]["duration"]["default"] = seconds
        c["run"][0]["expected_minutes"] = seconds / 60
        claims.append(c)
    big = yaml.safe_load(yaml.safe_dump(base))
    big.update(id="needs-64-cores", title="FIXTURE claim no host can take", requires={"cores": 64, "why": "fixture"})
    paper["claims"] = claims + [big]
    path.write_text(yaml.safe_dump(paper, sort_keys=False))
    monkeypatch.setenv("REPROBOOK_ROOT", str(fx.root))
    monkeypatch.setenv("REPROBOOK_SSH_CONFIG", str(bed.ssh_config_path))
    monkeypatch.delenv("REPROBOOK_HOSTS", raising=False)
    return fx


def test_a_claim_no_host_can_take_is_reported_before_anything_starts(pool_project):
    project = load_project(pool_project.root)
    p = plan(project, "fixture", ["node1", "node2", "node3"])
    assert sorted(p.assigned.values()) == ["node1", "node2", "node3"]  # one claim per host: all in parallel
    assert list(p.unplaceable) == ["fixture/needs-64-cores"]
    assert all(f"node{i}: needs 64 cores (CPUs online), has" in p.unplaceable["fixture/needs-64-cores"]
               for i in (1, 2, 3))
    assert RunStore(project.settings.runs_dir).runs() == []  # planning starts nothing
    with pytest.raises(ConfigError, match="no host named 'ghost'"):
        plan(project, "fixture", ["node1", "ghost"])
    with pytest.raises(ConfigError, match="no claim to run has parameter"):
        run_all("fixture", "node1,node2", project=project, params={"trails": 3}, progress=False)


def test_three_claims_run_in_parallel_on_three_hosts(pool_project):
    project = load_project(pool_project.root)
    planned = []
    t0 = time.monotonic()
    result = run_all("fixture", ["node1", "node2", "node3"], project=project, progress=False,
                     on_plan=planned.append, poll_s=0.2)
    wall = time.monotonic() - t0
    assert len(planned) == 1 and planned[0].assigned == {k: r.host for k, r in
                                                         ((r.claim, r) for r in result.runs) if k in planned[0].assigned}
    ran = [r for r in result.runs if r.status == "succeeded"]
    assert [r.claim for r in ran] == ["fixture/claim-a", "fixture/claim-b", "fixture/claim-c"]
    assert sorted(r.host for r in ran) == ["node1", "node2", "node3"]
    assert all(r.verdict == "holds" for r in ran), [(r.claim, r.verdict, r.detail) for r in ran]
    longest = max(r.seconds for r in ran)
    assert longest >= DURATIONS["claim-c"]
    print(f"pool wall time {wall:.1f} s, longest claim {longest:.1f} s, ratio {wall / longest:.2f}")
    assert wall <= 1.3 * longest, (wall, [(r.claim, r.seconds) for r in ran])
    (no_host,) = [r for r in result.runs if r.status == "no host"]
    assert no_host.claim == "fixture/needs-64-cores" and no_host.verdict == "not run"
    store = RunStore(project.settings.runs_dir)
    for r in ran:  # each a detached run like any other, its verdict recorded
        m = store.load(r.run_id).manifest
        assert m["status"] == "succeeded" and m["host"] == r.host and m["verdict"] == "holds"


def test_the_command_prints_the_plan_a_summary_and_the_worst_exit_code(pool_project):
    out = subprocess.run(REPROBOOK + ["run", "fixture", "--all", "--hosts", "node1,node2", "-q",
                                      "-p", "duration", "1"], capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    assert "fixture/needs-64-cores: no host can take it: node1: needs 64 cores" in out.stdout
    assert text.index("no host can take it") < text.index("claim-a  ")  # said before the summary table
    assert "3 of 4 claim(s) ran" in out.stdout and "Traceback" not in text
    assert out.returncode == 4, text  # three hold, one could not run: "not run" is the worst
    usage = subprocess.run(REPROBOOK + ["run", "fixture", "--all"], capture_output=True, text=True)
    assert usage.returncode == 2 and "--all and --hosts go together" in usage.stderr
