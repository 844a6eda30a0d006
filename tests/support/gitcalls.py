"""A git that writes down each of its calls: tests that a job script runs (or does not run) a git subcommand."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def counting_git(tmp_path: Path) -> tuple[dict, Path]:
    """An environment whose git appends each call's arguments, one line a call, to the file returned (emptied)."""
    shims, calls = tmp_path / "git-shims", tmp_path / "git-calls"
    shims.mkdir(exist_ok=True)
    (shims / "git").write_text(f'#!/bin/bash\necho "$*" >> {calls}\nexec {shutil.which("git")} "$@"\n')
    (shims / "git").chmod(0o755)
    calls.write_text("")
    return {**os.environ, "PATH": f"{shims}:{os.environ['PATH']}"}, calls
