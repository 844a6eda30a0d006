"""Configuration: YAML in ``configs/``, validated once, turned into frozen objects.

Nothing downstream reads raw dicts. Every error names the file and the key
path, e.g. ``configs/papers/aardvark.yaml: claims[1].checks[0].kind: ...``.

The project root is found from ``REPROBOOK_ROOT`` or by walking up from the
current directory to the first folder holding ``_config.yml`` and ``configs/``.
Environment variables override single settings:

``REPROBOOK_HOSTS``            another hosts file
``REPROBOOK_RUNS``             another run store
``REPROBOOK_ARTIFACT_MIRROR``  a local artifact mirror directory
``REPROBOOK_SSH_CONFIG``       another OpenSSH client config (default ~/.ssh/config)
"""

from __future__ import annotations

import dataclasses

import json
import os
import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

import yaml

from reprobook.errors import ConfigError
from reprobook.core import cache as _cache
from reprobook.core.archives import Limits
from reprobook.core.requirements import Requirements, parse_requirements
from reprobook.core.schema import frozen as _frozen, jsonschema_module, load_yaml  # noqa: F401  (jsonschema_module: public here too)
from reprobook.core.model import (CONTROL, PRESENTATIONS, CheckSpec, OutputSpec, Parameter, PublishedNumber,  # noqa: F401
                                  PublishedValue, Repository, RoleSpec, Step, Unchanged, duration_words)

LOCAL = "local"


# --------------------------------------------------------------------------- hosts

# strict: a user or host that ssh, scp or rsync could read as an option (``-oProxyCommand=…``) never matches;
# matched whole (``fullmatch``: "x\n" is not a name)
_USER_HOST_PORT = re.compile(r"(?:(?P<user>[A-Za-z0-9_][A-Za-z0-9_.-]*)@)?"
                             r"(?P<host>\[[0-9A-Fa-f:.%A-Za-z]+\]|[A-Za-z0-9_][A-Za-z0-9_.-]*)(?::(?P<port>\d+))?")
HOST_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
"""A host's name in hosts.yaml and a node's name in its cluster (matched whole): one word for ssh, rsync and a shell,
never an option."""
_CLOUDLAB_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
CLOUDLAB_KEYS = ("experiment", "project", "domain", "user")
"""What a cluster imported from a CloudLab manifest records of its experiment (``clusters.<name>.cloudlab``)."""


@dataclass(frozen=True)
class HostSpec:
    """A named host: where to SSH to and where to work there.

    ``node`` is the host's name inside its cluster: what the other hosts of the cluster (and an artifact's own
    scripts on them) call it, a CloudLab manifest's ``client_id``; by default the host's own name. Imported
    hosts are named ``<cluster>-<node>`` here, so two clusters' ``node-0`` never meet.
    """

    name: str
    ssh: str
    workdir: str
    description: str = ""
    git_url_rewrites: Mapping[str, str] = field(default_factory=dict)
    connect_timeout_s: float | None = None
    host_key_policy: str = "strict"
    env: Mapping[str, str] = field(default_factory=dict)
    node: str = ""

    @property
    def is_local(self) -> bool:
        return self.ssh == LOCAL

    @property
    def node_name(self) -> str:
        """The host's name inside its cluster (``node``, else its own name)."""
        return self.node or self.name

    def target(self) -> tuple[str | None, str, int | None]:
        """Split ``ssh`` into (user, host or alias, port)."""
        m = _USER_HOST_PORT.fullmatch(self.ssh)
        if not m:
            raise ConfigError(f"cannot read SSH target {self.ssh!r}; use an alias or user@host:port (letters, digits, "
                              f"'.', '_' and '-', not first)", key=f"hosts.{self.name}.ssh")
        port = int(m["port"]) if m["port"] else None
        return m["user"], m["host"].strip("[]"), port


@dataclass(frozen=True)
class Cluster:
    """Role -> host names; ``cloudlab``: the experiment it was imported from (experiment, project, domain, user)."""

    name: str
    roles: Mapping[str, tuple[str, ...]]
    description: str = ""
    cloudlab: Mapping[str, str] = field(default_factory=dict)

    @property
    def hosts(self) -> tuple[str, ...]:
        """Every host of the cluster once, in role order."""
        return tuple(dict.fromkeys(h for names in self.roles.values() for h in names))


@dataclass(frozen=True)
class HostsConfig:
    path: Path
    hosts: Mapping[str, HostSpec]
    clusters: Mapping[str, Cluster]

    def host(self, name: str) -> HostSpec:
        try:
            return self.hosts[name]
        except KeyError:
            raise ConfigError(f"no host named {name!r} (known: {', '.join(sorted(self.hosts))})", file=self.path) from None


def _word(value, rx, *, path, key: str, what: str) -> None:
    if not isinstance(value, str) or not rx.fullmatch(value):
        raise ConfigError(f"{value!r} is not {what} (letters, digits, '.', '_' and '-', not first; one word)",
                          file=path, key=key)


def load_hosts(path: Path, *, cache: Path | None = None) -> HostsConfig:
    """``hosts.yaml``: validated against its schema, every host name, node name and SSH target checked whole.
    ``cache``: a directory of files read before (`reprobook.core.cache`)."""
    data = load_yaml(path, "hosts", cache=cache)
    hosts = {LOCAL: HostSpec(name=LOCAL, ssh=LOCAL, workdir=str(Path.home() / "reprobook-work"),
                             description="this machine, without SSH")}
    for name, h in (data.get("hosts") or {}).items():
        _word(name, HOST_NAME, path=path, key=f"hosts.{name!r}", what="a host name")
        if name == LOCAL:
            raise ConfigError("'local' is built in (this machine, without SSH) and cannot be redefined; name the "
                              "host otherwise", file=path, key="hosts.local")
        if h.get("node") is not None:
            _word(h["node"], HOST_NAME, path=path, key=f"hosts.{name}.node", what="a node name")
        spec = HostSpec(
            name=name, ssh=h["ssh"], workdir=h["workdir"], description=h.get("description", ""),
            git_url_rewrites=_frozen(h.get("git_url_rewrites")),
            connect_timeout_s=h.get("connect_timeout_s"),
            host_key_policy=h.get("host_key_policy", "strict"), env=_frozen(h.get("env")), node=h.get("node") or "",
        )
        try:
            spec.target()
        except ConfigError as exc:
            raise ConfigError(exc.message, file=path, key=f"hosts.{name}.ssh") from None
        hosts[name] = spec
    clusters = {}
    for cname, c in (data.get("clusters") or {}).items():
        _word(cname, HOST_NAME, path=path, key=f"clusters.{cname!r}", what="a cluster name")
        for role, members in c["roles"].items():
            for i, member in enumerate(members):
                if member not in hosts:
                    raise ConfigError(f"unknown host {member!r}", file=path, key=f"clusters.{cname}.roles.{role}[{i}]")
        for k, v in (c.get("cloudlab") or {}).items():
            _word(v, _CLOUDLAB_VALUE, path=path, key=f"clusters.{cname}.cloudlab.{k}", what=f"a CloudLab {k}")
        clusters[cname] = Cluster(cname, _frozen({r: tuple(m) for r, m in c["roles"].items()}), c.get("description", ""),
                                  _frozen({k: str(v) for k, v in (c.get("cloudlab") or {}).items()}))
    return HostsConfig(Path(path), _frozen(hosts), _frozen(clusters))


# --------------------------------------------------------------------------- papers

@dataclass(frozen=True)
class Claim:
    paper: str
    id: str
    title: str
    statement: str
    refs: tuple[str, ...]
    requires: Requirements
    setup: tuple[Step, ...]
    run: tuple[Step, ...]
    parameters: Mapping[str, Parameter]
    outputs: Mapping[str, OutputSpec]
    reference: Mapping[str, str]
    loader: str
    published: tuple[PublishedNumber, ...]
    published_note: str
    checks: tuple[CheckSpec, ...]
    plots: tuple[Mapping[str, Any], ...]
    manual: tuple[Step, ...] = ()
    presentation: str = "plot"
    published_tables: tuple[str, ...] = ()
    repositories: tuple[str, ...] = ()      # the paper's repositories a live run checks out (default: all)
    roles: Mapping[str, RoleSpec] = field(default_factory=dict)   # the control role first; empty: one host
    inputs: Mapping[str, Any] = field(default_factory=dict)       # a generator of run inputs (see reprobook.core.inputs)
    # the published numbers are computed from the authors' shipped outputs: judging those outputs compares the
    # files with themselves, and the verdict says so (see reprobook.core.checks.ClaimVerdict.wording)
    published_from_reference: bool = False
    # the verdict the authors' shipped outputs give (None: the claim has none); tests/book checks every claim's
    reference_verdict: str | None = None
    # the machine the authors measured on, as the paper file states it (the paper's, then the claim's, key by key);
    # a run's host is compared with it (reprobook.core.requirements.differences)
    authors_machine: Mapping[str, Any] = field(default_factory=dict)
    # the role whose machine the numbers come from, when not the driven host ("": the control role's host); its
    # facts and its role's requires are what the checks are judged on
    measured_on: str = ""
    # scales (named parameter sets: paper, rehearsal), source constants set from the parameters, and the
    # deviations from the guide a parameter set makes (see reprobook.core.scales)
    scales: Mapping[str, Any] = field(default_factory=dict)
    patches: tuple = ()
    deviations: tuple = ()
    adaptations: tuple = ()    # parameter values set on hosts short of a soft requirement (reprobook.core.scales.adapt)
    # what a scale changes of the claim besides parameter values (scale -> field -> value: requires, roles, inputs,
    # setup, run, repositories), e.g. a rehearsal on one small server instead of the paper's cluster; see `at_scale`
    variants: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # the scale whose variant `at_scale` put in place (None: the claim as its paper file declares it)
    at: str | None = field(default=None, compare=False)

    @property
    def control_role(self) -> str:
        """The role whose host runs the job (the first declared; ``control`` for a claim without roles)."""
        return next(iter(self.roles), CONTROL)

    def role(self, name: str) -> RoleSpec:
        """The `RoleSpec` of ``name`` ("" is the control role); a claim without roles has one: its host."""
        name = name or self.control_role
        if not self.roles and name == CONTROL:
            return RoleSpec(CONTROL, 1, 1, self.requires)
        try:
            return self.roles[name]
        except KeyError:
            raise ConfigError(f"{self.key} has no role {name!r} (roles: {', '.join(self.roles) or CONTROL})") from None

    @property
    def sweep_axes(self) -> tuple[str, ...]:
        """The parameters whose default is a list: the axes of the claim's sweep, in declaration order."""
        return tuple(n for n, p in self.parameters.items() if isinstance(p.default, (list, tuple)))

    @property
    def key(self) -> str:
        return f"{self.paper}/{self.id}"

    @property
    def expected_time(self) -> str:
        """The expected time of a live run in words ("about 4.2 hours"), or "" when the guide gives none."""
        return f"about {duration_words(self.expected_minutes)}" if self.expected_minutes else ""

    def scaled(self, params: Mapping | None) -> dict[str, Any]:
        """``params`` with the chosen scale's values filled in where no value is given (see `reprobook.core.scales`)."""
        params = dict(params or {})
        if not self.scales:
            return params
        name = params.get("scale", self.parameters["scale"].default)
        if name not in self.scales:
            raise ConfigError(f"{self.key} has no scale {name!r} (scales: {', '.join(self.scales)})")
        return {**self.scales[name].values, **params}

    def at_scale(self, name: str | None) -> "Claim":
        """The claim as it runs at scale ``name``: its fields with those the scale gives of its own (``requires``,
        ``roles``, ``inputs``, ``setup``, ``run``, ``repositories``) in their place. The same claim for a scale
        that changes none, for None and for a claim without scales. `reprobook.core.plan.make_plan` calls it, so a
        run's plan holds the claim of its scale. A claim already at ``name`` is returned as it is, so that a field
        changed on it since (``dataclasses.replace``) stays changed."""
        if name and self.at == name:
            return self
        over = self.variants.get(name or "") if name else None
        if not over or all(getattr(self, k) == v for k, v in over.items()):
            return self
        return dataclasses.replace(self, at=name, **over)

    def scale_of(self, params: Mapping | None) -> str | None:
        """The scale a run with ``params`` is at (None for a claim without scales)."""
        from reprobook.core.plan import make_plan
        return make_plan(self, params).scale if self.scales else None

    @property
    def paper_values(self) -> dict[str, Any]:
        """Every parameter at the paper's scale: the guide's sizes, which the artifact's source constants hold."""
        from reprobook.core.plan import make_plan
        return dict(make_plan(self, {"scale": "paper"} if self.scales else {}).params)

    def deviations_for(self, params: Mapping | None) -> list:
        """The deviations from the guide of a run with ``params`` (`reprobook.core.scales.Deviation`), patch included."""
        from reprobook.core.plan import make_plan
        return make_plan(self, params).deviations

    @property
    def runs_live(self) -> bool:
        """Whether reprobook can perform this claim's experiment (it has steps to run)."""
        return bool(self.run)

    @property
    def expected_minutes(self) -> float:
        """The time of a live run with the default parameters: every step's, a sweep step's once per point of the
        default sweep; for the claim at a scale (`at_scale`), the scale's own figure when the paper file gives one, else
        its steps' with the scale's sweep. A plan's (`reprobook.core.plan.RunPlan.expected_minutes`) also learns from
        the recorded runs."""
        scale = self.scales.get(self.at) if self.at else None
        if scale is not None and scale.expected_minutes is not None:
            return scale.expected_minutes
        values = scale.values if scale is not None else {}
        points = 1
        for axis in self.sweep_axes:
            v = values.get(axis, self.parameters[axis].default)
            points *= len(v) if isinstance(v, (list, tuple)) else 1
        return sum(s.expected_minutes * (points if s.sweep else 1) for s in self.setup + self.run)


@dataclass(frozen=True)
class Paper:
    path: Path
    id: str
    title: str
    venue: str
    short: str
    authors: str
    guide: str
    notes: str
    repositories: Mapping[str, Repository]
    machine: Requirements
    setup: tuple[Step, ...]
    published: Mapping[str, PublishedNumber]
    claims: Mapping[str, Claim]
    published_tables: Mapping[str, tuple[PublishedNumber, ...]] = field(default_factory=dict)
    artifact_doi: str = ""   # the artifact's archival copy (a DOI such as 10.5281/zenodo.1234567); "" when none is given
    citation: Mapping[str, Any] = field(default_factory=dict)   # how to cite the paper (its ``citation:`` block)

    def repositories_for(self, claim: Claim) -> tuple[Repository, ...]:
        """The repositories a live run of ``claim`` checks out, in the paper's order."""
        return tuple(r for name, r in self.repositories.items() if not claim.repositories or name in claim.repositories)

    def claim(self, claim_id: str) -> Claim:
        try:
            return self.claims[claim_id]
        except KeyError:
            raise ConfigError(f"paper {self.id!r} has no claim {claim_id!r} (claims: {', '.join(self.claims)})",
                              file=self.path) from None


def _pattern(decl: Mapping, name: str, default, *, file, where: str):
    """A parameter's `Pattern` (declared, else the one the engine implies for its name, else None); its regular
    expression compiles and its default matches it, or `ConfigError` names the key."""
    from reprobook.core.patterns import IMPLIED, Pattern
    spec = decl.get("pattern") or IMPLIED.get(name)
    if not spec:
        return None
    key = f"{where}.parameters.{name}.pattern"
    try:
        pattern = Pattern.parse(spec)
    except re.error as exc:
        raise ConfigError(f"not a regular expression: {spec!r} ({exc})", file=file, key=key) from None
    for value in (default if isinstance(default, (list, tuple)) else [default]):
        if not pattern.allows(value):
            raise ConfigError(f"the default {value!r} is not {pattern.what}", file=file, key=key)
    return pattern


def _unchanged(raw: Mapping | None) -> Unchanged | None:
    if raw is None:
        return None
    env = raw.get("env")
    return Unchanged(inputs=tuple(map(str, raw.get("inputs") or ())), products=tuple(map(str, raw["products"])),
                     env=None if env is None else tuple(map(str, env)))


def _steps(items) -> tuple[Step, ...]:
    return tuple(Step(name=s["name"], run=s["run"], cwd=s.get("cwd", ""),
                      expected_minutes=float(s.get("expected_minutes", 0)), note=s.get("note", ""),
                      where=s.get("where", "host"), role=s.get("role", ""), sweep=bool(s.get("sweep", False)),
                      scales_with=tuple(s.get("scales_with") or ()),
                      packages=tuple((str(os), tuple(p)) for os, p in (s.get("packages") or {}).items()),
                      unchanged=_unchanged(s.get("unchanged")))
                 for s in items or ())


def _roles(raw: Mapping | None, claim_reqs: Requirements, *, file, key: str) -> dict[str, RoleSpec]:
    """A claim's ``roles:`` -> `RoleSpec` by name, each role's requirements over the claim's."""
    out = {}
    for name, r in (raw or {}).items():
        count = r.get("count", 1)
        lo, hi = (count, count) if isinstance(count, int) else (count[0], count[1])
        if hi is not None and hi < lo:
            raise ConfigError(f"the count's maximum {hi} is below its minimum {lo}", file=file, key=f"{key}.{name}.count")
        out[name] = RoleSpec(name, lo, hi, parse_requirements(r.get("requires"), claim_reqs, file=file,
                                                               key=f"{key}.{name}.requires"), r.get("description", ""))
    return out


def _check_roles(claim: "Claim", c: Mapping, file, where: str) -> None:
    """Every role a step or output names is one of the claim's; a sweep step has axes to sweep."""
    known = set(claim.roles) or {CONTROL}
    if claim.measured_on and claim.measured_on not in known:
        raise ConfigError(f"no role {claim.measured_on!r} in this claim (roles: {', '.join(sorted(known))}): "
                          f"measured_on names the role whose machine the numbers come from", file=file,
                          key=f"{where}.measured_on")
    for part in ("setup", "run"):
        for j, s in enumerate(c.get(part) or ()):
            if s.get("role") and s["role"] not in known:
                raise ConfigError(f"no role {s['role']!r} in this claim (roles: {', '.join(sorted(known))})",
                                  file=file, key=f"{where}.{part}[{j}].role")
            if s.get("sweep") and not claim.sweep_axes:
                raise ConfigError("a sweep step needs a parameter whose default is a list (an axis of the sweep)",
                                  file=file, key=f"{where}.{part}[{j}].sweep")
            if s.get("role") and s.get("where") == "guest":
                raise ConfigError("a step runs either on a role's hosts or on the guest, not both", file=file,
                                  key=f"{where}.{part}[{j}]")
    for name, o in (c.get("outputs") or {}).items():
        if o.get("role") and o["role"] not in known:
            raise ConfigError(f"no role {o['role']!r} in this claim (roles: {', '.join(sorted(known))})",
                              file=file, key=f"{where}.outputs.{name}.role")


def _check_packages(claim: "Claim", file, where: str) -> None:
    """The profile, the requirements and the steps agree on the machine: every OS release a step's role accepts
    (its ``os`` requirement) is one the step's package table installs for, so a host the check lets through is one
    the step can install on (a host of another release is refused before anything runs, naming it)."""
    for part in ("setup", "run"):
        for j, s in enumerate(getattr(claim, part)):
            if not s.packages:
                continue
            role = s.role or claim.control_role
            wanted = tuple((claim.role(role).requires or claim.requires).get("os") or ())
            known = {os.lower() for os in s.releases}
            missing = [os for os in wanted if os.lower() not in known]
            # (a role without an os requirement takes any host; the step's rb_packages then stops on a release its
            # table lacks, naming it)
            if missing:
                raise ConfigError(
                    f"the step {s.name!r} installs packages for {' and '.join(s.releases)} only (its packages table), "
                    f"but {claim.key}'s role {role!r} accepts {' or '.join(wanted)}: add a row for "
                    f"{', '.join(missing)} to the table, or name only the table's releases in the requirement's os",
                    file=file, key=f"{where}.{part}[{j}].packages" if not claim.at else f"{where} (at the {claim.at} scale)")


def _scales(c: Mapping, params: dict, *, file, where: str):
    """A claim's scales, patches and deviations (`reprobook.core.scales`); adds the ``scale`` parameter to ``params``.

    Returns the scales, the patches, the deviations and the generated patch step (a tuple of zero or one `Step`).
    """
    from reprobook.core import scales as kit
    scales = kit.parse_scales(c.get("scales"), params, file=file, key=f"{where}.scales")
    if scales:
        if "scale" in params:
            raise ConfigError("'scale' is the parameter that chooses among the claim's scales; name yours otherwise",
                              file=file, key=f"{where}.parameters.scale")
        params["scale"] = Parameter("scale", kit.PAPER, "the sizes of a live run: " + "; ".join(
            f"{s.name}{' (' + s.about + ')' if s.about else ''}" for s in scales.values()))
    patches = kit.parse_patches(c.get("patches"), params, file=file, key=f"{where}.patches")
    deviations = kit.parse_deviations(c.get("deviations"), params, file=file, key=f"{where}.deviations")
    paper = {k: p.default for k, p in params.items()}
    paper.update(scales[kit.PAPER].values if scales else {})
    step = kit.patch_step(patches, paper)
    return scales, patches, deviations, _steps([step]) if step else ()


VARIANT_FIELDS = ("requires", "roles", "inputs", "setup", "run", "repositories")
"""The fields of a claim a scale may give of its own (see `Claim.at_scale`)."""


def _variants(c: Mapping, claim: "Claim", machine: Requirements, common_setup: tuple[Step, ...],
              repos: Mapping[str, Any], *, file, where: str) -> dict[str, dict[str, Any]]:
    """Scale -> the claim's fields that scale gives of its own (`VARIANT_FIELDS`), parsed as the claim's are."""
    from reprobook.core import inputs as input_registry
    out: dict[str, dict[str, Any]] = {}
    for name, s in (c.get("scales") or {}).items():
        s = s or {}
        key = f"{where}.scales.{name}"
        over: dict[str, Any] = {}
        if "requires" in s:
            over["requires"] = parse_requirements(s["requires"], machine, file=file, key=f"{key}.requires")
        requires = over.get("requires", claim.requires)
        if "roles" in s:
            over["roles"] = _frozen(_roles(s["roles"], requires, file=file, key=f"{key}.roles"))
        elif "requires" in s and claim.roles:   # the roles' requirements stand over the claim's: over this scale's
            over["roles"] = _frozen(_roles(c.get("roles"), requires, file=file, key=f"{where}.roles"))
        if "inputs" in s:
            over["inputs"] = _frozen(input_registry.validate(s["inputs"], file=file, key=f"{key}.inputs"))
        if "setup" in s:
            over["setup"] = common_setup + _steps(s["setup"])
        if "run" in s:
            over["run"] = _steps(s["run"])
        if "repositories" in s:
            for j, r in enumerate(s["repositories"] or ()):
                if r not in repos:
                    raise ConfigError(f"unknown repository {r!r} (known: {', '.join(repos)})", file=file,
                                      key=f"{key}.repositories[{j}]")
            over["repositories"] = tuple(s["repositories"] or ())
        if over:
            out[name] = over
    # every scale then names every field some scale changes (the claim's own where it changes none), so that
    # `Claim.at_scale` gives the same claim from any scale's: a rehearsal's claim asked for the paper's scale
    changed = {f for over in out.values() for f in over}
    for name in (c.get("scales") or {}) if changed else ():
        out.setdefault(name, {})
        for f in VARIANT_FIELDS:
            if f in changed:
                out[name].setdefault(f, getattr(claim, f))
    return out


def _check_scales(claim: "Claim", c: Mapping, file, where: str) -> None:
    """Each scale's values suit the parameters' types; each check's ``needs`` names scales the claim has."""
    from reprobook.core.plan import make_plan
    for name in claim.scales:
        try:
            make_plan(claim, {"scale": name})
        except ConfigError as exc:
            raise ConfigError(exc.message, file=file, key=f"{where}.scales.{name}") from None
    for j, spec in enumerate(claim.checks):
        for s in (spec.needs.only_at if spec.needs else ()):
            if s not in claim.scales:
                raise ConfigError(f"no scale {s!r} in this claim (scales: {', '.join(claim.scales) or 'none'})",
                                  file=file, key=f"{where}.checks[{j}].only_at")
        for s in (spec.needs.scales if spec.needs else ()):
            if s not in claim.scales:
                raise ConfigError(f"no scale {s!r} in this claim (scales: {', '.join(claim.scales) or 'none'})",
                                  file=file, key=f"{where}.checks[{j}].needs.scale")
        for s in (spec.needs.judged_at if spec.needs else ()):
            if s not in claim.scales and s != "paper":   # every claim has the paper's scale, scales or not
                raise ConfigError(f"no scale {s!r} in this claim (scales: {', '.join(claim.scales) or 'none'})",
                                  file=file, key=f"{where}.checks[{j}].judged_at")


def load_paper(path: Path, *, cache: Path | None = None) -> Paper:
    """Load and validate one ``configs/papers/<paper>.yaml``.

    ``cache``: a directory of papers read before (`reprobook.core.cache`). The paper is taken from there when its
    file's text, the recorded patches it read and the code that checked it are as they were; else it is read and
    checked, and kept. A paper that does not load is never kept, so its error is the same every time.
    """
    path = Path(path)
    if cache is None or not path.is_file():
        return _read_paper(path)
    text = path.read_text()
    key = _cache.object_key(text, path)
    paper = _cache.get_object(cache, path, key)
    if isinstance(paper, Paper):
        return paper
    paper = _read_paper(path, cache=cache, text=text)
    from reprobook.core.plugins import source_folders
    from reprobook.core.scales import RecordedPatch
    patches = {Path(path).resolve().parent.parent / p.file for c in paper.claims.values() for p in c.patches
               if isinstance(p, RecordedPatch)}
    _cache.put_object(cache, path, key, paper, hashed=sorted(patches), stated=_cache.code_files(source_folders()))
    return paper


def _read_paper(path: Path, *, cache: Path | None = None, text: str | None = None) -> Paper:
    from reprobook.core import checks as check_registry
    from reprobook.core import inputs as input_registry
    from reprobook.core import loaders as loader_registry
    data = load_yaml(path, "paper", cache=cache, text=text)
    meta = data["paper"]
    if meta["id"] != path.stem:
        raise ConfigError(f"paper id {meta['id']!r} must equal the file name {path.stem!r}", file=path, key="paper.id")
    repos = {name: Repository(name=name, url=r["url"], commit=r["commit"], checkout=r.get("checkout", name),
                              submodules=_frozen(r.get("submodules")), license=r.get("license", ""),
                              exclude=tuple(r.get("exclude") or ()))
             for name, r in data["repositories"].items()}
    published = {}
    for i, n in enumerate(data.get("published") or ()):
        if n["id"] in published:
            raise ConfigError(f"duplicate published number id {n['id']!r}", file=path, key=f"published[{i}].id")
        published[n["id"]] = PublishedNumber(id=n["id"], value=float(n["value"]), unit=n["unit"], source=n["source"],
                                             precision=n["precision"], what=n.get("what", ""), labels=_frozen(n.get("labels")),
                                             sources=(PublishedValue("", float(n["value"]), n["source"], n["precision"]),))
    tables = {}
    for i, t in enumerate(data.get("published_tables") or ()):
        if t["id"] in tables or t["id"] in published:
            raise ConfigError(f"duplicate published id {t['id']!r}", file=path, key=f"published_tables[{i}].id")
        tables[t["id"]] = _expand_table(t, path, f"published_tables[{i}]")
        for n in tables[t["id"]]:
            published[n.id] = n
    machine = parse_requirements(data.get("machine"), file=path, key="machine")
    setup = _steps(data.get("setup"))
    claims = {}
    for ci, c in enumerate(data["claims"]):
        where = f"claims[{ci}]"
        if c["id"] in claims:
            raise ConfigError(f"duplicate claim id {c['id']!r}", file=path, key=f"{where}.id")
        nums = []
        for j, pid in enumerate(c.get("published") or ()):
            if pid not in published:
                raise ConfigError(f"no published number {pid!r} in this file", file=path, key=f"{where}.published[{j}]")
            nums.append(published[pid])
        for j, tid in enumerate(c.get("published_tables") or ()):
            if tid not in tables:
                raise ConfigError(f"no published table {tid!r} in this file (tables: {', '.join(tables) or 'none'})",
                                  file=path, key=f"{where}.published_tables[{j}]")
            nums.extend(tables[tid])
        checks = []
        for j, ch in enumerate(c["checks"]):
            spec = check_registry.validate(ch, file=path, key=f"{where}.checks[{j}]", published=published)
            checks.append(CheckSpec(kind=spec.kind, what=spec.what, value=spec.value, options=_frozen(spec.options),
                                    needs=spec.needs))
        if c["loader"] not in loader_registry.names():
            raise ConfigError(f"no loader {c['loader']!r} (known: {', '.join(loader_registry.names())})",
                              file=path, key=f"{where}.loader")
        _check_columns(c, loader_registry.columns(c["loader"]), file=path, where=where)
        for name, ref in (c.get("reference") or {}).items():
            repo = ref.split("@", 1)[0]
            if "/" not in repo and repo not in repos:
                raise ConfigError(f"unknown repository {repo!r} (known: {', '.join(repos)})",
                                  file=path, key=f"{where}.reference.{name}")
        params = {}
        for k, v in (c.get("parameters") or {}).items():
            if "default" not in v and not v.get("required"):
                raise ConfigError("required key is missing (a parameter without a default says required: true)",
                                  file=path, key=f"{where}.parameters.{k}.default")
            default = v.get("default", "")
            if isinstance(default, list):
                if len({type(x) for x in default}) > 1 and not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                                   for x in default):
                    raise ConfigError("the values of a sweep axis must be of one type", file=path,
                                      key=f"{where}.parameters.{k}.default")
                default = tuple(default)
            if v.get("from_cluster") and not isinstance(default, str):
                raise ConfigError("a parameter whose value comes from the cluster takes a string (its default: "
                                  "\"\" for the cluster's)", file=path, key=f"{where}.parameters.{k}.from_cluster")
            params[k] = Parameter(k, default, v["help"], _pattern(v, k, default, file=path, where=where),
                                  v.get("from_cluster", ""), bool(v.get("required", False)))
        scales, patches, deviations, patch_setup = _scales(c, params, file=path, where=where)
        for j, name in enumerate(c.get("repositories") or ()):
            if name not in repos:
                raise ConfigError(f"unknown repository {name!r} (known: {', '.join(repos)})", file=path,
                                  key=f"{where}.repositories[{j}]")
        requires = parse_requirements(c.get("requires"), machine, file=path, key=f"{where}.requires")
        claims[c["id"]] = claim = Claim(
            paper=meta["id"], id=c["id"], title=c["title"], statement=" ".join(c["statement"].split()),
            refs=tuple(c["refs"]), requires=requires,
            setup=setup + patch_setup + _steps(c.get("setup")), run=_steps(c.get("run")), parameters=_frozen(params),
            outputs=_frozen({k: OutputSpec(k, o["path"], o.get("glob", "*"), o.get("description", ""), o.get("role", ""))
                             for k, o in (c.get("outputs") or {}).items()}),
            reference=_frozen(c.get("reference")), loader=c["loader"], published=tuple(nums),
            published_note=c.get("published_note", ""), checks=tuple(checks),
            plots=tuple(_frozen(p) for p in (c["plot"] if isinstance(c.get("plot"), list) else [c.get("plot") or {}])
                        if p),
            manual=_steps(c.get("manual")), presentation=c.get("presentation", "plot"),
            published_tables=tuple(c.get("published_tables") or ()),
            repositories=tuple(c.get("repositories") or ()),
            roles=_frozen(_roles(c.get("roles"), requires, file=path, key=f"{where}.roles")),
            inputs=_frozen(input_registry.validate(c.get("inputs"), file=path, key=f"{where}.inputs")),
            published_from_reference=bool(c.get("published_from_reference", False)),
            reference_verdict=c.get("reference_verdict"),
            authors_machine=_frozen({**(data.get("authors_machine") or {}), **(c.get("authors_machine") or {})}),
            scales=_frozen(scales), patches=patches, deviations=deviations, measured_on=c.get("measured_on", ""),
        )
        variants = _variants(c, claim, machine, setup + patch_setup, repos, file=path, where=where)
        if variants:
            claim = claims[c["id"]] = dataclasses.replace(claim, variants=_frozen(variants))
        if c.get("adapt"):
            from reprobook.core.scales import parse_adaptations
            for name in ("", *variants):
                at = claim.at_scale(name)
                adaptations = parse_adaptations(c["adapt"], claim.parameters, at.roles, file=path,
                                                key=f"{where}.adapt" if not name else f"{where}.adapt (at the {name} scale)")
            claim = dataclasses.replace(claim, adaptations=adaptations)
            claims[c["id"]] = claim
        _check_roles(claim, c, path, where)
        _check_packages(claim, path, where)
        for name in variants:
            _check_packages(claim.at_scale(name), path, where)
        for name in variants:
            _check_roles(claim.at_scale(name), {**c, **{k: v for k, v in c["scales"][name].items()
                                                        if k in ("setup", "run")}}, path, f"{where}.scales.{name}")
        _check_scales(claim, c, path, where)
    return Paper(path=path, id=meta["id"], title=meta["title"], venue=meta["venue"], short=meta.get("short", meta["id"]),
                 authors=meta.get("authors", ""), guide=meta.get("guide", ""), notes=meta.get("notes", ""),
                 repositories=_frozen(repos), machine=machine, setup=setup, published=_frozen(published),
                 claims=_frozen(claims), published_tables=_frozen(tables), artifact_doi=_doi(data, path),
                 citation=_frozen({k: tuple(v) if isinstance(v, list) else v
                                   for k, v in (data.get("citation") or {}).items()}))


DOI = re.compile(r"10\.[0-9]{4,9}/\S+")
"""A DOI as `artifact_doi` holds it: the prefix ``10.NNNN`` and a suffix, nothing around them (``https://doi.org/``
is the resolver, not the DOI)."""


def _doi(data: Mapping, path: Path) -> str:
    """The paper's ``artifact_doi``, checked in full (the schema's pattern lets a trailing newline through)."""
    doi = data.get("artifact_doi")
    if doi is None:
        return ""
    if not DOI.fullmatch(doi):
        raise ConfigError(f"artifact_doi is {doi!r}: a DOI such as 10.5281/zenodo.1234567 (without "
                          f"https://doi.org/) is allowed", file=path, key="artifact_doi")
    return doi


def _check_columns(c: Mapping, declared: tuple[str, ...] | None, *, file: Path, where: str) -> None:
    """Every column a claim's checks and plot name is one its loader declares (when it declares them)."""
    if declared is None:
        return
    named: list[tuple[str, Any]] = []
    for j, ch in enumerate(c["checks"]):
        key = f"{where}.checks[{j}]"
        named.append((f"{key}.value", ch["value"]))
        named += [(f"{key}.by", b) for b in ch.get("by") or ()]
        named += [(f"{key}.select.{s}", s) for s in (ch.get("select") or {})]
        named += [(f"{key}.{opt}", ch[opt]) for opt in ("target_column", "across", "x") if isinstance(ch.get(opt), str)]
        for opt in ("numerator", "denominator"):
            named += [(f"{key}.{opt}.{label}", label) for label in (ch.get(opt) or {})]
    plots = c.get("plot")
    for i, p in enumerate(plots if isinstance(plots, list) else [plots] if plots else []):
        pk = f"{where}.plot" + (f"[{i}]" if isinstance(plots, list) else "")
        named += [(f"{pk}.{axis}", p[axis]) for axis in ("x", "y", "hue", "col", "row") if isinstance(p.get(axis), str)]
    for key, column in named:
        if column not in declared:
            raise ConfigError(f"column {column!r} is not one the loader {c['loader']!r} produces "
                              f"(it produces: {', '.join(declared)})", file=file, key=key)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-") or "x"


def _expand_table(t: Mapping, path: Path, where: str) -> tuple[PublishedNumber, ...]:
    """A ``published_tables`` entry -> one `PublishedNumber` per non-empty cell, the target source's value first."""
    labels, columns, col_label = list(t["labels"]), list(t["columns"]), t.get("column_label")
    sources = t["sources"]
    targets = [i for i, src in enumerate(sources) if src.get("target")]
    if len(targets) > 1:
        raise ConfigError("more than one source is marked target: true", file=path, key=f"{where}.sources")
    order = [targets[0] if targets else 0] + [i for i in range(len(sources)) if i != (targets[0] if targets else 0)]
    units = t["unit"]
    if isinstance(units, Mapping):
        missing = [c for c in columns if c not in units]
        if missing:
            raise ConfigError(f"no unit for column(s) {', '.join(map(str, missing))}", file=path, key=f"{where}.unit")
    cells: dict[tuple, list[PublishedValue]] = {}
    for si in order:
        src = sources[si]
        for ri, row in enumerate(src["rows"]):
            key = f"{where}.sources[{si}].rows[{ri}]"
            if len(row) != len(labels) + len(columns):
                raise ConfigError(f"a row needs {len(labels)} label(s) ({', '.join(labels)}) and {len(columns)} "
                                  f"value(s) ({', '.join(map(str, columns))}); this one has {len(row)} cells",
                                  file=path, key=key)
            head, values = row[:len(labels)], row[len(labels):]
            for ci, (col, val) in enumerate(zip(columns, values)):
                if val is None:
                    continue
                if isinstance(val, bool) or not isinstance(val, (int, float)):
                    raise ConfigError(f"{val!r} is not a number (use null for no value)", file=path,
                                      key=f"{key}[{len(labels) + ci}]")
                cells.setdefault((*head, col), []).append(
                    PublishedValue(src["name"], float(val), src["source"], src["precision"]))
    out = []
    for (*head, col), values in cells.items():
        lab = dict(zip(labels, head))
        if col_label:
            lab[col_label] = col
        unit = units[col] if isinstance(units, Mapping) else units
        target = values[0]
        out.append(PublishedNumber(
            id=f"{t['id']}-" + "-".join(_slug(x) for x in (*head, col)), value=target.value, unit=unit,
            source=target.source, precision=target.precision,
            what=f"{t.get('what', t['id'])}: " + ", ".join(f"{k}={v}" for k, v in lab.items())
                 + ("" if col_label else f", {col}"),
            labels=_frozen(lab), measure="" if col_label else str(col), table=t["id"], sources=tuple(values),
            column_label=col_label or ""))
    return tuple(out)


# --------------------------------------------------------------------------- settings and project

@dataclass(frozen=True)
class Settings:
    runs_dir: Path
    artifact_mirror: Path | None
    artifact_cache: Path
    git_base_url: str
    redact_hosts: bool
    poll_interval_s: float
    ssh_config: Path | None
    limits: Limits = Limits()


def find_root(start: Path | None = None) -> Path:
    """The project root: ``REPROBOOK_ROOT`` or the nearest parent with ``_config.yml`` and ``configs/``."""
    env = os.environ.get("REPROBOOK_ROOT")
    if env:
        return Path(env).resolve()
    here = Path(start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / "_config.yml").is_file() and (d / "configs").is_dir():
            return d
    raise ConfigError(f"no reprobook project found at or above {here} (looked for _config.yml and configs/); "
                      "run from inside the project or set REPROBOOK_ROOT")


@dataclass(frozen=True)
class Project:
    """Everything configured: settings, hosts and papers, loaded once."""

    root: Path
    settings: Settings
    hosts: HostsConfig
    papers: Mapping[str, Paper]

    def paper(self, paper_id: str) -> Paper:
        try:
            return self.papers[paper_id]
        except KeyError:
            raise ConfigError(f"no paper {paper_id!r} (papers: {', '.join(self.papers)})",
                              file=self.root / "configs" / "papers") from None

    def claim(self, key: str) -> Claim:
        """A claim by ``paper/claim``."""
        if "/" not in key:
            raise ConfigError(f"name a claim as paper/claim, got {key!r}")
        paper, claim = key.split("/", 1)
        return self.paper(paper).claim(claim)

    def all_claims(self) -> list[Claim]:
        return [c for p in self.papers.values() for c in p.claims.values()]


CACHE_DIR = "_build/.reprobook-cache"
"""Where `load_project` keeps the configuration files it has read (`reprobook.core.cache`), under the project root
(``_build`` is out of git; ``make clean`` empties it, ``reprobook book --clean`` keeps it)."""


def load_project(root: Path | None = None) -> Project:
    """Load the project's configuration, honouring the ``REPROBOOK_*`` environment variables."""
    root = Path(root).resolve() if root else find_root()
    cfg = root / "configs"
    cache = root / CACHE_DIR
    raw = load_yaml(cfg / "reprobook.yaml", "settings", cache=cache) if (cfg / "reprobook.yaml").exists() else {}

    def path_setting(env: str, key: str, default: str | None) -> Path | None:
        val = os.environ.get(env) or raw.get(key) or default
        if not val:
            return None
        p = Path(val).expanduser()
        return p if p.is_absolute() else (root / p)

    settings = Settings(
        runs_dir=path_setting("REPROBOOK_RUNS", "runs_dir", "runs"),
        artifact_mirror=path_setting("REPROBOOK_ARTIFACT_MIRROR", "artifact_mirror", None),
        artifact_cache=path_setting("REPROBOOK_ARTIFACT_CACHE", "artifact_cache", "~/.cache/reprobook/artifacts"),
        git_base_url=os.environ.get("REPROBOOK_GIT_BASE_URL") or raw.get("git_base_url", "https://github.com/"),
        redact_hosts=os.environ.get("REPROBOOK_REDACT_HOSTS", str(raw.get("redact_hosts", False))).lower() in ("1", "true", "yes"),
        poll_interval_s=float(raw.get("poll_interval_s", 5.0)),
        ssh_config=path_setting("REPROBOOK_SSH_CONFIG", "", None),
        limits=Limits.from_settings(raw.get("limits"), file=cfg / "reprobook.yaml"),
    )
    hosts = load_hosts(path_setting("REPROBOOK_HOSTS", "", "configs/hosts.yaml"), cache=cache)
    papers = {p.stem: load_paper(p, cache=cache) for p in sorted((cfg / "papers").glob("*.yaml"))}
    return Project(root=root, settings=settings, hosts=hosts, papers=_frozen(papers))
