"""~/.ssh/config is honoured, jump hosts included: commands, live runs and rsync fetches go through ProxyJump."""

from __future__ import annotations

import pytest

from reprobook.core.config import load_project
from reprobook.errors import HostKeyError
from reprobook.remote.hosts import open_host
from reprobook.remote.live import perform
from tests.support.fixture_project import make_project

pytestmark = pytest.mark.ssh


def _add_jumped(bed, alias: str, target, via: str) -> None:
    """An ssh_config entry reaching ``target`` only through ``via`` (ProxyJump)."""
    with open(bed.ssh_config_path, "a") as f:
        f.write(f"\nHost {alias}\n  HostName {target.addr}\n  Port {target.port}\n  User {bed.user}\n"
                f"  IdentityFile {bed.client_key_path}\n  IdentitiesOnly yes\n"
                f"  UserKnownHostsFile {bed.known_hosts_path}\n  StrictHostKeyChecking yes\n"
                f"  ProxyJump {via}\n")


def test_live_run_through_a_jump_host(tmp_path, bed, monkeypatch):
    bed.add_host("bastion", "127.0.0.6")
    inner = bed.add_host("inner", "127.0.0.7")
    _add_jumped(bed, "inner-via-bastion", inner, "bastion")
    fx = make_project(tmp_path / "fx", {"behind": "inner-via-bastion"})
    monkeypatch.setenv("REPROBOOK_ROOT", str(fx.root))
    monkeypatch.setenv("REPROBOOK_SSH_CONFIG", str(bed.ssh_config_path))
    project = load_project(fx.root)
    before = inner.log_text().count("Accepted publickey")
    bastion_before = bed.servers["bastion"].log_text().count("Accepted publickey")
    run = perform(project, project.claim("fixture/validator-throughput"), "behind", {"duration": 0.2},
                  progress=False, poll_s=0.2)
    assert run.status == "succeeded" and len(run.files("logs")) == 2
    run.verify()
    # both hops really carried sessions: the bastion authenticated us, and so did the inner host
    assert bed.servers["bastion"].log_text().count("Accepted publickey") > bastion_before
    assert inner.log_text().count("Accepted publickey") > before


def test_jump_host_key_is_checked_too(tmp_path, bed, monkeypatch):
    bed.add_host("bastion", "127.0.0.6", trust=False)  # the jump host's key is unknown
    inner = bed.add_host("inner", "127.0.0.7")
    _add_jumped(bed, "inner-via-bastion", inner, "bastion")
    fx = make_project(tmp_path / "fx", {"behind": "inner-via-bastion"})
    monkeypatch.setenv("REPROBOOK_SSH_CONFIG", str(bed.ssh_config_path))
    project = load_project(fx.root)
    with open_host(project.hosts.host("behind"), project.settings) as host:
        with pytest.raises(HostKeyError, match="not in known_hosts"):
            host.run("true")
