"""Tables for the book's summary and chapter pages, computed from configuration and data."""

from __future__ import annotations

import math
import os
from html import escape
from pathlib import Path

import pandas as pd

from reprobook.core import verdicts
from reprobook.api import evaluate, project
from reprobook.core.checks import colour_of, margin_words


def _claim_href(paper: str, claim: str, *, from_dir: str) -> str:
    depth = len([p for p in from_dir.split("/") if p])
    return "../" * depth + f"notebooks/{paper}/{claim}.html"


def verdict_rows(claims, verdicts_dir: str | Path | None = None) -> tuple[list[dict], list[str], dict[str, str]]:
    """Each claim's verdict as recorded by its page in this build, else evaluated here.

    Returns the rows (claim key, verdict, its words, margin, reason, source, source detail, warnings),
    the keys evaluated here, and why each was.
    """
    directory = verdicts_dir or os.environ.get(verdicts.ENV_DIR)
    records, rejected = verdicts.read(directory) if directory else ({}, {})
    rows, evaluated, why = [], [], {}
    for claim in claims:
        rec = records.get(claim.key)
        if rec is None:
            ev = evaluate(claim)
            evaluated.append(claim.key)
            why[claim.key] = ("not built by reprobook book" if not directory
                              else rejected.get(claim.key, "its page recorded no verdict in this build"))
            rec = {"verdict": str(ev.verdict.verdict), "wording": ev.verdict.says, "margin": ev.verdict.margin,
                   "reason": ev.verdict.reason, "warnings": list(ev.verdict.warnings),
                   "source": ev.outputs.source if ev.outputs.available else "none",
                   "source_detail": ev.outputs.label if ev.outputs.available else ev.outputs.detail}
        rows.append({"key": claim.key, "verdict": rec["verdict"], "says": rec.get("wording") or rec["verdict"],
                     "margin": rec["margin"], "reason": rec["reason"], "source": rec["source"],
                     "source_detail": rec["source_detail"], "warnings": rec.get("warnings") or []})
    return rows, evaluated, why


def summary_frame(verdicts_dir: str | Path | None = None) -> pd.DataFrame:
    """One row per claim of every paper: verdict, margin, source.

    During a book build (``verdicts_dir``, by default ``$REPROBOOK_VERDICTS``) the rows come from
    the verdicts the claim pages recorded in the same build (`reprobook.core.verdicts`); a claim without
    a usable record, and every claim outside a build, is evaluated here from its data. The keys of
    those are in ``attrs["evaluated"]``, and why, in ``attrs["why_evaluated"]``;
    `summary_note` says so on the page.
    """
    found, evaluated, why = verdict_rows(project().all_claims(), verdicts_dir)
    rows = []
    for claim, rec in zip(project().all_claims(), found):
        margin = rec["margin"]
        rows.append({"paper": project().paper(claim.paper).short, "claim": claim.title, "key": claim.key,
                     "verdict": rec["verdict"], "says": rec["says"],
                     "margin": None if margin is None or not math.isfinite(margin) else round(margin * 100, 1),
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
            f"<td class='verdict' style='color:{colour_of(r['verdict'])}'><b>{escape(r['says'])}</b></td>"
            f"<td>{margin}</td><td title='{escape(r['source_detail'])}'>{escape(r['source'])}</td>"
            f"<td>{escape(r['reason'])}</td></tr>")
    return ("<table class='reprobook-summary'><thead><tr><th>paper</th><th>claim</th><th>verdict</th>"
            "<th>margin</th><th>source</th><th>why</th></tr></thead><tbody>" + "".join(body) + "</tbody></table>")


def paper_overview(paper_id: str, *, from_dir: str | None = None, verdicts_dir: str | Path | None = None):
    """The paper's claims, each linked to its page with its verdict, references, machine needs and time of a live run.

    The verdicts are the ones the claim pages recorded in this build (as on the summary page), or computed here.
    Returns a pandas Styler (the frame is ``.data``).
    """
    paper = project().paper(paper_id)
    claims = list(paper.claims.values())
    found, _, _ = verdict_rows(claims, verdicts_dir)
    from_dir = from_dir or f"book/{paper_id}"
    rows = []
    for c, rec in zip(claims, found):
        r = c.requires
        href = _claim_href(c.paper, c.id, from_dir=from_dir)
        margin = margin_words(rec["margin"])
        detail = ", ".join(x for x in (f"margin {margin}" if margin != "n/a" else "", f"source: {rec['source']}") if x)
        rows.append({"claim": f"<a href='{href}'>{escape(c.title)}</a>",
                     "verdict": f"<b style='color:{colour_of(rec['verdict'])}'>{escape(rec['says'])}</b>"
                                f"<br><small>{escape(detail)}</small>",
                     "in the paper": escape(", ".join(c.refs)),
                     "machine": escape("; ".join(r.describe()) or "any"),
                     "live run (setup + experiment)": escape(c.expected_time or "—"),
                     "authors' outputs": "yes" if c.reference else "no"})
    return pd.DataFrame(rows).style.hide(axis="index").set_table_attributes("class='reprobook-chapter'")


def repositories(paper_id: str):
    """The artifact repositories, each a link, and the commits they are pinned to (each a link too)."""
    paper = project().paper(paper_id)
    rows = []
    for r in paper.repositories.values():
        url = r.url.removesuffix(".git")
        tree = f"{url}/tree/{r.commit}" if "github.com" in url else url
        rows.append({"repository": f"<a href='{escape(url)}'>{escape(url)}</a>",
                     "commit": f"<a href='{escape(tree)}'><code>{r.commit[:12]}</code></a>",
                     "submodules pinned": len(r.submodules)})
    return pd.DataFrame(rows).style.hide(axis="index")


def build_stamp(root: str | Path | None = None) -> str:
    """When and with what the verdicts were computed: the date, reprobook's version and the project's commit."""
    import datetime as dt
    import subprocess

    from reprobook import __version__
    root = Path(root) if root else project().root

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    commit = git("rev-parse", "--short=12", "HEAD")
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    made = (f"commit `{commit}`" + (" with local changes" if dirty else "")) if commit else "no git commit (not a checkout)"
    return f"Verdicts computed on {when} by reprobook {__version__}, {made}."


# --------------------------------------------------------------------------- the evaluator's report

SCHEMA = Path(__file__).parent / "core" / "schemas" / "report.json"
BADGES = ("Available", "Functional", "Reproduced")
"""The ACM artifact badges a report weighs. ACM awards them separately: *Available* is about where the artifact is
kept, *Functional* about whether it runs, *Reproduced* about whether its results come out again."""


def _same(value):
    return value


def counts_toward(claim, outputs, verdict, *, paper_params=None, scrub=_same) -> tuple[str | None, str]:
    """The badge one piece of evidence (``outputs`` judged into ``verdict``) counts toward, and why.

    A successful run of the experiment counts toward *Functional* (it ran end to end, whatever its verdict), and
    toward *Reproduced* only at the paper's scale, with the paper's parameters (``paper_params``, the claim's
    defaults; None: not compared), on a host meeting the claim's requirements, with the claim holding. A rehearsal
    (any scale other than the paper's) counts toward *Functional*, never *Reproduced*. Judging the authors' shipped
    outputs shows whether the published numbers match the authors' own files: it counts toward neither.
    ``scrub`` (redaction) is applied to what the run says (the verdict's reason, the host's shortfalls).
    """
    from reprobook.core.checks import Verdict
    from reprobook.core.scales import PAPER
    kind = outputs.kind if outputs.available else "none"
    if kind == "none":
        return None, "nothing was judged: no run of the experiment is recorded, and no shipped outputs were"
    if kind == "reference":
        shows = {Verdict.HOLDS: "that shows the published numbers match the authors' own files",
                 Verdict.FAILS: "the authors' own files do not support the published numbers",
                 }.get(verdict.verdict, "the authors' own files could not settle the published numbers")
        return None, (f"the authors' shipped outputs were judged ({verdict.says}): {shows}, which says nothing of "
                      f"whether the experiment runs or reproduces")
    if verdict.verdict is Verdict.NOT_RUN:
        return None, f"run {outputs.run_id} was recorded, but nothing in it could be judged"
    ran = f"run {outputs.run_id}" + (" (imported: done by hand)" if kind == "import" else "")
    scale = outputs.scale or PAPER
    if scale != PAPER:
        return "Functional", (f"{ran} ran the artifact end to end at the {scale} scale (its verdict there: {verdict.says}); "
                              f"a run at a scale other than the paper's counts toward Functional, never Reproduced")
    if paper_params is not None:
        from reprobook.core.plan import make_plan
        from reprobook.errors import ConfigError
        try:
            theirs = dict(make_plan(claim, outputs.parameters).params)
        except ConfigError:
            theirs = dict(outputs.parameters)
        other = {k: v for k, v in theirs.items() if paper_params.get(k) != v}
        if other:
            from reprobook.sources import params_words
            return "Functional", (f"{ran} ran at the paper's scale but with parameters other than the paper's "
                                  f"({scrub(params_words(other))}), so its numbers are not the paper's experiment")
    if outputs.shortfalls:
        return "Functional", (f"{ran} ran on a host short of the claim's requirements "
                              f"({scrub('; '.join(outputs.shortfalls))}), so its numbers are not comparable with the "
                              f"paper's")
    if verdict.verdict is not Verdict.HOLDS:
        return "Functional", f"{ran} ran at the paper's scale, but the claim {verdict.says}: {scrub(verdict.reason)}"
    return "Reproduced", (f"{ran} ran at the paper's scale with the paper's parameters on a host meeting the "
                          f"claim's requirements, and the claim holds ({scrub(verdict.reason)})")


def _evidence_entry(claim, outputs, verdict, *, judged: bool, paper_params, scrub) -> dict:
    toward, why = counts_toward(claim, outputs, verdict, paper_params=paper_params, scrub=scrub)
    kind = outputs.kind if outputs.available else "none"
    return {"run": outputs.run_id, "source": kind, "scale": (outputs.scale or "paper") if outputs.run_id else None,
            "verdict": str(verdict.verdict), "wording": verdict.says, "reason": scrub(verdict.reason),
            "judged": judged, "counts_toward": toward, "why": why}


def _how_to_run(claim) -> str:
    from reprobook.core.scales import REHEARSAL
    if not claim.runs_live:
        return f"run its steps by hand and record their outputs with reprobook import {claim.key}"
    if REHEARSAL in claim.scales:
        return (f"a rehearsal on a small host will do (reprobook run {claim.key} --source live -p scale rehearsal "
                f"--host HOST)")
    return f"reprobook run {claim.key} --source live --host HOST"


def claim_badges(paper, claim, evidence: list[dict]) -> dict:
    """Per ACM badge: whether the evidence supports it for ``claim``, why, and what it still needs (None when
    nothing)."""
    doi = paper.artifact_doi
    repos = len(paper.repositories_for(claim))
    available = ({"supported": True, "why": f"the paper file records the artifact's archival copy, DOI {doi}",
                  "needs": None} if doi else
                 {"supported": False,
                  "why": "the paper file records no archival copy of the artifact" + (
                      f"; its {'repository' if repos == 1 else f'{repos} repositories'}, pinned to commits, "
                      f"{'is' if repos == 1 else 'are'} where it is developed, which ACM does not count as archival"
                      if repos else ""),
                  "needs": f"an archival copy of the artifact with a persistent identifier (a DOI, e.g. from Zenodo), "
                           f"recorded as artifact_doi in configs/papers/{paper.id}.yaml"})
    functional = [e for e in evidence if e["counts_toward"] in ("Functional", "Reproduced")]
    reproduced = [e for e in evidence if e["counts_toward"] == "Reproduced"]
    at_paper = [e for e in functional if e["scale"] == "paper"]
    if functional:
        ran = "; ".join(f"run {e['run']} at the {e['scale']} scale ({e['wording']})" for e in functional)
        func = {"supported": True, "why": f"{ran}: the artifact ran end to end", "needs": None}
    else:
        judged = next((e["why"] for e in evidence), "nothing was judged")
        func = {"supported": False, "why": judged,
                "needs": f"a successful run of the experiment, at any scale: {_how_to_run(claim)}"}
    if reproduced:
        repro = {"supported": True, "why": "; ".join(e["why"] for e in reproduced), "needs": None}
    else:
        needs = "; ".join(claim.requires.describe()) or "none stated"
        repro = {"supported": False,
                 "why": ("; ".join(e["why"] for e in at_paper) if at_paper else
                         "no run at the paper's scale is recorded" + (" (only at other scales)" if functional else "")),
                 "needs": (f"a run at the paper's scale with the paper's parameters, on a host meeting the claim's "
                           f"requirements ({needs}), in which the claim holds")}
    return {"Available": available, "Functional": func, "Reproduced": repro}


STATUSES = ("reproduced", "functional", "not run")
"""A claim's status in an evaluation committee's words: its experiment's results came out again (*Reproduced*
supported), it ran end to end (*Functional*), or no run of it is recorded."""


def claim_status(badges: dict) -> str:
    """The claim's status (`STATUSES`) from its badges (`claim_badges`): the badge logic decides, once."""
    return ("reproduced" if badges["Reproduced"]["supported"] else
            "functional" if badges["Functional"]["supported"] else "not run")


def time_to_reproduce(project_, claim, runs) -> list[dict]:
    """How long a live run of ``claim`` takes at each of its scales (the paper's first), as `reprobook plan` says it:
    learned from the step times of the recorded runs at that scale, else the paper file's figure for the scale,
    else the steps' estimates (`reprobook.core.plan.RunPlan.expected_minutes`). A figure of 0 is none stated."""
    from reprobook.core.plan import learn, make_plan
    from reprobook.core.scales import PAPER
    paper = project_.paper(claim.paper)
    scales = sorted(claim.scales, key=lambda s: s != PAPER) if claim.scales else [None]
    out = []
    for scale in scales:
        plan = learn(make_plan(claim, {"scale": scale} if scale else None, paper=paper, source="live"), runs)
        minutes = round(plan.expected_minutes, 1)
        out.append({"scale": scale or PAPER, "minutes": minutes or None,
                    "from": plan.expected_source if minutes else "nothing states it"})
    return out


def _claim_entry(project_, claim, scrub) -> dict:
    from reprobook.core.plan import make_plan
    from reprobook.core.requirements import differences
    from reprobook.core.runs import RunStore
    from reprobook import sources
    from reprobook.api import check, load
    from reprobook.errors import ReprobookError
    store = RunStore(project_.settings.runs_dir)
    ev = evaluate(claim)
    o, v = ev.outputs, ev.verdict
    paper = project_.paper(claim.paper)
    paper_params = dict(make_plan(claim, None).params)
    evidence = []
    if o.available:
        evidence.append(_evidence_entry(claim, o, v, judged=True, paper_params=paper_params, scrub=scrub))
    latest, _ = sources.latest_by_scale(project_, claim)
    for outputs in latest.values():   # the latest run at each scale, when auto judged another
        if outputs.run_id == o.run_id:
            continue
        try:
            verdict = check(claim, load(claim, outputs), outputs)
        except ReprobookError:   # its loader read it a moment ago: a file changed since; it weighs nothing
            continue
        evidence.append(_evidence_entry(claim, outputs, verdict, judged=False, paper_params=paper_params,
                                        scrub=scrub))
    run = store.load(o.run_id) if o.run_id else None
    facts = dict(o.host_facts) or None
    host = run.manifest.get("host") if run is not None else None
    if run is not None and run.manifest.get("source") == "import":
        host = (run.manifest.get("imported") or {}).get("machine")
    return {
        "claim": claim.key, "title": claim.title, "statement": claim.statement, "refs": list(claim.refs),
        "verdict": str(v.verdict), "wording": v.says, "margin": v.margin if v.margin_words != "n/a" else None,
        "reason": scrub(v.reason), "source": o.source if o.available else "none",
        "source_detail": scrub(o.label if o.available else o.detail),
        "scale": o.scale if o.available else None,
        "judged_run": o.run_id,
        "runs": [{"id": r.id, "source": r.manifest.get("source"), "host": r.manifest.get("host"),
                  "status": r.status, "verdict": r.manifest.get("verdict"), "scale": r.manifest.get("scale"),
                  "created": r.manifest.get("created")} for r in store.runs(claim)],
        "host": host, "host_facts": facts,
        "authors_machine": dict(claim.authors_machine),
        "differences": scrub(differences(facts, claim.authors_machine)) if facts else [],
        "requirement_shortfalls": scrub(list(o.shortfalls)),
        "warnings": scrub(list(v.warnings)),
        "findings": scrub(list(v.findings)),
        "checks": [{"what": c.what, "verdict": str(c.verdict), "reason": scrub(c.reason),
                    "judged_on": scrub(c.judged_on)} for c in v.checks],
        "evidence": evidence,
        "badges": (badges := claim_badges(paper, claim, evidence)),
        "status": claim_status(badges),
        "time_to_reproduce": time_to_reproduce(project_, claim, store.runs(claim)),
    }


def paper_badges(paper, claims: list[dict]) -> dict:
    """Per ACM badge, for the paper: supported when every claim's evidence supports it, with the claims that do not
    and what the first of them still needs."""
    out = {}
    for badge in BADGES:
        missing = [c for c in claims if not c["badges"][badge]["supported"]]
        if not claims:
            out[badge] = {"supported": False, "reason": "the paper has no claims", "held_back_by": []}
        elif not missing:
            out[badge] = {"supported": True, "reason": f"every claim supports it ({len(claims)})", "held_back_by": []}
        elif badge == "Available":
            out[badge] = {"supported": False, "reason": missing[0]["badges"][badge]["needs"],
                          "held_back_by": [c["claim"] for c in missing]}
        else:
            out[badge] = {"supported": False,
                          "reason": f"{len(claims) - len(missing)} of {len(claims)} claims support it",
                          "held_back_by": [c["claim"] for c in missing]}
    return out


def paper_report(paper_id: str) -> dict:
    """The evaluator's report of one paper, as a JSON-able dict valid against ``schemas/report.json``.

    Per claim: the verdict (as worded on its page, from ``--source auto``), margin, source, the run judged and every
    run recorded, the host's facts and how they differ from the authors' machine as the paper file states it; the
    evidence (what ``auto`` judged, and the latest successful run at each scale, each judged at its own scale) with
    the badge each counts toward (`counts_toward`); and per ACM badge whether the evidence supports it, why, and what
    it still needs (`claim_badges`). For the paper: each badge, supported when every claim supports it.

    With redaction on (``redact_hosts``) no host, user, machine description or local directory is named
    (`reprobook.core.redaction`): the fields naming them are withheld, and in what the runs say each is withheld
    where it stands as a name.
    """
    import datetime as dt

    from reprobook import __version__
    from reprobook.core.redaction import known_names
    from reprobook.core.runs import RunStore
    proj = project()
    paper = proj.paper(paper_id)
    redactor = known_names(proj, RunStore(proj.settings.runs_dir)) if proj.settings.redact_hosts else None
    claims = [_claim_entry(proj, c, redactor or _same) for c in paper.claims.values()]
    if redactor is not None:
        for c in claims:
            c["host"] = redactor.field(c["host"])
            c["host_facts"] = redactor.facts(c["host_facts"])
            for r in c["runs"]:
                r["host"] = redactor.field(r["host"])
    return {
        "report": "reprobook evaluator's report", "version": 3,
        "generated": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "reprobook": __version__, "stamp": build_stamp(proj.root),
        "paper": {"id": paper.id, "title": paper.title, "venue": paper.venue, "guide": paper.guide,
                  "artifact_doi": paper.artifact_doi or None,
                  "citation": {k: list(v) if isinstance(v, tuple) else v for k, v in paper.citation.items()} or None},
        "repositories": [{"name": r.name, "url": r.url, "commit": r.commit} for r in paper.repositories.values()],
        "claims": claims,
        "verdicts": {k: sum(c["verdict"] == k for c in claims) for k in ("holds", "fails", "inconclusive", "not run")},
        "findings": sum(len(c["findings"]) for c in claims),
        "badges": paper_badges(paper, claims),
    }


def validate_report(data: dict) -> None:
    """Raise `jsonschema.ValidationError` unless ``data`` is a report as ``schemas/report.json`` describes it."""
    import json

    from reprobook.core.schema import jsonschema_module   # without the RFC 3987 grammar (seconds to build)
    js = jsonschema_module()
    schema = json.loads(SCHEMA.read_text())
    # as jsonschema.validate, less its check of the schema itself (a third of a second; a test checks it once)
    error = js.exceptions.best_match(js.validators.validator_for(schema)(schema).iter_errors(data))
    if error is not None:
        raise error


def _sentence(s: str) -> str:
    s = s.rstrip()
    return s if s.endswith((".", "!", "?")) else s + "."


def _time_words(estimate: dict) -> str:
    from reprobook.core.model import duration_words
    return f"about {duration_words(estimate['minutes'])}" if estimate["minutes"] else "not stated"


def report_markdown(data: dict) -> str:
    """The report as Markdown, for pasting into a review form; it reads as plain text too.

    What comes from runs (sources, hosts, facts, reasons, warnings) goes through `reprobook.book.text.plain`: a review
    form renders Markdown, and a run's strings must not become links, images or markup there, while the report's own
    sentences are written as they read.
    """
    from reprobook.book.text import code, plain as t
    p = data["paper"]
    lines = [f"# Artifact evaluation: {p['title']}", "", f"*{p['venue']}.* {data['stamp']}", ""]
    have = [b for b in BADGES if data["badges"][b]["supported"]]
    lines += ["**Badges the evidence supports for the whole paper:** " + (", ".join(have) or "none yet") + ".", ""]
    for b in BADGES:
        pb = data["badges"][b]
        held = pb["held_back_by"]
        lines.append(f"- {b}: " + ("supported; " if pb["supported"] else "not yet; ") + _sentence(t(pb["reason"]))
                     + (f" Held back by {', '.join(held)}." if held and b != "Available" else ""))
    lines += ["", "| claim | status | time to reproduce | verdict | margin | judged | " + " | ".join(BADGES) + " |",
              "|---|---|---|---|---|---|" + "---|" * len(BADGES)]
    for c in data["claims"]:
        marks = " | ".join("yes" if c["badges"][b]["supported"] else "no" for b in BADGES)
        lines.append(f"| {t(c['title'])} | {c['status']} | {_time_words(c['time_to_reproduce'][0])} | "
                     f"{t(c['wording'])} | {margin_words(c['margin'])} | {t(c['source'])} | {marks} |")
    lines += ["", "Repositories: " + "; ".join(f"[{r['url']}]({r['url']}) at `{r['commit'][:12]}`"
                                                for r in data["repositories"]) + "."
              + (f" Archived as DOI {p['artifact_doi']}." if p.get("artifact_doi") else
                 " No archival copy (DOI) is recorded."), ""]
    for c in data["claims"]:
        lines += [f"## {c['title']}", "", f"**Claim** ({', '.join(c['refs'])}). {c['statement']}", ""]
        have = [b for b in BADGES if c["badges"][b]["supported"]]
        lines += [f"**Status: {c['status']}.** Badges supported: {', '.join(have) or 'none yet'}. "
                  "Time to reproduce: " + "; ".join(f"{_time_words(e)} at the {e['scale']} scale ({e['from']})"
                                                     for e in c["time_to_reproduce"]) + ".", ""]
        if c["verdict"] == "not run":
            lines += [f"**Verdict: not run.** {_sentence(t(c['source_detail']))}", ""]
        else:
            lines += [f"**Verdict: {c['wording']}**" + (f" (margin {margin_words(c['margin'])})"
                                                        if c["margin"] is not None else "") + f". {_sentence(t(c['reason']))}",
                      "", f"**Source:** {t(c['source_detail'].rstrip('.'))}"
                      + (f" (scale: {t(c['scale'])})" if c["scale"] else "") + ".", ""]
        if c["evidence"]:
            lines.append("**Evidence toward the badges:**")
            for e in c["evidence"]:
                what = (f"Run {code(e['run'])} at the {t(e['scale'])} scale" if e["run"]
                        else "The authors' shipped outputs")
                lines.append(f"- {what}" + (" (the verdict above)" if e["judged"] else "")
                             + f": {t(e['wording'])}. Counts toward " + (e["counts_toward"] or "no badge")
                             + f": {_sentence(t(e['why']))}")
            lines.append("")
        if c["runs"]:
            lines += ["**Runs recorded:** " + "; ".join(f"{code(r['id'])} ({t(r['source'])}, {t(r['status'])}"
                                                         + (f", {t(r['scale'])} scale" if r["scale"] else "")
                                                         + (f", {t(r['verdict'])}" if r["verdict"] else "") + ")"
                                                         for r in c["runs"]) + ".", ""]
        if c["host_facts"]:
            f = {k: t(v) for k, v in c["host_facts"].items() if v not in (None, "")}  # probed: its words, as text
            said = [f.get("cpu_model") or "CPU unknown"] + [
                words.format(f[k]) for k, words in (("cpus", "{} CPUs"), ("smt", "SMT {}"), ("numa_nodes", "{} NUMA node(s)"),
                                                    ("mem_gib", "{} GiB"), ("kernel", "kernel {}"), ("os", "{}")) if k in f]
            lines += [f"**Host:** {t(c['host'])}: {', '.join(said)}.", ""]
        elif c["host"]:
            lines += [f"**Machine (described when imported):** {t(c['host'])}; its facts were not probed.", ""]
        if c["authors_machine"]:
            stated = ", ".join(f"{k}: {v}" for k, v in c["authors_machine"].items() if k != "source")
            lines += [f"**The authors' machine** ({c['authors_machine'].get('source', 'paper file')}): {stated}.", ""]
        if c["differences"]:
            lines += ["**Differs from the authors' machine:** " + "; ".join(map(t, c["differences"])) + ".", ""]
        for w in c["warnings"]:
            lines += [f"**Caution:** {_sentence(t(w))}", ""]
        for f in c.get("findings") or ():
            lines += [f"**Finding about the artifact:** {_sentence(t(f))}", ""]
        lines.append("**Badges:**")
        for b in BADGES:
            cb = c["badges"][b]
            lines.append(f"- {b}: " + (f"supported: {_sentence(t(cb['why']))}" if cb["supported"] else
                                       f"not yet: {_sentence(t(cb['why']))} Needs {_sentence(cb['needs'])}"))
        lines.append("")
    return "\n".join(lines)


def write_report(paper_id: str, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``<paper>-report.md`` and ``<paper>-report.json`` (validated against its schema) into ``out_dir``, and
    the directory's RO-Crate (``ro-crate-metadata.json``, describing every report in it: `reprobook.core.provenance`)."""
    import json
    data = paper_report(paper_id)
    validate_report(data)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / f"{paper_id}-report.md", out / f"{paper_id}-report.json"
    md.write_text(report_markdown(data))
    js.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    from reprobook.core.provenance import write_report_crate
    write_report_crate(out)   # the directory's RO-Crate: every report in it
    return md, js
