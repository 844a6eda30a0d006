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
"""The ACM artifact badges a report suggests, lowest first."""


def suggest_badge(claim, outputs, verdict, *, public: bool) -> tuple[str | None, str]:
    """The ACM badge the evidence for one claim supports, and why (what would earn the next one).

    Only a run of the experiment counts toward *Functional* (it ran, whatever its verdict or
    scale) and *Reproduced* (it ran at the paper's scale on a host meeting the claim's
    requirements, and the claim holds). Judging the authors' shipped outputs shows that the
    published numbers match the authors' own files, which is neither: at most *Available*.
    """
    from reprobook.core.checks import Verdict
    available = ("the artifact's repositories are public and pinned to commits" if public else "")
    kind = outputs.kind if outputs.available else "none"
    if kind in ("none", "reference"):
        if kind == "reference":
            shows = {Verdict.HOLDS: "that shows the published numbers match the authors' own files",
                     Verdict.FAILS: "the authors' own files do not support the published numbers",
                     }.get(verdict.verdict, "the authors' own files could not settle the published numbers")
            why = (f"only the authors' shipped outputs were judged ({verdict.says}): {shows}, which says nothing of "
                   f"whether the experiment runs or reproduces; a run of the experiment is needed for Functional or "
                   f"Reproduced")
        else:
            why = ("no run of the experiment is recorded, and no shipped outputs were judged"
                   + (" (they could not be obtained)" if claim.reference else " (the authors ship none)"))
        return ("Available", f"{available}; {why}") if public else (None, why)
    ran = f"run {outputs.run_id}" + (" (imported: done by hand)" if kind == "import" else "")
    scale = outputs.scale
    if scale and scale != "paper":
        return "Functional", (f"{ran} ran the artifact end to end at the {scale} scale; a run at a scale other than "
                              f"the paper's counts toward Functional, never Reproduced")
    if outputs.shortfalls:
        return "Functional", (f"{ran} ran on a host short of the claim's requirements ({'; '.join(outputs.shortfalls)}), "
                              f"so its numbers are not comparable with the paper's")
    if verdict.verdict is not Verdict.HOLDS:
        return "Functional", f"{ran} ran, but the claim {verdict.says}: {verdict.reason}"
    return "Reproduced", f"{ran} at the paper's scale: the claim holds ({verdict.reason})"


def _claim_entry(project_, claim, store) -> dict:
    from reprobook.core.requirements import differences
    ev = evaluate(claim)
    o, v = ev.outputs, ev.verdict
    paper = project_.paper(claim.paper)
    public = all(r.url.startswith("https://") for r in paper.repositories_for(claim))
    badge, why = suggest_badge(claim, o, v, public=public)
    run = store.load(o.run_id) if o.run_id else None
    facts = dict(o.host_facts) or None
    host = run.manifest.get("host") if run is not None else None
    if run is not None and run.manifest.get("source") == "import":
        host = (run.manifest.get("imported") or {}).get("machine")
    return {
        "claim": claim.key, "title": claim.title, "statement": claim.statement, "refs": list(claim.refs),
        "verdict": str(v.verdict), "wording": v.says, "margin": v.margin if v.margin_words != "n/a" else None,
        "reason": v.reason, "source": o.source if o.available else "none",
        "source_detail": o.label if o.available else o.detail,
        "scale": o.scale if o.available else None,
        "judged_run": o.run_id,
        "runs": [{"id": r.id, "source": r.manifest.get("source"), "host": r.manifest.get("host"),
                  "status": r.status, "verdict": r.manifest.get("verdict"), "scale": r.manifest.get("scale"),
                  "created": r.manifest.get("created")} for r in store.runs(claim)],
        "host": host, "host_facts": facts,
        "authors_machine": dict(claim.authors_machine),
        "differences": differences(facts, claim.authors_machine) if facts else [],
        "requirement_shortfalls": list(o.shortfalls),
        "warnings": list(v.warnings),
        "findings": list(v.findings),
        "checks": [{"what": c.what, "verdict": str(c.verdict), "reason": c.reason, "judged_on": c.judged_on}
                   for c in v.checks],
        "badge": {"suggested": badge, "reason": why},
    }


def paper_report(paper_id: str) -> dict:
    """The evaluator's report of one paper, as a JSON-able dict valid against ``schemas/report.json``.

    Per claim: the verdict (as worded on its page), margin, source, the run judged and every run
    recorded, the host's facts and how they differ from the authors' machine as the paper file
    states it, and the ACM badge the evidence supports with the reason (`suggest_badge`). For the
    paper: the badge every claim supports.
    """
    import datetime as dt

    from reprobook import __version__
    from reprobook.core.runs import RunStore
    proj = project()
    paper = proj.paper(paper_id)
    store = RunStore(proj.settings.runs_dir)
    claims = [_claim_entry(proj, c, store) for c in paper.claims.values()]
    rank = {b: i for i, b in enumerate(BADGES)}
    lowest = min(claims, key=lambda c: rank.get(c["badge"]["suggested"], -1)) if claims else None
    suggested = lowest["badge"]["suggested"] if lowest else None
    held_back = [c["claim"] for c in claims if c["badge"]["suggested"] == suggested] if suggested != "Reproduced" else []
    data = {
        "report": "reprobook evaluator's report", "version": 1,
        "generated": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "reprobook": __version__, "stamp": build_stamp(proj.root),
        "paper": {"id": paper.id, "title": paper.title, "venue": paper.venue, "guide": paper.guide},
        "repositories": [{"name": r.name, "url": r.url, "commit": r.commit} for r in paper.repositories.values()],
        "claims": claims,
        "verdicts": {k: sum(c["verdict"] == k for c in claims) for k in ("holds", "fails", "inconclusive", "not run")},
        "findings": sum(len(c["findings"]) for c in claims),
        "badge": {"suggested": suggested,
                  "reason": ("every claim supports it" if suggested == "Reproduced" else
                             f"the badge every claim supports; held at {suggested or 'none'} by "
                             + ", ".join(held_back)) if claims else "the paper has no claims"},
    }
    return redacted(data, proj, store) if proj.settings.redact_hosts else data


WITHHELD = "(withheld)"
_NOT_SECRET = {"local", "localhost", "root", "none", "unknown"}


def _sensitive(proj, store) -> list[str]:
    """What a redacted report must not contain: the hosts and users of hosts.yaml and of every recorded run (as
    launched and as probed), the machine descriptions of imported runs, and the local directories (project, run
    store, home). Longest first, so that a name inside another is replaced with it."""
    from reprobook.errors import ConfigError
    found = {str(proj.root), str(Path(proj.settings.runs_dir).resolve()), str(proj.settings.runs_dir), str(Path.home())}
    for spec in proj.hosts.hosts.values():
        if spec.is_local:
            continue
        try:
            user, host, _ = spec.target()
        except ConfigError:
            user, host = None, spec.ssh
        found |= {spec.name, spec.ssh, host, user or ""}
    for run in store.runs():
        m = run.manifest
        found |= {str(m.get("host") or ""), str((m.get("imported") or {}).get("machine") or "")}
        for facts in (m.get("host_facts") or {}).values():
            if isinstance(facts, dict):
                found |= {str(facts.get("hostname") or ""), str(facts.get("user") or "")}
    return sorted((f for f in found if len(f) >= 3 and f.lower() not in _NOT_SECRET), key=len, reverse=True)


def redacted(data: dict, proj, store) -> dict:
    """The report ``data`` as redaction (``REPROBOOK_REDACT_HOSTS``) wants it: no host, user, machine description
    or local path, in any field (the hosts and the facts naming them withheld, and any string mentioning one)."""
    secrets = _sensitive(proj, store)

    def scrub(value):
        if isinstance(value, str):
            for secret in secrets:
                value = value.replace(secret, WITHHELD)
            return value
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items()}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value
    out = scrub(data)
    for c in out["claims"]:
        c["host"] = WITHHELD if c.get("host") else c.get("host")
        for r in c["runs"]:
            r["host"] = WITHHELD if r.get("host") else r.get("host")
        if c.get("host_facts"):
            c["host_facts"] = {k: (WITHHELD if k in ("hostname", "user") and v else v) for k, v in c["host_facts"].items()}
    return out


def validate_report(data: dict) -> None:
    """Raise `jsonschema.ValidationError` unless ``data`` is a report as ``schemas/report.json`` describes it."""
    import json

    import jsonschema
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))


def report_markdown(data: dict) -> str:
    """The report as Markdown, for pasting into a review form.

    What comes from runs (sources, hosts, facts, reasons, warnings) is written as text (`reprobook.book.text`):
    a review form renders Markdown too, and a run's strings must not become links, images or markup there.
    """
    from reprobook.book.text import code, text as t
    p = data["paper"]
    lines = [f"# Artifact evaluation: {p['title']}", "", f"*{p['venue']}.* {data['stamp']}", "",
             f"**Suggested badge for the paper: {data['badge']['suggested'] or 'none'}** — {data['badge']['reason']}.",
             "", "| claim | verdict | margin | source | suggested badge |", "|---|---|---|---|---|"]
    for c in data["claims"]:
        margin = margin_words(c["margin"])
        lines.append(f"| {c['title']} | {c['wording']} | {margin} | {t(c['source'])} | {c['badge']['suggested'] or '—'} |")
    lines += ["", "Repositories: " + "; ".join(f"[{r['url']}]({r['url']}) at `{r['commit'][:12]}`"
                                                for r in data["repositories"]) + ".", ""]
    for c in data["claims"]:
        lines += [f"## {c['title']}", "", f"**Claim** ({', '.join(c['refs'])}). {c['statement']}", ""]
        if c["verdict"] == "not run":
            lines += [f"**Verdict: not run.** {t(c['source_detail'])}", ""]
        else:
            lines += [f"**Verdict: {c['wording']}**" + (f" (margin {margin_words(c['margin'])})"
                                                        if c["margin"] is not None else "") + f". {t(c['reason'])}", "",
                      f"**Source:** {t(c['source_detail'].rstrip('.'))}" + (f" (scale: {t(c['scale'])})" if c["scale"] else "")
                      + ".", ""]
        if c["runs"]:
            lines += ["**Runs recorded:** " + "; ".join(f"{code(r['id'])} ({t(r['source'])}, {t(r['status'])}"
                                                         + (f", {t(r['verdict'])}" if r["verdict"] else "") + ")"
                                                         for r in c["runs"]) + ".", ""]
        if c["host_facts"]:
            f = {k: t(v) for k, v in c["host_facts"].items()}  # probed on the host: its words, as text
            lines += [f"**Host:** {t(c['host'])}: {f.get('cpu_model') or 'CPU unknown'}, {f.get('cpus')} CPUs, SMT "
                      f"{f.get('smt')}, {f.get('numa_nodes')} NUMA node(s), {f.get('mem_gib')} GiB, kernel "
                      f"{f.get('kernel')}, {f.get('os')}.", ""]
        elif c["host"]:
            lines += [f"**Machine (described when imported):** {t(c['host'])}; its facts were not probed.", ""]
        if c["authors_machine"]:
            stated = ", ".join(f"{k}: {v}" for k, v in c["authors_machine"].items() if k != "source")
            lines += [f"**The authors' machine** ({c['authors_machine'].get('source', 'paper file')}): {stated}.", ""]
        if c["differences"]:
            lines += ["**Differs from the authors' machine:** " + "; ".join(map(t, c["differences"])) + ".", ""]
        for w in c["warnings"]:
            lines += [f"**Caution:** {t(w)}", ""]
        for f in c.get("findings") or ():
            lines += [f"**Finding about the artifact:** {t(f)}", ""]
        lines += [f"**Suggested badge: {c['badge']['suggested'] or 'none'}** — {t(c['badge']['reason'])}.", ""]
    return "\n".join(lines)


def write_report(paper_id: str, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``<paper>-report.md`` and ``<paper>-report.json`` (validated against its schema) into ``out_dir``."""
    import json
    data = paper_report(paper_id)
    validate_report(data)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / f"{paper_id}-report.md", out / f"{paper_id}-report.json"
    md.write_text(report_markdown(data))
    js.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return md, js
