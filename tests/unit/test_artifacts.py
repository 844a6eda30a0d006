"""Artifact sources: the mirror, a git fetch of just one commit, and a clear error when both fail."""

from __future__ import annotations

import os
import subprocess

import pytest

from reprobook.core.artifacts import parse_ref, resolve
from reprobook.core.config import load_project
from reprobook.errors import ArtifactError, ConfigError


def _settings(root, **over):
    s = load_project(root).settings
    return s.__class__(**{**s.__dict__, **over})


def test_mirror_hit(root, mirror):
    paper = load_project(root).paper("aardvark")
    ref = parse_ref("aardvark-prototype@dd8f6aaf5f76173118f3f3decbe099bda5972ce2:go-algorand/ledger/validators.csv", paper)
    assert ref.owner_repo == "derbear/aardvark-prototype"
    p = resolve(ref, _settings(root, artifact_mirror=mirror))
    assert p.read_text().startswith("m,32,36")


def test_git_fetch_of_one_commit_into_cache(root, tmp_path):
    """A FIXTURE repository served over file:// stands in for GitHub."""
    src = tmp_path / "git" / "fixture" / "data"
    src.mkdir(parents=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "f", "GIT_AUTHOR_EMAIL": "f@x", "GIT_COMMITTER_NAME": "f",
           "GIT_COMMITTER_EMAIL": "f@x"}
    run = lambda *a: subprocess.run(["git", *a], cwd=src, check=True, capture_output=True, text=True, env=env)  # noqa: E731
    run("init", "-q")
    (src / "results.csv").write_text("m,1,418\n")
    run("add", ".")
    run("commit", "-qm", "one")
    first = run("rev-parse", "HEAD").stdout.strip()
    (src / "results.csv").write_text("m,1,999\n")
    run("commit", "-qam", "two")
    run("config", "uploadpack.allowAnySHA1InWant", "true")
    settings = _settings(root, artifact_mirror=None, artifact_cache=tmp_path / "cache",
                         git_base_url=f"file://{tmp_path / 'git'}/")
    p = resolve(parse_ref(f"fixture/data@{first}:results.csv"), settings)
    assert p.read_text() == "m,1,418\n"  # the pinned commit, not the branch head
    assert p.is_relative_to(tmp_path / "cache")
    assert resolve(parse_ref(f"fixture/data@{first}:results.csv"), settings) == p  # served from the cache now


def test_nothing_works_says_what_was_tried(root, tmp_path):
    settings = _settings(root, artifact_mirror=tmp_path / "empty-mirror", artifact_cache=tmp_path / "cache",
                         git_base_url=f"file://{tmp_path}/nowhere/")
    with pytest.raises(ArtifactError) as err:
        resolve(parse_ref("derbear/pointproofs@" + "d" * 40 + ":bench-results"), settings)
    msg = str(err.value)
    assert "empty-mirror" in msg and "nowhere" in msg and "REPROBOOK_ARTIFACT_MIRROR" in msg


@pytest.mark.parametrize("bad", ["no-at-sign", "repo@abc:path", "x/y@" + "a" * 40 + ":../../etc/passwd"])
def test_bad_refs(bad):
    with pytest.raises(ConfigError):
        parse_ref(bad)
