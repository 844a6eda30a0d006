"""A whole paper on a pool of hosts: every claim that runs live goes to a host that can take it.

``reprobook run PAPER --all --hosts a,b,c`` (or `run_all`) works in three steps:

1. **Plan**, before anything starts: every host is probed once, in parallel, for the facts all
   the claims ask about; each claim is given a host that meets its requirements
   (`reprobook.core.requirements.shortfalls`), the longest claims first, each to the eligible host
   with the least work so far. A claim no host can take, with each host's shortfalls, a host
   that cannot be reached, and a claim that reprobook cannot run (its steps are done by hand)
   are said before any run starts.
2. **Run**: each host runs its claims one after another (a host runs one benchmark at a time,
   `reprobook.remote.jobs`), the hosts in parallel. Every claim is a detached job on its host
   (`reprobook.remote.live.perform`), so an interrupted ``--all`` loses nothing: running it again
   attaches to each run. One view shows every claim's state.
3. **Summarise**: each finished run is judged like any other (`reprobook.api.evaluate`), its
   verdict recorded in its manifest, and one table says, per claim, host, run, time and verdict.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, TextIO

from reprobook.core.provenance import write_for
from reprobook.core.config import Claim, Project
from reprobook.errors import ConfigError, ReprobookError
from reprobook.formats.terminal import printable


@dataclass(frozen=True)
class Plan:
    """Which host runs which claim, and what cannot run, decided before anything starts."""

    paper: str
    hosts: tuple[str, ...]
    assigned: Mapping[str, str]                      # claim key -> host, in the order the claims run
    unplaceable: Mapping[str, str]                   # claim key -> why no host can take it
    not_live: Mapping[str, str]                      # claim key -> why reprobook cannot run it
    unreachable: Mapping[str, str]                   # host -> the error
    facts: Mapping[str, Mapping] = field(default_factory=dict)   # host -> its facts as probed

    def by_host(self) -> dict[str, list[str]]:
        """Host -> the claims it runs, in order."""
        out: dict[str, list[str]] = {h: [] for h in self.hosts}
        for key, host in self.assigned.items():
            out[host].append(key)
        return out

    def lines(self) -> list[str]:
        """The plan in words, one line per host and per claim that will not run."""
        out = [f"{host}: {', '.join(keys) if keys else 'nothing to run'}" for host, keys in self.by_host().items()
               if host not in self.unreachable]
        out += [f"{host}: unreachable ({why})" for host, why in self.unreachable.items()]
        out += [f"{key}: no host can take it: {why}" for key, why in self.unplaceable.items()]
        out += [f"{key}: not run here: {why}" for key, why in self.not_live.items()]
        return out


@dataclass(frozen=True)
class ClaimRun:
    """How one claim of the pool went: its host and run, how long it took, and its verdict."""

    claim: str
    host: str | None
    run_id: str | None
    status: str              # succeeded, failed, error, no host, not live
    seconds: float
    verdict: str             # holds, fails, inconclusive, not run (as the page words it)
    margin: float | None = None
    detail: str = ""         # the verdict's reason, or the error

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"


@dataclass(frozen=True)
class PoolResult:
    """A paper run on a pool: the plan, each claim's `ClaimRun` (in the paper's order) and the wall time."""

    plan: Plan
    runs: tuple[ClaimRun, ...]
    seconds: float

    @property
    def succeeded(self) -> tuple[ClaimRun, ...]:
        return tuple(r for r in self.runs if r.succeeded)

    @property
    def failed(self) -> tuple[ClaimRun, ...]:
        return tuple(r for r in self.runs if r.status in ("failed", "error"))

    def table(self) -> list[dict]:
        """One row per claim: claim, host, run, status, time, verdict, margin."""
        from reprobook.core.checks import margin_words
        return [{"claim": r.claim, "host": r.host or "-", "run id": r.run_id or "-", "status": r.status,
                 "time": f"{r.seconds:.1f} s" if r.seconds else "-", "verdict": r.verdict,
                 "margin": margin_words(r.margin)} for r in self.runs]


def _hosts_needed(claim: Claim) -> int:
    return sum(role.min for role in claim.roles.values()) if claim.roles else 1


def plan(project: Project, paper_id: str, hosts: Iterable[str], *, claims: Iterable[str] | None = None,
         params: Mapping[str, object] | None = None) -> Plan:
    """Probe ``hosts`` (in parallel) and give each live claim of ``paper_id`` a host that meets its requirements.

    ``params`` (``{"scale": "rehearsal"}``) are the run's: each claim is placed as it runs at the scale they give
    it (`Claim.at_scale`: a rehearsal may need fewer hosts than the paper's run). Raises `ConfigError` for an
    unknown paper, claim or host, or when no claim of the paper runs live.
    """
    from reprobook.remote.hosts import open_host
    from reprobook.core.requirements import shortfalls
    paper = project.paper(paper_id)
    names = list(dict.fromkeys(h.strip() for h in hosts if h.strip()))
    if not names:
        raise ConfigError("name the hosts of the pool: --hosts a,b,c (hosts of configs/hosts.yaml)")
    specs = [project.hosts.host(h) for h in names]  # an unknown name: a clear error, before any connection
    chosen = [paper.claim(c.split("/")[-1]) for c in claims] if claims else list(paper.claims.values())
    given = dict(params or {})
    chosen = [c.at_scale(given.get("scale")) if "scale" in c.parameters else c for c in chosen]
    live, not_live = [], {}
    for c in chosen:
        if not c.runs_live:
            not_live[c.key] = ("its steps are run by hand; record their outputs with "
                               f"`reprobook import {c.key} FILES…`" if c.manual else "it has no steps to run on a host")
        elif _hosts_needed(c) > 1:
            not_live[c.key] = (f"it needs {_hosts_needed(c)} hosts in roles ({', '.join(c.roles)}): run it alone "
                               f"with `reprobook run {c.key} --source live --host CLUSTER`")
        else:
            live.append(c)
    if not live:
        raise ConfigError(f"no claim of {paper_id} can be run live by reprobook: "
                          + "; ".join(f"{k}: {why}" for k, why in not_live.items()))
    reqs = [c.role("").requires or c.requires for c in live]

    def probe(spec):
        try:
            with open_host(spec, project.settings) as host:
                return spec.name, host.facts(reqs), None
        except ReprobookError as exc:
            return spec.name, None, exc.message
    with ThreadPoolExecutor(max_workers=len(specs)) as ex:
        probed = list(ex.map(probe, specs))
    facts = {name: f for name, f, _ in probed if f is not None}
    unreachable = {name: err for name, _, err in probed if err is not None}
    load = {h: 0.0 for h in facts}
    assigned, unplaceable = {}, {}
    # the longest claims first, each to the eligible host with the least expected work so far
    for c, r in sorted(zip(live, reqs), key=lambda cr: -(cr[0].expected_minutes or 0)):
        short = {h: shortfalls(f, r) for h, f in facts.items()}
        fit = [h for h in facts if not short[h]]
        if not fit:
            why = "; ".join(f"{h}: {'; '.join(s)}" for h, s in short.items()) or "no host could be reached"
            unplaceable[c.key] = why
            continue
        host = min(fit, key=lambda h: (load[h], names.index(h)))
        load[host] += c.expected_minutes or 0.0
        assigned[c.key] = host
    if not assigned:
        lines = [f"{k}: {why}" for k, why in unplaceable.items()] + [f"{h}: unreachable ({e})" for h, e in unreachable.items()]
        raise ConfigError(f"no host of the pool ({', '.join(names)}) can take any claim of {paper_id}:\n  "
                          + "\n  ".join(lines))
    order = [c.key for c in chosen if c.key in assigned]
    return Plan(paper_id, tuple(names), {k: assigned[k] for k in order}, unplaceable, not_live, unreachable,
                {h: f.as_dict() for h, f in facts.items()})


class ProgressView:
    """One view of every claim's state: redrawn in place on a terminal, a line per change otherwise."""

    def __init__(self, keys: Iterable[str], out: TextIO | None = None, *, interval_s: float = 1.0):
        self.out = out or sys.stderr
        self.states = {k: "queued" for k in keys}
        self.started: dict[str, float] = {}
        self.interval_s = interval_s
        self.tty = hasattr(self.out, "isatty") and self.out.isatty()
        self._lock = threading.Lock()
        self._drawn = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def set(self, key: str, state: str) -> None:
        state = printable(state)  # drawn on a terminal: text, never an escape sequence
        with self._lock:
            if state == "running" and key not in self.started:
                self.started[key] = time.monotonic()
            changed, self.states[key] = self.states[key] != state, state
        if changed and not self.tty:
            self.out.write(f"[{self._count()}] {key}: {state}\n")
            self.out.flush()

    def _count(self) -> str:
        done = sum(s.startswith(("done", "failed", "error")) for s in self.states.values())
        return f"{done}/{len(self.states)} done"

    def _draw(self) -> None:
        with self._lock:
            now = time.monotonic()
            width = max(len(k) for k in self.states)
            lines = [f"reprobook run --all: {self._count()}"]
            for k, s in self.states.items():
                elapsed = f" ({now - self.started[k]:.0f} s)" if k in self.started and s == "running" else ""
                lines.append(f"  {k.ljust(width)}  {s}{elapsed}")
            up = f"\x1b[{self._drawn}F" if self._drawn else ""
            self.out.write(up + "".join(f"\x1b[2K{line}\n" for line in lines))
            self.out.flush()
            self._drawn = len(lines)

    def __enter__(self) -> ProgressView:
        if self.tty:
            def loop():
                while not self._stop.wait(self.interval_s):
                    self._draw()
            self._draw()
            self._thread = threading.Thread(target=loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._draw()


def run_all(paper: str, hosts: Iterable[str] | str, *, project: Project | None = None,
            params: Mapping[str, object] | None = None, claims: Iterable[str] | None = None, new: bool = False,
            progress: bool = True, out: TextIO | None = None,
            on_plan: Callable[[Plan], None] | None = None, poll_s: float | None = None) -> PoolResult:
    """Run every live claim of ``paper`` on the pool ``hosts``, in parallel, and judge each run.

    Parameters
    ----------
    paper : str
        The paper's id, e.g. ``"aardvark"``.
    hosts : list of str, or "a,b,c"
        Hosts of ``configs/hosts.yaml``.
    params : mapping, optional
        Claim parameters: each applies to the claims that have it (e.g. ``{"scale": "rehearsal"}``);
        a name no claim has is an error.
    claims : list of str, optional
        Only these claims (ids or ``paper/claim`` keys).
    new : bool
        Start fresh runs instead of attaching to earlier ones with the same parameters.
    progress : bool
        Show the progress view (on ``out``, default stderr).
    on_plan : callable, optional
        Called with the `Plan` before anything starts (the command line prints it).

    Example
    -------
    >>> result = rb.run_all("aardvark", ["node1", "node2"], params={"scale": "rehearsal"})  # doctest: +SKIP
    >>> [(r.claim, r.host, r.verdict) for r in result.runs]                                  # doctest: +SKIP
    """
    from reprobook import api, sources
    from reprobook.remote.live import perform
    from reprobook.core.runs import RunStore
    if project is None:
        from reprobook.api import project as current
        project = current()
    hosts = hosts.split(",") if isinstance(hosts, str) else list(hosts)
    params = dict(params or {})
    pool = plan(project, paper, hosts, claims=claims, params=params)
    known = {n for key in pool.assigned for n in project.claim(key).parameters}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ConfigError(f"no claim to run has parameter(s) {', '.join(unknown)} (they have: "
                          f"{', '.join(sorted(known)) or 'none'})")
    per_claim = {key: {k: v for k, v in params.items() if k in project.claim(key).parameters} for key in pool.assigned}
    from reprobook.core.plan import make_plan
    for key, p in per_claim.items():
        make_plan(project.claim(key), p)  # ill-typed values refused before anything starts
    if on_plan is not None:
        on_plan(pool)
    t0 = time.monotonic()
    store = RunStore(project.settings.runs_dir)
    results: dict[str, ClaimRun] = {}
    view = ProgressView(pool.assigned, out, interval_s=1.0) if progress else None

    def one(key: str, host: str) -> ClaimRun:
        claim = project.claim(key)
        start = time.monotonic()
        if view:
            view.set(key, f"running on {host}")
        recorded: dict[str, str] = {}
        try:
            run = perform(project, claim, host, per_claim[key], new=new, progress=False, poll_s=poll_s,
                          on_run=lambda r: recorded.update(id=r.id))
        except ReprobookError as exc:
            if view:
                view.set(key, f"failed on {host}")
            return ClaimRun(key, host, recorded.get("id"), "failed", time.monotonic() - start, "not run", None,
                            exc.message)
        took = time.monotonic() - start
        if view:
            view.set(key, f"done on {host} ({took:.0f} s), judging")
        return ClaimRun(key, host, run.id, "succeeded", took, "", None, "")

    def host_queue(host: str, keys: list[str]) -> None:
        for key in keys:
            results[key] = one(key, host)

    queues = {h: keys for h, keys in pool.by_host().items() if keys}
    with view if view else contextlib.nullcontext():
        with ThreadPoolExecutor(max_workers=max(1, len(queues))) as ex:
            for f in [ex.submit(host_queue, h, keys) for h, keys in queues.items()]:
                f.result()
        # judged here, one after another: loading and checking is quick, and pandas is not shared across threads
        for key, r in list(results.items()):
            if not r.succeeded:
                continue
            claim = project.claim(key)
            outputs = sources.obtain(project, claim, r.run_id, progress=False)
            verdict = api.check(claim, api.load(claim, outputs), outputs)
            judged = store.load(r.run_id)
            judged.update(verdict=str(verdict.verdict), margin=verdict.margin)
            write_for(project, judged, verdict=verdict.as_dict())   # the run's RO-Crate, with its verdict
            results[key] = ClaimRun(key, r.host, r.run_id, r.status, r.seconds, verdict.says, verdict.margin,
                                    verdict.reason)
            if view:
                view.set(key, f"done on {r.host}: {verdict.says}")
    ordered = []
    for c in project.paper(paper).claims.values():
        if claims and c.key not in pool.assigned and c.key not in pool.unplaceable and c.key not in pool.not_live:
            continue
        if c.key in results:
            ordered.append(results[c.key])
        elif c.key in pool.unplaceable:
            ordered.append(ClaimRun(c.key, None, None, "no host", 0.0, "not run", None, pool.unplaceable[c.key]))
        elif c.key in pool.not_live:
            ordered.append(ClaimRun(c.key, None, None, "not live", 0.0, "not run", None, pool.not_live[c.key]))
    return PoolResult(pool, tuple(ordered), time.monotonic() - t0)
