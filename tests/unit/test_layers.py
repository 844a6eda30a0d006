"""The layers' import rules (pyproject.toml, [tool.importlinter]) hold, and a violation fails them.

`lint-imports` reads the contracts; these tests run it on the tree as it is, and on a copy of the
package with one forbidden import added, so a contract that can no longer fail is noticed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(lib: Path) -> subprocess.CompletedProcess:
    """`lint-imports` over the package under ``lib`` with the project's contracts."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(lib), "HOME": str(lib.parent)}
    return subprocess.run([str(LINT), "--config", str(ROOT / "pyproject.toml"), "--no-cache"], cwd=lib.parent,
                          env=env, capture_output=True, text=True, timeout=300)


def test_the_tree_keeps_every_contract():
    result = _lint(ROOT / "lib")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
    assert result.stdout.count("KEPT") == 4


@pytest.mark.parametrize("module, line, contract", [
    # an upward import: the core reaching the user-facing layer
    ("core/checks.py", "from reprobook import api as _up", "Layers"),
    # a cycle inside a layer
    ("core/schema.py", "from reprobook.core import config as _cycle", "No cycles"),
    # the engine naming a paper
    ("remote/steps.py", "from reprobook.papers.pesto import pequin as _paper", "The engine knows no paper"),
    # one paper importing another
    ("papers/ozz/loaders.py", "from reprobook.papers.verus import parsers as _other", "A paper never imports"),
])
def test_a_violation_breaks_its_contract(tmp_path, module, line, contract):
    lib = tmp_path / "lib"
    shutil.copytree(ROOT / "lib" / "reprobook", lib / "reprobook", ignore=shutil.ignore_patterns("__pycache__"))
    target = lib / "reprobook" / module
    target.write_text(target.read_text() + f"\n{line}  # noqa\n")
    result = _lint(lib)
    assert result.returncode != 0
    broken = [ln for ln in result.stdout.splitlines() if ln.endswith("BROKEN")]
    assert len(broken) >= 1 and any(ln.startswith(contract) for ln in broken), result.stdout
