"""Experiment configs of the Pequin artifact (Pesto, Basil), derived from the authors' files.

The guide asks an evaluator to edit the same fields by hand in every JSON file under
``experiment-configs/`` (project, experiment, user, local and remote directories), and
optionally the client series, the duration and the number of runs. :func:`generate`
does that as a pure function: from an authors' config, the parameters and a placement
(role -> host names) it returns the new config and a readable diff against the
original. The authors' file is never written.

The configs' shape follows ``experiment-scripts/utils/experiment_util.py``:
``experiment_independent_vars`` lists groups of keys; a key in the first group holds one
value per series, a key in the second group one value per point of a series, and a key
in both a list (series) of lists (points). ``run_multiple_experiments`` refuses a group
whose keys have different lengths; so does :func:`generate`, naming the file and key.
Keys starting with ``_`` are the authors' comments and stay as they are.

Examples
--------
>>> params = ExperimentParams(project="pequin-pg0", experiment="pequin", user="alice",
...                           local_output_dir="/home/alice/output", src_dir="/home/alice/Pequin-Artifact/src",
...                           clients=(ClientSetting(15), ClientSetting(30)), duration_s=30, ramp_s=5)
>>> generated = generate("Pequin-TPCC-SQL-20wh.json", params,                          # doctest: +SKIP
...                      placement={"server": [f"us-east-1-{i}" for i in range(3)] +
...                                           [f"eu-west-1-{i}" for i in range(3)]})
>>> print(generated.diff())                                                            # doctest: +SKIP
"""

from __future__ import annotations

import copy
import itertools
import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from reprobook.core import artifacts
from reprobook.errors import ConfigError
from reprobook.papers.pesto import systems

CLIENT_KEYS = ("client_total", "client_processes_per_client_node", "client_threads_per_process")
"""The keys of one client setting, in the guide's order."""
USER_PATHS = ("benchmark_schema_file_path", "bftsmart_codebase_dir")
"""Paths under the authors' home on the CloudLab nodes (``/users/<user>/...``), moved to the new user's."""
LABELS_KEY = "_reprobook_labels"
_USERS = re.compile(r"^/users/[^/]+/?")


@dataclass(frozen=True)
class ClientSetting:
    """One client setting: at most ``total`` client processes (``client_total``), run
    ``processes_per_node`` to a client node, each with ``threads_per_process`` clients."""

    total: int
    processes_per_node: int = 8
    threads_per_process: int = 1

    def values(self) -> tuple[int, int, int]:
        return self.total, self.processes_per_node, self.threads_per_process


@dataclass(frozen=True)
class ExperimentParams:
    """What an evaluator sets in every config (the guide's six required fields and its options).

    Parameters
    ----------
    project, experiment, user : str
        The CloudLab project (often with ``-pg0``), experiment and user names.
    local_output_dir : str
        ``base_local_exp_directory``: where the control machine collects the outputs.
    src_dir : str
        ``src_directory``: the artifact's ``src`` on the control machine.
    remote_bin_dir : str, optional
        ``base_remote_bin_directory_nfs`` (default ``/users/<user>/indicus``).
    clients : sequence of ClientSetting or int, optional
        The client series (an int is a ``client_total`` with the other two as the guide's
        defaults, 8 processes per node and 1 thread); default: the config's own.
    duration_s, ramp_s : int, optional
        ``client_experiment_length`` and both ramps (``client_ramp_up``,
        ``client_ramp_down``); default: the config's.
    runs : int, optional
        ``num_experiment_runs``.
    cluster_domain : str, optional
        e.g. ``utah.cloudlab.us``: the domain in the server and client host name formats.
    labels : mapping, optional
        Written as the comment key ``_reprobook_labels``; the loaders read the run's
        system, workload, ... from it.
    """

    project: str
    experiment: str
    user: str
    local_output_dir: str
    src_dir: str
    remote_bin_dir: str | None = None
    clients: Sequence[ClientSetting | int] | None = None
    duration_s: int | None = None
    ramp_s: int | None = None
    runs: int | None = None
    cluster_domain: str | None = None
    labels: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Change:
    """One key the generation changed: its path (``server_regions[0].us-east-1``), before and after."""

    key: str
    before: Any
    after: Any


@dataclass(frozen=True)
class GeneratedConfig:
    """A config derived from an authors' file; ``config`` is the new content, ``original`` the old."""

    name: str
    source: str
    original: Mapping
    config: Mapping
    changes: tuple[Change, ...]
    warnings: tuple[str, ...] = field(default=())

    def text(self) -> str:
        """The generated file's text (two-space indentation, key order kept, as the scripts write)."""
        return json.dumps(self.config, indent=2) + "\n"

    def diff(self, context: int = 2) -> str:
        """A unified diff of the original (re-indented) against the generated config."""
        before = (json.dumps(self.original, indent=2) + "\n").splitlines(keepends=True)
        return "".join(difflib.unified_diff(before, self.text().splitlines(keepends=True),
                                            fromfile=f"{artifacts.named(self.source)} (the authors')",
                                            tofile=f"{self.name} (generated)", n=context))

    def table(self):
        """The changes as a DataFrame (key, before, after), for a page."""
        import pandas as pd
        return pd.DataFrame([{"key": c.key, "before": _short(c.before), "after": _short(c.after)}
                             for c in self.changes], columns=["key", "before", "after"])

    def write(self, directory: str | Path) -> Path:
        """Write the config into ``directory`` under the original's name; never over the original."""
        directory = Path(directory)
        target = directory / self.name
        if self.source and Path(self.source).exists() and target.resolve() == Path(self.source).resolve():
            raise ConfigError("refusing to overwrite the authors' config; write the generated one beside the run",
                              file=target)
        directory.mkdir(parents=True, exist_ok=True)
        target.write_text(self.text(), encoding="utf-8")
        return target


def load_config(path: str | Path) -> dict:
    """An authors' experiment config, as an ordered dict (`ConfigError` naming the line on bad JSON)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as exc:
        raise ConfigError(f"cannot read the config ({exc})", file=path) from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not valid JSON: {exc.msg}", file=path,
                          key=f"line {exc.lineno}, column {exc.colno}") from None
    if not isinstance(data, dict):
        raise ConfigError("expected a JSON object", file=path)
    return data


def generate(original: str | Path | Mapping, params: ExperimentParams,
             placement: Mapping[str, Sequence[str]] | None = None, *, name: str | None = None) -> GeneratedConfig:
    """Derive a config from an authors' one: the parameters applied, the servers placed.

    Parameters
    ----------
    original : path or mapping
        The authors' config (``experiment-configs/...json``); a mapping needs ``name``.
    params : ExperimentParams
    placement : mapping, optional
        Role -> host names. ``server``: the config's servers, renamed in order (the
        first name the config uses becomes the first host, and so on, in
        ``server_names`` and ``server_regions``); it must hold at least as many hosts as
        the config uses. ``client``: the client nodes; the scripts derive their names
        (``client-<server>-<node>``), so these are checked, not written. Other roles
        (``control``) are not in the config.
    name : str, optional
        The file name (default: the original's).

    Returns
    -------
    GeneratedConfig

    Raises
    ------
    ConfigError
        Naming the file and the key: not an experiment config, groups of independent
        variables of unequal length, too few servers, a duration shorter than its ramps.
    """
    if isinstance(original, Mapping):
        if not name:
            raise ValueError("generate(<mapping>) needs name=")
        source, data = name, copy.deepcopy(dict(original))
    else:
        source, data = str(original), load_config(original)
        name = name or Path(original).name
    before = copy.deepcopy(data)
    groups = _groups(data, source)
    _check_shape(data, groups, source)
    config = copy.deepcopy(data)
    old_user = config.get("emulab_user")
    required = {"project_name": params.project, "experiment_name": params.experiment, "emulab_user": params.user,
                "base_local_exp_directory": params.local_output_dir, "src_directory": params.src_dir,
                "base_remote_bin_directory_nfs": params.remote_bin_dir or f"/users/{params.user}/indicus"}
    for key, value in required.items():
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{key} must be a non-empty string, not {value!r}", file=source, key=key)
        config[key] = value
    for key in USER_PATHS:
        if isinstance(config.get(key), str) and _USERS.match(config[key]):
            config[key] = _USERS.sub(f"/users/{params.user}/", config[key])
    if params.duration_s is not None or params.ramp_s is not None:
        _set_duration(config, params, source)
    if params.runs is not None:
        if isinstance(params.runs, bool) or not isinstance(params.runs, int) or params.runs < 1:
            raise ConfigError(f"the number of runs must be a positive integer, not {params.runs!r}", file=source,
                              key="num_experiment_runs")
        config["num_experiment_runs"] = params.runs
    if params.clients is not None:
        _set_clients(config, groups, params.clients, source)
    if params.cluster_domain:
        for key in ("server_host_format_str", "client_host_format_str"):
            if isinstance(config.get(key), str):
                config[key] = re.sub(r"(%s)\.[^%]*$", rf"\1.{params.cluster_domain}", config[key])
    warnings = []
    if placement:
        warnings += _place(config, groups, placement, source)
    if params.labels:
        config[LABELS_KEY] = dict(params.labels)
    _check_shape(config, groups, source)
    if old_user and old_user != params.user and "bftsmart_codebase_dir" in config:
        warnings.append("BFT-SMaRt: run scripts/bftsmart-configs/one_step_config.sh with the new user before "
                        "this experiment (the guide's pre-configuration)")
    return GeneratedConfig(name=name, source=source, original=before, config=config,
                           changes=tuple(_changes(before, config)), warnings=tuple(warnings))


# --------------------------------------------------------------------------- shape of the independent variables

def _groups(config: Mapping, source: str) -> list[list[str]]:
    """The groups the experiment script will iterate: ``experiment_independent_vars_unused`` when the
    config is one series of an earlier run (the script writes it so), else ``experiment_independent_vars``."""
    key = ("experiment_independent_vars_unused" if "experiment_independent_vars_unused" in config
           else "experiment_independent_vars")
    groups = config.get(key)
    if not isinstance(groups, list) or not groups or not all(
            isinstance(g, list) and g and all(isinstance(k, str) for k in g) for g in groups):
        raise ConfigError(f"not an experiment config: {key!r} must list groups of keys (run_multiple_experiments.py "
                          "needs at least one; a config resolved down to one client setting has none left)",
                          file=source, key=key)
    for g, keys in enumerate(groups):
        for k in keys:
            if k not in config:
                hint = f"; it is commented out as '_{k}'" if f"_{k}" in config else ""
                raise ConfigError(f"the independent variable {k!r} (group {g}) has no value{hint}", file=source, key=k)
    return groups


def _check_shape(config: Mapping, groups: list[list[str]], source: str) -> None:
    """The lengths ``run_multiple_experiments`` requires: per group, every key equally long, at every series."""
    first = groups[0]
    lengths = {k: _length(config[k], k, "series", source) for k in first}
    odd = [k for k in first if lengths[k] != lengths[first[0]]]
    if odd:
        desc = ", ".join(f"{k}: {n}" for k, n in lengths.items())
        raise ConfigError(f"the first group of independent variables must hold one value per series in every key, "
                          f"but their lengths differ ({desc}); run_multiple_experiments.py would stop here",
                          file=source, key=odd[0])
    for g, keys in enumerate(groups[1:], start=1):
        for s in range(lengths[first[0]]):
            found = {k: _length(config[k][s] if k in first else config[k], f"{k}[{s}]" if k in first else k,
                                "point", source) for k in keys}
            if len(set(found.values())) > 1:
                desc = ", ".join(f"{k}: {n}" for k, n in found.items())
                raise ConfigError(f"group {g} of independent variables must hold one value per point in every key, "
                                  f"but series {s} has lengths {desc}", file=source, key=keys[0])


def _length(value, key: str, per: str, source: str) -> int:
    if not isinstance(value, list):
        raise ConfigError(f"expected a list (one value per {per}), found {type(value).__name__}", file=source, key=key)
    return len(value)


def _set_clients(config: dict, groups: list[list[str]], clients, source: str) -> None:
    settings = [c if isinstance(c, ClientSetting) else ClientSetting(c) for c in clients]
    if not settings:
        raise ConfigError("the client series is empty", file=source, key="client_total")
    for c in settings:
        for value in c.values():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"client settings are positive integers, not {c}", file=source, key="client_total")
    first, inner = groups[0], [k for g in groups[1:] for k in g]
    series = len(config[first[0]])
    for i, key in enumerate(CLIENT_KEYS):
        points = [c.values()[i] for c in settings]
        if key in inner:
            config[key] = [list(points) for _ in range(series)] if key in first else list(points)
        elif key in first:
            others = [k for k in first if k not in CLIENT_KEYS]
            if others and series != len(points):
                raise ConfigError(f"{key} varies with {others[0]} here ({series} values), so the client series must "
                                  f"have {series} settings, not {len(points)}", file=source, key=key)
            config[key] = list(points)
        else:
            if len(points) != 1:
                raise ConfigError(f"{key} is not an independent variable here, so it takes one setting, "
                                  f"not {len(points)}", file=source, key=key)
            config[key] = points[0]


def _set_duration(config: dict, params: ExperimentParams, source: str) -> None:
    length = params.duration_s if params.duration_s is not None else config.get("client_experiment_length")
    ramp = params.ramp_s
    up = ramp if ramp is not None else config.get("client_ramp_up", 0)
    down = ramp if ramp is not None else config.get("client_ramp_down", 0)
    for key, value in (("client_experiment_length", length), ("client_ramp_up", up), ("client_ramp_down", down)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{key} must be a non-negative integer (seconds), not {value!r}", file=source, key=key)
    if length <= up + down:
        raise ConfigError(f"an experiment of {length} s leaves nothing to measure after ramping up {up} s and "
                          f"down {down} s", file=source, key="client_experiment_length")
    config["client_experiment_length"], config["client_ramp_up"], config["client_ramp_down"] = length, up, down


# --------------------------------------------------------------------------- placement

def _place(config: dict, groups: list[list[str]], placement: Mapping[str, Sequence[str]], source: str) -> list[str]:
    warnings = []
    for role in placement:
        if role not in ("server", "client", "control"):
            raise ConfigError(f"unknown role {role!r} (the configs know server and client; control runs the "
                              "script)", file=source, key=f"placement.{role}")
    servers = list(placement.get("server") or ())
    in_series = "server_names" in groups[0]
    lists = config["server_names"] if in_series else [config["server_names"]]
    used = list(dict.fromkeys(n for names in lists for n in names))
    if "server" in placement:
        if len(set(servers)) != len(servers):
            raise ConfigError("a host is placed twice in role server", file=source, key="placement.server")
        if len(servers) < len(used):
            raise ConfigError(f"this config runs {len(used)} servers ({', '.join(used)}) but the placement gives "
                              f"{len(servers)}", file=source, key="server_names")
        rename = dict(zip(used, servers))
        renamed = [[rename[n] for n in names] for names in lists]
        config["server_names"] = renamed if in_series else renamed[0]
        regions = config.get("server_regions")
        if regions is not None:
            def move(r):
                return {region: [rename.get(n, n) for n in names] for region, names in r.items()}
            config["server_regions"] = [move(r) for r in regions] if isinstance(regions, list) else move(regions)
        if any(a != b for a, b in rename.items()) and _uses_smr(config, 1):
            warnings.append("Peloton-HS: HotStuff is pre-configured for us-east-1-0, us-east-1-1, us-east-1-2 and "
                            "eu-west-1-0; with other server names edit src/scripts/hosts_pg_smr and "
                            "src/scripts/config_pghs/shard0/hotstuff.gen.conf before running pghs_config_remote.sh")
    if "client" in placement:
        nodes = config.get("client_nodes_per_server", 1)
        expected = {f"client-{i}-{j}" for i in range(len(used)) for j in range(nodes if isinstance(nodes, int) else 1)}
        wrong = [h for h in placement["client"] if h.split(".")[0] not in expected]
        if wrong:
            raise ConfigError(f"client hosts are named by the scripts as client-<server>-<node> "
                              f"({', '.join(sorted(expected))}); these are not: {', '.join(wrong)}",
                              file=source, key="placement.client")
    return warnings


def _uses_smr(config: Mapping, mode: int) -> bool:
    settings = config.get("replication_protocol_settings")
    items = settings if isinstance(settings, list) else [settings]
    return any(isinstance(s, Mapping) and s.get("SMR_mode") == mode for s in items)


# --------------------------------------------------------------------------- changes

def _changes(before: Any, after: Any, path: str = "") -> list[Change]:
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        out = []
        for key in list(before) + [k for k in after if k not in before]:
            if str(key).startswith("_") and key != LABELS_KEY:
                continue
            sub = f"{path}.{key}" if path else str(key)
            if key not in after or key not in before:
                out.append(Change(sub, before.get(key), after.get(key)))
            else:
                out += _changes(before[key], after[key], sub)
        return out
    if before != after:
        return [Change(path, before, after)]
    return []


def _short(value: Any, width: int = 90) -> str:
    text = json.dumps(value)
    return text if len(text) <= width else text[:width - 1] + "…"


# --------------------------------------------------------------------------- inputs of a live run

from reprobook.core.inputs import RunInput, generator  # noqa: E402  (the registry imports this module to fill itself)


AUTHORS_DOMAIN = "utah.cloudlab.us"
"""The cluster domain the authors' configs name in their host formats (``%s.%s.%s.utah.cloudlab.us``)."""
CLOUDLAB_PARAMETERS = (("cloudlab_experiment", "experiment"), ("cloudlab_project", "project"),
                       ("cloudlab_domain", "domain"), ("cloudlab_user", "user"))
"""The parameters that name the run's CloudLab experiment, and what an imported cluster records of each."""


def config_host(node: str, params: Mapping[str, Any]) -> str:
    """The host name a derived config gives the node ``node``: ``<node>.<experiment>.<project>.<domain>``, as the
    harness formats ``server_host_format_str`` with the parameters (the domain the authors' unless
    ``cloudlab_domain``)."""
    return (f"{node}.{params['cloudlab_experiment']}.{params['cloudlab_project']}."
            f"{params.get('cloudlab_domain') or AUTHORS_DOMAIN}")


def check_cluster_names(project, claim, params: Mapping[str, Any], placement) -> None:
    """Refuse a run whose configs would name hosts outside its cluster, before anything runs.

    The configs name each server and client ``<node>.<experiment>.<project>.<domain>`` (`config_host`). Where the
    cluster records its CloudLab experiment (an import), each of the three must be the recorded one; where a host's SSH target is such a name, the config's name for it must be that target.
    The message names the parameter and what would fix it. Values not set yet are left to the run (`run_configs`
    asks for them).
    """
    cluster = project.hosts.clusters.get(placement.cluster) if placement.cluster else None
    recorded = dict(getattr(cluster, "cloudlab", None) or {})
    where = f"cluster {placement.cluster!r}" if placement.cluster else f"host {placement.control!r}"

    def refuse(param: str, value: str, right: str, why: str):
        raise ConfigError(f"{claim.key}: the configs would name hosts outside {where}: {why}; -p {param} {value} "
                          f"is not the cluster's {right}: leave -p {param} out (the cluster's is used) or give "
                          f"-p {param} {right}")

    for param, key in CLOUDLAB_PARAMETERS[:3]:   # the names in the hosts' names (the user logs in, names none)
        value = str(params.get(param) or "")
        if key == "domain":
            value = value or AUTHORS_DOMAIN
        if recorded.get(key) and (value or key == "domain") and value.lower() != recorded[key].lower():
            example = config_host(placement.node(next(iter(placement.roles.get("server", ())), placement.control)),
                                  params)
            refuse(param, value, recorded[key],
                   f"the CloudLab {key} is {recorded[key]}, and the configs would say {value} ({example})")
    for role in ("server", "client"):
        for host in placement.roles.get(role, ()):
            spec = project.hosts.hosts.get(host)
            if spec is None or spec.is_local:
                continue
            user, target, _ = spec.target()
            node = placement.node(host)
            parts = target.lower().split(".")
            if not (params.get("cloudlab_experiment") and params.get("cloudlab_project")):
                break
            if len(parts) < 5 or parts[0] != node.lower():   # an alias or an address: nothing to compare with
                continue
            named = config_host(node, params)
            if named.lower() == target.lower():
                continue
            got = [node, str(params["cloudlab_experiment"]), str(params["cloudlab_project"]),
                   str(params.get("cloudlab_domain") or AUTHORS_DOMAIN)]
            want = [parts[0], parts[1], parts[2], ".".join(parts[3:])]
            for i, param in ((1, "cloudlab_experiment"), (2, "cloudlab_project"), (3, "cloudlab_domain")):
                if got[i].lower() != want[i]:
                    refuse(param, got[i], want[i], f"its host {host} is {target}, and the configs would name {named}")


def _need_cloudlab_parameters(claim, params: Mapping[str, Any], placement) -> None:
    for name in ("cloudlab_user", "cloudlab_experiment", "cloudlab_project"):
        if not str(params.get(name) or "").strip():
            where = (f"cluster {placement.cluster!r} records no CloudLab experiment (a cluster imported with "
                     f"`reprobook cloudlab import` does)" if placement.cluster else "a single host has no experiment")
            raise ConfigError(f"{claim.key}: set the parameter {name} (the configs name the CloudLab project, "
                              f"experiment and user, and {where}), e.g. -p {name} VALUE")


@generator("pequin.configs", check=check_cluster_names)
def run_configs(project, claim, params: Mapping[str, Any], placement, *, repository: str = "pequin-artifact",
                parameter: str = "configs", facts: Mapping | None = None) -> list[RunInput]:
    """The configs a live run of a Pequin claim runs: each authors' file named by the claim's ``parameter``
    (a path in ``repository``, at the paper's pinned commit), derived for the run's placement and parameters.

    The claim's parameters ``cloudlab_project``, ``cloudlab_experiment``, ``cloudlab_user`` (on a cluster imported
    from a CloudLab manifest: the cluster's, unless given), ``output_dir`` and ``src_dir`` fill the guide's six
    fields (``output_dir`` and ``src_dir`` relative to the control host's workdir unless absolute);
    ``cloudlab_domain`` (when set) the host formats' domain; ``duration_s``, ``ramp_s`` and ``runs`` (0: the
    config's own) are applied when the claim has them. The servers are the placement's role ``server``, by their
    names inside the cluster. A run whose configs would name hosts outside its cluster is refused
    (`check_cluster_names`).
    """
    from reprobook.core import artifacts
    paper = project.paper(claim.paper)
    if repository not in paper.repositories:
        raise ConfigError(f"{claim.key}: inputs.options.repository names no repository of the paper: {repository!r}",
                          file=paper.path)
    repo = paper.repositories[repository]
    _need_cloudlab_parameters(claim, params, placement)
    check_cluster_names(project, claim, params, placement)
    nodes = placement.node_roles()
    workdir = project.hosts.host(placement.control).workdir.rstrip("/")
    where = lambda p: p if str(p).startswith("/") else f"{workdir}/{p}"  # noqa: E731
    exp = ExperimentParams(project=params["cloudlab_project"], experiment=params["cloudlab_experiment"],
                           user=params["cloudlab_user"], local_output_dir=where(params["output_dir"]),
                           src_dir=where(params["src_dir"]), duration_s=params.get("duration_s") or None,
                           ramp_s=params.get("ramp_s") or None, runs=params.get("runs") or None,
                           cluster_domain=params.get("cloudlab_domain") or None)
    given = [c for c in (params.get("clients") or ()) if int(c) != 0]
    if given:
        raise ConfigError(f"{claim.key}: on the paper's cluster each config runs its own client settings; "
                          f"-p clients ({', '.join(map(str, given))}) is for a cluster of ours (-p scale rehearsal)")
    files = params[parameter]
    files = [files] if isinstance(files, str) else list(files)
    names = input_names(files)
    out, made = [], []
    for path in files:
        ref = artifacts.ArtifactRef(repo.slug, repo.commit, str(path))
        gen = generate(artifacts.resolve(ref, project.settings), exp, {"server": nodes.get("server", ())},
                       name=f"{names[path]}.json")
        out.append(RunInput(gen.name, gen.text().encode(), source=str(ref), diff=gen.diff(),
                            point={parameter: str(path)}))
        made.append((names[path], gen.config))
    # the comparison systems' configuration, in the CloudLab user's home as the authors' configs have it
    out += preparations(project, repo, made, servers=list(nodes.get("server", ())), clients=list(nodes.get("client", ())),
                        root=f"/users/{params['cloudlab_user']}", src_dir=where(params["src_dir"]),
                        batch_size=params.get("batch_size") or None,
                        postgres_version=int(params.get("postgres_version") or 15),
                        bftsmart_dir=f"/users/{params['cloudlab_user']}")
    return out


def input_names(paths: Sequence[str]) -> dict[str, str]:
    """A file name (without ``.json``) for each authors' config among ``paths``, unique among them: the file's
    own stem where no other has it, else the fewest folders above it that tell them apart, joined with ``-``
    (``Point-100`` and ``with_condition-100`` for the point-scan configs, which are all ``<rows>.json``).
    The harness names a point's outputs after it (``<name>-<series>-<point>.json``)."""
    parts = {str(p): [x.replace(" ", "_") for x in Path(str(p)).with_suffix("").parts] for p in paths}
    out = {}
    for path, mine in parts.items():
        for k in range(1, len(mine) + 1):
            name = "-".join(mine[-k:])
            if not any(o[-k:] == mine[-k:] for p, o in parts.items() if p != path):
                break
        out[path] = name
    return out


# --------------------------------------------------------------------------- the harness on a cluster of ours

SINGLE_THREADED = {"multi_threading": False, "mainThreadDispatching": False, "parallel_reads": False,
                   "parallel_queries": False}
"""``replication_protocol_settings`` that make a Pesto server process requests on one thread: the
harness passes them as ``--indicus_multi_threading`` ``--indicus_mainThreadDispatching``
``--indicus_parallel_reads`` and ``--pequin_parallel_queries`` (``lib/indicus_codebase.py``)."""
HOST_FORMATS = {"server_host_format_str": "%s%.0s%.0s", "client_host_format_str": "client-%d-%d%.0s%.0s"}
"""Host name formats that give the bare names (``us-east-1-0``, ``client-0-1``): the harness formats them
with the experiment and project names too, which ``%.0s`` takes and prints as nothing."""


@dataclass(frozen=True)
class ClusterRun:
    """How the artifact's harness runs one client setting on a cluster placed by reprobook.

    ``root`` is one directory used on every host (the harness has one path per cluster): the
    binaries (``bin-nfs``), the experiment directories, keys and data live under it; ``src_dir``
    and ``output_dir`` are the control host's checkout and where it collects outputs.
    ``pin_cores``: the pin lists are cut to the CPUs the smallest host has (0: no pinning).
    ``shared_network``: the hosts are one machine (a loopback cluster), so replicas that each load the whole
    database load it on the same CPUs, one after another in effect (see `for_cluster`).
    ``hotstuff_threads``: Peloton-HS's ``client_threads_per_process`` (0: one, as for the other systems).
    """

    user: str
    root: str
    src_dir: str
    output_dir: str
    servers: Sequence[str]
    client_nodes: int
    clients: int
    processes_per_node: int
    duration_s: int
    ramp_s: int
    load_s: int
    keys: int
    tables: int | None = None
    server_port: int = 7087
    pin_cores: int = 0
    single_threaded: bool = False
    labels: Mapping[str, Any] | None = None
    warehouses: int | None = None
    fault_tolerance: int = 0
    shards: int = 1
    shared_network: bool = False
    hotstuff_threads: int = 0


REPLICAS = {"pequin": (5, 1), "indicus": (5, 1), "tapir": (2, 1), "peloton-smr": (3, 1), "hotstuff": (3, 1),
            "bftsmart": (3, 1)}
"""Replicas a shard of each protocol needs for ``f`` faults: ``a * f + b`` (Pesto and Basil 5f+1, TAPIR 2f+1, the
BFT state machine replication of Peloton-HS, Peloton-Smart, TxHotstuff and TxBFTSmart 3f+1)."""


def for_cluster(original: str | Path | Mapping, run: ClusterRun, *, name: str | None = None) -> GeneratedConfig:
    """An authors' config made to run through their harness on ``run``'s cluster, at its sizes.

    One shard (``run.shards``; 0 keeps the config's own, the harness placing shard ``g`` on server ``g`` modulo
    their number) on ``run.servers`` with no replication (``fault_tolerance`` 0, or ``run.fault_tolerance``
    when a claim needs replicas: the servers must then be at least the protocol's 5f+1 or 2f+1),
    ``run.client_nodes`` client nodes per server, one client setting; the authors' paths (their CloudLab home, keys,
    data, ``/mnt/extra``) moved under ``run.root``; bare host names (the cluster's, as the control
    host's SSH config knows them); durations, table sizes, TPC-C's warehouses and port from ``run``; the pin lists cut
    to the hosts' CPUs; with ``single_threaded`` the server's request processing on one thread.
    What is not about the cluster or the sizes stays the authors'.
    """
    try:   # the system the config runs (its protocol and settings, which the derivation leaves as they are)
        which = systems.system_of(original if isinstance(original, Mapping) else load_config(original),
                                  source=str(name or original))
    except ConfigError:
        which = None
    # the harness starts at most servers x client_nodes_per_server x processes client processes (more are left out,
    # and the point would have fewer clients than it says): when the point asks for more, each node runs more. The
    # Postgres systems run the harness's server on the first server only
    used = 1 if which is not None and which.protocol == "pg" else len(run.servers)
    processes = max(run.processes_per_node, -(-run.clients // max(1, used * run.client_nodes)))
    threads = 1
    if run.hotstuff_threads and which is not None and which.preconfigure == "hotstuff":
        # the artifact's HotStuff proposes a block only when a command arrives (its batch timer is never started;
        # see the rehearsal patch hotstuff-batch-timer.patch) and commits a block once later blocks extend it; "HS
        # without batch timer cannot run with 1 client", the authors' configs note, and their curve starts at 10
        threads = run.hotstuff_threads
    base = generate(original, ExperimentParams(
        project="local", experiment="local", user=run.user, local_output_dir=run.output_dir, src_dir=run.src_dir,
        remote_bin_dir=f"{run.root}/bin-nfs", clients=(ClientSetting(run.clients, processes, threads),),
        duration_s=run.duration_s, ramp_s=run.ramp_s, runs=1, labels=run.labels), name=name)
    config, source = copy.deepcopy(dict(base.config)), base.source
    groups = _groups(config, source)
    if not run.servers:
        raise ConfigError("the placement gives no server", file=source, key="server_names")
    servers = list(run.servers)
    in_series = "server_names" in groups[0]
    config["server_names"] = [servers] if in_series else servers
    first = (config["server_names"][0] if in_series else config["server_names"])[0]
    region = re.sub(r"-[0-9]+$", "", first)
    config["server_regions"] = [{region: servers}] if isinstance(config.get("server_regions"), list) else {region: servers}
    latencies = config.get("region_rtt_latencies")
    if isinstance(latencies, Mapping) and region not in latencies:
        config["region_rtt_latencies"] = {**latencies, region: {region: 0}}
    f = int(run.fault_tolerance)
    if which is not None and which.preconfigure in ("hotstuff", "bftsmart"):
        f = max(f, 1)   # the authors' HotStuff and BFT-SMaRt configurations have four replicas: 3f+1 with f = 1
    if which is not None and which.protocol == "pg":
        # one database server runs the harness's "server" process (it creates the tables and loads the data); a
        # Postgres-PB backup is made by the preparation, not by the harness, as in the authors' configs
        servers = servers[:1]
        config["server_names"] = [servers] if in_series else servers
        config["server_regions"] = ([{region: servers}] if isinstance(config.get("server_regions"), list)
                                    else {region: servers})
    if f:
        protocols = config.get("replication_protocol")
        for protocol in set(protocols if isinstance(protocols, list) else [protocols]):
            if protocol not in REPLICAS:
                raise ConfigError(f"fault_tolerance {f}: a cluster of ours replicates only "
                                  f"{', '.join(sorted(REPLICAS))}, not {protocol!r}", file=source,
                                  key="replication_protocol")
            a, b = REPLICAS[protocol]
            if len(servers) < a * f + b:
                raise ConfigError(f"fault_tolerance {f}: {protocol} needs {a * f + b} replicas ({a}f+{b}) in its "
                                  f"shard, and the placement gives {len(servers)} server(s): "
                                  f"{', '.join(servers)}", file=source, key="server_names")
    config["fault_tolerance"] = f
    for key in ("num_shards", "num_groups"):
        if key in config and run.shards:   # 0: the config's own shards, each a process on the servers in turn
            config[key] = [run.shards] * len(config[key]) if isinstance(config[key], list) else run.shards
    config["client_nodes_per_server"] = run.client_nodes
    if (which is not None and which.preconfigure == "bftsmart") or "bftsmart_codebase_dir" in config:
        config["bftsmart_codebase_dir"] = f"{run.root}/bftsmart"   # where the preparation puts java-config and jars
    config.update(HOST_FORMATS)
    config["server_load_time"] = run.load_s
    if run.shared_network and which is not None and which.preconfigure in ("hotstuff", "bftsmart"):
        # every replica of Peloton-HS and Peloton-Smart loads the whole database; on one machine they share its
        # CPUs (four replicas of TPC-C took 56 s here, one 10 to 20 s). A client whose first transaction times out
        # while the replicas still load starts its next one, and the leader stops on the authors' assertion
        # ("Call terminate last on leader?"): the clients wait for all of them
        config["server_load_time"] = run.load_s * len(servers)
    config["server_port"] = run.server_port
    config.update({"num_experiment_runs": 1, "max_retries": 0, "server_emulate_wan": False,
                   "base_remote_exp_directory": f"{run.root}/experiments", "base_mounted_fs_path": run.root,
                   "remote_bin_directory_nfs_enabled": False})
    config.pop("src_commit_hash", None)  # the harness would check that commit out in the control host's checkout
    # before each point the harness runs `make -j 8` in src: one target (built already, so up to date) instead
    # of the Makefile's default, which would build every test binary too
    config["make_args"] = "store/server"
    for key in ("benchmark_schema_file_path", "tpcc_data_file_path"):
        if isinstance(config.get(key), str):
            config[key] = f"{run.root}/data/{Path(config[key]).name}"
    if "num_keys_per_table" in config or run.tables is not None:
        config["num_keys_per_table"] = run.keys
        if run.tables is not None:
            config["num_tables"] = run.tables
    if "client_num_keys" in config:
        config["client_num_keys"] = run.keys
    if run.warehouses and "tpcc_num_warehouses" in config:   # the TPC-C data the control host generates for them
        config["tpcc_num_warehouses"] = run.warehouses
    for key in ("pin_server_processes", "pin_client_processes"):
        if isinstance(config.get(key), list):
            config[key] = [c for c in config[key] if isinstance(c, int) and c < run.pin_cores]
    protocols = config.get("replication_protocol")
    threaded = set(protocols if isinstance(protocols, list) else [protocols]) & {"pequin", "indicus"}
    settings = config.get("replication_protocol_settings")
    for s in (settings if isinstance(settings, list) else [settings]):
        if not isinstance(s, dict):
            continue
        if isinstance(s.get("key_path"), str):
            s["key_path"] = f"{run.root}/keys/{Path(s['key_path']).name}"
        if run.single_threaded and threaded:  # Pesto's and Basil's request threads; TAPIR has no such settings
            s.update(SINGLE_THREADED)
    _check_shape(config, groups, source)
    return GeneratedConfig(name=base.name, source=source, original=base.original, config=config,
                           changes=tuple(_changes(base.original, config)), warnings=base.warnings)


SQL_DATA = "sql-data.txt"
"""The input naming the SQL benchmarks' data a run's configs load: a line ``<benchmark> <generator arguments>`` each
(`sql_data`), which the data step reads."""
_GENERATOR_ARGS = {"tpcc-sql": ("tpcc", lambda c: "-num_warehouses=%d" % int(c.get("tpcc_num_warehouses", 20))),
                   "auctionmark-sql": ("auctionmark", lambda c: "--scale_factor=%s" % float(c.get("scale_factor", 1))),
                   "seats-sql": ("seats", lambda c: "--scale_factor=%d" % int(c.get("scale_factor", 1)))}


def sql_data(configs: Sequence[Mapping[str, Any]]) -> str:
    """The SQL benchmarks the ``configs`` load, each once with the arguments its generator takes from their fields
    (TPC-C: ``tpcc_num_warehouses``; Auctionmark and Seats: ``scale_factor``), a line ``<benchmark> <arguments>``
    each in name order; empty when none loads SQL data. Two configs of one benchmark with different sizes cannot
    share its one data directory: refused."""
    seen: dict[str, str] = {}
    for config in configs:
        kind = _GENERATOR_ARGS.get(config.get("benchmark_name"))
        if kind is None:
            continue
        bench, args = kind[0], kind[1](config)
        if seen.setdefault(bench, args) != args:
            raise ConfigError(f"the run's configs load {bench} at two sizes ({seen[bench]}, {args}); its data has one "
                              f"directory per run: run them separately", key="benchmark_name")
        seen[bench] = args
    return "".join(f"{bench} {args}\n" for bench, args in sorted(seen.items()))


@generator("pequin.cluster")
def cluster_configs(project, claim, params: Mapping[str, Any], placement, *, config: str | None = None,
                    parameter: str = "configs", repository: str = "pequin-artifact", sweep: str = "clients",
                    facts: Mapping | None = None, labels: Mapping[str, Any] | None = None) -> list[RunInput]:
    """One config per point of the claim's sweep, from the authors' configs, for the harness on the run's
    placement (`for_cluster`): ``<name>-c<clients>.json`` for each config the claim's ``parameter`` names (or
    the one ``config``; ``<name>`` by `input_names`) and each client count of its ``sweep`` parameter, each
    made for its point of the sweep (the step reads ``$RB_INPUTS/$RB_INPUT``).

    The claim's parameters: ``processes_per_node``, ``duration_s``, ``ramp_s``, ``load_s``, ``keys``,
    ``tables``, ``warehouses``, ``fault_tolerance`` and ``shards`` (optional; ``shards`` 0: each config's own), ``server_port``, ``small_host`` (one request thread); ``root`` and ``output_dir`` relative to the
    control host's workdir unless absolute. The login user and the pinning come from the hosts' ``facts``.
    """
    from reprobook.core import artifacts
    paper = project.paper(claim.paper)
    repo = paper.repositories.get(repository)
    if repo is None:
        raise ConfigError(f"{claim.key}: inputs.options.repository names no repository of the paper: {repository!r}",
                          file=paper.path)
    workdir = project.hosts.host(placement.control).workdir.rstrip("/")
    where = lambda p: p if str(p).startswith("/") else f"{workdir}/{p}"  # noqa: E731
    facts = dict(facts or {})
    members = [h for h in placement.hosts if h != placement.control] or list(placement.hosts)
    cpus = [int(facts[h]["cpus"]) for h in members if facts.get(h, {}).get("cpus")]
    users = {facts[h].get("user") for h in placement.hosts if facts.get(h, {}).get("user")}
    if len(users) > 1:
        raise ConfigError(f"{claim.key}: the harness logs in to every host as one user, but the hosts log in as "
                          f"{', '.join(sorted(users))}; give them one user in hosts.yaml or ~/.ssh/config")
    servers = list(placement.node_roles().get("server", ()))   # the names the harness reaches them by
    client_hosts = list(placement.node_roles().get("client", ()))
    if not servers or not client_hosts or len(client_hosts) % len(servers):
        raise ConfigError(f"{claim.key}: the harness needs the same number of client hosts for each server "
                          f"(here {len(servers)} server(s), {len(client_hosts)} client host(s))")
    nodes = len(client_hosts) // len(servers)
    expected = [f"client-{i}-{j}" for i in range(len(servers)) for j in range(nodes)]
    if sorted(client_hosts) != sorted(expected):
        raise ConfigError(f"{claim.key}: the harness names client hosts client-<server>-<node>: this placement "
                          f"needs {', '.join(expected)}, not {', '.join(client_hosts)}")
    files = [config] if config else params[parameter]
    originals = []
    for path in ([files] if isinstance(files, str) else files):
        ref = artifacts.ArtifactRef(repo.slug, repo.commit, str(path))
        original = artifacts.resolve(ref, project.settings)
        # the system each config runs (or the one the labels name) must fit the placement: refused before anything starts
        named = (labels or {}).get("system")
        which = systems.system(named, claim=claim.key) if named else systems.system_of(load_config(original),
                                                                                      source=str(path))
        systems.check_placement(claim.key, which.name, placement.roles)
        originals.append((str(path), ref, original))
    user = users.pop() if users else "root"
    names = input_names([path for path, _, _ in originals])
    points = params[sweep]
    if any(int(c) <= 0 for c in ([points] if isinstance(points, int) else points)):
        raise ConfigError(f"{claim.key}: a run on a cluster of ours sets its client counts: give -p {sweep} "
                          f"(e.g. [2, 4]); 0 (each config's own settings) is for the paper's cluster")
    out, made = [], []
    for (path, ref, original), clients in itertools.product(originals, [points] if isinstance(points, int) else points):
        run = ClusterRun(user=user, root=where(params["root"]),
                         src_dir=where(params["src_dir"]), output_dir=where(params["output_dir"]),
                         servers=servers, client_nodes=nodes, clients=int(clients),
                         processes_per_node=int(params["processes_per_node"]), duration_s=int(params["duration_s"]),
                         ramp_s=int(params["ramp_s"]), load_s=int(params["load_s"]), keys=int(params["keys"]),
                         tables=int(params["tables"]) if params.get("tables") else None,
                         server_port=int(params["server_port"]), pin_cores=min(cpus, default=0),
                         single_threaded=bool(params.get("small_host")), labels=labels,
                         warehouses=int(params["warehouses"]) if params.get("warehouses") else None,
                         fault_tolerance=int(params.get("fault_tolerance") or 0),
                         shards=int(params["shards"]) if params.get("shards") is not None else 1,
                         shared_network=bool(params.get("shared_network")),
                         hotstuff_threads=int(params.get("hotstuff_threads") or 0))
        gen = for_cluster(original, run, name=f"{names[path]}-c{int(clients)}.json")
        made.append(gen.config)
        out.append(RunInput(gen.name, gen.text().encode(), source=str(ref), diff=gen.diff(),
                            point={sweep: int(clients), **({} if config else {parameter: path})}))
    wanted = sql_data(made)
    if wanted:   # the data step generates these once and ships them
        out.append(RunInput(SQL_DATA, wanted.encode(), source="the run's configs (benchmark_name and their sizes)"))
    out += preparations(project, repo, [(names[path], load_config(original)) for path, _, original in originals],
                        servers=servers, clients=client_hosts, root=where(params["root"]),
                        src_dir=where(params["src_dir"]), batch_size=params.get("batch_size") or None,
                        postgres_version=int(params.get("postgres_version") or 15),
                        shared_network=bool(params.get("shared_network")),
                        postgres_memory={k: str(params.get(f"postgres_{k}") or "")
                                         for k in ("shared_buffers", "work_mem")})
    return out


PREPARED_SOURCES = {"client": "src/store/postgresstore/client.cc", "server": "src/store/postgresstore/server.cc"}
"""The Postgres client's and server's sources, whose connection string the placement sets (inputs
``postgresstore-<name>.cc``, put in place by the build step)."""


def preparations(project, repo, configs: Sequence[tuple[str, Mapping]], *, servers: Sequence[str],
                 clients: Sequence[str], root: str, src_dir: str, batch_size: int | None = None,
                 postgres_version: int = 15, bftsmart_dir: str | None = None,
                 shared_network: bool = False, postgres_memory: Mapping[str, str] | None = None) -> list[RunInput]:
    """The inputs that prepare the comparison systems among ``configs`` (name, config) for the placement: for each
    config whose system needs it, ``<name>.prepare.sh`` (`reprobook.papers.pesto.systems.prepare_script`), which
    the harness step runs on the control host before that config's point; and when a config runs Postgres, the
    client's and the server's sources with the placement's connection string (``postgresstore-client.cc``,
    ``postgresstore-server.cc``, each with its diff against the authors'), which the build step puts in place.

    The authors' files come from the artifact at the paper's pinned commit: HotStuff's ``config_pghs`` and
    BFT-SMaRt's ``java-config``. ``bftsmart_dir``: where the configs' ``bftsmart_codebase_dir`` points (the
    CloudLab home on the guide's cluster; ``<root>/bftsmart`` by default, as `for_cluster` sets it).
    ``shared_network``: the hosts share one network stack (a loopback cluster), so HotStuff's replicas get ports of
    their own (`reprobook.papers.pesto.systems.hotstuff_config`). ``postgres_memory``: ``shared_buffers`` and
    ``work_mem`` in place of the authors' (sized for an m510's 64 GB), e.g. ``{"shared_buffers": "256MB"}``."""
    from reprobook.core import artifacts
    made: dict[str, str] = {}
    out: list[RunInput] = []
    postgres = None

    def authors(path: str) -> dict[str, bytes]:
        d = artifacts.resolve(artifacts.ArtifactRef(repo.slug, repo.commit, path), project.settings)
        return {str(f.relative_to(d)): f.read_bytes() for f in sorted(d.rglob("*")) if f.is_file()}

    for name, config in configs:
        which = systems.system_of(config, source=f"{name}.json")
        if not which.preconfigure:
            continue
        if which.name not in made:
            hosts = list(dict.fromkeys(list(servers) + list(clients)))
            addresses = {h: systems.placeholder(h) for h in hosts}
            if which.preconfigure == "hotstuff":
                files = systems.hotstuff_files({k: v.decode() for k, v in authors("src/scripts/config_pghs").items()},
                                               servers, remote_dir=f"{root}/{systems.HOTSTUFF_DIR}",
                                               block_size=batch_size, own_ports=shared_network)
            elif which.preconfigure == "bftsmart":
                java_config = systems.tls_work_around(authors(f"{systems.BFTSMART_LIBRARY}/java-config"))
                files = systems.bftsmart_files(java_config, servers, clients,
                                               addresses)
            else:
                postgres = systems.PostgresPlacement(primary=servers[0], addresses=addresses, clients=list(clients),
                                                     root=root, backup=servers[1] if which.pg_replicated else None,
                                                     version=postgres_version,
                                                     settings={k: f"'{v}'" for k, v in (postgres_memory or {}).items()
                                                               if v})
                files = systems.postgres_files(postgres)
            made[which.name] = systems.prepare_script(which, servers=servers, clients=clients, root=root,
                                                      src_dir=src_dir, files=files, bftsmart_dir=bftsmart_dir)
        out.append(RunInput(f"{name}.prepare.sh", made[which.name].encode(),
                            source=f"reprobook.papers.pesto.systems: {which.name} for this placement"))
    if postgres is not None:
        connection = systems.postgres_connection(postgres, host=postgres.primary)
        for part, path in PREPARED_SOURCES.items():
            d = artifacts.resolve(artifacts.ArtifactRef(repo.slug, repo.commit, path), project.settings)
            original = d.read_text()
            patched = systems.client_connection_patch(connection, original, path=path)
            diff = "".join(difflib.unified_diff(original.splitlines(keepends=True), patched.splitlines(keepends=True),
                                                fromfile=f"{path} (the authors')", tofile=f"{path} (this placement)"))
            out.append(RunInput(f"postgresstore-{part}.cc", patched.encode(), source=path, diff=diff))
    return out
