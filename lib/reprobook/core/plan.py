"""A run plan: what exactly a run of a claim will do, resolved once, before anything starts.

`make_plan` takes a claim, the parameters a caller gave (a notebook's cell, ``-p`` on the command
line, the panel's form), where the outputs come from and, for a live run, its placement, and
returns a frozen `RunPlan`: the parameters resolved (defaults filled in, names and types checked),
the scale and the deviations it implies, the steps each role runs, the sweep's points, what each
role's hosts must have, the generated inputs, and the run's id. The command line prints it
(``reprobook plan CLAIM``, ``reprobook run … --dry-run``), live execution consumes it
(`reprobook.remote.live.execute`), and the run's manifest records it (``plan``), so "what did this
run do" is one record to read, store or diff.

The hosts' facts may still change a live run once they are known (an adaptation to a small host,
`reprobook.core.scales.adapt`): the manifest's ``adapted`` says what changed, beside the plan.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from reprobook.errors import ConfigError

if TYPE_CHECKING:
    from reprobook.core.config import Claim, Paper


@dataclass(frozen=True)
class RunPlan:
    """One run of a claim, as it will be done (see the module doc).

    ``asked`` are the parameters as the caller gave them (what a run id and ``auto`` go by, and what
    a resumed run asks for again); ``params`` the same resolved; ``roles`` maps each role to its host
    names (a single host plays every role: a placement of one).
    """

    claim: "Claim"
    asked: Mapping[str, Any]
    params: Mapping[str, Any]
    source: str = "auto"
    target: str = ""
    roles: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    cluster: str = ""
    run_id: str = ""
    new: bool = False
    steps: tuple[tuple[str, str, str], ...] = ()    # (name, role, where) in order, the checkout first
    repositories: tuple[tuple[str, str, str], ...] = ()   # (name, url, commit)
    # seconds each step took in the recorded runs of the claim at this scale (step name -> seconds; a sweep step's
    # per point), and how many runs said so: `learn` sets them, `expected_minutes` reads them
    learned: Mapping[str, float] = field(default_factory=dict)
    learned_runs: int = 0
    origins: Mapping[str, str] = field(default_factory=dict)   # parameter -> where its value came from, in words

    @property
    def live(self) -> bool:
        return self.source == "live"

    @property
    def scale(self) -> str | None:
        """The scale the run is at (None for a claim without scales)."""
        return str(self.params["scale"]) if self.claim.scales else None

    @property
    def deviations(self) -> list:
        """What the run does differently from the guide (`reprobook.core.scales.Deviation`), from the parameters."""
        from reprobook.core.scales import deviations_for
        c = self.claim
        return deviations_for(c.deviations, c.patches, c.paper_values, dict(self.params))

    def using(self, params: Mapping) -> "RunPlan":
        """This plan with the parameters a run actually uses: ``params`` (the asked ones as the hosts adapted
        them, `reprobook.core.scales.adapt`) resolved. ``asked`` stays what the caller asked for."""
        return dataclasses.replace(self, params=make_plan(self.claim, params).params)

    @property
    def sweep(self) -> list[dict[str, Any]]:
        """The sweep's points, in order (``[{}]`` for a claim without a sweep)."""
        axes = self.claim.sweep_axes
        return [dict(zip(axes, combo)) for combo in itertools.product(*(self.params[a] for a in axes))]

    @property
    def expected_minutes(self) -> float:
        """How long a live run of this plan takes, at its scale: each step's time in the recorded runs at this scale
        (`learn`), else the scale's own figure in the paper file (``scales.<name>.expected_minutes``), else the
        steps' ``expected_minutes``; a sweep step once per point of this plan's sweep. 0 when nothing says."""
        c = self.claim
        scale = c.scales.get(self.scale) if self.scale else None
        steps = {s.name: s for s in (*c.setup, *c.run)}
        points = len(self.sweep)
        if self.learned and any(n in self.learned for n, _, _ in self.steps):
            total = 0.0
            for name, _, _ in self.steps:
                step = steps.get(name)
                times = points if step is not None and step.sweep else 1
                if name in self.learned:
                    total += self.learned[name] / 60 * times
                elif scale is not None and scale.expected_minutes is not None:
                    continue   # the scale's figure is a whole run's: it says nothing of one step
                elif step is not None:
                    total += step.expected_minutes * times * self._proportion(step.scales_with, {})
            return total
        if scale is not None and scale.expected_minutes is not None:
            return scale.expected_minutes * self._proportion(scale.scales_with, scale.values)
        return sum(s.expected_minutes * (points if s.sweep else 1) * self._proportion(s.scales_with, {})
                   for s in (*c.setup, *c.run))

    def _proportion(self, names, at: Mapping[str, Any]) -> float:
        """This plan's values of the number parameters ``names`` over those an estimate was given for (``at``, else
        the defaults), multiplied: twice the trials, twice the minutes."""
        out = 1.0
        for n in names:
            p = self.claim.parameters.get(n)
            base, value = at.get(n, p.default if p is not None else None), self.params.get(n)
            if isinstance(base, (int, float)) and isinstance(value, (int, float)) and base > 0:
                out *= float(value) / float(base)
        return out

    @property
    def expected_source(self) -> str:
        """Where `expected_minutes` comes from, in words."""
        c = self.claim
        at = f"at the {self.scale} scale" if self.scale else "of this claim"
        if self.learned and any(n in self.learned for n, _, _ in self.steps):
            return f"the step times of {self.learned_runs} recorded run(s) {at}"
        scale = c.scales.get(self.scale) if self.scale else None
        if scale is not None and scale.expected_minutes is not None:
            return f"the paper file's figure for a run {at}"
        return f"the steps' estimates, {at}"

    @property
    def requirements(self) -> dict[str, list[str]]:
        """Role -> what its hosts must have, in words."""
        roles = self.roles or dict.fromkeys(self.claim.roles or (self.claim.control_role,))   # placed, else the claim's
        return {r: list((self.claim.role(r).requires or self.claim.requires).describe()) for r in roles}

    def as_dict(self) -> dict:
        """A JSON-able record of the plan (the manifest's ``plan``, ``reprobook plan --json``)."""
        return {
            "claim": self.claim.key, "source": self.source, "target": self.target, "cluster": self.cluster,
            "run_id": self.run_id, "new": self.new,
            "asked": dict(self.asked), "parameters": {k: _jsonable(v) for k, v in self.params.items()},
            "origins": dict(self.origins),
            "scale": self.scale,
            "deviations": [d.as_dict() for d in self.deviations],
            "roles": {r: list(h) for r, h in self.roles.items()},
            "requirements": self.requirements,
            "repositories": [{"name": n, "url": u, "commit": c} for n, u, c in self.repositories],
            "steps": [{"name": n, "role": r, "where": w} for n, r, w in self.steps],
            "sweep_points": len(self.sweep) if self.claim.sweep_axes else 0,
            "expected_minutes": round(self.expected_minutes, 2),
            "expected_from": self.expected_source,
        }

    def describe(self) -> str:
        """The plan in words, a line per fact, for a terminal."""
        c = self.claim
        lines = [f"plan of {c.key}: {c.title}" if getattr(c, "title", "") else f"plan of {c.key}"]
        placed = self.cluster or self.target
        where = {"live": f"a live run on {placed}" if placed else "a live run (no host named: --host HOST|CLUSTER "
                                                                    "places the roles below)",
                 "reference": "the authors' shipped outputs",
                 "auto": "the latest recorded run, else the authors' shipped outputs"}.get(
            self.source, f"the recorded run {self.source}")
        lines.append(f"  outputs from: {where}")
        if self.run_id:
            lines.append(f"  run id:       {self.run_id}" + (" (a fresh run)" if self.new else
                                                          " (attaches to, or resumes, a run with this id)"))
        if self.scale:
            lines.append(f"  scale:        {self.scale}")
        shown = {k: v for k, v in self.params.items() if k != "scale"}
        if shown:
            lines.append("  parameters:   " + ", ".join(
                f"{k}={_words(v)}" + (f" ({self.origins[k]})" if k in self.origins else "" if k in self.asked
                                      else " (default)") for k, v in shown.items()))
        if self.roles:
            for role, hosts in self.roles.items():
                needs = "; ".join(self.requirements.get(role, [])) or "any machine"
                lines.append(f"  role {role}: {', '.join(hosts)} (needs: {needs})")
        elif c.roles:   # not placed: each role with the hosts it takes
            for role, spec in c.roles.items():
                needs = "; ".join(self.requirements.get(role, [])) or "any machine"
                lines.append(f"  role {role}: {spec.count_words}, not placed (needs: {needs})")
        else:
            needs = "; ".join(self.requirements.get(c.control_role, [])) or "any machine"
            lines.append(f"  machine:      {needs}")
        for name, url, commit in self.repositories:
            lines.append(f"  checkout:     {name} {url} @ {commit[:12]}")
        if self.steps:
            lines.append(f"  steps ({len(self.steps)}):")
            for i, (name, role, where_) in enumerate(self.steps, 1):
                on = f" [{role}]" if role and role != c.control_role else ""
                on += " [on the guest]" if where_ == "guest" else ""
                lines.append(f"    {i:>2}. {name}{on}")
        if c.sweep_axes:
            lines.append(f"  sweep:        {len(self.sweep)} point(s) over {', '.join(c.sweep_axes)}")
        if c.inputs:
            lines.append(f"  inputs:       generated by {c.inputs['generator']} once the hosts are known")
        devs = self.deviations
        lines.append("  deviations:   " + ("none" if not devs else f"{len(devs)}"))
        for d in devs:
            lines.append(f"    - {getattr(d, 'what', '') or d.as_dict().get('what', '')}")
        if self.expected_minutes:
            from reprobook.core.model import duration_words
            lines.append(f"  expected:     about {duration_words(self.expected_minutes)} ({self.expected_source})")
        return "\n".join(lines)


def make_plan(claim: "Claim", params: Mapping | None = None, *, paper: "Paper | None" = None, source: str = "auto",
              target: str = "", roles: Mapping[str, tuple[str, ...]] | None = None, cluster: str = "",
              run_id: str = "", new: bool = False, origins: Mapping[str, str] | None = None) -> RunPlan:
    """The `RunPlan` of ``claim`` with ``params`` (`ConfigError` for an unknown name or an ill-typed value).

    This is where a run's parameters are resolved; everything downstream reads ``plan.params``.
    """
    asked = dict(params or {})
    resolved = resolve(claim, asked)
    missing = [p for k, p in claim.parameters.items() if p.required and resolved.get(k) in (None, "")]
    if missing and source == "live":
        raise ConfigError(f"{claim.key} needs " + "; ".join(f"{p.name} ({p.help})" for p in missing)
                          + ": give " + " ".join(f"-p {p.name} VALUE" for p in missing)
                          + " (a notebook's parameters cell, or the panel's field)", key=missing[0].name)
    if claim.scales:   # the claim as it runs at the chosen scale (its own roles, inputs or steps, when it has them)
        claim = claim.at_scale(str(resolved["scale"]))
    steps: list[tuple[str, str, str]] = []
    repos: tuple[tuple[str, str, str], ...] = ()
    if paper is not None:
        repos = tuple((r.name, r.url, r.commit) for r in paper.repositories_for(claim))
        if repos:
            steps.append(("check out " + ", ".join(r[0] for r in repos), claim.control_role, "host"))
    steps += [(s.name, s.role or claim.control_role, s.where) for s in (*claim.setup, *claim.run)]
    return RunPlan(claim, asked, resolved, source=source, target=target,
                   roles={r: tuple(h) for r, h in (roles or {}).items()}, cluster=cluster, run_id=run_id, new=new,
                   steps=tuple(steps), repositories=repos, origins=dict(origins or {}))


def cluster_values(claim: "Claim", params: Mapping | None, cluster) -> tuple[dict[str, Any], dict[str, str]]:
    """``params`` with the values a live run on ``cluster`` (a `reprobook.core.config.Cluster`, or None) takes
    from it, and where each parameter that may come from a cluster got its value, in words.

    A parameter declared ``from_cluster: cloudlab.experiment`` takes the cluster's recorded experiment unless it is
    given (an empty string is not given: a notebook's "" means "the cluster's")."""
    out = dict(params or {})
    origins: dict[str, str] = {}
    name = getattr(cluster, "name", "")
    for k, p in claim.parameters.items():
        if not p.from_cluster:
            continue
        section, key = p.from_cluster.split(".", 1)
        recorded = str((getattr(cluster, section, None) or {}).get(key) or "")
        given = out.get(k)
        if given not in (None, ""):
            origins[k] = ("given" + (f"; cluster {name} records {recorded}" if recorded and recorded != given else ""))
        elif recorded:
            out[k] = recorded
            origins[k] = f"from cluster {name}: its CloudLab {key}"
        else:
            out.pop(k, None)
            origins[k] = ("default: " + (f"cluster {name} records no CloudLab {key}" if name else "not on a cluster"))
    return out, origins


_STEP_LINE = re.compile(r"^### reprobook step (\d+(?:-\d+)?)/\d+: (.*?)(?: \(expected [^)]*\))?"
                        r"(?: \[point [^\]]*\])?(?: \[skipped: [^\]]*\])?$")
_DONE_LINE = re.compile(r"^### reprobook: step (\d+(?:-\d+)?) done in (\d+) s$")


def step_times(log: str) -> dict[str, list[float]]:
    """Step name -> the seconds each of its runs took, from a live run's job log (``### reprobook step 3/9: NAME``
    and ``### reprobook: step 3 done in 41 s``; a sweep step once per point). Steps skipped (done in an earlier
    attempt) or cut off say nothing."""
    names: dict[str, str] = {}
    out: dict[str, list[float]] = {}
    for line in log.splitlines():
        m = _STEP_LINE.match(line)
        if m:
            names[m[1]] = m[2]
            continue
        m = _DONE_LINE.match(line)
        if m and m[1] in names:
            out.setdefault(names[m[1]], []).append(float(m[2]))
    return out


_POINT_LINE = re.compile(r"^### reprobook step (\d+)-(\d+)/\d+: .*?\[point \d+/\d+: (.*?)\](?: \[skipped: [^\]]*\])?$")


def sweep_outcome(log: str, points: int) -> dict:
    """What became of each point of a sweep, from a live run's job log: ``{"done": [k...], "failed": [{"point": k,
    "name": "clients=6", "why": "its last line of output"}], "not_run": [k...], "names": {k: name}}`` (``k`` from 1).

    A point is done when every sweep step of it ended (or was done in an earlier attempt); one that started and did
    not end failed, and why is the last line its output left before the job ended; the others did not run."""
    names: dict[int, str] = {}
    started: dict[int, set] = {}
    ended: dict[int, set] = {}
    current: tuple[int, int] | None = None
    last: dict[int, str] = {}
    for line in log.splitlines():
        m = _POINT_LINE.match(line)
        if m:
            step, k = int(m[1]), int(m[2])
            names[k] = m[3]
            started.setdefault(k, set()).add(step)
            if "[skipped:" in line:
                ended.setdefault(k, set()).add(step)
                current = None
            else:
                current = (step, k)
            continue
        m = _DONE_LINE.match(line)
        if m:
            if "-" in m[1]:
                step, k = (int(x) for x in m[1].split("-"))
                ended.setdefault(k, set()).add(step)
            current = None
            continue
        if line.startswith("### reprobook"):
            current = None if line.startswith("### reprobook step") else current
            continue
        if current is not None and line.strip():
            last[current[1]] = line.strip()
    done = [k for k in range(1, points + 1) if k in started and started[k] <= ended.get(k, set())]
    failed = [{"point": k, "name": names.get(k, ""), "why": last.get(k) or "it ended without a word of output"}
              for k in range(1, points + 1) if k in started and k not in done]
    not_run = [k for k in range(1, points + 1) if k not in started]
    return {"done": done, "failed": failed, "not_run": not_run, "names": names}


def learn(plan: RunPlan, runs) -> RunPlan:
    """``plan`` with the step times of the recorded live runs among ``runs`` (`reprobook.core.runs.Run`, oldest
    first) of its claim at its scale: each step's latest (a sweep step's mean per point). Runs at another scale, and
    imported or reference runs, say nothing of this one."""
    learned: dict[str, float] = {}
    used = 0
    for run in runs:
        m = run.manifest
        if m.get("source") != "live" or (m.get("scale") or None) != plan.scale:
            continue
        try:
            log = (run.path / "log.txt").read_text(errors="replace")
        except OSError:
            continue
        times = step_times(log)
        if times:
            used += 1
            learned.update({name: sum(t) / len(t) for name, t in times.items()})
    if not used:
        return plan
    return dataclasses.replace(plan, learned=learned, learned_runs=used)


def resolve(claim: "Claim", params: Mapping | None) -> dict[str, Any]:
    """Every parameter of ``claim`` with its value: those given checked, the rest at their scale's or defaults.

    Called by `make_plan` only: everything else asks a plan (``plan.params``, ``plan.scale``, ``plan.sweep``,
    ``plan.deviations``), so a run's parameters are resolved in one place.

    Raises
    ------
    ConfigError
        An unknown name (the known ones are listed), a value of the wrong type (an ``int`` parameter
        given ``"abc"``), or a value outside the parameter's pattern (``-p cloudlab_user 'x;id>/tmp/p;#'``:
        the one place a value that reaches a shell is checked, `reprobook.core.patterns`).
    """
    from reprobook.errors import ConfigError
    params = claim.scaled(params)
    unknown = sorted(set(params) - set(claim.parameters))
    if unknown:
        raise ConfigError(f"{claim.key} has no parameter(s) {', '.join(unknown)} "
                          f"(it has: {', '.join(claim.parameters) or 'none'})")
    out: dict[str, Any] = {}
    for name, p in claim.parameters.items():
        val = params.get(name, p.default)
        if isinstance(p.default, (list, tuple)):   # a sweep axis: a list of values (one value is a list of one)
            values = list(val) if isinstance(val, (list, tuple)) else [val]
            if not values:
                raise ConfigError(f"parameter {name} of {claim.key} is a sweep axis and needs at least one value: "
                                  f"{p.help}")
            out[name] = tuple(_typed(claim, name, p, v, p.default[0]) for v in values)
        else:
            out[name] = _typed(claim, name, p, val, p.default)
        for v in (out[name] if isinstance(out[name], tuple) else (out[name],)):
            if p.pattern is not None and not p.pattern.allows(v):
                raise ConfigError(f"parameter {name} of {claim.key} must be {p.pattern.what}, not {v!r}"
                                  + (" (a value starting with '-' would be read as an option)"
                                     if str(v).startswith("-") else "") + f": {p.help}")
    return out


def _typed(claim, name: str, p, val, like):
    from reprobook.errors import ConfigError
    want = type(like)
    if want is str and isinstance(val, int) and not isinstance(val, bool):
        val = str(val)   # -p threads 1: YAML reads a number, the parameter takes its text (then its pattern judges it)
    ok = (isinstance(val, bool) if want is bool else
          isinstance(val, (int, float)) and not isinstance(val, bool) and (want is float or float(val).is_integer())
          if want in (int, float) else isinstance(val, str))
    if not ok:
        kind = f"list of {want.__name__}" if isinstance(p.default, (list, tuple)) else want.__name__
        raise ConfigError(f"parameter {name} of {claim.key} takes a {kind} "
                          f"(like its default {_shown(p.default)}), not {_shown(val)}: {p.help}")
    return int(val) if want is int else val


def _shown(value) -> str:
    """A parameter's value as a reader types it: a list as ``[2, 4]`` (never a Python tuple's ``(0,)``)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return repr(value)


def _jsonable(value):
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)


def _words(value) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_words(v) for v in value) + "]"
    return str(value).lower() if isinstance(value, bool) else str(value)
