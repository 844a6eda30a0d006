"""A job on a cluster's control host opens one SSH connection to each other host of its placement as it starts
(reprobook.remote.steps, `rb_open_masters`), in the background, and the steps that reach those hosts are carried by
it: real OpenSSH sshd hosts on loopback, the job's script run on this machine as the control host."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from reprobook.core.config import HostSpec, load_project
from reprobook.core.plan import make_plan
from reprobook.remote.placement import place
from reprobook.remote.steps import build_script

pytestmark = pytest.mark.ssh


def _accepted(server) -> int:
    return server.log_text().count("Accepted publickey")


def test_the_job_connects_once_to_each_member_and_leaves_no_connection_behind(tmp_path, bed):
    for name, addr in (("s1", "127.0.0.81"), ("s2", "127.0.0.82")):
        bed.add_host(name, addr)
    paper = {"paper": {"id": "cmfx", "title": "CMFX", "venue": "tests"}, "repositories": {}, "claims": [{
        "id": "c", "title": "t", "statement": "s", "refs": ["r"], "loader": "ozz.lmbench",
        "checks": [{"kind": "at_least", "what": "w", "value": "value", "min": 0}],
        "outputs": {"out": {"path": "out", "glob": "*"}},
        "roles": {"control": {}, "server": {"count": [2, 2]}},
        # two steps on each server, one after another: both carried by the one connection the job opened
        "setup": [{"name": "first", "role": "server", "run": 'echo "first on $RB_HOST"'},
                  {"name": "second", "role": "server", "run": 'echo "second on $RB_HOST"'}],
        "run": [{"name": "on control", "run": 'echo "control $RB_HOST, sockets in $RB_SSH_CM"'}]}]}
    (tmp_path / "configs" / "papers").mkdir(parents=True)
    (tmp_path / "configs" / "papers" / "cmfx.yaml").write_text(yaml.safe_dump(paper, sort_keys=False))
    (tmp_path / "_config.yml").write_text("title: t\n")
    hosts = {n: {"ssh": n, "workdir": str(tmp_path / "w" / n)} for n in ("c0", "s1", "s2")}
    (tmp_path / "configs" / "hosts.yaml").write_text(yaml.safe_dump(
        {"hosts": hosts, "clusters": {"two": {"roles": {"control": ["c0"], "server": ["s1", "s2"]}}}}))
    for n in hosts:
        (tmp_path / "w" / n).mkdir(parents=True)
    project = load_project(tmp_path)
    claim = project.claim("cmfx/c")
    placement = place(project, claim, "two")
    specs = {n: HostSpec(n, n, str(tmp_path / "w" / n)) for n in placement.hosts}
    script = build_script(project.paper("cmfx"), make_plan(claim), specs["c0"], str(tmp_path / "rd"),
                          placement=placement, members=specs)
    before = {n: _accepted(bed.servers[n]) for n in ("s1", "s2")}
    res = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "RB_SSH_CONFIG": str(bed.ssh_config_path)})
    assert res.returncode == 0, res.stdout + res.stderr
    for n in ("s1", "s2"):
        assert f"[{n}] first on {n}" in res.stdout and f"[{n}] second on {n}" in res.stdout, res.stdout
        # one connection per host, though the job's master and two steps reached it
        assert _accepted(bed.servers[n]) - before[n] == 1, bed.servers[n].log_text()[-2000:]
    # nothing of the job's SSH is left: no master, no socket directory
    left = subprocess.run(["pgrep", "-af", "ControlPath=/tmp/rb-ssh."], capture_output=True, text=True).stdout
    mine = [line for line in left.splitlines() if str(bed.ssh_config_path) in line]
    assert not mine, mine
    cm = res.stdout.split("sockets in ", 1)[1].split()[0]
    assert cm.startswith("/tmp/rb-ssh.") and not Path(cm).exists(), cm
