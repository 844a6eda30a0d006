"""The git mirror ``../shared/git`` as the tests use it, with a work-around for its one broken repository."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

# REPROBOOK_GIT_MIRROR names the mirror (the directory holding github.com/) where ../shared/git is not beside the
# project, as for a git worktree elsewhere
_BESIDE = Path(__file__).resolve().parents[2].parent / "shared" / "git"
GIT_MIRROR = Path(os.environ.get("REPROBOOK_GIT_MIRROR") or _BESIDE) / "github.com"


def repaired_copy(repo: str, dest: Path, mirror: Path = GIT_MIRROR) -> Path:
    """A writable copy of the mirror's bare repository ``repo`` (``owner/name.git``) at ``dest``, with the
    ``refs/heads`` and ``refs/tags`` directories git needs to take it for a repository.

    The mirror's ``microsoft/verified-storage.git`` lacks ``refs/`` (its refs are all in ``packed-refs``), so
    ``git clone`` of it says it does not exist; the shared tree is read-only. A copy made before is kept.
    """
    if not (dest / "refs").is_dir():
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(mirror / repo, dest)
        for p in (dest, *dest.rglob("*")):
            p.chmod(p.stat().st_mode | 0o200)
        (dest / "refs" / "heads").mkdir(parents=True, exist_ok=True)
        (dest / "refs" / "tags").mkdir(exist_ok=True)
    return dest
