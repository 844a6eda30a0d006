"""The ``reprobook`` command: list claims, run them, follow runs, check hosts, build the book."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

from reprobook.errors import ReprobookError
from reprobook.formats.terminal import printable  # every line that carries run or host data goes through it

EXIT_FAILS, EXIT_ERROR, EXIT_INCONCLUSIVE, EXIT_NOT_RUN = 1, 2, 3, 4
_EXIT = {"holds": 0, "fails": EXIT_FAILS, "inconclusive": EXIT_INCONCLUSIVE, "not run": EXIT_NOT_RUN}


def _project():
    from reprobook.core.config import load_project
    return load_project()


def _print_table(rows: list[dict], cols: list[str]) -> None:
    if not rows:
        print("(none)")
        return
    rows = [{c: printable(r.get(c, "")) for c in cols} for r in rows]
    width = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in cols}
    print("  ".join(c.ljust(width[c]) for c in cols))
    for r in rows:
        print("  ".join(str(r.get(c, "")).ljust(width[c]) for c in cols))


def _print_json(rows: list[dict]) -> None:
    """``rows`` as one JSON array on stdout (the fields each command's --help documents).

    Characters a terminal would obey (C1 controls, bidi overrides; json escapes the C0 ones itself) are written as
    JSON escapes: the same JSON, read by a program, and text on a terminal."""
    text = json.dumps(rows, indent=1, ensure_ascii=False)
    print("".join(c if c.isprintable() or c == "\n" else json.dumps(c)[1:-1] for c in text))


CLAIMS_JSON = ("claims --json prints one JSON array, an object per claim with the fields: claim (paper/claim), "
               "paper, id, title, refs (the paper's sections and figures, a list of strings), machine (what a host "
               "needs, a list of strings; empty: any), roles (role name to the number of hosts in words; empty: one "
               "host), expected_minutes (of a live run; null when the guide gives none) and authors_outputs (true "
               "when the authors' outputs can be checked).")
RUNS_JSON = ("runs --json prints one JSON array, an object per run, newest first, with the fields: id, claim "
             "(paper/claim), source (live, import, or the source evaluated: reference, a run id), host (null when none), status "
             "(e.g. succeeded, failed, running), verdict (holds, fails, inconclusive, not run; null before one), "
             "parameters (name to value) and created (ISO 8601, UTC).")


# --------------------------------------------------------------------------- commands

def _width() -> int:
    """The columns a listing fits in: the terminal's, else $COLUMNS, else 100 (a pipe or a file); at least 40."""
    import shutil
    return max(shutil.get_terminal_size((100, 24)).columns, 40)


def _cell(value) -> str:
    """``value`` on one line of a terminal: control characters shown (`printable`), whitespace runs as one space."""
    return " ".join(printable("" if value is None else str(value), lines=True).split())


def _trim(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(width - 1, 0)].rstrip() + "…"


def _fit(rows: list[dict], cols: list[str], width: int, *, flexible: dict, drop=()):
    """The columns of ``cols`` to show in ``width`` and the width of each, or ``None`` when they cannot fit.

    A column keeps its natural width unless it is ``flexible`` (column: (least width, weight)): those are cut to no
    less than their least width and share what is left in proportion to their weights; when even that is too
    wide, the columns of ``drop`` go, first one first."""
    natural = {c: max([len(c)] + [len(r[c]) for r in rows]) for c in cols}
    shown, drop = list(cols), list(drop)

    def needs(c):
        return min(natural[c], flexible[c][0]) if c in flexible else natural[c]
    while sum(needs(c) for c in shown) + 2 * (len(shown) - 1) > width:
        if not drop:
            return None
        shown.remove(drop.pop(0))
    widths = {c: needs(c) for c in shown}
    room = width - 2 * (len(shown) - 1) - sum(widths.values())
    flex = sorted((c for c in shown if c in flexible), key=lambda c: (natural[c] - widths[c]) / flexible[c][1])
    weight = sum(flexible[c][1] for c in flex)
    for c in flex:   # those that want less than their share first: what they leave goes to the others
        more = min(natural[c] - widths[c], room * flexible[c][1] // weight)
        widths[c] += more
        room, weight = room - more, weight - flexible[c][1]
    return shown, widths


def _print_fitted(rows: list[dict], cols: list[str], width: int, *, flexible: dict, drop=()) -> bool | None:
    """``rows`` as a table no wider than ``width``: long cells cut (``…``) and the columns of ``drop`` left out when
    they do not fit. Returns whether anything was cut, or ``None`` (nothing printed) when even that is too wide."""
    rows = [{c: _cell(r.get(c, "")) for c in cols} for r in rows]
    fitted = _fit(rows, cols, width, flexible=flexible, drop=drop)
    if fitted is None:
        return None
    shown, widths = fitted
    for r in [{c: c for c in cols}] + rows:
        print("  ".join(_trim(r[c], widths[c]).ljust(widths[c]) for c in shown).rstrip())
    return shown != cols or any(len(r[c]) > widths[c] for r in rows for c in shown)


def _print_records(rows: list[dict], cols: list[str], width: int) -> None:
    """One record per row: the first column on a line of its own, then each other field wrapped to ``width``."""
    import textwrap
    label = max(len(c) for c in cols[1:]) + 4
    for i, r in enumerate(rows):
        if i:
            print()
        print("\n".join(textwrap.wrap(_cell(r[cols[0]]), width, break_on_hyphens=False)))
        for c in cols[1:]:
            print("\n".join(textwrap.wrap(_cell(r[c]) or "-", width, initial_indent=f"  {c}:".ljust(label),
                                          subsequent_indent=" " * label, break_on_hyphens=False)))


def cmd_claims(args) -> int:
    project = _project()
    claims = [c for c in project.all_claims() if not args.paper or c.paper == args.paper]
    if args.json:
        _print_json([{"claim": c.key, "paper": c.paper, "id": c.id, "title": c.title, "refs": list(c.refs),
                      "machine": list(c.requires.describe()),
                      "roles": {r.name: r.count_words for r in c.roles.values()},
                      "expected_minutes": c.expected_minutes or None,
                      "authors_outputs": bool(c.reference)} for c in claims])
        return 0
    rows = [{"claim": c.key, "title": c.title, "paper refs": ", ".join(c.refs),
             # a cluster's roles first: cut to fit, the cell still says how many hosts the claim takes
             "machine": "; ".join((["roles: " + ", ".join(f"{r.name} ({r.count_words})" for r in c.roles.values())]
                                   if c.roles else []) + list(c.requires.describe())) or "any",
             "live run": c.expected_time or "-",
             "authors' outputs": "yes" if c.reference else "no"} for c in claims]
    cols = ["claim", "title", "paper refs", "machine", "live run", "authors' outputs"]
    width = _width()
    if not rows:
        print("(none)")
        return 0
    if args.verbose:
        _print_records(rows, cols, width)
        return 0
    # "about 22 minutes" as "~22 minutes" in the table: the column is a third narrower
    table = [{**r, "live run": "~" + r["live run"][len("about "):] if r["live run"].startswith("about ")
              else r["live run"]} for r in rows]
    cut = _print_fitted(table, cols, width, flexible={"title": (30, 3), "paper refs": (20, 1), "machine": (24, 2)},
                        drop=("paper refs", "machine", "authors' outputs"))
    if cut is None:   # narrower than a table can be: each claim on lines of its own
        _print_records(rows, cols, width)
    elif cut:
        import textwrap
        print("\n".join(textwrap.wrap(f"(cut to {width} columns: `reprobook claims -v` shows every field in full)",
                                      width)))
    return 0


def _notebook_for(project, claim) -> Path:
    nb = project.root / "notebooks" / claim.paper / f"{claim.id}.ipynb"
    if not nb.is_file():
        raise ReprobookError(f"no notebook for {claim.key} at {nb}")
    return nb


def _execute(project, claim, run, source: str, params: dict, quiet: bool) -> dict:
    """papermill the claim's notebook into the run directory and return the verdict it recorded.

    An error inside the notebook becomes one clear message (the exception's own words, and where the
    executed notebook with its traceback is); the run is never left in a transient status.
    """
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError
    verdict_file = run.path / "verdict.json"
    verdict_file.unlink(missing_ok=True)
    os.environ["REPROBOOK_VERDICT_FILE"] = str(verdict_file)
    os.environ.setdefault("REPROBOOK_ROOT", str(project.root))
    out = run.path / "notebook.ipynb"
    from jupyter_client.manager import KernelManager
    # the kernel's channels encrypted (CurveZMQ), which also keeps its plain-TCP warning off the terminal
    from reprobook.book.kernels import local_channels, transport_encryption
    km = KernelManager(kernel_name="python3", transport_encryption=transport_encryption())
    channels = tempfile.TemporaryDirectory(prefix="reprobook-kernel-")
    local_channels(km, channels.name)   # Unix sockets: no port for another process to take first
    try:
        pm.execute_notebook(str(_notebook_for(project, claim)), str(out), parameters={"source": source, **params},
                            cwd=str(project.root / "notebooks" / claim.paper), progress_bar=not quiet,
                            log_output=False, kernel_name="python3", km=km)
    except PapermillExecutionError as exc:
        ours = exc.ename in _OUR_ERRORS
        _settle(run, error=f"{exc.ename}: {exc.evalue}")
        raise ReprobookError((exc.evalue if ours else f"the notebook failed: {exc.ename}: {exc.evalue}")
                             + f"\n(the executed notebook, with the full traceback, is {out})") from None
    except RuntimeError as exc:
        # jupyter_client's words when the kernel never answered, or exited before it did
        if "Kernel didn't respond" not in str(exc) and "Kernel died" not in str(exc):
            _settle(run, error=f"RuntimeError: {exc}")
            raise
        _settle(run, error=str(exc))
        check = ("" if km.transport == "ipc" else
                 " It talks to this process over the loopback interface (127.0.0.1): check that it is up.")
        raise ReprobookError(f"the notebook's Python kernel did not start: {exc}.{check} Check that the kernel's "
                             f"Python starts: python3 -m ipykernel --version.") from None
    except BaseException:
        _settle(run, error="interrupted while the notebook ran")
        raise
    finally:
        os.environ.pop("REPROBOOK_VERDICT_FILE", None)
        if km.has_kernel:  # a kernel manager handed to papermill is ours to shut down
            km.shutdown_kernel(now=True)
        channels.cleanup()
    if not verdict_file.is_file():
        _settle(run, error="the notebook recorded no verdict")
        raise ReprobookError(f"the notebook ran but recorded no verdict (see {out})")
    verdict = json.loads(verdict_file.read_text())
    run.update(verdict=verdict["verdict"], margin=verdict["margin"], notebook=out.name,
               outputs_source=verdict.get("source_id"))
    from reprobook.core.provenance import write_for
    write_for(project, run, verdict=verdict)   # the run's RO-Crate, with its verdict
    return verdict


_OUR_ERRORS = {"ReprobookError", "ConfigError", "TestbedError", "HostUnreachable", "AuthenticationFailed",
               "HostKeyError", "HostBusy", "RequirementsNotMet", "ExperimentError", "RunLost", "OutputError",
               "ArtifactError"}


def _settle(run, *, error: str) -> None:
    """An evaluation that did not finish is recorded as such (a live run keeps its own status)."""
    if run.manifest.get("source") in ("auto", "reference"):
        run.update(status="error", error=error)
    else:
        run.update(evaluation_error=error)


def _report(verdict: dict, run) -> int:
    margin = "n/a" if verdict["margin"] is None else f"{verdict['margin'] * 100:+.1f}%"
    print(printable(f"\n{verdict['claim']}: {verdict['verdict'].upper()} (margin {margin})", lines=True))
    print(f"  why:    {printable(verdict['reason'])}")
    print(f"  source: {printable(verdict['source'])}")
    for caution in verdict.get("warnings") or ():
        print(f"  caution: {printable(caution)}")
    print(f"  run:    {printable(run.id)}  ({printable(run.path)})")
    return _EXIT[verdict["verdict"]]


def _parse_params(pairs) -> dict:
    import yaml
    params = {}
    for name, value in pairs or ():
        try:
            params[name] = yaml.safe_load(value) if value.strip() else value
        except yaml.YAMLError:
            params[name] = value   # not YAML: the text itself, judged by the parameter's type
        scalar = (str, int, float, bool)
        if isinstance(params[name], list) and params[name] and all(isinstance(v, scalar) for v in params[name]):
            continue   # a sweep's values: -p clients '[2, 4]'
        if not isinstance(params[name], scalar):
            params[name] = value
    return params


def _plan(project, claim, args, params):
    """The `RunPlan` of ``run``/``plan``: unknown names and ill-typed values are refused before anything runs; its
    time learned from the recorded runs at its scale."""
    from reprobook.core.plan import learn, make_plan
    from reprobook.core.runs import RunStore
    if args.source == "live" and args.host is not None:
        from reprobook.remote.live import plan_live
        plan = plan_live(project, claim, args.host, params, new=args.new)
    else:   # no host named (`plan` without --host): the claim's roles, not placed
        plan = make_plan(claim, params, paper=project.paper(claim.paper), source=args.source)
    return learn(plan, RunStore(project.settings.runs_dir).runs(claim))


def _at_a_terminal(stream) -> bool:
    """Whether ``stream`` is a person's terminal (not a pipe, a file, /dev/null, or no stdin at all, as in CI)."""
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError, OSError):   # a closed or replaced stream
        return False


def _ask(question: str, stdin, out) -> str:
    """One answer to ``question`` (asked on ``out``), stripped; the end of input (Ctrl-D) is an empty answer."""
    print(question, end="", file=out, flush=True)
    line = stdin.readline()
    if not line:
        print(file=out)
    return line.strip()


def venue_and_year(venue: str, year: int | None, stdin=None, out=None) -> tuple[str, int | None]:
    """``new``'s venue and year: as given, and what is missing asked of a person at a terminal (``stdin`` one).

    Nothing is asked when ``stdin`` is not a terminal (a script, a pipe, CI with no stdin): what is not given is left
    for the author to fill in. The year is asked only when the venue does not end in it (``SOSP 2024``).
    """
    from reprobook.errors import ConfigError
    from reprobook.scaffold import year_of
    stdin = sys.stdin if stdin is None else stdin
    out = sys.stderr if out is None else out   # the questions are not output: stdout stays the list of files written
    if not _at_a_terminal(stdin):
        return venue, year
    if not venue:
        venue = _ask("Venue (e.g. USENIX Security, or SOSP 2024), empty to fill in later: ", stdin, out)
    if venue and year is None and year_of(venue) is None:
        answer = _ask("Year it appeared (e.g. 2022), empty to leave out: ", stdin, out)
        if answer:
            if not answer.isdigit():
                raise ConfigError(f"the year is a number such as 2022, not {answer!r} (nothing was written)")
            year = int(answer)
    return venue, year


def cmd_new(args) -> int:
    """``new PAPER``: scaffold a paper (YAML, package with a loader, a claim page, its chapter) that loads."""
    from reprobook.core.config import find_root, load_paper
    from reprobook.scaffold import new_paper
    root = find_root()
    try:
        venue, year = venue_and_year(args.venue or "", args.year)
    except KeyboardInterrupt:
        print("\nreprobook: interrupted; nothing was written.", file=sys.stderr)
        return 130
    # what was written loads (else a bug to report, and what was written is removed again)
    written = new_paper(root, args.paper, claim=args.claim, title=args.title or "", venue=venue,
                        check=load_paper, name=args.name or "", year=year)
    for path in written:
        print(f"wrote {path.relative_to(root)}")
    print(f"Next: edit configs/papers/{args.paper}.yaml (the claim, its numbers, its check), "
          f"lib/reprobook/papers/{args.paper.replace('-', '_')}/loaders.py (the artifact's output format) and the "
          f"words of notebooks/{args.paper}/{args.claim}.ipynb; put a real output in tests/unit/data/{args.paper}/ "
          f"(its README says how). The book's page \"Adding a paper\" walks through it, with every key and check "
          f"(reprobook reference). Try it: reprobook import {args.paper}/{args.claim} tests/unit/data/{args.paper} "
          f"--machine \"...\", then reprobook run {args.paper}/{args.claim}; reprobook check-paper {args.paper} "
          f"checks the project's rules.")
    return 0


def cmd_check_paper(args) -> int:
    """``check-paper PAPER``: the project's rules a paper file can break while loading cleanly
    (`reprobook.core.rules`); exit 2 naming each claim and check that breaks one."""
    from reprobook.core.rules import SMALL_IMPORT, paper_problems
    project = _project()
    paper = project.paper(args.paper)
    problems = paper_problems(paper)
    for line in problems:
        print(printable(line), file=sys.stderr)
    if problems:
        print(f"{paper.id}: {len(problems)} problem(s) with the project's rules (above)", file=sys.stderr)
        return EXIT_ERROR
    print(f"{paper.id}: loads, and keeps the project's rules: {SMALL_IMPORT}")
    return 0


def cmd_reference(args) -> int:
    """``reference``: the author's reference (paper file keys, check kinds, plot options, loader API) as Markdown."""
    from reprobook.reference import markdown
    text = markdown()
    if args.output:
        Path(args.output).write_text(text + "\n")
        print(f"wrote {args.output}")
    else:
        print(text)
    return 0


def cmd_plan(args) -> int:
    """``plan CLAIM``: what a run would do, resolved, without contacting any host."""
    project = _project()
    claim = project.claim(args.claim)
    plan = _plan(project, claim, args, _parse_params(args.param))
    if args.json:
        print(json.dumps(plan.as_dict(), indent=2))
    else:
        print(printable(plan.describe(), lines=True))
    return 0


def cmd_run(args) -> int:
    from reprobook.remote.live import execute
    from reprobook.core.runs import RunStore
    if args.all or args.hosts:
        return _run_all(args)
    project = _project()
    claim = project.claim(args.claim)
    params = _parse_params(args.param)
    plan = _plan(project, claim, args, params)
    if args.dry_run:
        print(printable(plan.describe(), lines=True))
        print("(a dry run: nothing was started)")
        return 0
    store = RunStore(project.settings.runs_dir)
    if args.source == "live":
        run = execute(project, plan, allow_insufficient=args.allow_insufficient_host, progress=not args.quiet)
        source = run.id
    elif args.source in ("auto", "reference"):
        if args.source == "reference" and not claim.reference:
            raise ReprobookError(f"the authors ship no outputs for {claim.key}; use --source live (or auto, "
                                 f"or the id of a recorded run)")
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        run = store.create(claim, f"{claim.paper}-{claim.id}-{args.source}-{stamp}", source=args.source,
                           status="evaluating", parameters=params)
        source = args.source
    else:
        from reprobook.sources import obtain
        obtain(project, claim, args.source, params=params, progress=False)  # an unknown source: a clear error
        run = store.load(args.source)
        source = args.source
    with run.lock.acquire(on_wait=_waiting_for(run)):  # one notebook written into a run directory at a time
        verdict = _execute(project, claim, run, source, params, args.quiet)
    if run.manifest.get("source") in ("auto", "reference"):
        run.update(status="evaluated")
    return _report(verdict, run)


def _run_all(args) -> int:
    """``run PAPER --all --hosts a,b,c``: every live claim of the paper on the pool, in parallel (`reprobook.pool`)."""
    from reprobook.pool import run_all
    if not (args.all and args.hosts):
        raise ReprobookError("--all and --hosts go together: `reprobook run PAPER --all --hosts a,b,c` runs every "
                             "claim of PAPER that runs live on a pool of hosts")
    if "/" in args.claim:
        raise ReprobookError(f"with --all, name a paper (e.g. {args.claim.split('/')[0]}), not a claim")
    if args.source not in ("auto", "live") or args.host != "local" or args.allow_insufficient_host:
        raise ReprobookError("--all runs every claim live on the hosts of --hosts, each on a host that meets its "
                             "requirements: --source, --host and --allow-insufficient-host do not apply")
    project = _project()

    def show(plan) -> None:
        print(printable(f"{args.claim} on {', '.join(plan.hosts)}:"))
        for line in plan.lines():
            print(f"  {printable(line)}")
        sys.stdout.flush()
    result = run_all(args.claim, args.hosts, project=project, params=_parse_params(args.param), new=args.new,
                     progress=not args.quiet, on_plan=show)
    print()
    _print_table(result.table(), ["claim", "host", "run id", "status", "time", "verdict", "margin"])
    longest = max((r.seconds for r in result.runs), default=0.0)
    print(f"\n{len(result.succeeded)} of {len(result.runs)} claim(s) ran, in {result.seconds:.1f} s "
          f"(the longest claim: {longest:.1f} s)")
    for r in result.runs:
        if r.status != "succeeded" and r.detail:
            print(f"  {r.claim}: {printable(r.detail)}")
    codes = [EXIT_ERROR if r.status == "failed" else _EXIT.get(r.verdict, 0) if r.status == "succeeded"
             else EXIT_NOT_RUN for r in result.runs]
    for worst in (EXIT_ERROR, EXIT_FAILS, EXIT_INCONCLUSIVE, EXIT_NOT_RUN):
        if worst in codes:
            return worst
    return 0


def cmd_report(args) -> int:
    from reprobook.report import write_report
    project = _project()
    project.paper(args.paper)  # an unknown paper: a clear error, listing the known ones
    md, js = write_report(args.paper, args.out)
    print(f"wrote {md} (Markdown, for the review form) and {js} (JSON, schema: lib/reprobook/core/schemas/report.json)")
    return 0


def cmd_export(args) -> int:
    """``export RUN|PAPER -o FILE.zip``: a run's RO-Crate, or a paper's report as one, packed for a repository."""
    from reprobook.core import provenance
    from reprobook.core.runs import RunStore
    from reprobook.errors import ConfigError
    out = Path(args.output)
    if out.suffix.lower() != ".zip":
        raise ReprobookError(f"-o {args.output}: the crate is packed as a zip, so name a file ending in .zip")
    if out.is_dir():
        raise ReprobookError(f"-o {args.output} is a directory: name the zip file to write")
    project = _project()
    if args.what in project.papers:
        from reprobook.report import write_report
        with tempfile.TemporaryDirectory(prefix="reprobook-export-") as tmp:
            write_report(args.what, tmp)
            crate = json.loads((Path(tmp) / provenance.CRATE).read_text())
            provenance.pack(Path(tmp), crate, out)
        what = f"the evaluator's report of {args.what} (Markdown and JSON)"
    else:
        try:
            run = RunStore(project.settings.runs_dir).load(args.what)
        except ConfigError:
            raise ReprobookError(f"{args.what!r} is neither a paper ({', '.join(project.papers)}) nor a run in the run "
                                 f"store {project.settings.runs_dir} (`reprobook runs` lists them)") from None
        provenance.export_run(project, run, out)
        what = f"run {run.id}" + (" (redacted: hosts, users and paths withheld; the manifest, log, notebook and "
                                  "generated inputs left out)" if project.settings.redact_hosts else "")
    print(printable(f"wrote {out}: an RO-Crate (Process Run Crate profile) of {what}, with the files it describes"))
    return 0


def cmd_runs(args) -> int:
    from reprobook.core.runs import RunStore
    project = _project()
    claim = project.claim(args.claim) if args.claim else None
    runs, notes = RunStore(project.settings.runs_dir).runs(claim), []
    for r in runs:  # a run whose process was killed half-way: put right what the local disk can tell
        if r.stale and r.manifest.get("source") == "live":
            notes.append(f"run {r.id}: recorded {r.status!r}, but the process working on it is gone; "
                         f"`reprobook status {r.id}` asks host {r.manifest.get('host')} and repairs it")
        elif r.stale:
            notes += [f"run {r.id}: {line}" for line in r.repair_local()]
    rows = [{"run id": r.id, "claim": f"{r.manifest['paper']}/{r.manifest['claim']}", "source": r.manifest.get("source"),
             "host": r.manifest.get("host", "-"), "status": r.status, "verdict": r.manifest.get("verdict", "-"),
             "created": r.manifest.get("created")} for r in runs]
    if args.json:
        _print_json([{"id": r.id, "claim": f"{r.manifest['paper']}/{r.manifest['claim']}",
                      "source": r.manifest.get("source"), "host": r.manifest.get("host"), "status": r.status,
                      "verdict": r.manifest.get("verdict"), "parameters": r.manifest.get("parameters") or {},
                      "created": r.manifest.get("created")} for r in runs])
    else:
        _print_table(rows, ["run id", "claim", "source", "host", "status", "verdict", "created"])
    for note in notes:
        print(f"reprobook: {printable(note)}", file=sys.stderr)
    _warn_unreadable(RunStore(project.settings.runs_dir), claim)
    return 0


def _warn_unreadable(store, claim=None) -> None:
    """A warning for each manifest the listing passed over."""
    for path in store.unreadable(claim):
        print(f"reprobook: warning: {path}: unreadable manifest (truncated, or not a reprobook manifest: no run_id); "
              "the run's files are kept beside it", file=sys.stderr)


RECENT_RUNS = 10
"""How many runs `reprobook status` alone lists (-n changes it)."""


def _when(created) -> str:
    """A manifest's ``created`` (ISO 8601) as ``YYYY-MM-DD HH:MM`` in UTC; what it holds as it is when not a time."""
    try:
        t = dt.datetime.fromisoformat(str(created))
    except ValueError:
        return str(created or "-")
    if t.tzinfo is not None:
        t = t.astimezone(dt.timezone.utc)
    return t.strftime("%Y-%m-%d %H:%M")


def _recent_runs(args) -> int:
    """``status`` alone: the newest runs of the store, one line each, from the local disk (no host is asked)."""
    import textwrap
    from reprobook.core.runs import RunStore
    project = _project()
    store = RunStore(project.settings.runs_dir)
    runs = store.runs()[::-1]   # the store's order is oldest first
    _warn_unreadable(store)
    if not runs:
        print("\n".join(textwrap.wrap(f"no runs recorded yet in the run store {project.settings.runs_dir}: "
                                      f"`reprobook run PAPER/CLAIM` makes one (`reprobook claims` lists the claims)",
                                      _width(), break_on_hyphens=False)))
        return 0
    shown = runs[:args.n or RECENT_RUNS]
    rows = [{"run id": r.id, "claim": f"{r.manifest.get('paper')}/{r.manifest.get('claim')}",
             "scale": r.manifest.get("scale") or (r.manifest.get("parameters") or {}).get("scale") or "-",
             "state": r.status + (" (stale)" if r.stale else ""), "when (UTC)": _when(r.manifest.get("created")),
             "verdict": r.manifest.get("verdict") or "-"} for r in shown]
    cols = ["run id", "claim", "scale", "state", "when (UTC)", "verdict"]
    width = _width()
    if _print_fitted(rows, cols, width, flexible={"claim": (12, 1)}, drop=("claim",)) is None:
        for r in rows:   # the run ids are too long for a table: each run on two lines, its id whole (to copy)
            print(_cell(r["run id"]))
            print("\n".join(textwrap.wrap(", ".join(
                [_cell(r["claim"]) + ("" if r["scale"] == "-" else f" at {_cell(r['scale'])} scale"), _cell(r["state"])]
                + ([] if r["verdict"] == "-" else [_cell(r["verdict"])]) + [f"made {_cell(r['when (UTC)'])} UTC"]),
                width, initial_indent="  ", subsequent_indent="    ")))
    notes = []
    if len(runs) > len(shown):
        notes.append(f"(the newest {len(shown)} of {len(runs)} runs: -n {len(runs)} lists them all)")
    if any(r.stale for r in shown):
        notes.append("(stale: recorded as in progress, but the process working on it is gone; "
                     "`reprobook status RUN_ID` asks the host and repairs it)")
    for note in notes:
        print("\n".join(textwrap.wrap(note, width)))
    return 0


def cmd_status(args) -> int:
    if args.run_id is None:
        return _recent_runs(args)
    if args.n is not None:
        raise ReprobookError(f"-n {args.n} counts the runs `reprobook status` lists without a run id; with one "
                             f"({args.run_id}) it shows that run alone")
    from reprobook.remote.live import repair, status
    from reprobook.core.runs import RunStore
    project = _project()
    run = RunStore(project.settings.runs_dir).load(args.run_id)
    for line in repair(project, run):  # a process killed half-way left it: what the disk and the host say
        print(f"repaired: {printable(line)}")
    print(printable(f"run {run.id}: {run.manifest['paper']}/{run.manifest['claim']}, source "
                    f"{run.manifest.get('source')}, recorded status {run.status}"))
    if run.manifest.get("source") == "live" and run.status not in ("succeeded",):
        _, st = status(project, args.run_id)
        print(printable(f"on host {run.manifest['host']}: {st.state}, {st.elapsed_s:.0f} s elapsed"
                        + (f", exit code {st.exit_code}" if st.exit_code is not None else "")))
        if st.step:
            print(f"current step: {printable(st.step)}")
        if st.log_tail:  # the host's log, line by line as text (a carriage return or an escape shown, not obeyed)
            print("last lines of the log:\n" + "\n".join("  " + printable(l.rstrip("\r"))
                                                          for l in st.log_tail.rstrip().split("\n")))
    return 0


def cmd_attach(args) -> int:
    from reprobook.remote.live import reattach, resume
    project = _project()
    run = (resume if args.resume else reattach)(project, args.run_id, progress=not args.quiet)
    claim = project.paper(run.manifest["paper"]).claim(run.manifest["claim"])
    with run.lock.acquire(on_wait=_waiting_for(run)):  # one notebook written into a run directory at a time
        verdict = _execute(project, claim, run, run.id, run.manifest.get("parameters") or {}, args.quiet)
    return _report(verdict, run)


def _waiting_for(run):
    def tell(holder) -> None:
        print(printable(f"reprobook: run {run.id} is being worked on by {holder or 'another process'}; waiting "
                        f"for it to finish"), file=sys.stderr, flush=True)
    return tell


def cmd_cancel(args) -> int:
    from reprobook.remote.live import cancel
    st = cancel(_project(), args.run_id)
    print(printable(f"run {args.run_id}: {st.state}"))
    return 0


def cmd_check_host(args) -> int:
    from reprobook.remote.hosts import open_host
    from reprobook.core.requirements import shortfalls
    project = _project()
    if args.host in project.hosts.clusters:
        return _check_cluster(project, args)
    spec = project.hosts.host(args.host)
    claims = [project.claim(args.claim)] if args.claim else project.all_claims()
    t0 = time.monotonic()
    with open_host(spec, project.settings) as host:
        facts = host.facts([c.requires for c in claims])  # one round trip for every claim's commands
    print(f"host {printable(args.host)}: reachable ({time.monotonic() - t0:.2f} s)")
    for k, v in facts.as_dict().items():  # what the host said about itself: text, whatever it holds
        print(f"  {printable(k)}: {printable(v)}")
    if facts.smt == "unknown":
        print(f"  (SMT state unknown: {printable(facts.smt_detail)}; a claim that asks for SMT on or off falls short "
              f"here)")
    worst = 0
    for c in claims:
        short = shortfalls(facts, c.requires)  # this claim's requirements only, its own commands included
        print(f"{c.key}: " + ("meets the requirements" if not short else "falls short: "
                              + printable("; ".join(short))))
        worst = max(worst, 1 if short else 0)
    return worst


def _placed(project, claim, target: str):
    """The claim at the first of its scales whose roles ``target`` fills (a rehearsal's cluster is smaller than the
    paper's), and its placement; the paper scale's refusal when none fits."""
    from reprobook.errors import ConfigError
    from reprobook.remote.placement import place
    first = None
    for scale in (claim.scales or {None: None}):
        at = claim.at_scale(scale)
        try:
            placement = place(project, at, target)
        except ConfigError as exc:
            first = first or exc
            continue
        if scale not in (None, "paper"):
            print(printable(f"{target}: judged by the roles of {claim.key} at its {scale} scale (the paper's take "
                            f"more hosts)"))
        return at, placement
    raise first


def _check_cluster(project, args) -> int:
    """check-host on a cluster: every host at once, judged by the roles it plays in the claim."""
    from reprobook.errors import ConfigError
    from reprobook.remote.placement import PlacementRefused, survey
    if not args.claim:
        raise ConfigError(f"{args.host} is a cluster: name the claim whose roles its hosts are judged by, "
                          f"with --claim PAPER/CLAIM")
    claim, placement = _placed(project, project.claim(args.claim), args.host)
    t0 = time.monotonic()
    try:
        sv = survey(project, claim, placement, allow_insufficient=True)
    except PlacementRefused as exc:
        print(printable(exc.message, lines=True))
        return 1
    with sv:
        print(printable(f"cluster {args.host}: {len(placement.hosts)} hosts reachable "
                        f"({time.monotonic() - t0:.2f} s, in parallel)"))
        for name in placement.hosts:
            short = sv.shortfalls.get(name)
            f = sv.facts[name]
            print(printable(f"  {name} ({', '.join(placement.roles_of(name))}): {f.get('cpus')} CPUs, "
                            + ("meets the requirements" if not short else "falls short: " + "; ".join(short))))
    print(f"{claim.key}: " + ("every host meets its role's requirements" if not sv.shortfalls else
                              f"{len(sv.shortfalls)} host(s) fall short"))
    return 1 if sv.shortfalls else 0


def cmd_import(args) -> int:
    from reprobook.sources import import_files
    project = _project()
    claim = project.claim(args.claim)
    files: dict[str, list[str]] = {}
    bare = []
    for item in args.files:
        name, sep, path = item.partition("=")
        if sep and name in claim.outputs:
            files.setdefault(name, []).append(path)
        else:
            bare.append(item)
    directory = len(bare) == 1 and not files and Path(bare[0]).expanduser().is_dir()
    if bare and not directory:
        if files or len(claim.outputs) != 1:
            raise ReprobookError(f"{claim.key} has outputs {', '.join(claim.outputs)}: name each file as NAME=PATH, "
                                 f"or give one directory (its files are matched by the outputs' patterns)")
        files[next(iter(claim.outputs))] = bare
    from reprobook.sources import facts_from_flags, read_facts
    facts = read_facts(args.facts) if args.facts else {}
    facts.update(facts_from_flags(cores=args.cores, os=args.os, memory_gib=args.memory_gib, smt=args.smt,
                                  numa_nodes=args.numa_nodes, physical_cores_per_socket=args.physical_cores_per_socket))
    # a directory alone: each file goes to the output whose pattern matches its name; the others are named
    run = import_files(project, claim, bare[0] if directory else files, machine=args.machine, note=args.note or "",
                       params=_parse_params(args.param), facts=facts or None)
    n = len(run.manifest["files"])
    counts = {}
    for f in run.manifest["files"]:
        counts[f["output"]] = counts.get(f["output"], 0) + 1
    print(printable(f"imported {n} file(s) as run {run.id} ({run.path}): "
                    + ", ".join(f"{k} {v}" for k, v in counts.items())
                    + f"; `reprobook run {claim.key}` now uses it (source auto), or name it: --source {run.id}"))
    unmatched = run.manifest.get("unmatched") or []
    if unmatched:
        shown = ", ".join(unmatched[:20]) + (f" and {len(unmatched) - 20} more" if len(unmatched) > 20 else "")
        print(printable(f"not imported ({len(unmatched)} file(s) no output's pattern matches): {shown}"))
    if not facts:
        print("no machine facts given (--facts FILE, --cores, --os, ...): the checks that depend on the machine "
              "will be inconclusive")
    return 0


def cmd_trust_host(args) -> int:
    from reprobook.remote.trust import trust_host
    return trust_host(_project(), args.host, assume_yes=args.yes)


def cmd_cloudlab(args) -> int:
    from reprobook import cloudlab
    project = _project()
    if args.cloudlab_command == "import":
        return cloudlab.import_manifest(project, args.manifest, args.cluster, user=args.user, roles_file=args.roles,
                                        claim_key=args.claim, workdir=args.workdir, assume_yes=args.yes,
                                        check=not args.no_check, replace=args.replace)
    if args.cloudlab_command == "forget":
        return cloudlab.forget(project, args.cluster)
    text, nodes = cloudlab.make_profile(project, args.target, args.scale, rspec=args.rspec)
    if args.output:
        Path(args.output).write_text(text)
        print(f"wrote {'the request RSpec' if args.rspec else 'the profile'} of {args.target} ({args.scale} scale, "
              f"{(k := sum(len(n.names) for n in nodes))} node{'' if k == 1 else 's'}: " + "; ".join(
                  f"{n.role} {len(n.names)} x {n.hardware_type or 'any type'}" for n in nodes) + f") to {args.output}")
    else:
        sys.stdout.write(text)
    return 0


def cmd_book(args) -> int:
    from reprobook.book.site import build
    from reprobook.core.config import find_root
    return EXIT_ERROR if build(find_root(), clean=args.clean, quiet=args.quiet, workers=args.workers) else 0


# --------------------------------------------------------------------------- parser

def _positive(text: str) -> int:
    """An argument that counts something: a whole number, at least 1."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count: give a whole number, 1 or more")
    return n


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="reprobook",
        description="Reproduce the claims of systems papers: each claim is a parameterized notebook that runs "
                    "the experiment (or reads recorded or shipped outputs), compares with the paper and states "
                    "a verdict.",
        epilog="Exit codes of run and attach: 0 holds, 1 fails, 3 inconclusive, 4 not run, 2 error. run --all "
               "exits with the worst of its claims' codes, in the order 2, 1, 3, 4 (a run that failed counts as 2).")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("claims", help="list the claims", description="List every claim with its paper "
                       "references, machine needs and the expected time of a live run, in a table that fits the "
                       "terminal (100 columns, or $COLUMNS, when the output is not a terminal): long cells are cut "
                       "and, the narrower the terminal, the references, machine and authors' outputs columns left "
                       "out, then each claim on lines of its own; -v shows every field of each claim in full.",
                       epilog=CLAIMS_JSON)
    s.add_argument("paper", nargs="?", help="only this paper (e.g. aardvark)")
    s.add_argument("-v", "--verbose", action="store_true", help="each claim with every field in full, wrapped to "
                   "the terminal")
    s.add_argument("--json", action="store_true", help="JSON for scripts (fields below)")
    s.set_defaults(func=cmd_claims)

    s = sub.add_parser("run", help="run one claim and print its verdict",
                       description="Execute a claim's notebook with papermill into its run directory "
                                   "(runs/<paper>/<claim>/<run-id>/notebook.ipynb) and print the verdict. With "
                                   "--source live the experiment runs first on --host, detached: if this "
                                   "command is interrupted, `reprobook attach RUN_ID` picks it up, and running "
                                   "the same command again attaches instead of starting twice.")
    s.add_argument("claim", help="paper/claim, e.g. aardvark/validator-throughput; with --all, a paper")
    s.add_argument("--all", action="store_true", help="every claim of the paper that runs live, on the hosts of "
                   "--hosts: each on a host that meets its requirements, in parallel (one claim at a time per host)")
    s.add_argument("--hosts", metavar="A,B,C", help="with --all: the pool of hosts from configs/hosts.yaml")
    s.add_argument("--source", default="auto",
                   help="auto (the latest successful run with these parameters, the scale among them, else the "
                        "authors' outputs: -p scale rehearsal picks the latest rehearsal), reference, live, a run id, "
                        "or run ids joined with + to judge their outputs together (default: auto)")
    s.add_argument("--host", default="local", help="host or cluster from configs/hosts.yaml for a live run "
                                                     "(default: local); a cluster gives each of the claim's roles its hosts")
    s.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                   help="a claim parameter, e.g. -p trials 3 (repeatable); its type and, when the claim declares "
                        "one, its pattern are checked before anything runs")
    s.add_argument("--new", action="store_true", help="live: start a fresh run rather than attach to the "
                                                       "earlier one with the same parameters")
    s.add_argument("--allow-insufficient-host", action="store_true",
                   help="live: run even if the host is below the claim's requirements (numbers not comparable)")
    s.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    s.add_argument("--dry-run", action="store_true", help="print the run's plan (as `reprobook plan` does) and "
                                                         "start nothing")
    s.set_defaults(func=cmd_run)

    s = sub.add_parser("new", help="scaffold a new paper: its YAML, loader, first claim page and chapter",
                       description="Write configs/papers/PAPER.yaml (a paper with one claim, one published number, a "
                                   "check and a plot, valid from the start), lib/reprobook/papers/PAPER/ (a loader of "
                                   "benchmark,value CSVs that declares its columns), notebooks/PAPER/CLAIM.ipynb (the "
                                   "claim's page), a test of the loaders on a sample output "
                                   "(tests/unit/test_loaders_PAPER.py, tests/unit/data/PAPER/) and "
                                   "book/PAPER/index.ipynb with its entry in _toc.yml. Nothing is "
                                   "overwritten, and the input is checked before anything is written: a refusal "
                                   "(exit 2) leaves the project as it was. The book's page \"Adding a paper\" says "
                                   "what to edit next.")
    s.add_argument("paper", help="the paper's id: lower-case letters, digits and dashes, starting with a letter "
                                 "(e.g. mypaper); not a Python keyword (import, class), not a word YAML reads as a "
                                 "boolean or null (yes, no, on, off, true, null), not a paper the project has")
    s.add_argument("--claim", default="first-claim", help="the first claim's id (default: first-claim)")
    s.add_argument("--title", help="the paper's title (one line)")
    s.add_argument("--venue", help="where (and when) it appeared, one line, e.g. 'USENIX Security' or 'SOSP 2025'; "
                                   "asked at a terminal when not given")
    s.add_argument("--year", type=int, help="the year it appeared, when --venue does not end in it (asked at a "
                                            "terminal)")
    s.add_argument("--name", help="the paper's short name, e.g. Aardvark (default: the title's part before its "
                                  "colon, else the id); the chapter reads \"Aardvark (USENIX Security '22)\"")
    s.set_defaults(func=cmd_new)

    s = sub.add_parser("check-paper", help="check a paper file against the project's rules (beyond its schema)",
                       description="Load the paper file (its schema and registries) and check the rules a file can "
                                   "break while loading cleanly, in the words the project's tests use: a run imported "
                                   "from a small machine leaves every check inconclusive unless the check declares "
                                   "where it may be judged. Exit 0 when it keeps them, 2 naming each claim and check "
                                   "that does not.")
    s.add_argument("paper", help="the paper's id, e.g. aardvark")
    s.set_defaults(func=cmd_check_paper)

    s = sub.add_parser("reference", help="print the author's reference: paper file keys, check kinds, loader API",
                       description="Print, as Markdown, what the book's page \"Adding a paper\" shows under \"The "
                                   "reference\": every key of a paper file, every check kind with every option, the "
                                   "plot options, the machine requirements and the loader API (Outputs, the "
                                   "reprobook.formats functions), generated from the schema, the registries and the "
                                   "docstrings.")
    s.add_argument("-o", "--output", help="write it to this file instead")
    s.set_defaults(func=cmd_reference)

    s = sub.add_parser("plan", help="print what a run of a claim would do, without starting it",
                       description="Resolve a claim's run without contacting any host: the parameters (defaults "
                                   "filled in, names and types checked), the scale and its deviations from the "
                                   "guide, the hosts of each role and what they need, the checkouts, the steps, "
                                   "the sweep and the run id. The same record is kept in a live run's manifest "
                                   "(`plan`).")
    s.add_argument("claim", help="paper/claim, e.g. pesto/sample-runs")
    s.add_argument("--source", default="live", help="live (default), auto, reference, or a run id")
    s.add_argument("--host", default=None, help="host or cluster from configs/hosts.yaml that the live run's roles "
                                                "are placed on (default: none: the roles are shown, not placed)")
    s.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                   help="a claim parameter, e.g. -p trials 3 (repeatable); its type and, when the claim declares "
                        "one, its pattern are checked before anything runs")
    s.add_argument("--new", action="store_true", help="the plan of a fresh run (a new run id)")
    s.add_argument("--json", action="store_true", help="the plan as JSON (the fields of the manifest's `plan`)")
    s.set_defaults(func=cmd_plan)

    s = sub.add_parser("report", help="write the evaluator's report of a paper (Markdown and JSON)",
                       description="Judge every claim of a paper with --source auto (its latest run at the "
                                   "paper's scale with the paper's parameters, else the authors' shipped outputs), "
                                   "weigh beside it the latest successful run at each scale (a rehearsal among "
                                   "them), each judged at its own scale, and write PAPER-report.md, for a review form, and PAPER-report.json "
                                   "(schema: lib/reprobook/core/schemas/report.json): per claim the verdict, margin, "
                                   "source, runs, the host's facts and how they differ from the authors' machine, "
                                   "the evidence with the badge each piece counts toward, and per ACM badge whether "
                                   "it is supported and what it still needs. A successful run counts toward "
                                   "Functional at any scale and toward Reproduced only at the paper's; the authors' "
                                   "outputs toward neither; Available needs the artifact's DOI in the paper file "
                                   "(artifact_doi). Each claim's status (reproduced, functional, not run) and time "
                                   "to reproduce at each scale (as `reprobook plan` estimates it) lead its section. "
                                   "The directory's ro-crate-metadata.json (an RO-Crate) describes every report in "
                                   "it. With redact_hosts, hosts, users and machines are withheld.")
    s.add_argument("paper", help="e.g. aardvark")
    s.add_argument("--out", default=".", help="directory to write into (default: the current one)")
    s.set_defaults(func=cmd_report)

    s = sub.add_parser("export", help="pack a run, or a paper's report, as an RO-Crate zip for a repository",
                       description="Write FILE.zip: an RO-Crate (ro-crate-metadata.json, Process Run Crate profile) "
                                   "and the files it describes. For a run: its outputs with their sha256, its "
                                   "parameters, the artifact's repositories at their commits, its hosts' facts and "
                                   "its verdict with each check's reason (plus its manifest, log and executed "
                                   "notebook). For a paper: its evaluator's report, as `reprobook report` writes it. "
                                   "With redact_hosts no host, user or local path is named, and the files that name "
                                   "them (manifest, log, notebook, generated inputs) are left out; the output files "
                                   "are packed as they were fetched. Zenodo and WorkflowHub take such a zip.")
    s.add_argument("what", metavar="RUN|PAPER", help="a run id (`reprobook runs`) or a paper (e.g. aardvark)")
    s.add_argument("-o", "--output", required=True, metavar="FILE.zip", help="the zip file to write")
    s.set_defaults(func=cmd_export)

    s = sub.add_parser("runs", help="list recorded runs", description="List the runs in the run store.",
                       epilog=RUNS_JSON)
    s.add_argument("claim", nargs="?", help="only runs of this paper/claim")
    s.add_argument("--json", action="store_true", help="JSON for scripts (fields below)")
    s.set_defaults(func=cmd_runs)

    s = sub.add_parser("status", help="list the recent runs, or show one run's state",
                       description="Without a run id: the newest runs of the run store (ten, or -n), newest first, "
                                   "each with its claim, scale, recorded state, when it was made (UTC) and its "
                                   "verdict once it has one, from the local disk alone. With a run id: that run's "
                                   "recorded state and, for a live run still going, its state on the host, current "
                                   "step and last log lines.")
    s.add_argument("run_id", nargs="?", help="the run to show (`reprobook runs` or `reprobook status` lists them)")
    s.add_argument("-n", type=_positive, metavar="N", help=f"without a run id: list the newest N runs "
                   f"(default: {RECENT_RUNS})")
    s.set_defaults(func=cmd_status)

    s = sub.add_parser("attach", help="wait for a live run, fetch it and print its verdict",
                       description="Re-attach to a live run by id (from any process or machine with the same run "
                                   "store), follow it to the end, fetch its outputs (resuming an interrupted "
                                   "fetch) and print the verdict.")
    s.add_argument("run_id")
    s.add_argument("--resume", action="store_true", help="if the run failed, was cut off or cancelled, launch it "
                   "again on the same hosts with the same parameters: it resumes at its first unfinished step (as "
                   "running the same `run` command again does, also for a run started with --new)")
    s.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    s.set_defaults(func=cmd_attach)

    s = sub.add_parser("cancel", help="stop a live run", description="Stop a live run's whole process group "
                                                                     "on its host; it is recorded as cancelled.")
    s.add_argument("run_id")
    s.set_defaults(func=cmd_cancel)

    s = sub.add_parser("check-host", help="check a host is reachable and fit for claims",
                       description="Connect to a host, print its facts (kernel, CPU, cores, SMT, NUMA, memory, "
                                   "OS, Docker) and whether it meets each claim's requirements. Exit 1 if some "
                                   "claim's requirements are not met.")
    s.add_argument("host")
    s.add_argument("--claim", help="only this paper/claim")
    s.set_defaults(func=cmd_check_host)

    s = sub.add_parser("import", help="record outputs produced by hand as a run",
                       description="Record output files of a claim's experiment that were produced by hand, on a "
                                   "machine reprobook cannot drive (the claim's page lists the steps). The files "
                                   "are copied into the run store with their sha256, who imported them, when, and "
                                   "the machine as you describe it; from then on it is a run like any other.")
    s.add_argument("claim", help="paper/claim, e.g. verus/ironkv")
    s.add_argument("files", nargs="+", metavar="FILE", help="output files; NAME=PATH when the claim has several "
                                                           "outputs (see `reprobook claims`); NAME=DIR takes the "
                                                           "files under DIR that the output's pattern matches; one "
                                                           "DIR alone gives each file under it to the output whose "
                                                           "pattern (glob) matches its name, keeping its place in "
                                                           "DIR, and names the files none matches")
    s.add_argument("--machine", required=True, help="the machine the files come from, e.g. \"Windows 11 laptop, "
                                                   "i9-10885H, 64 GB\"")
    s.add_argument("--note", help="anything else a reader should know")
    s.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                   help="a claim parameter the outputs were produced with (repeatable)")
    facts = s.add_argument_group("machine facts", "what the machine was, checked against the claim's requirements "
                                 "as a live host's probed facts are; without them, checks that depend on the machine "
                                 "are inconclusive")
    facts.add_argument("--facts", metavar="FILE", help="the output of the claim's facts script run on that machine "
                                                       "(key=value lines; rb.facts_script(claim) prints it), or JSON; "
                                                       "each fact is checked (known keys, types, ranges) before "
                                                       "anything is stored")
    facts.add_argument("--cores", type=int, help="CPUs online")
    facts.add_argument("--os", help="\"Family Release\", e.g. \"Ubuntu 20.04\"")
    facts.add_argument("--memory-gib", type=float, help="memory, GiB")
    facts.add_argument("--smt", choices=["on", "off"], help="simultaneous multithreading (hyper-threading)")
    facts.add_argument("--numa-nodes", type=int, help="NUMA nodes")
    facts.add_argument("--physical-cores-per-socket", type=int, help="physical cores on one socket")
    s.set_defaults(func=cmd_import)

    s = sub.add_parser("trust-host", help="record a host's SSH key after you have checked its fingerprint",
                       description="Connect to a host whose key is not yet in known_hosts, show the key's "
                                   "fingerprint, and after you confirm it record it in the known_hosts file "
                                   "the host uses. reprobook never accepts an unknown key by itself.")
    s.add_argument("host")
    s.add_argument("--yes", action="store_true", help="do not ask (only after checking the fingerprint)")
    s.set_defaults(func=cmd_trust_host)

    s = sub.add_parser("cloudlab", help="a CloudLab profile per claim or paper; an experiment's manifest into hosts.yaml",
                       description="From a CloudLab account to a checked cluster: `profile` writes the geni-lib script "
                                   "(or request RSpec) to start an experiment for a claim or a paper in the portal; "
                                   "`import` reads the experiment's manifest back into configs/hosts.yaml and an SSH "
                                   "config file, records the host keys and checks every host; `forget` removes an "
                                   "imported cluster again.")
    cl = s.add_subparsers(dest="cloudlab_command", required=True, metavar="ACTION")
    c = cl.add_parser("profile", help="write a CloudLab profile for a claim or a paper",
                      description="A geni-lib script: one node per host of each role, named as the harness expects, "
                                  "with the hardware type and disk image of the claim's machine section, on one LAN; "
                                  "portal parameters set each role's hardware type and (where it may vary) count.")
    c.add_argument("target", help="paper/claim, or a paper (its live claims packed on one experiment)")
    c.add_argument("--scale", choices=["paper", "rehearsal"], default="paper",
                   help="paper: the guide's hosts; rehearsal: the fewest each role takes (default: paper)")
    c.add_argument("-o", "--output", metavar="FILE", help="write here (default: standard output)")
    c.add_argument("--rspec", action="store_true", help="the request RSpec instead (the portal takes it as an upload)")
    c.set_defaults(func=cmd_cloudlab)
    c = cl.add_parser("import", help="read an experiment's manifest into hosts.yaml, then check every host",
                      description="Read the manifest (the experiment's Manifest tab, or `portal-cli experiment "
                                  "manifests get`), write the cluster into configs/hosts.yaml ($REPROBOOK_HOSTS) "
                                  "leaving the rest of the file as it was, write an SSH config file that ~/.ssh/config "
                                  "includes, record unknown host keys (showing each fingerprint) and check every host "
                                  "at once. Exit 2 for a file that is not a usable manifest (nothing written), 1 when "
                                  "a host does not answer or falls short.")
    c.add_argument("manifest", help="the manifest XML")
    c.add_argument("--cluster", required=True, help="the cluster's name in hosts.yaml (an earlier import of it is "
                   "replaced); its hosts and SSH aliases are <cluster>-<node>")
    c.add_argument("--user", help="your CloudLab user, when the nodes carry a login per project member")
    c.add_argument("--roles", type=Path, metavar="FILE", help="YAML: role -> node names (default: from the claim, "
                   "else from the names: server-0 -> server)")
    c.add_argument("--claim", help="paper/claim whose roles the node names must fill (refused when they do not), and "
                   "whose requirements the check judges")
    c.add_argument("--workdir", default="/local/reprobook", help="the hosts' workdir; {name} is each host's name "
                   "(default: /local/reprobook, which the profile creates)")
    c.add_argument("--yes", action="store_true", help="record unknown host keys without asking (their fingerprints "
                   "are printed; only where you trust the network path, as on a fresh experiment)")
    c.add_argument("--no-check", action="store_true", help="write only; no host keys, no check")
    c.add_argument("--replace", action="store_true", help="let a node replace a host of hosts.yaml of the same name "
                   "(<cluster>-<node>); without it such an import is refused")
    c.set_defaults(func=cmd_cloudlab)
    c = cl.add_parser("forget", help="remove an imported cluster: from hosts.yaml, its SSH config file and Include",
                      description="Remove CLUSTER from configs/hosts.yaml ($REPROBOOK_HOSTS) with the hosts its import "
                                  "wrote, its SSH config file and the Include line of it in ~/.ssh/config "
                                  "($REPROBOOK_SSH_CONFIG), and its nodes' keys from known_hosts (ssh-keygen -R: "
                                  "the next experiment on a node has a new key). Every other host, cluster, comment "
                                  "and SSH entry stays as it was.")
    c.add_argument("cluster", help="the cluster's name in hosts.yaml")
    c.set_defaults(func=cmd_cloudlab)

    s = sub.add_parser("book", help="build the website into _build/html",
                       description="Build the book with Jupyter Book (warnings are errors; a failing notebook "
                                   "fails the build). A page re-executes only when its code or its data changed "
                                   "(the paper's configuration, a newly recorded run, the artifact source, the "
                                   "library).")
    s.add_argument("--clean", action="store_true", help="remove _build first (a cold build)")
    s.add_argument("-q", "--quiet", action="store_true", help="less output")
    s.add_argument("--workers", type=int, metavar="N", help="notebooks executed at once, each in its own kernel "
                   "(default: $REPROBOOK_BOOK_WORKERS, else two per core)")
    s.set_defaults(func=cmd_book)
    return p


def _stdout_closed() -> bool:
    """Whether stdout's reader has gone; if so, stdout is pointed at /dev/null so that Python's own flush at
    exit does not fail on it again."""
    import select
    try:
        fd = sys.stdout.fileno()
        poll = select.poll()
        poll.register(fd, select.POLLOUT)
        gone = any(events & (select.POLLERR | select.POLLHUP) for _, events in poll.poll(0))
    except (OSError, ValueError, AttributeError):
        return False
    if gone:
        os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
    return gone


class _OutlivesItsReader:
    """stdout for the command line: once its reader has gone (`reprobook claims | head -1`), what is left to say
    goes to /dev/null and the command carries on to its own end and exit code (a live run is not cut short
    because the pager closed)."""

    def __init__(self, stream):
        self._stream = stream

    def _gone(self) -> None:
        os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._gone()
            return len(text)

    def flush(self):
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._gone()

    def __getattr__(self, name):
        return getattr(self._stream, name)


def main(argv=None) -> int:
    """The command line; a reader that stops reading early (`reprobook claims | head -1`) is no error: the
    command ends as it would have, with its own exit code, as `ls | head` ends."""
    stdout = sys.stdout
    if stdout is not None and not isinstance(stdout, _OutlivesItsReader):
        sys.stdout = _OutlivesItsReader(stdout)
    try:
        return _main(argv)
    except BrokenPipeError:
        if not _stdout_closed():
            raise
        return 0
    finally:
        sys.stdout = stdout


def _main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    # paramiko logs transport failures (with tracebacks) from its own thread; reprobook reports
    # them once, as an error naming the host and the fix
    logging.getLogger("paramiko").addHandler(logging.NullHandler())
    logging.getLogger("paramiko").propagate = False
    try:
        return args.func(args)
    except ReprobookError as exc:
        print(f"reprobook: error: {printable(exc, lines=True)}", file=sys.stderr)  # errors quote run data too
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("\nreprobook: interrupted. A live run goes on on its host; `reprobook attach RUN_ID` resumes.",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
