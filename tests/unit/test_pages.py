"""How claim pages read: the machinery folded by one rule, tables without pandas' index, the verdict's words."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd
import pytest

from reprobook.book import pages
from reprobook.book.sphinxext import lift_badge

ROOT = Path(__file__).resolve().parents[2]
CLAIMS = sorted(ROOT.glob("notebooks/*/*.ipynb"))


@pytest.mark.parametrize("path", CLAIMS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_claim_notebook_carries_the_layout_tags(path):
    """Fix with: .venv/bin/python -m reprobook.book.pages notebooks/*/*.ipynb (tags the untagged cells; metadata only)."""
    nb = json.loads(path.read_text())
    assert pages.misfolded(nb) == []
    tags = [c["metadata"].get("tags", []) for c in nb["cells"] if c["cell_type"] == "code"]
    assert pages.FOLD in tags[0] and "parameters" in tags[0]  # the parameters: folded, still papermill's
    shown = ["".join(c["source"]) for c in nb["cells"] if pages.RESULT in c["metadata"].get("tags", [])]
    assert any("rb.describe(" in s for s in shown) and any("rb.judge(" in s for s in shown)
    # the machinery is the library's: a page states its verdict and evidence with one call each, and builds no
    # Markdown of its own from a run's words
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    assert sum("rb.judge(claim, measured, outputs)" in s for s in code) == 1
    assert sum(s.startswith("rb.evidence(claim, measured, verdict") for s in code) == 1
    assert not [s for s in code if "verdict.checks" in s or "Markdown(f" in s]


def test_the_rule_folds_machinery_and_shows_results():
    def cell(source, tags=None):
        return {"cell_type": "code", "metadata": {"tags": tags} if tags else {}, "source": source, "outputs": []}
    nb = {"cells": [cell("x: int = 1  # a knob", ["parameters"]), cell("rb.describe(claim)"),
                    cell("outputs = rb.obtain(claim, source)"), cell("rb.plot(claim, measured)\nplt.show()"),
                    cell("rb.glue_verdict(verdict)"), cell("rb.compare(claim, measured)"),
                    cell("for r in verdict.checks:\n    display(r.evidence)"),
                    {"cell_type": "markdown", "metadata": {}, "source": "# Title"}]}
    nb["cells"].insert(1, cell("display(Markdown('a note the reader should see'))", ["hide-input"]))  # on purpose
    before = copy.deepcopy(nb)
    assert pages.misfolded(nb) and pages.fold(nb) and not pages.fold(nb)  # applied once, then nothing to do
    assert pages.misfolded(nb) == []
    got = [c["metadata"].get("tags") for c in nb["cells"]]
    assert got == [["parameters", "hide-cell"], ["hide-input"], ["hide-input"], ["hide-cell"], ["hide-input"],
                   ["hide-input"], ["hide-input"], ["hide-cell"], None]
    nb["cells"][2]["metadata"]["tags"].append("hide-cell")
    assert pages.misfolded(nb) == ["cell 2: has ['hide-input', 'hide-cell'] (the rule gives hide-input)"]
    for a, b in zip(before["cells"], nb["cells"]):  # nothing but the tags changed
        assert (a["source"], a.get("outputs"), a["cell_type"]) == (b["source"], b.get("outputs"), b["cell_type"])


def test_tables_have_no_index_and_say_what_is_empty_or_unbounded():
    html = pages.table_html(pd.DataFrame({"op": ["a", "b"], "margin": [0.5, float("inf")]}))
    assert "<th>op</th>" in html and "<th>margin</th>" in html and "∞" in html and "inf" not in html
    assert "<tbody>\n    <tr>\n      <td>" in html and "reprobook-scroll" in html
    named = pd.DataFrame({"v": [1.0]}, index=pd.Index(["x"], name="system"))
    assert "<th>system</th>" in pages.table_html(named)  # a named index is data: it becomes a column
    assert "No rows (columns: a, b)" in pages.table_html(pd.DataFrame(columns=["a", "b"]))


def test_the_badge_moves_under_the_title():
    from docutils import nodes
    from docutils.utils import new_document

    from reprobook.core.checks import BADGE_END, BADGE_START
    doc = new_document("page")
    section = nodes.section()
    section += nodes.title(text="A claim")
    section += nodes.paragraph(text="intro")
    section += nodes.raw("", f"<div class='reprobook-verdict'>{BADGE_START}<b>holds</b>{BADGE_END}<table/></div>",
                         format="html")
    doc += section
    assert lift_badge(doc)
    assert isinstance(section[1], nodes.raw) and "<b>holds</b>" in section[1].astext()
    assert "<b>holds</b>" not in section[3].astext() and "<table/>" in section[3].astext()
    lift_badge(doc)  # read twice: still one badge, under the title
    assert [n.astext().count("<b>holds</b>") for n in doc.findall(nodes.raw)] == [1, 0, 0]
