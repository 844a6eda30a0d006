"""The point-scan rehearsal through the authors' real harness, with stand-in binaries, on four real sshd hosts.

The authors name the point-scan configs after their range alone (``10.json`` in ``Point``, in ``Scan/no condition``
and in ``Scan/with condition``). Each point of the sweep must run the config generated for it (``$RB_INPUT``), the
harness names its outputs after that config, and the loader labels each kind of read from the config the harness
resolved. The set-up is `tests.integration.test_pequin_harness`'s (a module of its own here, so that it runs beside
the real builds' group, not after it).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reprobook.core.config import load_project
from reprobook.remote.live import perform
from tests.integration.test_pequin_harness import (FAST, POINT_SCAN, REHEARSAL_CHECKS, claim_verdict,
                                                   rehearsal_verdicts, standin_cluster)

pytestmark = pytest.mark.ssh
HOSTS = {"control": "127.0.0.120", "us-east-1-0": "127.0.0.121", "client-0-0": "127.0.0.122", "client-0-1": "127.0.0.123"}
"""Addresses of their own: this module may run while the harness module's cluster (127.0.0.50 to 53) runs its
servers on the harness's fixed ports, and while the CloudLab round trip's hosts (127.0.0.70 to 92) answer."""


@pytest.fixture
def cluster(tmp_path, bed, monkeypatch):
    env = standin_cluster(tmp_path, bed, HOSTS, isolated=os.geteuid() == 0)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("REPROBOOK_HOSTS", raising=False)
    return Path(env["REPROBOOK_ROOT"])


def test_point_reads_and_scans_of_one_file_name_run_through_the_real_harness_each_on_its_own_config(cluster):
    """The point-scan configs are all named after their range (10.json in Point, Scan/no condition and Scan/with
    condition): each point of the sweep runs the config generated for it ($RB_INPUT), the harness names its
    outputs after that config, and the loader labels each kind of read from the config the harness resolved."""
    project = load_project(cluster)
    claim = project.claim(POINT_SCAN)
    base = "experiment-configs/Pesto/2-Microbenchmarks/1-Scan-Point/"
    configs = [base + "Point/10.json", base + "Scan/with condition/10.json"]
    run = perform(project, claim, "rehearsal", {**FAST, "clients": [1], "configs": configs}, progress=False,
                  poll_s=0.5)
    assert run.status == "succeeded", (run.manifest.get("error"), (run.path / "log.txt").read_text()[-3000:])
    assert sorted(run.manifest["inputs"]) == ["Point-10-c1.json", "with_condition-10-c1.json"]
    assert run.manifest["inputs"]["Point-10-c1.json"]["point"] == {"clients": 1, "configs": configs[0]}
    verdict, data = claim_verdict(claim, run)
    rows = data.sort_values("config")
    assert list(rows["config"]) == ["Point-10-c1", "with_condition-10-c1"]
    assert list(rows["type"]) == ["Point", "Scan-Cond"] and list(rows["range_size"]) == [10, 10]
    assert list(rows["experiment"]) == ["point-scan"] * 2 and (rows["tput_tx_per_s"] > 0).all()
    # what a rehearsal judges holds; the stand-in server keeps no count; the paper's comparisons need its scale
    assert rehearsal_verdicts(verdict) == ["holds", "holds", "inconclusive"], verdict
    assert [v for w, v in verdict if not w.startswith(REHEARSAL_CHECKS)] == ["inconclusive"] * 4, verdict
