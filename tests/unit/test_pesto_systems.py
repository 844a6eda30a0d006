"""The comparison systems' configuration (reprobook.papers.pesto.systems) against the authors' own.

The authors' files come from the real artifact at the pinned commit (``../shared/git``); where the
authors have a script that writes a configuration (``pghs_config_remote.sh``, BFT-SMaRt's
``one_step_config.sh``), the script itself is run here for the authors' host names, with its name
lookups and copies to remote hosts replaced, and what it wrote is compared file by file and field
by field with what reprobook generates for the same names, and then for a 6-host placement.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from reprobook.errors import ConfigError
from reprobook.papers.pesto import systems
from reprobook.papers.pesto.systems import (PostgresPlacement, bftsmart_files, check_placement,
                                            client_connection_patch, hotstuff_config, hotstuff_files,
                                            postgres_connection, postgres_files, system_of)
from tests.support.pequin_standin import PEQUIN_COMMIT, PEQUIN_GIT

pytestmark = pytest.mark.skipif(not PEQUIN_GIT.is_dir(), reason=f"needs the Pequin artifact's git mirror at "
                                f"{PEQUIN_GIT} (../shared/git beside the project)")

AUTHORS_SERVERS = ["us-east-1-0", "us-east-1-1", "us-east-1-2", "eu-west-1-0"]
AUTHORS_CLIENTS = ["client-0-0", "client-1-0", "client-2-0", "client-3-0"]
# addresses in the style of the authors' commented-out table (zw494_gen_system_config.py)
AUTHORS_ADDRESSES = {h: f"10.10.1.{2 * i + 1}" for i, h in enumerate(AUTHORS_SERVERS)}
AUTHORS_ADDRESSES.update({h: f"10.10.1.{2 * i + 2}" for i, h in enumerate(AUTHORS_CLIENTS)})
OURS = ["node-a", "node-b", "node-c", "node-d", "node-e", "node-f"]   # a 6-host placement: 4 servers, 2 clients
OUR_ADDRESSES = {h: f"192.168.7.{i + 10}" for i, h in enumerate(OURS)}


def git_show(path: str) -> bytes:
    return subprocess.run(["git", "-C", str(PEQUIN_GIT), "show", f"{PEQUIN_COMMIT}:{path}"], check=True,
                          capture_output=True).stdout


def git_files(prefix: str) -> dict[str, bytes]:
    names = subprocess.run(["git", "-C", str(PEQUIN_GIT), "ls-tree", "-r", "--name-only", PEQUIN_COMMIT, prefix],
                           check=True, capture_output=True, text=True).stdout.split("\n")
    return {n[len(prefix):].lstrip("/"): git_show(n) for n in names if n}


def extract(paths: list[str], into: Path) -> None:
    """The artifact's files under ``paths``, as a checkout at the pinned commit would have them."""
    archive = subprocess.run(["git", "-C", str(PEQUIN_GIT), "archive", PEQUIN_COMMIT, *paths], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def fake_tools(bin_dir: Path, addresses: dict[str, str], domain: str) -> dict[str, str]:
    """``rsync`` that records its arguments instead of copying, and a ``sitecustomize`` that answers
    ``socket.gethostbyname`` for ``<host>.<domain>`` from ``addresses`` (the authors' scripts look the
    CloudLab names up in DNS)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    log = bin_dir / "rsync.log"
    (bin_dir / "rsync").write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    (bin_dir / "rsync").chmod(0o755)
    table = {f"{h}.{domain}": a for h, a in addresses.items()}
    (bin_dir / "sitecustomize.py").write_text(textwrap.dedent(f"""
        import socket
        _TABLE = {table!r}
        def gethostbyname(name):
            try:
                return _TABLE[name]
            except KeyError:
                raise socket.gaierror(-2, "Name or service not known: " + name) from None
        socket.gethostbyname = gethostbyname
    """))
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    env["PYTHONPATH"] = str(bin_dir)
    return env


# --------------------------------------------------------------------------- HotStuff (Peloton-HS)

def authors_hotstuff() -> dict[str, str]:
    return {k: v.decode() for k, v in git_files("src/scripts/config_pghs").items()}


def test_hotstuff_for_the_authors_names_is_what_their_script_sends(tmp_path):
    extract(["src/scripts/config_pghs", "src/scripts/hosts_pg_smr", "src/scripts/pghs_config_remote.sh",
             "src/store/hotstuffstore/libhotstuff/examples"], tmp_path)
    env = fake_tools(tmp_path / "fake-bin", {}, "")
    scripts = tmp_path / "src" / "scripts"
    subprocess.run(["bash", "pghs_config_remote.sh", "alice"], cwd=scripts, env=env, check=True, capture_output=True)
    sent = (tmp_path / "fake-bin" / "rsync.log").read_text().splitlines()
    hosts = [re.search(r"@([^.]+)\.", line)[1] for line in sent]

    ours = hotstuff_files(authors_hotstuff(), hosts, remote_dir="/users/alice/config_pghs")

    assert hosts == AUTHORS_SERVERS
    assert ours["hosts_pg_smr"] == (scripts / "hosts_pg_smr").read_text()
    header = tmp_path / "src/store/hotstuffstore/libhotstuff/examples/remote_config_dir.h"
    assert ours["remote_config_dir.h"] == header.read_text()
    for path in (scripts / "config_pghs").rglob("*"):
        if path.is_file():
            assert ours[f"config_pghs/{path.relative_to(scripts / 'config_pghs')}"] == path.read_text(), path


def _fields(conf: str) -> list[tuple[str, str]]:
    return [tuple(part.strip() for part in line.split("=", 1)) for line in conf.splitlines() if "=" in line]


def test_hotstuff_for_a_6_host_placement_differs_from_the_authors_only_in_its_replicas_hosts():
    authors = authors_hotstuff()
    ours = hotstuff_files(authors, OURS[:4], remote_dir="/srv/run/pequin/config_pghs",
                          addresses=OUR_ADDRESSES, block_size=32)
    before = _fields(authors["shard0/hotstuff.gen.conf"])
    after = _fields(ours["config_pghs/shard0/hotstuff.gen.conf"])
    assert [k for k, _ in after] == [k for k, _ in before]
    replicas = 0
    for (key, old), (_, new) in zip(before, after):
        if key == "replica":
            host, ports_keys = old.split(":", 1)
            assert new == f"{OUR_ADDRESSES[OURS[replicas]]}:{ports_keys}"   # same ports, same keys
            assert host == AUTHORS_SERVERS[replicas]
            replicas += 1
        elif key == "block-size":
            assert (old, new) == ("200", "32")
        else:
            assert new == old, key
    assert replicas == 4
    assert ours["hosts_pg_smr"] == "node-a\nnode-b\nnode-c\nnode-d\n"
    assert ours["remote_config_dir.h"] == '#define REMOTE_CONFIG_DIR "/srv/run/pequin/config_pghs/"\n'
    for i in range(4):
        name = f"config_pghs/shard0/hotstuff.gen-sec{i}.conf"
        assert ours[name] == authors[f"shard0/hotstuff.gen-sec{i}.conf"]


def test_hotstuff_on_hosts_sharing_one_network_gives_each_replica_its_own_ports():
    """A loopback cluster's hosts share one network stack, and each replica listens on every address: the authors'
    one pair of ports (30000;40000) for all four stops three of them ("Address already in use", seen in `make
    live-pesto`). With ``own_ports`` only the ports change, to the authors' plus the replica's index."""
    authors = authors_hotstuff()
    shared = hotstuff_files(authors, OURS[:4], remote_dir="/srv/run/pequin/config_pghs", addresses=OUR_ADDRESSES,
                            own_ports=True)
    plain = hotstuff_files(authors, OURS[:4], remote_dir="/srv/run/pequin/config_pghs", addresses=OUR_ADDRESSES)
    before = _fields(plain["config_pghs/shard0/hotstuff.gen.conf"])
    after = _fields(shared["config_pghs/shard0/hotstuff.gen.conf"])
    replicas = [(old, new) for (key, old), (_, new) in zip(before, after) if key == "replica"]
    assert [new.split(",")[0].split(":")[1] for _, new in replicas] == \
        ["30000;40000", "30001;40001", "30002;40002", "30003;40003"]
    assert all(old.split(",")[1:] == new.split(",")[1:] for old, new in replicas)   # the keys stay
    assert [f for f in after if f[0] != "replica"] == [f for f in before if f[0] != "replica"]


def test_hotstuff_refuses_too_few_replicas_and_a_bad_batch_size():
    conf = authors_hotstuff()["shard0/hotstuff.gen.conf"]
    with pytest.raises(ConfigError, match=r"4 replicas; the placement gives 3 server\(s\) \(a, b, c\)"):
        hotstuff_config(conf, ["a", "b", "c"])
    with pytest.raises(ConfigError, match="batch size must be at least 1, not 0"):
        hotstuff_config(conf, OURS, block_size=0)
    with pytest.raises(ConfigError, match="no 'replica"):
        hotstuff_config("block-size = 1\n", OURS)


# --------------------------------------------------------------------------- BFT-SMaRt (Peloton-Smart)

def run_authors_bftsmart(root: Path, addresses: dict[str, str]) -> Path:
    """The authors' one_step_config.sh, its four local steps (the fifth copies to the hosts), for their names."""
    extract(["src/scripts/bftsmart-configs", "src/store/bftsmartstore/library/java-config"], root)
    env = fake_tools(root / "fake-bin", addresses, "pequin.pequin-pg0.utah.cloudlab.us")
    steps = (root / "src/scripts/bftsmart-configs/one_step_config.sh").read_text().splitlines()
    assert steps[-1].startswith("$1/src/scripts/bftsmart-configs/zw494_config_remote.sh")
    local = "\n".join(steps[:-1]) + "\n"
    subprocess.run(["bash", "-c", local, "one_step_config.sh", str(root), "alice", "pequin", "pequin-pg0",
                    "utah.cloudlab.us"], env=env, check=True, capture_output=True)
    return root / "src/store/bftsmartstore/library"


def tree(directory: Path, under: str = "") -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in (directory / under).rglob("*") if p.is_file()}


def test_bftsmart_for_the_authors_names_is_what_their_scripts_write(tmp_path):
    library = run_authors_bftsmart(tmp_path, AUTHORS_ADDRESSES)
    theirs = tree(library)
    java_config = git_files("src/store/bftsmartstore/library/java-config")

    ours = bftsmart_files(java_config, AUTHORS_SERVERS, AUTHORS_CLIENTS, AUTHORS_ADDRESSES)

    written = {k: v for k, v in theirs.items() if not (k.startswith("java-config/") and
                                                        k != "java-config/hosts.config")}
    assert sorted(ours) == sorted(written)
    for name, data in written.items():
        assert ours[name] == data, name
    # and what they did is what the docstring says: a bind address per host, a hosts.config per group
    assert b"system.communication.bindaddress = 10.10.1.3" in ours["remote/java-config-us-east-1-1/java-config/system.config"]
    assert ours["host0.config"] == b"0 10.10.1.1 30000 30001\n1 10.10.1.3 30000 30001\n" \
                                   b"2 10.10.1.5 30000 30001\n3 10.10.1.7 30000 30001\n"


def _config_fields(data: bytes) -> dict[str, str]:
    return dict(line.split("=", 1) for line in data.decode().splitlines()
                if "=" in line and not line.lstrip().startswith("#"))


def test_bftsmart_for_a_6_host_placement_differs_from_the_authors_only_in_hosts_and_addresses(tmp_path):
    theirs = tree(run_authors_bftsmart(tmp_path, AUTHORS_ADDRESSES))
    java_config = git_files("src/store/bftsmartstore/library/java-config")
    servers, clients = OURS[:4], OURS[4:]

    ours = bftsmart_files(java_config, servers, clients, OUR_ADDRESSES)

    for mine, authors in [(servers[1], AUTHORS_SERVERS[1]), (clients[0], AUTHORS_CLIENTS[0])]:
        a = _config_fields(theirs[f"remote/java-config-{authors}/java-config/system.config"])
        b = _config_fields(ours[f"remote/java-config-{mine}/java-config/system.config"])
        assert a.keys() == b.keys()
        differ = {k for k in a if a[k] != b[k]}
        assert differ == {"system.communication.bindaddress "}
        assert b["system.communication.bindaddress "].strip() == OUR_ADDRESSES[mine]
    group = ours["host0.config"].decode().splitlines()
    assert [line.split()[0] for line in group] == ["0", "1", "2", "3"]
    assert [line.split()[1] for line in group] == [OUR_ADDRESSES[h] for h in servers]
    assert {" ".join(line.split()[2:]) for line in group} == {"30000 30001"}
    everyone = ours["java-config/hosts.config"].decode().splitlines()
    assert [line.split()[0] for line in everyone] == ["0", "1", "2", "3", "7000", "7001"]
    for c in clients:
        assert ours[f"remote/java-config-{c}/java-config/java-config-group-0/hosts.config"] == ours["host0.config"]
    keys = [k for k in java_config if k.startswith("keysECDSA/")]
    assert keys and all(ours[f"remote/java-config-{h}/java-config/{k}"] == java_config[k] for h in OURS for k in keys)


def test_bftsmart_refuses_a_host_without_an_address_and_unequal_groups():
    java_config = {"system.config": b"system.communication.bindaddress = auto\n"}
    with pytest.raises(ConfigError, match="no cluster address for node-d"):
        bftsmart_files(java_config, OURS[:4], [], {h: "10.0.0.1" for h in OURS[:3]})
    with pytest.raises(ConfigError, match="3 server\\(s\\) cannot make 2 group"):
        bftsmart_files(java_config, OURS[:3], [], OUR_ADDRESSES, groups=2)
    with pytest.raises(ConfigError, match="no '= auto'"):
        bftsmart_files({"system.config": b"x = 1\n"}, OURS[:4], [], OUR_ADDRESSES)


# --------------------------------------------------------------------------- Postgres and Postgres-PB

def _authors_alter_system() -> dict[str, str]:
    text = git_show("src/scripts/postgres_primary2.sh").decode()
    out = {}
    for m in re.finditer(r'^\s*echo "ALTER SYSTEM SET (\w+)\s*(?:=|TO)\s*(.+?)" \| psql', text, re.M):
        out[m[1]] = m[2].strip()
    return out


def test_postgres_settings_are_the_authors():
    assert _authors_alter_system() == systems.PG_SETTINGS
    text = git_show("src/scripts/postgres_primary2.sh").decode()
    for setting in systems.PG_DATABASE_SETTINGS:
        assert f"ALTER DATABASE $dbname SET {setting}" in text
    assert "sed -i \"${m_line}s/5432/5433/g\"" in git_show("src/scripts/postgres_primary.sh").decode()
    assert systems.PG_PORT == 5433
    assert "synchronous_standby_names" in text and "'*'" in text


def placement_pb(root="/srv/run/pequin") -> PostgresPlacement:
    return PostgresPlacement(primary="node-a", backup="node-b", clients=["node-e", "node-f"],
                             addresses=OUR_ADDRESSES, root=root)


def test_postgres_scripts_listen_and_admit_only_the_cluster_and_hold_no_password(tmp_path):
    files = postgres_files(placement_pb())
    primary = files["pg-primary.sh"]
    assert re.findall(r"^listen_addresses = (.*)$", primary, re.M) == ["'192.168.7.10'"]
    assert re.findall(r"^listen_addresses = (.*)$", files["pg-backup.sh"].replace('echo "', "\n"), re.M) \
        == ["'192.168.7.11'\" >> \"$D/postgresql.auto.conf\""]
    assert "0.0.0.0" not in primary and " trust" not in primary
    admitted = re.findall(r"host\s+(\w+)\s+(\w+)\s+([0-9.]+)/32\s+scram-sha-256", primary.replace("\\n", "\n"))
    # the primary itself too: the harness's Postgres "server" process runs there (it creates the tables, loads the data)
    assert sorted(admitted) == sorted([("all", "postgres", "192.168.7.10"), ("all", "pequin_user", "192.168.7.10"),
                                       ("all", "pequin_user", "192.168.7.11"),
                                       ("all", "pequin_user", "192.168.7.14"), ("all", "pequin_user", "192.168.7.15"),
                                       ("replication", "repuser", "192.168.7.11")])
    assert "password=" not in postgres_connection(placement_pb())
    assert set(files) == {"pg-primary.sh", "pg-backup.sh", "pg-stop.sh", "pg-check.sh", "pg-pgpass.sh"}
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(text)
        subprocess.run(["bash", "-n", str(path)], check=True)
        assert "pkill" not in text and "killall" not in text
    sc = subprocess.run(["shellcheck", "-S", "warning", *[str(tmp_path / n) for n in files]],
                        capture_output=True, text=True)
    assert sc.returncode == 0, sc.stdout
    unreplicated = postgres_files(PostgresPlacement(primary="node-a", clients=["node-e"], addresses=OUR_ADDRESSES,
                                                    root="/r"))
    assert set(unreplicated) == {"pg-primary.sh", "pg-stop.sh", "pg-pgpass.sh"}
    assert "synchronous_standby_names" not in unreplicated["pg-primary.sh"]


def test_postgres_refuses_bad_placements_and_values():
    with pytest.raises(ConfigError, match="no cluster address for node-z"):
        postgres_files(PostgresPlacement(primary="node-z", clients=[], addresses=OUR_ADDRESSES, root="/r"))
    with pytest.raises(ConfigError, match="is not an IP address"):
        postgres_files(PostgresPlacement(primary="a", clients=[], addresses={"a": "1.2.3.4; rm -rf /"}, root="/r"))
    with pytest.raises(ConfigError, match="another server than the primary"):
        postgres_files(PostgresPlacement(primary="node-a", backup="node-a", clients=[], addresses=OUR_ADDRESSES,
                                         root="/r"))
    with pytest.raises(ConfigError, match="not a plain name and value"):
        postgres_files(PostgresPlacement(primary="node-a", clients=[], addresses=OUR_ADDRESSES, root="/r",
                                         settings={"work_mem": "'1MB'; DROP TABLE x"}))
    quoted = postgres_files(PostgresPlacement(primary="node-a", clients=[], addresses=OUR_ADDRESSES,
                                              root="/srv/a dir/$(id)"))
    assert "ROOT='/srv/a dir/$(id)'" in quoted["pg-primary.sh"]


def test_the_clients_connection_string_is_set_in_the_real_client_without_its_password():
    original = git_show("src/store/postgresstore/client.cc").decode()
    assert "password=123" in original
    patched = client_connection_patch(postgres_connection(placement_pb()), original)
    live = [line for line in patched.splitlines() if "connection_str =" in line and not line.lstrip().startswith("//")]
    assert live == ['  connection_str = "host=192.168.7.10 port=5433 user=pequin_user dbname=db1 '
                    'passfile=/srv/run/pequin/pg/pgpass connect_timeout=10";']
    # the server's line too (it loads the data through host=localhost with the password 123)
    server = git_show("src/store/postgresstore/server.cc").decode()
    patched = client_connection_patch(postgres_connection(placement_pb(), host="node-a"), server,
                                      path="src/store/postgresstore/server.cc")
    live = [line for line in patched.splitlines() if "connection_str =" in line and not line.lstrip().startswith("//")]
    assert live == ['  std::string connection_str = "host=node-a port=5433 user=pequin_user dbname=db1 '
                    'passfile=/srv/run/pequin/pg/pgpass connect_timeout=10";']
    assert [line for line in patched.splitlines() if "password=123" in line and not line.lstrip().startswith("//")] == []
    with pytest.raises(ConfigError, match="found 0"):
        client_connection_patch("host=x", "int main() {}\n")


# --------------------------------------------------------------------------- the systems and the placements

@pytest.mark.parametrize("path, name", [
    ("experiment-configs/Peloton/TPCC/1-LAN/Peloton-HS-TPCC-20wh.json", "Peloton-HS"),
    ("experiment-configs/Peloton/TPCC/1-LAN/Peloton-BFTSMART-TPCC-20wh.json", "Peloton-Smart"),
    ("experiment-configs/Peloton/TPCC/1-LAN/Peloton-TPCC-20wh.json", "Peloton"),
    ("experiment-configs/Postgres/primary-backup/PG-TPCC.json", "Postgres-PB"),
    ("experiment-configs/Postgres/unreplicated/TPCC/1-LAN/Postgres-TPCC-20wh.json", "Postgres"),
    ("experiment-configs/Pesto/1-Workloads/TPCC/LAN/Pequin-TPCC-SQL-20wh.json", "Pesto"),
    ("experiment-configs/Pesto/1-Workloads/TPCC/LAN/unreplicated/Pequin-unreplicated-TPCC-SQL-20wh.json",
     "Pesto-unreplicated"),
    ("experiment-configs/Basil/1-Workloads/2. Basil/Indicus-TPCC.json", "Basil"),
    ("experiment-configs/Basil/1-Workloads/1. Tapir/Tapir-Retwis.json", "TAPIR"),
    ("experiment-configs/Basil/1-Workloads/3. TxHotstuff/Hotstuff-TPCC.json", "TxHotstuff"),
    ("experiment-configs/Cockroach-Deprecated/CRDB-TPCC-SQL.json", "CockroachDB"),
])
def test_each_authors_config_is_recognised_as_its_system(path, name):
    assert system_of(json.loads(git_show(path)), source=path).name == name


def test_placements_that_cannot_run_a_system_are_refused_naming_claim_role_and_number():
    roles = {"control": ["c"], "server": ["s1", "s2"], "client": ["k1"]}
    with pytest.raises(ConfigError, match=r"pesto/workloads: Peloton-HS needs 4 server hosts \(HotStuff's 3f\+1 "
                                          r"replicas with f = 1.*the placement gives 2 \(s1, s2\)"):
        check_placement("pesto/workloads", "Peloton-HS", roles)
    with pytest.raises(ConfigError, match="pesto/workloads: Peloton-Smart needs 4 server hosts"):
        check_placement("pesto/workloads", "Peloton-Smart", roles)
    with pytest.raises(ConfigError, match=r"Postgres-PB needs the role 'server' \(2 host\(s\) at least"):
        check_placement("pesto/workloads", "Postgres-PB", {"client": ["k1"]})
    with pytest.raises(ConfigError, match="Postgres needs the role 'client'"):
        check_placement("pesto/workloads", "Postgres", {"server": ["s1"]})
    with pytest.raises(ConfigError, match="pesto/workloads: the config names an unknown system 'Peloton-XS'; the "
                                          "systems of the Pesto chapter are Pesto, "):
        check_placement("pesto/workloads", "Peloton-XS", roles)
    assert check_placement("pesto/workloads", "Postgres-PB", roles).servers == 2
    with pytest.raises(ConfigError, match="SMR_mode 7 is none"):
        system_of({"replication_protocol": ["peloton-smr"], "replication_protocol_settings": [{"SMR_mode": 7}]})
