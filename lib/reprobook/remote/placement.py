"""Placement: which hosts play which role in a run, checked together before anything starts.

A claim declares its roles (``control``, ``server``, ``client``, ...), each with a
count and its own requirements; a claim without roles has one, ``control``: the
host it runs on. A placement maps each role to host names, from a cluster of
``hosts.yaml``::

    clusters:
      pesto:
        roles:
          control: [control]
          server: [us-east-1-0, us-east-1-1, us-east-1-2, eu-west-1-0, eu-west-1-1, eu-west-1-2]
          client: [client-0-0, client-1-0]

or from a single host, which then plays every role (when the counts allow it).
The run's job lives on the control host; a step of another role runs on each of
that role's hosts over SSH from the control host (as the guide's own scripts do),
so the run stays one detached job. Inside a cluster, hosts reach each other by
their names inside the cluster (a host's ``node`` in ``hosts.yaml``, else its name
there: the guide's names, a CloudLab manifest's ``client_id``), through the control
host's SSH configuration or the experiment's own name service; steps see the lists as
``RB_HOSTS_<ROLE>`` (space-separated) and the control host as ``RB_CONTROL_HOST``,
by those names.

Before a run, `survey` opens every host in parallel, probes its facts and judges
each against its roles' requirements; a `PlacementRefused` names every host that
failed and how, and nothing is launched. While the run lives, every other host
of the placement is *held* (`hold`): a small detached job on it keeps the host's
benchmark lock, so that a second run on any of them is refused, naming the
holder; `release` lets them go when the run ends.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from reprobook.core.config import CONTROL, Claim, Project
from reprobook.errors import ConfigError, HostBusy, ReprobookError, RequirementsNotMet, TestbedError
from reprobook.remote.group import on_each
from reprobook.remote.hosts import Host, open_host
from reprobook.core.requirements import HostFacts, Requirements, facts_from, probe_script, shortfalls

HOLD_SCRIPT = """# reprobook: holds this host for run {run_id} (its job runs on {control})
end=$(( $(date +%s) + {seconds} ))
# woken by a line on the fifo `wake` (release writes one), else it looks every 5 s; without a fifo, every second
if rm -f wake && mkfifo wake 2>/dev/null && exec 3<>wake; then nap() {{ read -r -t 5 -u 3 _ || true; }}
else nap() {{ sleep 1; }}; fi
while [ ! -e release ] && [ "$(date +%s)" -lt "$end" ]; do nap; done
"""
"""The job that holds a member host: it keeps the host's benchmark lock until released (or a deadline). It sleeps
on a fifo that `release` writes to: it ends as soon as it is told, without waking up every second for two days."""

RELEASE_WAIT_S = 20
"""How long `release` waits for a told hold to end (it is woken at once; one that cannot be looks each second)."""

HOLD_HOURS = 48
"""A hold nobody releases (its client gone for good) ends by itself after this long."""


class PlacementRefused(TestbedError):
    """Some hosts of a placement cannot take part: unreachable, or short of their role's requirements.

    ``report`` maps each host name to what was wrong with it (only the failing ones).
    """

    def __init__(self, message: str, *, report: Mapping[str, str]):
        super().__init__(message)
        self.report = dict(report)


@dataclass(frozen=True)
class Placement:
    """Role -> host names (``hosts.yaml``'s) for one run; the control role first.

    ``nodes``: a host's name inside the cluster where it is not its name in ``hosts.yaml`` (an imported
    cluster's ``pesto-us-east-1-0`` is ``us-east-1-0`` there): the name the steps and generated inputs use.
    """

    roles: Mapping[str, tuple[str, ...]]
    control_role: str = CONTROL
    cluster: str = ""
    nodes: Mapping[str, str] = field(default_factory=dict)

    def node(self, host: str) -> str:
        """``host``'s name inside the cluster."""
        return self.nodes.get(host, host)

    def node_roles(self) -> dict[str, tuple[str, ...]]:
        """Role -> the hosts' names inside the cluster (what an artifact's configs name)."""
        return {r: tuple(self.node(h) for h in names) for r, names in self.roles.items()}

    @property
    def control(self) -> str:
        """The host that runs the job (the first of the control role)."""
        return self.roles[self.control_role][0]

    @property
    def hosts(self) -> tuple[str, ...]:
        """Every host once, the control host first."""
        seen = dict.fromkeys([self.control])
        for names in self.roles.values():
            seen.update(dict.fromkeys(names))
        return tuple(seen)

    @property
    def members(self) -> tuple[str, ...]:
        """The hosts other than the control host (held while the run lives)."""
        return self.hosts[1:]

    @property
    def single(self) -> bool:
        return len(self.hosts) == 1

    def roles_of(self, host: str) -> tuple[str, ...]:
        return tuple(r for r, names in self.roles.items() if host in names)

    def key(self) -> str:
        """What identifies the placement in a run id: the host, or every role's hosts."""
        if self.single:
            return self.control
        return ";".join(f"{r}={','.join(names)}" for r, names in self.roles.items())

    def env(self) -> dict[str, str]:
        """``RB_CONTROL_HOST`` and ``RB_HOSTS_<ROLE>`` for the steps."""
        out = {"RB_CONTROL_HOST": self.node(self.control)}
        for role, names in self.node_roles().items():
            out["RB_HOSTS_" + re.sub(r"[^A-Za-z0-9]", "_", role).upper()] = " ".join(names)
        return out

    def as_dict(self) -> dict:
        out = {"cluster": self.cluster, "control": self.control,
               "roles": {r: list(n) for r, n in self.roles.items()}}
        if self.nodes:
            out["nodes"] = dict(self.nodes)
        return out

    @classmethod
    def from_dict(cls, data: Mapping) -> "Placement":
        roles = {r: tuple(n) for r, n in data["roles"].items()}
        control_role = next(r for r, n in roles.items() if n and n[0] == data["control"])
        return cls(roles, control_role, data.get("cluster", ""), dict(data.get("nodes") or {}))

    @classmethod
    def of(cls, project: Project, roles: Mapping[str, tuple[str, ...]], control_role: str,
           cluster: str = "") -> "Placement":
        """The placement of ``roles`` with each host's name inside the cluster from ``hosts.yaml``."""
        specs = project.hosts.hosts
        nodes = {h: specs[h].node for names in roles.values() for h in names if h in specs and specs[h].node
                 and specs[h].node != h}
        return cls({r: tuple(n) for r, n in roles.items()}, control_role, cluster, nodes)


def place(project: Project, claim: Claim, target: str) -> Placement:
    """The placement of ``claim`` on ``target``: a cluster of ``hosts.yaml``, or one host for every role.

    Raises
    ------
    ConfigError
        The target is neither a host nor a cluster, the cluster lacks one of the
        claim's roles, or a role gets fewer or more hosts than it takes.
    """
    roles = dict(claim.roles) or {CONTROL: claim.role(CONTROL)}
    clusters = project.hosts.clusters
    if target in clusters:
        cluster = clusters[target]
        where = f"cluster {target!r} of {project.hosts.path}"
        missing = [r for r in roles if r not in cluster.roles]
        if missing:
            raise ConfigError(f"{where} has no role {', '.join(missing)} that {claim.key} needs "
                              f"(it has: {', '.join(cluster.roles)})")
        chosen = {r: tuple(cluster.roles[r]) for r in roles}
    elif target in project.hosts.hosts:
        where = f"host {target!r}"
        chosen = {r: (target,) for r in roles}
    else:
        known = sorted(project.hosts.hosts) + [f"{c} (cluster)" for c in sorted(clusters)]
        raise ConfigError(f"no host or cluster named {target!r} (known: {', '.join(known)})", file=project.hosts.path)
    for name, spec in roles.items():
        n = len(chosen[name])
        if n < spec.min or (spec.max is not None and n > spec.max):
            raise ConfigError(f"{claim.key}'s role {name!r} takes {spec.count_words}; {where} gives it {n}"
                              + ("" if target in clusters else f": name a cluster of hosts.yaml with a role {name!r}"))
    control_role = next(iter(roles))
    if len(chosen[control_role]) != 1:
        raise ConfigError(f"the control role {control_role!r} of {claim.key} takes one host")
    return Placement.of(project, chosen, control_role, target if target in clusters else "")


@dataclass
class Survey:
    """Every host of a placement, opened, with its facts and its shortfalls against its roles' requirements."""

    placement: Placement
    hosts: dict[str, Host]
    facts: dict[str, HostFacts]
    shortfalls: dict[str, list[str]] = field(default_factory=dict)

    def close(self) -> None:
        for h in self.hosts.values():
            h.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def manifest(self) -> dict:
        """``{host: {"roles": [...], "facts": {...}, "shortfalls": [...]}}`` for the run's manifest."""
        return {name: {"roles": list(self.placement.roles_of(name)), "facts": self.facts[name].as_dict(),
                       "shortfalls": self.shortfalls.get(name, [])} for name in self.placement.hosts}


def requirements_of(claim: Claim, placement: Placement, host: str) -> list[Requirements]:
    """The requirements ``host`` must meet: those of each role it plays."""
    return [claim.role(r).requires or claim.requires for r in placement.roles_of(host)]


def _short_of_requirements(claim: Claim, host: str, short: list[str]) -> RequirementsNotMet:
    why = f" The paper's experiment needs this because: {claim.requires.why}" if claim.requires.why else ""
    return RequirementsNotMet(
        f"does not meet the requirements of {claim.key}: {'; '.join(short)}.{why} "
        f"To run anyway (the numbers will not be comparable with the paper's), pass allow_small_host=True "
        f"in the notebook or --allow-insufficient-host on the command line.", host=host)


def check_host(host: Host, claim: Claim, *, allow_insufficient: bool = False) -> tuple[HostFacts, list[str]]:
    """Probe ``host`` and judge it against ``claim``'s requirements: its facts and its shortfalls.

    Raises
    ------
    RequirementsNotMet
        The host falls short (unless ``allow_insufficient``); the message says of what and how to run anyway.
    """
    facts = host.facts(claim.requires)
    short = shortfalls(facts, claim.requires)
    if short and not allow_insufficient:
        raise _short_of_requirements(claim, host.name, short)
    return facts, short


def survey(project: Project, claim: Claim, placement: Placement, *, allow_insufficient: bool = False,
           hold_for: str | None = None) -> Survey:
    """Open every host of ``placement`` in parallel, probe its facts and judge it against its roles.

    One round trip per host, all at once (a cluster of 36 takes the time of its
    slowest host). Returns the `Survey` with the hosts open (close it, or use it
    as a context manager). With ``hold_for`` (a run id), each host other than
    the control host is held for that run (`hold`) in the same round trip as
    its probe; if the placement is then refused, or this call is interrupted,
    the holds are released and those it took afresh removed.

    Raises
    ------
    PlacementRefused
        A host could not be reached, or (unless ``allow_insufficient``) falls
        short of a role's requirements; the message has a line per failing host.
    HostBusy
        (with ``hold_for``) another run holds a host; nothing was started.
    """
    names = placement.hosts
    hosts = open_hosts(project, names)
    fresh: dict[str, bool] = {}   # the hosts held here: whether their hold was taken afresh

    def one(host: Host):
        reqs = requirements_of(claim, placement, host.name)
        if hold_for is not None and host.name != placement.control:
            facts, fresh[host.name] = _hold_one(host, hold_for, placement.control, reqs)
        else:
            facts = host.facts(reqs)
        return host, facts, list(dict.fromkeys(s for r in reqs for s in shortfalls(facts, r))), None

    try:
        return _judged(claim, placement, hosts, on_each(hosts, one), allow_insufficient, hold_for)
    except BaseException:
        if fresh:
            release({n: hosts[n] for n in fresh}, hold_for, forget=[n for n, new in fresh.items() if new])
        raise


def _judged(claim: Claim, placement: Placement, hosts: dict[str, Host], got: Mapping, allow_insufficient: bool,
            hold_for: str | None) -> Survey:
    """The `Survey` of what `survey` found on each host, or its refusal."""
    names = placement.hosts
    busy = {n: r for n, r in got.items() if isinstance(r, HostBusy)}
    if busy:
        for h in hosts.values():
            h.close()
        raise _not_held(busy, hold_for)
    results = {}
    for name, found in got.items():
        if isinstance(found, ReprobookError):
            hosts[name].close()
            found = (None, None, [], found)
        results[name] = found
    report: dict[str, str] = {}
    for name, (host, facts, short, exc) in results.items():
        roles = ", ".join(placement.roles_of(name))
        if exc is not None:
            report[name] = f"{name} ({roles}): not reachable: {getattr(exc, 'message', exc)}"
        elif short and not allow_insufficient:
            report[name] = f"{name} ({roles}): {'; '.join(short)}"
    opened = {n: r[0] for n, r in results.items() if r[0] is not None}
    if report and placement.single:
        # one host: its own error (unreachable, host key, ...) or its shortfalls, as for any single host
        for h in opened.values():
            h.close()
        (name, (_, _, short, exc)), = results.items()
        raise exc if exc is not None else _short_of_requirements(claim, name, short)
    if report:
        for h in opened.values():
            h.close()
        why = f" The paper's experiment needs this because: {claim.requires.why}" if claim.requires.why else ""
        hint = ("" if all("not reachable" in line for line in report.values()) else
                " To run anyway (the numbers will not be comparable with the paper's), pass allow_small_host=True in "
                "the notebook or --allow-insufficient-host on the command line.")
        raise PlacementRefused(f"{len(report)} of {len(names)} host(s) of the placement cannot take part in "
                               f"{claim.key}; nothing was started:\n  " + "\n  ".join(report.values()) + why + hint,
                               report=report)
    return Survey(placement, opened, {n: r[1] for n, r in results.items()},
                  {n: r[2] for n, r in results.items() if r[2]})


def hold(hosts: Mapping[str, Host], run_id: str, control: str, *, resume: bool = False) -> None:
    """Hold every host in ``hosts`` for run ``run_id``: each keeps its benchmark lock until `release`.

    All or nothing: if one host is busy or unreachable, the holds taken are
    released and the error (naming the host and, if busy, the run that holds
    it) is raised. (`survey` with ``hold_for`` holds the hosts in the round trip of their probe.)
    """
    got = on_each(hosts, lambda h: _hold_one(h, run_id, control)[1])
    failed = {n: r for n, r in got.items() if isinstance(r, ReprobookError)}
    if failed:
        release({n: h for n, h in hosts.items() if n not in failed}, run_id,
                forget=[n for n, new in got.items() if new is True])
        raise _not_held(failed, run_id)


# a hold that ended (released, or run out) is taken afresh, keeping when it was first taken (the outputs fetched
# from this host are those newer than that); a live one is attached to. In the launch's round trip; it says
# RB:FRESH when the host had no hold of this run before (one a refused placement then removes whole)
_CLEAR = ('( d="$1/runs/$2"; [ -e "$d" ] || echo RB:FRESH; if [ -f "$d/exit_code" ]; then cd "$d" && '
          'rm -f exit_code ended pid release started cancelled boot_id cmd.sh log; fi ) || true')


def _hold_one(host: Host, run_id: str, control: str, probe: Iterable[Requirements] | None = None):
    """Hold ``host`` for run ``run_id`` (raises `HostBusy` when another run holds it): its facts (when asked to
    ``probe`` it, in the same round trip) and whether the hold was taken afresh."""
    from reprobook.remote.jobs import launch
    script = HOLD_SCRIPT.format(run_id=run_id, control=control, seconds=HOLD_HOURS * 3600)
    text = f"set -- {shlex.quote(host.workdir)}\n{probe_script(list(probe))}" if probe is not None else ""
    job, _ = launch(host, hold_id_for(run_id), script, first=_CLEAR, settle=False, probe=text, report=False)
    return (facts_from(job.probed) if probe is not None else None), job.fresh


def _not_held(failed: Mapping[str, ReprobookError], run_id: str) -> ReprobookError:
    busy = [r for r in failed.values() if isinstance(r, HostBusy)]
    lines = [r.message for r in failed.values()]
    cls = HostBusy if busy else TestbedError
    kwargs = {"holder": busy[0].holder} if busy else {}
    return cls(f"could not hold {len(failed)} host(s) of the placement for run {run_id}; nothing was started:\n  "
               + "\n  ".join(lines), **kwargs)


def release(hosts: Mapping[str, Host], run_id: str, *, forget: Iterable[str] = ()) -> dict[str, str]:
    """Let the held hosts go (idempotent); return host -> error message for those that could not be told.

    Each host is told, then waited for (up to `RELEASE_WAIT_S`) until its hold's job has ended and the
    host's benchmark lock is free: a run launched on it right after this returns is not refused. A hold
    that is slow to notice (a loaded host) still ends by itself within a second or two after that. The hosts
    named in ``forget`` (holds of a run that never started) have the hold's directory removed once it ended.
    """
    from reprobook.remote.jobs import Job
    # the fifo opened for reading and writing: the write never waits, whether the hold still reads it or not
    script = ('d=$1; [ -d "$d" ] || exit 0; touch "$d/release"; '
              'if [ -p "$d/wake" ]; then { echo >&3; } 3<>"$d/wake" || true; fi; '
              'pid=$(cat "$d/pid" 2>/dev/null || true); '
              '[ -n "$pid" ] || exit 0; i=0; '
              f'while [ $i -lt {RELEASE_WAIT_S * 10} ] && kill -0 "$pid" 2>/dev/null && '
              'tr "\\0" " " < "/proc/$pid/cmdline" 2>/dev/null | grep -q wrapper.sh; do sleep 0.1; i=$((i + 1)); done; '
              'if [ "$2" = forget ] && [ -f "$d/exit_code" ]; then rm -rf "$d"; fi; true')
    forget = set(forget)
    got = on_each(hosts, lambda h: h.run_script(script, Job(h, hold_id_for(run_id)).remote_dir,
                                                   "forget" if h.name in forget else "keep", retries=2,
                                                   step=f"releasing the hold of run {run_id}"))
    return {n: r.message for n, r in got.items() if isinstance(r, ReprobookError)}


def hold_id_for(run_id: str) -> str:
    """The id of the job that holds a member host for run ``run_id`` (what a refused run is told)."""
    return f"{run_id}.hold"


def open_hosts(project: Project, names) -> dict[str, Host]:
    """The named hosts, opened lazily (the connection is made on first use)."""
    return {n: open_host(project.hosts.host(n), project.settings) for n in names}
