"""The author's path: `reprobook new` to a judged claim, editing only the paper file, the loader and the prose.

A copy of the project (its library included, so the new paper's package is imported from the copy) gets a
small invented paper; the test writes its data, imports it as a run and has the claim judged through its page.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.project_copy import copy_project

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@pytest.fixture()
def project(tmp_path):
    return copy_project(tmp_path / "project")


def _cli(project: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(project / "lib"), "REPROBOOK_ROOT": str(project),
           "REPROBOOK_RUNS": str(project / "runs")}
    return subprocess.run([str(BIN / "reprobook"), *args], cwd=project, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.slow
def test_from_reprobook_new_to_a_judged_claim(project, tmp_path):
    out = _cli(project, "new", "toy", "--claim", "speedup", "--title", "Toy: a faster thing", "--venue", "NoConf 2026")
    assert out.returncode == 0, out.stderr
    written = [line.split(" ", 1)[1] for line in out.stdout.splitlines() if line.startswith("wrote ")]
    assert written == ["configs/papers/toy.yaml", "lib/reprobook/papers/toy/__init__.py",
                       "lib/reprobook/papers/toy/loaders.py", "notebooks/toy/speedup.ipynb", "book/toy/index.ipynb",
                       "_toc.yml"]
    assert "notebooks/toy/speedup" in (project / "_toc.yml").read_text()
    nb = json.loads((project / "notebooks/toy/speedup.ipynb").read_text())
    assert all(not c.get("outputs") for c in nb["cells"])  # committed clean, as every page

    # the claims list knows it; a second `new` of the same paper writes nothing
    assert "toy/speedup" in _cli(project, "claims", "toy").stdout
    again = _cli(project, "new", "toy", "--claim", "speedup")
    assert again.returncode == 2 and "exists already" in again.stderr and "Traceback" not in again.stderr

    # data the test writes: one benchmark below the paper's 2x -> the check fails, with the margin
    data = tmp_path / "results.csv"
    data.write_text("benchmark,value\nsort,2.4\nscan,2.1\njoin,1.7\n")
    assert _cli(project, "import", "toy/speedup", f"results={data}", "--machine", "a test box").returncode == 0
    run = _cli(project, "run", "toy/speedup", "-q")
    assert run.returncode == 1 and "toy/speedup: FAILS" in run.stdout and "1.7" in run.stdout, run.stdout + run.stderr

    # the author edits the YAML only (the paper's number): now every benchmark clears it
    yaml_path = project / "configs/papers/toy.yaml"
    yaml_path.write_text(yaml_path.read_text().replace("    value: 2.0\n", "    value: 1.5\n"))
    run = _cli(project, "run", "toy/speedup", "-q")
    assert run.returncode == 0 and "toy/speedup: HOLDS" in run.stdout, run.stdout + run.stderr

    # a check naming a column the loader does not produce is a configuration error at load: file, key, columns
    yaml_path.write_text(yaml_path.read_text().replace("value: speedup\n", "value: speed_up\n"))
    bad = _cli(project, "claims", "toy")
    assert bad.returncode == 2 and "toy.yaml" in bad.stderr and "claims[0].checks[0].value" in bad.stderr
    assert "'speed_up'" in bad.stderr and "benchmark, speedup" in bad.stderr and "Traceback" not in bad.stderr


def test_a_new_paper_keeps_the_import_rules(project):
    assert _cli(project, "new", "toy").returncode == 0
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(project / "lib"), "HOME": str(project)}
    lint = subprocess.run([str(BIN / "lint-imports"), "--config", str(project / "pyproject.toml"), "--no-cache"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert lint.returncode == 0 and "0 broken" in lint.stdout, lint.stdout + lint.stderr


def test_ids_are_checked_and_nothing_is_written_on_a_refusal(project):
    bad = _cli(project, "new", "Bad Name")
    assert bad.returncode == 2 and "lower-case" in bad.stderr
    assert not (project / "configs/papers/Bad Name.yaml").exists()
    (project / "_toc.yml").unlink()
    no_toc = _cli(project, "new", "toy")
    assert no_toc.returncode == 2 and "_toc.yml" in no_toc.stderr and "Traceback" not in no_toc.stderr
    assert not (project / "configs/papers/toy.yaml").exists() and not (project / "notebooks/toy").exists()
