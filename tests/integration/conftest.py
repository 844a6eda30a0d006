"""Fixtures shared by the integration tests: a real-sshd testbed and a FIXTURE project on it."""

from __future__ import annotations

import time

import pytest

from tests.support.fixture_project import make_project
from tests.support.sshd import SshTestbed


@pytest.fixture
def bed(tmp_path):
    with SshTestbed(tmp_path / "ssh") as tb:
        yield tb


@pytest.fixture
def fixture(tmp_path, bed, monkeypatch):
    bed.add_host("node1", "127.0.0.2")
    bed.add_host("node2", "127.0.0.3")
    fx = make_project(tmp_path / "fx", {"node1": "node1", "node2": "node2"})
    monkeypatch.setenv("REPROBOOK_ROOT", str(fx.root))
    monkeypatch.setenv("REPROBOOK_SSH_CONFIG", str(bed.ssh_config_path))
    monkeypatch.delenv("REPROBOOK_HOSTS", raising=False)
    return fx


def _wait_for(pred, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")
