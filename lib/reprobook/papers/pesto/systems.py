"""The systems Pesto is compared with, and the configuration each needs before the harness runs it.

The Pequin artifact runs every system through one harness (``run_multiple_experiments.py``), but
three of them need files prepared on the servers first, which the guide has an evaluator make by
hand for the authors' own host names:

- **Peloton-HS** (Peloton replicated with HotStuff): ``src/scripts/config_pghs/shard0/`` holds
  ``hotstuff.gen.conf`` (one ``replica = <host>:<port>;<port>, <key>, <tls>`` line per replica) and
  a key file per replica; ``pghs_config_remote.sh`` copies them to the hosts listed in
  ``hosts_pg_smr`` and writes the directory they land in into a header compiled into the binaries
  (``libhotstuff/examples/remote_config_dir.h``). :func:`hotstuff_files` writes the same files for
  the placement's servers.
- **Peloton-Smart** (Peloton replicated with BFT-SMaRt): ``bftsmart-configs/one_step_config.sh``
  resolves every server and client name to an address, writes BFT-SMaRt's ``hosts.config`` and a
  ``system.config`` bound to each host's address under ``library/remote/java-config-<host>/``, and
  copies them to the hosts. :func:`bftsmart_files` computes that tree from the placement and the
  hosts' addresses (no name lookup).
- **Postgres** and **Postgres-PB**: ``postgres_service.sh`` (one server) and
  ``postgres_primary*.sh`` / ``postgres_replica.sh`` (a primary and a streaming-replication backup)
  set up PostgreSQL 12 on the servers; the client's connection string is set in ``client.cc``.
  :func:`postgres_files` writes the set-up scripts for Debian's PostgreSQL 15, listening only on
  the server's cluster address and admitting only the cluster's addresses, with a password made
  on the primary's host (:data:`PASSWORD_FILE`) that no file written here contains.

:data:`SYSTEMS` names every system of the Pesto and Basil claims and how many server hosts it
needs; :func:`check_placement` refuses a placement that cannot run one, before anything starts.
Everything here is a pure function of the authors' files and the placement: the tests compare
its output with what the authors' own scripts write for their own host names.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Mapping, Sequence

from reprobook.errors import ConfigError

PASSWORD_FILE = "pg/password"
"""Where, under the run's root on a database server, the generated Postgres password is kept (mode 0600).
It is made on the primary's host and copied from there to the hosts that need it (the backup, the
clients' ``pgpass``), never through the machine that drives the run."""


@dataclass(frozen=True)
class System:
    """One system of the comparison, as the guide's tables name it.

    ``protocol`` is the configs' ``replication_protocol``; ``smr_mode`` Peloton's ``SMR_mode``
    (0 unreplicated, 1 HotStuff, 2 BFT-SMaRt); ``pg_replicated`` the Postgres configs' flag.
    ``servers`` is the number of server hosts it needs at least and ``why`` says why.
    ``preconfigure`` names the files it needs prepared (``hotstuff``, ``bftsmart``, ``postgres``).
    ``runs_here``: whether it can be installed on a Debian 12 host (CockroachDB's release binary
    cannot be downloaded here).
    """

    name: str
    protocol: str
    servers: int
    why: str
    smr_mode: int | None = None
    pg_replicated: bool | None = None
    preconfigure: str = ""
    runs_here: bool = True


SYSTEMS: dict[str, System] = {s.name: s for s in (
    System("Pesto", "pequin", 1, "one shard; the paper's runs have 6 replicas (5f+1, f = 1), a rehearsal runs f = 0"),
    System("Pesto-unreplicated", "pequin", 1, "one server, fault_tolerance 0"),
    System("Peloton", "peloton-smr", 1, "one server (SMR_mode 0: no replication)", smr_mode=0),
    System("Peloton-HS", "peloton-smr", 4, "HotStuff's 3f+1 replicas with f = 1 (the four keys of config_pghs)",
           smr_mode=1, preconfigure="hotstuff"),
    System("Peloton-Smart", "peloton-smr", 4, "BFT-SMaRt's 3f+1 replicas with f = 1 (system.servers.num = 4 and "
           "the four keys of java-config)", smr_mode=2, preconfigure="bftsmart"),
    System("Postgres", "pg", 1, "one database server", pg_replicated=False, preconfigure="postgres"),
    System("Postgres-PB", "pg", 2, "a primary and its streaming-replication backup on two servers",
           pg_replicated=True, preconfigure="postgres"),
    System("Basil", "indicus", 1, "one shard; the paper's runs have 6 replicas (5f+1, f = 1), a rehearsal runs f = 0"),
    System("TAPIR", "tapir", 1, "one shard; the paper's runs have 3 replicas (2f+1, f = 1), a rehearsal runs f = 0"),
    System("TxHotstuff", "hotstuff", 4, "HotStuff's 3f+1 replicas per shard with f = 1 (Basil's baseline)",
           preconfigure="hotstuff"),
    System("TxBFTSmart", "bftsmart", 4, "BFT-SMaRt's 3f+1 replicas per shard with f = 1 (Basil's baseline)",
           preconfigure="bftsmart"),
    System("CockroachDB", "crdb", 3, "three nodes per shard (the authors' sharding runs)", runs_here=False),
)}


def system(name: str, *, claim: str = "") -> System:
    """The system called ``name``, or a `ConfigError` naming the claim and the systems known."""
    try:
        return SYSTEMS[name]
    except KeyError:
        where = f"{claim}: " if claim else ""
        raise ConfigError(f"{where}the config names an unknown system {name!r}; the systems of the Pesto chapter are "
                          f"{', '.join(SYSTEMS)}") from None


def system_of(config: Mapping, *, source: str = "the config") -> System:
    """The system an authors' experiment config runs, from its protocol and settings."""
    def first(value):
        while isinstance(value, list) and value:
            value = value[0]
        return value
    protocol = first(config.get("replication_protocol"))
    settings = first(config.get("replication_protocol_settings")) or {}
    if protocol == "peloton-smr":
        mode = settings.get("SMR_mode") if isinstance(settings, Mapping) else None
        by_mode = {s.smr_mode: s for s in SYSTEMS.values() if s.smr_mode is not None}
        if mode not in by_mode:
            raise ConfigError(f"{source}: SMR_mode {mode!r} is none of Peloton's (0, 1, 2)",
                              file=source, key="replication_protocol_settings[0].SMR_mode")
        return by_mode[mode]
    if protocol == "pg":
        return SYSTEMS["Postgres-PB" if config.get("pg_replicated") else "Postgres"]
    if protocol == "pequin":
        return SYSTEMS["Pesto-unreplicated" if first(config.get("fault_tolerance")) == 0 else "Pesto"]
    for s in SYSTEMS.values():
        if s.protocol == protocol:
            return s
    raise ConfigError(f"{source}: replication_protocol {protocol!r} is none of the comparison's systems",
                      file=source, key="replication_protocol")


def check_placement(claim: str, name: str, roles: Mapping[str, Sequence[str]]) -> System:
    """Refuse, before anything starts, a placement on which system ``name`` cannot run.

    The message names the claim, the system, the role and the number of hosts it needs.
    """
    s = system(name, claim=claim)
    servers = list(roles.get("server") or ())
    if not servers:
        raise ConfigError(f"{claim}: {s.name} needs the role 'server' ({s.servers} host(s) at least: {s.why}), "
                          f"and the placement has no server")
    if len(servers) < s.servers:
        raise ConfigError(f"{claim}: {s.name} needs {s.servers} server hosts ({s.why}); the placement gives "
                          f"{len(servers)} ({', '.join(servers)})")
    if not roles.get("client"):
        raise ConfigError(f"{claim}: {s.name} needs the role 'client' (one host at least), and the placement has none")
    return s


# --------------------------------------------------------------------------- Peloton-HS: HotStuff

HOTSTUFF_DIR = "config_pghs"
"""The directory ``pghs_config_remote.sh`` copies to every replica, and the one the binaries read."""
_REPLICA = re.compile(r"^(?P<key>replica\s*=\s*)(?P<host>[^:,\s]+):(?P<ports>[^,\s]+)(?P<rest>\s*,.*)$")


def hotstuff_config(authors: str, servers: Sequence[str], *, addresses: Mapping[str, str] | None = None,
                    block_size: int | None = None, source: str = "hotstuff.gen.conf",
                    own_ports: bool = False) -> str:
    """``hotstuff.gen.conf`` for ``servers``: the i-th ``replica`` line names the i-th server (its address
    when ``addresses`` has one: the replicas look the name up themselves), keeps the authors' ports and
    keys; ``block_size`` replaces ``block-size``. Every other line stays as it is.

    ``own_ports``: the i-th replica's peer and client ports are the authors' plus i. salticidae listens on every
    address (``INADDR_ANY``, ``conn.cpp``) whatever the replica line names, so replicas whose hosts share one
    network stack (a loopback cluster) cannot all take the same ports. The replicas reach each other by the ports
    of their lines; Pequin's servers talk to their replica in process and never use the client port."""
    lines = authors.splitlines(keepends=True)
    replicas = [i for i, line in enumerate(lines) if _REPLICA.match(line.rstrip("\n"))]
    if not replicas:
        raise ConfigError(f"{source}: no 'replica = <host>:<ports>, <key>, <tls key>' line", file=source)
    if len(servers) < len(replicas):
        raise ConfigError(f"{source} has {len(replicas)} replicas; the placement gives {len(servers)} server(s) "
                          f"({', '.join(servers)})", file=source, key="replica")
    addresses = addresses or {}
    for k, (i, host) in enumerate(zip(replicas, servers)):
        m = _REPLICA.match(lines[i].rstrip("\n"))
        end = lines[i][len(lines[i].rstrip("\n")):]
        ports = m["ports"]
        if own_ports:
            peer, sep, client = ports.partition(";")
            if not sep or not peer.isdigit() or not client.isdigit():
                raise ConfigError(f"{source}: replica {k} names no '<port>;<client port>' after its host",
                                  file=source, key="replica")
            ports = f"{int(peer) + k};{int(client) + k}"
        lines[i] = f"{m['key']}{addresses.get(host, host)}:{ports}{m['rest']}{end}"
    if block_size is not None:
        if int(block_size) < 1:
            raise ConfigError(f"{source}: the batch size must be at least 1, not {block_size}", file=source,
                              key="block-size")
        found = False
        for i, line in enumerate(lines):
            if line.split("=", 1)[0].strip() == "block-size":
                lines[i] = f"block-size = {int(block_size)}\n"
                found = True
        if not found:
            raise ConfigError(f"{source}: no block-size line to set the batch size in", file=source, key="block-size")
    return "".join(lines)


def hotstuff_files(authors: Mapping[str, str], servers: Sequence[str], *, remote_dir: str,
                   addresses: Mapping[str, str] | None = None, block_size: int | None = None,
                   own_ports: bool = False) -> dict[str, str]:
    """What ``pghs_config_remote.sh`` puts in place, for ``servers``: ``authors`` maps the files of
    ``src/scripts/config_pghs`` (``shard0/hotstuff.gen.conf``, ``shard0/hotstuff.gen-sec<i>.conf``) to
    their text. Returns ``config_pghs/...`` (the main config made by :func:`hotstuff_config`, the key
    files as they are), ``hosts_pg_smr`` (the replicas' hosts, one a line) and
    ``remote_config_dir.h``, the header the binaries are compiled with, naming ``remote_dir``."""
    main = "shard0/hotstuff.gen.conf"
    if main not in authors:
        raise ConfigError(f"src/scripts/{HOTSTUFF_DIR}: no {main} among {', '.join(sorted(authors)) or 'no files'}")
    config = hotstuff_config(authors[main], servers, addresses=addresses, block_size=block_size,
                             source=f"src/scripts/{HOTSTUFF_DIR}/{main}", own_ports=own_ports)
    n = sum(1 for line in authors[main].splitlines() if _REPLICA.match(line))
    out = {f"{HOTSTUFF_DIR}/{path}": text for path, text in sorted(authors.items())}
    out[f"{HOTSTUFF_DIR}/{main}"] = config
    out["hosts_pg_smr"] = "".join(f"{h}\n" for h in servers[:n])
    out["remote_config_dir.h"] = f'#define REMOTE_CONFIG_DIR "{remote_dir.rstrip("/")}/"\n'
    return out


# --------------------------------------------------------------------------- Peloton-Smart: BFT-SMaRt

BFTSMART_LIBRARY = "src/store/bftsmartstore/library"
GLOBAL_PORTS = "7088 7089"
"""The ports ``zw494_gen_bft_conf_files.py`` writes into the library's ``java-config/hosts.config``."""
GROUP_PORTS = "30000 30001"
"""The ports ``zw494_gen_system_config.py`` writes into each group's ``hosts.config``."""
CLIENT_IDS = 7000
"""BFT-SMaRt's ids of clients in ``hosts.config`` start here."""


TLS_DISABLED = ("SSLv3, TLSv1, TLSv1.1, DTLSv1.0, RC4, DES, MD5withRSA, DH keySize < 1024, EC keySize < 224, "
                "3DES_EDE_CBC, anon, ECDH")
"""``jdk.tls.disabledAlgorithms`` as OpenJDK 17 sets it, less ``NULL``: BFT-SMaRt's replicas talk TLS with the
cipher suite ``TLS_ECDHE_ECDSA_WITH_NULL_SHA`` (its ``system.config``), which a JDK refuses while NULL is listed."""


def tls_work_around(java_config: Mapping[str, bytes]) -> dict[str, bytes]:
    """BFT-SMaRt's ``java-config`` with the guide's TLS work-around in its own ``java.security``.

    The guide's troubleshooting has the evaluator take ``NULL`` out of ``jdk.tls.disabledAlgorithms`` in the
    JDK's ``java.security`` (else the replicas fail with "SSLHandshakeException: No appropriate protocol"). Here
    the JDK stays as it is: the line goes into the library's ``java.security``, which the JVM reads on top of the
    JDK's (``-Djava.security.properties``, once the recorded patch ``bftsmart-jvm-options.patch`` has taken the
    quotes off its path), so only BFT-SMaRt's JVMs, on the run's hosts, accept the NULL cipher suite.
    """
    out = dict(java_config)
    text = out.get("java.security", b"").decode()
    if text and not text.endswith("\n"):
        text += "\n"
    text += ("# reprobook: the guide's TLS work-around (NULL cipher suites allowed for BFT-SMaRt's replicas only)\n"
             f"jdk.tls.disabledAlgorithms={TLS_DISABLED}\n")
    out["java.security"] = text.encode()
    return out


def bftsmart_files(java_config: Mapping[str, bytes], servers: Sequence[str], clients: Sequence[str],
                   addresses: Mapping[str, str], *, groups: int = 1) -> dict[str, bytes]:
    """The files ``one_step_config.sh`` writes under ``src/store/bftsmartstore/library``, for this placement.

    ``java_config`` maps the files of the library's ``java-config`` (``system.config``,
    ``hosts.config``, the keys, ...) to their bytes; ``addresses`` gives every server's and client's
    address in the cluster (the authors' scripts look up ``<host>.<experiment>.<project>.<cluster>``).
    The servers are split into ``groups`` groups of equal size (the first line of the authors'
    ``server-hosts``). Returns paths relative to the library:

    - ``java-config/hosts.config``: every server ``i <address> 7088 7089``, every client from id 7000;
    - ``remote/java-config-<host>/java-config/``: a copy of ``java-config`` per host with
      ``system.config``'s ``= auto`` (the bind address) set to the host's address, and for a server
      its group's ``hosts.config`` (``j <address> 30000 30001``);
    - ``host<g>.config``: group ``g``'s ``hosts.config``, also under each client's
      ``java-config/java-config-group-<g>/`` with the client's ``system.config``.

    Unlike the authors' script, every server named is configured: theirs keeps only names that
    contain one of the characters ``: d i g t`` (its test ``[[ $machine =~ [:digit:] ]]`` is a
    bracket expression of those), which their names do and ``server-1`` would not.
    """
    if "system.config" not in java_config:
        raise ConfigError(f"{BFTSMART_LIBRARY}/java-config: no system.config among "
                          f"{', '.join(sorted(java_config)) or 'no files'}")
    system_config = java_config["system.config"].decode()
    if "= auto" not in system_config:
        raise ConfigError(f"{BFTSMART_LIBRARY}/java-config/system.config: no '= auto' (the bind address) to set",
                          file=f"{BFTSMART_LIBRARY}/java-config/system.config", key="system.communication.bindaddress")
    servers, clients = list(servers), list(clients)
    if groups < 1 or not servers or len(servers) % groups:
        raise ConfigError(f"BFT-SMaRt: {len(servers)} server(s) cannot make {groups} group(s) of equal size")
    missing = [h for h in servers + clients if not addresses.get(h)]
    if missing:
        raise ConfigError(f"BFT-SMaRt: no cluster address for {', '.join(missing)} (the configs name addresses, "
                          f"not host names)")
    per_group = len(servers) // groups
    out: dict[str, bytes] = {}
    global_hosts = "".join(f"{i} {addresses[h]} {GLOBAL_PORTS}\n" for i, h in enumerate(servers))
    global_hosts += "".join(f"{CLIENT_IDS + i} {addresses[h]} {GLOBAL_PORTS}\n" for i, h in enumerate(clients))
    out["java-config/hosts.config"] = global_hosts.encode()
    group_hosts = ["".join(f"{j} {addresses[servers[g * per_group + j]]} {GROUP_PORTS}\n" for j in range(per_group))
                   for g in range(groups)]
    for g, text in enumerate(group_hosts):
        out[f"host{g}.config"] = text.encode()
    for i, host in enumerate(servers + clients):
        base = f"remote/java-config-{host}/java-config"
        for name, data in java_config.items():
            out[f"{base}/{name}"] = data
        own_system = system_config.replace("= auto", f"= {addresses[host]}").encode()
        out[f"{base}/system.config"] = own_system
        out[f"{base}/hosts.config"] = global_hosts.encode()
        if i < len(servers):
            out[f"{base}/hosts.config"] = group_hosts[i // per_group].encode()
        else:
            for g, text in enumerate(group_hosts):
                out[f"{base}/java-config-group-{g}/hosts.config"] = text.encode()
                out[f"{base}/java-config-group-{g}/system.config"] = own_system
    return out


# --------------------------------------------------------------------------- Postgres and Postgres-PB

PG_PORT = 5433
"""The port the authors' primary and backup listen on (``postgres_primary.sh``)."""
PG_DATABASE = "db1"
PG_USER = "pequin_user"
PG_REPLICATION_USER = "repuser"
PG_SETTINGS = {
    # postgres_primary2.sh's setting_system (shared_buffers and work_mem sized for an m510's 64 GB)
    "log_statement": "'none'", "log_min_error_statement": "panic", "max_connections": "250",
    "work_mem": "'4GB'", "shared_buffers": "'30GB'", "effective_cache_size": "'4GB'",
    "effective_io_concurrency": "8", "huge_pages": "'try'", "max_locks_per_transaction": "1024",
}
"""``ALTER SYSTEM`` settings of the authors' primary, as they are; :func:`postgres_files` takes overrides."""
PG_DATABASE_SETTINGS = ("DEFAULT_TRANSACTION_ISOLATION TO SERIALIZABLE", "ENABLE_MERGEJOIN TO FALSE",
                        "ENABLE_HASHJOIN TO FALSE", "ENABLE_NESTLOOP TO TRUE")
"""``ALTER DATABASE db1 SET ...`` of ``postgres_primary2.sh`` (``postgres_service.sh`` adds ``lock_timeout = 100``)."""


@dataclass(frozen=True)
class PostgresPlacement:
    """Where the databases run: ``primary`` (and ``backup`` for Postgres-PB) among the servers, each
    host's cluster ``addresses``, the ``clients`` that connect, the run's ``root`` on every host and
    the PostgreSQL ``version`` (Debian 12 ships 15; the authors used 12)."""

    primary: str
    addresses: Mapping[str, str]
    clients: Sequence[str]
    root: str
    backup: str | None = None
    version: int = 15
    port: int = PG_PORT
    settings: Mapping[str, str] | None = None


def postgres_connection(p: PostgresPlacement, *, host: str | None = None) -> str:
    """The connection string of the clients and of the server process: the primary (``host``, else its
    address), no password: libpq reads it from the run's ``pgpass`` file, which the string names
    (``passfile``; the harness starts the processes over SSH with no ``PGPASSFILE`` in their environment)."""
    return (f"host={host or p.addresses[p.primary]} port={p.port} user={PG_USER} dbname={PG_DATABASE} "
            f"passfile={p.root.rstrip('/')}/pg/pgpass connect_timeout=10")


_ADDRESS = re.compile(r"[0-9A-Fa-f.:]+|@@addr:[A-Za-z0-9._-]+@@")   # matched in full


def postgres_files(p: PostgresPlacement) -> dict[str, str]:
    """The scripts that set up the database servers of a Postgres or Postgres-PB run.

    - ``pg-primary.sh`` (on the primary): a new cluster of PostgreSQL ``version`` in
      ``<root>/pg/primary`` (the run's previous one stopped and removed first), listening on the
      primary's cluster address only, port ``port``, with no Unix socket; a password of 24 random
      characters made on that host into ``<root>/pg/password`` (0600) for the users ``postgres``,
      ``pequin_user`` and, with a backup, ``repuser``; ``pg_hba.conf`` admitting exactly the
      clients' and the backup's addresses (``scram-sha-256``); the authors' settings and database
      ``db1``; with a backup, synchronous replication to it (``synchronous_standby_names = '*'``),
      as ``postgres_primary2.sh`` sets.
    - ``pg-backup.sh`` (Postgres-PB, on the backup): ``pg_basebackup`` from the primary through a
      replication slot, started as a hot standby on the backup's address. Its password file must
      have been copied from the primary's host first.
    - ``pg-stop.sh``: stops this run's clusters on a host (``pg_ctl`` on the run's data directories,
      never a ``pkill`` of every postgres on the machine).
    - ``pg-check.sh`` (Postgres-PB, on the primary): the backup streams synchronously
      (``pg_stat_replication``) and a row committed on the primary can be read on the backup.
    - ``pg-pgpass.sh`` (on a client): ``<root>/pg/pgpass`` for ``pequin_user`` from the password
      file copied there.

    The password is never an argument, an environment variable or part of a file written here:
    the scripts read it from ``<root>/pg/password`` on their own host. As root the clusters run as
    the user ``postgres`` (PostgreSQL refuses root), so ``root`` must be reachable by that user.
    """
    hosts = [p.primary] + ([p.backup] if p.backup else []) + list(p.clients)
    for host in hosts:
        addr = p.addresses.get(host)
        if not addr:
            raise ConfigError(f"Postgres: no cluster address for {host}")
        if not _ADDRESS.fullmatch(addr):
            raise ConfigError(f"Postgres: {host}'s address {addr!r} is not an IP address")
    if p.backup == p.primary:
        raise ConfigError(f"Postgres-PB: the backup must be another server than the primary ({p.primary})")
    for key, value in (p.settings or {}).items():
        if not re.fullmatch(r"[a-z_]+", key) or not re.fullmatch(r"'[A-Za-z0-9 ._*-]*'|[A-Za-z0-9._-]+", str(value)):
            raise ConfigError(f"Postgres: the setting {key} = {value} is not a plain name and value")
    q = shlex.quote
    version, port = int(p.version), int(p.port)
    settings = {**PG_SETTINGS, **(p.settings or {})}
    prim = p.addresses[p.primary]
    # the clients, the backup and the primary itself (the harness starts the Postgres "server" process there, which
    # creates the tables and loads the data)
    peers = sorted({p.addresses[c] for c in p.clients} | ({p.addresses[p.backup]} if p.backup else set()) | {p.addresses[p.primary]})
    common = f"""#!/usr/bin/env bash
set -euo pipefail
umask 077
ROOT={q(p.root.rstrip("/"))}
PGBIN=/usr/lib/postgresql/{version}/bin
cd /   # the user postgres may not enter the login directory
PORT={port}
[ -x "$PGBIN/pg_ctl" ] || {{ echo "reprobook: no PostgreSQL {version} on $(hostname) ($PGBIN/pg_ctl is missing; Debian: postgresql-{version})" >&2; exit 3; }}
# PostgreSQL refuses to run as root: as root, this run's clusters belong to the user postgres
if [ "$(id -u)" = 0 ]; then as_pg() {{ runuser -u postgres -- "$@"; }}; owner=postgres; else as_pg() {{ "$@"; }}; owner=$(id -un); fi
( umask 022; mkdir -p "$ROOT/pg" ); chown "$owner" "$ROOT/pg"; chmod 700 "$ROOT/pg"
as_pg test -x "$ROOT/pg" || {{ echo "reprobook: the user $owner cannot reach $ROOT/pg on $(hostname) (a directory above it is closed to others): give the run a root it can reach" >&2; exit 3; }}
stop_clusters() {{  # primary|backup...: this run's clusters of those kinds (on a shared file system the backup
  # must not stop the primary it is about to copy)
  local k d
  for k in "$@"; do
    d="$ROOT/pg/$k"
    if [ -f "$d/postmaster.pid" ]; then as_pg "$PGBIN/pg_ctl" -D "$d" -m fast -w stop >/dev/null 2>&1 || true; fi
  done
}}
pg_start() {{  # data directory, log: start the cluster, or say why not (the authors' log_min_messages = panic keeps
  # the reason out of the log, so a failed start is tried once more with it logged, then stopped)
  as_pg "$PGBIN/pg_ctl" -D "$1" -l "$2" -w start >/dev/null 2>&1 && return 0
  if as_pg "$PGBIN/pg_ctl" -D "$1" -l "$2" -o "-c log_min_messages=fatal" -w start >/dev/null 2>&1; then
    as_pg "$PGBIN/pg_ctl" -D "$1" -m fast -w stop >/dev/null 2>&1 || true
  fi
  echo "reprobook: PostgreSQL did not start on $(hostname) (data in $1, log $2):" >&2
  tail -n 20 "$2" >&2
  exit 1
}}
own_pgpass() {{  # this host's pgpass, from the password file: every user of the run has the one password, so every
  # host's pgpass is the same file (hosts that share a file system, as a loopback cluster does, share it too)
  [ -s "$ROOT/pg/password" ] || {{ echo "reprobook: no password file on $(hostname) ($ROOT/pg/password): it is made on the primary's host and copied from there" >&2; exit 3; }}
  chmod 600 "$ROOT/pg/password"; chown "$owner" "$ROOT/pg/password"
  for u in postgres {PG_USER} {PG_REPLICATION_USER}; do printf '*:%s:*:%s:%s\\n' "$PORT" "$u" "$(cat "$ROOT/pg/password")"; done > "$ROOT/pg/pgpass.$$"
  chmod 600 "$ROOT/pg/pgpass.$$"; chown "$owner" "$ROOT/pg/pgpass.$$"; mv -f "$ROOT/pg/pgpass.$$" "$ROOT/pg/pgpass"
}}
"""
    hba = "".join(f"host    all             {PG_USER:<15} {a}/32    scram-sha-256\\n" for a in peers)
    if p.backup:
        hba += f"host    replication     {PG_REPLICATION_USER:<15} {p.addresses[p.backup]}/32    scram-sha-256\\n"
    alter = "".join(f'sql "ALTER SYSTEM SET {k} = {v}"\n' for k, v in settings.items())
    db = "".join(f'sql "ALTER DATABASE {PG_DATABASE} SET {s}"\n' for s in PG_DATABASE_SETTINGS)
    sync = ""
    if p.backup:
        sync = f"""sql "CREATE ROLE {PG_REPLICATION_USER} WITH REPLICATION LOGIN PASSWORD '$pw'"
sql "SELECT 1 FROM pg_create_physical_replication_slot('rb_backup')" >/dev/null
sql "ALTER SYSTEM SET synchronous_commit = on"
sql "ALTER SYSTEM SET synchronous_standby_names = '*'"
"""
    primary = common + f"""stop_clusters primary backup
D="$ROOT/pg/primary"
rm -rf "$D"; mkdir -p "$D"; chmod 700 "$D"; chown "$owner" "$D"
# the password: made here, kept here (0600); the other hosts get a copy of this file, never its text
if [ ! -s "$ROOT/pg/password" ]; then
  ( set +o pipefail; LC_ALL=C tr -dc 'A-Za-z0-9' </dev/urandom | head -c 24 > "$ROOT/pg/password" )
fi
own_pgpass
as_pg "$PGBIN/initdb" -D "$D" -U postgres --pwfile="$ROOT/pg/password" --auth-local=scram-sha-256 \\
  --auth-host=scram-sha-256 >"$ROOT/pg/initdb.log" 2>&1 || {{ tail -n 20 "$ROOT/pg/initdb.log" >&2; exit 1; }}
cat >> "$D/postgresql.conf" <<CONF
# reprobook: the cluster's address only (the authors' listen_addresses = '*'), no Unix socket
listen_addresses = '{prim}'
port = $PORT
unix_socket_directories = ''
log_min_messages = panic
CONF
printf 'host    all             postgres        {prim}/32    scram-sha-256\\n{hba}' >> "$D/pg_hba.conf"
pg_start "$D" "$ROOT/pg/primary.log"
pw=$(cat "$ROOT/pg/password")
sql() {{ as_pg env PGPASSFILE="$ROOT/pg/pgpass" "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h {prim} -p "$PORT" -U postgres -d postgres -c "$1"; }}
sql "CREATE ROLE {PG_USER} WITH LOGIN PASSWORD '$pw'"
sql "GRANT pg_read_server_files TO {PG_USER}"
sql "CREATE DATABASE {PG_DATABASE} OWNER {PG_USER}"
{db}{alter}{sync}as_pg "$PGBIN/pg_ctl" -D "$D" -m fast -w stop >/dev/null
pg_start "$D" "$ROOT/pg/primary.log"
echo "PostgreSQL $("$PGBIN/postgres" -V | awk '{{print $3}}') primary on {prim}:$PORT (data in $D), admitting {', '.join(peers)}"
"""
    files = {
        "pg-primary.sh": primary,
        "pg-stop.sh": common + 'stop_clusters primary backup\necho "this run\'s PostgreSQL clusters on $(hostname) are stopped"\n',
        "pg-pgpass.sh": common + f'own_pgpass\necho "pgpass for {PG_USER} on $(hostname): $ROOT/pg/pgpass"\n',
    }
    if p.backup:
        back = p.addresses[p.backup]
        files["pg-backup.sh"] = common + f"""stop_clusters backup
D="$ROOT/pg/backup"
rm -rf "$D"; mkdir -p "$D"; chmod 700 "$D"; chown "$owner" "$D"
own_pgpass
as_pg env PGPASSFILE="$ROOT/pg/pgpass" "$PGBIN/pg_basebackup" -h {prim} -p "$PORT" -U {PG_REPLICATION_USER} -D "$D" \\
  --checkpoint=fast -R --slot=rb_backup -w >"$ROOT/pg/basebackup.log" 2>&1 \\
  || {{ tail -n 20 "$ROOT/pg/basebackup.log" >&2; exit 1; }}
echo "listen_addresses = '{back}'" >> "$D/postgresql.auto.conf"
pg_start "$D" "$ROOT/pg/backup.log"
echo "PostgreSQL backup on {back}:$PORT, streaming from {prim}:$PORT"
"""
        files["pg-check.sh"] = common + f"""# a hot standby reads no serializable transaction, db1's default: these queries run at repeatable read
sql() {{ as_pg env PGPASSFILE="$ROOT/pg/pgpass" PGOPTIONS='-c default_transaction_isolation=repeatable\\ read' "$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$1" -p "$PORT" -U postgres -d {PG_DATABASE} -c "$2"; }}
# the backup's connection, found by its replication slot (on a loopback cluster it comes from 127.0.0.1)
state=$(sql {prim} "SELECT r.state || ' ' || r.sync_state FROM pg_stat_replication r JOIN pg_replication_slots s ON s.active_pid = r.pid WHERE s.slot_name = 'rb_backup'")
echo "replication from {prim} (slot rb_backup): ${{state:-none}}"
[ "$state" = "streaming sync" ] || {{ echo "reprobook: the backup {back} does not stream synchronously from {prim} (slot rb_backup: ${{state:-not connected}})" >&2; exit 1; }}
mark="rb-$(date +%s)-$$"
sql {prim} "CREATE TABLE IF NOT EXISTS rb_replication_check (mark text); INSERT INTO rb_replication_check VALUES ('$mark')"
got=$(sql {back} "SELECT count(*) FROM rb_replication_check WHERE mark = '$mark'")
[ "$got" = 1 ] || {{ echo "reprobook: a row committed on the primary {prim} is not on the backup {back}" >&2; exit 1; }}
echo "a row committed on {prim} is on {back}: replication checked"
"""
    return files


def client_connection_patch(connection: str, original: str, *, path: str = "src/store/postgresstore/client.cc") -> str:
    """``src/store/postgresstore/client.cc`` (or ``server.cc``) with the connection string the placement needs.

    The authors set it by hand (``host=us-east-1-0.<experiment>.pequin-pg0.utah.cloudlab.us
    user=pequin_user password=123 ...`` in the client, ``host=localhost ... password=123`` in the
    server, which loads the data) and print it; here it is ``connection`` (no password: libpq reads
    the ``passfile`` it names) and the line printing it is kept, as it holds no secret now.
    """
    pattern = re.compile(r'^(\s*)((?:std::string\s+)?)connection_str = "host=.*$', re.M)
    matches = list(pattern.finditer(original))
    if len(matches) != 1:
        raise ConfigError(f"{path}: expected one 'connection_str = \"host=...' line to set, found {len(matches)}",
                          file=path)
    m = matches[0]
    escaped = connection.replace("\\", "\\\\").replace('"', '\\"')
    return original[:m.start()] + f'{m.group(1)}{m.group(2)}connection_str = "{escaped}";' + original[m.end():]


# --------------------------------------------------------------------------- the preparation, as one script

def placeholder(host: str) -> str:
    """Where a host's cluster address goes in a generated file: `prepare_script` fills it in on the control host,
    which resolves the name as the harness reaches it (its SSH configuration, then the name service)."""
    return f"@@addr:{host}@@"


def _archive(files: Mapping[str, bytes | str]) -> str:
    import base64
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            data = files[name].encode() if isinstance(files[name], str) else bytes(files[name])
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return base64.b64encode(buf.getvalue()).decode()


def prepare_script(s: System, *, servers: Sequence[str], clients: Sequence[str], root: str, src_dir: str,
                   files: Mapping[str, bytes | str], bftsmart_dir: str | None = None) -> str:
    """The control host's script that puts ``s``'s configuration in place for the placement, before the harness
    runs one of its configs (what the guide has an evaluator do by hand: ``pghs_config_remote.sh``,
    ``one_step_config.sh``, the Postgres scripts).

    ``files`` are the generated files (`hotstuff_files`, `bftsmart_files`, `postgres_files`) with the hosts'
    addresses as `placeholder`; the script unpacks them into ``$RB_RUN_DIR/prepare/<system>`` (kept: it is the
    record of what was sent), fills in the addresses, and then:

    - HotStuff: checks that the binaries read their configuration from ``<root>/config_pghs/`` (the header the
      build step writes) and sends ``config_pghs`` to each replica;
    - BFT-SMaRt: builds the library's jars once (``ant``, as ``build_bftsmart.sh``) and sends each host its
      ``java-config`` and the jars into ``bftsmart_dir`` (the configs' ``bftsmart_codebase_dir``; by default
      ``<root>/bftsmart``);
    - Postgres: sends the scripts, makes the primary (the password made there), copies the password file from
      the primary to the backup and the clients through a pipe (never written on the control host), makes the
      backup and checks that it streams synchronously, and writes the clients' ``pgpass``.

    Every value reaching a shell is quoted, and every host name follows ``--`` on ssh's command line (rsync, which
    names the host to ssh itself, is given only host names that cannot read as an option: each is checked here);
    a failure names the host and the script, and exits non-zero.
    """
    from reprobook.core.patterns import Pattern
    q = shlex.quote
    servers, clients = list(servers), list(clients)
    hosts = list(dict.fromkeys(servers + clients))
    hostname = Pattern.parse("hostname")
    for h in hosts:
        if not h or not hostname.allows(h):
            raise ConfigError(f"{s.name}: the placement's host {h!r} is not {hostname.what}: it would reach ssh "
                              f"and rsync on the control host's command line")
    slug = re.sub(r"[^A-Za-z0-9_-]", "-", s.name)
    head = f"""#!/usr/bin/env bash
# reprobook: {s.name}'s configuration for this placement (generated by reprobook.papers.pesto.systems)
set -euo pipefail
root={q(root.rstrip("/"))}
ssh_=(ssh ${{RB_SSH_CONFIG:+-F "$RB_SSH_CONFIG"}} -o BatchMode=yes -o ConnectTimeout=20)
stage="${{RB_RUN_DIR:-$root}}/prepare/{slug}"
rm -rf "$stage"; mkdir -p "$stage"
echo {_archive(files)} | base64 -d | tar -xz -C "$stage"
# each host's address as the control host reaches it: its SSH configuration's HostName, then the name service
addr() {{
  local n
  n=$(ssh ${{RB_SSH_CONFIG:+-F "$RB_SSH_CONFIG"}} -G -- "$1" 2>/dev/null | awk '$1 == "hostname" {{print $2; exit}}')
  getent ahostsv4 "${{n:-$1}}" | awk '{{print $1; exit}}'
}}
pairs=()
for h in {" ".join(q(h) for h in hosts)}; do
  a=$(addr "$h" || true)
  [ -n "$a" ] || {{ echo "reprobook: {s.name}: cannot resolve the address of $h on $(hostname) (ssh -G, then getent)" >&2; exit 3; }}
  pairs+=("$h=$a")
done
python3 - "$stage" "${{pairs[@]}}" <<'PY'
import pathlib, sys
table = dict(p.split("=", 1) for p in sys.argv[2:])
for f in pathlib.Path(sys.argv[1]).rglob("*"):
    if f.is_file():
        data = f.read_bytes()
        new = data
        for host, address in table.items():
            new = new.replace(("@@addr:%s@@" % host).encode(), address.encode())
        if new != data:
            f.write_bytes(new)
PY
if grep -rq '@@addr:' "$stage"; then echo "reprobook: {s.name}: a host's address was left unfilled in $stage" >&2; exit 3; fi
on() {{  # HOST COMMAND: run it there, naming the host and the exit code when it fails
  local rc=0
  "${{ssh_[@]}}" -- "$1" "$2" < /dev/null || rc=$?   # (stdin: a script read from it would be read by ssh)
  if [ "$rc" -ne 0 ]; then echo "reprobook: {s.name}: on $1, '$2' exited with $rc" >&2; exit "$rc"; fi
}}
send() {{  # FROM HOST DEST: a copy of a directory's contents
  on "$2" "mkdir -p $(printf %q "$3")"
  # -c: by content; the unpacked files all carry one time (the tarball's), and a changed one can keep its size
  rsync -a -s -c --delete -e "${{ssh_[*]}}" -- "$1/" "$2:$3/"   # -s: the path reaches no remote shell
}}
"""
    if s.preconfigure == "hotstuff":
        n = sum(1 for line in str(files.get(f"{HOTSTUFF_DIR}/shard0/hotstuff.gen.conf", "")).splitlines()
                if _REPLICA.match(line))
        body = f"""src={q(src_dir.rstrip("/"))}
hdr="$src/store/hotstuffstore/libhotstuff/examples/remote_config_dir.h"
want="#define REMOTE_CONFIG_DIR \\"$root/{HOTSTUFF_DIR}/\\""
if ! grep -qxF "$want" "$hdr" 2>/dev/null; then
  echo "reprobook: {s.name}: the binaries read HotStuff's configuration from $(sed -n 's/.*"\\(.*\\)".*/\\1/p' "$hdr" 2>/dev/null || echo '?'), not $root/{HOTSTUFF_DIR}/: build them with remote_config_dir.h naming it (the build step writes it)" >&2
  exit 3
fi
for h in {" ".join(q(h) for h in servers[:n])}; do
  send "$stage/{HOTSTUFF_DIR}" "$h" "$root/{HOTSTUFF_DIR}"
  echo "$h: HotStuff's configuration in $root/{HOTSTUFF_DIR} ($(grep -c '^replica' "$stage/{HOTSTUFF_DIR}/shard0/hotstuff.gen.conf") replicas, $(grep '^block-size' "$stage/{HOTSTUFF_DIR}/shard0/hotstuff.gen.conf" || echo 'block-size as the authors'))"
done
"""
    elif s.preconfigure == "bftsmart":
        body = f"""lib={q(src_dir.rstrip("/"))}/{BFTSMART_LIBRARY[len("src/"):]}
if [ ! -f "$lib/jars/BFT-SMaRt.jar" ]; then   # build_bftsmart.sh, once
  log="${{RB_RUN_DIR:-$root}}/bftsmart-build.log"
  ( cd "$lib" && rm -rf jars && mkdir -p bin && ant > "$log" 2>&1 && mkdir jars && cp bin/BFT-SMaRt.jar jars/ && cp lib/* jars/ ) \
    || {{ echo "reprobook: {s.name}: building BFT-SMaRt (ant in $lib) failed on $(hostname):" >&2; tail -n 20 "$log" >&2; exit 1; }}
  echo "BFT-SMaRt's jars built: $(find "$lib/jars" -type f | wc -l) files"
fi
codebase={q((bftsmart_dir or f"{root.rstrip('/')}/bftsmart").rstrip("/"))}
for h in {" ".join(q(h) for h in hosts)}; do
  send "$stage/remote/java-config-$h/java-config" "$h" "$codebase/java-config"
  send "$lib/jars" "$h" "$codebase/jars"
  echo "$h: BFT-SMaRt's configuration and jars in $codebase"
done
"""
    elif s.preconfigure == "postgres":
        primary = servers[0]
        backup = servers[1] if s.pg_replicated else None
        pg_hosts = [primary] + ([backup] if backup else []) + [c for c in clients if c not in (primary, backup)]
        rq = 'q_root=$(printf %q "$root")'
        body = f"""{rq}
for h in {" ".join(q(h) for h in pg_hosts)}; do send "$stage" "$h" "$root/pg-scripts"; done
copy_password() {{  # from the primary's host to HOST, through a pipe: never written here
  local rc=0
  # into a new file moved into place: hosts that share a file system (a loopback cluster) share the file itself
  "${{ssh_[@]}}" -- {q(primary)} "cat $q_root/pg/password" < /dev/null \\
    | "${{ssh_[@]}}" -- "$1" "umask 077; mkdir -p $q_root/pg && cat > $q_root/pg/password.new && mv -f $q_root/pg/password.new $q_root/pg/password" || rc=$?
  if [ "$rc" -ne 0 ]; then echo "reprobook: {s.name}: copying the password file from {primary} to $1 failed ($rc)" >&2; exit "$rc"; fi
}}
on {q(primary)} "bash $q_root/pg-scripts/pg-primary.sh"
"""
        if backup:
            body += f"""copy_password {q(backup)}
on {q(backup)} "bash $q_root/pg-scripts/pg-backup.sh"
on {q(primary)} "bash $q_root/pg-scripts/pg-check.sh"
"""
        for c in pg_hosts[1 + bool(backup):]:
            body += f"""copy_password {q(c)}
on {q(c)} "bash $q_root/pg-scripts/pg-pgpass.sh"
"""
    else:
        raise ConfigError(f"{s.name} needs no preparation")
    return head + body + f'echo "{s.name}: prepared for this placement"\n'
