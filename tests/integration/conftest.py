"""Fixtures shared by the integration tests: a real-sshd testbed, a FIXTURE project on it, and a host for the
project's own configuration (the real claims, cloned from the local git mirror)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import yaml

from tests.support.fixture_project import make_project
from tests.support.sshd import SshTestbed

ROOT = Path(__file__).resolve().parents[2]
GIT_MIRROR = Path(os.environ.get("REPROBOOK_GIT_MIRROR") or ROOT.parent / "shared" / "git") / "github.com"
"""The local git mirror the real-project hosts clone from (their ``git_url_rewrites`` point at it)."""


def unavailable(reason: str) -> None:
    """Skip for want of ``reason``; under CI, where everything must be there, fail instead."""
    if os.environ.get("CI"):
        pytest.fail(f"CI is set, so this test must run, but {reason}")
    pytest.skip(reason)


def real_project_host(tmp_path: Path, bed, monkeypatch, name: str, addr: str, *, env: dict | None = None) -> Path:
    """This machine as host ``name`` on ``addr``, for the project's real configuration; returns its workdir.

    GitHub URLs are rewritten to `GIT_MIRROR`; the hosts file, run store and workdir are in
    ``tmp_path``; ``env`` is the host's environment for the jobs (caches kept out of the user's home).
    """
    bed.add_host(name, addr)
    workdir = tmp_path / "work"
    host = {"ssh": name, "workdir": str(workdir), "git_url_rewrites": {"https://github.com/": f"{GIT_MIRROR}/"}}
    if env:
        host["env"] = {k: str(v) for k, v in env.items()}
    (tmp_path / "hosts.yaml").write_text(yaml.safe_dump({"hosts": {name: host}}))
    monkeypatch.setenv("REPROBOOK_ROOT", str(ROOT))
    monkeypatch.setenv("REPROBOOK_HOSTS", str(tmp_path / "hosts.yaml"))
    monkeypatch.setenv("REPROBOOK_SSH_CONFIG", str(bed.ssh_config_path))
    monkeypatch.setenv("REPROBOOK_RUNS", str(tmp_path / "runs"))
    monkeypatch.delenv("REPROBOOK_VERDICT_FILE", raising=False)
    return workdir


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
    """``pred()`` once it is true; give up after ``timeout`` seconds, naming ``what`` was waited for and how long."""
    start = time.monotonic()
    deadline = start + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"gave up waiting for {what} after {time.monotonic() - start:.0f} s (limit {timeout:.0f} s)")
