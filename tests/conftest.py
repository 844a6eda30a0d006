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


@pytest.fixture(scope="session")
def mirror() -> Path:
    if not MIRROR.is_dir():
        pytest.skip(f"no artifact mirror at {MIRROR} (set REPROBOOK_ARTIFACT_MIRROR)")
    return MIRROR


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """Each test gets its own run store and cache; the mirror stays pointed at the shared one."""
    monkeypatch.setenv("REPROBOOK_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("REPROBOOK_ARTIFACT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("REPROBOOK_ROOT", str(ROOT))
    if MIRROR.is_dir():
        monkeypatch.setenv("REPROBOOK_ARTIFACT_MIRROR", str(MIRROR))
    yield
