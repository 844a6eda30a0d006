"""Where a claim's numbers come from: a recorded run, the authors' shipped outputs, or a live run.

``source`` is one of:

``auto``       the latest successful live or imported run in the run store
               with the same parameters (the scale among them: with the
               claim's defaults, a run at the paper's scale; a rehearsal is
               chosen by asking for its scale), else the authors' shipped
               outputs, else nothing (the verdict is then "not run", with the
               reason);
``reference``  the authors' shipped outputs, from the artifact mirror or git;
``live``       perform the experiment now on ``host`` (see `reprobook.remote.live`);
a run id       that recorded run (its files are checked against the manifest);
``A+B``        several recorded runs of the claim judged as one: their files together (a part of a
               claim run by hand and imported, say CockroachDB beside a live Pesto run). They must be
               at one scale; the label names every run and its machine, the deviations are all of
               theirs, and the first run's parameters and host facts stand for the requirements.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

from reprobook.core import artifacts
from reprobook.core.plan import make_plan
from reprobook.core.config import Claim, Project
from reprobook.errors import ArtifactError, ConfigError, OutputError, ReprobookError
from reprobook.core.runs import Run, RunStore


@dataclass(frozen=True)
class Outputs:
    """The files a claim's loader reads, and an honest account of where they came from.

    A loader reads ``files``: for each output the claim declares (``outputs:`` in its paper file, or
    ``reference:`` for the authors' shipped files), the paths of its files on this machine, sorted. The
    other fields say where they came from; a loader seldom needs them.

    Attributes
    ----------
    claim : str
        The claim's name, ``paper/claim``.
    kind : str
        ``"reference"`` (the authors' shipped outputs), ``"live"`` (a recorded or imported run) or ``"none"``.
    label : str
        Where the numbers come from, as the page says it.
    files : Mapping[str, tuple[Path, ...]]
        Output name -> its files (an output that matched nothing has an empty tuple).
    run_id : str or None
        The run's id (None for shipped outputs).
    host_facts : Mapping
        The measured machine's facts ({} for shipped outputs).
    parameters : Mapping
        The run's parameters.
    scale : str or None
        The run's scale (None for shipped outputs).

    Examples
    --------
    A loader's test builds one from a sample file, as a run would hand it over::

        from pathlib import Path
        from reprobook.sources import Outputs
        outputs = Outputs(claim="mypaper/speedup", kind="live", label="a sample run",
                          files={"results": (Path("tests/unit/data/mypaper/results.csv"),)})
        table = results(outputs)   # the loader, called as reprobook calls it
    """

    claim: str
    kind: str                      # "reference", "live" or "none"
    label: str                     # shown on the page
    files: Mapping[str, tuple[Path, ...]] = field(default_factory=dict)
    run_id: str | None = None
    location: str = ""
    detail: str = ""
    shortfalls: tuple[str, ...] = ()     # how the run's host fell short of the claim's requirements
    host_facts: Mapping = field(default_factory=dict)   # the run's host as probed ({} for shipped or imported outputs)
    parameters: Mapping = field(default_factory=dict)   # the run's parameters ({} for shipped outputs: the paper's)
    scale: str | None = None             # the run's scale (None for shipped outputs: the authors' own runs)
    deviations: tuple = ()               # what the run did differently from the guide (dicts: kind, what, diff)
    toolchains: tuple[str, ...] = ()     # the toolchains its steps reported using (reprobook.core.scales.TOOLCHAIN_MARKER)
    # where the files lie on this machine -> how a reader knows them: an artifact's as owner/repo@commit:path, a
    # run's relative to the run ("" : the path inside it); see `name`
    names: Mapping[str, str] = field(default_factory=dict)
    # a run that did not succeed (a sweep whose later points failed): what finished, what failed and why, what did
    # not run (`partial_of`); None for a run that succeeded and for shipped outputs
    partial: Mapping | None = None

    def name(self, text: str | Path) -> str:
        """``text`` (a path, or a message naming some) with each file named as the reader knows it, not by where
        it lies on the machine that read it."""
        text = str(text)
        for root, shown in sorted(self.names.items(), key=lambda kv: -len(kv[0])):
            text = text.replace(root + os.sep, f"{shown}/" if shown else "").replace(root, shown or ".")
        return text

    @property
    def available(self) -> bool:
        return self.kind != "none" and any(self.files.values())

    @property
    def source(self) -> str:
        """The short source tag used in summaries: ``reference``, the run id, or ``none``."""
        return self.run_id or self.kind

    def has(self, name: str) -> bool:
        """Whether output ``name`` has any file."""
        return bool(self.files.get(name))

    def one(self, name: str) -> Path:
        """The single file of output ``name``."""
        paths = self.files.get(name) or ()
        if len(paths) != 1:
            raise OutputError(f"expected exactly one file for output {name!r}, found {len(paths)}",
                              file=self.location or name)
        return paths[0]

    def __str__(self) -> str:
        return f"{self.claim}: {self.label}" + (f" ({self.detail})" if self.detail else "")

    def _repr_html_(self) -> str:
        from html import escape
        items = "".join(f"<li><code>{escape(n)}</code>: {len(p)} file(s)</li>" for n, p in self.files.items())
        extra = f"<br><i>{escape(self.detail)}</i>" if self.detail else ""
        return f"<div><b>Numbers from:</b> {artifacts.link_refs(self.label)}{extra}<ul>{items}</ul></div>"


def from_run(claim: Claim, run: Run, *, redact_hosts: bool = False) -> Outputs:
    """The outputs recorded in ``run``, after checking every file against the manifest's sha256."""
    run.verify()
    files: dict[str, list[Path]] = {}
    for f in run.manifest.get("files", []):
        if not f.get("unpacked"):   # an archive fetched and unpacked: its files stand for it
            files.setdefault(f["output"], []).append(run.path / f["path"])
    when = run.manifest.get("ended") or run.manifest.get("created")
    if run.manifest.get("source") == "import":
        imp = run.manifest.get("imported") or {}
        machine = "a machine (withheld)" if redact_hosts else imp.get("machine", "a machine")
        label = f"run {run.id}, done by hand on {machine} and imported ({when})"
    else:
        host = "a host (name withheld)" if redact_hosts else f"host {run.manifest.get('host', '?')!r}"
        label = f"run {run.id} on {host} ({when})"
    partial = partial_of(claim, run)
    if partial is not None:
        label += f", which {partial['status']}: a partial run"
    return Outputs(claim.key, run.manifest.get("source", "live"), label,
                   {k: tuple(sorted(v)) for k, v in files.items()}, run_id=run.id, names={str(run.path): ""},
                   partial=partial,
                   location="(withheld)" if redact_hosts else f"run {run.id}",
                   shortfalls=tuple(run.manifest.get("requirement_shortfalls") or ()),
                   host_facts=run_host_facts(run, claim.measured_on),
                   **run_scale(claim, run))


def partial_of(claim: Claim, run: Run) -> dict | None:
    """What a run that did not succeed holds: ``{"status": "failed", "total": n, "done": [point...], "failed":
    [{"point": ..., "why": ...}], "not_run": [point...]}``, each point by its parameters (``clients=6``), from its
    job log (`reprobook.core.plan.sweep_outcome`); None for a run that succeeded (or an import)."""
    from reprobook.core.plan import sweep_outcome
    from reprobook.formats.terminal import printable
    status = run.manifest.get("status") or run.status
    if status == "succeeded" or run.manifest.get("source") == "import":
        return None
    try:
        log = (run.path / "log.txt").read_text(errors="replace")
    except OSError:
        log = ""
    try:
        points = make_plan(claim, run.manifest.get("parameters") or {}).sweep
    except ReprobookError:
        points = [{}]
    out = sweep_outcome(log, len(points))
    from reprobook.remote.steps import point_words

    def name(k: int) -> str:
        return out["names"].get(k) or (point_words(points[k - 1]) if points[k - 1] else "the run")
    why = run.manifest.get("fetch_error") or run.manifest.get("error") or ""
    failed = [{"point": printable(name(f["point"])), "why": printable(f["why"])} for f in out["failed"]]
    if not failed and why:
        failed = [{"point": "the run", "why": printable(why)}]
    return {"status": str(status), "total": len(points), "done": [printable(name(k)) for k in out["done"]],
            "failed": failed, "not_run": [printable(name(k)) for k in out["not_run"]]}


def run_scale(claim: Claim, run: Run) -> dict:
    """A run's parameters, scale, deviations and reported toolchains, as `Outputs` fields."""
    from reprobook.core.scales import toolchains_from_log
    params = dict(run.manifest.get("parameters") or {})
    scale = run.manifest.get("scale") or (params.get("scale") if claim.scales else None)
    try:
        log = (run.path / "log.txt").read_text(errors="replace")
    except OSError:
        log = ""
    return {"parameters": params, "scale": scale, "deviations": tuple(run.manifest.get("deviations") or ()),
            "toolchains": tuple(toolchains_from_log(log))}


def run_host_facts(run: Run, role: str = "") -> dict:
    """The facts probed on a run's host when it was launched ({} when none were: shipped or imported outputs): the
    first host of ``role`` (a claim's ``measured_on``: the machine its numbers come from) when the run placed one,
    else the host reprobook drove. An imported run's facts are the measured machine's, whatever the role."""
    recorded = run.manifest.get("host_facts") or {}
    placed = ((run.manifest.get("placement") or {}).get("roles") or {}).get(role) if role else None
    if placed and placed[0] in recorded:
        return dict(recorded[placed[0]])
    return dict(recorded.get(run.manifest.get("host")) or next(iter(recorded.values()), {}))


def _expand(path: Path) -> tuple[Path, ...]:
    """A file, or every file under a directory (sorted)."""
    if path.is_dir():
        return tuple(sorted(p for p in path.rglob("*") if p.is_file()))
    return (path,)


def reference(project: Project, claim: Claim) -> Outputs:
    """The authors' shipped outputs (`ArtifactError` if they cannot be had)."""
    if not claim.reference:
        return Outputs(claim.key, "none", "not run", detail="the authors ship no outputs for this claim")
    paper = project.paper(claim.paper)
    files, refs, names = {}, [], {}
    for name, ref in claim.reference.items():
        r = artifacts.parse_ref(ref, paper)
        where = artifacts.resolve(r, project.settings)
        files[name] = _expand(where)
        refs.append(str(r))
        names[str(where)] = f"{r.owner_repo}@{r.commit}:{r.path}".rstrip(":")
    return Outputs(claim.key, "reference", "the authors' shipped outputs: " + "; ".join(refs), files,
                   location=", ".join(refs), names=names)


def params_words(params: Mapping) -> str:
    """Parameters as a reader reads them: ``at rehearsal scale``, ``with clients 2 and 4, duration_s 10``."""
    def value(v) -> str:
        if isinstance(v, bool):
            return "yes" if v else "no"
        if isinstance(v, (list, tuple)):
            items = [value(x) for x in v]
            return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else "".join(items)
        return str(v)
    scale = params.get("scale")
    rest = ", ".join(f"{k} {value(v)}" for k, v in params.items() if k != "scale")
    return " ".join(filter(None, [f"at {scale} scale" if scale else "", f"with {rest}" if rest else ""]))


def _no_outputs(claim: Claim, params: Mapping | None, skipped: list[str] = ()) -> str:
    given = {k: v for k, v in (params or {}).items() if v != claim.parameters[k].default}
    with_params = f" {params_words(given)}" if given else ""
    # in a reader's words, no markup: the reason is shown as plain text in the verdict box and the summary
    how = ("run it live on a host that meets its needs (the claim's \"What it would take\" says how)" if claim.runs_live else
           f"run its steps by hand, then record their outputs with reprobook import {claim.key}")
    if skipped:   # runs are recorded, but none can be loaded: say which and why, not "none is recorded"
        return (f"the authors ship no outputs for this claim, and no recorded run{with_params} can be loaded "
                f"({'; '.join(skipped)}): {how}")
    return f"the authors ship no outputs for this claim, and no run{with_params} is recorded yet: {how}"


def read_facts(path: str | Path) -> dict:
    """The machine facts in ``path``: the output of the host probe (``key=value`` lines, `facts_script`) or JSON.

    Raises
    ------
    ConfigError
        Naming the file when it cannot be read or holds no fact.
    """
    import json
    from reprobook.core.requirements import facts_from, validate_facts
    path = Path(path).expanduser()
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise ConfigError(f"cannot read the machine facts file {path} ({exc.strerror or exc})") from None
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        facts = dict(data)
    elif "=" in text:
        facts = facts_from(text).as_dict()
    else:
        facts = {}
    known = {k: v for k, v in facts.items() if v not in (None, "", {}, "unknown")}
    if not known:
        raise ConfigError(f"{path} holds no machine facts: expected the output of the facts script (lines such as "
                          f"cpus=8) or a JSON object of facts")
    return validate_facts(facts, file=path)


def facts_from_flags(*, cores: int | None = None, os: str | None = None, memory_gib: float | None = None,
                     smt: str | None = None, numa_nodes: int | None = None,
                     physical_cores_per_socket: int | None = None, cpu_model: str | None = None) -> dict:
    """Machine facts as an evaluator states them (``--cores 32 --os "Ubuntu 20.04"``), by the probe's fact names."""
    facts: dict = {}
    if cores is not None:
        facts["cpus"] = int(cores)
    if os:
        family, _, release = os.strip().partition(" ")
        facts.update(os=os.strip(), os_id=family.lower(), os_version=release.strip())
    if memory_gib is not None:
        facts["mem_gib"] = float(memory_gib)
    if smt is not None:
        if smt not in ("on", "off"):
            raise ConfigError(f"SMT is 'on' or 'off', not {smt!r}")
        facts["smt"] = smt
    if numa_nodes is not None:
        facts["numa_nodes"] = int(numa_nodes)
    if physical_cores_per_socket is not None:
        facts["physical_cores_per_socket"] = int(physical_cores_per_socket)
    if cpu_model:
        facts["cpu_model"] = cpu_model
    return facts


def facts_script(claim: Claim) -> str:
    """The shell lines that print the facts of the machine they run on, as ``key=value`` lines, for ``claim``:
    run them where the outputs were made (``bash facts.sh . > facts.txt``) and import with ``--facts facts.txt``."""
    from reprobook.core.requirements import probe_script
    return probe_script([claim.requires])


def load_error(claim: Claim, outputs: Outputs) -> str | None:
    """Why the claim's loader cannot make a table with rows of ``outputs``, or None when it can."""
    import pandas as pd
    from reprobook.core import loaders
    from reprobook.errors import ReprobookError
    try:
        table = loaders.load(claim, outputs)
    except ReprobookError as exc:
        return exc.message
    except Exception as exc:   # a parser that fails on what it was never meant to read: the reason, not a traceback
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(table, pd.DataFrame) and not table.empty:
        return None
    return "the claim's loader found no numbers in them"


def readable(claim: Claim, files: Mapping[str, list[Path]], as_given: Mapping[str, str] | None = None) -> None:
    """Check that the claim's loader reads ``files`` (output name to paths) into a table with rows. ``as_given``
    maps a stored path (or the start of one) to the name the user gave it, for the message.

    Raises
    ------
    ConfigError
        Naming the files as given, what the claim expects of each output, and why the loader refused them.
    """
    outputs = Outputs(claim.key, "import", "the files given", {k: tuple(v) for k, v in files.items()},
                      location=", ".join(str(p) for ps in files.values() for p in ps))
    why = load_error(claim, outputs)
    if why is None:
        return
    names = sorted((as_given or {}).items(), key=lambda kv: -len(kv[0]))

    def shown(text: str) -> str:   # a stored file by the name the user gave it
        for stored, name in names:
            text = text.replace(stored, name)
        return text

    why = shown(why)

    def listed(paths) -> str:
        seen = list(dict.fromkeys(shown(str(p)) for p in paths))
        return ", ".join(seen[:3]) + (f" and {len(seen) - 3} more" if len(seen) > 3 else "")

    given = "; ".join(f"{name}={listed(paths)}" for name, paths in files.items())
    expected = "; ".join(f"{name}: {spec.description or spec.glob}" for name, spec in claim.outputs.items())
    why = why.rstrip(". ") + ("" if why.rstrip(". ").endswith(("?", "!")) else ".")
    raise ConfigError(f"{claim.key} cannot read the files given ({given}): {why} It expects {expected}. "
                      f"Nothing was imported.")


def match_directory(claim: Claim, directory: str | Path, only: str | None = None) -> tuple[dict[str, list[Path]],
                                                                                          list[str]]:
    """The files under ``directory`` by the output whose pattern (``glob``) matches each name, and the files no
    output's pattern matches (relative to ``directory``, sorted). ``only``: every file for that output, if its
    pattern matches.

    A file two outputs' patterns match goes to the one whose ``path`` its directory lies in; if none or both,
    `ConfigError` naming the file and the outputs. Symbolic links are not followed (named among the unmatched).
    """
    import fnmatch
    root = Path(directory).expanduser()
    names = [only] if only else list(claim.outputs)
    found: dict[str, list[Path]] = {}
    unmatched: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fname in sorted(filenames):
            path = Path(dirpath) / fname
            rel = path.relative_to(root).as_posix()
            if path.is_symlink() or not path.is_file():
                unmatched.append(f"{rel} (a link)" if path.is_symlink() else rel)
                continue
            hits = [n for n in names if fnmatch.fnmatchcase(fname, claim.outputs[n].glob or "*")]
            if len(hits) > 1:
                parent = Path(rel).parent.as_posix()
                hits = [n for n in hits if claim.outputs[n].path.strip("/") not in ("", ".")
                        and f"/{claim.outputs[n].path.strip('/')}/" in f"/{parent}/"] or hits
            if len(hits) > 1:
                raise ConfigError(f"{rel} in {directory} matches the patterns of outputs {', '.join(hits)}: import "
                                  f"it as NAME=PATH")
            if hits:
                found.setdefault(hits[0], []).append(path)
            else:
                unmatched.append(rel)
    return found, unmatched


def import_files(project: Project, claim: Claim, files, *, machine: str, who: str | None = None, note: str = "",
                 params: Mapping | None = None, facts: Mapping | None = None) -> Run:
    """Record files produced by hand as a run of ``claim`` (see `reprobook.api.import_run`).

    ``facts`` (from `read_facts` or `facts_from_flags`) are the machine's, recorded as a live run's probed
    facts are, so that the claim's requirements are checked on them; without them the checks that depend
    on the machine are inconclusive.
    """
    import getpass
    from reprobook.core.requirements import validate_facts
    facts = validate_facts(facts) if facts else None   # before anything: a refused fact stores nothing
    if not machine or not machine.strip():
        raise ConfigError("describe the machine the files come from (machine=…, --machine …): the page shows it "
                          "beside the verdict")
    unmatched: list[str] = []
    directory = Path(files).expanduser() if isinstance(files, (str, Path)) else None
    if directory is not None and directory.is_dir():
        # one directory: each file to the output whose pattern matches it, keeping its place; the rest named
        found, unmatched = match_directory(claim, directory)
        if not found:
            raise ConfigError(f"no file in {files} matches an output's pattern ("
                              + "; ".join(f"{n}: {o.glob or '*'}" for n, o in claim.outputs.items()) + ")")
        files = {name: [directory] for name in found}
    if not isinstance(files, Mapping):
        paths = [files] if isinstance(files, (str, Path)) else list(files)
        if len(claim.outputs) != 1:
            raise ConfigError(f"{claim.key} has outputs {', '.join(claim.outputs) or '(none)'}: say which file is "
                              f"which, as NAME=PATH")
        files = {next(iter(claim.outputs)): paths}
    resolved: dict[str, list[Path]] = {}
    relative: dict[str, str] = {}   # a directory's file -> its place under the output
    given: dict[str, list[str]] = {}
    for name, paths in files.items():
        if name not in claim.outputs:
            raise ConfigError(f"{claim.key} has no output {name!r} (outputs: {', '.join(claim.outputs) or 'none'})")
        for g in ([paths] if isinstance(paths, (str, Path)) else paths):
            p = Path(g).expanduser()
            if p.is_dir():   # NAME=DIR: the files its pattern matches, each keeping its place in the directory
                if directory is not None and p == directory:
                    picked = found
                else:
                    picked, _ = match_directory(claim, p, only=name)
                for f in picked.get(name, ()):
                    resolved.setdefault(name, []).append(f)
                    relative[str(f)] = f.relative_to(p).as_posix()
                    given.setdefault(name, []).append(f"{g}/{relative[str(f)]}")
                continue
            if not p.is_file():
                raise ConfigError(f"no such file: {g}")
            resolved.setdefault(name, []).append(p)
            given.setdefault(name, []).append(str(g))
    if not resolved:
        raise ConfigError("no files to import" + (f" (no file matches the pattern of {', '.join(files)})"
                                                   if files else ""))

    def check(run_dir: Path, stored: Mapping[str, list[Path]]) -> None:
        # the files as the run will hold them (an archive unpacked once, within its limits), named as given
        as_given = {str(run_dir / "outputs" / name / (relative.get(str(p)) or p.name)): g
                    for name in resolved for p, g in zip(resolved[name], given[name])}
        readable(claim, {k: sorted(v) for k, v in stored.items()}, as_given)

    store = RunStore(project.settings.runs_dir)
    extra = {"host_facts": {"imported": facts}} if facts else {}
    if unmatched:   # the run says which files of the directory it left out
        extra["unmatched"] = unmatched
    run = store.import_files(claim, resolved, machine=machine.strip(), who=who or getpass.getuser(), note=note,
                             params=make_plan(claim, params).params, check=check, limits=project.settings.limits,
                             relative=relative, **extra)
    from reprobook.core.provenance import write_for
    write_for(project, run)   # its RO-Crate (not judged yet: a run of the claim's notebook adds the verdict)
    return run


def _loadable(project: Project, claim: Claim, run: Run) -> tuple[Outputs | None, str | None]:
    """``run``'s outputs and None, or (None or the outputs, why its loader cannot read them), the run's files named
    by their place in the run."""
    try:
        outputs = from_run(claim, run, redact_hosts=project.settings.redact_hosts)
        why = load_error(claim, outputs)
    except ReprobookError as exc:
        outputs, why = None, exc.message
    if why is not None:
        why = why.replace(f"{run.path}{os.sep}", "").replace(str(run.path), f"run {run.id}")
    return outputs, why


def latest_rehearsal(project: Project, claim: Claim) -> Outputs | None:
    """The outputs of the latest successful live run of ``claim`` at its ``rehearsal`` scale, whatever its other
    parameters (None when the claim has no such scale or no such run can be loaded; an unreadable one is passed
    over: `rehearsals` says which and why)."""
    return rehearsals(project, claim)[0]


def rehearsals(project: Project, claim: Claim) -> tuple[Outputs | None, list[str]]:
    """`latest_rehearsal`, and the newer rehearsals passed over because their outputs cannot be loaded, each with
    why (``run <id> skipped: ...``), as the page says them."""
    from reprobook.core.scales import REHEARSAL
    skipped: list[str] = []
    if REHEARSAL not in claim.scales:
        return None, skipped
    for run in RunStore(project.settings.runs_dir).candidates(claim, sources=("live",)):
        if (run.manifest.get("scale") or (run.manifest.get("parameters") or {}).get("scale")) != REHEARSAL:
            continue
        outputs, why = _loadable(project, claim, run)
        if why is None:
            return outputs, skipped
        skipped.append(f"run {run.id} skipped: its outputs cannot be loaded ({why})")
    return None, skipped


def scale_of(claim: Claim, run: Run) -> str:
    """The scale ``run`` was made at: its manifest's, else its parameters', else the paper's (a claim without scales
    runs only at the paper's)."""
    from reprobook.core.scales import PAPER
    return run.manifest.get("scale") or (run.manifest.get("parameters") or {}).get("scale") or PAPER


def latest_by_scale(project: Project, claim: Claim) -> tuple[dict[str, Outputs], list[str]]:
    """The outputs of the latest successful live or imported run of ``claim`` at each scale it was run at, whatever
    its other parameters (what the evaluator's report weighs beside the verdict of ``auto``), and the newer runs
    passed over because their outputs cannot be loaded, each with why."""
    found: dict[str, Outputs] = {}
    skipped: list[str] = []
    for run in RunStore(project.settings.runs_dir).candidates(claim):
        scale = scale_of(claim, run)
        if scale in found:
            continue
        outputs, why = _loadable(project, claim, run)
        if why is None:
            found[scale] = outputs
        else:
            skipped.append(f"run {run.id} skipped: its outputs cannot be loaded ({why})")
    return found, skipped


def obtain(project: Project, claim: Claim, source: str = "auto", *, host: str = "local",
           params: Mapping | None = None, new: bool = False, allow_insufficient: bool = False,
           progress: bool = True) -> Outputs:
    """The outputs for ``claim`` from ``source`` (see the module doc)."""
    store = RunStore(project.settings.runs_dir)
    if source == "auto":
        skipped = []
        for run in store.candidates(claim, params=make_plan(claim, params).params):
            # a run its loader cannot read (a file changed since, or stored before imports were checked) is passed
            # over, saying so: the next good one gives the verdict
            outputs, why = _loadable(project, claim, run)
            if why is None:
                if skipped:
                    outputs = replace(outputs, detail="; ".join(filter(None, [outputs.detail, *skipped])))
                return outputs
            skipped.append(f"run {run.id} skipped: its outputs cannot be loaded ({why})")
            from reprobook.formats.terminal import printable
            print(f"reprobook: {printable(skipped[-1])}", file=sys.stderr)
        if not claim.reference:
            return Outputs(claim.key, "none", "not run", detail=_no_outputs(claim, params, skipped))
        try:
            shipped = reference(project, claim)
        except ArtifactError as exc:
            return Outputs(claim.key, "none", "not run", detail="; ".join(
                [f"no recorded run, and the authors' outputs could not be obtained: {exc.message}", *skipped]))
        return replace(shipped, detail="; ".join(filter(None, [shipped.detail, *skipped]))) if skipped else shipped
    if source == "reference":
        return reference(project, claim)
    if source == "live":
        from reprobook.remote.live import perform
        run = perform(project, claim, host, dict(params or {}), new=new,
                      allow_insufficient=allow_insufficient, progress=progress)
        return from_run(claim, run, redact_hosts=project.settings.redact_hosts)
    if "+" in source:
        return joined(project, claim, source, params=params, progress=progress)
    try:
        run = store.load(source)
    except ConfigError:
        mine = [r.id for r in reversed(store.runs(claim))][:5]
        raise ConfigError(f"unknown source {source!r}: use auto, reference, live or the id of a run of {claim.key}"
                          + (f" (latest: {', '.join(mine)})" if mine else " (none is recorded yet)")) from None
    if run.manifest.get("claim") != claim.id or run.manifest.get("paper") != claim.paper:
        raise ConfigError(f"run {source} belongs to {run.manifest.get('paper')}/{run.manifest.get('claim')}, "
                          f"not to {claim.key}")
    if run.manifest.get("source") in ("auto", "reference"):
        # an evaluation recorded by `reprobook run`: the numbers it judged, once more
        used = run.manifest.get("outputs_source") or run.manifest.get("source")
        if used in ("auto", "none"):
            raise ConfigError(f"run {source} evaluated no outputs (the claim was not run then); "
                              f"use --source auto or live")
        return obtain(project, claim, used, params=params, progress=progress)
    if run.status != "succeeded" and not (run.status in ("failed", "cancelled", "lost") and run.manifest.get("files")):
        raise ConfigError(f"run {source} did not succeed (status: {run.status}; `reprobook status {source}` says more). "
                          f"Run it again with the same parameters to resume it, or use --new to start afresh.")
    # a run that failed with some outputs fetched (a sweep whose later points failed): what it has, marked partial
    return from_run(claim, run, redact_hosts=project.settings.redact_hosts)


def joined(project: Project, claim: Claim, source: str, *, params: Mapping | None = None,
           progress: bool = True) -> Outputs:
    """The outputs of the recorded runs ``A+B+...`` of ``claim``, judged as one: each output's files from every run.

    Each part is a run id (``auto``, ``reference`` and ``live`` are not parts), checked as a source of its own is; the
    runs must be at one scale (a rehearsal's numbers and the paper's are not one experiment)."""
    ids = [s.strip() for s in source.split("+")]
    if len(ids) < 2 or not all(ids) or len(set(ids)) != len(ids):
        raise ConfigError(f"source {source!r}: join two or more different run ids with +, e.g. RUN1+RUN2")
    bad = [i for i in ids if i in ("auto", "reference", "live")]
    if bad:
        raise ConfigError(f"source {source!r}: only recorded runs can be joined, not {', '.join(bad)}")
    parts = [obtain(project, claim, i, params=params, progress=progress) for i in ids]
    scales = {p.scale for p in parts}
    if len(scales) > 1:
        raise ConfigError(f"source {source!r}: the runs are at different scales ("
                          + ", ".join(f"{p.run_id}: {p.scale or 'none given'}" for p in parts)
                          + "); a verdict judges one experiment, so join runs of one scale")
    files: dict[str, tuple[Path, ...]] = {}
    for part in parts:
        for name, paths in part.files.items():
            files[name] = files.get(name, ()) + tuple(paths)
    first = parts[0]
    kinds = {p.kind for p in parts}
    return replace(first, kind="live" if "live" in kinds else first.kind,
                   label=f"runs {' and '.join(ids)} together: " + "; ".join(p.label for p in parts),
                   files=files, run_id="+".join(ids), location=" + ".join(p.location for p in parts),
                   detail="; ".join(filter(None, (p.detail for p in parts))),
                   shortfalls=tuple(s for p in parts for s in p.shortfalls),
                   deviations=_unique_deviations(d for p in parts for d in p.deviations),
                   toolchains=tuple(dict.fromkeys(t for p in parts for t in p.toolchains)),
                   names={k: v for p in parts for k, v in p.names.items()})


def _unique_deviations(deviations) -> tuple:
    """Each deviation once (two runs of one claim often share them), in the order first met."""
    seen, out = set(), []
    for d in deviations:
        key = (d.get("kind"), d.get("what")) if isinstance(d, Mapping) else repr(d)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return tuple(out)
