"""Shared fixtures: the project root, the artifact mirror, and an isolated environment per test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI replays the same examples every run (a found case is pinned with @example); locally each run explores anew.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

ROOT = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("REPROBOOK_ARTIFACT_MIRROR") or ROOT.parent / "shared" / "artifacts")


# ------------------------------------------------------------------ two at a time (make test: pytest -n 2)
# `make test` runs on two xdist workers with --dist loadgroup, scheduled by `_Grouped` below. Three kinds of test
# must not be spread out: the real builds (one worker runs them one after another, so two cold builds never share
# the two cores and their timeouts hold), the tests that build or read the repository's own site (ROOT/_build,
# one at a time), and each integration module (its sshd testbed fixtures are set up once, on one worker). The
# longest groups are handed out first, so the run does not end with one worker on a long build while the other
# is idle. (xdist's own xdist_group marks do not take with pytest 9, whose node ids are no longer strings: the
# groups are made here from the node ids instead.)
BUILDS = ("test_aardvark_rehearsal.py", "test_lmbench_live.py", "test_verus_live.py", "test_pequin_harness.py",
          "test_kill_anywhere.py")
SITE = ("tests/integration/test_faults.py::test_no_secret_reaches_the_run_store_or_the_site",)


def group_of(nodeid: str) -> tuple[int, str]:
    """(rank, group) of a test by its node id: groups run whole on one worker, rank 0 goes out first."""
    path = nodeid.split("::", 1)[0]
    if path.rsplit("/", 1)[-1] in BUILDS:
        return 0, "builds"
    if path.startswith("tests/book/") or nodeid.startswith(SITE):
        return 1, "site"
    if path.startswith("tests/integration/"):
        return 2, path
    if path.endswith(".ipynb"):   # nbval: a notebook's cells run in order in one kernel, so on one worker
        return 3, path
    return 4, nodeid


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    items[:] = [item for _, _, item in sorted(((group_of(item.nodeid)[0], i, item) for i, item in enumerate(items)),
                                              key=lambda t: t[:2])]


def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class _Grouped(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)[1]

    return _Grouped(config, log)


def pytest_sessionstart(session):
    """Stop at once, saying why, if a shell that sshd starts is slow: every SSH test would time out.

    bash started by sshd reads ``~/.bashrc`` even for a single command. Seen on this project's machine: a stale
    pyenv lock (``~/.pyenv/shims/.pyenv-shim``) left by a killed process made ``eval "$(pyenv init -)"`` in it
    wait 60 s, and a whole run then failed test after test, far from the cause.
    """
    if getattr(session.config, "workerinput", None) is not None or not Path("/bin/bash").exists():
        return   # the controller checks, once
    import subprocess
    import time
    start = time.monotonic()
    try:
        subprocess.run(["/bin/bash", "-c", "true"], env={**os.environ, "SSH_CLIENT": "127.0.0.1 40000 22", "SHLVL": "0"},
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=20)
    except subprocess.TimeoutExpired:
        pass
    took = time.monotonic() - start
    if took > 10:
        raise pytest.UsageError(
            f"a shell as sshd starts it (bash reading {Path.home() / '.bashrc'}) took {took:.0f} s to run `true`; "
            f"every test that runs commands over SSH would time out. Find what the start-up files wait for (a "
            f"stale lock such as ~/.pyenv/shims/.pyenv-shim, a network mount) and run the tests again.")


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


def require_mirror() -> Path:
    """The artifact mirror; in CI its absence is a failure, elsewhere a skip with the reason."""
    if not MIRROR.is_dir():
        why = f"no artifact mirror at {MIRROR} (set REPROBOOK_ARTIFACT_MIRROR)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return MIRROR


@pytest.fixture(scope="session")
def mirror() -> Path:
    return require_mirror()


def _user_ssh_state() -> tuple:
    """What the tests must never change: the user's own SSH client files (a CloudLab import writes an SSH config
    and an Include line; a test that forgets REPROBOOK_SSH_CONFIG would write them into the real ~/.ssh)."""
    ssh = Path.home() / ".ssh"
    return tuple((f.name, f.stat().st_mtime_ns) for f in (ssh / "config", ssh / "reprobook") if f.exists())


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """Each test gets its own run store and cache; the mirror stays pointed at the shared one."""
    monkeypatch.setenv("REPROBOOK_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("REPROBOOK_ARTIFACT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("REPROBOOK_ROOT", str(ROOT))
    if MIRROR.is_dir():
        monkeypatch.setenv("REPROBOOK_ARTIFACT_MIRROR", str(MIRROR))
    ssh_before = _user_ssh_state()
    yield
    assert _user_ssh_state() == ssh_before, (
        f"a test wrote the user's own SSH config ({Path.home() / '.ssh'}): give it REPROBOOK_SSH_CONFIG in its "
        f"temporary directory")
