"""Fault injection against real OpenSSH sshd processes: nothing is lost, and every error is clear.

Each test breaks something for real (a job's process group killed on the
"host", SSH sessions dropped mid-fetch, a full local disk, hosts that are down,
refuse our key, changed their key or never answer, two launches racing for one
host) and asserts both halves of the contract: what was done survives, and the
error names the host or file and says what to do next.

The "hosts" are sshd processes on 127.0.0.2 ... 127.0.0.9 of this machine, so
their workdirs, pid files and process groups are reachable from the test.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from reprobook.remote import jobs
from reprobook.core.config import OutputSpec, load_project
from reprobook.errors import (AuthenticationFailed, HostBusy, HostKeyError, HostUnreachable, OutputError,
                              ReprobookError, RunLost, TestbedError)
from reprobook.remote.hosts import open_host
from reprobook.remote.live import perform
from reprobook.core.runs import RunStore
from reprobook.remote.transfer import fetch, list_outputs, sha256_file
from tests.conftest import require_mirror
from tests.integration.conftest import _wait_for
from tests.support.fixture_project import make_project
from tests.support.sshd import BlackholeServer, SshServer, SshTestbed, free_port

pytestmark = pytest.mark.ssh
REPROBOOK = [sys.executable, "-m", "reprobook"]
CLAIM = "fixture/validator-throughput"
KIB = 1024


def _runs_dir(workdir: Path) -> Path:
    return workdir / ".reprobook" / "runs"


def _remote_runs(workdir: Path) -> list[Path]:
    d = _runs_dir(workdir)
    return sorted(p for p in d.iterdir() if p.is_dir()) if d.is_dir() else []


def _cli(*args: str, timeout: float = 180, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(REPROBOOK + list(args), capture_output=True, text=True, timeout=timeout,
                          env=env, stdin=subprocess.DEVNULL)


def _many_outputs(workdir: Path, n: int, size: int) -> tuple[Path, dict[str, OutputSpec]]:
    """``n`` random files of ``size`` bytes under ``<workdir>/many`` and the output spec that names them."""
    d = workdir / "many"
    d.mkdir()
    for i in range(n):
        (d / f"f{i:02d}.bin").write_bytes(os.urandom(size))
    return d, {"many": OutputSpec("many", "many", "*.bin")}


def _local_files(local: Path) -> dict[str, str]:
    """``outputs/<name>/<file>`` -> sha256 of every fetched file (not fetch's own bookkeeping: dot files)."""
    root = local / "outputs"
    return {p.relative_to(local).as_posix(): sha256_file(p) for p in sorted(root.rglob("*"))
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)}


def _remote_sums(remote_dir: Path, output: str = "many") -> dict[str, str]:
    """The same for the files on the host (this machine), hashed directly, not through reprobook."""
    return {f"outputs/{output}/{p.name}": sha256_file(p) for p in sorted(remote_dir.iterdir()) if p.is_file()}


def _litter(local: Path) -> list[Path]:
    """Half-transferred files left behind: ``*.part`` and rsync's partial directory."""
    return [p for p in (local / "outputs").rglob("*")
            if p.is_file() and (p.name.endswith(".part") or ".rsync-partial" in p.parts)]


def _read(p: Path) -> str:
    try:
        return p.read_text(errors="replace")
    except OSError:
        return ""


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


# --------------------------------------------------------------------------- 1. the job dies on the host

def test_killed_remote_job_is_recorded_lost_not_running(fixture):
    """SIGKILL the job's whole process group (a crash or a reboot) while `perform` polls it."""
    project = load_project(fixture.root)
    claim = project.claim(CLAIM)
    runs = _runs_dir(fixture.workdirs["node1"])
    killed: dict = {}

    def kill_job_group():
        try:
            rundir = _wait_for(lambda: next((d for d in runs.glob("*") if (d / "pid").is_file()
                                             and "fixture step 1/4" in _read(d / "log")), None),
                               timeout=60, what="the fixture benchmark to start")
            pid = int((rundir / "pid").read_text())
            os.killpg(pid, signal.SIGKILL)  # the wrapper is a session leader: its pid is the group id
            killed.update(run_id=rundir.name, pid=pid, at=time.monotonic())
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread below
            killed["error"] = exc

    killer = threading.Thread(target=kill_job_group, daemon=True)
    killer.start()
    t0 = time.monotonic()
    with pytest.raises(RunLost) as err:
        perform(project, claim, "node1", {"duration": 4}, progress=False, poll_s=0.2)
    noticed = time.monotonic()
    killer.join(5)
    assert "error" not in killed, killed.get("error")
    rid = killed["run_id"]
    # counted from the kill, not from the launch (which a loaded machine slows, and which is not what is judged):
    # perform polls every 0.2 s; 20 s is far beyond a few polls, and well before the job would have ended anyway
    assert noticed - killed["at"] < 20, f"the loss of the job took {noticed - killed['at']:.1f} s to notice"
    print(f"\nthe lost job noticed {noticed - killed['at']:.1f} s after the kill ({noticed - t0:.1f} s after launch)")

    msg = str(err.value)
    assert "no exit code" in msg and rid in msg and "node1" in msg
    assert "exit code: none (process lost)" in msg
    assert "fixture step 1/4" in msg and "fixture step 2/4" not in msg  # the log tail, cut where it died
    assert err.value.exit_code is None

    remote = runs / rid
    assert not (remote / "exit_code").exists()
    run = RunStore(project.settings.runs_dir).load(rid)
    assert run.status == "lost"
    assert run.manifest["exit_code"] is None and run.manifest["partial"] is True
    assert "fixture step 1/4" in (run.path / "log.txt").read_text()  # the log came home too
    # label.txt was written before the benchmark started, so it was fetched
    assert [p.name for p in run.files("label")] == ["label.txt"]
    run.verify()

    st = _cli("status", rid, timeout=60)
    assert st.returncode == 0, st.stderr
    assert f"run {rid}" in st.stdout and "recorded status lost" in st.stdout
    assert "on host node1: lost" in st.stdout
    assert "running" not in st.stdout


def test_host_reboot_while_no_client_is_attached_is_reported_lost_on_attach(fixture, bed):
    """The client dies, then the host "reboots": sshd goes down, every process of the job is gone,
    sshd comes back. A new process attaches by run id and learns the run is lost, with its log tail."""
    project = load_project(fixture.root)
    store = RunStore(project.settings.runs_dir)
    client = subprocess.Popen(REPROBOOK + ["run", CLAIM, "--source", "live", "--host", "node1",
                                           "-p", "duration", "30", "-q"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    runs = _runs_dir(fixture.workdirs["node1"])
    try:
        rundir = _wait_for(lambda: next((d for d in runs.glob("*") if (d / "pid").is_file()
                                         and "fixture step 1/4" in _read(d / "log")), None),
                           timeout=60, what="the fixture benchmark to start")
    finally:
        client.kill()
        client.wait(10)
    server = bed.servers["node1"]
    server.stop()
    os.killpg(int((rundir / "pid").read_text()), signal.SIGKILL)  # the reboot takes every process with it
    server.start()

    res = _cli("attach", rundir.name, "-q", timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "no exit code" in res.stderr and rundir.name in res.stderr and "node1" in res.stderr
    assert "fixture step 1/4" in res.stderr  # the log tail says how far it got
    assert "Traceback" not in res.stderr
    run = store.load(rundir.name)
    assert run.status == "lost" and run.manifest["exit_code"] is None
    assert "fixture step 1/4" in (run.path / "log.txt").read_text()
    run.verify()
    st = _cli("status", rundir.name, timeout=60)
    assert "recorded status lost" in st.stdout and "on host node1: lost" in st.stdout


# --------------------------------------------------------------------------- 2. a fetch broken off half-way

def _resume_and_check(host, outputs, local: Path, remote_dir: Path, kept: dict[str, str], method: str) -> None:
    """Fetch again: only what did not arrive moves; then 2 files change on the host and 1 local copy is lost."""
    second = fetch(host, outputs, local, method=method)
    remote = _remote_sums(remote_dir)
    assert len(second) == len(remote) == 40
    assert {f.path for f in second if not f.transferred} == set(kept)
    assert {f.path for f in second if f.transferred} == set(remote) - set(kept)
    assert _local_files(local) == remote
    assert {f.path: f.sha256 for f in second} == remote
    assert _litter(local) == []

    changed = sorted(remote_dir.iterdir())[3:5]
    for p in changed:
        p.write_bytes(os.urandom(256 * KIB))
    lost = sorted((local / "outputs" / "many").glob("f*.bin"))[20]
    lost.unlink()
    third = fetch(host, outputs, local, method=method)
    assert sorted(Path(f.path).name for f in third if f.transferred) == sorted(
        [changed[0].name, changed[1].name, lost.name])
    assert _local_files(local) == _remote_sums(remote_dir)
    assert {f.path: f.sha256 for f in third} == _remote_sums(remote_dir)


def test_sftp_fetch_broken_off_by_dropped_host_resumes_with_only_the_missing_files(fixture, bed, tmp_path):
    """After 10 of 40 files the host drops every session and stops answering; a later fetch resumes."""
    project = load_project(fixture.root)
    server = bed.servers["node1"]
    remote_dir, outputs = _many_outputs(fixture.workdirs["node1"], 40, 256 * KIB)
    local = tmp_path / "local-run"
    calls = []

    with open_host(project.hosts.host("node1"), project.settings) as host:
        real_get = host.get

        def get(remote, dest):
            calls.append(remote)
            if len(calls) == 11:
                # kill_sessions alone is healed by the next file's reconnect (see the next test);
                # stopping the listener as well makes the drop last, as for a host that fell off the network
                server.stop(kill_sessions=True)
                time.sleep(0.5)  # the client sees the reset before the next file, as between files of a real fetch
            return real_get(remote, dest)

        host.get = get
        with pytest.raises(TestbedError) as err:
            fetch(host, outputs, local, method="sftp")
        msg = str(err.value)
        assert len(calls) == 11, "the fault was not injected"
        assert err.value.host == "node1" and msg.startswith("host 'node1':")
        assert "fetch again" in msg and Path(calls[-1]).name in msg

        kept = _local_files(local)
        assert len(kept) == 10, sorted(kept)
        remote = _remote_sums(remote_dir)
        assert all(remote[rel] == digest for rel, digest in kept.items())  # intact, not truncated
        assert _litter(local) == []

        server.start()  # same address, port and host key
        host.get = real_get
        _resume_and_check(host, outputs, local, remote_dir, kept, "sftp")


def test_sftp_fetch_reconnects_after_sessions_are_dropped_between_files(fixture, bed, tmp_path):
    """kill_sessions after the 10th file: the 11th reopens the connection and every file arrives exactly once."""
    project = load_project(fixture.root)
    server = bed.servers["node1"]
    remote_dir, outputs = _many_outputs(fixture.workdirs["node1"], 40, 256 * KIB)
    local = tmp_path / "local-run"
    calls, dropped = [], []

    with open_host(project.hosts.host("node1"), project.settings) as host:
        real_get = host.get

        def get(remote, dest):
            calls.append(remote)
            if len(calls) == 11:
                dropped.extend(server.kill_sessions())
                # give the client's transport thread time to read the reset, as it has between two files
                # of a real transfer; a call racing it fails with "fetch again" instead (the test above)
                time.sleep(0.5)
            return real_get(remote, dest)

        host.get = get
        fetched = fetch(host, outputs, local, method="sftp")
        assert dropped, "kill_sessions found no session: the fault was not injected"
        assert server.log_text().count("Accepted publickey") == 2  # the first login, and one more after the drop
        assert len(calls) == 40 and all(f.transferred for f in fetched)
        assert _local_files(local) == _remote_sums(remote_dir) == {f.path: f.sha256 for f in fetched}
        assert _litter(local) == []


def _slow_rsync(tmp_path: Path, monkeypatch, kib_per_s: int) -> None:
    """Put an ``rsync`` first on PATH that is the real one with ``--bwlimit``, so a drop lands mid-transfer."""
    real = shutil.which("rsync")
    if not real:
        pytest.skip("rsync is not installed (.ci/install-system-deps.sh)")
    shim = tmp_path / "slow-bin"
    shim.mkdir()
    (shim / "rsync").write_text(f'#!/bin/sh\nexec {real} --bwlimit={kib_per_s} "$@"\n')
    (shim / "rsync").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")


def test_rsync_fetch_cut_mid_transfer_resumes_with_only_the_missing_files(fixture, bed, tmp_path, monkeypatch):
    """The SSH session under rsync is killed once 10 of 40 files have arrived; a later fetch resumes."""
    project = load_project(fixture.root)
    server = bed.servers["node1"]
    remote_dir, outputs = _many_outputs(fixture.workdirs["node1"], 40, 256 * KIB)
    local = tmp_path / "local-run"
    dropped = []

    def cut_after_ten():
        # rsync writes into ".f07.bin.XXXXXX" and renames: a name without the dot has arrived whole
        _wait_for(lambda: len(list((local / "outputs" / "many").glob("f*.bin"))) >= 10, timeout=60,
                  what="10 files to arrive")
        dropped.extend(server.kill_sessions())

    with monkeypatch.context() as m:
        _slow_rsync(tmp_path, m, kib_per_s=2048)  # 8 files a second: the cut comes with 30 still to go
        with open_host(project.hosts.host("node1"), project.settings) as host:
            cutter = threading.Thread(target=cut_after_ten, daemon=True)
            cutter.start()
            with pytest.raises(TestbedError) as err:
                fetch(host, outputs, local, method="rsync")
            cutter.join(10)
    assert dropped, "no session was killed: the fault was not injected"
    msg = str(err.value)
    assert err.value.host == "node1" and msg.startswith("host 'node1':")
    assert "rsync" in msg and "fetch again" in msg

    kept = _local_files(local)
    remote = _remote_sums(remote_dir)
    assert 10 <= len(kept) < 40, sorted(kept)
    assert all(remote[rel] == digest for rel, digest in kept.items())

    with open_host(project.hosts.host("node1"), project.settings) as host:
        _resume_and_check(host, outputs, local, remote_dir, kept, "rsync")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # paramiko's prefetch thread
def test_sftp_fetch_cut_in_the_middle_of_a_file_is_a_testbed_error(fixture, bed, tmp_path):
    project = load_project(fixture.root)
    server = bed.servers["node1"]
    remote_dir = fixture.workdirs["node1"] / "big"
    remote_dir.mkdir()
    with open(remote_dir / "big.bin", "wb") as f:
        f.truncate(64 << 20)  # long enough to be cut half-way
    outputs = {"big": OutputSpec("big", "big")}
    part = tmp_path / "local-run" / "outputs" / "big" / "big.bin.part"
    dropped = []

    def cut_mid_file():
        _wait_for(lambda: part.is_file() and part.stat().st_size > (1 << 20), timeout=60, what="the transfer")
        dropped.extend(server.kill_sessions())

    with open_host(project.hosts.host("node1"), project.settings) as host:
        cutter = threading.Thread(target=cut_mid_file, daemon=True)
        cutter.start()
        try:
            with pytest.raises(TestbedError) as err:
                fetch(host, outputs, tmp_path / "local-run", method="sftp")
        finally:
            cutter.join(10)
    assert dropped
    assert err.value.host == "node1" and "big.bin" in str(err.value) and "fetch again" in str(err.value)
    assert not part.exists()


class _SshServerWithoutSftp(SshServer):
    """An sshd that offers no SFTP subsystem, as some hardened hosts do."""

    def _write_config(self) -> None:
        super()._write_config()
        text = self.config_path.read_text()
        assert "Subsystem sftp" in text
        self.config_path.write_text("".join(l for l in text.splitlines(True) if not l.startswith("Subsystem")))


def test_sftp_fetch_from_host_that_refuses_sftp_is_a_testbed_error(bed, tmp_path, monkeypatch):
    server = _SshServerWithoutSftp(bed.root / "hosts" / "nosftp", "127.0.0.4", bed.authorized_keys_path).start()
    try:
        with open(bed.ssh_config_path, "a") as cfg:
            cfg.write(f"\nHost nosftp\n    HostName {server.addr}\n    Port {server.port}\n    User {bed.user}\n"
                      f"    IdentityFile {bed.client_key_path}\n    IdentitiesOnly yes\n"
                      f"    UserKnownHostsFile {bed.known_hosts_path}\n    StrictHostKeyChecking yes\n")
        with open(bed.known_hosts_path, "a") as kh:
            kh.write(server.known_hosts_line() + "\n")
        fx = make_project(tmp_path / "fx", {"nosftp": "nosftp"})
        monkeypatch.setenv("REPROBOOK_SSH_CONFIG", str(bed.ssh_config_path))
        project = load_project(fx.root)
        (fx.workdirs["nosftp"] / "out").mkdir()
        (fx.workdirs["nosftp"] / "out" / "a.txt").write_text("a\n")
        with open_host(project.hosts.host("nosftp"), project.settings) as host:
            assert host.run("echo up").stdout == "up\n"  # commands work; only SFTP is refused
            with pytest.raises(TestbedError) as err:
                fetch(host, {"out": OutputSpec("out", "out")}, tmp_path / "local", method="sftp")
        assert err.value.host == "nosftp" and "a.txt" in str(err.value)
    finally:
        server.stop()


# --------------------------------------------------------------------------- 3. the local side refuses

def test_sftp_fetch_onto_full_disk_keeps_earlier_files_and_resumes(fixture, tmp_path):
    """The 5th file's ``.part`` is /dev/full: its first write fails with ENOSPC."""
    project = load_project(fixture.root)
    remote_dir, outputs = _many_outputs(fixture.workdirs["node1"], 8, 64 * KIB)
    local = tmp_path / "local-run"
    with open_host(project.hosts.host("node1"), project.settings) as host:
        order = [rf.relpath for rf in list_outputs(host, outputs)]  # the order fetch goes in
        part = local / "outputs" / "many" / (order[4] + ".part")
        part.parent.mkdir(parents=True)
        part.symlink_to("/dev/full")
        with pytest.raises(OutputError) as err:
            fetch(host, outputs, local, method="sftp")
        msg = str(err.value)
        assert "No space left on device" in msg and "kept" in msg and "fetch again" in msg
        assert err.value.file == str(local / "outputs" / "many" / order[4])
        assert Path("/dev/full").is_char_device()  # only the link went, not what it pointed at
        assert not part.is_symlink()
        kept = _local_files(local)
        assert sorted(kept) == sorted(f"outputs/many/{rel}" for rel in order[:4])
        remote = _remote_sums(remote_dir)
        assert all(remote[rel] == digest for rel, digest in kept.items())

        again = fetch(host, outputs, local, method="sftp")
        assert [Path(f.path).name for f in again if f.transferred] == order[4:]
        assert _local_files(local) == remote and _litter(local) == []


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs: a real file system that really fills up (needs root, else skipped)."""
    mnt = tmp_path / "small-disk"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(mnt)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({res.stderr.strip()}); the /dev/full test covers SFTP")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def _fill_the_disk(fixture, small_disk: Path, method: str):
    """Fetch 2 MiB onto the 1 MiB disk: an OutputError, and what fitted is kept intact; then free space."""
    project = load_project(fixture.root)
    remote_dir, outputs = _many_outputs(fixture.workdirs["node1"], 8, 256 * KIB)
    local = small_disk / "run"
    with open_host(project.hosts.host("node1"), project.settings) as host:
        with pytest.raises(OutputError) as err:
            fetch(host, outputs, local, method=method)
    assert "fetch again" in str(err.value) and "kept" in str(err.value)
    assert err.value.file.startswith(str(local / "outputs" / "many"))
    kept = _local_files(local)
    remote = _remote_sums(remote_dir)
    assert 1 <= len(kept) < 8, sorted(kept)
    assert all(remote[rel] == digest for rel, digest in kept.items())
    subprocess.run(["mount", "-o", "remount,size=8m", str(small_disk)], check=True)  # space is freed
    return project, outputs, local, remote, kept, err.value


@pytest.mark.parametrize("method", ["rsync", "sftp"])
def test_fetch_onto_a_really_full_disk_keeps_what_fitted_and_completes_later(fixture, small_disk, method):
    project, outputs, local, remote, kept, _ = _fill_the_disk(fixture, small_disk, method)
    with open_host(project.hosts.host("node1"), project.settings) as host:
        again = fetch(host, outputs, local, method=method)
    assert _local_files(local) == remote == {f.path: f.sha256 for f in again}
    assert _litter(local) == []


@pytest.mark.parametrize("method", ["rsync", "sftp"])
def test_full_disk_error_says_the_disk_is_full(fixture, small_disk, method):
    *_, err = _fill_the_disk(fixture, small_disk, method)
    assert "No space left on device" in str(err)


@pytest.mark.parametrize("method", ["rsync", "sftp"])
def test_fetch_after_a_full_disk_transfers_only_what_is_missing(fixture, small_disk, method):
    project, outputs, local, remote, kept, _ = _fill_the_disk(fixture, small_disk, method)
    with open_host(project.hosts.host("node1"), project.settings) as host:
        again = fetch(host, outputs, local, method=method)
    assert {f.path for f in again if not f.transferred} == set(kept)


@pytest.mark.parametrize("method", ["rsync", "sftp"])
def test_unwritable_run_directory_names_the_path_and_deletes_nothing(fixture, tmp_path, method):
    """The run directory's ``outputs`` is a regular file: an OutputError naming it, and both files untouched."""
    project = load_project(fixture.root)
    _, outputs = _many_outputs(fixture.workdirs["node1"], 3, 4 * KIB)
    local = tmp_path / "local-run"
    local.mkdir()
    (local / "outputs").write_text("not a directory, and not ours to delete\n")
    (local / "manifest.json").write_text('{"run_id": "x"}\n')
    with open_host(project.hosts.host("node1"), project.settings) as host:
        with pytest.raises(OutputError) as err:
            fetch(host, outputs, local, method=method)
    msg = str(err.value)
    assert str(local / "outputs") in err.value.file and msg.startswith(str(local / "outputs"))
    assert "Not a directory" in msg
    assert (local / "outputs").read_text() == "not a directory, and not ours to delete\n"
    assert (local / "manifest.json").read_text() == '{"run_id": "x"}\n'
    assert sorted(p.name for p in local.iterdir()) == ["manifest.json", "outputs"]


# --------------------------------------------------------------------------- 4. hosts that cannot be used

CONNECT_TIMEOUT_S = 3
BOUND_S = 15  # five times the connect timeout: the black hole takes that timeout by design, the others fail at once


@pytest.fixture(scope="module")
def broken_hosts(tmp_path_factory):
    """One project with a host for each way of being unusable, all with ``connect_timeout_s: 3``."""
    base = tmp_path_factory.mktemp("broken")
    with SshTestbed(base / "ssh") as bed, BlackholeServer("127.0.0.9") as hole:
        down = bed.add_host("down", "127.0.0.4")
        down.stop()  # nothing listens on its port any more
        ok = bed.add_host("ok", "127.0.0.5")
        wrong_port = free_port("127.0.0.5")
        keyhost = bed.add_host("keyhost", "127.0.0.6")
        other_key = base / "not_authorized_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other_key)], check=True,
                       capture_output=True)
        bed.add_host("changed", "127.0.0.7").regenerate_host_key()
        bed.add_host("stranger", "127.0.0.8", trust=False)
        with open(bed.ssh_config_path, "a") as cfg:
            common = (f"    User {bed.user}\n    IdentitiesOnly yes\n    UserKnownHostsFile {bed.known_hosts_path}\n"
                      "    StrictHostKeyChecking yes\n")
            cfg.write(f"\nHost refusedkey\n    HostName {keyhost.addr}\n    Port {keyhost.port}\n"
                      f"    IdentityFile {other_key}\n" + common)
            cfg.write(f"\nHost blackhole\n    HostName {hole.addr}\n    Port {hole.port}\n"
                      f"    IdentityFile {bed.client_key_path}\n" + common)
        ssh = {"down": "down", "wrongport": f"ok:{wrong_port}", "refusedkey": "refusedkey",
               "changedkey": "changed", "unknownkey": "stranger", "blackhole": "blackhole", "ok": "ok"}
        fx = make_project(base / "fx", {}, extra_hosts_yaml={
            name: {"ssh": alias, "workdir": str(base / "remote" / name), "connect_timeout_s": CONNECT_TIMEOUT_S}
            for name, alias in ssh.items()})
        yield {"root": fx.root, "ssh_config": bed.ssh_config_path, "wrong_port": wrong_port, "ok": ok,
               "blackhole": hole}


@pytest.fixture
def broken(broken_hosts, monkeypatch):
    monkeypatch.setenv("REPROBOOK_ROOT", str(broken_hosts["root"]))
    monkeypatch.setenv("REPROBOOK_SSH_CONFIG", str(broken_hosts["ssh_config"]))
    monkeypatch.delenv("REPROBOOK_HOSTS", raising=False)
    return broken_hosts


UNUSABLE = {
    # name: (error class, words the message must hold)
    "down": (HostUnreachable, ["cannot connect to 127.0.0.4:", "Is the machine up", "port right"]),
    "wrongport": (HostUnreachable, ["cannot connect to 127.0.0.5:{wrong_port}", "port right"]),
    "refusedkey": (AuthenticationFailed, ["refused our keys", "authorized_keys", "IdentityFile"]),
    "changedkey": (HostKeyError, ["CHANGED", "SHA256:", "ssh-keygen -R"]),
    "unknownkey": (HostKeyError, ["not in known_hosts", "SHA256:", "trust-host unknownkey"]),
    "blackhole": (HostUnreachable, ["127.0.0.9", f"within {CONNECT_TIMEOUT_S} s", "SSH server listening"]),
}


@pytest.mark.parametrize("name", list(UNUSABLE))
def test_unusable_host_fails_fast_naming_host_and_fix(broken, name):
    project = load_project(broken["root"])
    cls, words = UNUSABLE[name]
    t0 = time.monotonic()
    with pytest.raises(ReprobookError) as err:
        perform(project, project.claim(CLAIM), name, {"duration": 1}, progress=False, poll_s=0.2)
    elapsed = time.monotonic() - t0
    assert type(err.value) is cls, f"{type(err.value).__name__}: {err.value}"
    assert elapsed < BOUND_S, f"{name}: took {elapsed:.1f} s"
    msg = str(err.value)
    assert err.value.host == name and msg.startswith(f"host {name!r}:")
    for word in words:
        assert word.format(**broken) in msg, f"{word!r} not in: {msg}"
    assert RunStore(project.settings.runs_dir).runs() == []  # nothing half-recorded


def test_the_reachable_host_of_the_broken_project_works(broken):
    """The control: the same project, testbed and timeouts reach a working host, so the failures are the faults."""
    project = load_project(broken["root"])
    with open_host(project.hosts.host("ok"), project.settings) as host:
        assert host.run("echo ok").stdout == "ok\n"


@pytest.fixture(scope="module")
def check_host_cli(broken_hosts):
    """``reprobook check-host`` on the down host, on the black hole and on the working host, run side by side.

    name -> (result, seconds). The working host is the control: the same command, started at the same
    moment under the same load, that has nothing to wait for.
    """
    env = {**os.environ, "REPROBOOK_ROOT": str(broken_hosts["root"]),
           "REPROBOOK_SSH_CONFIG": str(broken_hosts["ssh_config"])}
    env.pop("REPROBOOK_HOSTS", None)
    out = {}

    def one(name):
        t0 = time.monotonic()
        res = _cli("check-host", name, timeout=60, env=env)
        out[name] = (res, time.monotonic() - t0)

    threads = [threading.Thread(target=one, args=(n,)) for n in ("down", "blackhole", "ok")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


@pytest.mark.parametrize("name, words", [
    ("down", ["cannot connect to 127.0.0.4:", "Is the machine up", "port right"]),
    ("blackhole", ["did not complete the SSH handshake within 3 s", "127.0.0.9", "SSH server listening"])])
def test_check_host_cli_exits_2_with_the_reason(check_host_cli, name, words):
    res, elapsed = check_host_cli[name]
    assert res.returncode == 2, res.stdout + res.stderr
    # fails fast: what it costs beyond the same command on the working host, run beside it, is bounded (a bound on
    # the whole time failed on a loaded machine: 20.1 s there, most of it the CLI's start, which the control pays too)
    control, control_s = check_host_cli["ok"]
    assert control.returncode in (0, 1) and "host ok: reachable" in control.stdout, control.stdout + control.stderr
    assert elapsed - control_s < BOUND_S, f"check-host {name} took {elapsed:.1f} s, on the working host {control_s:.1f} s"
    print(f"\ncheck-host {name}: {elapsed:.1f} s; on the working host beside it: {control_s:.1f} s")
    # paramiko's own log lines may come before or after it (see the next test): find the CLI's message
    errors = [line for line in res.stderr.splitlines() if line.startswith("reprobook: error: ")]
    assert len(errors) == 1, res.stderr
    assert errors[0].startswith(f"reprobook: error: host {name!r}:")
    for word in words:
        assert word in errors[0]
    assert "reachable" not in res.stdout


@pytest.mark.parametrize("name", ["down", "blackhole"])
def test_check_host_cli_stderr_is_only_the_message(check_host_cli, name):
    res, _ = check_host_cli[name]
    assert res.returncode == 2
    assert res.stderr.startswith("reprobook: error: ") and res.stderr.count("\n") == 1, res.stderr
    assert "Traceback" not in res.stderr


# --------------------------------------------------------------------------- 5. two launches at once

def _launch_together(*param_sets: list[str]) -> list[subprocess.CompletedProcess]:
    go = threading.Barrier(len(param_sets))
    results: list = [None] * len(param_sets)

    def one(i, params):
        argv = REPROBOOK + ["run", CLAIM, "--source", "live", "--host", "node1", "-q"] + params
        go.wait()
        results[i] = subprocess.run(argv, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)

    threads = [threading.Thread(target=one, args=(i, p)) for i, p in enumerate(param_sets)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_same_claim_launched_twice_at_once_runs_once(fixture):
    a, b = _launch_together(["-p", "duration", "3"], ["-p", "duration", "3"])
    assert a.returncode == 0, a.stdout + a.stderr
    assert b.returncode == 0, b.stdout + b.stderr
    verdict = [l for l in a.stdout.splitlines() if l.startswith(CLAIM + ":")]
    assert verdict and verdict[0].startswith(f"{CLAIM}: HOLDS")
    assert verdict == [l for l in b.stdout.splitlines() if l.startswith(CLAIM + ":")]

    remote = _remote_runs(fixture.workdirs["node1"])
    assert len(remote) == 1, remote
    assert (remote[0] / "log").read_text().count("fixture step 1/4") == 1  # the benchmark ran once
    assert len((remote[0] / "checkout.txt").read_text().splitlines()) == 2  # appended to by each execution
    assert (remote[0] / "exit_code").read_text().strip() == "0"
    rid = remote[0].name
    assert f"run:    {rid}" in a.stdout and f"run:    {rid}" in b.stdout
    run = RunStore(load_project(fixture.root).settings.runs_dir).load(rid)
    assert run.status == "succeeded" and run.manifest["verdict"] == "holds"
    run.verify()


def test_different_runs_launched_at_once_one_is_refused_naming_the_other(fixture):
    a, b = _launch_together(["-p", "duration", "3", "-p", "label", "a"],
                            ["-p", "duration", "3", "-p", "label", "b"])
    remote = _remote_runs(fixture.workdirs["node1"])
    assert len(remote) == 1, remote  # only one of them started on the host
    winner_id = remote[0].name
    assert sorted([a.returncode, b.returncode]) == [0, 2], (a.stdout + a.stderr, b.stdout + b.stderr)
    won, lost = (a, b) if a.returncode == 0 else (b, a)
    assert f"run:    {winner_id}" in won.stdout
    assert "benchmark lock" in lost.stderr and winner_id in lost.stderr
    assert f"reprobook cancel {winner_id}" in lost.stderr and "node1" in lost.stderr
    assert "Traceback" not in lost.stderr
    assert (remote[0] / "log").read_text().count("fixture step 1/4") == 1
    assert len((remote[0] / "checkout.txt").read_text().splitlines()) == 2
    label = (fixture.workdirs["node1"] / "bench" / "label.txt").read_text()
    assert label == ("a" if won is a else "b")


def test_run_refused_for_a_busy_host_is_not_left_recorded_as_launching(fixture):
    project = load_project(fixture.root)
    with open_host(project.hosts.host("node1"), project.settings) as host:
        holder, started = jobs.launch(host, "holder-run", "sleep 30")
        assert started
        try:
            with pytest.raises(HostBusy) as err:
                perform(project, project.claim(CLAIM), "node1", {"duration": 1}, progress=False, poll_s=0.2)
            assert err.value.holder == "holder-run"
        finally:
            assert holder.cancel().state == "cancelled"
    stale = [(r.id, r.status) for r in RunStore(project.settings.runs_dir).runs()
             if r.status in ("launching", "running")]
    assert stale == []


# --------------------------------------------------------------------------- 6. permissions

def test_run_directories_are_owner_only(fixture):
    project = load_project(fixture.root)
    run = perform(project, project.claim(CLAIM), "node1", {"duration": 0.2}, progress=False, poll_s=0.2)
    assert run.status == "succeeded"
    base = fixture.workdirs["node1"] / ".reprobook"
    assert _mode(base) == 0o700
    assert _mode(base / "runs") == 0o700
    assert _mode(base / "runs" / run.id) == 0o700
    assert _mode(base / "runs" / run.id / "log") == 0o600
    assert _mode(run.path) == 0o700
    assert _mode(run.path / "manifest.json") == 0o600
    store = project.settings.runs_dir
    for d in (store, store / "fixture", store / "fixture" / "validator-throughput"):
        assert _mode(d) == 0o700, d


# --------------------------------------------------------------------------- 7. secrets stay out

def _files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]


def _leaks(files: list[Path], needles: dict[str, bytes]) -> list[str]:
    found = []
    for p in files:
        data = p.read_bytes()
        found += [f"{what} in {p}" for what, needle in needles.items() if needle in data]
    return found


def test_no_secret_reaches_the_run_store_or_the_site(fixture, bed, monkeypatch, root):
    password = f"hunter2-{secrets.token_hex(8)}"
    monkeypatch.setenv("REPROBOOK_TEST_PASSWORD", password)
    key_lines = bed.client_key_path.read_text().strip().splitlines()
    assert key_lines[0].startswith("-----BEGIN") and key_lines[-1].startswith("-----END")
    body = key_lines[1:-1]
    needles = {"the password": password.encode(), "the private key": "".join(body).encode()}
    needles.update({f"private key line {i}": line.encode() for i, line in enumerate(body[1:-1], 2)})

    res = _cli("run", CLAIM, "--source", "live", "--host", "node1", "-p", "duration", "0.2", "-q",
               env={**os.environ, "REPROBOOK_TEST_PASSWORD": password})
    assert res.returncode == 0, res.stdout + res.stderr
    store = load_project(fixture.root).settings.runs_dir
    files = _files_under(store)
    names = {p.name for p in files}
    assert {"manifest.json", "notebook.ipynb", "log.txt", "verdict.json", "out1.txt", "out32.txt"} <= names
    remote = _remote_runs(fixture.workdirs["node1"])
    assert len(remote) == 1
    scanned = files + _files_under(remote[0])
    assert _leaks(scanned, needles) == []
    assert not any(b"PRIVATE KEY-----" in p.read_bytes() for p in scanned)
    assert password not in res.stdout + res.stderr
    # the scan can fail: it finds each needle where it is
    canary = fixture.root / "canary.txt"
    canary.write_text(f"password={password}\nkey={''.join(body)}\n")
    found = _leaks([canary, bed.client_key_path], needles)
    assert {hit.split(" in ")[0] for hit in found} == set(needles)

    site = root / "_build" / "html"
    if not (site / "book" / "summary.html").is_file():  # not built by the book tests yet: build it now
        env = {**os.environ, "REPROBOOK_ROOT": str(root), "REPROBOOK_ARTIFACT_MIRROR": str(require_mirror())}
        built = subprocess.run(REPROBOOK + ["book"], cwd=root, env=env, capture_output=True, text=True, timeout=900)
        assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    pages = _files_under(site)
    assert any(p.suffix == ".html" for p in pages)
    assert _leaks(pages, needles) == []
    assert not any(b"PRIVATE KEY-----" in p.read_bytes() for p in pages)
