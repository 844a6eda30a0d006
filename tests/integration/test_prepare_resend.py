"""A comparison system's preparation run again with changed files puts the new files in place, over real sshd.

The preparation (`reprobook.papers.pesto.systems.prepare_script`) unpacks its files from a tarball whose entries
all carry one time, and sends them to the hosts with rsync. A file that changed but kept its size (HotStuff's
``replica = <host>:30000;40000`` becoming ``...:30001;40001``) looked unchanged to rsync's size-and-time check, and
the replicas kept the old configuration (seen in ``make live-pesto``: "unable to listen: Address already in use").
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reprobook.papers.pesto.systems import HOTSTUFF_DIR, SYSTEMS, hotstuff_files, prepare_script
from tests.integration.conftest import unavailable
from tests.support.pequin_standin import PEQUIN_COMMIT, PEQUIN_GIT

pytestmark = pytest.mark.ssh
SERVERS = {"control": "127.0.0.155", "us-east-1-0": "127.0.0.156", "us-east-1-1": "127.0.0.157",
           "us-east-1-2": "127.0.0.158", "eu-west-1-0": "127.0.0.159"}


def _authors() -> dict[str, str]:
    prefix = "src/scripts/config_pghs"
    names = subprocess.run(["git", "-C", str(PEQUIN_GIT), "ls-tree", "-r", "--name-only", PEQUIN_COMMIT, prefix],
                           check=True, capture_output=True, text=True).stdout.split()
    return {n[len(prefix) + 1:]: subprocess.run(["git", "-C", str(PEQUIN_GIT), "show", f"{PEQUIN_COMMIT}:{n}"],
                                                check=True, capture_output=True, text=True).stdout for n in names}


def test_a_changed_file_of_the_same_size_reaches_the_hosts(bed, tmp_path):
    if not PEQUIN_GIT.is_dir():
        unavailable(f"the Pequin git mirror {PEQUIN_GIT} is absent")
    for name, addr in SERVERS.items():
        bed.add_host(name, addr)
    servers = [h for h in SERVERS if h != "control"]
    root, src = tmp_path / "root", tmp_path / "src"
    header = src / "store/hotstuffstore/libhotstuff/examples/remote_config_dir.h"
    header.parent.mkdir(parents=True)
    header.write_text(f'#define REMOTE_CONFIG_DIR "{root}/{HOTSTUFF_DIR}/"\n')
    run_dir = tmp_path / "run"
    conf = root / HOTSTUFF_DIR / "shard0" / "hotstuff.gen.conf"

    def prepare(own_ports: bool) -> list[str]:
        files = hotstuff_files(_authors(), servers, remote_dir=f"{root}/{HOTSTUFF_DIR}",
                               own_ports=own_ports)
        script = prepare_script(SYSTEMS["Peloton-HS"], servers=servers, clients=[], root=str(root), src_dir=str(src),
                                files=files)
        env = f"export RB_SSH_CONFIG={bed.ssh_config_path} RB_RUN_DIR={run_dir}\n"
        r = subprocess.run(bed.ssh_argv("control") + ["bash", "-s"], input=env + script, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "Peloton-HS: prepared for this placement" in r.stdout
        return [line.split(",")[0].rsplit(":", 1)[1] for line in conf.read_text().splitlines()
                if line.startswith("replica")]

    assert prepare(False) == ["30000;40000"] * 4
    assert prepare(True) == ["30000;40000", "30001;40001", "30002;40002", "30003;40003"]
