"""Artifact sources: turn ``repo@commit:path`` into a local file.

Two places are tried, in order:

1. a mirror directory laid out as ``github.com/<owner>/<repo>/<commit>/<path>``
   (``REPROBOOK_ARTIFACT_MIRROR`` or ``artifact_mirror`` in configs/reprobook.yaml);
2. the cache (same layout), filled by fetching just that commit with git from
   ``git_base_url + owner/repo`` (GitHub by default; a ``file://`` URL of a
   local mirror of git repositories works too).

If neither has it, `ArtifactError` says what was tried.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from reprobook.errors import ArtifactError, ConfigError

if TYPE_CHECKING:
    from reprobook.core.config import Paper, Settings

_REF = re.compile(r"(?P<repo>[^@\s]+)@(?P<commit>[0-9a-f]{40}):(?P<path>.+)")   # matched in full


@dataclass(frozen=True)
class ArtifactRef:
    """One file of one commit of one repository."""

    owner_repo: str
    commit: str
    path: str

    def __post_init__(self) -> None:
        # the path is joined under the mirror and the cache, and handed to git: whoever built the
        # reference (a paper file, a parameter such as ``configs``), it stays inside the repository
        path = Path(self.path)
        if not self.path or path.is_absolute() or ".." in path.parts or self.path.startswith("-"):
            raise ConfigError(f"artifact path may not leave the repository: {self.path!r} (of {self.owner_repo}; "
                              f"a path relative to the repository's root, without '..')")
        if not re.fullmatch(r"[0-9a-f]{7,40}", self.commit):
            raise ConfigError(f"not a commit (hex digits) in the artifact reference to {self.owner_repo}: {self.commit!r}")
        if not re.fullmatch(r"[A-Za-z0-9_.][A-Za-z0-9_.-]*/[A-Za-z0-9_.][A-Za-z0-9_.-]*", self.owner_repo) \
                or ".." in self.owner_repo:
            raise ConfigError(f"not a repository owner/name: {self.owner_repo!r}")

    def __str__(self) -> str:
        return f"{self.owner_repo}@{self.commit[:12]}:{self.path}"

    @property
    def relpath(self) -> Path:
        return Path("github.com", *self.owner_repo.split("/"), self.commit, self.path)


_SHOWN_REF = re.compile(r"\b(?P<repo>[\w.-]+/[\w.-]+)@(?P<commit>[0-9a-f]{7,40}):(?P<path>[^\s;,()]+)")


def link_refs(text: str) -> str:
    """``text`` as HTML, each ``owner/repo@commit:path`` in it a link to that file at that commit on GitHub.

    >>> link_refs("from derbear/edrax-vcs@1f1a3748d153:results")
    'from <a href="https://github.com/derbear/edrax-vcs/tree/1f1a3748d153/results">derbear/edrax-vcs@1f1a3748d153:results</a>'
    """
    from html import escape
    out, last = [], 0
    for m in _SHOWN_REF.finditer(text):
        url = f"https://github.com/{m['repo']}/tree/{m['commit']}/{m['path']}"
        out += [escape(text[last:m.start()]), f'<a href="{escape(url)}">{escape(m.group(0))}</a>']
        last = m.end()
    return "".join(out) + escape(text[last:])


def parse_ref(ref: str, paper: Paper | None = None) -> ArtifactRef:
    """Read ``repo@commit:path``; ``repo`` is a repository name of ``paper`` or ``owner/name``."""
    m = _REF.fullmatch(ref)
    if not m:
        raise ConfigError(f"not an artifact reference (repo@<40-hex commit>:path): {ref!r}")
    repo = m["repo"]
    if "/" not in repo:
        if paper is None or repo not in paper.repositories:
            raise ConfigError(f"unknown repository {repo!r} in {ref!r}", file=paper.path if paper else None)
        repo = paper.repositories[repo].slug
    path = m["path"].lstrip("/")
    if ".." in Path(path).parts:
        raise ConfigError(f"artifact path may not leave the repository: {ref!r}")
    return ArtifactRef(repo, m["commit"], path)  # which checks the path once more, as for any reference


_IN_MIRROR = re.compile(r"(?:^|/)github\.com/([^/]+/[^/]+)/([0-9a-f]{7,40})(?:/(.*))?$")


def named(path: str | Path) -> str:
    """A file of the artifact mirror or cache as a reader knows it, ``owner/repo@commit:path`` (any other path as
    it is): pages and messages never show where the artifacts lie on the machine that read them."""
    m = _IN_MIRROR.search(str(path))
    return f"{m[1]}@{m[2]}:{m[3] or ''}".rstrip(":") if m else str(path)


def resolve(ref: ArtifactRef, settings: Settings) -> Path:
    """The local path of ``ref``, from the mirror or the git-filled cache.

    Raises
    ------
    ArtifactError
        Naming every place tried and why each failed.
    """
    tried = []
    if settings.artifact_mirror:
        p = Path(settings.artifact_mirror) / ref.relpath
        if p.exists():
            return p
        tried.append(f"mirror {settings.artifact_mirror}: no {ref.relpath}")
    else:
        tried.append("mirror: none set (REPROBOOK_ARTIFACT_MIRROR)")
    cached = Path(settings.artifact_cache) / ref.relpath
    if cached.exists():
        return cached
    url = settings.git_base_url.rstrip("/") + "/" + ref.owner_repo
    try:
        _fetch_with_git(url, ref, cached)
        return cached
    except ArtifactError as exc:
        tried.append(f"git {url} at {ref.commit[:12]}: {exc.message}")
    raise ArtifactError(f"cannot obtain {ref}; tried:\n  - " + "\n  - ".join(tried) +
                        "\nPoint REPROBOOK_ARTIFACT_MIRROR at a mirror directory, or allow access to the repository.")


def _git(args, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ArtifactError(f"git {' '.join(args[:2])} failed: {exc}") from None


def _fetch_with_git(url: str, ref: ArtifactRef, dest: Path) -> None:
    """Fetch only ``ref.commit`` (shallow, blobs on demand) and copy ``ref.path`` into ``dest``."""
    with tempfile.TemporaryDirectory(prefix="reprobook-git-") as tmp:
        work = Path(tmp)
        # every value after "--": a URL or path starting with "-" is never read as an option
        for args in (["init", "-q"], ["remote", "add", "--", "origin", url]):
            _git(args, work)
        r = _git(["fetch", "-q", "--depth", "1", "--filter=blob:none", "--", "origin", ref.commit], work)
        if r.returncode != 0:
            r = _git(["fetch", "-q", "--depth", "1", "--", "origin", ref.commit], work)
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or ["no output"])[-1]
            raise ArtifactError(f"fetch failed ({last})")
        r = _git(["checkout", "-q", ref.commit, "--", ref.path], work)
        if r.returncode != 0:
            raise ArtifactError(f"commit has no {ref.path}")
        src = work / ref.path
        dest.parent.mkdir(parents=True, exist_ok=True)
        part = dest.with_name(dest.name + ".part")
        if src.is_dir():
            shutil.copytree(src, part, dirs_exist_ok=True)
        else:
            shutil.copyfile(src, part)
        os.replace(part, dest)
