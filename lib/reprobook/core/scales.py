"""Scales and deviations: the sizes a claim runs at, and what a run changes about the artifact.

A claim may declare its **scales**, each a named set of parameter values. ``paper`` is the
guide's sizes (the parameters' defaults, unless it says otherwise); ``rehearsal`` is sizes that
finish in minutes on a small host, so that the whole pipeline (clone, build, generate, run,
fetch, parse, plot, verdict) is tried before the expensive run::

    scales:
      paper: {about: "the guide's sizes: 1,000,000 accounts, 10,000 transactions per block"}
      rehearsal:
        about: "1,000 accounts, 100 transactions per block, one trial"
        values: {accounts: 1000, txns_per_block: 100, trials: 1, rust: host, go: host}

A claim with scales has a parameter ``scale`` (default ``paper``): the chosen scale's values
stand in for the defaults, and values given explicitly win over both. The run id, the manifest
and the page carry the scale.

A value the artifact keeps as a source constant is set by a **patch** generated from the
parameters, never by hand::

    patches:
      - file: aardvark-prototype/go-algorand/ledger/perf_test.go
        lines: ["const startingAddrs = {accounts}", "const txnsPerBlock = {txns_per_block}"]

Each line is a template: with the ``paper`` scale's values it must be a line of the file as
committed (indentation aside), and the run replaces it with the template filled with the run's
values. The patch is one generated setup step (first of the claim's own), which restores each
file from git before editing it, so a workdir shared by runs at different scales never keeps
another run's edit; it prints the diff into the job log.

A fix the artifact needs to build or run here (a compiler newer than the authors', a bug that
shows only on a small host) is a **recorded patch**: a unified diff kept in the project
(``configs/patches/...``, a few lines of explanation above it), applied with ``git apply`` in the
checkout by the same generated step, only when the run's parameters match its ``when``::

    patches:
      - diff: patches/pequin/gcc12-bitutil.patch
        in: Pequin-Artifact
        why: "GCC 12 defines _mm_cvtsi128_si16 itself; TurboPFor's own definition is renamed"
      - diff: patches/pequin/threadpool-small-host.patch
        in: Pequin-Artifact
        when: {small_host: true}
        why: "..."

A patch already applied is left alone (nothing is rebuilt), one the run does not want is taken
back, so runs with and without it can share a checkout.

**Adaptations** say what a claim does on a host short of a soft requirement, instead of refusing
it: the parameter values it sets, decided from the facts probed on the hosts of a role::

    adapt:
      - role: server
        unless: {cores: 3}
        set: {small_host: true}
        why: "Pequin's thread pool starts no worker on fewer than 3 CPUs"

`adapt` gives the parameters a run uses once the hosts are known, and the record of each
adaptation made, which the manifest keeps (``adapted``); the deviations it brings follow from the
parameters, as any other.

**Deviations** are what a run does differently from the guide: a toolchain substituted (the
host's Go for the pinned Go 1.16.4), or the patch above. A claim lists the conditional ones::

    deviations:
      - when: {go: host}
        kind: toolchain
        what: "the host's Go with GO111MODULE=on and GOFLAGS=-mod=mod instead of Go 1.16.4"

`deviations_for` gives those of a parameter set, the patch with its diff included; a live run
records them in its manifest before it starts (so a killed client still leaves an honest
record), and `reprobook.api.deviations` shows them on the page. A step reports the toolchain it
actually used with a log line ``### reprobook toolchain: <name>: <version>`` (`TOOLCHAIN_MARKER`),
which the run keeps beside the declared deviation.

A check may say what it needs to be **judged** (``needs:`` in the check): the scales at which
its comparison means something, and machine requirements of the run's host (the requirements
registry's names). At another scale, or on a host short of them, the check is ``inconclusive``
with the reason, its measured values still shown (`reprobook.core.checks`).
"""

from __future__ import annotations

import shlex
import string
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from reprobook.errors import ConfigError
from reprobook.core.requirements import Requirements, parse_requirements, shortfalls

PAPER = "paper"
"""The scale of the guide's own sizes: every claim with scales has it."""
REHEARSAL = "rehearsal"
"""The scale that tries the whole pipeline at small sizes on a small host (a page shows its latest run beside its own)."""
TOOLCHAIN_MARKER = "### reprobook toolchain:"
"""The job log line by which a step names the toolchain it used (``### reprobook toolchain: go: go1.26.8``)."""


@dataclass(frozen=True)
class Scale:
    """A named set of parameter values (``paper``, ``rehearsal``) and what it means in words."""

    name: str
    about: str
    values: Mapping[str, Any] = field(default_factory=dict)
    expected_minutes: float | None = None   # a live run at this scale, when no recorded run says (the paper file's)
    scales_with: tuple[str, ...] = ()       # number parameters that figure is proportional to (at the scale's values)


@dataclass(frozen=True)
class SourcePatch:
    """Lines of one file of the checkout set from parameters: templates such as ``const N = {accounts}``."""

    file: str
    lines: tuple[str, ...]

    def parameters(self) -> list[str]:
        return list(dict.fromkeys(name for line in self.lines for name in template_names(line)))


@dataclass(frozen=True)
class RecordedPatch:
    """A unified diff kept in the project, applied in checkout ``within`` when the run's parameters match ``when``."""

    file: str
    """Its path under ``configs/`` (``patches/pequin/gcc12-bitutil.patch``)."""
    within: str
    text: str
    why: str
    when: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.file.rsplit("/", 1)[-1]

    @property
    def diff(self) -> str:
        """The diff alone, without the explanation above it."""
        lines = self.text.splitlines(keepends=True)
        start = next((i for i, line in enumerate(lines) if line.startswith(("diff --git ", "--- "))), 0)
        return "".join(lines[start:])

    def wanted(self, values: Mapping[str, Any]) -> bool:
        return all(_same(values.get(k), v) for k, v in self.when.items())


@dataclass(frozen=True)
class Adaptation:
    """Parameter values ``set`` for a run whose hosts of ``role`` fall short of ``unless``, and why."""

    unless: Requirements
    set: Mapping[str, Any]
    why: str
    role: str = ""

    def as_dict(self, hosts: Iterable[str], short: Iterable[str]) -> dict:
        return {"set": dict(self.set), "why": self.why, "role": self.role or None,
                "hosts": sorted(hosts), "shortfalls": list(short)}


@dataclass(frozen=True)
class DeviationSpec:
    """A deviation from the guide that a run makes when its parameters match ``when``."""

    kind: str
    what: str
    when: Mapping[str, Any] = field(default_factory=dict)


#: requirements a run needs to run at all, not to be judged: outputs that exist show the host had them (and
#: ``cloudlab`` says how to allocate the testbed; the facts judged are the machines' own)
RUN_ONLY = ("commands", "files", "disk_gib", "docker", "cloudlab")


@dataclass(frozen=True)
class CheckNeeds:
    """Where a check may be judged: the scales, and the machine (the claim's requirements and ``requires``).

    By default a check is judged only at the paper's scale, on a machine that meets the claim's
    requirements (`RUN_ONLY` aside): a smaller workload or a smaller machine changes what is
    measured. ``judged_at`` names further scales (``[rehearsal]``) at which, on any machine, the
    check's comparison still means something (two readings of one run, two systems measured side by
    side), with ``judged_why`` saying why. ``only_at`` names the only scales whose verdict the check belongs to
    (a check of a rehearsal's own pipeline, which a run at the paper's scale is not judged by: left out there,
    not inconclusive). ``scales`` (``needs: {scale: ...}``) overrides both, and
    ``requires`` is what the check needs of the machine beyond the claim (``needs: {cores: 32}``).
    """

    scales: tuple[str, ...] = ()
    requires: Requirements | None = None
    why: str = ""
    judged_at: tuple[str, ...] = ()
    judged_why: str = ""
    only_at: tuple[str, ...] = ()   # the only scales whose verdict the check belongs to (`reprobook.core.checks.applies`)

    @property
    def allowed(self) -> tuple[str, ...]:
        """The scales at which the check is judged."""
        return self.scales or (PAPER, *(s for s in self.judged_at if s != PAPER))

    def unmet(self, scale: str | None, host_facts: Mapping | None, claim_requires: Requirements | None = None,
              *, imported: bool = False) -> list[str]:
        """Why a run at ``scale`` on a machine with ``host_facts`` cannot judge the check (empty: it can).

        ``scale`` None counts as the paper's scale. ``host_facts`` None is the authors' own machine (their
        shipped outputs): nothing is held against it. Otherwise the machine must meet ``requires`` and,
        unless the check is judged at other scales too (``judged_at``: its comparison does not depend on
        the machine), the claim's requirements; a fact the run does not record is not a pass but a reason
        ("the imported run does not say ...").
        """
        out = []
        at = scale or PAPER
        if at not in self.allowed:
            out.append(f"this run is at {at} scale; the check needs the {' or '.join(self.allowed)} scale")
        if host_facts is None:
            return out
        wanted = self.machine(claim_requires)
        if wanted:
            out += machine_unmet(host_facts, wanted, imported=imported)
        return out

    def machine(self, claim_requires: Requirements | None = None) -> dict[str, Any]:
        """What the check needs of the machine (requirement name -> value): its own ``requires`` over the claim's,
        the claim's left out for a check judged at other scales too, and `RUN_ONLY` always."""
        wanted: dict[str, Any] = {}
        if claim_requires is not None and not self.judged_at:
            wanted.update((k, v) for k, v in claim_requires.items() if k not in RUN_ONLY)
        if self.requires is not None:
            wanted.update(self.requires.items())
        return {k: v for k, v in wanted.items() if k not in ("testbed", "why") and v not in (None, (), "")}

    def settle(self, claim_requires: Requirements | None = None, *, imported: bool = False) -> str:
        """The run that would judge the check, in words."""
        wanted = self.machine(claim_requires)
        words = Requirements._checked(wanted).describe() if wanted else []   # values validated when loaded
        out = f"a run at the {' or '.join(self.allowed)} scale" + (f" on a machine with {'; '.join(words)}" if words else "")
        if imported:
            out += (" (an imported run states its machine with reprobook import --facts FILE, or --cores, --os, "
                    "--memory-gib, --smt, --numa-nodes)")
        return out + " would settle it"


def machine_unmet(facts: Mapping, wanted: Mapping[str, Any], *, imported: bool = False) -> list[str]:
    """How a machine with ``facts`` falls short of ``wanted`` (requirement name -> value), one sentence each.

    A requirement whose facts the run does not have is named as unknown, with the phrase the book uses
    for it, rather than as a shortfall.
    """
    from reprobook.core.requirements import fact_names
    reqs = Requirements._checked(dict(wanted))   # values validated when the paper file loaded
    who = "the imported run" if imported else "the run"
    out = []
    for name, value in reqs.items():
        keys = fact_names(name)
        one = Requirements._checked({name: value})
        if keys and all(facts.get(k) in (None, "") for k in keys):
            out.append(f"{who} does not say whether its machine has {'; '.join(one.describe())}")
            continue
        out += [f"the run's host {s}" if s.startswith("needs ") else s for s in shortfalls(facts, one)]
    return out


@dataclass(frozen=True)
class Deviation:
    """One way a run differs from the guide: its kind (``toolchain``, ``patch``), in words, and a diff for a patch."""

    kind: str
    what: str
    diff: str = ""

    def as_dict(self) -> dict:
        return {"kind": self.kind, "what": self.what, **({"diff": self.diff} if self.diff else {})}


# --------------------------------------------------------------------------- reading the paper file

def template_names(line: str) -> list[str]:
    """The parameter names a template line uses: ``"const N = {accounts}"`` -> ``["accounts"]``."""
    try:
        return [name for _, name, _, _ in string.Formatter().parse(line) if name is not None]
    except ValueError as exc:
        raise ConfigError(f"{line!r} is not a template line ({exc}); write a parameter as {{name}} and a "
                          f"literal brace as {{{{ or }}}}") from None


def parse_scales(raw: Mapping | None, parameters: Mapping[str, Any], *, file, key: str) -> dict[str, Scale]:
    """A claim's ``scales:`` -> `Scale` by name (``paper`` first); values must name the claim's parameters."""
    if not raw:
        return {}
    known = set(parameters)
    if PAPER not in raw:
        raise ConfigError(f"a claim with scales needs a '{PAPER}' scale (the guide's sizes)", file=file, key=key)
    out = {}
    for name in [PAPER, *(n for n in raw if n != PAPER)]:
        s = raw[name] or {}
        for p in s.get("values") or {}:
            if p == "scale" or p not in known:
                raise ConfigError(f"no parameter {p!r} in this claim (parameters: {', '.join(sorted(known)) or 'none'})",
                                  file=file, key=f"{key}.{name}.values.{p}")
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in (s.get("values") or {}).items()}  # sweep axes
        minutes = s.get("expected_minutes")
        for j, p in enumerate(s.get("scales_with") or ()):
            default = parameters[p].default if p in known else None
            if isinstance(default, bool) or not isinstance(default, (int, float)):
                raise ConfigError(f"{p!r} is not a number parameter of this claim (the time scales with a count: "
                                  f"trials, iterations)", file=file, key=f"{key}.{name}.scales_with[{j}]")
        out[name] = Scale(name, " ".join(str(s.get("about", "")).split()), MappingProxyType(values),
                          float(minutes) if minutes is not None else None, tuple(s.get("scales_with") or ()))
    return out


def parse_patches(raw: Iterable[Mapping] | None, parameters: Iterable[str], *, file,
                  key: str) -> tuple[SourcePatch | RecordedPatch, ...]:
    """A claim's ``patches:`` -> `SourcePatch` (template lines) and `RecordedPatch` (a diff file) tuple.

    Every ``{name}`` and every ``when`` must name the claim's parameters; a diff file is read here
    (relative to ``configs/``, the parent of the paper file's folder), so a missing one fails at load.
    """
    known = set(parameters)
    out: list[SourcePatch | RecordedPatch] = []
    for i, p in enumerate(raw or ()):
        if "diff" in p:
            out.append(_recorded(p, known, file=file, key=f"{key}[{i}]"))
            continue
        for j, line in enumerate(p["lines"]):
            try:
                names = template_names(line)
            except ConfigError as exc:
                raise ConfigError(exc.message, file=file, key=f"{key}[{i}].lines[{j}]") from None
            if not names:
                raise ConfigError("a patch line sets no parameter (write it as e.g. 'const N = {accounts}')",
                                  file=file, key=f"{key}[{i}].lines[{j}]")
            for name in names:
                if name not in known:
                    raise ConfigError(f"no parameter {name!r} in this claim (parameters: {', '.join(sorted(known))})",
                                      file=file, key=f"{key}[{i}].lines[{j}]")
        out.append(SourcePatch(p["file"], tuple(p["lines"])))
    return tuple(out)


def _recorded(p: Mapping, known: set, *, file, key: str) -> RecordedPatch:
    from pathlib import Path
    for k in p.get("when") or {}:
        if k not in known:
            raise ConfigError(f"no parameter {k!r} in this claim (parameters: {', '.join(sorted(known))})",
                              file=file, key=f"{key}.when.{k}")
    path = Path(file).resolve().parent.parent / p["diff"]
    try:
        text = path.read_bytes().decode()  # as it is: a CR in a line is part of the diff
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise ConfigError(f"cannot read the recorded patch {p['diff']} ({why}); paths are under configs/",
                          file=file, key=f"{key}.diff") from None
    patch = RecordedPatch(p["diff"], p["in"], text, " ".join(str(p.get("why", "")).split()),
                          MappingProxyType(dict(p.get("when") or {})))
    if not patch.diff.strip() or "+++ " not in patch.diff:
        raise ConfigError(f"{p['diff']} holds no unified diff (expected '--- a/…' and '+++ b/…' lines)",
                          file=file, key=f"{key}.diff")
    if _HEREDOC_END in patch.diff.splitlines():
        raise ConfigError(f"{p['diff']} has a line {_HEREDOC_END!r}, which reprobook uses to ship it",
                          file=file, key=f"{key}.diff")
    return patch


def parse_adaptations(raw: Iterable[Mapping] | None, parameters: Iterable[str], roles: Iterable[str], *, file,
                      key: str) -> tuple[Adaptation, ...]:
    """A claim's ``adapt:`` -> `Adaptation` tuple: ``unless`` a requirement, ``set`` the claim's parameters."""
    known, roles = set(parameters), set(roles)
    out = []
    for i, a in enumerate(raw or ()):
        where = f"{key}[{i}]"
        for k in a.get("set") or {}:
            if k not in known or k == "scale":
                raise ConfigError(f"no parameter {k!r} in this claim to set (parameters: {', '.join(sorted(known))})",
                                  file=file, key=f"{where}.set.{k}")
        role = a.get("role", "")
        if role and role not in roles:
            raise ConfigError(f"no role {role!r} in this claim (roles: {', '.join(sorted(roles)) or 'none'})",
                              file=file, key=f"{where}.role")
        out.append(Adaptation(parse_requirements(a["unless"], file=file, key=f"{where}.unless"),
                              MappingProxyType(dict(a["set"])), " ".join(a["why"].split()), role))
    return tuple(out)


def adapt(adaptations: Iterable[Adaptation], params: Mapping[str, Any], facts: Mapping[str, Mapping],
          roles: Mapping[str, Iterable[str]] | None = None) -> tuple[dict[str, Any], list[dict]]:
    """The parameters a run uses on hosts with ``facts`` (host -> facts), and a record of each adaptation made.

    ``roles`` (host -> its roles) picks the hosts an adaptation with a role looks at; without roles
    (one host), every host counts. A value the caller gave explicitly is kept: the adaptation is
    then not made, and the record says so.
    """
    out, made = dict(params), []
    for a in adaptations:
        hosts = [h for h in facts if not a.role or roles is None or a.role in set(roles.get(h, ()))]
        short = {h: shortfalls(facts[h], a.unless) for h in hosts}
        short = {h: s for h, s in short.items() if s}
        if not short:
            continue
        given = {k: params[k] for k in a.set if k in params and not _same(params[k], a.set[k])}
        record = a.as_dict(short, [f"{h}: {line}" for h, lines in short.items() for line in lines])
        if given:
            record["not_made"] = f"kept the values given explicitly: {given}"
        else:
            out.update(a.set)
        made.append(record)
    return out, made


def parse_deviations(raw: Iterable[Mapping] | None, parameters: Iterable[str], *, file,
                     key: str) -> tuple[DeviationSpec, ...]:
    """A claim's ``deviations:`` -> `DeviationSpec` tuple; ``when`` must name the claim's parameters."""
    known = set(parameters) | {"scale"}
    out = []
    for i, d in enumerate(raw or ()):
        for p in d.get("when") or {}:
            if p not in known:
                raise ConfigError(f"no parameter {p!r} in this claim (parameters: {', '.join(sorted(known))})",
                                  file=file, key=f"{key}[{i}].when.{p}")
        out.append(DeviationSpec(d.get("kind", "other"), " ".join(d["what"].split()),
                                 MappingProxyType(dict(d.get("when") or {}))))
    return tuple(out)


def parse_needs(raw: Mapping | None, *, file, key: str, judged_at: Iterable[str] | None = None,
                judged_why: str = "", only_at: Iterable[str] | None = None) -> CheckNeeds:
    """A check's ``needs:`` -> `CheckNeeds`: ``scale`` (a name or a list), ``why``, and machine requirements;
    with the check's ``judged_at`` (further scales it may be judged at) and the ``why`` that justifies them."""
    raw = raw or {}
    if not isinstance(raw, Mapping):
        raise ConfigError("needs: expected a mapping such as {scale: paper, cores: 32, why: ...}", file=file, key=key)
    scales = raw.get("scale") or ()
    scales = (scales,) if isinstance(scales, str) else tuple(scales)
    machine = {k: v for k, v in raw.items() if k not in ("scale", "why")}
    requires = parse_requirements(machine, file=file, key=key) if machine else None
    only = tuple(only_at or ())
    return CheckNeeds(scales or only, requires, " ".join(str(raw.get("why", "")).split()),
                      tuple(judged_at or only), " ".join(str(judged_why or "").split()), only)


# --------------------------------------------------------------------------- a run's scale and deviations

def fill(line: str, values: Mapping[str, Any]) -> str:
    """A template line with the values filled in (numbers as Go, C and Rust spell them: no thousands separators)."""
    return line.format_map({k: _spell(v) for k, v in values.items()})


def _spell(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def patch_edits(patches: Iterable[SourcePatch], paper: Mapping[str, Any],
                values: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``(file, line as committed, line as the run needs it)`` for every patch line the run changes."""
    out = []
    for p in patches:
        for line in p.lines:
            old, new = fill(line, paper), fill(line, values)
            if old != new:
                out.append((p.file, old, new))
    return out


def patch_diff(patches: Iterable[SourcePatch], paper: Mapping[str, Any], values: Mapping[str, Any]) -> str:
    """The patch a run with ``values`` applies, as a unified diff of the changed lines (without context)."""
    out: list[str] = []
    last = None
    for file, old, new in patch_edits(patches, paper, values):
        if file != last:
            out += [f"--- a/{file}", f"+++ b/{file}"]
            last = file
        out += ["@@ @@", f"-{old}", f"+{new}"]
    return "\n".join(out) + ("\n" if out else "")


def deviations_for(specs: Iterable[DeviationSpec], patches: Iterable[SourcePatch], paper: Mapping[str, Any],
                   values: Mapping[str, Any]) -> list[Deviation]:
    """The deviations of a run with ``values``: the declared ones whose ``when`` matches, then the patch."""
    out = [Deviation(d.kind, d.what) for d in specs
           if all(_same(values.get(k), v) for k, v in d.when.items())]
    patches = tuple(patches)
    out += [Deviation("patch", f"{p.why} (`{p.file}`)" if p.why else f"`{p.file}`", p.diff)
            for p in patches if isinstance(p, RecordedPatch) and p.wanted(values)]
    patches = tuple(p for p in patches if isinstance(p, SourcePatch))
    diff = patch_diff(patches, paper, values)
    if diff:
        changed = patch_edits(patches, paper, values)
        files = list(dict.fromkeys(f for f, _, _ in changed))
        out.append(Deviation("patch", f"source constants set from the parameters: {len(changed)} line(s) in "
                                      + ", ".join(f"`{f}`" for f in files), diff))
    return out


def _same(a: Any, b: Any) -> bool:
    return a == b or str(a).lower() == str(b).lower()


def toolchains_from_log(text: str) -> list[str]:
    """The toolchains a run's steps named in its log (`TOOLCHAIN_MARKER` lines), each once, in order."""
    found = [line[len(TOOLCHAIN_MARKER):].strip() for line in text.splitlines() if line.startswith(TOOLCHAIN_MARKER)]
    return list(dict.fromkeys(f for f in found if f))


# --------------------------------------------------------------------------- the generated patch step

PATCH_FUNCTION = r"""rb_patch() {  # file old new [old new]...: the file as committed, each line `old` made `new` (indentation and CR kept)
  local f=$1 dir base tmp n
  shift
  dir=$(dirname -- "$f"); base=$(basename -- "$f")
  tmp=$(mktemp)
  git -C "$dir" show "HEAD:./$base" > "$tmp"
  cp "$tmp" "$tmp.orig"
  while [ $# -gt 1 ]; do
    n=$(OLD=$1 awk '{ s = $0; sub(/\r$/, "", s); sub(/^[ \t]+/, "", s) } s == ENVIRON["OLD"] { n++ } END { print n + 0 }' "$tmp")
    if [ "$n" != 1 ]; then
      echo "reprobook: $f has $n line(s) '$1' where the patch expects exactly one: is the checkout at the claim's commit?" >&2
      rm -f "$tmp" "$tmp.orig"
      return 4
    fi
    OLD=$1 NEW=$2 awk '{ s = $0; cr = sub(/\r$/, "", s) ? "\r" : ""; sub(/^[ \t]+/, "", s) }
      s == ENVIRON["OLD"] { print substr($0, 1, length($0) - length(s) - length(cr)) ENVIRON["NEW"] cr; next }
      { print }' "$tmp" > "$tmp.new"
    mv "$tmp.new" "$tmp"
    shift 2
  done
  diff -u --label "a/$f" --label "b/$f" "$tmp.orig" "$tmp" || true
  cmp -s "$tmp" "$f" || cat "$tmp" > "$f"   # an unchanged file keeps its time stamp: nothing is rebuilt for it
  rm -f "$tmp" "$tmp.orig"
}"""


def _shell_template(line: str) -> str:
    """A template line as a bash word: literal parts quoted, each ``{name}`` as ``"${RB_NAME}"``."""
    parts = []
    for literal, name, _, _ in string.Formatter().parse(line):
        if literal:
            parts.append(shlex.quote(literal))
        if name is not None:
            parts.append(f'"${{RB_{name.upper()}}}"')
    return "".join(parts) or "''"


KEEP_TIMES_FUNCTIONS = r"""rb_kept=$(mktemp -d)
rb_keep_times() {  # file...: a copy of each (with its time stamp) before the patches
  local f i=0
  for f; do i=$((i + 1)); if [ -f "$f" ]; then cp -p -- "$f" "$rb_kept/$i"; fi; done
}
rb_restore_times() {  # file...: each that ended as it began gets its time stamp back
  local f i=0
  for f; do
    i=$((i + 1))
    if [ -f "$rb_kept/$i" ] && cmp -s -- "$rb_kept/$i" "$f"; then touch -r "$rb_kept/$i" -- "$f"; fi
  done
  rm -rf "$rb_kept"
}"""


APPLY_FUNCTION = r"""rb_apply() {  # dir name wanted(1|0) < diff: the recorded patch applied (once) or taken back
  # the diff is read by bash itself and handed to git as a here-string: a patch applied already costs one git, no
  # other process (there are a dozen of them before every run)
  local dir=$1 name=$2 want=$3 p=""
  IFS= read -r -d '' p || true
  p=${p%$'\n'}
  if git -C "$dir" apply --reverse --check <<< "$p" 2>/dev/null; then
    if [ "$want" = 1 ]; then echo "patch $name: applied already"
    else git -C "$dir" apply --reverse <<< "$p" && echo "patch $name: taken back (this run does without it)"; fi
  elif [ "$want" = 1 ]; then
    if ! git -C "$dir" apply <<< "$p"; then
      echo "reprobook: the recorded patch $name does not apply in $dir: is the checkout at the claim's commit?" >&2
      return 4
    fi
    echo "patch $name: applied"; git -C "$dir" apply --stat <<< "$p" 2>/dev/null | sed 's/^/  /'
  else echo "patch $name: not wanted by this run"; fi
}"""
_HEREDOC_END = "RB_RECORDED_PATCH_END"


def _wanted_test(when: Mapping[str, Any]) -> str:
    """A shell word that is 1 when the run's parameters match ``when`` (``RB_<NAME>`` as `param_env` spells them)."""
    if not when:
        return "1"
    tests = " && ".join(f'[ "${{RB_{k.upper()},,}}" = {shlex.quote(_spell(v).lower())} ]'
                        for k, v in when.items())
    return f"$( {tests} && echo 1 || echo 0)"


def patch_step(patches: Iterable[SourcePatch | RecordedPatch], paper: Mapping[str, Any]) -> dict | None:
    """The setup step that applies ``patches`` with the run's parameters (as ``Step`` fields), or None."""
    patches = tuple(patches)
    if not patches:
        return None
    templated = [p for p in patches if isinstance(p, SourcePatch)]
    recorded = [p for p in patches if isinstance(p, RecordedPatch)]
    lines, what, notes = [], [], []
    files = " ".join(shlex.quote(f) for f in dict.fromkeys(p.file for p in templated))
    if templated:
        lines.append(PATCH_FUNCTION)
        # a file a recorded patch also changes is rewritten twice (restored as committed, then patched again): if it
        # ends as it was, it gets its time stamp back, so that a build does not redo what it did
        lines.append(KEEP_TIMES_FUNCTIONS)
        lines.append(f"rb_keep_times {files}")
        for p in templated:
            args = " ".join(f"{shlex.quote(fill(line, paper))} {_shell_template(line)}" for line in p.lines)
            lines.append(f"rb_patch {shlex.quote(p.file)} {args}")
        names = ", ".join(dict.fromkeys(n for p in templated for n in p.parameters()))
        files = ", ".join(p.file for p in templated)
        what.append(f"set the source constants from the parameters ({names})")
        notes.append(f"Each of {files} is restored as committed, then the lines that hold {names} are set to the "
                     f"run's values (at the paper's scale they are left as they are). The diff is printed in the "
                     f"log, and the run's manifest records it.")
    if recorded:
        lines.append(APPLY_FUNCTION)
        # each diff into a variable (bash's own read: no process), and whether this run wants it
        for i, p in enumerate(recorded):
            lines.append(f"IFS= read -r -d '' rb_p{i} <<'{_HEREDOC_END}' || true\n{p.diff.rstrip(chr(10))}\n{_HEREDOC_END}")
        lines.append("rb_w=(" + " ".join(_wanted_test(p.when) for p in recorded) + ")")
        each = [f"rb_apply {shlex.quote(p.within)} {shlex.quote(p.name)} \"${{rb_w[{i}]}}\" <<< \"$rb_p{i}\""
                for i, p in enumerate(recorded)]
        within = {p.within for p in recorded}
        if len(within) == 1:
            # a run that wants them all, on a checkout where they are all applied already (the usual case after the
            # first run): one git apply --reverse --check of the whole series, last first, says so; else one by one
            series = " ".join(f'"$rb_p{i}"' for i in reversed(range(len(recorded))))
            lines.append(f'if [[ " ${{rb_w[*]}} " != *" 0 "* ]] && printf %s {series} | '
                         f'git -C {shlex.quote(within.pop())} apply --reverse --check 2>/dev/null; then')
            lines += [f"  echo {shlex.quote(f'patch {p.name}: applied already')}" for p in recorded]
            lines.append("else")
            lines += ["  " + e for e in each]
            lines.append("fi")
        else:
            lines += each
        what.append(f"apply the recorded source fixes ({', '.join(p.name for p in recorded)})")
        notes.append("Each recorded patch (a diff kept under configs/, shown among the deviations) is applied with "
                     "git apply unless it is applied already; one a run does not want (its 'when' does not match) "
                     "is taken back, so runs with and without it share the checkout.")
    if templated:
        lines.append(f"rb_restore_times {files}")
    return {"name": "; ".join(what),
            "run": "\n".join(lines) + "\n",
            "note": "Generated from the claim's patches. " + " ".join(notes),
            "expected_minutes": 0.0}


def manifest_fields(plan) -> dict:
    """What a run's manifest records of its scale and deviations (a `reprobook.core.plan.RunPlan`, as the run
    uses it), before the run starts ({} for a claim without)."""
    claim, out = plan.claim, {}
    if claim.scales:
        out["scale"] = plan.scale
    devs = plan.deviations
    if devs or claim.scales or claim.deviations or claim.patches:
        out["deviations"] = [d.as_dict() for d in devs]
    return out
