"""Live runs: perform a claim's experiment on a host, detached, and bring the outputs home.

The whole experiment (clone at the pinned commits with submodules, setup
steps, run steps) becomes one detached job, so a dropped connection or a dead
kernel costs nothing: `perform` (or ``reprobook attach RUN_ID`` from any
process) re-attaches by run id and picks up where polling stopped.

Parameters reach the host as environment variables ``RB_<NAME>``, each value
quoted; the step commands in the paper file read them from there.

A claim with roles runs on a placement (a cluster of ``hosts.yaml``; see
`reprobook.remote.placement`): every host is checked at once before anything starts,
the job runs on the control host, the other hosts are held for the run (a second
run on any of them is refused), and outputs of other roles are fetched from each
of their hosts into ``hosts/<name>/``. The manifest records every host with its
roles and facts.

One process at a time works on a run: `perform`, `reattach` and `collect`
hold the run's lock (`reprobook.core.runs.RunStore.lock`); a second process waits,
and says for whom. A process killed at any instant leaves the run store
consistent, and `repair` (which ``reprobook status``, ``attach`` and ``run``
call) puts the run's status right from what the host says.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from dataclasses import dataclass
import sys
from typing import Callable, Mapping

from reprobook.core.archives import ArchiveRefused, Budget, Limits
from reprobook.core.config import Claim, Project
from reprobook.core.plan import RunPlan, cluster_values, make_plan
from reprobook.errors import (ConfigError, ExperimentError, HostBusy, LimitExceeded, OutputsRefused, ReprobookError,
                              RequirementsNotMet, TestbedError)
from reprobook.remote.hosts import Host, open_host
from reprobook.remote.jobs import Job, JobStatus, launch
from reprobook.remote.listing import INLINE_MAX_BYTES, TEXT_MAX_BYTES
from reprobook.remote.listing import Listing, Pending
from reprobook.core.locks import Holder
from reprobook.core.runs import ON_HOST, Run, RunStore, run_id_for, unpack_fetched, utcnow, write_atomic
from reprobook.remote.placement import Placement, open_hosts, place, release, survey
from reprobook.core.scales import manifest_fields
from reprobook.core.secrets import mask_credentials
from reprobook.formats.terminal import printable
from reprobook.remote.steps import build_script, expected_left_s, param_env
from reprobook.remote.transfer import fetch


def plan_live(project: Project, claim: Claim, target: str, params: Mapping, *, new: bool = False,
              inputs: Mapping[str, bytes | str] | None = None, run_id: str | None = None) -> RunPlan:
    """The `RunPlan` of a live run of ``claim`` on ``target`` (a host, or a cluster of ``hosts.yaml``).

    Nothing is contacted: the placement comes from ``hosts.yaml``, the parameters are resolved (names
    and types checked), and the run id follows from the claim, the placement and the parameters (and
    from ``inputs`` given by the caller, which make another run). ``new`` gives a fresh id; ``run_id``
    names a recorded run to attach to or resume instead.
    """
    if not claim.runs_live:
        how = (" Run its steps by hand (they are on the claim's page) and record the outputs with "
               f"`reprobook import {claim.key} FILES…`." if claim.manual else "")
        raise ConfigError(f"{claim.key} cannot be run by reprobook: it has no steps to run on a host.{how}")
    claim = claim.at_scale(claim.scale_of(params))   # the roles a scale gives of its own decide the placement
    placement = place(project, claim, target)
    # a cluster imported from a testbed gives the parameters that name its experiment, unless they are given
    params, origins = cluster_values(claim, params, project.hosts.clusters.get(placement.cluster))
    draft = make_plan(claim, params, paper=project.paper(claim.paper), source="live", target=target,
                      roles=placement.roles, cluster=placement.cluster, new=new, origins=origins)
    if claim.inputs:   # what the generated inputs would name outside the placement: refused before anything runs
        from reprobook.core.inputs import precheck
        precheck(project, draft, placement)
    env = param_env(draft)
    nonce = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%f") if new else None
    given = {n: (d.encode() if isinstance(d, str) else bytes(d)) for n, d in (inputs or {}).items()}
    keyed = {k: env[k] for k in sorted(env)}
    if given:  # the caller's own files make another run; generated ones follow from what the id has
        keyed["inputs"] = {n: hashlib.sha256(d).hexdigest() for n, d in sorted(given.items())}
    return dataclasses.replace(draft, run_id=run_id or run_id_for(claim, placement.key(), keyed, nonce))


def perform(project: Project, claim: Claim, host_name: str, params: Mapping, *, new: bool = False,
            allow_insufficient: bool = False, progress: bool = True, poll_s: float | None = None,
            inputs: Mapping[str, bytes | str] | None = None, on_run: Callable[[Run], None] | None = None,
            run_id: str | None = None) -> Run:
    """Run ``claim`` live on ``host_name`` (a host, or a cluster of ``hosts.yaml``), or attach to the same run.

    The same claim, placement and parameters give the same run id, so calling
    this twice attaches (or, once finished, returns the recorded run) instead of
    starting again; ``new=True`` starts a fresh run. A run that failed is
    launched again and resumes at its first unfinished step (or sweep point).
    ``inputs`` (name -> content) are files made here for the run, such as
    generated experiment configs: kept in the run's ``inputs/``, recorded in
    the manifest with their sha256, and written on the host before the first
    step (``$RB_INPUTS/<name>``); other inputs make another run. ``on_run`` is
    called with the `Run` as soon as it is recorded (before the launch), or
    with the recorded run when it had already succeeded: a control panel or a
    pool learns the run id while this call still waits. ``run_id`` names the
    recorded run to attach to or resume instead of the one the parameters name
    (how `resume` picks up a run started with ``new=True``).

    It is `plan_live` then `execute`.
    """
    plan = plan_live(project, claim, host_name, params, new=new, inputs=inputs, run_id=run_id)
    return execute(project, plan, allow_insufficient=allow_insufficient, progress=progress, poll_s=poll_s,
                   inputs=inputs, on_run=on_run)


def execute(project: Project, plan: RunPlan, *, allow_insufficient: bool = False, progress: bool = True,
            poll_s: float | None = None, inputs: Mapping[str, bytes | str] | None = None,
            on_run: Callable[[Run], None] | None = None) -> Run:
    """Carry out a live `RunPlan`: survey its hosts, launch the job on the control host, follow it, fetch.

    One path for one host and for a cluster (a single host is a placement of one). A run already
    recorded under the plan's id is attached to, resumed, or (when it succeeded) returned.
    """
    claim = plan.claim
    placement = Placement.of(project, dict(plan.roles), next(iter(plan.roles)), plan.cluster)
    store = RunStore(project.settings.runs_dir)
    given = {n: (d.encode() if isinstance(d, str) else bytes(d)) for n, d in (inputs or {}).items()}
    with store.lock(plan.run_id).acquire(on_wait=_waiting(plan.run_id)):
        kept = _RunInputs(given, {}, generate=inputs is None and bool(claim.inputs))
        resume, done = _resuming(store, plan.run_id, on_run)
        if done is not None:
            return done
        specs = {n: project.hosts.host(n) for n in placement.hosts}
        # the other hosts are held for the run in the round trip of their probe (released if it goes no further)
        with survey(project, claim, placement, allow_insufficient=allow_insufficient, hold_for=plan.run_id) as sv:
            host = sv.hosts[placement.control]
            members = {n: sv.hosts[n] for n in placement.members}
            try:
                facts = {n: f.as_dict() for n, f in sv.facts.items()}
                # the hosts adapt what was not asked for explicitly (a default is not a choice): from the plan's `asked`
                params, adapted = _adapted(claim, plan.asked, facts, {n: placement.roles_of(n) for n in placement.hosts})
                used = plan.using(params)
                kept = kept.made_for(project, used, placement, facts)
                script = build_script(project.paper(claim.paper), used, specs[placement.control],
                                      Job(host, plan.run_id).remote_dir, placement=placement, members=specs,
                                      inputs=kept.data, input_points=kept.points)
            except BaseException:
                release(members, plan.run_id)   # nothing was launched: the holds go
                raise
            shortfalls = ([s for lines in sv.shortfalls.values() for s in lines] if placement.single else
                          [f"{n}: {s}" for n, lines in sv.shortfalls.items() for s in lines])
            return _start(project, plan, store, host, script, used, resume, kept, progress, poll_s, on_run,
                          members=members, placement=placement.as_dict(),
                          hosts=sv.manifest(), host_facts=facts, requirement_shortfalls=shortfalls, **adapted)


@dataclass(frozen=True)
class _RunInputs:
    """A live run's inputs (name -> bytes) and, for generated ones, the `reprobook.core.inputs.RunInput` they came from.

    With ``generate`` the claim's generator makes them once the hosts are known (`made_for`)."""

    data: Mapping[str, bytes]
    origins: Mapping[str, object]
    generate: bool = False

    @property
    def points(self) -> dict[str, Mapping]:
        """Name -> the sweep point a generated input is made for (`reprobook.core.inputs.RunInput.point`)."""
        return {n: o.point for n, o in self.origins.items() if getattr(o, "point", None)}

    def made_for(self, project, plan: RunPlan, placement: Placement, facts: Mapping[str, Mapping]) -> "_RunInputs":
        if not self.generate:
            return self
        from reprobook.core.inputs import generate
        made = generate(project, plan, placement, facts)
        return _RunInputs({i.name: i.data for i in made}, {i.name: i for i in made})


def _keep_inputs(run: Run, kept: _RunInputs) -> None:
    """The run's inputs, kept beside its manifest (``inputs/<name>``, with ``<name>.diff`` against the authors'
    file a generated one came from) and recorded with their sha256 and source."""
    inputs, origins = kept.data, kept.origins
    if not inputs:
        return
    (run.path / "inputs").mkdir(mode=0o700, exist_ok=True)
    record = {}
    for name, data in inputs.items():
        write_atomic(run.path / "inputs" / name, data)
        record[name] = {"path": f"inputs/{name}", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        origin = origins.get(name)
        if origin is not None and origin.source:
            record[name]["source"] = origin.source
            write_atomic(run.path / "inputs" / f"{name}.diff", origin.diff)
            record[name]["diff"] = f"inputs/{name}.diff"
        if origin is not None and getattr(origin, "point", None):
            record[name]["point"] = {k: (v if isinstance(v, (str, int, float, bool)) else str(v))
                                     for k, v in origin.point.items()}
    run.update(inputs=record)


def _resuming(store: RunStore, run_id: str, on_run=None) -> tuple[bool, Run | None]:
    """Whether a recorded run of this id is to be resumed; the run itself when it already succeeded."""
    try:
        existing = store.load(run_id)
    except ConfigError:
        return False, None
    for line in _picked_up(existing) + existing.repair_local():
        _say(f"run {run_id}: {line}")
    if existing.status == "succeeded":
        if on_run:
            on_run(existing)
        return False, existing
    # failed, cancelled, lost, cut off or never started: launch again, and the job skips the steps it finished
    return existing.status in ("failed", "cancelled", "lost", "launch-unknown", "refused", "fetching", "running",
                               "launching", "ended", "interrupted", "created"), None


def _adapted(claim: Claim, params: Mapping, facts: Mapping[str, Mapping],
             roles: Mapping[str, tuple[str, ...]] | None = None) -> tuple[dict, dict]:
    """The parameters the run uses once its hosts' facts are known, and the manifest's ``adapted`` record."""
    if not claim.adaptations:
        return dict(params), {}
    from reprobook.core.scales import adapt
    used, made = adapt(claim.adaptations, params, facts, roles)
    for record in made:
        _say(f"adapted to the hosts: {record['why']} ({'; '.join(record['shortfalls'])}): "
             + (record.get("not_made") or f"this run uses {record['set']}"))
    return used, ({"adapted": made} if made else {})


def _start(project, plan: RunPlan, store, host: Host, script: str, used: RunPlan, resume: bool, inputs: _RunInputs,
           progress, poll_s, on_run, *, members: Mapping[str, Host] | None = None, **fields) -> Run:
    """Record the run (everything known before it starts), launch on ``host``, follow. The other hosts,
    ``members``, are held for the run already (`survey` with ``hold_for``); they are released when it does not start.

    ``used`` is the plan with the parameters the run uses (as its hosts adapted them); the manifest's ``parameters`` are those the plan asked for (what
    the run id and ``auto`` go by), defaults filled in, ``given`` the names of those asked for explicitly
    (a run resumed by id asks for those again, so that its hosts adapt it as they did), ``adapted`` says
    what the hosts changed of them, and ``plan`` is the whole `RunPlan`."""
    claim, run_id = plan.claim, plan.run_id
    paper = project.paper(claim.paper)
    job = Job(host, run_id)
    members = dict(members or {})
    run = None
    try:
        run = store.create(claim, run_id, source="live", host=host.name,
                           parameters=dict(plan.params), given=sorted(plan.asked), plan=plan.as_dict(),
                           remote_dir=job.remote_dir, script=script, expected_minutes=claim.expected_minutes,
                           status="launching", artifacts={r.name: {"url": r.url, "commit": r.commit}
                                                          for r in paper.repositories_for(claim)},
                           **fields, **manifest_fields(used))
        _keep_inputs(run, inputs)
        if on_run:
            on_run(run)
    except BaseException:
        release(members, run_id)   # nothing was launched: the holds go
        if run is not None:
            run.update(status="cancelled", error="stopped before its launch")
        raise
    try:
        # its checkout and steps do not end at once: no wait for that in the launch, nor its status (the poll that
        # follows at once waits on the host for the end; the status's reads come a second later, not beside the
        # job's first step)
        job, started = launch(host, run_id, script, resume=resume, settle=False, report=False)
    except HostBusy as exc:
        release(members, run_id)
        run.update(status="refused", error=exc.message)
        raise
    except ExperimentError as exc:
        # the launch command ran and failed: if no job was made, nothing runs, and the hosts held for it go free
        if _never_started(host, run_id):
            release(members, run_id)
            run.update(status="failed", error=f"the job could not be launched: {exc.message}")
            raise
        run.update(status="launch-unknown", error=exc.message)
        raise
    except ReprobookError as exc:
        # the connection may have dropped after the job started: `reprobook status` asks the host
        run.update(status="launch-unknown", error=exc.message)
        raise
    except BaseException:  # interrupted (Ctrl-C in a notebook): the job may or may not have started
        run.update(status="launch-unknown", error="interrupted while launching")
        raise
    run.update(status="running", error=None, launched=utcnow() if started else run.manifest.get("launched", utcnow()))
    return follow(project, claim, run, host, progress=progress, poll_s=poll_s, job=job, members=members)


def _never_started(host: Host, run_id: str) -> bool:
    """Whether the host has no job for ``run_id`` (a launch that failed before making one); False when it cannot
    tell (the host does not answer): the run is then left for `reprobook status` to settle."""
    try:
        return Job(host, run_id).status().state == "unknown"
    except ReprobookError:
        return False


def follow(project: Project, claim: Claim, run: Run, host: Host, *, progress: bool = True,
           poll_s: float | None = None, job: Job | None = None, members: Mapping[str, Host] | None = None) -> Run:
    """Wait for ``run`` to end, then fetch its outputs and record them (also after a failure).

    ``members`` are the other hosts of the run's placement (opened from the manifest when not given)."""
    job = job or Job(host, run.id)
    paper, recorded = project.paper(claim.paper), make_plan(claim, run.manifest.get("parameters") or {})
    # the outputs are listed by the poll that sees the job end, in its round trip
    ahead = _listing(claim, run, job)
    st = job.wait(expected_s=(claim.expected_minutes or 0) * 60 or None, poll_s=poll_s or project.settings.poll_interval_s,
                  left_s=lambda st: expected_left_s(paper, recorded, st.step, st.points_done, st.point_s),
                  progress=progress, title=claim.key, then=ahead)
    if members is None and run.manifest.get("placement"):
        members = open_hosts(project, Placement.from_dict(run.manifest["placement"]).members)
    try:
        return collect(claim, run, job, st, members=members, limits=project.settings.limits,
                       listing=ahead.finish() if ahead.received else None)
    finally:
        for m in (members or {}).values():
            m.close()


def _listing(claim: Claim, run: Run, job: Job) -> Pending:
    """The listing `collect` needs of the control host, in one round trip: the log's end, the checkouts, the outputs'
    files and the bytes of the small ones."""
    placement = Placement.from_dict(run.manifest["placement"]) if run.manifest.get("placement") else None
    d = job.remote_dir
    return Pending(job.host, _outputs_by_host(claim, placement)[0], newer_than=f"{d}/first_started",
                   read=(f"{d}/checkout.txt", f"{d}/log"), inline_max=INLINE_MAX_BYTES)


def collect(claim: Claim, run: Run, job: Job, st: JobStatus, *, members: Mapping[str, Host] | None = None,
            limits: Limits | None = None, listing: Listing | None = None) -> Run:
    """Fetch outputs, log and checkouts of a finished job into ``run``; then raise if it did not succeed.

    ``listing``: the control host's (`_listing`), when the status poll that saw the job end brought it; else it is
    made here.

    With a placement of several hosts, ``members`` (the other hosts, by name)
    are released from their hold, and the outputs of other roles are fetched
    from each of their hosts into ``hosts/<name>/``.

    The status is ``fetching`` only while this runs; if the fetch breaks off
    (or this process is interrupted) the run is left ``ended``, and
    ``reprobook attach`` fetches what is missing. Records the host sent that
    cannot be trusted make the run ``failed``, with the proper files recorded.

    Everything fetched counts against one budget of ``limits`` (the settings' ``limits``; by default
    those of the environment): a listing over it makes the run ``failed`` with nothing transferred, the
    message naming the file and the limit. An archive among the fetched files is unpacked there, once,
    within the same budget (`reprobook.core.runs.unpack_fetched`); one refused leaves the run ``failed``
    with the fetched files recorded and nothing of the archive unpacked.
    """
    host = job.host
    d = job.remote_dir
    placement = Placement.from_dict(run.manifest["placement"]) if run.manifest.get("placement") else None
    members = dict(members or {})
    here, there = _outputs_by_host(claim, placement)
    with run.lock.acquire(on_wait=_waiting(run.id)), _Releasing(members, run.id) as releasing:
        # the other hosts are let go while the control host's outputs are listed and fetched (each takes a round
        # trip or two)
        listing = listing or _listing(claim, run, job).run()
        checkouts, log = listing.texts[f"{d}/checkout.txt"] or "", listing.texts[f"{d}/log"] or ""
        whole = listing.text_sizes.get(f"{d}/log", 0)
        if whole > TEXT_MAX_BYTES:
            log = (f"[reprobook: the log has {whole} bytes; only its last {TEXT_MAX_BYTES} were fetched. The whole "
                   f"log is on host {host.name} at {d}/log]\n") + log
        write_atomic(run.path / "log.txt", mask_credentials(log), durable=False)  # no token of a URL kept
        run.update(status="fetching", job_state=st.state, exit_code=st.exit_code,
                   started=_iso(st.started), ended=_iso(st.ended),
                   checkouts=dict(l.split(" ", 1) for l in checkouts.splitlines() if " " in l))
        budget = Budget(limits or Limits.from_env())
        try:
            files = fetch(host, here, run.path, listing=listing, budget=budget)
            releasing.wait()   # the other hosts' connections are free again for their outputs
            files += _fetch_members(run, members, there, budget)
        except LimitExceeded as exc:
            run.update(status="failed", files=[], partial=True, fetch_error=exc.message)
            raise
        except OutputsRefused as exc:
            run.update(status="failed", files=_records(exc.fetched), partial=True, fetch_error=exc.message,
                       refused=[{"record": rec, "reason": why} for rec, why in exc.records])
            raise
        except BaseException as exc:
            run.update(status="ended", fetch_error=getattr(exc, "message", None) or f"interrupted ({type(exc).__name__})")
            raise
        try:
            records = unpack_fetched(run.path, _records(files), budget)
        except ArchiveRefused as exc:
            run.update(status="failed", files=_records(files), partial=True, fetch_error=exc.message)
            raise
        if st.state != "succeeded":
            run.update(status=st.state, files=records, partial=True, fetch_error=None)
            job.raise_for_status(st)
        if not files:
            run.update(status="failed", files=[], partial=False, fetch_error=None)
            raise ExperimentError(f"run {run.id} ended well but produced none of the outputs "
                                  f"({', '.join(o.path + '/' + o.glob for o in claim.outputs.values())})",
                                  command=f"{job.remote_dir}/cmd.sh", exit_code=st.exit_code, log_tail=st.log_tail,
                                  host=host.name)
        # the files and the status in one write: a run is never 'succeeded' without its files
        run.update(status="succeeded", files=records, partial=False, fetch_error=None)
        return run


class _Releasing:
    """`release` of ``members`` from run ``run_id``'s hold, in a thread of its own from entry on; `wait` (at the
    latest on exit) waits for it and says which hosts could not be told."""

    def __init__(self, members: Mapping[str, Host], run_id: str):
        self.members, self.run_id, self._future, self._pool = dict(members), run_id, None, None

    def __enter__(self) -> "_Releasing":
        if self.members:
            from concurrent.futures import ThreadPoolExecutor
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="reprobook-release")
            self._future = self._pool.submit(release, self.members, self.run_id)
        return self

    def wait(self) -> None:
        if self._future is None:
            return
        future, self._future = self._future, None
        try:
            unreleased = future.result()
        finally:
            self._pool.shutdown()
        for name, why in unreleased.items():
            _say(f"run {self.run_id}: host {name} could not be released from its hold ({why}); it frees itself "
                 f"within two days, or remove {Job(self.members[name], self.run_id).remote_dir}.hold by hand")

    def __exit__(self, *exc) -> None:
        self.wait()


def _outputs_by_host(claim: Claim, placement: Placement | None):
    """The outputs the control host holds, and host -> the outputs each other host holds."""
    if placement is None or placement.single:
        return dict(claim.outputs), {}
    here, there = {}, {}
    for name, o in claim.outputs.items():
        role = o.role or claim.control_role
        if role == claim.control_role:
            here[name] = o
        else:
            for h in placement.roles.get(role, ()):
                there.setdefault(h, {})[name] = o
    return here, there


def _fetch_members(run: Run, members: Mapping[str, Host], there: Mapping[str, Mapping], budget: Budget) -> list:
    """Fetch each other host's outputs into ``hosts/<name>/`` of the run; their paths say so."""
    import dataclasses
    from reprobook.remote.placement import hold_id_for
    out = []
    for name, outputs in there.items():
        if name not in members:
            raise TestbedError(f"run {run.id} has outputs on host {name}, which is not open", host=name)
        started = f"{Job(members[name], hold_id_for(run.id)).remote_dir}/first_started"
        for f in fetch(members[name], outputs, run.path / "hosts" / name, newer_than=started, budget=budget):
            out.append(dataclasses.replace(f, path=f"hosts/{name}/{f.path}"))
    return out


def _records(files) -> list[dict]:
    return [{"output": f.output, "path": f.path, "size": f.size, "sha256": f.sha256} for f in files]


def _say(message: str) -> None:
    print(f"reprobook: {printable(message)}", file=sys.stderr, flush=True)  # it quotes hosts, steps and logs


def _waiting(run_id: str):
    def tell(holder: Holder | None) -> None:
        who = str(holder) if holder else "another process"
        _say(f"run {run_id} is being worked on by {who}; waiting for it to finish (Ctrl-C stops waiting; the run "
             f"itself is not affected)")
    return tell


def _picked_up(run: Run) -> list[str]:
    """What to say about a run whose last process was killed half-way, as this one picks it up."""
    if not run.stale:
        return []
    owner = run.manifest.get("owner") or {}
    return [f"was left {run.status!r} by pid {owner.get('pid', '?')} (`{owner.get('command', '?')}`), which is gone; "
            f"picking it up from there"]


def repair(project: Project, run: Run, *, host: Host | None = None) -> list[str]:
    """Put a run's recorded status right when the process that wrote it is gone; return what was found.

    A run that a living process works on is left alone. Otherwise unfinished
    temporary files are removed, and a live run recorded as launching,
    fetching, running or the like takes its status from its job on the host:
    ``interrupted`` (the launch never reached the host), ``running``, or
    ``ended`` (the job ended; `reattach` fetches its outputs). Nothing is
    fetched or launched here. A host that cannot be reached is said so, and
    the status is left as it was.
    """
    found = run.repair_local()
    if run.manifest.get("source") != "live" or run.lock.held_elsewhere():
        return found
    was, stale = run.status, run.stale
    if not (stale or was in ON_HOST):
        return found
    owner = run.manifest.get("owner") or {}
    why = (f"was recorded {was!r} by pid {owner.get('pid', '?')} (`{owner.get('command', '?')}`), which is gone"
           if stale else f"was recorded {was!r}")
    try:
        if host is None:
            with open_host(project.hosts.host(run.manifest["host"]), project.settings) as h:
                st = Job(h, run.id).status()
        else:
            st = Job(host, run.id).status()
    except (TestbedError, ConfigError) as exc:
        if stale:
            found.append(f"{why}; its host could not be asked ({exc.message}), so the status stays as it was")
        return found
    now = {"unknown": "interrupted", "running": "running"}.get(st.state, "ended")
    if now == was and (now != "ended" or run.manifest.get("job_state") == st.state) and not stale:
        return found
    where = run.manifest.get("host", "the host")
    said = {"interrupted": f"{where} has no such job: the launch never reached it. Now recorded 'interrupted'; "
                           f"running the same claim with the same parameters starts it",
            "running": f"the job is running on {where}: now recorded 'running'; `reprobook attach {run.id}` follows it",
            "ended": f"the job on {where} has ended ({st.state}) and its outputs are not all fetched: now recorded "
                     f"'ended'; `reprobook attach {run.id}` fetches them"}[now]
    fields = {"status": now, "repaired": {"was": was, "at": utcnow(), "job_state": st.state}}
    if now == "ended":
        fields.update(job_state=st.state, exit_code=st.exit_code)
    run.update(**fields)
    found.append(f"{why}; {said}")
    return found


def _iso(ts: float | None) -> str | None:
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).isoformat(timespec="seconds") if ts else None


def reattach(project: Project, run_id: str, *, progress: bool = True, poll_s: float | None = None) -> Run:
    """Attach to a recorded run by id from any process, wait for it and collect it."""
    run = _live_run(project, run_id)
    with run.lock.acquire(on_wait=_waiting(run_id)):
        run.reload()
        for line in _picked_up(run) + run.repair_local():
            _say(f"run {run_id}: {line}")
        if run.status == "succeeded":
            return run
        claim = project.paper(run.manifest["paper"]).claim(run.manifest["claim"])
        with open_host(project.hosts.host(run.manifest["host"]), project.settings) as host:
            return follow(project, claim, run, host, progress=progress, poll_s=poll_s)


def resume(project: Project, run_id: str, *, progress: bool = True, poll_s: float | None = None) -> Run:
    """Pick up a recorded live run by id whatever became of it: one still going is followed, one that
    failed, was cut off or cancelled is launched again on the same hosts with the same parameters and
    resumes at its first unfinished step (or sweep point), one that succeeded is returned.

    This is what running the same `perform` again does, also for a run started with ``new=True``,
    whose id its parameters alone do not give."""
    run = _live_run(project, run_id)
    claim = project.paper(run.manifest["paper"]).claim(run.manifest["claim"])
    where = (run.manifest.get("placement") or {}).get("cluster") or run.manifest["host"]
    asked = (run.manifest.get("plan") or {}).get("asked")
    if asked is None:  # recorded before runs kept their plan
        recorded = run.manifest.get("parameters") or {}
        given = run.manifest.get("given")
        if given is None:  # recorded before `given` was: the values that differ from the defaults
            defaults = make_plan(claim).params
            given = [k for k, v in recorded.items() if make_plan(claim, {k: v}).params[k] != defaults.get(k)]
        asked = {k: recorded[k] for k in given if k in recorded}
    # only what was asked for explicitly: a default is not a choice, and the hosts adapt the rest again
    return perform(project, claim, where, asked, run_id=run_id, progress=progress, poll_s=poll_s)


def _live_run(project: Project, run_id: str) -> Run:
    run = RunStore(project.settings.runs_dir).load(run_id)
    if run.manifest.get("source") != "live":
        what = {"import": "outputs imported by hand", "auto": "an evaluation", "reference": "an evaluation of the "
                "authors' shipped outputs"}.get(run.manifest.get("source"), "not a live run")
        raise ConfigError(f"run {run_id} is {what}: there is no job on a host to attach to. "
                          f"`reprobook run {run.manifest.get('paper')}/{run.manifest.get('claim')} --source {run_id}` "
                          f"evaluates it again.")
    return run


def _job_for(project: Project, run_id: str) -> tuple[Run, Host, Job]:
    run = RunStore(project.settings.runs_dir).load(run_id)
    if run.manifest.get("source") != "live":
        raise ConfigError(f"run {run_id} is not a live run")
    host = open_host(project.hosts.host(run.manifest["host"]), project.settings)
    return run, host, Job(host, run_id)


def status(project: Project, run_id: str) -> tuple[Run, JobStatus]:
    run, host, job = _job_for(project, run_id)
    with host:
        return run, job.status()


def cancel(project: Project, run_id: str) -> JobStatus:
    run, host, job = _job_for(project, run_id)
    with host:
        st = job.cancel()
    if run.manifest.get("placement"):
        members = open_hosts(project, Placement.from_dict(run.manifest["placement"]).members)
        try:
            for name, why in release(members, run_id).items():
                _say(f"run {run_id}: host {name} could not be released from its hold ({why})")
        finally:
            for m in members.values():
                m.close()
    run.update(status=st.state)
    return st
