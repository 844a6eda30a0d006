"""A copy of this project's own files (configs, book, notebooks, library, the book's settings), for tests that
change a project: `reprobook new` writing a paper into it, for one."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def copy_project(dest: Path) -> Path:
    """``dest`` made a copy of the project (its library too, so a new paper's package is imported from the copy).
    The library's compiled bytecode comes along, its files' times kept, so a command run in the copy starts from it
    rather than compiling every module again."""
    for name in ("configs", "book", "notebooks", "lib"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("*.egg-info"))
    for name in ("_config.yml", "_toc.yml", "pyproject.toml"):
        shutil.copy(ROOT / name, dest / name)
    return dest
