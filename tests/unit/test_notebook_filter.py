"""Notebooks leave git clean after a Lab session: the clean filter of `make setup` (reprobook.book.clean), for real in git."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprobook.book.clean import clean, clean_text

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(ROOT.glob("notebooks/*/*.ipynb"))


def _as_lab_leaves_it(nb: dict) -> dict:
    """What a JupyterLab session's autosave writes: outputs, counts, timings, view state, widget state."""
    nb = json.loads(json.dumps(nb))
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {"x": {"model_name": "M"}}}}
    nb["metadata"]["toc-autonumbering"] = True
    # what a running ipykernel reports of itself, written back by Lab (seen in a real Lab: tests/integration/test_lab.py)
    nb["metadata"]["kernelspec"]["display_name"] = "Python 3 (ipykernel)"
    nb["metadata"]["language_info"] = {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                                       "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                                       "pygments_lexer": "ipython3", "version": "3.11.7"}
    for i, cell in enumerate(nb["cells"]):
        cell["metadata"].update({"scrolled": True, "jupyter": {"source_hidden": True},
                                 "execution": {"iopub.status.busy": "2026-11-25T19:00:00Z"}})
        if cell["cell_type"] == "code":
            cell["execution_count"] = i + 1
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["hello\n"]},
                               {"output_type": "display_data", "metadata": {},
                                "data": {"image/png": "iVBORw0KGgo=", "text/plain": ["<Figure>"]}}]
    return nb


def test_the_stored_notebooks_are_already_in_the_filters_form():
    # otherwise installing the filter would show every notebook as changed
    changed = [p.name for p in NOTEBOOKS if clean_text(p.read_text()) != p.read_text()]
    assert not changed, changed


def test_clean_keeps_sources_tags_and_kernel_and_drops_what_a_session_adds():
    stored = json.loads(NOTEBOOKS[0].read_text())
    assert clean(_as_lab_leaves_it(stored)) == stored
    assert clean_text("not a notebook {") == "not a notebook {"  # a broken file passes through untouched


def _git_repo(tmp_path: Path) -> tuple[Path, Path, callable]:
    repo = tmp_path / "repo"
    (repo / "notebooks").mkdir(parents=True)
    nb_path = repo / "notebooks" / NOTEBOOKS[0].name
    shutil.copy(NOTEBOOKS[0], nb_path)
    shutil.copy(ROOT / ".gitattributes", repo / ".gitattributes")
    shutil.copy(ROOT / ".gitignore", repo / ".gitignore")  # Lab's checkpoints among what it ignores

    def git(*args):
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    git("config", "user.email", "t@example.invalid")
    git("config", "user.name", "t")
    # what `make notebook-filter` sets, with this interpreter
    git("config", "filter.reprobook-notebook.clean", f"{sys.executable} -m reprobook.book.clean")
    git("config", "filter.reprobook-notebook.smudge", "cat")
    git("add", ".")
    git("commit", "-q", "-m", "start")
    return repo, nb_path, git


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_outputs_written_by_another_editor_never_reach_git(tmp_path):
    repo, nb_path, git = _git_repo(tmp_path)
    nb_path.write_text(json.dumps(_as_lab_leaves_it(json.loads(nb_path.read_text())), indent=1) + "\n")
    assert git("diff") == ""  # the filter: what git would store is the clean notebook
    git("add", ".")
    assert git("status", "--porcelain") == ""  # nothing to commit
    nb = json.loads(nb_path.read_text())
    nb["cells"][0]["source"] = ["# changed\n"]
    nb_path.write_text(json.dumps(nb, indent=1) + "\n")
    assert git("status", "--porcelain").strip() == f"M notebooks/{nb_path.name}"  # a real edit still shows


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_lab_save_leaves_git_status_clean(tmp_path):
    """Jupyter server's own contents manager, with the hook `make lab` sets, saves what Lab sends after "run all"."""
    import nbformat
    from jupyter_server.services.contents.filemanager import FileContentsManager
    repo, nb_path, git = _git_repo(tmp_path)
    manager = FileContentsManager(root_dir=str(repo), pre_save_hook="reprobook.book.clean.pre_save")
    model = manager.get(f"notebooks/{nb_path.name}")
    sent = nbformat.from_dict(_as_lab_leaves_it(model["content"]))
    sent.nbformat_minor = 5  # Lab keeps a cell's id, and gives one to a cell without (a 4.4 notebook's)
    for i, cell in enumerate(sent.cells):
        cell.setdefault("id", f"cell-{i}")
    manager.save({"type": "notebook", "format": "json", "content": sent}, f"notebooks/{nb_path.name}")
    assert git("status", "--porcelain") == "", nb_path.read_text()[:2000]
    # an edit made in Lab is saved (and shows)
    sent.cells[0]["source"] = "# changed"
    manager.save({"type": "notebook", "format": "json", "content": sent}, f"notebooks/{nb_path.name}")
    assert git("status", "--porcelain").strip() == f"M notebooks/{nb_path.name}"
    assert '"outputs": []' in nb_path.read_text() and "hello" not in nb_path.read_text()


def test_make_setup_installs_the_filter():
    makefile = (ROOT / "Makefile").read_text()
    assert "setup: $(VENV)/.installed notebook-filter" in makefile
    assert "filter.reprobook-notebook.clean '$(BIN)/python -m reprobook.book.clean'" in makefile
    assert "*.ipynb filter=reprobook-notebook" in (ROOT / ".gitattributes").read_text()
    assert "--ContentsManager.pre_save_hook=reprobook.book.clean.pre_save" in makefile


@pytest.mark.parametrize("path", [*NOTEBOOKS, *sorted(ROOT.glob("book/**/*.ipynb"))], ids=lambda p: p.stem)
def test_notebooks_are_stored_in_nbformat_4_5_with_cell_ids(path):
    # Lab gives a 4.4 notebook cell ids as it opens it, so closing it asked to save changes nobody made
    import nbformat
    nb = json.loads(path.read_text())
    assert (nb["nbformat"], nb["nbformat_minor"]) == (4, 5), path
    ids = [cell.get("id") for cell in nb["cells"]]
    assert all(ids) and len(set(ids)) == len(ids), path
    nbformat.validate(nbformat.from_dict(nb))


def test_a_notebook_stored_without_cell_ids_is_saved_without_them(tmp_path):
    import nbformat
    from jupyter_server.services.contents.filemanager import FileContentsManager
    nb = json.loads(NOTEBOOKS[0].read_text())
    nb["nbformat_minor"] = 4
    for cell in nb["cells"]:
        cell.pop("id")
    stored = clean_text(json.dumps(nb))
    (tmp_path / "old.ipynb").write_text(stored)
    manager = FileContentsManager(root_dir=str(tmp_path), pre_save_hook="reprobook.book.clean.pre_save")
    sent = nbformat.from_dict(_as_lab_leaves_it(nb))
    sent.nbformat_minor = 5
    for i, cell in enumerate(sent.cells):
        cell["id"] = f"new-{i}"
    manager.save({"type": "notebook", "format": "json", "content": sent}, "old.ipynb")
    assert (tmp_path / "old.ipynb").read_text() == stored
