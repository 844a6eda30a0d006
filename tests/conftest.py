"""Shared fixtures: the project root, the artifact mirror, and an isolated environment per test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("REPROBOOK_ARTIFACT_MIRROR") or ROOT.parent / "shared" / "artifacts")


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


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """Each test gets its own run store and cache; the mirror stays pointed at the shared one."""
    monkeypatch.setenv("REPROBOOK_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("REPROBOOK_ARTIFACT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("REPROBOOK_ROOT", str(ROOT))
    if MIRROR.is_dir():
        monkeypatch.setenv("REPROBOOK_ARTIFACT_MIRROR", str(MIRROR))
    yield
