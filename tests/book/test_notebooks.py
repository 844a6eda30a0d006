"""The claim notebooks: stored clean, documented parameters, and runnable with papermill for every source."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import papermill as pm
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(ROOT.glob("notebooks/*/*.ipynb")) + sorted(ROOT.glob("book/**/*.ipynb"))
CLAIMS = sorted(ROOT.glob("notebooks/*/*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_committed_without_outputs(path):
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        assert not cell.get("outputs"), f"{path}: a cell has outputs"
        assert cell.get("execution_count") is None, f"{path}: a cell has an execution count"
    assert set(nb["metadata"]) <= {"kernelspec", "language_info"}, f"{path}: volatile metadata"


def test_every_claim_has_a_notebook():
    from reprobook.core.config import load_project
    keys = {c.key for c in load_project(ROOT).all_claims()}
    assert keys == {f"{p.parent.name}/{p.stem}" for p in CLAIMS}


@pytest.mark.parametrize("path", CLAIMS, ids=lambda p: p.stem)
def test_parameters_cell(path):
    nb = json.loads(path.read_text())
    tagged = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1
    lines = "".join(tagged[0]["source"]).splitlines()
    assert any(line.startswith("source: str = ") for line in lines)
    assert any(line.startswith("host: str = ") for line in lines)
    for line in lines:
        assert re.match(r"^\w+: \w+ = .+  # .+", line), f"undocumented parameter line: {line!r}"
        assert not re.search(r"(?i)pass(word)?|secret|token|key_?file", line), line


def _verdict(out: Path) -> str:
    nb = json.loads(out.read_text())
    for cell in nb["cells"]:
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if "text/html" in data and "reprobook-verdict" in "".join(data["text/html"]):
                return "".join(data["text/html"])
    raise AssertionError(f"no verdict shown in {out}")


# What each claim's page says from the authors' shipped outputs alone, as its paper file declares it
# (`reference_verdict`): a computed verdict where they ship outputs, an honest "not run" (with what to do) where they do
# not. Where the published numbers are computed from the very files the authors ship (published_from_reference),
# judging those files compares them with themselves, and the verdict says exactly that instead of "holds".
def test_every_claim_with_shipped_outputs_declares_their_verdict():
    from reprobook.core.config import load_project
    claims = list(load_project(ROOT).all_claims())
    assert [c.key for c in claims if c.reference and not c.reference_verdict] == []
    assert {f"{p.parent.name}/{p.stem}" for p in CLAIMS} == {c.key for c in claims}


def _expected(key: str) -> str:
    from reprobook.core.config import load_project
    claim = load_project(ROOT).claim(key)
    if not claim.reference:
        return "not run"
    if claim.published_from_reference and claim.reference_verdict == "holds":
        return "consistent with the authors' raw results"
    return claim.reference_verdict


@pytest.mark.parametrize("path", CLAIMS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_papermill_auto_without_runs(path, tmp_path, mirror):
    """With no run recorded, each page shows the verdict its shipped outputs give, or says why it has none."""
    out = tmp_path / "out.ipynb"
    pm.execute_notebook(str(path), str(out), parameters={"source": "auto"}, cwd=str(path.parent),
                        progress_bar=False, kernel_name="python3")
    html = unescape(_verdict(out))
    want = _expected(f"{path.parent.name}/{path.stem}")
    assert f">{want}</b>" in html, html[:500]
    if want != "not run":
        assert "the authors' shipped outputs" in html
    else:
        assert "ship no outputs" in html and "no run" in html


def test_honest_not_run_without_outputs(tmp_path, monkeypatch):
    """No run recorded and the authors' outputs unobtainable: the page says "not run", and why."""
    monkeypatch.setenv("REPROBOOK_ARTIFACT_MIRROR", str(tmp_path / "empty"))
    monkeypatch.setenv("REPROBOOK_GIT_BASE_URL", f"file://{tmp_path}/no-git/")
    path = ROOT / "notebooks" / "aardvark" / "validator-throughput.ipynb"
    out = tmp_path / "out.ipynb"
    pm.execute_notebook(str(path), str(out), parameters={"source": "auto"}, cwd=str(path.parent),
                        progress_bar=False, kernel_name="python3")
    html = _verdict(out)
    assert ">not run</b>" in html and "could not be obtained" in html


@pytest.mark.parametrize("path", CLAIMS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_notebooks_ask_the_library_not_the_claims_internals(path):
    """Bands, axes and labels come from the claim through the library: no notebook reads check options or
    matches published ids by prefix."""
    code = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
    for pattern in (r"\.options\b", r"\.checks\[", r"published_id", r"\.startswith\(", r"\._[a-z]\w*",
                    r"(?:^|[^\w.])_[a-z]\w*\(", r"from reprobook\.\w+ import _"):
        assert not re.search(pattern, code), f"{path.name}: {pattern} in\n{code}"
