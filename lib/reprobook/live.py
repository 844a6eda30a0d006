"""Live runs: perform a claim's experiment on a host, detached, and bring the outputs home.

The whole experiment (clone at the pinned commits with submodules, setup
steps, run steps) becomes one detached job, so a dropped connection or a dead
kernel costs nothing: `perform` (or ``reprobook attach RUN_ID`` from any
process) re-attaches by run id and picks up where polling stopped.

Parameters reach the host as environment variables ``RB_<NAME>``, each value
quoted; the step commands in the paper file read them from there.
"""

from __future__ import annotations

import datetime as dt
from typing import Mapping

from .config import Claim, Project
from .errors import (ConfigError, ExperimentError, HostBusy, OutputError, ReprobookError, RequirementsNotMet,
                     TestbedError)
from .hosts import Host, open_host
from .jobs import Job, JobStatus, launch
from .runs import Run, RunStore, run_id_for, utcnow
from .steps import build_script, param_env
from .transfer import INLINE_MAX_BYTES, fetch, survey


def _check_host(host: Host, claim: Claim, allow_insufficient: bool):
    from .requirements import shortfalls
    facts = host.facts(claim.requires)
    short = shortfalls(facts, claim.requires)
    if short and not allow_insufficient:
        why = f" The paper's experiment needs this because: {claim.requires.why}" if claim.requires.why else ""
        raise RequirementsNotMet(
            f"does not meet the requirements of {claim.key}: {'; '.join(short)}.{why} "
            f"To run anyway (the numbers will not be comparable with the paper's), pass allow_small_host=True "
            f"in the notebook or --allow-insufficient-host on the command line.", host=host.name)
    return facts, short


def perform(project: Project, claim: Claim, host_name: str, params: Mapping, *, new: bool = False,
            allow_insufficient: bool = False, progress: bool = True, poll_s: float | None = None) -> Run:
    """Run ``claim`` live on ``host_name``, or attach to the same run if it exists; return the recorded `Run`.

    The same claim, host and parameters give the same run id, so calling this
    twice attaches (or, once finished, returns the recorded run) instead of
    starting again; ``new=True`` starts a fresh run.
    """
    if not claim.runs_live:
        how = (" Run its steps by hand (they are on the claim's page) and record the outputs with "
               f"`reprobook import {claim.key} FILES…`." if claim.manual else "")
        raise ConfigError(f"{claim.key} cannot be run by reprobook: it has no steps to run on a host.{how}")
    spec = project.hosts.host(host_name)
    paper = project.paper(claim.paper)
    env = param_env(claim, params)  # validates names and types before anything happens
    nonce = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%f") if new else None
    run_id = run_id_for(claim, host_name, {k: env[k] for k in sorted(env)}, nonce)
    store = RunStore(project.settings.runs_dir)
    resume = False
    try:
        existing = store.load(run_id)
        if existing.status == "succeeded":
            return existing
        # failed, cancelled, lost or cut off: launch again, and the job skips the steps it finished
        resume = existing.status in ("failed", "cancelled", "lost", "launch-unknown", "refused", "fetching", "running",
                                     "launching")
    except ConfigError:
        pass
    with open_host(spec, project.settings) as host:
        facts, short = _check_host(host, claim, allow_insufficient)
        job = Job(host, run_id)
        script = build_script(paper, claim, spec, params, job.remote_dir)
        run = store.create(claim, run_id, source="live", host=host_name, parameters=claim.resolve_params(params),
                           host_facts={host_name: facts.as_dict()}, requirement_shortfalls=short,
                           remote_dir=job.remote_dir, script=script, expected_minutes=claim.expected_minutes,
                           status="launching", artifacts={r.name: {"url": r.url, "commit": r.commit}
                                                          for r in paper.repositories_for(claim)})
        try:
            job, started = launch(host, run_id, script, resume=resume)
        except HostBusy as exc:
            run.update(status="refused", error=exc.message)
            raise
        except ReprobookError as exc:
            # the connection may have dropped after the job started: `reprobook status` asks the host
            run.update(status="launch-unknown", error=exc.message)
            raise
        run.update(status="running", error=None, launched=utcnow() if started else run.manifest.get("launched", utcnow()))
        return follow(project, claim, run, host, progress=progress, poll_s=poll_s, job=job)


def follow(project: Project, claim: Claim, run: Run, host: Host, *, progress: bool = True,
           poll_s: float | None = None, job: Job | None = None) -> Run:
    """Wait for ``run`` to end, then fetch its outputs and record them (also after a failure)."""
    job = job or Job(host, run.id)
    st = job.wait(expected_s=(claim.expected_minutes or 0) * 60 or None, poll_s=poll_s or project.settings.poll_interval_s,
                  progress=progress, title=claim.key)
    return collect(claim, run, job, st)


def collect(claim: Claim, run: Run, job: Job, st: JobStatus) -> Run:
    """Fetch outputs, log and checkouts of a finished job into ``run``; then raise if it did not succeed."""
    host = job.host
    d = job.remote_dir
    # one round trip: the log, the checkouts, the outputs' listing and the bytes of the small ones
    listing = survey(host, claim.outputs, newer_than=f"{d}/started", read=(f"{d}/checkout.txt", f"{d}/log"),
                     inline_max=INLINE_MAX_BYTES)
    checkouts, log = listing.texts[f"{d}/checkout.txt"] or "", listing.texts[f"{d}/log"] or ""
    (run.path / "log.txt").write_text(log)
    run.update(status=st.state if st.state != "succeeded" else "fetching", exit_code=st.exit_code,
               started=_iso(st.started), ended=_iso(st.ended),
               checkouts=dict(l.split(" ", 1) for l in checkouts.splitlines() if " " in l))
    try:
        files = fetch(host, claim.outputs, run.path, listing=listing)
    except (OutputError, TestbedError) as exc:
        run.update(fetch_error=exc.message)
        raise
    run.update(files=[{"output": f.output, "path": f.path, "size": f.size, "sha256": f.sha256} for f in files],
               partial=st.state != "succeeded")
    job.raise_for_status(st)
    if not files:
        run.update(status="failed")
        raise ExperimentError(f"run {run.id} ended well but produced none of the outputs "
                              f"({', '.join(o.path + '/' + o.glob for o in claim.outputs.values())})",
                              command=f"{job.remote_dir}/cmd.sh", exit_code=st.exit_code, log_tail=st.log_tail,
                              host=host.name)
    run.update(status="succeeded")
    return run


def _iso(ts: float | None) -> str | None:
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).isoformat(timespec="seconds") if ts else None


def reattach(project: Project, run_id: str, *, progress: bool = True, poll_s: float | None = None) -> Run:
    """Attach to a recorded run by id from any process, wait for it and collect it."""
    store = RunStore(project.settings.runs_dir)
    run = store.load(run_id)
    if run.manifest.get("source") != "live":
        what = {"import": "outputs imported by hand", "auto": "an evaluation", "reference": "an evaluation of the "
                "authors' shipped outputs"}.get(run.manifest.get("source"), "not a live run")
        raise ConfigError(f"run {run_id} is {what}: there is no job on a host to attach to. "
                          f"`reprobook run {run.manifest.get('paper')}/{run.manifest.get('claim')} --source {run_id}` "
                          f"evaluates it again.")
    if run.status == "succeeded":
        return run
    claim = project.paper(run.manifest["paper"]).claim(run.manifest["claim"])
    with open_host(project.hosts.host(run.manifest["host"]), project.settings) as host:
        return follow(project, claim, run, host, progress=progress, poll_s=poll_s)


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
    run.update(status=st.state)
    return st
