"""CloudLab: a profile per claim or paper, and the experiment's manifest read back into ``hosts.yaml``.

``reprobook cloudlab profile CLAIM|PAPER`` writes a geni-lib script (a CloudLab *profile*) with one
node per host of each role, named as the harness expects, on one LAN; the hardware type and disk
image come from the ``cloudlab`` entry of the claim's machine section (its ``os`` gives the image
when none is named), and portal parameters let the evaluator change each role's hardware type and
count. ``--rspec`` writes the request RSpec the portal would build from it.

``reprobook cloudlab import MANIFEST.xml --cluster NAME`` reads the manifest the portal shows (an
untrusted file: parsed with ``defusedxml``, no DTD entity of any kind), writes the cluster into
``hosts.yaml`` with a line-based edit that leaves every other entry and comment as it was, writes an
SSH config file that ``~/.ssh/config`` includes, records unknown host keys through
`reprobook.remote.trust.trust_host`, and checks every host at once. ``reprobook cloudlab forget NAME``
takes all of it out again.

A manifest's node names are the experiment's, not ours: each node becomes the host ``<cluster>-<node>``
of ``hosts.yaml`` and the SSH alias of the same name, with ``node: <node>`` (its name inside the cluster,
which the artifact's scripts use). So two experiments' ``node-0`` live side by side, and no node can
take over ``local``, a host of ``hosts.yaml`` (unless ``--replace``) or a name the user's SSH config
already gives a meaning (``github.com``, the user's own aliases: refused, checked with ``ssh -G``). The
cluster records its experiment, project and domain (``cloudlab:``), from which a run takes its CloudLab
parameters unless they are given.

What real manifests hold (``../shared/cloudlab/README.md``): the root's ``type`` says ``request``
even for a manifest, so a manifest is recognised by its nodes' ``<host>``/``<login>``; a node may
carry one ``<login>`` per project member; ``<hardware_type name="pc"/>`` hides the real type in
``emulab:vnode``; a disk image may be absent.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import yaml

from reprobook.errors import ConfigError, ReprobookError

RSPEC_NS = "http://www.geni.net/resources/rspec/3"
EMULAB_NS = "http://www.protogeni.net/resources/rspec/ext/emulab/1"
_RSPEC_NAMESPACES = (RSPEC_NS, "http://www.protogeni.net/resources/rspec/2")
MAX_MANIFEST_BYTES = 64 << 20
"""A manifest of a thousand nodes is a few MB; anything past this is refused before parsing."""

# what may go into hosts.yaml and an SSH config line from an untrusted file: no space, quote or newline; always
# matched whole (fullmatch: "c2\n" is not a name)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
_HOSTNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}")
_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}")
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,62}")

IMAGE_PREFIX = "urn:publicid:IDN+emulab.net+image+emulab-ops//"
_OS_IMAGES = {"Ubuntu 18.04": "UBUNTU18-64-STD", "Ubuntu 20.04": "UBUNTU20-64-STD",
              "Ubuntu 22.04": "UBUNTU22-64-STD", "Ubuntu 24.04": "UBUNTU24-64-STD"}
"""CloudLab's standard images for the systems a guide names (its ``os``), when it names no image."""

DEFAULT_WORKDIR = "/local/reprobook"
"""Where runs live on a node: its local disk (the profile creates it; /users is NFS, shared by the nodes)."""


class ManifestRefused(ConfigError):
    """A manifest that cannot be imported; the message names the file and what is wrong with it."""


# --------------------------------------------------------------------------- reading a manifest

@dataclass(frozen=True)
class Node:
    """One node of a manifest, as reprobook reaches it."""

    name: str                 # the profile's client_id: the short name, the harness's
    hostname: str             # <host name=...> (the experiment's name), else the login's host name
    user: str
    port: int
    hardware_type: str = ""
    disk_image: str = ""
    ipv4: str = ""
    physical: str = ""        # <login hostname=...>: the machine


@dataclass(frozen=True)
class Manifest:
    """A manifest's nodes and its experiment: ``experiment``, ``project`` and ``domain`` as the nodes' host names
    have them (``<node>.<experiment>.<project>.<domain>``, the project lower-cased: ``hyperion-pg0``), and the
    portal's name of the project (``Hyperion``) for words."""

    path: Path
    nodes: tuple[Node, ...]
    experiment: str = ""
    project: str = ""
    domain: str = ""
    project_title: str = ""

    @property
    def record(self) -> dict[str, str]:
        """What a cluster records of its experiment (``clusters.<name>.cloudlab`` in hosts.yaml)."""
        users = {n.user for n in self.nodes}
        out = {"experiment": self.experiment, "project": self.project, "domain": self.domain,
               "user": users.pop() if len(users) == 1 else ""}
        return {k: v for k, v in out.items() if v}


def _q(ns: str, tag: str) -> str:
    return f"{{{ns}}}{tag}"


def _refuse(path, what: str) -> ManifestRefused:
    return ManifestRefused(f"{path}: not imported: {what}; the hosts file was not changed")


def read_manifest(path: str | Path, *, user: str | None = None) -> Manifest:
    """Read a CloudLab manifest into its `Node` s, refusing anything that is not one.

    Parameters
    ----------
    path : path
        The manifest (XML, as the portal shows it or ``portal-cli experiment manifests get`` writes it).
    user : str, optional
        The login to use where a node carries one per project member.

    Raises
    ------
    ManifestRefused
        Malformed XML, an entity or DTD declaration (an entity bomb or external entity), a root that
        is not an RSpec, no nodes, a node without a way in (a request RSpec), several logins and no
        ``user``, or a value that could not be written safely; the message names the file.
    """
    import defusedxml
    import defusedxml.ElementTree as DET
    from xml.etree.ElementTree import ParseError

    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ManifestRefused(f"{path}: cannot read the manifest: {exc.strerror}") from None
    if size > MAX_MANIFEST_BYTES:
        raise _refuse(path, f"{size} bytes, more than a manifest's {MAX_MANIFEST_BYTES >> 20} MiB")
    try:
        root = DET.parse(str(path), forbid_dtd=False, forbid_entities=True, forbid_external=True).getroot()
    except defusedxml.EntitiesForbidden as exc:
        if exc.sysid or exc.pubid:
            raise _refuse(path, f"it declares an external entity {exc.name!r} ({exc.sysid or exc.pubid}); a "
                                f"manifest has none, and reading it would open that file or address") from None
        raise _refuse(path, f"it declares an entity {exc.name!r}; a manifest has none (entities are how an "
                            f"'entity bomb' expands a small file into gigabytes)") from None
    except defusedxml.DefusedXmlException as exc:
        raise _refuse(path, f"it holds XML a manifest never has ({exc})") from None
    except ParseError as exc:
        raise _refuse(path, f"malformed XML ({exc})") from None
    ns = root.tag[1:].split("}", 1)[0] if root.tag.startswith("{") else ""
    if root.tag.rsplit("}", 1)[-1] != "rspec" or ns not in _RSPEC_NAMESPACES:
        raise _refuse(path, f"its root element is {root.tag!r}, not a GENI RSpec ({{{RSPEC_NS}}}rspec): "
                            f"this is not a CloudLab manifest")
    nodes_xml = root.findall(_q(ns, "node"))
    if not nodes_xml:
        raise _refuse(path, "the manifest has no <node>: the experiment holds no machine (or this is a "
                            "manifest of links only)")
    nodes, seen = [], set()
    for i, n in enumerate(nodes_xml):
        nodes.append(_node(path, ns, n, i, user))
        if nodes[-1].name in seen:
            raise _refuse(path, f"node {nodes[-1].name!r} appears twice")
        seen.add(nodes[-1].name)
    return Manifest(path, tuple(nodes), *_experiment(path, root, nodes_xml, nodes))


def _experiment(path: Path, root, nodes_xml, nodes: Sequence[Node]) -> tuple[str, str, str, str]:
    """(experiment, project, domain, the portal's project name): from the nodes' host names
    (``<node>.<experiment>.<project>.<domain>``, what the harness and the upload script build), else from the
    portal's element and the aggregate's URN (``urn:publicid:IDN+utah.cloudlab.us+authority+cm``)."""
    portal = root.find(_q(EMULAB_NS, "portal"))
    title = portal.get("project", "") if portal is not None else ""
    found: dict[tuple[str, str, str], int] = {}
    for n in nodes:
        labels = n.hostname.split(".")
        if len(labels) >= 5 and labels[0].lower() == n.name.lower():
            key = (labels[1], labels[2].lower(), ".".join(labels[3:]).lower())
            found[key] = found.get(key, 0) + 1
    if found:
        experiment, project, domain = max(found, key=found.get)
    else:
        experiment = portal.get("experiment", "") if portal is not None else ""
        project = title.lower()
        domain = ""
        for n in nodes_xml:
            m = re.fullmatch(r"urn:publicid:IDN\+([A-Za-z0-9.-]+)\+authority\+cm", n.get("component_manager_id", ""))
            if m:
                domain = m.group(1).lower()
                break
    for what, value, rx in (("experiment", experiment, _LABEL), ("project", project, _LABEL),
                            ("domain", domain, _HOSTNAME)):
        if value and not rx.fullmatch(value):
            raise _refuse(path, f"its {what} {value!r} is not a name reprobook can record (letters, digits, '-')")
    return experiment, project, domain, title


def _node(path: Path, ns: str, n, i: int, user: str | None) -> Node:
    name = n.get("client_id") or ""
    where = f"node {name!r}" if name else f"node {i + 1} (no client_id)"
    if not _NAME.fullmatch(name):
        raise _refuse(path, f"{where}: its client_id is not a host name reprobook can use (letters, digits, '.', "
                            f"'_', '-'; at most 63)")
    logins = [lg for s in n.findall(_q(ns, "services")) for lg in s.findall(_q(ns, "login"))]
    host_el = n.find(_q(ns, "host"))
    if not logins and host_el is None:
        raise _refuse(path, f"{where} has neither <login> nor <host>: this is a request RSpec (a profile's), not "
                            f"the manifest of a running experiment; take the manifest from the experiment's page "
                            f"(Manifest tab) or `portal-cli experiment manifests get`")
    users = list(dict.fromkeys(lg.get("username", "") for lg in logins if lg.get("username")))
    if user:
        chosen = [lg for lg in logins if lg.get("username") == user]
        if not chosen:
            raise _refuse(path, f"{where} has no login for user {user!r} (its logins: {', '.join(users) or 'none'})")
        login = chosen[0]
    elif len(users) > 1:
        raise _refuse(path, f"{where} has a login per project member ({', '.join(users)}): name yours with --user")
    elif logins:
        login = logins[0]
    else:
        raise _refuse(path, f"{where} has no <login>: name the user to log in as with --user")
    login_user = (login.get("username") if login is not None else None) or user or ""
    physical = login.get("hostname", "") if login is not None else ""
    hostname = (host_el.get("name") if host_el is not None else "") or physical
    try:
        port = int(login.get("port", "22") if login is not None else 22)
    except ValueError:
        raise _refuse(path, f"{where}: its login's port {login.get('port')!r} is not a number") from None
    for what, value, rx in (("user", login_user, _USER), ("host name", hostname, _HOSTNAME)):
        if not rx.fullmatch(value or ""):
            raise _refuse(path, f"{where}: its {what} {value!r} is not one reprobook can write into an SSH config")
    if not 0 < port < 65536:
        raise _refuse(path, f"{where}: port {port} is out of range")
    hw_el = n.find(_q(ns, "hardware_type"))
    hw = hw_el.get("name", "") if hw_el is not None else ""
    vnode = n.find(_q(EMULAB_NS, "vnode"))
    if (not hw or hw == "pc") and vnode is not None and vnode.get("hardware_type"):
        hw = vnode.get("hardware_type")  # "pc" is the class; the portal puts the real type here
    img = n.find(f"{_q(ns, 'sliver_type')}/{_q(ns, 'disk_image')}")
    return Node(name, hostname, login_user, port, hw, img.get("name", "") if img is not None else "",
                host_el.get("ipv4", "") if host_el is not None else "", physical)


# --------------------------------------------------------------------------- roles

def roles_from_names(names: Sequence[str]) -> dict[str, list[str]]:
    """Roles by name when no claim or roles file says: ``server-3``/``node7`` -> ``server``/``node``."""
    out: dict[str, list[str]] = {}
    for n in names:
        role = re.sub(r"(?:[-_.]?\d+)+$", "", n) or n
        out.setdefault(role, []).append(n)
    return out


def role_names(project, claim, scale: str = "paper") -> dict[str, list[str]]:
    """Each role of ``claim`` -> its hosts' names, as the harness expects them, at ``scale``.

    The names come from the role's ``cloudlab.names`` (the paper's scale); a rehearsal takes the
    fewest hosts the role accepts. Roles without names are ``<role>`` (one host) or ``<role>-<i>``. A claim
    whose scale gives roles of its own (`reprobook.core.config.Claim.at_scale`) is placed with those.
    """
    return _role_names(project, claim.at_scale(scale), fewest=scale == "rehearsal")


def _role_names(project, claim, *, fewest: bool) -> dict[str, list[str]]:
    roles = dict(claim.roles) or {claim.control_role: claim.role(claim.control_role)}
    out = {}
    for r, spec in roles.items():
        names = list(_cloudlab(project, claim, r).get("names") or ())
        if fewest or not names:
            count = spec.min
        else:
            count = len(names) if spec.max is None else min(max(len(names), spec.min), spec.max)
        out[r] = [names[i] if i < len(names) else (r if count == 1 and i == 0 else f"{r}-{i}") for i in range(count)]
    return out


def roles_for_claim(path: Path, project, claim, names: Sequence[str]) -> dict[str, list[str]]:
    """Map a manifest's node ``names`` onto ``claim``'s roles, or refuse naming the missing roles and counts."""
    expected = _role_names(project, claim, fewest=False)
    left = list(names)
    out: dict[str, list[str]] = {}
    roles = dict(claim.roles) or {claim.control_role: claim.role(claim.control_role)}
    for r, wanted in expected.items():
        # a role's hosts: its own names, then <role>-<i> and <role> (beyond the guide's names)
        pat = re.compile(rf"^{re.escape(r)}(?:-\d+)?$")
        mine = [n for n in left if n in wanted or pat.match(n)]
        out[r] = mine
        left = [n for n in left if n not in mine]
    problems = []
    for r, spec in roles.items():
        n = len(out[r])
        if n < spec.min or (spec.max is not None and n > spec.max):
            problems.append(f"role {r!r} takes {spec.count_words} and the manifest has {n} "
                            f"(named {', '.join(expected[r][:6])}{', ...' if len(expected[r]) > 6 else ''})")
    if problems:
        raise _refuse(path, f"its nodes do not match the roles of {claim.key}: " + "; ".join(problems)
                      + (f"; nodes of no role: {', '.join(left)}" if left else ""))
    return out


def _fit_scale(path: Path, project, claim, names: Sequence[str]):
    """The claim at the first of its scales whose roles the manifest's nodes fill (a rehearsal's experiment has
    fewer nodes than the paper's, `Claim.at_scale`), and the nodes by role; refused as at the paper's scale when
    none fits."""
    first = None
    for scale in (claim.scales or {"paper": None}):
        at = claim.at_scale(scale)
        try:
            return at, roles_for_claim(path, project, at, names)
        except ManifestRefused as exc:
            first = first or exc
    raise first


def read_roles_file(path: Path, names: Sequence[str]) -> dict[str, list[str]]:
    """A ``--roles`` YAML file: ``role: [node, ...]``, every node a node of the manifest."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read the roles file: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, list) and v for v in data.values()):
        raise ConfigError(f"{path}: expected a mapping of role names to lists of node names, e.g. "
                          f"'server: [us-east-1-0, us-east-1-1]'")
    known = set(names)
    for role, members in data.items():
        for m in members:
            if str(m) not in known:
                raise ConfigError(f"{path}: role {role!r} names {m!r}, which the manifest has no node of "
                                  f"(its nodes: {', '.join(list(names)[:8])}{', ...' if len(names) > 8 else ''})")
    return {str(r): [str(m) for m in v] for r, v in data.items()}


# --------------------------------------------------------------------------- hosts.yaml, line by line

def _top_sections(lines: list[str]) -> dict[str, tuple[int, int]]:
    """Top-level key -> (first line, end line) of its section (comments at column 0 end no section)."""
    starts = [(i, m.group(1)) for i, line in enumerate(lines)
              if (m := re.match(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:", line))]
    out = {}
    for k, (i, key) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
        out[key] = (i, end)
    return out


def _entries(lines: list[str], start: int, end: int) -> tuple[int, dict[str, tuple[int, int]]]:
    """The child indent of a block section and each child key -> (first line, end line)."""
    indent, keys = 0, {}
    cur, cur_start = None, 0
    for i in range(start + 1, end):
        line = lines[i]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        ind = len(line) - len(line.lstrip(" "))
        if not indent:
            indent = ind
        if ind == indent:
            m = re.match(r"^\s*([^:#\s][^:#]*?)\s*:", line)
            if cur is not None:
                keys[cur] = (cur_start, _last_content(lines, cur_start, i) + 1)
            cur, cur_start = (m.group(1).strip("'\"") if m else None), i
    if cur is not None:
        keys[cur] = (cur_start, _last_content(lines, cur_start, end) + 1)
    return indent or 2, keys


def _last_content(lines, start, end) -> int:
    """The last line before ``end`` that belongs to the entry at ``start`` (trailing comments stay outside)."""
    last = start
    for i in range(start, end):
        s = lines[i].strip()
        if s and not (s.startswith("#") and not lines[i].startswith(" " * 4)):
            last = i
    return last


def _edit_section(lines: list[str], key: str, remove: set[str], add: list[str]) -> list[str]:
    """``lines`` with the entries ``remove`` of top-level section ``key`` taken out and ``add`` appended to it."""
    sections = _top_sections(lines)
    if key not in sections:
        return lines + ([] if not lines or lines[-1].strip() == "" else [""]) + [f"{key}:"] + add
    start, end = sections[key]
    head = lines[start]
    rest = head.split(":", 1)[1].split("#", 1)[0].strip()
    if rest:   # an empty one ({}, ~, null): flow mappings with entries were written out in block style first
        lines = lines[:start] + [f"{key}:"] + lines[start + 1:]
    _, entries = _entries(lines, start, end)
    drop = set()
    for name, (a, b) in entries.items():
        if name in remove:
            drop.update(range(a, b))
    # where the replaced entries were (an import again changes nothing else), else after the last entry
    at = min(drop) if drop else max([start] + [b - 1 for (a, b) in entries.values()]) + 1
    return ([ln for i, ln in enumerate(lines[:at]) if i not in drop] + add
            + [ln for i, ln in enumerate(lines[at:], at) if i not in drop])


def _load_text(hosts_path: Path) -> tuple[str, dict]:
    """The hosts file's text and data; a file that is not YAML, or not a mapping of mappings, refused in one line."""
    text = hosts_path.read_text() if hosts_path.exists() else ""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{hosts_path}: not valid YAML{where} ({problem}); the file was not changed") from None
    if not isinstance(data, dict) or not all(isinstance(data.get(k) or {}, dict) for k in ("hosts", "clusters")):
        raise ConfigError(f"{hosts_path}: expected a mapping with 'hosts' and 'clusters' mappings (see "
                          f"configs/hosts.yaml); the file was not changed")
    return text, data


def _block_style(text: str, data: Mapping) -> list[str]:
    """The file's lines with ``hosts`` and ``clusters`` in block style, so that entries can be edited line by line:
    a flow mapping (``hosts: {a: {...}, ...}``, on one line or several) is written out as the same entries; a
    file that is one flow mapping as a whole is written out whole. Everything else stays as it was."""
    root = yaml.compose(text) if text.strip() else None
    lines = text.splitlines()
    if root is None:
        return lines
    if not isinstance(root, yaml.MappingNode) or root.flow_style:
        return yaml.safe_dump(dict(data), sort_keys=False, default_flow_style=False, width=10_000).splitlines()
    spans = []
    for k, v in root.value:
        if (k.value in ("hosts", "clusters") and isinstance(v, yaml.MappingNode) and v.flow_style
                and data.get(k.value)):
            spans.append((k.start_mark.line, v.end_mark.line, k.value))
    for start, end, key in sorted(spans, reverse=True):
        body = yaml.safe_dump({key: dict(data[key])}, sort_keys=False, default_flow_style=False,
                              width=10_000).splitlines()
        lines = lines[:start] + body + lines[end + 1:]
    return lines


def _yaml_entry(name: str, value: Mapping, indent: int = 2) -> list[str]:
    text = yaml.safe_dump({name: dict(value)}, sort_keys=False, default_flow_style=False, width=10_000)
    return [" " * indent + line for line in text.splitlines()]


def alias(cluster: str, node: str) -> str:
    """The name a manifest's ``node`` gets in ``hosts.yaml`` and the SSH config: the cluster's own."""
    return f"{cluster}-{node}"


@dataclass
class Written:
    hosts_file: Path
    ssh_config: Path
    include_in: Path
    hosts: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def write_cluster(hosts_path: Path, cluster: str, manifest: Manifest, roles: Mapping[str, Sequence[str]], *,
                  workdir: str = DEFAULT_WORKDIR, ssh_config: Path | None = None, replace: bool = False) -> Written:
    """Write ``cluster`` into ``hosts_path`` (replacing an earlier import of it) and its SSH config file.

    Each node is the host `alias` ``<cluster>-<node>`` with ``node: <node>``; ``roles`` name the nodes. Every other
    host, cluster and comment is left as it was. Refused, with nothing written: a name that is another cluster's
    host, a standalone host of the file (unless ``replace``), or one the user's SSH config already resolves. The
    new text is validated (`reprobook.core.config.load_hosts`, and every other entry compared with the old) before
    it replaces the file, in one rename.
    """
    from reprobook.core.config import LOCAL, HOST_NAME
    hosts_path = Path(hosts_path)
    text, data = _load_text(hosts_path)
    hosts = data.get("hosts") or {}
    clusters = data.get("clusters") or {}
    old = clusters.get(cluster) or {}
    old_members = {m for ms in (old.get("roles") or {}).values() for m in ms}
    others = {m: c for c, v in clusters.items() if c != cluster and isinstance(v, dict)
              for ms in (v.get("roles") or {}).values() for m in ms}
    names = {n.name: alias(cluster, n.name) for n in manifest.nodes}
    bad = [a for a in names.values() if not HOST_NAME.fullmatch(a) or a == LOCAL]
    if bad:
        raise ManifestRefused(f"{manifest.path}: not imported: {bad[0]!r} is not a host name reprobook can write "
                              f"(at most 128 letters, digits, '.', '_' and '-'); pick a shorter --cluster name; "
                              f"{hosts_path} was not changed")
    clash = [f"{a} (a host of cluster {others[a]!r})" for a in names.values() if a in others]
    if clash:
        raise ManifestRefused(f"{manifest.path}: not imported: {hosts_path} has host(s) of the same name in another "
                              f"cluster: {', '.join(clash)}; pick another --cluster name, or `reprobook cloudlab "
                              f"forget {others[clash[0].split(' ')[0]]}` first; {hosts_path} was not changed")
    taken = sorted(a for a in names.values() if a in hosts and a not in old_members)
    if taken and not replace:
        raise ManifestRefused(f"{manifest.path}: not imported: {hosts_path} already has host(s) "
                              f"{', '.join(taken)}; pass --replace to replace them with the experiment's nodes, or "
                              f"pick another --cluster name; {hosts_path} was not changed")
    if cluster in hosts:
        raise ManifestRefused(f"{manifest.path}: not imported: {cluster!r} names a host of {hosts_path}; pick "
                              f"another --cluster name; {hosts_path} was not changed")
    user_cfg = Path(ssh_config) if ssh_config else Path.home() / ".ssh" / "config"
    own = _ssh_file(user_cfg, cluster)
    resolved = _ssh_taken(list(names.values()), user_cfg, own)
    if resolved:
        first = next(iter(resolved))
        raise ManifestRefused(f"{manifest.path}: not imported: the SSH config {user_cfg} already gives "
                              f"{', '.join(resolved)} a meaning (`ssh -G {first}`: {resolved[first]}); pick another "
                              f"--cluster name; nothing was changed")
    record = manifest.record
    where = (f"CloudLab experiment {manifest.experiment} of {manifest.project_title or manifest.project}"
             if manifest.experiment else "CloudLab")
    new_entries = []
    for n in manifest.nodes:
        target = f"{n.user}@{n.hostname}" + ("" if n.port == 22 else f":{n.port}")
        desc = f"{where}, {n.hardware_type or 'hardware type not in the manifest'}" + (
            f" ({n.physical})" if n.physical and n.physical != n.hostname else "")
        new_entries += _yaml_entry(names[n.name], {"ssh": target, "workdir": workdir.replace("{name}", names[n.name]),
                                                   "description": desc, "node": n.name})
    gone = sorted(m for m in old_members if m not in names.values() and m not in others
                  and m.startswith(f"{cluster}-") and isinstance(hosts.get(m), dict) and hosts[m].get("node"))
    lines = _block_style(text, data)
    lines = _edit_section(lines, "hosts", set(names.values()) | set(gone), new_entries)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    entry = {"description": f"{where}: {len(manifest.nodes)} nodes, imported from {manifest.path.name} at {stamp}"}
    if record:
        entry["cloudlab"] = record
    entry["roles"] = {r: [names.get(m, m) for m in ms] for r, ms in roles.items()}
    lines = _edit_section(lines, "clusters", {cluster}, _yaml_entry(cluster, entry))
    new_text = "\n".join(lines) + "\n"
    expect_hosts = {k: v for k, v in hosts.items() if k not in names.values() and k not in gone}
    expect_clusters = {k: v for k, v in clusters.items() if k != cluster}
    _replace_checked(hosts_path, new_text, expect_hosts, expect_clusters)
    ssh_cfg, include_in = _write_ssh_config(cluster, manifest, user_cfg, names)
    return Written(hosts_path, ssh_cfg, include_in, list(names.values()), taken, gone)


def _replace_checked(hosts_path: Path, new_text: str, expect_hosts: Mapping, expect_clusters: Mapping) -> None:
    """Write ``new_text`` over ``hosts_path`` in one rename, once it loads as any command would read it and every
    entry it was not meant to change is as it was; else refuse, the file unchanged."""
    from reprobook.core.config import load_hosts
    tmp = hosts_path.with_name(f".{hosts_path.name}.cloudlab-{os.getpid()}")
    hosts_path.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text(new_text)
    try:
        load_hosts(tmp)  # the schema and every cluster's members, as any command would read it
        after = yaml.safe_load(new_text) or {}
        kept = all((after.get(sec) or {}).get(k) == v for sec, want in (("hosts", expect_hosts),
                                                                         ("clusters", expect_clusters))
                   for k, v in want.items())
        if not kept:
            raise ConfigError("the line-by-line edit would change other entries (is an entry written in a style it "
                              "cannot follow?)")
    except ReprobookError as exc:
        tmp.unlink(missing_ok=True)
        raise ConfigError(f"{hosts_path}: the cluster could not be written ({exc}); the file was not changed") from None
    os.replace(tmp, hosts_path)


def _ssh_file(user_cfg: Path, cluster: str) -> Path:
    return user_cfg.parent / "reprobook" / f"{cluster}.conf"


def _ssh_G(cfg: Path, name: str) -> list[str] | None:
    import subprocess
    try:
        res = subprocess.run(["ssh", "-G", "-F", str(cfg), "--", name], capture_output=True, text=True, timeout=20,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return res.stdout.splitlines() if res.returncode == 0 else None


def _ssh_taken(aliases: Sequence[str], user_cfg: Path, own: Path) -> dict[str, str]:
    """The ``aliases`` that the user's SSH config (as OpenSSH reads it, without this cluster's own file) already
    resolves as it resolves no other name: alias -> what ``ssh -G`` says of it. An alias for which the config says
    only what it says of any name (``Host *``) is free. Without an ``ssh`` client nothing can be asked: none."""
    import shutil
    import tempfile
    from concurrent.futures import ThreadPoolExecutor
    if not shutil.which("ssh") or not aliases:
        return {}
    include = f"Include {own}"
    text = user_cfg.read_text() if user_cfg.is_file() else ""
    with tempfile.TemporaryDirectory(prefix="reprobook-ssh-") as d:
        cfg = Path(d) / "config"
        cfg.write_text("".join(line for line in text.splitlines(keepends=True) if line.rstrip("\r\n") != include))
        probe = f"reprobook-probe-{os.getpid()}"

        def seen(name: str) -> set[str] | None:
            out = _ssh_G(cfg, name)
            if out is None:
                return None
            return {line.replace(name, "%n").replace(name.lower(), "%n") for line in out}
        base = seen(probe)
        if base is None:
            return {}
        patterns, matches = _host_patterns(cfg, own, set())
        # only a name some pattern of the user's could match (beyond `*`) is asked about, one `ssh -G` each
        ask = list(aliases) if matches else [a for a in aliases if any(
            p not in ("*", "!*") and fnmatch.fnmatchcase(a.lower(), p.lstrip("!").lower()) for p in patterns)]
        with ThreadPoolExecutor(max_workers=8) as pool:
            got = dict(zip(ask, pool.map(seen, ask)))
    named = {p.lower() for p in patterns if not any(ch in p for ch in "*?!")}
    out = {}
    for a, lines in got.items():
        if lines is None:
            continue
        host = next((x.replace("%n", a) for x in lines if x.startswith("hostname ")), "")
        # the user's own alias of that name, or a pattern that sends the name elsewhere (a `Host *` that only adds
        # options, or a pattern's User or IdentityFile, leaves it ours: our entry comes first and sets HostName,
        # User and Port)
        if a.lower() in named or host not in {x.replace("%n", a) for x in base if x.startswith("hostname ")}:
            out[a] = host or "named in it"
    return out


def _host_patterns(cfg: Path, own: Path, seen: set) -> tuple[list[str], bool]:
    """Every ``Host`` pattern of an OpenSSH client config and the files it includes (``own`` left out), and whether
    a ``Match`` other than ``Match all`` makes patterns alone unable to say which names it concerns."""
    import glob
    import shlex
    if cfg in seen or not cfg.is_file():
        return [], False
    seen.add(cfg)
    patterns, matches = [], False
    try:
        text = cfg.read_text(errors="replace")
    except OSError:
        return [], True
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"(\w+)\s*(?:=\s*|\s+|$)(.*)", line)
        if not m:
            continue
        key, rest = m.groups()
        try:
            args = shlex.split(rest, comments=True)
        except ValueError:
            return patterns, True
        key = key.lower()
        if key == "host":
            patterns += [p for a in args for p in a.split(",")]
        elif key == "match":
            matches = matches or [a.lower() for a in args] != ["all"]
        elif key == "include":
            for a in args:
                a = os.path.expanduser(a)
                where = a if os.path.isabs(a) else str(Path.home() / ".ssh" / a)
                for f in sorted(glob.glob(where)):
                    if Path(f) != own:
                        more, m = _host_patterns(Path(f), own, seen)
                        patterns += more
                        matches = matches or m
    return patterns, matches


def _write_ssh_config(cluster: str, manifest: Manifest, user_cfg: Path, names: Mapping[str, str]) -> tuple[Path, Path]:
    """The cluster's SSH config file beside the user's, and an ``Include`` of it at the top of the user's.

    Its ``Host`` names are the cluster's own (`alias`, checked free in the user's config), so being first shadows
    none of the user's entries, and its HostName, User and Port are what the manifest says (a ``Host *`` of the
    user's further down does not change them)."""
    out = _ssh_file(user_cfg, cluster)
    out.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    lines = [f"# Written by `reprobook cloudlab import` from {manifest.path.name} (cluster {cluster}); the next",
             "# import of the cluster rewrites it, `reprobook cloudlab forget` removes it. Host keys live in",
             "# known_hosts, recorded by `reprobook trust-host`.", ""]
    for n in manifest.nodes:
        lines += [f"Host {names[n.name]}", f"    HostName {n.hostname}", f"    User {n.user}", f"    Port {n.port}", ""]
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("\n".join(lines))
    os.replace(tmp, out)
    include = f"Include {out}"
    current = user_cfg.read_text() if user_cfg.exists() else ""
    if include not in current.splitlines():
        # at the top: an Include after a Host block would apply to that block only
        user_cfg.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        user_cfg.write_text(f"{include}\n" + current)
    return out, user_cfg


def forget_cluster(hosts_path: Path, cluster: str, *, ssh_config: Path | None = None) -> tuple[list[str], list[str]]:
    """``reprobook cloudlab forget``: ``cluster`` out of ``hosts_path``, with the hosts an import wrote for it, its
    SSH config file and the ``Include`` line of it. Every other line of both files stays byte for byte.

    Returns the hosts removed and those kept (members of the cluster an import did not write, or that another
    cluster names)."""
    hosts_path = Path(hosts_path)
    text, data = _load_text(hosts_path)
    clusters, hosts = data.get("clusters") or {}, data.get("hosts") or {}
    if cluster not in clusters:
        raise ConfigError(f"no cluster named {cluster!r} in {hosts_path} (known: {', '.join(clusters) or 'none'}); "
                          f"nothing was changed")
    members = {m for ms in ((clusters[cluster] or {}).get("roles") or {}).values() for m in ms}
    others = {m for c, v in clusters.items() if c != cluster and isinstance(v, dict)
              for ms in (v.get("roles") or {}).values() for m in ms}
    gone = sorted(m for m in members if m not in others and m.startswith(f"{cluster}-")
                  and isinstance(hosts.get(m), dict) and hosts[m].get("node"))
    kept = sorted(members - set(gone))
    lines = _block_style(text, data)
    lines = _edit_section(lines, "clusters", {cluster}, [])
    lines = _edit_section(lines, "hosts", set(gone), [])
    for key in ("hosts", "clusters"):   # a section left without entries is an empty mapping, not null
        sections = _top_sections(lines)
        if key in sections and key in data:
            start, end = sections[key]
            _, entries = _entries(lines, start, end)
            if not entries and lines[start].split("#", 1)[0].strip() == f"{key}:":
                if key == "clusters" and "#" not in lines[start] and not any(x.strip() for x in lines[start + 1:end]):
                    # the section an import added, now empty: gone, as before the first import
                    del lines[start:end]
                    while lines and not lines[-1].strip():
                        lines.pop()
                    continue
                lines[start] = f"{key}: {{}}" + (" #" + lines[start].split("#", 1)[1] if "#" in lines[start] else "")
    new_text = "\n".join(lines) + ("\n" if lines else "")
    _replace_checked(hosts_path, new_text, {k: v for k, v in hosts.items() if k not in gone},
                     {k: v for k, v in clusters.items() if k != cluster})
    user_cfg = Path(ssh_config) if ssh_config else Path.home() / ".ssh" / "config"
    own = _ssh_file(user_cfg, cluster)
    own.unlink(missing_ok=True)
    if user_cfg.is_file():
        current = user_cfg.read_text()
        kept_lines = [ln for ln in current.splitlines(keepends=True) if ln.rstrip("\r\n") != f"Include {own}"]
        if len(kept_lines) != len(current.splitlines(keepends=True)):
            if kept_lines:
                user_cfg.write_text("".join(kept_lines))
            else:
                user_cfg.unlink()   # it held only the Include the import wrote (it made the file)
    return gone, kept


# --------------------------------------------------------------------------- host keys and the check

def unknown_keys(project, names: Sequence[str]) -> list[str]:
    """The hosts among ``names`` whose key is in none of the known_hosts files their SSH config names."""
    import paramiko
    from reprobook.remote.hosts import SshHost
    out = []
    for name in names:
        conn = SshHost(project.hosts.host(name), project.settings.ssh_config)._make_connection()
        keys = paramiko.HostKeys()
        for f in (conn.ssh_config.get("userknownhostsfile") or "~/.ssh/known_hosts").split():
            p = Path(os.path.expanduser(f))
            if p.is_file():
                try:
                    keys.load(str(p))
                except (OSError, paramiko.SSHException):
                    pass
        entry = conn.host if conn.port == 22 else f"[{conn.host}]:{conn.port}"
        if keys.lookup(entry) is None:
            out.append(name)
    return out


def record_keys(project, names: Sequence[str], *, assume_yes: bool) -> dict[str, int]:
    """`trust_host` for each host whose key is not yet known: it shows the fingerprint and asks (or ``--yes``)."""
    from reprobook.remote.trust import trust_host
    todo = unknown_keys(project, names)
    if not todo:
        return {}
    if not assume_yes and not sys.stdin.isatty():
        print(f"{len(todo)} host key(s) not recorded yet ({', '.join(todo[:5])}{', ...' if len(todo) > 5 else ''}): no "
              f"terminal to confirm on; check the fingerprints and pass --yes, or `reprobook trust-host NAME` each")
        return {n: 2 for n in todo}
    got = {}
    if assume_yes:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=min(16, len(todo))) as pool:
            futures = {n: pool.submit(_trust_one, trust_host, project, n) for n in todo}
        got = {n: f.result() for n, f in futures.items()}
    else:
        for n in todo:
            got[n] = _trust_one(trust_host, project, n, assume_yes=False)
    return got


def _trust_one(trust_host, project, name, assume_yes=True) -> int:
    try:
        return trust_host(project, name, assume_yes=assume_yes)
    except ReprobookError as exc:
        print(f"host {name}: key not recorded: {exc}")
        return 2


def check_cluster(project, cluster: str, claim=None) -> tuple[int, list[str]]:
    """Probe every host of ``cluster`` at once; per host its facts and shortfalls, or why it did not answer.

    Unlike a run's survey, an unreachable host does not stop the others being reported. Returns the
    exit code (0 every host answers and meets its role's requirements, 1 otherwise) and the report.
    """
    from reprobook.core.requirements import Requirements, shortfalls
    from reprobook.remote.group import on_each
    from reprobook.remote.placement import Placement, open_hosts, requirements_of
    c = project.hosts.clusters[cluster]
    placement = Placement({r: tuple(ms) for r, ms in c.roles.items()}, next(iter(c.roles)), cluster)
    hosts = open_hosts(project, placement.hosts)
    t0 = time.monotonic()

    def one(host):
        reqs = requirements_of(claim, placement, host.name) if claim else [Requirements()]
        facts = host.facts(reqs)
        return facts, list(dict.fromkeys(s for r in reqs for s in shortfalls(facts, r)))
    try:
        got = on_each(hosts, one)
    finally:
        for h in hosts.values():
            h.close()
    took = time.monotonic() - t0
    lines, bad = [], 0
    for name in placement.hosts:
        roles = ", ".join(placement.roles_of(name))
        r = got[name]
        if isinstance(r, Exception):
            bad += 1
            lines.append(f"  {name} ({roles}): not reachable: {getattr(r, 'message', r)}")
            continue
        facts, short = r
        bad += bool(short)
        lines.append(f"  {name} ({roles}): {facts.get('cpus')} CPUs, {facts.get('os') or 'OS unknown'}, "
                     + ("meets the requirements" if not short else "falls short: " + "; ".join(short)))
    head = (f"cluster {cluster}: {len(placement.hosts) - sum('not reachable' in ln for ln in lines)} of "
            f"{len(placement.hosts)} hosts answered ({took:.2f} s, in parallel)")
    tail = ((f"{claim.key}: " if claim else "") + ("every host answers" + (" and meets its role's requirements"
                                                                             if claim else "")
                                                   if not bad else f"{bad} host(s) did not answer or fall short"))
    return (1 if bad else 0), [head, *lines, tail]


def import_manifest(project, path, cluster: str, *, user: str | None = None, roles_file: Path | None = None,
                    claim_key: str | None = None, workdir: str = DEFAULT_WORKDIR, assume_yes: bool = False,
                    check: bool = True, replace: bool = False, out=print) -> int:
    """``reprobook cloudlab import``: read, map roles, write, record keys, check. Returns the exit code."""
    from reprobook.core.config import load_project
    path = Path(path)
    if not _NAME.fullmatch(cluster or ""):
        raise ConfigError(f"--cluster {cluster!r}: a cluster name is letters, digits, '.', '_' and '-' (at most 63, "
                          f"not starting with '.', '_' or '-')")
    t0 = time.monotonic()
    manifest = read_manifest(path, user=user)
    names = [n.name for n in manifest.nodes]
    claim = project.claim(claim_key) if claim_key else None
    if roles_file:
        roles = read_roles_file(roles_file, names)
    elif claim is not None:
        claim, roles = _fit_scale(path, project, claim, names)
    else:
        roles = roles_from_names(names)
    written = write_cluster(project.hosts.path, cluster, manifest, roles, workdir=workdir,
                            ssh_config=project.settings.ssh_config, replace=replace)
    took = time.monotonic() - t0
    hw = {}
    for n in manifest.nodes:
        hw[n.hardware_type or "?"] = hw.get(n.hardware_type or "?", 0) + 1
    out(f"cluster {cluster}: {len(names)} hosts written into {written.hosts_file} ({took:.2f} s; "
        + ", ".join(f"{r}: {len(m)}" for r, m in roles.items()) + "; "
        + ", ".join(f"{k} x{v}" for k, v in sorted(hw.items())) + ")"
        + (f"; replaced host(s) {', '.join(written.replaced)} (--replace)" if written.replaced else "")
        + (f"; removed {', '.join(written.removed)} (no longer in the experiment)" if written.removed else ""))
    shown = written.hosts[:4] + (["..."] if len(written.hosts) > 4 else [])
    out(f"added hosts and SSH aliases {', '.join(shown)} (node {names[0]} is {written.hosts[0]}: the cluster's "
        f"own names; {manifest.nodes[0].hostname})")
    out(f"SSH config: {written.ssh_config} (included from {written.include_in}): `ssh {written.hosts[0]}` reaches "
        f"{manifest.nodes[0].hostname}")
    record = manifest.record
    if record.get("experiment"):
        out(f"experiment: {record['experiment']}" + "".join(f", {k} {record[k]}" for k in ("project", "domain", "user")
                                                              if record.get(k))
            + " (recorded: a run on the cluster takes its CloudLab parameters from here)")
    if not check:
        return 0
    project = load_project(project.root)
    record_keys(project, written.hosts, assume_yes=assume_yes)
    code, report = check_cluster(project, cluster, claim)
    for line in report:
        out(line)
    return code


def forget(project, cluster: str, *, out=print) -> int:
    """``reprobook cloudlab forget CLUSTER``: `forget_cluster`, and what it did in words."""
    if not _NAME.fullmatch(cluster or ""):
        raise ConfigError(f"{cluster!r}: a cluster name is letters, digits, '.', '_' and '-'")
    # where each imported node's key is recorded, read while the cluster's SSH config still says where the node is
    keys = _key_entries(project, [n for n, h in project.hosts.hosts.items() if h.node])
    gone, kept = forget_cluster(project.hosts.path, cluster, ssh_config=project.settings.ssh_config)
    user_cfg = Path(project.settings.ssh_config) if project.settings.ssh_config else Path.home() / ".ssh" / "config"
    out(f"cluster {cluster}: removed from {project.hosts.path} with {len(gone)} host(s)"
        + (f" ({', '.join(gone[:4])}{', ...' if len(gone) > 4 else ''})" if gone else "")
        + (f"; kept {', '.join(kept)} (not written by an import of it, or in another cluster)" if kept else ""))
    out(f"SSH config: {_ssh_file(user_cfg, cluster)} and its Include in {user_cfg} removed")
    removed = _forget_keys({n: keys[n] for n in gone if n in keys},
                           {keys[n][0] for n in keys if n not in gone})
    if removed:
        out(f"host keys: {len(removed)} removed ({', '.join(sorted(removed)[:4])}{', ...' if len(removed) > 4 else ''}): "
            "a node of a later experiment gets a new key")
    return 0


def _key_entries(project, names: Sequence[str]) -> dict[str, tuple[str, list[Path]]]:
    """Per host: the name its key is recorded under in known_hosts (``host`` or ``[host]:port``) and the known_hosts
    files its SSH config names."""
    from reprobook.remote.hosts import SshHost
    out = {}
    for name in names:
        try:
            conn = SshHost(project.hosts.host(name), project.settings.ssh_config)._make_connection()
        except ReprobookError:
            continue
        entry = conn.host if conn.port == 22 else f"[{conn.host}]:{conn.port}"
        files = [Path(os.path.expanduser(f)) for f in
                 (conn.ssh_config.get("userknownhostsfile") or "~/.ssh/known_hosts").split()]
        out[name] = (entry, files)
    return out


def _forget_keys(gone: Mapping[str, tuple[str, list[Path]]], still_used: set[str]) -> set[str]:
    """Remove the known_hosts lines of the forgotten nodes (``ssh-keygen -R``, hashed lines too), except where another
    host still reaches the same address; the names whose keys went."""
    removed = set()
    keygen = shutil.which("ssh-keygen")
    if not keygen:
        return removed
    for entry, files in gone.values():
        if entry in still_used:
            continue
        for f in files:
            if not f.is_file():
                continue
            res = subprocess.run([keygen, "-R", entry, "-f", str(f)], capture_output=True, text=True, timeout=30,
                                 stdin=subprocess.DEVNULL)
            if res.returncode == 0 and "found" in res.stdout + res.stderr:
                removed.add(entry)   # (ssh-keygen keeps the file as it was beside it, as known_hosts.old)
    return removed


# --------------------------------------------------------------------------- profiles

@dataclass(frozen=True)
class RoleNodes:
    role: str
    names: tuple[str, ...]
    hardware_type: str
    disk_image: str
    fixed_count: bool        # the claim takes exactly this many (no count parameter)
    min: int = 1
    max: int | None = 1
    all_names: tuple[str, ...] = ()   # the role's names at the paper's scale: a larger count takes the next ones


def _cloudlab(project, claim, role: str | None = None) -> dict:
    """The ``cloudlab`` entry for ``role`` of ``claim``: the paper's, then the claim's, then the role's keys."""
    paper = project.paper(claim.paper)
    out: dict = {}
    for reqs in (getattr(paper, "machine", None), claim.requires,
                 claim.role(role).requires if role and claim.roles else None):
        if reqs is not None:
            out.update(reqs.get("cloudlab") or {})
    return out


def disk_image_for(reqs_os: Sequence[str], named: str = "") -> str:
    """The image's URN: the one named, else CloudLab's standard image of the first system the guide names."""
    if named:
        return named
    for o in reqs_os or ():
        if o in _OS_IMAGES:
            return IMAGE_PREFIX + _OS_IMAGES[o]
    return ""


def os_of_image(urn: str) -> str:
    """The system ("Ubuntu 22.04") a standard image (its URN, as `disk_image_for` gives it) runs; "" for another."""
    return next((o for o, img in _OS_IMAGES.items() if urn == IMAGE_PREFIX + img), "")


def nodes_for_claim(project, claim, scale: str = "paper") -> list[RoleNodes]:
    """The nodes of ``claim``'s profile, role by role."""
    if scale not in ("paper", "rehearsal"):
        raise ConfigError(f"--scale {scale!r}: paper or rehearsal")
    out = []
    claim = claim.at_scale(scale)
    roles = dict(claim.roles) or {claim.control_role: claim.role(claim.control_role)}
    at_paper_scale = _role_names(project, claim, fewest=False)   # every name the role has at this scale
    for r, names in role_names(project, claim, scale).items():
        cl = _cloudlab(project, claim, r)
        reqs = roles[r].requires or claim.requires
        hw = (cl.get("hardware_type") or ("",))[0]
        out.append(RoleNodes(r, tuple(names), hw, disk_image_for(reqs.get("os"), cl.get("disk_image", "")),
                             roles[r].min == roles[r].max, roles[r].min, roles[r].max,
                             tuple(at_paper_scale[r]) if len(at_paper_scale[r]) > len(names) else tuple(names)))
    return out


def live_claims(project, paper: str | None = None):
    """The claims that run live (they have steps), of one paper or all."""
    return [c for c in project.all_claims() if (paper is None or c.paper == paper) and (c.run or c.setup)]


def nodes_for_paper(project, paper: str, scale: str = "paper") -> tuple[list[RoleNodes], list[str]]:
    """The nodes a paper's live claims need on one experiment, as the pool packs them, and the claims left out.

    The pool runs one claim at a time per host, so claims whose roles ask for the same nodes (same
    hardware type and image) share them, the largest count winning; single-host claims share a node
    per hardware type and image (``node-0``, ``node-1``, ...). A claim whose role names a node that
    another claim needs with another image cannot be on the same experiment (one name, one node): it
    is left out, with the reason, for a profile of its own.
    """
    project.paper(paper)
    merged: dict[tuple, RoleNodes] = {}
    owner: dict[str, tuple] = {}     # node name -> the key that holds it
    left_out = []
    for c in live_claims(project, paper):
        mine = nodes_for_claim(project, c, scale)
        if not c.roles:  # a single-host claim: a node per hardware type and image
            rn = mine[0]
            key = ("node", rn.hardware_type, rn.disk_image)
            if key not in merged:
                k = sum(1 for m in merged if m[0] == "node")
                merged[key] = RoleNodes(f"node-{k}", (f"node-{k}",), rn.hardware_type, rn.disk_image, True)
            continue
        keys = {rn.role: ("role", rn.role, rn.hardware_type, rn.disk_image) for rn in mine}
        clash = sorted({n for rn in mine for n in rn.names if n in owner and owner[n] != keys[rn.role]})
        if clash:
            left_out.append(f"{c.key}: its hosts {', '.join(clash[:4])} are needed with another hardware type or "
                            f"image by a claim before it; write its own profile (`reprobook cloudlab profile {c.key}`)")
            continue
        for rn in mine:
            key = keys[rn.role]
            if key not in merged or len(rn.names) > len(merged[key].names):
                merged[key] = rn
            owner.update({n: key for n in merged[key].names})
    return list(merged.values()), left_out


def name_pattern(role: str, names: Sequence[str]) -> tuple[str, str]:
    """How the role's names go on past those listed: ``(prefix, suffix)`` such that name ``i`` is
    ``prefix + str(i) + suffix`` (``client-0-0`` ... ``client-5-0`` go on with ``client-6-0``, as the harness names
    the client nodes); ``("<role>-", "")`` when the names follow no such rule."""
    for m in (re.fullmatch(r"(.*?)(\d+)(\D.*)?", names[0]),) if names else ():
        if m and all(n == f"{m[1]}{i}{m[3] or ''}" for i, n in enumerate(names)):
            return m[1], m[3] or ""
    return f"{role}-", ""


def _pyname(role: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", role)


def profile_script(title: str, nodes: Sequence[RoleNodes], *, about: str = "") -> str:
    """A geni-lib profile: a parameter per role for its hardware type (and count where it may vary), one LAN."""
    roles = [{"role": rn.role, "names": list(rn.all_names or rn.names), "hardware_type": rn.hardware_type,
              "disk_image": rn.disk_image, "count": len(rn.names), "fixed": rn.fixed_count,
              "min": rn.min, "max": rn.max,
              "next": list(name_pattern(rn.role, list(rn.all_names or rn.names)))} for rn in nodes]
    params = []
    for r in roles:
        p = _pyname(r["role"])
        params.append(f"pc.defineParameter({('hw_' + p)!r}, {('Hardware type of the ' + r['role'] + ' nodes (empty: any)')!r}, "
                      f"portal.ParameterType.NODETYPE, {r['hardware_type']!r})")
        if not r["fixed"]:
            params.append(f"pc.defineParameter({('n_' + p)!r}, {('How many ' + r['role'] + ' nodes')!r}, "
                          f"portal.ParameterType.INTEGER, {r['count']})")
    about = about.replace('"' * 3, "'" * 3)  # free text of a paper file must not close the docstring
    doc = (f'"""{title}\n\n{about}\n\nWritten by `reprobook cloudlab profile`. Instructions: when the experiment is '
           f'ready, download its manifest and run `reprobook cloudlab import MANIFEST.xml --cluster NAME`.\n"""')
    lines = [
        doc.replace("\\", "\\\\"),
        "",
        "import geni.portal as portal",
        "import geni.rspec.pg as pg",
        "",
        f"ROLES = {roles!r}",
        f"WORKDIR = {DEFAULT_WORKDIR!r}",
        "",
        "pc = portal.Context()",
        *params,
        "params = pc.bindParameters()",
        "for r in ROLES:",
        "    if not r['fixed']:",
        "        n = getattr(params, 'n_' + ''.join(ch if ch.isalnum() else '_' for ch in r['role']))",
        "        if n < r['min'] or (r['max'] is not None and n > r['max']):",
        "            pc.reportError(portal.ParameterError('the %s role takes %s to %s nodes' % (r['role'], r['min'], r['max'] or 'any number of'), ['n_' + r['role']]))",
        "pc.verifyParameters()",
        "",
        "request = pc.makeRequestRSpec()",
        "lan = request.LAN('lan')",
        "for r in ROLES:",
        "    key = ''.join(ch if ch.isalnum() else '_' for ch in r['role'])",
        "    count = r['count'] if r['fixed'] else getattr(params, 'n_' + key)",
        "    hw = getattr(params, 'hw_' + key)",
        "    for i in range(count):",
        "        name = r['names'][i] if i < len(r['names']) else '%s%d%s' % (r['next'][0], i, r['next'][1])",
        "        node = request.RawPC(name)",
        "        if hw:",
        "            node.hardware_type = hw",
        "        if r['disk_image']:",
        "            node.disk_image = r['disk_image']",
        "        lan.addInterface(node.addInterface('if0'))",
        "        # runs live on the node's local disk (/users is NFS, shared by every node)",
        "        node.addService(pg.Execute(shell='sh', command='sudo mkdir -p %s && sudo chmod 1777 %s' % (WORKDIR, WORKDIR)))",
        "",
        "pc.printRequestRSpec(request)",
        "",
    ]
    return "\n".join(lines)


def request_rspec(nodes: Sequence[RoleNodes]) -> str:
    """The request RSpec of the profile with its default parameters (what the portal accepts as an upload)."""
    from xml.etree import ElementTree as ET
    ET.register_namespace("", RSPEC_NS)
    ET.register_namespace("emulab", EMULAB_NS)
    root = ET.Element(_q(RSPEC_NS, "rspec"), {"type": "request"})
    lan = []
    for rn in nodes:
        for name in rn.names:
            node = ET.SubElement(root, _q(RSPEC_NS, "node"), {"client_id": name, "exclusive": "true"})
            sliver = ET.SubElement(node, _q(RSPEC_NS, "sliver_type"), {"name": "raw"})  # as geni-lib's RawPC
            if rn.disk_image:
                ET.SubElement(sliver, _q(RSPEC_NS, "disk_image"), {"name": rn.disk_image})
            if rn.hardware_type:
                ET.SubElement(node, _q(RSPEC_NS, "hardware_type"), {"name": rn.hardware_type})
            ET.SubElement(node, _q(RSPEC_NS, "interface"), {"client_id": f"{name}:if0"})
            services = ET.SubElement(node, _q(RSPEC_NS, "services"))
            ET.SubElement(services, _q(RSPEC_NS, "execute"), {
                "shell": "sh", "command": f"sudo mkdir -p {DEFAULT_WORKDIR} && sudo chmod 1777 {DEFAULT_WORKDIR}"})
            lan.append(f"{name}:if0")
    link = ET.SubElement(root, _q(RSPEC_NS, "link"), {"client_id": "lan"})
    for iface in lan:
        ET.SubElement(link, _q(RSPEC_NS, "interface_ref"), {"client_id": iface})
    ET.SubElement(link, _q(RSPEC_NS, "link_type"), {"name": "lan"})
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=False) + "\n"


def make_profile(project, target: str, scale: str = "paper", *, rspec: bool = False) -> tuple[str, list[RoleNodes]]:
    """The profile (or request RSpec) of a claim (``paper/claim``) or a paper, and its nodes."""
    if "/" in target:
        claim = project.claim(target)
        nodes = nodes_for_claim(project, claim, scale)
        title = f"reprobook: {claim.key} ({scale} scale)"
        about = (claim.at_scale(scale).requires.testbed or claim.requires.testbed or "").strip()
        if scale != "paper" and claim.scales.get(scale) is not None and claim.scales[scale].about:
            about = f"At the {scale} scale: {claim.scales[scale].about}.\n\n{about}"
    else:
        nodes, left_out = nodes_for_paper(project, target, scale)
        if not nodes:
            raise ConfigError(f"paper {target!r} has no claim that runs live: no profile to write")
        title = f"reprobook: the live claims of {target} on one experiment ({scale} scale)"
        about = "Not on this experiment:\n" + "\n".join("- " + x for x in left_out) if left_out else ""
        for x in left_out:
            print(f"reprobook: not in the profile of {target}: {x}", file=sys.stderr)
    return (request_rspec(nodes) if rspec else profile_script(title, nodes, about=about)), nodes
