"""A notebook as git stores it: no outputs, no execution counts, no per-session metadata.

JupyterLab's autosave writes a notebook's outputs, its counts and its view state (folded cells,
scrolled outputs, timings) into the file, so a Lab session left every evaluator's checkout dirty and
the next ``git pull`` in conflict. ``make setup`` installs this as a git *clean* filter for
``*.ipynb`` (``.gitattributes``): git sees each notebook as this function returns it, so after a
Lab session ``git diff`` shows nothing. ``make lab`` also saves notebooks in that form (`pre_save`), so the
files themselves stay as stored and ``git status`` is clean too (git reports a filtered file whose size
changed as modified even when its filtered content is not).

What stays: the cells' sources, their ids and their ``tags`` (the website's layout) and MyST-NB
options (``mystnb``), the notebook's kernel by name (``kernelspec``: name, language, and "Python 3" for
``python3``, which a kernel reports as "Python 3 (ipykernel)") and its language by name (``language_info``:
only ``name``; the version and lexers a running kernel adds are the session's, not the notebook's). The JSON is written
as nbformat writes it (one-space indent, keys sorted, a final newline). Input that is not a notebook
passes through unchanged, so a broken file is never made worse by the filter.
"""

from __future__ import annotations

import json
import sys

KEPT_NOTEBOOK_METADATA = ("kernelspec", "language_info")
KEPT_CELL_METADATA = ("tags", "mystnb")


def clean(nb: dict) -> dict:
    """``nb`` (a notebook as parsed JSON) without outputs, counts or session metadata; a new dict."""
    out = dict(nb)
    out["metadata"] = {k: v for k, v in (nb.get("metadata") or {}).items() if k in KEPT_NOTEBOOK_METADATA}
    spec = out["metadata"].get("kernelspec")
    if isinstance(spec, dict):
        spec = {k: v for k, v in spec.items() if k in ("display_name", "language", "name")}
        if spec.get("name") == "python3":
            spec["display_name"] = "Python 3"
        out["metadata"]["kernelspec"] = spec
    lang = out["metadata"].get("language_info")
    if isinstance(lang, dict):
        out["metadata"]["language_info"] = {k: v for k, v in lang.items() if k == "name"}
    cells = []
    for cell in nb.get("cells") or []:
        cell = dict(cell)
        cell["metadata"] = {k: v for k, v in (cell.get("metadata") or {}).items() if k in KEPT_CELL_METADATA}
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
        cell.pop("attachments", None) if not cell.get("attachments") else None
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


def pre_save(model: dict, path: str, contents_manager=None, **kwargs) -> None:
    """Jupyter server's ``ContentsManager.pre_save_hook`` (``make lab`` sets it): a notebook is saved as git stores it.

    Lab's autosave then writes no outputs into the checkout (the open notebook keeps them on screen), so
    ``git status`` stays clean after a session. Cell ids are kept as the file on disk has them: a notebook
    stored without ids (nbformat 4.4) is saved without the ids Lab gives it when it opens it.
    """
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    nb = model["content"]
    stored = clean(nb)
    nb["metadata"] = stored["metadata"]
    for cell, kept in zip(nb.get("cells") or [], stored["cells"]):
        cell.clear()
        cell.update(kept)
    on_disk = _on_disk(contents_manager, path)
    if on_disk is not None and on_disk.get("nbformat_minor", 5) < 5 and nb.get("nbformat") == 4:
        nb["nbformat_minor"] = on_disk["nbformat_minor"]
        for cell in nb.get("cells") or []:
            cell.pop("id", None)


def _on_disk(contents_manager, path: str) -> dict | None:
    """The notebook at ``path`` as stored now (None when it cannot be read: a new notebook)."""
    try:
        os_path = contents_manager._get_os_path(path)  # FileContentsManager's; others: no ids to mirror
        with open(os_path, encoding="utf-8") as f:
            return json.load(f)
    except (AttributeError, OSError, ValueError, TypeError):
        return None


def main() -> int:
    """``python -m reprobook.book.clean``: a notebook on stdin, its stored form on stdout (git's filter protocol)."""
    data = sys.stdin.buffer.read().decode("utf-8", errors="surrogateescape")
    sys.stdout.buffer.write(clean_text(data).encode("utf-8", errors="surrogateescape"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
