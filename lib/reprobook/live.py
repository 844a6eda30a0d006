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
import shlex
from typing import Mapping

from .config import Claim, HostSpec, Paper, Project, Repository
from .errors import (ConfigError, ExperimentError, HostBusy, OutputError, ReprobookError, RequirementsNotMet,
                     TestbedError)
from .hosts import Host, open_host
from .jobs import Job, JobStatus, launch
from .runs import Run, RunStore, run_id_for, utcnow
from .transfer import INLINE_MAX_BYTES, fetch, survey


def param_env(claim: Claim, params: Mapping) -> dict[str, str]:
    """``RB_<NAME>`` for each of the claim's parameters (defaults filled in); unknown names are errors."""
    unknown = set(params) - set(claim.parameters)
    if unknown:
        raise ConfigError(f"{claim.key} has no parameter(s) {', '.join(sorted(unknown))} "
                          f"(it has: {', '.join(claim.parameters) or 'none'})")
    env = {}
    for name, p in claim.parameters.items():
        val = params.get(name, p.default)
        env["RB_" + name.upper()] = str(val).lower() if isinstance(val, bool) else str(val)
    return env


def _checkout_lines(repo: Repository, workdir: str) -> list[str]:
    d = f"{workdir.rstrip('/')}/{repo.checkout}"
    q = shlex.quote
    lines = [
        f"rb_checkout {q(repo.url)} {q(repo.commit)} {q(d)}",
    ]
    for sub, sha in repo.submodules.items():
        lines.append(f"rb_expect_submodule {q(d)} {q(sub)} {q(sha)}")
    return lines


_PRELUDE = r"""
rb_step() { echo "### reprobook step $1: $2"; }
rb_checkout() {  # url commit dir
  if [ ! -d "$3/.git" ]; then git clone -q --no-checkout "$1" "$3"; fi
  git -C "$3" cat-file -e "$2^{commit}" 2>/dev/null || git -C "$3" fetch -q origin "$2" 2>/dev/null || git -C "$3" fetch -q origin
  git -C "$3" checkout -q --detach "$2"
  git -C "$3" submodule update -q --init --recursive
  echo "$3 $(git -C "$3" rev-parse HEAD)" >> "$RB_RUN_DIR/checkout.txt"
  git -C "$3" submodule status --recursive | while read -r sha path rest; do
    echo "$3/$path ${sha#[-+U ]}" >> "$RB_RUN_DIR/checkout.txt"
  done
}
rb_expect_submodule() {  # dir path commit
  got=$(git -C "$1/$2" rev-parse HEAD)
  if [ "$got" != "$3" ]; then echo "submodule $2 is at $got, expected $3" >&2; exit 3; fi
}
"""


def build_script(paper: Paper, claim: Claim, host: HostSpec, params: Mapping, remote_run_dir: str) -> str:
    """The job script: environment, checkouts at the pinned commits, then the setup and run steps."""
    q = shlex.quote
    env = {"RB_RUN_DIR": remote_run_dir, "RB_WORKDIR": host.workdir, **param_env(claim, params)}
    git_config = [(f"url.{new}.insteadOf", old) for old, new in host.git_url_rewrites.items()]
    if any(new.startswith(("/", "file:")) for new in host.git_url_rewrites.values()):
        # a local mirror: let submodules be cloned from it too (git refuses file:// submodules by default)
        git_config.append(("protocol.file.allow", "always"))
    if git_config:
        env["GIT_CONFIG_COUNT"] = str(len(git_config))
        for i, (key, value) in enumerate(git_config):
            env[f"GIT_CONFIG_KEY_{i}"] = key
            env[f"GIT_CONFIG_VALUE_{i}"] = value
    env["GIT_TERMINAL_PROMPT"] = "0"
    out = ["#!/bin/bash", f"# reprobook: {claim.key}", "set -euo pipefail"]
    out += [f"export {k}={q(str(v))}" for k, v in env.items()]
    out.append(_PRELUDE)
    out.append(f"mkdir -p {q(host.workdir)} && cd {q(host.workdir)}")
    steps = [("check out " + ", ".join(r.name for r in paper.repositories.values()), None)]
    steps += [(s.name, s) for s in claim.setup + claim.run]
    total = len(steps)
    for i, (name, step) in enumerate(steps, 1):
        minutes = f" (expected {step.expected_minutes:g} min)" if step and step.expected_minutes else ""
        out.append(f"rb_step {i}/{total} {q(name + minutes)}")
        if step is None:
            for repo in paper.repositories.values():
                out += _checkout_lines(repo, host.workdir)
            continue
        cwd = step.cwd if step.cwd.startswith("/") else f"{host.workdir.rstrip('/')}/{step.cwd}".rstrip("/")
        out.append(f"( cd {q(cwd)} && set -euo pipefail\n{step.run.rstrip()}\n)")
    out.append('echo "### reprobook: all steps done"')
    return "\n".join(out) + "\n"


def _check_host(host: Host, claim: Claim, allow_insufficient: bool):
    facts = host.facts(commands=claim.requires.commands)
    short = facts.shortfalls(claim.requires)
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
    spec = project.hosts.host(host_name)
    paper = project.paper(claim.paper)
    env = param_env(claim, params)  # validates names before anything happens
    nonce = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%f") if new else None
    run_id = run_id_for(claim, host_name, {k: env[k] for k in sorted(env)}, nonce)
    store = RunStore(project.settings.runs_dir)
    try:
        existing = store.load(run_id)
        if existing.status == "succeeded":
            return existing
    except ConfigError:
        pass
    with open_host(spec, project.settings) as host:
        facts, short = _check_host(host, claim, allow_insufficient)
        job = Job(host, run_id)
        script = build_script(paper, claim, spec, params, job.remote_dir)
        run = store.create(claim, run_id, source="live", host=host_name, parameters=dict(params),
                           host_facts={host_name: facts.as_dict()}, requirement_shortfalls=short,
                           remote_dir=job.remote_dir, script=script, expected_minutes=claim.expected_minutes,
                           status="launching", artifacts={r.name: {"url": r.url, "commit": r.commit}
                                                          for r in paper.repositories.values()})
        try:
            job, started = launch(host, run_id, script)
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
