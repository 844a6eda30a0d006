"""OPT-IN (``make live-pesto``): Pesto and TAPIR for real, built from source and run through the authors' harness.

Nothing here is a stand-in. The project's own claims ``pesto/rehearsal-tapir`` and
``pesto/rehearsal-pesto`` run on a loopback cluster of four real sshd hosts on this machine, named as
the harness names them (``control``, ``us-east-1-0``, ``client-0-0``, ``client-0-1``): the control host
checks out Pequin at the pinned commit from the local mirror, installs the Debian packages and the
libraries Debian lacks, builds the server and the benchmark client (about 45 minutes on two cores the
first time; the compiler cache and the kept workdir make a second run take minutes), and runs the
harness on the configs derived for the cluster. The runs are recorded in the project's run store, so
``make book`` afterwards shows them on the Pesto pages.

It needs root (packages, ``/usr/local``, and the server's name in ``/etc/hosts``, which the replica
binds to; the block added is removed at the end), the git mirror beside the project, and time. The
workdir is kept in ``$REPROBOOK_LIVE_DIR`` (default ``/var/tmp/reprobook-live-pesto``). A summary
(per step times, throughput and latency of each point, verdicts) is printed and written to
``summary.json`` there.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
import yaml

from reprobook.api import check
from reprobook.config import load_project
from reprobook.live import perform
from reprobook.loaders import load
from reprobook.sources import from_run
from tests.integration.conftest import GIT_MIRROR, ROOT
from tests.support import pequin_harness
from tests.support.sshd import SshTestbed

pytestmark = [pytest.mark.ssh, pytest.mark.timeout(4 * 3600)]
LIVE_DIR = Path(os.environ.get("REPROBOOK_LIVE_DIR", "/var/tmp/reprobook-live-pesto"))
HOSTS = {"control": "127.0.0.60", "us-east-1-0": "127.0.0.61", "client-0-0": "127.0.0.62", "client-0-1": "127.0.0.63"}
MARK = "# reprobook live-pesto: the loopback cluster's names (removed when the run ends)"
_STEP = re.compile(r"^### reprobook step (\S+): (.*?)(?: \(expected .*\))?(?: \[point .*\])?$")
_DONE = re.compile(r"^### reprobook: step (\S+) done in (\d+) s")


@pytest.fixture(scope="module")
def cluster():
    if os.environ.get("REPROBOOK_LIVE_PESTO") != "1":
        pytest.skip("opt-in: `make live-pesto` builds Pequin from source (about 45 minutes) and runs it")
    if os.geteuid() != 0:
        pytest.skip("needs root: Debian packages, libraries in /usr/local, the server's name in /etc/hosts")
    if not (GIT_MIRROR / "fsuri" / "Pequin-Artifact").is_dir():
        pytest.fail(f"the git mirror {GIT_MIRROR}/fsuri/Pequin-Artifact is absent")
    LIVE_DIR.mkdir(parents=True, exist_ok=True)
    shims = LIVE_DIR / "shims"
    shims.mkdir(exist_ok=True)
    # the harness runs `sudo disable_HT.sh`, `sudo rm -rf /dev/shm/*` ... on its hosts: all this very machine
    (shims / "sudo").write_text('#!/bin/sh\necho "(loopback host: sudo $* skipped)" >&2\n')
    (shims / "sudo").chmod(0o755)
    path = f"{shims}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    _names(add=True)
    try:
        with SshTestbed(LIVE_DIR / "ssh") as bed:
            for name, addr in HOSTS.items():
                bed.add_host(name, addr, extra_config=[f"SetEnv PATH={path}"])
            hosts = {"hosts": {n: {"ssh": n, "workdir": str(LIVE_DIR / "work" / n)} for n in HOSTS},
                     "clusters": {"rehearsal": {"roles": {"control": ["control"], "server": ["us-east-1-0"],
                                                          "client": ["client-0-0", "client-0-1"]}}}}
            hosts["hosts"]["control"]["git_url_rewrites"] = {"https://github.com/": f"{GIT_MIRROR}/"}
            hosts["hosts"]["control"]["env"] = {"RB_SSH_CONFIG": str(bed.ssh_config_path)}
            (LIVE_DIR / "hosts.yaml").write_text(yaml.safe_dump(hosts))
            env = {"REPROBOOK_ROOT": str(ROOT), "REPROBOOK_HOSTS": str(LIVE_DIR / "hosts.yaml"),
                   "REPROBOOK_SSH_CONFIG": str(bed.ssh_config_path),
                   "REPROBOOK_GIT_BASE_URL": f"file://{GIT_MIRROR}/"}
            old = {k: os.environ.get(k) for k in env}
            os.environ.update(env)
            try:
                yield load_project(ROOT)
            finally:
                for k, v in old.items():
                    os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    finally:
        _names(add=False)


def _names(*, add: bool) -> None:
    """The cluster's names in /etc/hosts (the replica binds to its name; CloudLab's DNS has them), or taken out."""
    hosts = Path("/etc/hosts")
    lines = hosts.read_text().splitlines()
    if MARK in lines:
        i = lines.index(MARK)
        lines = lines[:i] + lines[i + 1 + len(HOSTS):]
    if add:
        lines += [MARK, *(f"{addr} {name}" for name, addr in HOSTS.items())]
    hosts.write_text("\n".join(lines) + "\n")


def _step_times(log: str) -> list[dict]:
    steps, names = [], {}
    for line in log.splitlines():
        m = _STEP.match(line)
        if m:
            names[m.group(1).split("/")[0]] = m.group(2)  # "5/10" or "10-1/10"
            continue
        m = _DONE.match(line)
        if m:
            steps.append({"step": m.group(1), "name": names.get(m.group(1), "")[:90], "seconds": int(m.group(2))})
    return steps


def test_tapir_and_pesto_built_from_source_and_run_through_the_authors_harness(cluster):
    summary_path = LIVE_DIR / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {"attempts": []}
    attempt = {"started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "claims": {}}
    for claim_id in ("pesto/rehearsal-tapir", "pesto/rehearsal-pesto"):
        claim = cluster.claim(claim_id)
        t0 = time.monotonic()
        run = perform(cluster, claim, "rehearsal", {"scale": "rehearsal"}, new=True,
                      progress=True, poll_s=5)
        wall = time.monotonic() - t0
        log = (run.path / "log.txt").read_text()
        assert run.status == "succeeded", log[-4000:]
        outputs = from_run(claim, run)
        data = load(claim, outputs)
        verdict = check(claim, data, outputs)
        attempt["claims"][claim_id] = {
            "run": run.id, "wall_s": round(wall), "steps": _step_times(log),
            "adapted": run.manifest.get("adapted", []), "points": json.loads(data.to_json(orient="records")),
            "checks": [(r.what, r.verdict.value, r.reason) for r in verdict.checks]}
        print(f"\n{claim_id}: {run.id}, {wall:.0f} s")
        for s in _step_times(log):
            print(f"  step {s['step']}: {s['seconds']} s  {s['name']}")
        print(data.drop(columns=["directory"]).round(2).to_string())
        for r in verdict.checks:
            print(f"  {r.verdict.value}: {r.what}")
        assert [r.verdict.value for r in verdict.checks[:2]] == ["holds", "holds"], verdict
        assert (data["tput_tx_per_s"] > 0).all()
    summary["attempts"].append(attempt)
    summary_path.write_text(json.dumps(summary, indent=1))
