"""Notebooks leave git clean after a Lab session: the clean filter and the Jupyter server hook of `make setup`
(reprobook.book.clean), for real in git, with Jupyter server's own contents manager."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprobook.book.clean import clean, clean_text, kernel_metadata

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(ROOT.glob("notebooks/*/*.ipynb"))


def _as_lab_leaves_it(nb: dict) -> dict:
    """What a JupyterLab session's autosave writes: outputs, counts, timings, view state, widget state."""
    nb = json.loads(json.dumps(nb))
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {"x": {"model_name": "M"}}}}
    nb["metadata"]["toc-autonumbering"] = True
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


def _lab_saves(repo: Path, nb_path: Path, nb: dict) -> None:
    """Jupyter server's contents manager, configured as the venv's `jupyter lab` is by `make setup`, saves ``nb``."""
    import nbformat
    from jupyter_server.services.contents.filemanager import FileContentsManager
    config = json.loads((ROOT / "lib" / "reprobook" / "book" / "jupyter_server_config.json").read_text())
    manager = FileContentsManager(root_dir=str(repo), post_save_hook=config["ContentsManager"]["post_save_hook"])
    rel = nb_path.relative_to(repo).as_posix()
    manager.save({"type": "notebook", "format": "json", "content": nbformat.from_dict(nb)}, rel)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_lab_save_keeps_the_outputs_and_leaves_git_status_clean(tmp_path):
    """What Lab sends after "run all" is saved with its outputs, and git's status and checkout see no change."""
    repo, nb_path, git = _git_repo(tmp_path)
    git("commit", "-q", "--allow-empty", "-m", "second")
    before = nb_path.stat().st_size
    _lab_saves(repo, nb_path, _as_lab_leaves_it(json.loads(nb_path.read_text())))
    assert "hello" in nb_path.read_text() and nb_path.stat().st_size > before  # the working copy keeps its outputs
    assert git("status", "--porcelain") == "", nb_path.read_text()[:2000]
    git("checkout", "-q", "HEAD~1")  # git checkout of another commit is not blocked
    # an edit made in Lab is saved, and shows
    nb = _as_lab_leaves_it(json.loads(nb_path.read_text()))
    nb["cells"][0]["source"] = "# changed"
    _lab_saves(repo, nb_path, nb)
    assert git("status", "--porcelain").strip() == f"M notebooks/{nb_path.name}"


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_without_the_hook_a_filter_alone_leaves_git_status_dirty(tmp_path):
    """Why the hook exists: git trusts a size change without running the filter (an empty diff, a blocked checkout)."""
    repo, nb_path, git = _git_repo(tmp_path)
    nb_path.write_text(json.dumps(_as_lab_leaves_it(json.loads(nb_path.read_text())), indent=1, sort_keys=True) + "\n")
    assert git("status", "--porcelain").strip() == f"M notebooks/{nb_path.name}" and git("diff") == ""


def test_the_committed_notebooks_carry_what_lab_writes_for_the_projects_kernel():
    """Opening a notebook changes nothing: its kernelspec and language_info are what Lab sets when the kernel connects
    (the language's version is the Python of whoever ran it last, so only its form is checked)."""
    wanted = kernel_metadata()
    for path in [*NOTEBOOKS, *sorted(ROOT.glob("book/**/*.ipynb"))]:
        meta = json.loads(path.read_text())["metadata"]
        assert meta["kernelspec"] == wanted["kernelspec"], path
        lang = dict(meta["language_info"])
        assert re.fullmatch(r"3\.\d+\.\d+", lang.pop("version")), path
        assert lang == {k: v for k, v in wanted["language_info"].items() if k != "version"}, path


def test_make_setup_installs_the_filter():
    makefile = (ROOT / "Makefile").read_text()
    assert "setup: $(VENV)/.installed notebook-filter" in makefile
    assert "filter.reprobook-notebook.clean '$(BIN)/python -m reprobook.book.clean'" in makefile
    assert "*.ipynb filter=reprobook-notebook" in (ROOT / ".gitattributes").read_text()
    assert "jupyter_server_config.json $(VENV)/etc/jupyter/jupyter_server_config.json" in makefile
    assert "--allow-root" in makefile  # `make lab` as root


@pytest.mark.parametrize("path", [*NOTEBOOKS, *sorted(ROOT.glob("book/**/*.ipynb"))], ids=lambda p: p.stem)
def test_notebooks_are_stored_in_nbformat_4_5_with_cell_ids(path):
    # Lab gives a 4.4 notebook cell ids as it opens it, so closing it asked to save changes nobody made
    import nbformat
    nb = json.loads(path.read_text())
    assert (nb["nbformat"], nb["nbformat_minor"]) == (4, 5), path
    ids = [cell.get("id") for cell in nb["cells"]]
    assert all(ids) and len(set(ids)) == len(ids), path
    nbformat.validate(nbformat.from_dict(nb))
