"""A notebook as git stores it: no outputs, no execution counts, no per-session metadata.

JupyterLab's autosave writes a notebook's outputs, its counts and its view state (folded cells,
scrolled outputs, timings) into the file. ``make setup`` installs `main` as a git *clean* filter for
``*.ipynb`` (``.gitattributes``): git stores each notebook as `clean` returns it, so the working copy
keeps its outputs (a reopened notebook shows them) and ``git diff`` shows only real edits.

What stays: the cells' sources, their ids and their ``tags`` (the website's layout) and MyST-NB
options (``mystnb``), and the notebook's ``kernelspec`` and ``language_info`` as JupyterLab writes
them when the project's kernel connects (`kernel_metadata`). The committed notebooks carry exactly
that, so opening one changes nothing and closing it asks nothing (a filter that stored a shorter form
had Lab write the long one back on every open). The JSON is written as Jupyter writes it (one-space
indent, keys sorted, a final newline). Input that is not a notebook passes through unchanged, so a
broken file is never made worse by the filter.

A filter alone leaves ``git status`` saying "modified" once a save changes a notebook's size (git
trusts a size change without running the filter), and such a file blocks ``git checkout``. So the
project's Jupyter server configuration (``jupyter_server_config.json`` beside this module, which
``make setup`` puts where the venv's ``jupyter lab`` reads it) runs `post_save` after each save:
when the saved notebook's stored form is the one git already has, git's index learns the file's new
size and time (``git update-index``), and ``git status`` is clean again. A real edit is left alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

KEPT_NOTEBOOK_METADATA = ("kernelspec", "language_info")
KEPT_CELL_METADATA = ("tags", "mystnb")


def kernel_metadata() -> dict:
    """The notebook metadata JupyterLab writes once the project's kernel (ipykernel's ``python3``) connects."""
    from ipykernel.ipkernel import IPythonKernel
    from ipykernel.kernelspec import KERNEL_NAME, get_kernel_dict
    spec = get_kernel_dict()
    return {"kernelspec": {"display_name": spec["display_name"], "language": spec["language"], "name": KERNEL_NAME},
            "language_info": json.loads(json.dumps(IPythonKernel.language_info))}


def clean(nb: dict) -> dict:
    """``nb`` (a notebook as parsed JSON) without outputs, counts or session metadata; a new dict."""
    out = dict(nb)
    out["metadata"] = {k: v for k, v in (nb.get("metadata") or {}).items() if k in KEPT_NOTEBOOK_METADATA}
    cells = []
    for cell in nb.get("cells") or []:
        cell = dict(cell)
        cell["metadata"] = {k: v for k, v in (cell.get("metadata") or {}).items() if k in KEPT_CELL_METADATA}
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
        if "attachments" in cell and not cell["attachments"]:
            cell.pop("attachments")
        cells.append(cell)
    out["cells"] = cells
    return out


def clean_text(text: str) -> str:
    """The stored form of a notebook's text; ``text`` itself when it is not a notebook."""
    try:
        nb = json.loads(text)
    except ValueError:
        return text
    if not isinstance(nb, dict) or "cells" not in nb or "nbformat" not in nb:
        return text
    return json.dumps(clean(nb), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _git(cwd: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def refresh_index(path: str | Path) -> bool:
    """Tell git's index that ``path`` changed only in what the filter drops; True if it did.

    Nothing happens (False) when ``path`` is not tracked by git, or its stored form differs from
    the index's (a real edit: ``git status`` must show it).
    """
    path = Path(path).resolve()
    top = _git(path.parent, "rev-parse", "--show-toplevel")
    if not top:
        return False
    rel = path.relative_to(Path(top).resolve()).as_posix()
    staged = _git(Path(top), "rev-parse", "--verify", "-q", f":{rel}")
    if not staged or _git(Path(top), "hash-object", "--", rel) != staged:
        return False
    return _git(Path(top), "update-index", "-q", "--", rel) is not None


def post_save(model: dict, os_path: str, contents_manager=None, **kwargs) -> None:
    """Jupyter server's ``ContentsManager.post_save_hook``: after a notebook is saved, `refresh_index`."""
    if model.get("type") == "notebook":
        refresh_index(os_path)


def main() -> int:
    """``python -m reprobook.book.clean``: a notebook on stdin, its stored form on stdout (git's filter protocol)."""
    data = sys.stdin.buffer.read().decode("utf-8", errors="surrogateescape")
    sys.stdout.buffer.write(clean_text(data).encode("utf-8", errors="surrogateescape"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
