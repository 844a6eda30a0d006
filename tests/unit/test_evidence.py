"""The evidence under a claim's verdict (issue 51): the plot first, then a compact table a reader can read, the
details folded; the statistic the checks judge is the one shown; a partial run says what it holds and lacks."""

from __future__ import annotations

import dataclasses
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from docutils import nodes  # noqa: E402
from docutils.frontend import get_default_settings  # noqa: E402
from docutils.parsers.rst import Parser  # noqa: E402
from docutils.utils import new_document  # noqa: E402

from reprobook.book import evidence, plots, sphinxext  # noqa: E402
from reprobook.book.compare import comparison  # noqa: E402
from reprobook.core.checks import BADGE_END, BADGE_START, STATISTICS, partial_words, trial_rows  # noqa: E402
from reprobook.core.loaders import column_heading, column_words  # noqa: E402
from reprobook.core.plan import sweep_outcome  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture
def validators(mirror):
    import reprobook as rb
    claim = rb.claim("aardvark/validator-throughput")
    measured = rb.load(claim, rb.obtain(claim, "reference", progress=False))   # the authors' own trials
    return claim, measured


def test_numbers_are_rounded_to_what_their_spread_supports():
    assert evidence.rounded(1310.566667) == "1,310" and evidence.rounded(0.999669) == "1"
    assert evidence.rounded(12.444002, 0.1) == "12.4" and evidence.rounded(12.444002, 3) == "12"
    assert evidence.rounded(2950.4, 0.5) == "2,950" and evidence.rounded(0.0707551) == "0.0708"
    assert evidence.rounded(-3.5e-7) == "−0.00000035" and evidence.rounded(float("inf")) == "∞"


def test_columns_are_named_by_the_loaders_words_with_their_units():
    assert column_words("pesto.curves", "tput_tx_per_s") == ("throughput", "tx/s")
    assert column_heading("aardvark.validators", "mean_ops_per_s") == "throughput (ops/s)"
    assert column_heading("verus.pmlog", "append_kib") == "append size (KiB)"
    assert column_heading(None, "client_total") == "client total"   # undeclared: still no snake_case


def test_the_compact_table_has_words_marks_and_rounded_numbers(validators):
    import reprobook as rb
    claim, measured = validators
    outputs = rb.obtain(claim, "reference", progress=False)
    verdict = rb.check(claim, measured, outputs)
    head, tail = evidence.evidence_parts(claim, measured, verdict)
    assert head.startswith(evidence.START) and tail.endswith(evidence.END)
    table = tail[: tail.index("<details")]
    headings = [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<th(?:\s[^>]*)?>(.*?)</th>", table)]
    assert headings[:4] == ["point", "measured", "compared with", "margin"], headings
    assert not [h for h in headings if re.search(r"[a-z]_[a-z]", h)], headings
    assert "True" not in tail and "False" not in tail
    assert "✓" in table and "within" in table
    # the checks judge the trials' harmonic mean (the loader's: total work over total time), and the table says so
    assert "harmonic mean" in table, table
    cells = re.findall(r"<td>(.*?)</td>", table)
    numbers = [n for c in cells for n in re.findall(r"\d[\d,]*\.\d+|\d[\d,]*", c)]
    assert numbers and all(len(re.sub(r"\D", "", n).lstrip("0")) <= 4 for n in numbers), numbers
    # the folded details: each check's reason, its rows with columns in words, marks instead of True/False
    details = tail[tail.index("<details"):]
    assert "<summary>How each check was judged" in details and "✓ yes" in details
    assert not [h for h in re.findall(r"<th(?:\s[^>]*)?>(.*?)</th>", details) if re.search(r"[a-z]_[a-z]", h)]


def test_the_statistic_the_checks_judge_is_the_one_plotted_and_compared(validators):
    claim, measured = validators
    median = dataclasses.replace(claim, checks=tuple(dataclasses.replace(c, options={**c.options, "statistic": "median"})
                                                     for c in claim.checks))
    fig = plots.claim_figure(median, measured)
    legend = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert "95 % interval of the trials' median" in legend, legend
    assert "harmonic mean" not in " ".join(legend) and "mean" not in [w.split()[-1] for w in legend]
    trials = trial_rows(measured)
    table = comparison(median, measured)
    assert table.attrs["statistic"] == "median"
    row = table[table["op"] == "modify"].iloc[0]
    at = trials[(trials["op"] == "modify") & (trials["cores"] == 32)]["mean_ops_per_s"]
    assert len(at) > 1 and row["measured"] == pytest.approx(float(np.median(at)))
    # and the claim as the paper file states it: the loader's harmonic mean, in the legend too
    fig = plots.claim_figure(claim, measured)
    legend = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert "95 % interval of the trials' harmonic mean" in legend, legend
    assert comparison(claim, measured).attrs["statistic"] == "hmean"
    assert STATISTICS["hmean"]([1.0, 3.0]) == pytest.approx(1.5)


def test_the_evidence_cell_moves_under_the_verdict_and_its_way_forward():
    doc = new_document("page", get_default_settings(Parser))
    section = nodes.section()
    section += nodes.title("", "Page")
    section += nodes.paragraph("", "intro")
    section += nodes.raw("", f"{BADGE_START}<div class='reprobook-badge'>v</div>{BADGE_END}", format="html")
    for i in range(3):
        section += nodes.paragraph("", f"story {i}")
    cell = nodes.container(classes=["cell", "tag_hide-input"])
    out = nodes.container(classes=["cell_output"])
    out += nodes.raw("", f"{evidence.START}<div class='reprobook-evidence'>", format="html")
    out += nodes.image(uri="plot.png")
    out += nodes.raw("", f"<table/></div>{evidence.END}", format="html")
    cell += out
    section += cell
    section += nodes.paragraph("", "after")
    doc += section
    assert sphinxext.lift_badge(doc) and sphinxext.lift_evidence(doc)
    kids = section.children
    assert "reprobook-badge" in kids[1].astext() and kids[2] is cell
    assert [k.astext() for k in kids[3:] if k.astext()][:4] == ["intro", "story 0", "story 1", "story 2"]
    assert "at the top of this page, under the verdict" in kids[-2].astext() and kids[-1].astext() == "after"


def test_a_sweeps_log_says_which_points_finished_which_failed_and_why():
    log = ("### reprobook step 1/2: start\n### reprobook: step 1 done in 1 s\n"
           "### reprobook step 2-1/2: run (expected 1 min) [point 1/4: clients=2]\nok\n### reprobook: step 2-1 done in 2 s\n"
           "### reprobook step 2-2/2: run (expected 1 min) [point 2/4: clients=4] [skipped: done in an earlier attempt]\n"
           "### reprobook step 2-3/2: run (expected 1 min) [point 3/4: clients=6]\nstarting\n"
           "error: the clients could not connect\n")
    got = sweep_outcome(log, 4)
    assert got["done"] == [1, 2] and got["not_run"] == [4]
    assert got["failed"] == [{"point": 3, "name": "clients=6", "why": "error: the clients could not connect"}]
    words = partial_words({"status": "failed", "total": 4, "done": ["clients=2", "clients=4"],
                           "failed": [{"point": "clients=6", "why": "no connection"}], "not_run": ["clients=8"]})
    assert words == ("2 of 4 points finished (clients=2, clients=4); clients=6 failed: no connection; "
                     "not run: clients=8")
