"""Postgres-PB for real: the generated set-up scripts make a PostgreSQL 15 primary and a streaming
backup on two loopback hosts reached over real SSH, replication is checked, and the password exists
in no file but the database hosts' own password and pgpass files.

Each host is a real sshd on its own loopback address; the databases listen on those addresses only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from reprobook.papers.pesto.systems import PostgresPlacement, postgres_files
from tests.integration.conftest import unavailable
from tests.support.sshd import free_port

pytestmark = [pytest.mark.ssh, pytest.mark.slow]

PG = Path("/usr/lib/postgresql/15/bin/pg_ctl")
ADDRESSES = {"db-a": "127.0.0.61", "db-b": "127.0.0.62", "client-0-0": "127.0.0.63"}


@pytest.fixture
def open_dir():
    """A directory the user postgres can reach (pytest's own are closed to others): the hosts' roots."""
    d = Path(tempfile.mkdtemp(prefix="rb-pg-", dir="/tmp"))
    d.chmod(0o755)
    yield d
    for pid_file in d.rglob("postmaster.pid"):   # a failed test leaves no database running
        subprocess.run(["runuser", "-u", "postgres", "--", str(PG), "-D", str(pid_file.parent), "-m", "immediate",
                        "stop"], capture_output=True)
    shutil.rmtree(d, ignore_errors=True)


def on(bed, host: str, script: str, *, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``script`` on ``host`` over SSH, as a step runs its script."""
    r = subprocess.run(bed.ssh_argv(host) + ["bash", "-s"], input=script, capture_output=True, text=True, timeout=300)
    if check:
        assert r.returncode == 0, f"{host}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def postmasters(root: Path) -> list[int]:
    """The PIDs of PostgreSQL servers whose data directory is under ``root``."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if cmd and cmd[0].endswith(b"/postgres") and any(str(root).encode() in part for part in cmd):
                pids.append(int(proc.name))
    return pids


def test_a_real_primary_and_backup_replicate_and_the_password_stays_on_the_database_hosts(bed, open_dir, tmp_path):
    if os.geteuid() != 0 or not PG.exists():
        unavailable("this test runs PostgreSQL 15 as the user postgres (root and Debian's postgresql-15 needed)")
    for host in ("db-a", "db-b"):
        bed.add_host(host, ADDRESSES[host])
    port = free_port(ADDRESSES["db-a"])
    roots = {h: open_dir / h / "pequin" for h in ("db-a", "db-b")}
    files = {h: postgres_files(PostgresPlacement(primary="db-a", backup="db-b", clients=["client-0-0"],
                                                 addresses=ADDRESSES, root=str(roots[h]), port=port,
                                                 settings={"shared_buffers": "'128MB'", "work_mem": "'4MB'"}))
             for h in roots}

    # a root the user postgres cannot reach is refused with what to do, before anything is made
    closed = postgres_files(PostgresPlacement(primary="db-a", clients=[], addresses=ADDRESSES, port=port,
                                              root=str(tmp_path / "closed")))
    refused = on(bed, "db-a", closed["pg-primary.sh"], check=False)
    assert refused.returncode == 3 and "cannot reach" in refused.stderr and "give the run a root" in refused.stderr

    first = on(bed, "db-a", files["db-a"]["pg-primary.sh"])
    assert f"primary on 127.0.0.61:{port}" in first.stdout
    # the backup without its copy of the password file says where it comes from
    missing = on(bed, "db-b", files["db-b"]["pg-backup.sh"], check=False)
    assert missing.returncode == 3 and "copied from there" in missing.stderr
    # host to host, as the run's step copies it: the text goes through a pipe, never into a file of ours
    copy = subprocess.run(f"{' '.join(bed.ssh_argv('db-a'))} cat {roots['db-a']}/pg/password | "
                          f"{' '.join(bed.ssh_argv('db-b'))} 'umask 077; cat > {roots['db-b']}/pg/password'",
                          shell=True, capture_output=True, text=True)
    assert copy.returncode == 0, copy.stderr
    on(bed, "db-b", files["db-b"]["pg-backup.sh"])
    check = on(bed, "db-a", files["db-a"]["pg-check.sh"])
    assert "streaming sync" in check.stdout and "replication checked" in check.stdout

    # each database listens on its host's cluster address, and nowhere else
    listening = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True).stdout
    assert sorted(line.split()[3] for line in listening.splitlines()) == [f"127.0.0.61:{port}", f"127.0.0.62:{port}"]

    password = (roots["db-a"] / "pg" / "password").read_bytes()
    assert len(password) == 24 and password.isalnum()
    holders = sorted(str(p.relative_to(open_dir)) for base in (open_dir, tmp_path) for p in base.rglob("*")
                     if p.is_file() and not p.is_symlink() and password in p.read_bytes())
    assert holders == ["db-a/pequin/pg/password", "db-a/pequin/pg/pgpass",
                       "db-b/pequin/pg/password", "db-b/pequin/pg/pgpass"]
    for h in roots:
        assert (roots[h] / "pg" / "password").stat().st_mode & 0o777 == 0o600
        assert (roots[h] / "pg" / "pgpass").stat().st_mode & 0o777 == 0o600

    # a run killed midway leaves its primary running: the next run's set-up stops it, on that host only
    before = postmasters(roots["db-a"])
    assert len(before) == 1
    again = on(bed, "db-a", files["db-a"]["pg-primary.sh"])
    assert f"primary on 127.0.0.61:{port}" in again.stdout
    after = postmasters(roots["db-a"])
    assert len(after) == 1 and after != before
    assert len(postmasters(roots["db-b"])) == 1   # the backup's host was not touched

    for h in roots:
        on(bed, h, files[h]["pg-stop.sh"])
        assert postmasters(roots[h]) == []

    # settings the host cannot hold (the authors' 30GB of shared buffers on a smaller machine): the start fails, and
    # the error shows PostgreSQL's reason, which the authors' log_min_messages = panic would keep out of the log
    huge = postgres_files(PostgresPlacement(primary="db-a", clients=["client-0-0"], addresses=ADDRESSES, port=port,
                                            root=str(roots["db-a"]), settings={"shared_buffers": "'4TB'"}))
    failed = on(bed, "db-a", huge["pg-primary.sh"], check=False)
    assert failed.returncode == 1, failed.stderr
    assert "PostgreSQL did not start on" in failed.stderr and "shared memory" in failed.stderr, failed.stderr
    assert postmasters(roots["db-a"]) == []


def test_the_generated_preparation_makes_postgres_pb_for_the_placement_from_the_control_host(bed, open_dir):
    """What a Postgres-PB point runs before the harness (`systems.prepare_script`), for real: on the control host,
    from a script with the hosts' addresses still to fill in, over real SSH to a primary, a backup and a client that
    share one root, as a loopback cluster's hosts share a file system. Replication is checked by the script; the
    password is in the database hosts' files only, never in the control host's record of what it sent, nor in
    what the script printed."""
    from reprobook.papers.pesto.systems import SYSTEMS, placeholder, prepare_script
    if os.geteuid() != 0 or not PG.exists():
        unavailable("this test runs PostgreSQL 15 as the user postgres (root and Debian's postgresql-15 needed)")
    names = {"control": "127.0.0.64", "us-east-1-0": ADDRESSES["db-a"], "us-east-1-1": ADDRESSES["db-b"],
             "client-0-0": ADDRESSES["client-0-0"]}
    for host, addr in names.items():
        bed.add_host(host, addr)
    port = free_port(ADDRESSES["db-a"])
    root = open_dir / "pe quin"   # a space: every path reaching a shell, here or on a host, is quoted
    servers, clients = ["us-east-1-0", "us-east-1-1"], ["client-0-0"]
    placement = PostgresPlacement(primary="us-east-1-0", backup="us-east-1-1", clients=clients, root=str(root),
                                  addresses={h: placeholder(h) for h in servers + clients}, port=port,
                                  settings={"shared_buffers": "'128MB'", "work_mem": "'4MB'"})
    script = prepare_script(SYSTEMS["Postgres-PB"], servers=servers, clients=clients, root=str(root), src_dir="/nowhere",
                            files=postgres_files(placement))
    run_dir = open_dir / "run"
    env = f"export RB_SSH_CONFIG={bed.ssh_config_path} RB_RUN_DIR={run_dir}\n"
    done = on(bed, "control", env + script)
    assert "replication checked" in done.stdout and "Postgres-PB: prepared for this placement" in done.stdout
    assert f"primary on 127.0.0.61:{port}" in done.stdout and f"backup on 127.0.0.62:{port}" in done.stdout
    # the record of what was sent: the scripts with the addresses filled in
    sent = (run_dir / "prepare" / "Postgres-PB" / "pg-primary.sh").read_text()
    assert "listen_addresses = '127.0.0.61'" in sent and "@@addr:" not in sent
    password = (root / "pg" / "password").read_bytes()
    assert len(password) == 24
    holders = sorted(str(p.relative_to(open_dir)) for p in open_dir.rglob("*")
                     if p.is_file() and not p.is_symlink() and password in p.read_bytes())
    assert holders == ["pe quin/pg/password", "pe quin/pg/pgpass"]
    assert password.decode() not in done.stdout + done.stderr
    pgpass = (root / "pg" / "pgpass").read_text().splitlines()
    assert sorted(line.split(":")[3] for line in pgpass) == ["pequin_user", "postgres", "repuser"]
    # run again (the next point): the clusters are made anew, the old ones stopped first, on their own hosts
    before = postmasters(root)
    assert len(before) == 2
    on(bed, "control", env + script)
    assert len(postmasters(root)) == 2 and not set(postmasters(root)) & set(before)
    # a host that cannot be resolved stops the script before anything is made, naming it
    broken = script.replace("for h in us-east-1-0 us-east-1-1 client-0-0; do", "for h in us-east-1-0 nowhere-0; do", 1)
    refused = on(bed, "control", env + broken, check=False)
    assert refused.returncode == 3 and "cannot resolve the address of nowhere-0" in refused.stderr
    for h in servers:
        on(bed, h, postgres_files(placement)["pg-stop.sh"])   # it names no address
    assert postmasters(root) == []
