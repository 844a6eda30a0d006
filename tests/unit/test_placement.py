"""Roles, placements and sweeps: validated at load, placed on hosts and clusters, carried into the job script.

The job scripts run here with bash (one host playing every role, so no SSH); the real thing, with nine sshd
hosts and a run cut in the middle of its sweep, is in tests/integration/test_cluster.py.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from reprobook.core.plan import make_plan
from reprobook.core.config import HostSpec, load_paper, load_project
from reprobook.errors import ConfigError
from reprobook.remote.placement import Placement, place
from reprobook.remote.steps import build_script
from reprobook.core.plan import resolve


def _paper(tmp_path: Path, claim: dict, name: str = "placefx") -> Path:
    base = {"id": "c", "title": "t", "statement": "s", "refs": ["r"], "loader": "ozz.lmbench",
            "checks": [{"kind": "at_least", "what": "w", "value": "value", "min": 0}],
            "outputs": {"out": {"path": "out", "glob": "*"}}}
    path = tmp_path / "configs" / "papers" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"paper": {"id": name, "title": "PLACEFX", "venue": "tests"},
                                    "repositories": {}, "claims": [{**base, **claim}]}, sort_keys=False))
    return path


ROLES = {"control": {}, "server": {"count": [2, 3], "requires": {"cores": 1}}, "client": {"count": [1, None]}}


def test_roles_steps_and_sweeps_are_validated_naming_file_and_key(tmp_path):
    with pytest.raises(ConfigError, match=r"claims\[0\]\.run\[0\]\.role: no role 'srv'"):
        load_paper(_paper(tmp_path, {"roles": ROLES, "run": [{"name": "x", "run": "true", "role": "srv"}]}))
    with pytest.raises(ConfigError, match=r"claims\[0\]\.roles\.server\.count: the count's maximum 1 is below"):
        load_paper(_paper(tmp_path, {"roles": {"control": {}, "server": {"count": [3, 1]}}}))
    with pytest.raises(ConfigError, match=r"claims\[0\]\.run\[0\]\.sweep: a sweep step needs a parameter"):
        load_paper(_paper(tmp_path, {"run": [{"name": "x", "run": "true", "sweep": True}]}))
    with pytest.raises(ConfigError, match=r"claims\[0\]\.outputs\.out\.role: no role 'nobody'"):
        load_paper(_paper(tmp_path, {"roles": ROLES, "outputs": {"out": {"path": "o", "role": "nobody"}}}))
    with pytest.raises(ConfigError, match=r"claims\[0\]\.inputs\.generator: no input generator 'nope'"):
        load_paper(_paper(tmp_path, {"inputs": {"generator": "nope"}}))


def test_a_sweep_is_the_product_of_the_list_parameters_typed_and_timed(tmp_path):
    paper = load_paper(_paper(tmp_path, {
        "parameters": {"system": {"default": ["a", "b"], "help": "h"}, "clients": {"default": [1, 2, 4], "help": "h"},
                       "duration": {"default": 1.5, "help": "h"}},
        "run": [{"name": "once", "run": "true", "expected_minutes": 1},
                {"name": "each", "run": "true", "sweep": True, "expected_minutes": 2}]}))
    claim = paper.claim("c")
    assert claim.sweep_axes == ("system", "clients")
    points = make_plan(claim).sweep
    assert points[0] == {"system": "a", "clients": 1} and points[-1] == {"system": "b", "clients": 4}
    assert len(points) == 6 and len(make_plan(claim, {"clients": [8]}).sweep) == 2
    assert claim.expected_minutes == 1 + 2 * 6
    with pytest.raises(ConfigError, match="takes a list of int"):
        resolve(claim, {"clients": [1, "many"]})
    assert resolve(claim, {"clients": 3})["clients"] == (3,)   # one value is a sweep of one point


def test_a_sweep_resumes_at_the_first_unfinished_point(tmp_path):
    paper = load_paper(_paper(tmp_path, {
        "parameters": {"clients": {"default": [1, 2, 3], "help": "h"}},
        "run": [{"name": "each", "sweep": True,
                 "run": 'echo "$RB_POINT $RB_CLIENTS ($RB_POINT_NAME)" >> "$RB_RUN_DIR/ran"\n'
                        'if [ "$RB_CLIENTS" = 2 ] && [ ! -e "$RB_RUN_DIR/go" ]; then exit 4; fi'}]}))
    claim = paper.claim("c")
    rd = tmp_path / "rd"
    rd.mkdir()
    script = build_script(paper, make_plan(claim), HostSpec("h", "h", str(tmp_path / "w")), str(rd))
    first = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert first.returncode == 4 and "[point 2/3: clients=2]" in first.stdout
    assert (rd / "ran").read_text().split("\n")[:2] == ["1 1 (clients=1)", "2 2 (clients=2)"]
    (rd / "go").touch()
    again = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert "step 1-1/1: each [point 1/3: clients=1] [skipped: done in an earlier attempt]" in again.stdout
    assert [l.split()[0] for l in (rd / "ran").read_text().split("\n") if l] == ["1", "2", "2", "3"]
    assert (rd / "points" / "1-3.log").read_text().strip() == ""  # the point's output, teed (this one says nothing)
    assert sorted(p.name for p in (rd / "steps").glob("*.done")) == ["1-1.done", "1-2.done", "1-3.done"]


def _project(tmp_path: Path, claim: dict, clusters: dict) -> object:
    _paper(tmp_path, claim)
    (tmp_path / "_config.yml").write_text("title: t\n")
    hosts = {n: {"ssh": f"{n}.example.org", "workdir": f"/w/{n}"} for n in ("c0", "s1", "s2", "s3", "k1")}
    (tmp_path / "configs" / "hosts.yaml").write_text(yaml.safe_dump({"hosts": hosts, "clusters": clusters}))
    return load_project(tmp_path)


def test_a_placement_comes_from_a_cluster_or_one_host_and_counts_are_checked(tmp_path):
    clusters = {"ok": {"roles": {"control": ["c0"], "server": ["s1", "s2"], "client": ["k1"]}},
                "big": {"roles": {"control": ["c0"], "server": ["s1", "s2", "s3", "k1"], "client": ["k1"]}},
                "short": {"roles": {"control": ["c0"], "server": ["s1"]}}}
    project = _project(tmp_path, {"roles": ROLES, "run": [{"name": "x", "run": "true"}]}, clusters)
    claim = project.claim("placefx/c")
    p = place(project, claim, "ok")
    assert p.control == "c0" and p.members == ("s1", "s2", "k1") and p.cluster == "ok"
    assert p.env() == {"RB_CONTROL_HOST": "c0", "RB_HOSTS_CONTROL": "c0", "RB_HOSTS_SERVER": "s1 s2",
                       "RB_HOSTS_CLIENT": "k1"}
    assert Placement.from_dict(p.as_dict()) == p
    assert p.key() == "control=c0;server=s1,s2;client=k1"
    with pytest.raises(ConfigError, match=r"role 'server' takes 2 to 3 hosts; cluster 'big' .* gives it 4"):
        place(project, claim, "big")
    with pytest.raises(ConfigError, match=r"has no role client that placefx/c needs"):
        place(project, claim, "short")
    with pytest.raises(ConfigError, match=r"role 'server' takes 2 to 3 hosts; host 's1' gives it 1: name a cluster"):
        place(project, claim, "s1")
    with pytest.raises(ConfigError, match=r"no host or cluster named 'x' \(known: .*ok \(cluster\)"):
        place(project, claim, "x")


def test_steps_of_a_role_run_on_each_of_its_hosts_with_their_names(tmp_path):
    """The control host's script runs a role's step on each host (here: a stand-in ssh that runs it locally)."""
    clusters = {"ok": {"roles": {"control": ["c0"], "server": ["s1", "s2"], "client": ["k1"]}}}
    project = _project(tmp_path, {"roles": ROLES, "setup": [
        {"name": "on servers", "role": "server", "run": 'echo "I am $RB_HOST in $PWD; servers: $RB_HOSTS_SERVER"'}],
        "run": [{"name": "on control", "run": 'echo "control $RB_HOST"'}]}, clusters)
    claim, paper = project.claim("placefx/c"), project.paper("placefx")
    p = place(project, claim, "ok")
    for n in ("c0", "s1", "s2"):
        (tmp_path / "w" / n).mkdir(parents=True)
    specs = {n: HostSpec(n, n, str(tmp_path / "w" / n)) for n in p.hosts}
    script = build_script(paper, make_plan(claim), specs["c0"], str(tmp_path / "rd"), placement=p, members=specs)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # options first, then `--`, the host and the command (no value can be read as an option)
    (bin_dir / "ssh").write_text('#!/bin/bash\nwhile [ "$1" != -- ]; do shift; done; shift; h=$1; shift\n'
                                 'echo "(ssh to $h)"; exec bash -c "$*"\n')
    (bin_dir / "ssh").chmod(0o755)
    res = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert res.returncode == 0, res.stdout + res.stderr
    for n in ("s1", "s2"):
        assert f"[{n}] (ssh to {n})" in res.stdout
        assert f"[{n}] I am {n} in {tmp_path / 'w' / n}; servers: s1 s2" in res.stdout
    assert "control c0" in res.stdout


def test_progress_of_a_sweep_shows_points_done_of_total_and_the_current_point():
    from reprobook.remote.jobs import JobStatus, progress_words
    st = JobStatus("r", "running", None, 1.0, None, 5.0, "2-3/2: run one setting [point 3/4: clients=6 duration=2.0]",
                   0, "", points_done=2)
    assert progress_words(st) == "2/4 points done, now clients=6 duration=2.0 | "
    # once points are done, their measured time gives each point's time and the sweep's time left
    timed = JobStatus("r", "running", None, 0.0, None, 10.0, "3-3/3: each [point 3/4: clients=6 duration=2.0]", 0,
                      "", points_done=2, point_secs=(100.0, 140.0))
    assert progress_words(timed) == "2/4 points done (2 min each, about 4 min left), now clients=6 duration=2.0 | "
    plain = JobStatus("r", "running", None, 1.0, None, 5.0, "1/2: build", 0, "")
    assert progress_words(plain) == "1/2: build | "


def test_the_expected_end_moves_with_the_steps_skipped_and_the_points_done(tmp_path):
    """The claim's total counts every step cold; from a step on, only that step and the later ones count."""
    from reprobook.remote.steps import expected_left_s
    paper = load_paper(_paper(tmp_path, {
        "parameters": {"clients": {"default": [1, 2, 4], "help": "h"}},
        "setup": [{"name": "build", "run": "true", "expected_minutes": 45}],
        "run": [{"name": "once", "run": "true", "expected_minutes": 1},
                {"name": "each", "run": "true", "sweep": True, "expected_minutes": 2}]}))
    claim = paper.claim("c")
    assert claim.expected_minutes * 60 == expected_left_s(paper, make_plan(claim), "1/3: build") == (45 + 1 + 3 * 2) * 60
    assert expected_left_s(paper, make_plan(claim), "2/3: once") == (1 + 3 * 2) * 60  # the build was skipped or quick
    # in the sweep: the current point and those not started; fewer clients, fewer points
    assert expected_left_s(paper, make_plan(claim), "3-2/3: each [point 2/3: clients=2]", points_done=1) == 2 * 2 * 60
    # measured: the points done so far took 30 s each, so the two left take a minute, whatever the guide said
    assert expected_left_s(paper, make_plan(claim), "3-2/3: each [point 2/3: clients=2]", points_done=1,
                           point_s=30.0) == 2 * 30
    assert expected_left_s(paper, make_plan(claim, {"clients": [8]}), "3-1/3: each", points_done=0) == 2 * 60
    assert expected_left_s(paper, make_plan(claim), "") is None and expected_left_s(paper, make_plan(claim), "9/3: what") is None


def test_the_status_script_reports_the_time_of_each_point_done(tmp_path):
    """The job's status script (run here by bash on a run directory as a host has it) reads the seconds
    each finished sweep point took, which the step runner writes beside its done mark."""
    import subprocess

    from reprobook.remote.jobs import _STATUS, _parse_status
    run = tmp_path / "run"
    (run / "steps").mkdir(parents=True)
    for name, secs in (("1", 300), ("3-1", 42), ("3-2", 58)):   # a setup step, then two points of the sweep
        (run / "steps" / f"{name}.done").write_text("hash\n")
        (run / "steps" / f"{name}.secs").write_text(f"{secs}\n")
    (run / "log").write_text("### reprobook step 3-3/3: each [point 3/5: clients=8]\nrunning\n")
    out = subprocess.run(["bash", "-c", _STATUS, "status", str(run), "5"], capture_output=True, text=True,
                         check=True).stdout
    st = _parse_status("r", out)
    assert st.points_done == 2 and st.point_secs == (42.0, 58.0) and st.point_s == 50.0


VARIANT = {"roles": ROLES,
           "parameters": {"clients": {"default": [10, 20], "help": "h"}},
           "setup": [{"name": "build on the cluster", "run": "true"}],
           "run": [{"name": "the paper's run", "run": "true", "sweep": True}],
           "scales": {"paper": {"about": "the cluster"},
                      "rehearsal": {"about": "one small server", "values": {"clients": [1]},
                                    "roles": {"control": {}, "server": {"count": 1}, "client": {"count": [1, None]}},
                                    "requires": {"memory_gib": 1},
                                    "setup": [{"name": "build here", "run": "true"}],
                                    "run": [{"name": "the rehearsal's run", "run": "true", "sweep": True,
                                             "role": "client"}]}}}


def test_a_scale_gives_its_own_roles_and_steps_and_the_plan_holds_the_claim_of_its_scale(tmp_path):
    from reprobook.remote.live import plan_live
    clusters = {"ok": {"roles": {"control": ["c0"], "server": ["s1", "s2"], "client": ["k1"]}},
                "one": {"roles": {"control": ["c0"], "server": ["s1"], "client": ["k1"]}}}
    project = _project(tmp_path, VARIANT, clusters)
    claim = project.claim("placefx/c")
    small = claim.at_scale("rehearsal")
    assert claim.at_scale("paper") is claim and claim.at_scale(None) is claim
    assert (small.roles["server"].min, small.roles["server"].max) == (1, 1)
    assert [s.name for s in small.setup] == ["build here"] and [s.name for s in small.run] == ["the rehearsal's run"]
    assert small.requires.items() and small.roles["server"].requires == small.requires
    paper = make_plan(claim, {})
    assert [n for n, _, _ in paper.steps] == ["build on the cluster", "the paper's run"]
    rehearsal = make_plan(claim, {"scale": "rehearsal"})
    assert rehearsal.claim == small and [(n, r) for n, r, _ in rehearsal.steps] == [
        ("build here", "control"), ("the rehearsal's run", "client")]
    # placed as the scale wants it: one server at rehearsal scale, two or three at the paper's
    assert plan_live(project, claim, "one", {"scale": "rehearsal"}).roles["server"] == ("s1",)
    assert plan_live(project, claim, "ok", {}).roles["server"] == ("s1", "s2")
    with pytest.raises(ConfigError, match=r"role 'server' takes 1 host; cluster 'ok' .* gives it 2"):
        plan_live(project, claim, "ok", {"scale": "rehearsal"})
    with pytest.raises(ConfigError, match=r"role 'server' takes 2 to 3 hosts; cluster 'one' .* gives it 1"):
        plan_live(project, claim, "one", {})


@pytest.mark.parametrize("change, key, words", [
    ({"run": [{"name": "x", "run": "true", "role": "nobody"}]}, r"claims\[0\]\.scales\.rehearsal\.run\[0\]\.role",
     "no role 'nobody'"),
    ({"roles": {"control": {}, "server": {"count": [3, 1]}}}, r"claims\[0\]\.scales\.rehearsal\.roles\.server\.count",
     "below its minimum"),
    ({"inputs": {"generator": "nope"}}, r"claims\[0\]\.scales\.rehearsal\.inputs\.generator", "no input generator"),
    ({"repositories": ["nope"]}, r"claims\[0\]\.scales\.rehearsal\.repositories\[0\]", "unknown repository 'nope'"),
    ({"loader": "x"}, r"claims\[0\]\.scales\.rehearsal", "loader"),
])
def test_what_a_scale_gives_of_its_own_is_validated_naming_file_and_key(tmp_path, change, key, words):
    claim = {**VARIANT, "scales": {**VARIANT["scales"], "rehearsal": {**VARIANT["scales"]["rehearsal"], **change}}}
    with pytest.raises(ConfigError, match=key) as err:
        load_paper(_paper(tmp_path, claim))
    assert words in str(err.value)


def test_a_claim_at_one_scale_asked_for_another_is_that_scales_claim(tmp_path):
    claim = load_paper(_paper(tmp_path, VARIANT)).claim("c")
    small = claim.at_scale("rehearsal")
    assert small.at_scale("paper") == claim and small.at_scale("rehearsal") is small
    assert claim.at_scale("paper") is claim and claim.at_scale(None) is claim
