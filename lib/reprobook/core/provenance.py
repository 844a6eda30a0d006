"""A run's record (its manifest) and a report, written out as an RO-Crate: the research-software ecosystem's format.

Each crate is one ``ro-crate-metadata.json`` (JSON-LD, RO-Crate 1.1) beside the files it describes, conforming to the
Process Run Crate profile (`PROCESS_RUN`): one ``CreateAction`` whose ``instrument`` is the claim's notebook and
reprobook (with its version), whose ``object`` holds the parameters (``PropertyValue``), the artifact's repositories
at their commits and the run's generated inputs, and whose ``result`` holds every output file (with its sha256 and
size) and the verdict with each check's reason (``PropertyValue``). The hosts the run used are described with their
facts and mentioned by the crate's root. Repositories (Zenodo, WorkflowHub) and evaluators' tools read it; the
run's own manifest stays the one record reprobook works from, and the crate is made from it.

With redaction (`reprobook.core.redaction`) a crate names no host, user, machine description or local path: the
hosts are numbered (``host 1``), their identifying facts withheld, what the run says goes through the redactor, and
the files that name hosts by their nature (the manifest, the log, the executed notebook, the generated inputs) are
left out of the crate; the output files are described as they were fetched (their sha256 is the evidence).

The JSON-LD is written directly rather than through the ``rocrate`` library: the run directory already is the crate
(the library's model copies files into a crate of its own making), and every string of it must pass the redactor.
"""

from __future__ import annotations

import datetime as dt
import json
import mimetypes
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping
from urllib.parse import quote

CRATE = "ro-crate-metadata.json"
"""The crate's metadata file, at the top of the directory it describes."""
CONTEXT = "https://w3id.org/ro/crate/1.1/context"
RO_CRATE = "https://w3id.org/ro/crate/1.1"
PROCESS_RUN = "https://w3id.org/ro/wfrun/process/0.5"
"""The Process Run Crate profile's versioned permalink (its 0.5 builds on RO-Crate 1.1)."""
SHA256 = "https://w3id.org/ro/terms/workflow-run#sha256"
"""The Workflow Run terms' sha256 (RO-Crate 1.1's context has none: added to the crate's own context)."""
CONTEXT_TERMS = {"sha256": SHA256}
WITHHELD_FILES = ("manifest.json", "log.txt", "notebook.ipynb", "verdict.json")
"""A run's files that name its hosts or local paths by their nature: not part of a redacted crate."""

_STATUS = {"succeeded": "http://schema.org/CompletedActionStatus", "failed": "http://schema.org/FailedActionStatus",
           "cancelled": "http://schema.org/FailedActionStatus", "lost": "http://schema.org/FailedActionStatus",
           "refused": "http://schema.org/FailedActionStatus"}
"""A run's status as the action's ``actionStatus`` (the profile's two values, written as text as its examples do);
a run still under way has none."""
LICENSE = {"@id": "#license", "@type": "CreativeWork", "name": "licence as the artifact's authors state it",
           "description": "reprobook records no licence of its own for a run's files or a report: the outputs are "
                          "the artifact's, under the terms its authors give in its repositories (named in this "
                          "crate with their commits); ask them before publishing the files"}
"""RO-Crate 1.1 asks the root for a ``license``: here the honest one, in words."""


def _ref(entity_id: str) -> dict:
    return {"@id": entity_id}


def _file_id(path: str) -> str:
    """A data entity's @id: its path inside the crate, percent-encoded as RO-Crate asks (a space is ``%20``)."""
    return quote(path, safe="/")


def _value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, default=str)


def _skeleton(name: str, description: str, published: str, parts: list[str], action: dict,
              entities: list[dict]) -> dict:
    root = {"@id": "./", "@type": "Dataset", "name": name, "description": description, "datePublished": published,
            "conformsTo": _ref(PROCESS_RUN), "license": _ref(LICENSE["@id"]), "hasPart": [_ref(p) for p in parts], "mentions": [_ref(action["@id"])]}
    root["mentions"] += [_ref(e["@id"]) for e in entities if e.get("@type") == "Thing"]   # the hosts
    graph = [{"@id": CRATE, "@type": "CreativeWork", "about": _ref("./"), "conformsTo": _ref(RO_CRATE)},
             root,
             {"@id": PROCESS_RUN, "@type": "CreativeWork", "name": "Process Run Crate", "version": "0.5"},
             dict(LICENSE), action, *entities]
    return {"@context": [CONTEXT, dict(CONTEXT_TERMS)], "@graph": [_single(e) for e in graph]}


def _single(entity: dict) -> dict:
    """A property with one value written as that value, not a list of one (RO-Crate 1.1's JSON-LD recommendation)."""
    return {k: v[0] if isinstance(v, list) and len(v) == 1 and k != "@type" else v for k, v in entity.items()}


def _reprobook(version: str) -> dict:
    return {"@id": "#reprobook", "@type": "SoftwareApplication", "name": "reprobook", "softwareVersion": version,
            "description": "turns the artifact guides of systems papers into an executable book; runs a claim's "
                           "experiment, loads its outputs and judges them against the paper's numbers"}


def _when(value: Any) -> str | None:
    """An ISO 8601 time as a crate records it, or None when ``value`` is not one."""
    try:
        return dt.datetime.fromisoformat(str(value)).isoformat() if value else None
    except ValueError:
        return None


def _verdict_entities(verdict: Mapping | None, scrub: Callable) -> list[dict]:
    """The verdict and each check's, as ``PropertyValue``s (value: holds / fails / inconclusive / not run)."""
    if not verdict:
        return []
    out = [{"@id": "#verdict", "@type": "PropertyValue", "name": "verdict", "value": str(verdict["verdict"]),
            "description": scrub(str(verdict.get("reason") or ""))}]
    if verdict.get("wording") and verdict["wording"] != verdict["verdict"]:
        out[0]["alternateName"] = verdict["wording"]
    if isinstance(verdict.get("margin"), (int, float)):
        out[0]["maxValue"] = verdict["margin"]   # how far the worst check is from its bound (a fraction)
    for i, check in enumerate(verdict.get("checks") or (), 1):
        out.append({"@id": f"#check-{i}", "@type": "PropertyValue", "name": f"check: {scrub(str(check['what']))}",
                    "value": str(check["verdict"]), "description": scrub(str(check.get("reason") or ""))})
    return out


def _hosts(manifest: Mapping, redactor) -> list[dict]:
    """The hosts a run used, each with its probed (or given) facts; numbered instead of named under redaction."""
    facts: dict[str, Mapping] = {}
    for host, f in (manifest.get("host_facts") or {}).items():
        facts[str(host)] = f if isinstance(f, Mapping) else {}
    for host, v in (manifest.get("hosts") or {}).items() if isinstance(manifest.get("hosts"), Mapping) else ():
        if isinstance(v, Mapping) and isinstance(v.get("facts"), Mapping):
            facts.setdefault(str(host), v["facts"])
    if not facts and manifest.get("host"):
        facts[str(manifest["host"])] = {}
    out = []
    for i, (host, f) in enumerate(sorted(facts.items()), 1):
        imported = host == "imported"
        name = ("the machine the files came from" if imported and redactor else
                f"host {i}" if redactor else
                (manifest.get("imported") or {}).get("machine") or host if imported else host)
        shown = redactor.facts(dict(f)) if redactor else dict(f)
        props = [{"@id": f"#host-{i}-{quote(str(k), safe='')}", "@type": "PropertyValue", "name": str(k),
                  "value": _value(v)} for k, v in sorted(shown.items()) if v not in (None, "")]
        out.append({"@id": f"#host-{i}", "@type": "Thing", "name": name,
                    "description": "a machine the run used, with the facts reprobook recorded of it",
                    "additionalProperty": [_ref(p["@id"]) for p in props]})
        out += props
    return out


def run_crate(run, *, claim=None, redactor=None, verdict: Mapping | None = None) -> dict:
    """The RO-Crate of ``run`` (a `reprobook.core.runs.Run`), as a JSON-able dict; see the module.

    ``claim`` (its `reprobook.core.config.Claim`) adds the claim's title and statement and the notebook's path;
    ``redactor`` (`reprobook.core.redaction.Redactor`) withholds hosts, users and paths. Only files present in the
    run directory are described (a crate's data entities must be there). The verdict is ``verdict`` (a
    `reprobook.core.checks.ClaimVerdict` as a dict), else the one the notebook recorded (``verdict.json``), else the
    manifest's word alone.
    """
    m = run.manifest
    scrub = redactor if redactor is not None else (lambda v: v)
    key = f"{m.get('paper')}/{m.get('claim')}"
    title = claim.title if claim is not None else key
    version = str(m.get("reprobook_version") or "")
    parts: list[str] = []
    entities: list[dict] = []

    def data_file(path: str, **props) -> str | None:
        # only a file inside the run's directory (a crate's data entity is a path in it; an export packs it)
        inside = isinstance(path, str) and path and not Path(path).is_absolute() and ".." not in Path(path).parts
        if not inside or not (run.path / path).is_file():
            return None
        props = {k: v for k, v in props.items() if v not in (None, "")}
        fid = _file_id(path)
        parts.append(fid)
        fmt = mimetypes.guess_type(path)[0] or ("text/plain" if path.endswith((".log", ".out", ".txt")) else
                                                "application/octet-stream")
        entities.append({"@id": fid, "@type": "File", "name": path, "encodingFormat": fmt, **props})
        return fid

    results: list[str] = []
    for rec in m.get("files") or ():
        if rec.get("unpacked"):   # an archive unpacked beside itself: its files stand for it
            continue
        what = f"output {rec.get('output')} of {key}" + (f", from the archive {rec['archive']['name']}"
                                                         if isinstance(rec.get("archive"), Mapping) else
                                                         f", from the archive {rec['archive']}"
                                                         if rec.get("archive") else "")
        fid = data_file(rec.get("path"), description=what, contentSize=str(rec.get("size", "")),
                        sha256=rec.get("sha256"))
        if fid:
            results.append(fid)
    objects: list[str] = []
    for name, value in sorted((m.get("parameters") or {}).items()):
        pid = f"#parameter-{quote(str(name), safe='')}"
        entities.append({"@id": pid, "@type": "PropertyValue", "name": str(name), "value": scrub(_value(value))})
        objects.append(pid)
    commits = {str(c) for c in (m.get("checkouts") or {}).values()}
    for name, repo in sorted((m.get("artifacts") or {}).items()):
        if not isinstance(repo, Mapping):
            continue
        rid = f"#repository-{quote(str(name), safe='')}"
        url = scrub(str(repo.get("url", "")))
        entities.append({"@id": rid, "@type": ["CreativeWork", "SoftwareSourceCode"], "name": str(name),
                         "codeRepository": url, "url": url, "version": str(repo.get("commit", "")),
                         "description": "the artifact's repository at the commit the run checked out"
                         + (" (the host reported that commit)" if str(repo.get("commit")) in commits else "")})
        objects.append(rid)
    if redactor is None:
        for name, rec in sorted((m.get("inputs") or {}).items()):
            fid = data_file(rec.get("path"), description=f"an input of the run ({name})" + (
                f", generated from {rec['source']}" if rec.get("source") else ""),
                contentSize=str(rec.get("size", "")), sha256=rec.get("sha256"))
            if fid:
                objects.append(fid)
    verdict = verdict or _read_json(run.path / "verdict.json")
    if not isinstance(verdict, Mapping) or "verdict" not in verdict:
        verdict = None
    if verdict is None and m.get("verdict"):
        verdict = {"verdict": m["verdict"], "reason": "", "margin": m.get("margin")}
    judged = _verdict_entities(verdict, scrub)
    entities += judged
    results += [e["@id"] for e in judged]
    if redactor is None:
        for extra, what in (("manifest.json", "reprobook's record of the run (the source of this crate)"),
                            ("log.txt", "the run's log, as fetched from its host"),
                            ("notebook.ipynb", "the claim's notebook as executed on the run's outputs"),
                            ("verdict.json", "the verdict the notebook recorded")):
            fid = data_file(extra, description=what)
            if fid and extra in ("notebook.ipynb", "verdict.json"):
                results.append(fid)
    hosts = _hosts(m, redactor)
    notebook = f"notebooks/{m.get('paper')}/{m.get('claim')}.ipynb"
    entities += [_reprobook(version),
                 {"@id": "#notebook", "@type": "SoftwareSourceCode", "name": notebook, "programmingLanguage": "Python",
                  "version": version, "description": f"the notebook of claim {key}: it loads the run's outputs "
                                                     f"and states the verdict"},
                 *hosts]
    imported = m.get("imported") if isinstance(m.get("imported"), Mapping) else None
    status = str(m.get("status") or "unknown")
    said = (f"Run {run.id} of claim {key}" + (f" ({title})" if title != key else "")
            + (f", imported by hand from {scrub(str(imported.get('machine')))}" if imported else
               f", source {m.get('source')}") + (f", at the {m['scale']} scale" if m.get("scale") else "")
            + f"; status {status}" + (f"; verdict: {verdict['verdict']}" if verdict else "; not judged yet") + ".")
    action = {"@id": "#run", "@type": "CreateAction", "name": f"run {run.id}", "description": said,
              "instrument": [_ref("#notebook"), _ref("#reprobook")],
              "object": [_ref(o) for o in objects], "result": [_ref(r) for r in results]}
    start = _when(m.get("started") or m.get("launched") or (imported or {}).get("at") or m.get("created"))
    end = _when(m.get("ended"))
    if start:
        action["startTime"] = start
    if end:
        action["endTime"] = end
    if status in _STATUS:
        action["actionStatus"] = _STATUS[status]
        if _STATUS[status].endswith("FailedActionStatus"):
            action["error"] = scrub(str(m.get("error") or m.get("fetch_error") or f"the run {status}"))
    if imported and imported.get("by") and redactor is None:
        entities.append({"@id": "#importer", "@type": "Person", "name": str(imported["by"])})
        action["agent"] = _ref("#importer")
    statement = claim.statement if claim is not None else ""
    return _skeleton(f"{title}: run {run.id}", scrub(" ".join(x for x in (said, statement) if x)),
                     end or start or _now(), parts, action, entities)


def write_run_crate(run, **kwargs) -> Path:
    """Write `run_crate` into the run's directory as ``ro-crate-metadata.json`` (whole or not at all)."""
    from reprobook.core.runs import write_atomic
    path = run.path / CRATE
    write_atomic(path, json.dumps(run_crate(run, **kwargs), indent=1, ensure_ascii=False) + "\n", durable=False)
    return path


def write_for(project, run, *, verdict: Mapping | None = None) -> Path:
    """Write ``run``'s crate as ``project`` has it published: redacted when its settings say so (`write_run_crate`)."""
    from reprobook.core.redaction import known_names
    from reprobook.core.runs import RunStore
    from reprobook.errors import ConfigError
    redactor = known_names(project, RunStore(project.settings.runs_dir)) if project.settings.redact_hosts else None
    try:
        claim = project.claim(f"{run.manifest.get('paper')}/{run.manifest.get('claim')}")
    except ConfigError:   # a run of a claim the paper file no longer has: described by its manifest alone
        claim = None
    return write_run_crate(run, claim=claim, redactor=redactor, verdict=verdict)


def report_crate(reports: Iterable[tuple[str, str, Mapping]]) -> dict:
    """The RO-Crate of a directory of evaluator's reports: ``reports`` are (Markdown file, JSON file, report data)
    triples, the files named relative to the directory. Each report is one ``CreateAction`` of reprobook whose
    ``object`` holds the runs judged and the artifact's repositories, and whose ``result`` holds its two files and
    per claim its verdict, status, time to reproduce and ACM badges (``PropertyValue``)."""
    parts, entities, actions, names, newest, citations = [], [], [], [], "", []
    for md, js, data in reports:
        paper = data["paper"]["id"]
        names.append(data["paper"]["title"])
        newest = max(newest, str(data["generated"]))
        files = []
        for path, fmt, what in ((md, "text/markdown", "the evaluator's report, for a review form"),
                                (js, "application/json", "the evaluator's report as data (reprobook's report schema)")):
            fid = _file_id(path)
            parts.append(fid)
            files.append(fid)
            entities.append({"@id": fid, "@type": "File", "name": path, "encodingFormat": fmt, "description": what})
        objects = []
        cited = data["paper"].get("citation")
        if cited:   # the paper the report is about, as its paper file says to cite it
            pid = f"https://doi.org/{cited['doi']}" if cited.get("doi") else f"#paper-{paper}"
            entities.append({"@id": pid, "@type": "ScholarlyArticle",
                             "name": cited.get("title") or data["paper"]["title"],
                             "creditText": ", ".join(cited["authors"]) + f": {cited.get('title') or data['paper']['title']}"
                                           f". {cited.get('venue') or data['paper']['venue']}"
                                           + (f", {cited['year']}" if cited.get("year") else "") + ".",
                             **({"datePublished": str(cited["year"])} if cited.get("year") else {}),
                             **({"url": cited["url"]} if cited.get("url") else {})})
            citations.append(pid)
        for repo in data.get("repositories") or ():
            rid = f"#{paper}-repository-{quote(repo['name'], safe='')}"
            entities.append({"@id": rid, "@type": ["CreativeWork", "SoftwareSourceCode"], "name": repo["name"],
                             "codeRepository": repo["url"], "url": repo["url"], "version": repo["commit"]})
            objects.append(rid)
        results = list(files)
        for c in data["claims"]:
            cid = f"#{c['claim']}"
            badges = ", ".join(b for b, v in c["badges"].items() if v["supported"]) or "none yet"
            status = c.get("status") or c["verdict"]
            minutes = c.get("time_to_reproduce_minutes")
            entities.append({"@id": cid, "@type": "PropertyValue", "name": f"claim {c['claim']}: {c['title']}",
                             "value": c["verdict"], "alternateName": c["wording"], "description": (
                                 f"{c['reason']} Status: {status}."
                                 + (f" Estimated time to reproduce: {minutes:g} minutes." if minutes else "")
                                 + f" ACM badges supported: {badges}.")})
            results.append(cid)
            if c.get("judged_run"):
                rid = f"#run-{quote(c['judged_run'], safe='')}"
                if not any(e["@id"] == rid for e in entities):
                    entities.append({"@id": rid, "@type": "PropertyValue", "name": "run judged",
                                     "value": c["judged_run"], "description": f"the run judged for {c['claim']}"})
                objects.append(rid)
        actions.append({"@id": f"#report-{paper}", "@type": "CreateAction",
                        "name": f"the evaluator's report of {paper}",
                        "description": f"reprobook judged every claim of {data['paper']['title']} "
                                       f"({data['paper']['venue']}) and weighed the ACM badges. {data['stamp']}",
                        "endTime": _when(data["generated"]) or data["generated"],
                        "instrument": _ref("#reprobook"), "actionStatus": _STATUS["succeeded"],
                        "object": [_ref(o) for o in objects], "result": [_ref(r) for r in results]})
        version = str(data["reprobook"])
    if not actions:
        raise ValueError("no report to describe")
    crate = _skeleton("Evaluator's reports: " + "; ".join(names),
                      "reprobook's evaluator's reports: per claim the verdict, its evidence and the ACM badges it "
                      "supports", newest, parts, actions[0], [*actions[1:], _reprobook(version), *entities])
    crate["@graph"][1] = _single({**crate["@graph"][1], "mentions": [_ref(a["@id"]) for a in actions],
                                  **({"citation": [_ref(c) for c in citations]} if citations else {})})
    return crate


def write_report_crate(directory: Path) -> Path:
    """Write the crate of every report in ``directory`` (``*-report.json`` with its ``.md``) as its metadata file."""
    from reprobook.core.runs import write_atomic
    found = []
    for js in sorted(Path(directory).glob("*-report.json")):
        md = js.with_suffix(".md")
        data = _read_json(js)
        if isinstance(data, dict) and data.get("report") == "reprobook evaluator's report" and md.is_file():
            found.append((md.name, js.name, data))
    path = Path(directory) / CRATE
    write_atomic(path, json.dumps(report_crate(found), indent=1, ensure_ascii=False) + "\n", durable=False)
    return path


def pack(directory: Path, crate: Mapping, out: Path) -> Path:
    """Write ``out``, a zip of ``crate`` (as ``ro-crate-metadata.json`` at its top) and every data entity it names,
    read from ``directory``: the form repositories (Zenodo, WorkflowHub) take a crate in. Written aside and renamed
    into place, so a failure leaves no half zip."""
    import os
    import tempfile
    import zipfile
    from urllib.parse import unquote
    root = next(e for e in crate["@graph"] if e["@id"] == "./")
    parts = root.get("hasPart") or []
    parts = [parts] if isinstance(parts, dict) else parts
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
            z.writestr(CRATE, json.dumps(crate, indent=1, ensure_ascii=False) + "\n")
            for part in parts:
                name = unquote(part["@id"])
                z.write(Path(directory) / name, name)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out


def export_run(project, run, out: Path) -> Path:
    """``reprobook export RUN -o FILE.zip``: the run's crate as ``project`` publishes it (redacted when its settings
    say so: then the manifest, log, notebook and generated inputs stay out), with the files it describes."""
    from reprobook.core.redaction import known_names
    from reprobook.core.runs import RunStore
    from reprobook.errors import ConfigError
    redactor = known_names(project, RunStore(project.settings.runs_dir)) if project.settings.redact_hosts else None
    try:
        claim = project.claim(f"{run.manifest.get('paper')}/{run.manifest.get('claim')}")
    except ConfigError:
        claim = None
    return pack(run.path, run_crate(run, claim=claim, redactor=redactor), out)


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
