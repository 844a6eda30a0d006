"""Machine requirements: what a claim's experiment needs of its host, probed and judged in one place.

A paper file names its needs under ``machine:`` (the paper's) and
``requires:`` (a claim's, which wins key by key)::

    machine:
      os: ["Ubuntu 20.04", "Ubuntu 22.04"]
      physical_cores_per_socket: 8
      disk_gib: 20
      commands: [git, make]

Each requirement is registered here once, by that name, with the JSON-schema
fragment its value must satisfy (checked when the paper loads), the shell
lines that probe a host for it, the parse of their output into facts, the
comparison that says how a host falls short ("needs 8 physical cores on one
socket, has 2") and the phrase the book shows ("at least 8 physical cores on
one socket"). Every probe runs in ONE script, so gathering a host's facts is
one round trip::

    reqs = parse_requirements({"cores": 8}, file="configs/papers/x.yaml", key="machine")
    facts = facts_from(host.run_script(probe_script([reqs]), host.workdir).stdout)  # what Host.facts does
    shortfalls(facts, reqs)   # [] or ["needs 8 cores (CPUs online), has 2"]

``os`` lists ``"Family Release"`` strings, any of which may match. The family
is compared with the ``ID`` of the host's ``/etc/os-release`` (ignoring case),
the release with its ``VERSION_ID`` at component boundaries: the required
release's dot-separated components must begin the host's. So ``Debian 12``
matches VERSION_ID ``12`` (and ``12.5``), not ``120``; ``Ubuntu 22.04``
matches ``22.04`` (and ``22.04.3``, were a derivative to put point releases
there), not ``22.10``; ``Ubuntu 22`` matches every 22.x; ``Ubuntu`` alone any
Ubuntu.

``testbed`` (the machine the authors used) and ``why`` (shown when a host
falls short) are free text and are not probed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from shlex import quote
from types import MappingProxyType
from pathlib import Path
from typing import Any

from reprobook.errors import ConfigError

#: seconds ``docker info`` may take before the daemon counts as not answering
DOCKER_TIMEOUT_S = 5

#: free-text keys, kept but not probed
_FREE_TEXT = ("testbed", "why")


# --------------------------------------------------------------------------- facts

class HostFacts(Mapping):
    """What a host is, as probed: kernel, CPUs and cores, SMT, NUMA, memory, disk, OS, Docker, commands.

    Read a fact by name, ``facts.cpus`` or ``facts["cpus"]``; a fact the probe
    could not read is ``None`` (``smt`` is then ``"unknown"``). ``commands``
    maps each command looked for to whether it is on PATH. Frozen.
    """

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any]):
        values = dict(values)
        values["commands"] = MappingProxyType(dict(values.get("commands") or {}))
        object.__setattr__(self, "_values", values)

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"no host fact {name!r} (facts: {', '.join(self._values)})") from None

    def __setattr__(self, name, value):
        raise AttributeError("HostFacts is frozen")

    def __reduce__(self):
        return HostFacts, (self.as_dict(),)

    def __repr__(self) -> str:
        return f"HostFacts({self.as_dict()!r})"

    def as_dict(self) -> dict:
        """The facts as plain JSON-able values (what a run's manifest stores)."""
        d = dict(self._values)
        d["commands"] = dict(d["commands"])
        return d


# The probe runs on every host of a cluster at once; on 100 hosts its cost is what a check costs. So it
# reads /proc and /sys with bash's own `read` and globs, and starts a program only where bash has no way
# (id, df): about 3 ms of a host's CPU, against 40 ms for the same facts through grep, awk and sort.
_HOST_PROBE = r"""
rb_h=$HOSTNAME; [ -n "$rb_h" ] || rb_h=$(uname -n)
echo "hostname=$rb_h"
{ read -r rb_k < /proc/sys/kernel/osrelease; } 2>/dev/null || rb_k=$(uname -r)
echo "kernel=$rb_k"
echo "arch=$(uname -m)"
rb_m=
{ while IFS=: read -r k v; do
    case $k in "model name"*) rb_m=${v#"${v%%[! ]*}"}; break ;; esac
  done < /proc/cpuinfo; } 2>/dev/null
echo "cpu_model=$rb_m"
echo "user=$(id -un 2>/dev/null)"
""".strip()


def _parse_host(kv: Mapping[str, str]) -> dict:
    return {k: kv.get(k, "") for k in ("hostname", "kernel", "arch", "cpu_model", "user")}


def _int(text: str | None) -> int | None:
    try:
        return int((text or "").strip())
    except ValueError:
        return None


def _gib(kib_text: str | None) -> float | None:
    kib = _int(kib_text)
    return None if kib is None else round(kib / 2**20, 2)


def _and(words: Iterable[str]) -> str:
    words = list(words)
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


# --------------------------------------------------------------------------- facts as a typed record

_LINE = r"^[^\x00-\x1f\x7f]*$"


def text(words: str, longest: int = 200) -> dict:
    """The schema of a fact that is one line of text (a probe's words), for `Requirement.facts`."""
    return {"type": "string", "maxLength": longest, "pattern": _LINE,
            "description": f"{words}: one line of text, at most {longest} characters, no control characters"}


def count(words: str, most: int = 1 << 20) -> dict:
    """The schema of a fact that counts something (null: the probe could not read it)."""
    return {"type": ["integer", "null"], "minimum": 1, "maximum": most,
            "description": f"{words}: a whole number from 1 to {most:,}, or null (not known)"}


def amount(words: str, most: float = 10.0 ** 7) -> dict:
    """The schema of a fact that is a quantity (null: not known)."""
    return {"type": ["number", "null"], "minimum": 0, "maximum": most,
            "description": f"{words}: a number from 0 to {most:g}, or null (not known)"}


def flag(words: str) -> dict:
    """The schema of a yes-or-no fact (null: not probed)."""
    return {"type": ["boolean", "null"], "description": f"{words}: true, false or null (not probed)"}


_HOST_FACTS = {"hostname": text("the host's name"), "kernel": text("the kernel's release"),
               "arch": text("the machine's architecture"), "cpu_model": text("the CPU's model name"),
               "user": text("the user")}
"""The facts every probe records (`_HOST_PROBE`), beside those of the requirements."""


# --------------------------------------------------------------------------- the registry

class Requirement:
    """One machine requirement. Subclass it, fill in the class attributes and methods, decorate with `register`.

    Attributes
    ----------
    name : str
        The key in ``machine:`` / ``requires:``.
    schema : dict
        JSON-schema fragment the configured value must satisfy.
    expects, example : str
        What a valid value is, in words, and one, for error messages.
    unset
        What `Requirements.get` returns when the requirement is not configured.
    probe : str
        Shell lines printing ``fact=value`` lines; the workdir is ``$1``.
    facts : dict
        The facts it records (`parse`), each a JSON-schema fragment with its ``description``.
    """

    name: str = ""
    schema: dict = {}
    expects: str = ""
    example: str = ""
    unset: Any = None
    probe: str = ""
    facts: dict = {}
    """The facts `parse` records, name -> JSON-schema fragment with a ``description`` in words (what an
    imported run's facts are validated against: `validate_facts`)."""

    def coerce(self, value: Any) -> Any:
        """The validated value as stored (lists become tuples, numbers int or float)."""
        return value

    def probe_for(self, values: list) -> str:
        """Shell lines probing for the configured ``values`` (one per claim asking); ``""`` when ``probe`` suffices."""
        return ""

    def parse(self, kv: Mapping[str, str], facts: Mapping[str, Any]) -> dict:
        """Facts from the probe's ``key=value`` output (``facts``: those parsed before, in registry order)."""
        return {}

    def describe(self, value: Any) -> str | None:
        """A phrase for the book's pages; ``None`` when ``value`` asks for nothing."""
        raise NotImplementedError

    def shortfall(self, value: Any, facts: HostFacts) -> str | None:
        """How a host with ``facts`` falls short of ``value``, as a sentence; ``None`` if it does not."""
        raise NotImplementedError


_REGISTRY: dict[str, Requirement] = {}


def register(cls: type[Requirement]) -> type[Requirement]:
    """Register the decorated `Requirement` subclass under its ``name``."""
    if cls.name in _REGISTRY or cls.name in _FREE_TEXT:
        raise ValueError(f"requirement {cls.name!r} is registered twice")
    _REGISTRY[cls.name] = cls()
    return cls


def names() -> list[str]:
    """Every key a ``machine:`` or ``requires:`` mapping accepts: the probed requirements, then the free text."""
    return [*_REGISTRY, *_FREE_TEXT]


def fact_names(name: str) -> tuple[str, ...]:
    """The facts requirement ``name`` reads (``cores`` -> ``("cpus",)``): those a run must record for it to be judged."""
    req = _REGISTRY.get(name)
    if req is None:
        return ()
    try:
        return tuple(k for k in req.parse({}, {}) if not k.endswith("_detail"))
    except Exception:  # a parse that needs its probe's output: the requirement's own name is the fact
        return (name,)


def schema() -> dict:
    """The JSON schema of a ``machine:`` / ``requires:`` mapping, assembled from the registry."""
    props = {name: dict(req.schema) for name, req in _REGISTRY.items()}
    props.update({name: {"type": "string"} for name in _FREE_TEXT})
    return {"type": "object", "additionalProperties": False, "properties": props}


def facts_schema() -> dict:
    """The JSON schema of a machine's facts (`HostFacts`), assembled from the probe's and the registry's.

    Every key is known, every value typed and bounded: what an imported run states of its machine is
    held to it (`validate_facts`), so that the pages and the report can read any recorded fact.
    """
    props = dict(_HOST_FACTS)
    for req in _REGISTRY.values():
        props.update(req.facts)
    return {"type": "object", "additionalProperties": False, "properties": props}


def validate_facts(facts: Any, *, file: str | Path | None = None) -> dict:
    """``facts`` checked against `facts_schema`: a plain dict of them, or `ConfigError` naming the key.

    The message names the key (``file`` too, when the facts come from one), what it holds, and what it
    expects. Numbers must be finite (JSON's NaN and Infinity are refused), integral floats of a count are
    taken as the integer.

    >>> validate_facts({"cpus": 8, "os": "Ubuntu 20.04"})
    {'cpus': 8, 'os': 'Ubuntu 20.04'}
    """
    import math
    from reprobook.core.schema import jsonschema_module
    where = f"the machine facts{f' in {file}' if file else ''}"
    if not isinstance(facts, Mapping):
        raise ConfigError(f"{where} are {type(facts).__name__}, not an object of facts (key: value)")
    schema = facts_schema()
    props = schema["properties"]

    def shown(value: Any) -> str:
        r = repr(value)
        return r if len(r) <= 60 else r[:57] + "..."

    for key, value in facts.items():
        if not isinstance(key, str) or key not in props:
            known = ", ".join(sorted(props))
            raise ConfigError(f"{where}: unknown fact {shown(key)} (known facts: {known})", key=str(key)[:60])
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{where}: fact {key!r} holds {value!r}, not a number; expected "
                              f"{props[key].get('description', 'a finite number')}", key=key)
        err = next(iter(jsonschema_module().Draft202012Validator(props[key]).iter_errors(value)), None)
        if err is not None:
            inner = "".join(f"[{p!r}]" for p in err.absolute_path)
            held = f" holds {shown(err.instance)} at {inner}" if inner else f" holds {shown(value)}"
            raise ConfigError(f"{where}: fact {key!r}{held}; expected {props[key].get('description', err.message)}",
                              key=key)
    out = dict(facts)
    for key, value in out.items():
        if isinstance(value, float) and "integer" in (props[key].get("type") or ()):
            out[key] = int(value)
    return out


# --------------------------------------------------------------------------- requirements

@register
class Cores(Requirement):
    name = "cores"
    facts = {"cpus": count("CPUs online")}
    schema = {"type": "integer", "minimum": 1}
    expects = "a whole number of CPUs online, at least 1"
    example = "8"
    # /sys/devices/system/cpu/online is a list of ranges ("0-3,8-11"): what getconf counts, without a program
    probe = r"""
rb_n=
if { read -r rb_on < /sys/devices/system/cpu/online; } 2>/dev/null && [ -n "$rb_on" ]; then
  rb_n=0
  for r in ${rb_on//,/ }; do rb_n=$((rb_n + ${r#*-} - ${r%-*} + 1)); done
fi
[ -n "$rb_n" ] || rb_n=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc 2>/dev/null)
echo "cpus=$rb_n"
""".strip()
    coerce = staticmethod(int)

    def parse(self, kv, facts):
        return {"cpus": _int(kv.get("cpus"))}

    def describe(self, value):
        return f"at least {value} core{'s' if value != 1 else ''} (CPUs online)"

    def shortfall(self, value, facts):
        if facts.get("cpus") is None:
            return f"needs {value} cores (CPUs online); the host's CPU count could not be read"
        if facts["cpus"] < value:
            return f"needs {value} cores (CPUs online), has {facts['cpus']}"
        return None


@register
class PhysicalCoresPerSocket(Requirement):
    name = "physical_cores_per_socket"
    facts = {"physical_cores": count("physical cores"), "physical_cores_per_socket": count("physical cores on one socket"),
             "sockets": count("sockets", 1024)}
    schema = {"type": "integer", "minimum": 1}
    expects = "a whole number of physical cores, at least 1"
    example = "8"
    # One "package:core" pair per online CPU, deduplicated: a core is its set of
    # hardware threads (thread_siblings_list), which unlike core_id is unique in
    # its package on every platform. /proc/cpuinfo is the fallback without sysfs.
    # (One pair per CPU, repeated for its siblings: the parser counts distinct pairs.)
    probe = r"""
t=
for c in /sys/devices/system/cpu/cpu[0-9]*/topology; do
  { read -r p < "$c/physical_package_id" && read -r s < "$c/thread_siblings_list"; } 2>/dev/null && t="$t$p:$s "
done
if [ -z "$t" ]; then
  { while IFS=: read -r k v; do
      case $k in "physical id"*) p=${v#"${v%%[! ]*}"} ;; "core id"*) t="$t$p:${v#"${v%%[! ]*}"} " ;; esac
    done < /proc/cpuinfo; } 2>/dev/null
fi
echo "cpu_topology=$t"
""".strip()

    def parse(self, kv, facts):
        per_socket: dict[str, set[str]] = {}
        for pair in (kv.get("cpu_topology") or "").split():
            package, _, core = pair.partition(":")
            per_socket.setdefault(package, set()).add(core)
        if not per_socket:
            return {"physical_cores": None, "physical_cores_per_socket": None, "sockets": None}
        counts = [len(cores) for cores in per_socket.values()]
        return {"physical_cores": sum(counts), "physical_cores_per_socket": max(counts), "sockets": len(counts)}

    def describe(self, value):
        return f"at least {value} physical cores on one socket"

    def shortfall(self, value, facts):
        has = facts.get("physical_cores_per_socket")
        if has is None:
            return f"needs {value} physical cores on one socket; the host's CPU topology could not be read"
        if has < value:
            sockets = facts.get("sockets") or 1
            where = f" (the most on any of its {sockets} sockets)" if sockets > 1 else ""
            return f"needs {value} physical cores on one socket, has {has}{where}"
        return None


@register
class MemoryGib(Requirement):
    name = "memory_gib"
    facts = {"mem_gib": amount("memory, GiB")}
    schema = {"type": "number", "minimum": 0}
    expects = "a number of GiB"
    example = "64"
    probe = r"""
rb_mem=
{ while read -r k v _; do [ "$k" = MemTotal: ] && { rb_mem=$v; break; }; done < /proc/meminfo; } 2>/dev/null
echo "mem_kib=$rb_mem"
""".strip()
    coerce = staticmethod(float)

    def parse(self, kv, facts):
        return {"mem_gib": _gib(kv.get("mem_kib"))}

    def describe(self, value):
        return f"at least {value:g} GiB of memory"

    def shortfall(self, value, facts):
        has = facts.get("mem_gib")
        if has is None:
            return f"needs {value:g} GiB of memory; the host's memory could not be read"
        # MemTotal leaves out what the firmware and the kernel reserve: a 64 GiB machine shows about 62.8
        if has < value * 0.95:
            return f"needs {value:g} GiB of memory, has {has:.1f}"
        return None


@register
class DiskGib(Requirement):
    name = "disk_gib"
    facts = {"disk_free_gib": amount("free space in the workdir, GiB", 10.0 ** 9), "disk_path": text("the workdir")}
    schema = {"type": "number", "minimum": 0}
    expects = "a number of GiB free in the host's workdir"
    example = "20"
    # Measured where the experiment will write: the workdir, or before the first
    # run creates it, its nearest existing parent (the file system it will be on).
    probe = r"""
d="${1:-$HOME}"
case "$d" in "~") d="$HOME" ;; "~/"*) d="$HOME/${d#\~/}" ;; esac
while [ ! -e "$d" ] && [ "$d" != / ] && [ "$d" != . ]; do   # dirname, in bash
  while [ "${d%/}" != "$d" ] && [ "$d" != / ]; do d=${d%/}; done
  case $d in /*/*|[!/]*/*) d=${d%/*} ;; /*) d=/ ;; *) d=. ;; esac
  while [ "${d%/}" != "$d" ] && [ "$d" != / ]; do d=${d%/}; done
done
echo "disk_path=$d"
rb_free=
{ read -r _; read -r _ _ _ rb_free _; } <<< "$(df -Pk -- "$d" 2>/dev/null)"
echo "disk_free_kib=$rb_free"
""".strip()
    coerce = staticmethod(float)

    def parse(self, kv, facts):
        return {"disk_free_gib": _gib(kv.get("disk_free_kib")), "disk_path": kv.get("disk_path", "")}

    def describe(self, value):
        return f"at least {value:g} GiB free in the workdir"

    def shortfall(self, value, facts):
        free, path = facts.get("disk_free_gib"), facts.get("disk_path") or "the workdir"
        if free is None:
            return f"needs {value:g} GiB free in the workdir; the free space at {path} could not be read"
        if free < value:
            return f"needs {value:g} GiB free in the workdir, has {free:g} GiB free at {path}"
        return None


@register
class NumaNodes(Requirement):
    name = "numa_nodes"
    facts = {"numa_nodes": count("NUMA nodes", 4096)}
    schema = {"type": "integer", "minimum": 1}
    expects = "a whole number of NUMA nodes, at least 1"
    example = "2"
    probe = r"""
rb_numa=0
for x in /sys/devices/system/node/node[0-9]*; do [ -e "$x" ] && rb_numa=$((rb_numa + 1)); done
echo "numa_nodes=$rb_numa"
""".strip()
    coerce = staticmethod(int)

    def parse(self, kv, facts):
        # a kernel built without NUMA has no node directories: all memory is one node
        return {"numa_nodes": _int(kv.get("numa_nodes")) or 1}

    def describe(self, value):
        return f"at least {value} NUMA nodes"

    def shortfall(self, value, facts):
        has = facts.get("numa_nodes") or 1
        if has < value:
            return f"needs {value} NUMA nodes, has {has}"
        return None


@register
class Smt(Requirement):
    name = "smt"
    facts = {"smt": {"enum": ["on", "off", "unknown"], "description": "SMT: 'on', 'off' or 'unknown'"},
             "smt_detail": text("how SMT was read", 1000)}
    schema = {"enum": ["on", "off"]}
    expects = '"on" or "off"'
    example = "off"
    probe = r"""
rb_a=; rb_c=
{ read -r rb_a < /sys/devices/system/cpu/smt/active; } 2>/dev/null
{ read -r rb_c < /sys/devices/system/cpu/smt/control; } 2>/dev/null
echo "smt_active=$rb_a"
echo "smt_control=$rb_c"
""".strip()

    def parse(self, kv, facts):
        active, control = kv.get("smt_active", ""), kv.get("smt_control", "")
        if active in ("0", "1"):
            detail = "/sys/devices/system/cpu/smt/active" + (f" (control: {control})" if control else "")
            return {"smt": "on" if active == "1" else "off", "smt_detail": detail}
        cpus, cores = facts.get("cpus"), facts.get("physical_cores")
        if cpus and cores:
            # SMT is active when some core runs more than one online hardware thread
            return {"smt": "on" if cpus > cores else "off",
                    "smt_detail": f"inferred from the CPU topology: {cpus} CPUs online on {cores} physical cores"}
        return {"smt": "unknown",
                "smt_detail": "neither /sys/devices/system/cpu/smt/active nor the CPU topology could be read"}

    def describe(self, value):
        return f"SMT (hyper-threading) {value}"

    def shortfall(self, value, facts):
        has = facts.get("smt", "unknown")
        if has == "unknown":
            return f"needs SMT {value}, but the host's SMT state is unknown ({facts.get('smt_detail') or 'not probed'})"
        if has != value:
            return f"needs SMT {value}, it is {has}"
        return None


@register
class Docker(Requirement):
    name = "docker"
    facts = {"docker": flag("whether Docker's daemon answers"), "docker_detail": text("how Docker was read", 1000)}
    schema = {"type": "boolean"}
    expects = "true or false"
    example = "true"
    # Usable means the daemon answers this user (the SSH user) in bounded time,
    # not merely that a docker command exists. Asked only when a claim needs Docker: `docker info`
    # starts a client that talks to the daemon, more than every other fact costs together.
    _DOCKER_PROBE = rf"""
if command -v docker >/dev/null 2>&1; then
  if command -v timeout >/dev/null 2>&1; then
    out=$(timeout {DOCKER_TIMEOUT_S} docker info --format 'server-version={{{{.ServerVersion}}}}' 2>&1); rc=$?
  else
    out=$(docker info --format 'server-version={{{{.ServerVersion}}}}' 2>&1); rc=$?
  fi
  echo "docker_rc=$rc"
  echo "docker_out=$(printf '%s' "$out" | tr '\n' ' ' | cut -c1-400)"
else
  echo "docker_rc=none"
fi
""".strip()

    def probe_for(self, values):
        return self._DOCKER_PROBE if any(values) else ""

    def parse(self, kv, facts):
        rc, out = kv.get("docker_rc", ""), kv.get("docker_out", "")
        if rc == "":
            return {"docker": None, "docker_detail": "not probed (no requirement asked for Docker)"}
        if rc == "none":
            return {"docker": False, "docker_detail": "docker command not found"}
        words = out.split()
        version = next((w.split("=", 1)[1] for w in words if w.startswith("server-version=")), "")
        said = " ".join(w for w in words if not w.startswith("server-version=")).strip()
        if rc == "0" and version:
            return {"docker": True, "docker_detail": f"daemon answers (server {version})"}
        if rc == "124":
            return {"docker": False, "docker_detail": "docker command found but the daemon does not answer "
                                                      f"within {DOCKER_TIMEOUT_S} s"}
        return {"docker": False, "docker_detail": "docker command found but the daemon does not answer: "
                                                  + (said or f"docker info exited with {rc}")}

    def describe(self, value):
        return "Docker usable by the user" if value else None

    def shortfall(self, value, facts):
        if value and not facts.get("docker"):
            return f"needs Docker usable by the user; {facts.get('docker_detail') or 'not probed'}"
        return None


def os_matches(wanted: str, os_id: str, os_version: str) -> bool:
    """Whether a ``"Family Release"`` requirement matches os-release's ``ID`` and ``VERSION_ID``.

    >>> os_matches("Debian 12", "debian", "12"), os_matches("Debian 12", "debian", "120")
    (True, False)
    """
    family, _, release = wanted.strip().partition(" ")
    if family.lower() != (os_id or "").lower():
        return False
    if not release:
        return True
    want, have = release.lower().split("."), (os_version or "").lower().split(".")
    return have[:len(want)] == want


@register
class Os(Requirement):
    name = "os"
    facts = {"os": text("the OS's name (PRETTY_NAME of /etc/os-release)"), "os_id": text("the OS's ID (/etc/os-release)"),
             "os_version": text("the OS's VERSION_ID (/etc/os-release)")}
    schema = {"type": "array", "minItems": 1,
              "items": {"type": "string", "pattern": r"^[A-Za-z0-9._-]+( [A-Za-z0-9._~-]+)?$"}}
    expects = ("a list of 'Family Release' strings, the family as os-release's ID and the release as its "
               "VERSION_ID (see /etc/os-release)")
    example = '["Ubuntu 22.04", "Debian 12"]'
    unset = ()
    probe = r"""
( for f in /etc/os-release /usr/lib/os-release; do [ -r "$f" ] && { . "$f"; break; }; done
  [ -n "${PRETTY_NAME:-}" ] || PRETTY_NAME=$(uname -s)
  echo "os=$PRETTY_NAME"
  echo "os_id=${ID:-}"
  echo "os_version=${VERSION_ID:-}" )
""".strip()
    coerce = staticmethod(tuple)

    def parse(self, kv, facts):
        return {"os": kv.get("os", ""), "os_id": kv.get("os_id", ""), "os_version": kv.get("os_version", "")}

    def describe(self, value):
        return " or ".join(value)

    def shortfall(self, value, facts):
        os_id, version = facts.get("os_id") or "", facts.get("os_version") or ""
        if any(os_matches(w, os_id, version) for w in value):
            return None
        runs = facts.get("os") or "an unknown OS"
        ids = f"ID {os_id}, VERSION_ID {version or 'none'}" if os_id else "no ID in /etc/os-release"
        return f"needs {' or '.join(value)}, runs {runs} ({ids})"


@register
class Commands(Requirement):
    name = "commands"
    facts = {"commands": {"type": "object", "maxProperties": 1000,
                          "propertyNames": {"minLength": 1, "maxLength": 200, "pattern": r"^[A-Za-z0-9_.+@:/-]+$"},
                          "additionalProperties": {"type": "boolean"},
                          "description": "commands: an object of program name -> true or false (on PATH or not)"}}
    schema = {"type": "array", "items": {"type": "string", "pattern": r"^[A-Za-z0-9_.+@:/-]+$"}}
    expects = "a list of program names"
    example = "[git, make]"
    unset = ()
    coerce = staticmethod(tuple)
    # the probe lines are the claim's own commands: see probe_script

    def describe(self, value):
        return f"{_and(value)} on PATH" if value else None

    def shortfall(self, value, facts):
        found = facts.get("commands") or {}
        missing = [c for c in value if not found.get(c)]
        if not missing:
            return None
        unprobed = [c for c in missing if c not in found]
        what = "the command" if len(missing) == 1 else "the commands"
        note = f" ({_and(repr(c) for c in unprobed)} not looked for)" if unprobed else ""
        return f"needs {what} {_and(repr(c) for c in missing)} on PATH{note}"


@register
class Kvm(Requirement):
    name = "kvm"
    facts = {"kvm": flag("whether /dev/kvm can run a standard guest"), "kvm_detail": text("how /dev/kvm was judged", 1000)}
    schema = {"type": "boolean"}
    expects = "true or false"
    example = "true"
    # Judged by what it can do: the user may open /dev/kvm for reading and writing, as QEMU's -enable-kvm does, and
    # on x86 the CPU shows its virtualisation extensions (vmx or svm), without which /dev/kvm is a paravirtual one
    # (a sandbox's or a cloud's) whose guests must be built for it: there QEMU's -cpu host aborts ("failed to set
    # MSR") and other CPU models hang early in the boot. Other architectures are judged by the device alone.
    probe = r"""
if [ ! -e /dev/kvm ]; then echo "kvm=missing"
elif ! [ -r /dev/kvm ] || ! [ -w /dev/kvm ]; then echo "kvm=denied $(ls -l /dev/kvm 2>/dev/null | awk '{print $1, $3, $4}')"
else
  case "$(uname -m)" in
    x86_64|i?86) if grep -qwE 'vmx|svm' /proc/cpuinfo 2>/dev/null; then echo "kvm=usable"; else echo "kvm=paravirtual"; fi ;;
    *) echo "kvm=usable" ;;
  esac
fi
""".strip()

    def parse(self, kv, facts):
        state, _, detail = (kv.get("kvm") or "").partition(" ")
        words = {"usable": "/dev/kvm can be read and written by the user, and the CPU has its virtualisation extensions",
                 "missing": "there is no /dev/kvm (no hardware virtualisation here, or the kvm module is not loaded)",
                 "denied": f"/dev/kvm exists ({detail}) but the user cannot read and write it (add the user to its "
                           "group, usually kvm)",
                 "paravirtual": "/dev/kvm is there and usable, but the CPU shows no virtualisation extensions (no vmx "
                                "or svm flag in /proc/cpuinfo): a paravirtual KVM, which cannot run a standard guest "
                                "(QEMU with -enable-kvm fails or hangs); QEMU can still emulate a guest without it "
                                "(TCG), many times slower"}
        return {"kvm": state == "usable", "kvm_detail": words.get(state, "not probed")}

    def describe(self, value):
        return "KVM (/dev/kvm) that can run a standard guest" if value else None

    def shortfall(self, value, facts):
        if value and not facts.get("kvm"):
            return f"needs KVM that can run a standard guest; {facts.get('kvm_detail') or 'not probed'}"
        return None


@register
class Files(Requirement):
    name = "files"
    facts = {"files": {"type": "object", "maxProperties": 1000,
                       "propertyNames": {"minLength": 1, "maxLength": 4096, "pattern": r"^[^\x00-\x1f\x7f]+$"},
                       "additionalProperties": {"enum": ["file", "dir", "unreadable", "missing"]},
                       "description": "files: an object of path -> 'file', 'dir', 'unreadable' or 'missing'"}}
    schema = {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1, "pattern": r"^[^\n]+$"}}
    expects = "a list of paths: absolute, ~/..., or relative to the host's workdir"
    example = '["~/ozz/kernels/guest/images/x86_64/bookworm.img"]'
    unset = ()
    coerce = staticmethod(tuple)

    def probe_for(self, values):
        paths = list(dict.fromkeys(p for v in values for p in v))
        lines = ['rb_file() {  # path: is it there, as a file or a directory (into rb_f: no subshell per file)',
                 '  p=$1; case "$p" in "~") p="$HOME" ;; "~/"*) p="$HOME/${p#\\~/}" ;; /*) ;; *) p="$W/$p" ;; esac',
                 '  if [ -f "$p" ] && [ -r "$p" ]; then rb_f=file; elif [ -d "$p" ]; then rb_f=dir;',
                 '  elif [ -e "$p" ]; then rb_f=unreadable; else rb_f=missing; fi',
                 '}',
                 'W="${1:-$HOME}"; case "$W" in "~") W="$HOME" ;; "~/"*) W="$HOME/${W#\\~/}" ;; esac']
        for i, path in enumerate(paths):
            lines.append(f"rb_file {quote(path)}; printf 'file_{i}=%s:%s\\n' \"$rb_f\" {quote(path)}")
        return "\n".join(lines)

    def parse(self, kv, facts):
        found = {}
        for key, value in kv.items():
            if key.startswith("file_"):
                state, _, path = value.partition(":")
                found[path] = state
        return {"files": found}

    def describe(self, value):
        return f"{_and(value)} present on the host" if value else None

    def shortfall(self, value, facts):
        found = facts.get("files") or {}
        missing = [p for p in value if found.get(p) not in ("file", "dir")]
        if not missing:
            return None
        why = {"missing": "not there", "unreadable": "not readable", None: "not looked for"}
        what = "the file" if len(missing) == 1 else "the files"
        return f"needs {what} " + _and(f"{p} ({why.get(found.get(p), found.get(p))})" for p in missing)


class _CloudLabNodes(dict):
    """The ``cloudlab`` value: a plain mapping (JSON as it is) that can be hashed, as `Requirements` must be."""

    def __hash__(self):
        return hash(tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in sorted(self.items())))


@register
class CloudLab(Requirement):
    """The CloudLab nodes a guide names: read by ``reprobook cloudlab profile``, never judged against a host.

    ``hardware_type`` lists the node types in the guide's order of preference, ``disk_image`` is the
    image's URN (else one follows from ``os``), and, for a role, ``names`` are its hosts' names at the
    paper's scale, as the harness expects them.
    """

    name = "cloudlab"
    schema = {"type": "object", "additionalProperties": False, "properties": {
        "hardware_type": {"type": "array", "items": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"},
                          "minItems": 1},
        "disk_image": {"type": "string", "pattern": r"^urn:publicid:IDN\+[^\s<>&\"']+$"},
        "names": {"type": "array", "items": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"},
                  "minItems": 1},
    }}
    expects = "a mapping with hardware_type (a list), disk_image (a URN) and, for a role, names (a list)"
    example = "{hardware_type: [d6515, c220g2], disk_image: 'urn:publicid:IDN+emulab.net+image+emulab-ops//UBUNTU22-64-STD'}"

    def coerce(self, value):
        return _CloudLabNodes({k: tuple(v) if isinstance(v, list) else v for k, v in value.items()})

    def describe(self, value):
        return None  # where to get a machine, not what it must have: the pages say it in the testbed's words

    def shortfall(self, value, facts):
        return None


# --------------------------------------------------------------------------- configured values

def _validated(name: str, value: Any, *, file, key: str) -> Any:
    """``value`` checked against the requirement ``name`` and coerced, or `ConfigError` naming ``file`` and ``key``."""
    if name in _FREE_TEXT:
        if not isinstance(value, str):
            raise ConfigError(f"expected free text, got {value!r}", file=file, key=key)
        return value
    req = _REGISTRY.get(name)
    if req is None:
        raise ConfigError(f"unknown requirement (known: {', '.join(names())})", file=file, key=key)
    from reprobook.core.schema import jsonschema_module
    if isinstance(value, tuple):
        value = list(value)
    err = next(iter(jsonschema_module().Draft202012Validator(req.schema).iter_errors(value)), None)
    if err is not None:
        where = "".join(f"[{p}]" for p in err.absolute_path)
        raise ConfigError(f"{err.message}; expected {req.expects}, e.g. {name}: {req.example}",
                          file=file, key=key + where)
    return req.coerce(value)


def _ordered(values: Mapping[str, Any]) -> dict:
    return {n: values[n] for n in names() if n in values}


class Requirements:
    """What a claim's experiment needs of its host, by requirement name. Frozen.

    Built by `parse_requirements` from a paper file, or directly::

        Requirements(cores=8, os=["Ubuntu 22.04"])

    An unset requirement reads as its ``unset`` value (``None``, or ``()``
    for lists), so ``reqs.cores`` or ``reqs.get("cores")`` is ``None`` when no
    core count is asked for.
    """

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any] | None = None, /, **more: Any):
        given = {**(values or {}), **more}
        checked = {n: _validated(n, v, file=None, key=n) for n, v in given.items()}
        object.__setattr__(self, "_values", MappingProxyType(_ordered(checked)))

    @classmethod
    def _checked(cls, values: Mapping[str, Any]) -> Requirements:
        self = object.__new__(cls)
        object.__setattr__(self, "_values", MappingProxyType(_ordered(values)))
        return self

    def get(self, name: str) -> Any:
        """The configured value of ``name``, or its unset value. `KeyError` for a name no requirement has."""
        if name in self._values:
            return self._values[name]
        if name in _FREE_TEXT:
            return ""
        if name not in _REGISTRY:
            raise KeyError(f"no requirement {name!r} (known: {', '.join(names())})")
        return _REGISTRY[name].unset

    def items(self):
        """The configured (name, value) pairs, in registry order, free text last."""
        return self._values.items()

    @property
    def testbed(self) -> str:
        return self.get("testbed")

    @property
    def why(self) -> str:
        return self.get("why")

    @property
    def commands(self) -> tuple[str, ...]:
        return self.get("commands")

    def describe(self) -> list[str]:
        """A phrase per configured requirement, e.g. ``["at least 8 cores (CPUs online)", "Debian 12"]``."""
        out = []
        for name, value in self._values.items():
            if name in _REGISTRY:
                phrase = _REGISTRY[name].describe(value)
                if phrase:
                    out.append(phrase)
        return out

    def as_dict(self) -> dict:
        """The configured values as plain JSON-able values."""
        return {n: list(v) if isinstance(v, tuple) else v for n, v in self._values.items()}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.get(name)
        except KeyError as exc:
            raise AttributeError(exc.args[0]) from None

    def __setattr__(self, name, value):
        raise AttributeError("Requirements is frozen")

    def __eq__(self, other) -> bool:
        return isinstance(other, Requirements) and dict(self._values) == dict(other._values)

    def __hash__(self) -> int:
        return hash(tuple(self._values.items()))

    def __reduce__(self):
        return Requirements._checked, (dict(self._values),)

    def __repr__(self) -> str:
        return f"Requirements({self.as_dict()!r})"


def parse_requirements(raw: Mapping | None, base: Requirements | None = None, *, file, key: str) -> Requirements:
    """The `Requirements` of a ``machine:`` or ``requires:`` mapping, over ``base`` (the claim wins per key).

    Parameters
    ----------
    raw : mapping or None
        The mapping as read from the paper file.
    base : Requirements, optional
        The paper's ``machine``, for a claim's ``requires``.
    file, key
        Where ``raw`` is, for error messages (e.g. ``claims[1].requires``).

    Raises
    ------
    ConfigError
        For an unknown requirement name (listing the known ones) or an
        ill-typed value, naming ``file`` and ``key.<name>`` (and the item,
        e.g. ``machine.os[1]``).
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"expected a mapping of requirement names to values (known: {', '.join(names())}), "
                          f"got {raw!r}", file=file, key=key)
    values = dict(base._values) if base is not None else {}
    for name, value in raw.items():
        values[name] = _validated(str(name), value, file=file, key=f"{key}.{name}")
    return Requirements._checked(values)


def _coerce(reqs: Requirements | Mapping | None) -> Requirements:
    """``reqs`` as `Requirements` (a plain mapping is validated like a paper file's)."""
    if isinstance(reqs, Requirements):
        return reqs
    return Requirements(reqs or {})


# --------------------------------------------------------------------------- probing and judging

_PROBE_HEAD = """# reprobook host probe: prints fact=value lines; $1 is the host's workdir
"""


def probe_script(reqs: Iterable[Requirements]) -> str:
    """One bash script that probes every fact, and each command any of ``reqs`` names.

    Run it with the host's workdir as its first argument (where ``disk_gib``
    is measured), e.g. ``host.run_script(probe_script([reqs]), host.workdir)``;
    parse its output with `facts_from`. A single `Requirements` is accepted too.
    """
    if isinstance(reqs, (Requirements, Mapping)):
        reqs = [reqs]
    commands = list(dict.fromkeys(c for r in reqs for c in _coerce(r).commands))
    lines = [_PROBE_HEAD + _HOST_PROBE]
    lines += [req.probe for req in _REGISTRY.values() if req.probe]
    asked = [dict(_coerce(r).items()) for r in reqs]
    for name, req in _REGISTRY.items():  # probes that depend on the values asked for (files)
        values = [r[name] for r in asked if name in r]
        lines += [req.probe_for(values)] if values and req.probe_for(values) else []
    lines += [f"if command -v {quote(c)} >/dev/null 2>&1; then rb_y=yes; else rb_y=no; fi; "
              f"printf 'cmd_%s=%s\\n' {quote(c)} \"$rb_y\"" for c in commands]
    lines.append("exit 0")
    return "\n".join(lines) + "\n"


def facts_from(output: str) -> HostFacts:
    """The `HostFacts` in the output of `probe_script`."""
    kv: dict[str, str] = {}
    commands: dict[str, bool] = {}
    for line in output.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        if key.startswith("cmd_"):
            commands[key[4:]] = value.strip() == "yes"
        else:
            kv[key.strip()] = value.strip()
    facts: dict[str, Any] = _parse_host(kv)
    for req in _REGISTRY.values():
        facts.update(req.parse(kv, facts))
    facts["commands"] = commands
    return HostFacts(facts)


def shortfalls(facts: HostFacts | Mapping, reqs: Requirements) -> list[str]:
    """Each way in which a host with ``facts`` falls short of ``reqs``, one sentence each; empty if it meets them.

    Only ``reqs`` is judged, its own commands included: a command another
    claim looked for does not count. A fact the probe could not read is a
    shortfall of every requirement that needs it, never a silent pass.

    >>> shortfalls(facts_from("cpus=2\\nnuma_nodes=1"), Requirements(cores=8))
    ['needs 8 cores (CPUs online), has 2']
    """
    facts = facts if isinstance(facts, HostFacts) else HostFacts(facts)
    reqs = _coerce(reqs)
    out = []
    for name, value in reqs.items():
        req = _REGISTRY.get(name)
        sentence = req.shortfall(value, facts) if req else None
        if sentence:
            out.append(sentence)
    return out


# --------------------------------------------------------------------------- the paper's machine

#: the facts a paper file may state about the authors' machine (``authors_machine:``): its key -> (the
#: `HostFacts` name, the words). The pages and the report compare a run's host with them, fact by fact.
MACHINE_FACTS = {
    "cores": ("cpus", "cores (CPUs online)"),
    "physical_cores_per_socket": ("physical_cores_per_socket", "physical cores per socket"),
    "sockets": ("sockets", "sockets"),
    "cpu_model": ("cpu_model", "CPU model"),
    "smt": ("smt", "SMT"),
    "numa_nodes": ("numa_nodes", "NUMA nodes"),
    "memory_gib": ("mem_gib", "memory (GiB)"),
    "kernel": ("kernel", "kernel"),
    "os": ("os", "OS"),
}


def _same(key: str, stated: Any, facts: Mapping[str, Any]) -> bool | None:
    """Whether the host's fact matches the stated one (None: the host's fact is unknown)."""
    name = MACHINE_FACTS[key][0]
    have = facts.get(name)
    if have in (None, "", "unknown"):
        return None
    if key == "cpu_model":  # the paper names a vendor or a model: each of its words is in the model name
        def words(text: str) -> set[str]:
            return set(re.sub(r"\((r|tm)\)|[^a-z0-9.-]+", " ", text.lower()).split())
        return words(str(stated)) <= words(str(have))
    if key == "kernel":
        return str(have).startswith(str(stated))
    if key == "os":
        return os_matches(str(stated), facts.get("os_id") or "", facts.get("os_version") or "")
    if key == "memory_gib":  # MemTotal leaves out what the firmware and the kernel reserve
        return abs(float(have) - float(stated)) <= 0.05 * float(stated)
    return have == stated


def differences(facts: HostFacts | Mapping | None, stated: Mapping[str, Any]) -> list[str]:
    """How a host differs from the authors' machine as the paper file states it, one phrase per fact.

    Only the facts the paper file states are compared (``machine`` and ``source``
    are words, not facts); a fact the host's probe could not read is said so.
    Unlike `shortfalls` this is not a judgement: a bigger machine differs too.

    >>> differences(facts_from("cpus=8\\nsmt_active=1"), {"cores": 64, "smt": "on"})
    ["cores (CPUs online): 8 here, 64 on the authors' machine"]
    """
    if facts is None:
        return []
    facts = facts if isinstance(facts, HostFacts) else HostFacts(facts)
    out = []
    for key in MACHINE_FACTS:
        if key not in stated:
            continue
        value = stated[key]
        same = _same(key, value, facts)
        words = MACHINE_FACTS[key][1]
        if same is None:
            out.append(f"{words}: not known here, {value} on the authors' machine")
        elif not same:
            have = facts.get(MACHINE_FACTS[key][0])
            out.append(f"{words}: {have:g} here, {value:g} on the authors' machine" if isinstance(have, float)
                       else f"{words}: {have} here, {value} on the authors' machine")
    return out


__all__ = ["DOCKER_TIMEOUT_S", "HostFacts", "MACHINE_FACTS", "Requirement", "Requirements", "differences",
           "facts_from", "facts_schema", "validate_facts", "names", "os_matches", "parse_requirements", "probe_script", "register", "schema",
           "shortfalls"]
