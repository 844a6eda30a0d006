"""The handful of calls a claim notebook makes, each one step of the story."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

import pandas as pd

from reprobook.core import checks, loaders, verdicts
from reprobook.book import pages
from reprobook import sources
from reprobook.core.config import Claim, Project, duration_words, load_project
from reprobook.errors import ReprobookError

_PROJECTS: dict[tuple, Project] = {}
_CHECKED: dict[str, sources.Outputs] = {}  # claim key -> the outputs of its latest check in this process


def project(root: str | Path | None = None) -> Project:
    """The project's configuration, loaded once per process (and per ``REPROBOOK_*`` environment), and again
    when one of its files changes: ``hosts.yaml`` edited while a notebook's kernel runs is seen by the next call
    (a fresh panel lists the new host)."""
    key = (str(root), *(os.environ.get(k) for k in sorted(os.environ) if k.startswith("REPROBOOK_")), os.getcwd(),
           *_config_stamp(root))
    if key not in _PROJECTS:
        if len(_PROJECTS) > 32:   # stale versions of an edited configuration
            _PROJECTS.clear()
        _PROJECTS[key] = load_project(Path(root) if root else None)
    return _PROJECTS[key]


def _config_stamp(root: str | Path | None) -> tuple:
    """(path, mtime, size) of each configuration file: a few stat calls, no parsing."""
    from reprobook.core.config import find_root
    try:
        cfg = (Path(root).resolve() if root else find_root()) / "configs"
    except ReprobookError:
        return ()
    files = [*cfg.glob("*.yaml"), *(cfg / "papers").glob("*.yaml")]
    if os.environ.get("REPROBOOK_HOSTS"):
        files.append(Path(os.environ["REPROBOOK_HOSTS"]))
    out = []
    for f in files:
        try:
            st = f.stat()
        except OSError:
            continue
        out.append((str(f), st.st_mtime_ns, st.st_size))
    return tuple(sorted(out))


def claim(key: str) -> Claim:
    """A claim by ``paper/claim``, e.g. ``aardvark/validator-throughput``.

    In a notebook (the first call every claim page makes) it also has tables shown without
    pandas' index, scrolling within their cell (`reprobook.book.pages.show_tables`), and figures
    as PNGs that carry their alt text and caption (`reprobook.book.pages.show_figures`). That is done
    here rather than on import: the book's kernels are forked from a process that imported
    the library before any notebook shell existed.
    """
    pages.show_tables()
    pages.show_figures()  # each plot's PNG carries its alt text and caption, for the website
    return project().claim(key)


def obtain(claim: Claim, source: str = "auto", *, host: str = "local", params: Mapping | None = None,
           new: bool = False, allow_small_host: bool = False, progress: bool = True) -> sources.Outputs:
    """The claim's outputs from ``source``: ``auto``, ``reference``, ``live`` or a run id.

    See `reprobook.sources` for what each means. ``live`` runs the experiment
    on ``host`` (detached; re-running attaches to the same run, or resumes it
    at the step that failed). ``auto`` takes the latest run with the same
    ``params``.
    """
    return sources.obtain(project(), claim, source, host=host, params=params, new=new,
                          allow_insufficient=allow_small_host, progress=progress)


def load(claim: Claim, outputs: sources.Outputs) -> pd.DataFrame:
    """The measured table: the claim's loader applied to ``outputs`` (empty when nothing was obtained)."""
    return loaders.load(claim, outputs)


def check(claim: Claim, measured: pd.DataFrame, outputs: sources.Outputs) -> checks.ClaimVerdict:
    """The claim's verdict on ``measured``, tagged with where the numbers came from.

    A run on a host below the claim's requirements (``allow_small_host``)
    carries that as a warning beside the verdict. What the benchmark left out, as
    the loader lists it in ``measured.attrs["not_measured"]``, is added to the reason.
    """
    from reprobook.core.requirements import differences
    label = outputs.label if outputs.available else "not run"
    warnings = [f"the host fell short of this claim's machine requirements: {'; '.join(outputs.shortfalls)}. "
                f"Its numbers are not comparable with the paper's."] if outputs.shortfalls else []
    differ = differences(outputs.host_facts, claim.authors_machine) if outputs.host_facts else []
    if differ and outputs.available:
        warnings.append(f"the host differs from the machine the authors measured on: {'; '.join(differ)}.")
    _CHECKED[claim.key] = outputs  # glue_verdict records the source tag with the verdict
    verdict = checks.check_claim(claim, measured, source=label, warnings=warnings,
                                 not_run_reason=f"not run: {outputs.detail}" if outputs.detail else None,
                                 scale=outputs.scale if outputs.available else None,
                                 # the authors' shipped outputs: their own machine (None); a run: what it recorded
                                 host_facts=None if outputs.kind == "reference" else dict(outputs.host_facts),
                                 imported=outputs.kind == "import",
                                 partial=outputs.partial if outputs.available else None)
    wording = _wording(claim, verdict, outputs)
    reason = (f"the published numbers are computed from these same files, so this compares the authors' raw "
              f"results with values derived from them; {verdict.reason}" if wording else verdict.reason)
    if not wording and outputs.kind == "reference" and verdict.verdict is checks.Verdict.FAILS:
        # judged on the authors' own outputs, a failure is about those files, not about a run of the experiment
        reason = f"the authors' own files do not support the published numbers: {reason}"
    # what the benchmark left out (a loader's attrs["not_measured"]) is said with the verdict, not passed over
    missing = list(getattr(measured, "attrs", {}).get("not_measured") or []) if measured is not None else []
    if missing:
        reason = f"{reason}; not measured: {'; '.join(missing)}"
    return dataclasses.replace(verdict, source_id=outputs.source, statement=claim.statement, wording=wording,
                               reason=reason)


def _wording(claim: Claim, verdict: checks.ClaimVerdict, outputs: sources.Outputs) -> str:
    """What a verdict says when "holds" or "fails" would claim more than was compared.

    When the published numbers are computed from the authors' shipped outputs
    (``published_from_reference`` in the paper file), judging those same outputs
    compares them with values derived from themselves: the verdict then says the
    data is consistent with the authors' raw results, not that the claim holds.
    """
    if claim.published_from_reference and outputs.kind == "reference":
        return {checks.Verdict.HOLDS: "consistent with the authors' raw results",
                checks.Verdict.FAILS: "inconsistent with the authors' raw results"}.get(verdict.verdict, "")
    return ""


def deviations(claim: Claim, outputs: sources.Outputs):
    """The scale the numbers were measured at and what the run did differently from the guide, as Markdown.

    For a live or imported run: its scale (with what it means), each deviation recorded in its
    manifest (toolchains substituted, source constants patched, with the diff) and the toolchains
    its steps reported. For the authors' shipped outputs: the paper's scale, as the authors ran it.
    See `reprobook.core.scales`.
    """
    from IPython.display import Markdown
    from reprobook.book.text import code, code_block, markdown_str, text
    from reprobook.core.scales import PAPER
    if not outputs.available:
        return Markdown("Nothing was measured, so there is no scale or deviation to report.")
    if outputs.kind == "reference":
        about = claim.scales[PAPER].about if claim.scales else ""
        return Markdown(f"**Scale:** {PAPER}" + (f" ({about})" if about else "")
                        + ": the authors' own runs, as they ship them.")
    # everything below comes from the run (its manifest and log): shown as text, never as markup
    lines = []
    if outputs.scale:
        about = claim.scales[outputs.scale].about if outputs.scale in claim.scales else ""
        lines.append(markdown_str("**Scale:** {}", outputs.scale) + (f" ({about})" if about else "") + ".")
        if outputs.scale != PAPER:
            lines[-1] += (" It tries the whole pipeline at sizes a small host finishes in minutes; the checks say "
                          "which of them this scale can judge.")
    withheld = _withheld_parameters(outputs.parameters)
    given = ", ".join(markdown_str("{}={}", k, "(withheld)" if k in withheld else v)
                      for k, v in outputs.parameters.items() if k != "scale")
    if given:
        lines += ["", f"**Parameters of the run:** {given}."]
    devs = list(outputs.deviations)
    lines += ["", "**Deviations from the guide:**" + ("" if devs else " none recorded.")]
    for d in devs:
        lines.append(markdown_str("- *{}*: {}", d.get("kind", "other"), d.get("what", "")))
    for d in devs:
        if d.get("diff"):
            lines += ["", "The patch the run applied to the checkout:", code_block(str(d["diff"]).rstrip(), "diff")]
    if outputs.toolchains:
        lines += ["", "**Toolchains the steps reported:** " + "; ".join(code(t) or text(t) for t in outputs.toolchains)
                  + "."]
    return Markdown("\n".join(lines))


_NAMES_SOMEONE = re.compile(r"(?:^|_)(?:user|host|experiment|project)s?\Z")
"""A parameter named so (``guest_user``, ``cloudlab_experiment``) holds a machine's, a person's or an account's name."""


def _withheld_parameters(params: Mapping) -> frozenset[str]:
    """The parameters of ``params`` a page does not show with redaction on (``REPROBOOK_REDACT_HOSTS``): they name a
    machine, a user or a testbed account (the guest's, and any whose name says so and whose value is a text), or
    their value is one of the names redaction withholds (`reprobook.core.redaction`)."""
    from reprobook.core.redaction import known_names
    from reprobook.remote.steps import GUEST_PARAMETERS
    p = project()
    if not p.settings.redact_hosts:
        return frozenset()
    from reprobook.core.runs import RunStore
    known = known_names(p, RunStore(p.settings.runs_dir))
    return frozenset({k for k in GUEST_PARAMETERS if k != "guest_port"}
                     | {k for k, v in params.items() if isinstance(v, str) and _NAMES_SOMEONE.search(k)}
                     | {k for k, v in params.items() if known(str(v)) != str(v)})


def published(claim: Claim, *, y: str) -> pd.DataFrame:
    """The claim's published numbers as a table (value in column ``y``) for plotting."""
    from reprobook.book import plots   # matplotlib and seaborn: only when a plot is asked for
    return plots.published_frame(claim.published, y=y)


def tolerance(claim: Claim, *, y: str | None = None):
    """What the claim's checks accept for column ``y`` (default: its plot's y): see `reprobook.book.plots.tolerance`."""
    from reprobook.book import plots   # matplotlib and seaborn: only when a plot is asked for
    return plots.tolerance(claim, y=y)


def plot(claim: Claim, measured: pd.DataFrame | Mapping[str, pd.DataFrame], **overrides):
    """Every plot the claim declares, measured (solid) against published (hollow) with the accepted band.

    ``measured`` is the table of `load`, or several runs to overlay, by label:
    each is a series of its own marker and line style (two hosts, two dates).
    Facets, hue and scales come from the claim's ``plot`` entries; keyword
    arguments override them (for all its plots). Returns the figure; in a
    notebook it is shown.

    Examples
    --------
    >>> rb.plot(claim, measured)
    >>> runs = {o.label: rb.load(claim, o) for o in (rb.obtain(claim, "RUN_A"), rb.obtain(claim, "RUN_B"))}
    >>> rb.plot(claim, runs)
    """
    from reprobook.book import plots   # matplotlib and seaborn: only when a plot is asked for
    return plots.claim_figure(claim, measured, **overrides)


def compare(claim: Claim, measured: pd.DataFrame, verdict: checks.ClaimVerdict | None = None):
    """Measured against published, cell by cell: the value, the ratio, and each cell's verdict.

    One row per published number of the claim: its labels, the published
    value (the target source; other sources as extra columns), the unit, the
    measured value of the rows it speaks of (the statistic the checks judge: the caption says which),
    measured / published, and the verdict of the check that judged that cell (``—`` when no check did).
    Returns a pandas Styler (the frame is ``.data``; its label columns keep their names).
    """
    from reprobook.book.compare import comparison
    from reprobook.core.checks import STATISTIC_WORDS
    from reprobook.core.loaders import column_heading
    frame = comparison(claim, measured, verdict)
    stat = frame.attrs.get("statistic", "mean")
    headings = {c: column_heading(claim.loader, c) for c in frame.columns if "_" in str(c) and "(" not in str(c)}
    return (frame.style.hide(axis="index").format(precision=3, na_rep="—")
            .relabel_index([headings.get(c, c) for c in frame.columns], axis="columns")
            .set_caption(f"measured: the {STATISTIC_WORDS.get(stat, stat)} of the rows each published number speaks "
                         f"of{' (of their trials, as the checks judge it)' if stat != 'mean' else ''}"))


def plan(claim: Claim, params: Mapping | None = None):
    """The live run of the claim with ``params`` (``{"scale": "rehearsal"}``; default: the paper's scale), step by
    step (commands, directories, expected times), as Markdown. A scale with hosts and steps of its own
    (`reprobook.core.config.Claim.at_scale`) shows those."""
    from IPython.display import Markdown
    from reprobook.remote.steps import step_plan
    paper = project().paper(claim.paper)
    lines = []
    params = dict(params or {})
    scale = claim.scale_of(params)
    others = [s for s in claim.variants if s != scale]
    claim = claim.at_scale(scale)
    if claim.runs_live:
        from reprobook.core.plan import make_plan
        where = "the host" if not claim.roles else f"the {claim.control_role} host"
        at = f" at the {scale} scale" if others else ""
        lines += [f"**A live run**{at} ({claim.expected_time or 'no time given by the guide'}) runs these steps on "
                  f"{where} as one detached job. A step that finished is not run again when a failed run is "
                  "launched once more."
                  + (f" At the {' and '.join(others)} scale the hosts and steps differ: "
                     f"`rb.plan(claim, {{\"scale\": \"{others[0]}\"}})` shows them." if others else ""), ""]
        if claim.roles:
            lines += ["It takes a cluster of `configs/hosts.yaml` (`--host CLUSTER`, or `host=\"CLUSTER\"` here), "
                      "whose roles give these hosts; each is checked against its role before anything starts, and "
                      "all are held for the run:", ""]
            lines += [f"- **{r.name}**: {r.count_words}" + (f" — {r.description}" if r.description else "")
                      for r in claim.roles.values()] + [""]
        points = make_plan(claim, params).sweep
        if claim.sweep_axes:
            lines += [f"The steps marked *sweep* run once per point of the sweep over "
                      f"{' × '.join(f'`{a}`' for a in claim.sweep_axes)} ({len(points)} points with these "
                      f"parameters), each "
                      f"point resumable on its own.", ""]
        if claim.inputs:
            lines += [f"Before it starts, `{claim.inputs['generator']}` derives the files the steps read from "
                      "`$RB_INPUTS` (kept with the run, each with its diff against the authors' file).", ""]
        for i, (name, step) in enumerate(step_plan(paper, claim), 1):
            if step is None:
                lines += [f"{i}. **Check out** " + ", ".join(f"`{r.url}` at `{r.commit[:12]}`"
                                                           for r in paper.repositories_for(claim))
                          + " (with submodules)", ""]
                continue
            when = f" (about {duration_words(step.expected_minutes)})" if step.expected_minutes else ""
            tags = (f", on every {step.role} host" if step.role and step.role != claim.control_role else "") + \
                   (", *sweep*: once per point" if step.sweep else "")
            lines += [f"{i}. **{name}**{when}, in `{step.cwd or '.'}`{tags}"
                      + (f" — {step.note.strip()}" if step.note else ""),
                      "", "   ```bash", *("   " + l for l in step.run.rstrip().splitlines()), "   ```", ""]
    if claim.manual:
        lines += ["**Steps to run by hand** (reprobook shows them but cannot run them here):", ""]
        for i, step in enumerate(claim.manual, 1):
            when = f" (about {duration_words(step.expected_minutes)})" if step.expected_minutes else ""
            lines += [f"{i}. **{step.name}**{when}" + (f", in `{step.cwd}`" if step.cwd else "")
                      + (f" — {step.note.strip()}" if step.note else ""),
                      "", "   ```", *("   " + l for l in step.run.rstrip().splitlines()), "   ```", ""]
        outs = ", ".join(f"`{o.path}/{o.glob}`" for o in claim.outputs.values()) or "the output files"
        lines += [f"Then bring {outs} back and record them: `reprobook import {claim.key} FILES… --machine "
                  f"\"what the machine is\"`."]
    if not lines:
        lines = ["This claim has no live run."]
    return Markdown("\n".join(lines))


def import_run(claim: Claim, files, *, machine: str, who: str | None = None, note: str = "",
               params: Mapping | None = None, facts: Mapping | str | Path | None = None):
    """Record outputs produced by hand as a run of ``claim``; from then on it is a run like any other.

    ``files`` maps output names to paths (or is a list of paths when the
    claim has one output). The run's manifest records the sha256 of each
    file, who imported it and when, and the machine as described. ``facts``
    (a mapping of machine facts, or a file made by `facts_script` on that
    machine) are checked against the claim's requirements as a live host's
    are; without them, checks that need the machine are inconclusive.
    """
    if isinstance(facts, (str, Path)):
        facts = sources.read_facts(facts)
    return sources.import_files(project(), claim, files, machine=machine, who=who, note=note, params=params,
                                facts=facts)


def facts_script(claim: Claim) -> str:
    """The shell lines that print a machine's facts for ``claim`` (see `reprobook.sources.facts_script`)."""
    return sources.facts_script(claim)


@dataclass(frozen=True)
class Evaluation:
    claim: Claim
    outputs: sources.Outputs
    measured: pd.DataFrame
    verdict: checks.ClaimVerdict


def rehearsal(claim: Claim, draw: Callable[[pd.DataFrame], object] | None = None) -> None:
    """The latest rehearsal of the claim in the run store, beside the page's own numbers: when it ran and where,
    its scale and deviations, its table, its plot and the verdict its own numbers give (not the page's verdict).

    A rehearsal runs the whole pipeline at small sizes on a small host; its numbers say that the experiment
    runs end to end, and what the checks a rehearsal can judge make of them. Without one, says how to make one.
    The plot is the claim's own (`plot`); a page that draws its figure itself passes ``draw``, called with the
    rehearsal's table; without either, the table stands alone.
    """
    from IPython.display import Markdown, display
    from reprobook.book.text import code, markdown_str
    from reprobook.core.scales import REHEARSAL
    if REHEARSAL not in claim.scales:
        display(Markdown("This claim has no rehearsal scale."))
        return
    outputs, skipped = sources.rehearsals(project(), claim)
    if skipped:   # a newer rehearsal that cannot be read is named, with why, never silently left out
        display(Markdown(markdown_str("Passed over: {}.", "; ".join(skipped))))
    if outputs is None:
        command = code(f"reprobook run {claim.key} --source live --host HOST -p scale rehearsal "
                       f"--allow-insufficient-host")
        display(Markdown(markdown_str("No readable rehearsal of this claim is recorded in the run store. {} makes one "
                                      "(on a small host, in minutes once built), and the page shows it here.", command)))
        return
    measured = load(claim, outputs)
    before = _CHECKED.get(claim.key)
    try:
        verdict = check(claim, measured, outputs)
    finally:   # the page's own verdict keeps its source (glue_verdict reads it)
        if before is None:
            _CHECKED.pop(claim.key, None)
        else:
            _CHECKED[claim.key] = before
    display(Markdown(markdown_str("**The rehearsal:** {}. **Its own verdict:** {} ({}).", outputs.label,
                                  verdict.wording or verdict.verdict.value, verdict.reason)))
    display(deviations(claim, outputs))
    display(shown(measured))
    if draw is not None:
        draw(measured)
    elif claim.plots:
        plot(claim, measured)


def shown(measured: pd.DataFrame) -> pd.DataFrame:
    """The table as a page shows it, rounded: a column the run could not fill (the loader's ``attrs["not_run"]``,
    column -> why) reads why in each empty cell, never a blank."""
    out = measured.round(3)
    for column, why in (measured.attrs.get("not_run") or {}).items():
        if column in out.columns:
            out[column] = out[column].astype(object).where(out[column].notna(), why)
    return out


def evaluate(key: str | Claim, source: str = "auto") -> Evaluation:
    """Obtain, load and check in one call (what the summary page does for every claim)."""
    c = claim(key) if isinstance(key, str) else key
    outputs = obtain(c, source, progress=False)
    measured = load(c, outputs)
    return Evaluation(c, outputs, measured, check(c, measured, outputs))


def describe(claim: Claim):
    """The claim's references, machine needs and published numbers (every source), as Markdown for the page."""
    from IPython.display import Markdown
    needs = "; ".join(claim.requires.describe())
    testbed = claim.requires.testbed
    # the claim itself is stated once, at the top of the page with its verdict (ClaimVerdict's badge), not here
    lines = [f"**In the paper:** {', '.join(claim.refs)}. **Machine:** {needs or 'any'}"
             + (f" ({testbed})" if testbed else "") + ". "
             + (f"**Expected time of a live run:** {claim.expected_time}." if claim.expected_time else ""),
             ""]
    if claim.published:
        precision = {"exact": "exact", "approximate": "approximate (stated as “about”)",
                     "read-off-figure": "read off a figure"}
        lines += ["| published number | value | unit | source | how exact |", "|---|---|---|---|---|"]
        for n in claim.published:
            if n.table:
                continue
            lines.append(f"| {n.what or n.id} | {n.value:g} | {n.unit} | {n.source} | {precision[n.precision]} |")
        paper = project().paper(claim.paper)
        for tid in claim.published_tables:
            cells = paper.published_tables[tid]
            seen = {}
            for n in cells:
                for pv in n.sources:
                    seen.setdefault((pv.name, pv.source, pv.precision), 0)
                    seen[(pv.name, pv.source, pv.precision)] += 1
            units = ", ".join(dict.fromkeys(n.unit for n in cells))
            for i, ((name, src, prec), count) in enumerate(seen.items()):
                role = "compared with" if i == 0 else "shown beside"
                lines.append(f"| table `{tid}`: {count} values ({role}) | see the comparison below | {units} | "
                             f"{src} | {precision[prec]} |")
    if claim.published_note:
        lines += ["", claim.published_note]
    return Markdown("\n".join(lines))


def judge(claim: Claim, measured: pd.DataFrame, outputs: sources.Outputs) -> checks.ClaimVerdict:
    """The claim's verdict (`check`), recorded for the book and the run (`glue_verdict`): a page's verdict cell.

    Examples
    --------
    >>> verdict = rb.judge(claim, measured, outputs)
    >>> verdict  # the last line of a cell shows it
    """
    verdict = check(claim, measured, outputs)
    glue_verdict(verdict)
    if verdict.verdict == checks.Verdict.NOT_RUN:
        try:
            from IPython.display import HTML, display
        except ImportError:  # pragma: no cover - IPython comes with the kernel
            return verdict
        display(HTML(way_forward_html(claim)))  # on the website, lifted under the verdict (book.sphinxext)
    return verdict


def way_forward_html(claim: Claim, *, book_root: str = "../../") -> str:
    """What running ``claim`` would take, in a reader's words: machine, time, the three ways in, where to read on.

    Shown on a page whose verdict is *not run*. ``book_root`` is the website's root seen from the claim's
    page (``notebooks/PAPER/``), for the links to *Getting started* and *When things go wrong*.
    """
    from html import escape

    def code(text: str) -> str:
        return f"<code>{escape(text)}</code>"

    needs = "; ".join(claim.requires.describe())
    testbed = claim.requires.testbed
    machine = (f"a machine with {escape(needs)}" if needs else "any machine reprobook can reach over SSH")
    if testbed:
        machine += f" ({escape(testbed)})"
    if claim.roles:
        roles = "; ".join(f"{escape(r.name)}: {escape(r.count_words)}" + (f" ({escape(r.description)})"
                                                                         if r.description else "")
                          for r in claim.roles.values())
        machine = (f"a cluster named in {code('configs/hosts.yaml')} whose roles give {roles}; every host needs "
                   + (escape(needs) if needs else "only SSH") + (f" ({escape(testbed)})" if testbed else ""))
    time = (f"A live run takes {escape(claim.expected_time)}." if claim.expected_time
            else "The artifact guide gives no time for a run.")
    target = "CLUSTER" if claim.roles else "HOST"
    notebook = f"notebooks/{claim.paper}/{claim.id}.ipynb"
    lab, set_source, set_host = code("make lab"), code('source = "live"'), code(f'host = "{target}"')
    panel, attach = code(f'rb.panel("{claim.key}")'), code("reprobook attach RUN_ID")
    run = code(f"reprobook run {claim.key} --source live --host {target}")
    by_hand = code('rb.import_run(claim, FILES, machine="what the machine is")')
    record = code(f'reprobook import {claim.key} FILES --machine "what the machine is"')
    if claim.runs_live:
        intro = f"Nothing has been measured for this claim yet. A live run needs {machine}. {time}"
        ways = [f"<b>In JupyterLab:</b> {lab}, open {code(notebook)}, set {set_source} and {set_host} in its first "
                f"cell and run all; or launch and follow it from {panel}.",
                f"<b>From the command line:</b> {run}. The run goes on if you disconnect: {attach} picks it up."]
    else:
        intro = (f"Nothing has been measured for this claim yet, and reprobook cannot run it for you: its steps are "
                 f"run by hand (they are listed on this page, under how the experiment runs) on {machine}. {time}")
        ways = [f"<b>In JupyterLab:</b> {lab}, open {code(notebook)} and record the outputs with {by_hand}.",
                f"<b>From the command line:</b> {record}."]
    before = []
    if claim.runs_live and "rehearsal" in claim.scales:
        minutes = claim.scales["rehearsal"].expected_minutes
        before.append(f"<b>A rehearsal first:</b> {code(f'reprobook run {claim.key} --source live --host {target} -p scale rehearsal')} "
                      f"runs every step at sizes a small {'cluster' if claim.roles else 'host'} finishes"
                      + (f" (about {minutes:.0f} minutes)" if minutes else "")
                      + ", says what it changed, and leaves inconclusive the checks those sizes cannot judge; "
                      f"{code(f'reprobook plan {claim.key} -p scale rehearsal')} shows its plan.")
    hardware = (claim.requires.get("cloudlab") or {}).get("hardware_type") if claim.runs_live else None
    if hardware:
        before.append(f"<b>On CloudLab</b> ({escape(', '.join(hardware))} nodes): "
                      f"{code(f'reprobook cloudlab profile {claim.key} -o profile.py')} writes the profile of the nodes "
                      f"it needs ({code('--scale rehearsal')} for the fewest); once the experiment is ready, "
                      f"{code(f'reprobook cloudlab import manifest.xml --cluster {target} --claim {claim.key}')} "
                      f"makes it a cluster of {code('configs/hosts.yaml')} and checks it.")
    ways.append(f"<b>On this website:</b> once a run is recorded, {code('make book')} rebuilds this page with its "
                f"numbers, plot and verdict.")
    items = "".join(f"<li>{w}</li>" for w in ways)
    return (f"{pages.HOWTO_START}<div class='reprobook-howto'><p><b>What it would take.</b> {intro}</p>"
            + "".join(f"<p>{b}</p>" for b in before)
            + f"<p>Three ways in:</p><ul>{items}</ul>"
            f"<p>New to reprobook? <a href='{book_root}book/getting-started.html'>Getting started</a> sets up a "
            f"host, and <a href='{book_root}book/when-things-go-wrong.html'>When things go wrong</a> says what to "
            f"do when a run fails or is cut off.</p></div>{pages.HOWTO_END}")


def evidence(claim: Claim, measured: pd.DataFrame, verdict: checks.ClaimVerdict, *,
             draw: Callable[[pd.DataFrame], object] | None = None) -> None:
    """The evidence under the verdict, in the order a reader wants it: the plot of the run against the paper, a
    compact table of what the checks compared, then each check's reason and rows, folded.

    The plot is the claim's own (`plot`); a page that draws its figures itself passes ``draw``, called with the
    measured table (it shows them; `plot` may be among them). The table names its columns by the loader's words
    with their units, rounds each number to what its spread supports and marks each point ✓ or ✗; its measured
    values are the statistic the checks judge, and it says which. A partial run (a sweep whose later points failed)
    is said first, with the points that failed and why. On the website the book lifts this block under the verdict
    (`reprobook.book.evidence`).

    Examples
    --------
    >>> verdict = rb.judge(claim, measured, outputs)
    >>> rb.evidence(claim, measured, verdict)
    >>> rb.evidence(claim, measured, verdict, draw=draw_curves)   # the page's own figures
    """
    import matplotlib.pyplot as plt
    from IPython.display import HTML, display
    from reprobook.book import plots   # matplotlib and seaborn: only when a plot is asked for
    from reprobook.book.evidence import evidence_parts
    head, tail = evidence_parts(claim, measured, verdict)
    display(HTML(head))
    if draw is not None:
        draw(measured)
    elif claim.plots:
        figure = plots.claim_figure(claim, measured)
        display(figure)
        plt.close(figure)
    for number in plt.get_fignums():   # a figure the page drew and did not show: here, not after the table
        figure = plt.figure(number)
        display(figure)
        plt.close(figure)
    display(HTML(tail))


def glue_verdict(verdict: checks.ClaimVerdict) -> None:
    """Record the verdict for the book (MyST-NB glue) and, under ``reprobook run``, for the run directory.

    During ``reprobook book`` it also writes the verdict's record for the summary page
    (`reprobook.core.verdicts`), so that the summary does not compute it a second time.
    """
    out = os.environ.get("REPROBOOK_VERDICT_FILE")
    if out:
        Path(out).write_text(json.dumps(verdict.as_dict(), indent=2) + "\n")
    directory = os.environ.get(verdicts.ENV_DIR)
    if directory:
        verdicts.write(directory, verdicts.record(verdict, _CHECKED.get(verdict.claim),
                                                  fingerprint=os.environ.get(verdicts.ENV_FINGERPRINT)))
    try:
        # MyST-NB's glue imports nbformat, and it jsonschema: without its format checkers (whose grammars cost a
        # second and a half to build, in every kernel that records a verdict)
        from reprobook.core.schema import jsonschema_module
        jsonschema_module()
        from myst_nb import glue
    except ImportError:  # pragma: no cover - myst-nb is a dependency
        return
    glue("verdict", verdict.says, display=False)
    glue("margin", verdict.margin_words, display=False)
