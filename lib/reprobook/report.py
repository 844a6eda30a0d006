"""Tables for the book's summary and chapter pages, computed from configuration and data."""

from __future__ import annotations

from html import escape

import pandas as pd

from .api import evaluate, project
from .checks import colour_of


def _claim_href(paper: str, claim: str, *, from_dir: str) -> str:
    depth = len([p for p in from_dir.split("/") if p])
    return "../" * depth + f"notebooks/{paper}/{claim}.html"


def summary_frame() -> pd.DataFrame:
    """One row per claim of every paper: verdict, margin, source, computed now from the data."""
    rows = []
    for claim in project().all_claims():
        ev = evaluate(claim)
        rows.append({"paper": project().paper(claim.paper).short, "claim": claim.title, "key": claim.key,
                     "verdict": str(ev.verdict.verdict),
                     "margin": None if ev.verdict.margin is None else round(ev.verdict.margin * 100, 1),
                     "source": ev.outputs.source if ev.outputs.available else "none",
                     "source_detail": ev.outputs.label if ev.outputs.available else ev.outputs.detail,
                     "reason": ev.verdict.reason})
    return pd.DataFrame(rows)


def summary_html(frame: pd.DataFrame, *, from_dir: str = "book") -> str:
    """The summary table as HTML, each claim linked to its page."""
    body = []
    for _, r in frame.iterrows():
        paper, claim = r["key"].split("/")
        margin = "—" if pd.isna(r["margin"]) else f"{r['margin']:+.1f}%"
        body.append(
            f"<tr><td>{escape(r['paper'])}</td>"
            f"<td><a href='{_claim_href(paper, claim, from_dir=from_dir)}'>{escape(r['claim'])}</a></td>"
            f"<td class='verdict' style='color:{colour_of(r['verdict'])}'><b>{escape(r['verdict'])}</b></td>"
            f"<td>{margin}</td><td title='{escape(r['source_detail'])}'>{escape(r['source'])}</td>"
            f"<td>{escape(r['reason'])}</td></tr>")
    return ("<table class='reprobook-summary'><thead><tr><th>paper</th><th>claim</th><th>verdict</th>"
            "<th>margin</th><th>source</th><th>why</th></tr></thead><tbody>" + "".join(body) + "</tbody></table>")


def paper_overview(paper_id: str) -> pd.DataFrame:
    """The paper's claims with their references, machine needs and the expected time of a live run."""
    paper = project().paper(paper_id)
    rows = []
    for c in paper.claims.values():
        r = c.requires
        rows.append({"claim": c.title, "in the paper": ", ".join(c.refs),
                     "machine": "; ".join(r.describe()) or "any",
                     "live run (setup + experiment)": c.expected_time or "—",
                     "authors' outputs": "yes" if c.reference else "no"})
    return pd.DataFrame(rows)


def repositories(paper_id: str) -> pd.DataFrame:
    """The artifact repositories and the commits they are pinned to."""
    paper = project().paper(paper_id)
    return pd.DataFrame([{"repository": r.url, "commit": r.commit[:12],
                          "submodules pinned": len(r.submodules)} for r in paper.repositories.values()])
