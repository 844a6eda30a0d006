"""Tables for the book's summary and chapter pages, computed from configuration and data."""

from __future__ import annotations

import os
from html import escape
from pathlib import Path

import pandas as pd

from . import verdicts
from .api import evaluate, project
from .checks import colour_of


def _claim_href(paper: str, claim: str, *, from_dir: str) -> str:
    depth = len([p for p in from_dir.split("/") if p])
    return "../" * depth + f"notebooks/{paper}/{claim}.html"


def summary_frame(verdicts_dir: str | Path | None = None) -> pd.DataFrame:
    """One row per claim of every paper: verdict, margin, source.

    During a book build (``verdicts_dir``, by default ``$REPROBOOK_VERDICTS``) the rows come from
    the verdicts the claim pages recorded in the same build (`reprobook.verdicts`); a claim without
    a usable record, and every claim outside a build, is evaluated here from its data. The keys of
    those are in ``attrs["evaluated"]``, and why, in ``attrs["why_evaluated"]``;
    `summary_note` says so on the page.
    """
    directory = verdicts_dir or os.environ.get(verdicts.ENV_DIR)
    records, rejected = verdicts.read(directory) if directory else ({}, {})
    rows, evaluated, why = [], [], {}
    for claim in project().all_claims():
        rec = records.get(claim.key)
        if rec is None:
            ev = evaluate(claim)
            evaluated.append(claim.key)
            why[claim.key] = ("not built by reprobook book" if not directory
                              else rejected.get(claim.key, "its page recorded no verdict in this build"))
            rec = {"verdict": str(ev.verdict.verdict), "margin": ev.verdict.margin, "reason": ev.verdict.reason,
                   "source": ev.outputs.source if ev.outputs.available else "none",
                   "source_detail": ev.outputs.label if ev.outputs.available else ev.outputs.detail}
        rows.append({"paper": project().paper(claim.paper).short, "claim": claim.title, "key": claim.key,
                     "verdict": rec["verdict"],
                     "margin": None if rec["margin"] is None else round(rec["margin"] * 100, 1),
                     "source": rec["source"], "source_detail": rec["source_detail"], "reason": rec["reason"]})
    frame = pd.DataFrame(rows)
    frame.attrs.update(evaluated=evaluated, why_evaluated=why)
    return frame


def summary_note(frame: pd.DataFrame) -> str:
    """Markdown saying which verdicts the summary computed itself rather than read from the claim pages."""
    evaluated = frame.attrs.get("evaluated") or []
    if not evaluated:
        return (f"All {len(frame)} verdicts are the ones the claim pages computed in this build; "
                "none was computed a second time here.")
    if len(evaluated) == len(frame):
        why = set(frame.attrs.get("why_evaluated", {}).values())
        return (f"All {len(frame)} verdicts were computed on this page" + (f" ({why.pop()})." if len(why) == 1 else "."))
    items = "; ".join(f"`{key}` ({frame.attrs['why_evaluated'][key]})" for key in evaluated)
    return (f"{len(frame) - len(evaluated)} verdicts are the ones the claim pages computed in this build; "
            f"{len(evaluated)} were computed on this page: {items}.")


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
