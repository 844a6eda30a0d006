"""Real OpenSSH servers on loopback addresses, for integration tests.

Each `SshServer` is one ``sshd -D`` process with its own throwaway host key and
config, listening on a loopback address of its own (127.0.0.2, 127.0.0.3, ...)
on a free port. An `SshTestbed` puts several of them behind one throwaway
client key, one ``known_hosts`` and one ``ssh_config``, so the code under test
reaches them by alias, as it reaches real machines::

    with SshTestbed() as bed:
        bed.add_host("node1", "127.0.0.2")
        subprocess.run(bed.ssh_argv("node1") + ["true"], check=True)

`BlackholeServer` accepts TCP connections and never answers, for timeout tests.

Every server started here is also stopped, with its sessions, when the
interpreter exits, so a test run that dies half-way leaves no sshd behind.
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Sequence

SSHD = os.environ.get("REPROBOOK_SSHD", "/usr/sbin/sshd")
PRIVSEP_DIR = Path("/run/sshd")
# OpenSSH 9.8 split the per-connection server into sshd-session and sshd-auth.
_SSHD_NAMES = frozenset({"sshd", "sshd-session", "sshd-auth"})
_INSTALL_HINT = "install it with .ci/install-system-deps.sh"

# Every server ever started, for the exit-time safety net (stop() is idempotent).
_started_servers: list[SshServer] = []


class SshdError(RuntimeError):
    """An sshd of the test support could not be set up, started or stopped."""

    def __init__(self, message: str):
        super().__init__(message)


def free_port(addr: str = "127.0.0.1") -> int:
    """Return a TCP port that is free on `addr` right now.

    The port is found by binding port 0 and releasing it, so another process
    may take it before the caller binds it; `SshServer.start` retries.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((addr, 0))
        return sock.getsockname()[1]


def ensure_privsep_dir() -> None:
    """Create ``/run/sshd``, which sshd running as root needs (it is lost at reboot)."""
    if os.geteuid() == 0 and not PRIVSEP_DIR.is_dir():
        PRIVSEP_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)


def _check_path_is_plain(path: Path) -> None:
    # ssh_config and sshd_config values with spaces need quoting, which
    # paramiko's config parser does not undo for every key.
    if any(ch.isspace() for ch in str(path)):
        raise SshdError(f"test-support path {path} contains whitespace; use a directory without spaces")


def _keygen(path: Path, comment: str) -> None:
    """Write a new passphrase-less ed25519 key pair at `path` and `path`.pub."""
    for old in (path, path.with_name(path.name + ".pub")):
        old.unlink(missing_ok=True)
    try:
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
            check=True,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=30,
        )
    except FileNotFoundError as exc:
        raise SshdError(f"ssh-keygen not found; {_INSTALL_HINT}") from exc
    except subprocess.CalledProcessError as exc:
        raise SshdError(f"ssh-keygen failed for {path}: {exc.stderr.decode(errors='replace').strip()}") from exc


def _public_key_text(private_key: Path) -> str:
    """Return ``"ssh-ed25519 AAAA..."`` (type and base64, no comment) of a key pair."""
    fields = private_key.with_name(private_key.name + ".pub").read_text().split()
    return f"{fields[0]} {fields[1]}"


def _known_hosts_name(addr: str, port: int) -> str:
    return addr if port == 22 else f"[{addr}]:{port}"


_option_support: dict[str, bool] = {}


def _sshd_accepts(option: str, host_key: Path) -> bool:
    """Whether this sshd knows config line `option` (``sshd -t`` on a scratch config, once)."""
    if option not in _option_support:
        with tempfile.TemporaryDirectory(prefix="reprobook-sshd-probe-") as tmp:
            cfg = Path(tmp, "sshd_config")
            cfg.write_text(f"HostKey {host_key}\n{option}\n")
            probe = subprocess.run(
                [SSHD, "-t", "-f", str(cfg)], capture_output=True, stdin=subprocess.DEVNULL, timeout=30
            )
        _option_support[option] = probe.returncode == 0
    return _option_support[option]


# --- /proc helpers --------------------------------------------------------------


def _proc_table() -> dict[int, tuple[int, str, str]]:
    """Map pid -> (ppid, comm, state) for every live process."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(entry)
            if stat is not None:  # else it exited meanwhile
                table[int(entry)] = stat
    return table


def _child_named(parent: int, names) -> int | None:
    """The pid of a live child of ``parent`` whose command is one of ``names``, if any."""
    for pid, (ppid, comm, state) in _proc_table().items():
        if ppid == parent and comm in names and state != "Z":
            return pid
    return None


def _done_within(pid: int, timeout: float) -> bool:
    """Whether ``pid`` is gone (or a zombie) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stat = _stat(pid)
        if stat is None or stat[2] == "Z":
            return True
        time.sleep(0.01)
    return False


def _descendants(table: dict[int, tuple[int, str, str]], root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _connected_socket_inodes(addr: str, port: int) -> set[str]:
    """Inodes of non-listening IPv4 TCP sockets whose local end is addr:port."""
    local = "%08X:%04X" % (int.from_bytes(socket.inet_aton(addr), sys.byteorder), port)
    inodes = set()
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            if fields[1] == local and fields[3] != "0A":  # 0A is TCP_LISTEN
                inodes.add(fields[9])
    return inodes


def _holders_of(inodes: set[str], pids) -> set[int]:
    holders = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:[") and link[8:-1] in inodes:
                holders.add(pid)
                break
    return holders


def _stat(pid) -> tuple[int, str, str] | None:
    """(ppid, comm, state) of `pid`, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # comm is in parentheses and may itself contain spaces or ')'.
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
    return int(ppid), comm, state


def _done(pid: int) -> bool:
    """True once `pid` is gone, or a zombie that no living sshd will reap.

    A zombie still shows as "sshd" in pgrep. A living sshd parent reaps its
    children within milliseconds; orphans are left to init (or a subreaper),
    which may take seconds, so they are not waited for.
    """
    me = _stat(pid)
    if me is None:
        return True
    ppid, _, state = me
    if state != "Z":
        return False
    parent = _stat(ppid)
    return parent is None or parent[1] not in _SSHD_NAMES or parent[2] == "Z"


def _banner_seen(addr: str, port: int) -> bool:
    """Connect to addr:port and report whether an SSH-2.0 banner arrives."""
    try:
        with socket.create_connection((addr, port), timeout=0.5) as sock:
            data = b""
            while b"\n" not in data and len(data) < 512:
                chunk = sock.recv(256)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return False
    return b"SSH-2.0" in data


# --- servers --------------------------------------------------------------------


class SshServer:
    """One OpenSSH ``sshd -D`` process on a loopback address, with its own host key.

    Parameters
    ----------
    root : path
        Directory for the host key, config, pid file and log (created if missing).
    addr : str
        Loopback address to listen on, e.g. ``"127.0.0.2"``.
    authorized_keys : path
        The ``authorized_keys`` file used for every user (``AuthorizedKeysFile``).
    port : int, optional
        Port to listen on; by default a free one, re-picked if taken at first start.
    isolated : str, optional
        A host name: the server then runs in a "machine" of its own, PID, mount and UTS namespaces
        made with ``unshare`` and held by a small init, so that what its sessions start sees only
        that host's processes (``ps``, ``pkill`` and ``kill`` by name reach no other host's, nor
        anything else on this machine), has a ``/dev/shm`` of its own, and ``hostname`` says that name.
    private_dirs : paths, optional
        For an isolated host: directories that are the host's own, as on a machine of its own (a per-host
        directory under ``root`` bind-mounted over each in the host's mount namespace; the path itself is made
        on this machine, empty, if missing). What a host writes there, the other hosts do not see. The machine outlives restarts of its sshd; `shutdown` (and the
        testbed's close) ends it and everything in it, as powering a machine off does.
    home : path, optional
        For an isolated host: the home directory of the user its sessions log in as, made the host's own (one of
        its private directories) and filled from ``/etc/skel`` when first made, as ``useradd -m`` fills a new
        user's home on a freshly installed machine: the sessions read that ``~/.bashrc``, not this machine's.

    Notes
    -----
    Stopping the listening sshd does not end the sessions it already forked
    (Debian's sshd leaves them running, as ``systemctl restart ssh`` does);
    `stop` and `restart` therefore kill them too unless told otherwise, and
    `kill_sessions` kills them alone, which looks to a client like a dropped
    connection. Only sshd processes are killed; the remote commands they ran
    get what they would get from a real drop (closed pipes, SIGPIPE/SIGHUP).

    Examples
    --------
    >>> server = SshServer(tmp_path / "a", "127.0.0.2", bed_keys).start()  # doctest: +SKIP
    >>> server.known_hosts_line()                                          # doctest: +SKIP
    '[127.0.0.2]:40123 ssh-ed25519 AAAAC3Nz...'
    """

    def __init__(self, root, addr: str, authorized_keys, *, port: int | None = None,
                 extra_config: Sequence[str] = (), isolated: str | None = None,
                 private_dirs: Sequence[str | os.PathLike] = (), home: str | os.PathLike | None = None):
        self.extra_config = list(extra_config)
        self.isolated = isolated
        if (private_dirs or home is not None) and isolated is None:
            raise ValueError("a private directory or home needs an isolated host (a mount namespace of its own)")
        self.private_dirs = [Path(d).resolve() for d in private_dirs]
        self.home = Path(home).resolve() if home is not None else None
        if self.home is not None and self.home not in self.private_dirs:
            self.private_dirs.append(self.home)
        self._machine: subprocess.Popen | None = None
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        _check_path_is_plain(self.root)
        self.addr = addr
        self.authorized_keys = Path(authorized_keys).resolve()
        _check_path_is_plain(self.authorized_keys)
        self.host_key_path = self.root / "ssh_host_ed25519_key"
        self.config_path = self.root / "sshd_config"
        self.pid_file = self.root / "sshd.pid"
        self.log_path = self.root / "sshd.log"
        self._port = port if port is not None else free_port(addr)
        self._may_repick_port = port is None
        self._proc: subprocess.Popen | None = None
        if not Path(SSHD).is_file():
            raise SshdError(f"{SSHD} not found; {_INSTALL_HINT}")
        _keygen(self.host_key_path, f"reprobook-test-host@{addr}")

    def __repr__(self) -> str:
        state = f"pid {self.pid}" if self.running else "stopped"
        return f"<SshServer {self.addr}:{self.port} {state}>"

    def __enter__(self) -> SshServer:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    # -- facts

    @property
    def port(self) -> int:
        return self._port

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """Pid of the listening sshd (as this machine's root namespace numbers it), or None when it is not running."""
        if not self.running:
            return None
        if self.isolated is None:
            return self._proc.pid
        # nsenter forks the sshd into the host's PID namespace and waits for it
        return _child_named(self._proc.pid, _SSHD_NAMES)

    @property
    def machine_pid(self) -> int | None:
        """Pid of an isolated host's init (its PID namespace's process 1), or None."""
        if self._machine is None or self._machine.poll() is not None:
            return None
        return _child_named(self._machine.pid, {"bash"})

    @property
    def host_key_pub(self) -> str:
        """The host public key on disk, ``"ssh-ed25519 AAAA..."``."""
        return _public_key_text(self.host_key_path)

    def known_hosts_line(self) -> str:
        """``[addr]:port ssh-ed25519 AAAA...``, the line that makes clients trust this server."""
        return f"{_known_hosts_name(self.addr, self.port)} {self.host_key_pub}"

    def log_text(self) -> str:
        """Everything sshd has logged so far (all starts)."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def _log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    # -- lifecycle

    def _write_config(self) -> None:
        lines = [
            f"ListenAddress {self.addr}:{self.port}",
            f"HostKey {self.host_key_path}",
            f"PidFile {self.pid_file}",
            f"AuthorizedKeysFile {self.authorized_keys}",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PubkeyAuthentication yes",
            "PermitRootLogin prohibit-password",
            "StrictModes no",
            "UsePAM no",
            "LogLevel VERBOSE",
            "MaxStartups 100",
            "PrintMotd no",
            "PrintLastLog no",
            "Subsystem sftp internal-sftp",
        ]
        # OpenSSH >= 9.8 penalises source addresses whose connections end
        # without authenticating, which the readiness probes and the failure
        # tests do all the time, all from 127.0.0.1.
        if _sshd_accepts("PerSourcePenalties no", self.host_key_path):
            lines.append("PerSourcePenalties no")
        lines += self.extra_config
        self.config_path.write_text("\n".join(lines) + "\n")

    def start(self, timeout: float = 10.0) -> SshServer:
        """Start sshd and wait until it answers with an SSH banner; return self.

        Raises `SshdError` with the tail of the sshd log if it exits or does
        not answer within `timeout` seconds.
        """
        if self.running:
            return self
        ensure_privsep_dir()
        attempts = 3 if self._may_repick_port else 1
        for attempt in range(1, attempts + 1):
            self._write_config()
            log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
            self._spawn()
            try:
                self._wait_ready(timeout)
            except SshdError:
                port_taken = b"Address already in use" in self.log_path.read_bytes()[log_start:]
                if attempt < attempts and port_taken:
                    self._port = free_port(self.addr)
                    continue
                raise
            break
        # Once started, the port is this host's identity (ssh_config, known_hosts).
        self._may_repick_port = False
        return self

    def _boot(self) -> int:
        """Start the isolated host's machine (once) and return its init's pid."""
        pid = self.machine_pid
        if pid is not None:
            return pid
        if shutil.which("unshare") is None or shutil.which("nsenter") is None or os.geteuid() != 0:
            raise SshdError("an isolated test host needs root and util-linux's unshare and nsenter")
        # process 1 of the host: sets the host name and gives it a /dev/shm of its own (the harness empties it; 4 GiB
        # at most, room for the persistent-memory log's file), reaps orphans (bash waits for any child), ends on TERM
        # and its private directories (pairs: the path, the host's own directory bind-mounted over it)
        init = ('hostname "$1"; shift; mount -t tmpfs -o mode=1777,size=4g tmpfs /dev/shm; '
                'while [ $# -gt 1 ]; do mkdir -p "$1" "$2" && mount --bind "$2" "$1" || exit 1; shift 2; done; '
                'trap "exit 0" TERM; while :; do sleep 3600 & wait $!; done')
        pairs = [str(x) for i, d in enumerate(self.private_dirs) for x in (d, self.root / "private" / str(i))]
        if self.home is not None:
            own = self.root / "private" / str(self.private_dirs.index(self.home))
            if not own.exists() and Path("/etc/skel").is_dir():
                shutil.copytree("/etc/skel", own, symlinks=True)
            own.mkdir(parents=True, exist_ok=True)
            own.chmod(0o700)
        self._machine = subprocess.Popen(
            ["unshare", "--pid", "--mount-proc", "--uts", "--kill-child=SIGKILL", "--", "bash", "-c", init,
             "init", self.isolated, *pairs], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 10
        while (pid := self.machine_pid) is None:
            if self._machine.poll() is not None or time.monotonic() > deadline:
                raise SshdError(f"the isolated host {self.isolated} did not start (unshare exited "
                                f"{self._machine.poll()})")
            time.sleep(0.01)
        return pid

    def shutdown(self) -> None:
        """Stop the server and, for an isolated host, end its machine: every process in it is killed."""
        self.stop()
        init = self.machine_pid
        machine, self._machine = self._machine, None
        if machine is not None and machine.poll() is None:
            machine.kill()   # unshare's --kill-child takes the host's process 1, and with it the namespace
            machine.wait(10)
        if init is not None and not _done_within(init, 10.0):
            raise SshdError(f"the isolated host {self.isolated}'s init {init} outlived its machine for 10 s")

    def _spawn(self) -> None:
        prefix = []
        if self.isolated is not None:
            prefix = ["nsenter", "--target", str(self._boot()), "--pid", "--mount", "--uts", "--"]
        with open(self.log_path, "ab") as log:
            # Absolute path: sshd refuses to re-exec itself otherwise. A new
            # session keeps a terminal's Ctrl-C from reaching it before the
            # fixtures stop it. -E appends sshd's own log; stdout/stderr catch
            # anything written before it is opened.
            self._proc = subprocess.Popen(
                prefix + [SSHD, "-D", "-e", "-f", str(self.config_path), "-E", str(self.log_path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        if self not in _started_servers:
            _started_servers.append(self)

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            rc = self._proc.poll()
            if rc is not None:
                self._proc = None
                raise SshdError(
                    f"sshd for {self.addr}:{self.port} exited with status {rc} while starting; "
                    f"config {self.config_path}, log {self.log_path}:\n{self._log_tail()}"
                )
            if _banner_seen(self.addr, self.port):
                return
            if time.monotonic() > deadline:
                self._terminate(timeout=5.0)
                raise SshdError(
                    f"sshd for {self.addr}:{self.port} sent no SSH banner within {timeout:g} s; "
                    f"log {self.log_path}:\n{self._log_tail()}"
                )
            time.sleep(0.02)

    def _terminate(self, timeout: float) -> None:
        inner = self.pid if self.isolated is not None else None
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if inner is not None:   # nsenter waits for the sshd it forked and passes no signal on
            try:
                os.kill(inner, signal.SIGTERM)
            except ProcessLookupError:
                pass
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout)

    def stop(self, kill_sessions: bool = True, timeout: float = 5.0) -> None:
        """Stop the listening sshd (SIGTERM, then SIGKILL after `timeout` s).

        With `kill_sessions` (the default) the sessions it forked are killed
        too; without, they live on, as after ``systemctl restart ssh``.
        Idempotent.
        """
        if kill_sessions:
            # Before the listener dies: afterwards its children are orphans.
            self.kill_sessions(timeout=timeout)
        self._terminate(timeout)

    def restart(self, kill_sessions: bool = True, timeout: float = 10.0) -> SshServer:
        """Stop, then start again on the same address, port and (current) host key."""
        self.stop(kill_sessions=kill_sessions)
        return self.start(timeout=timeout)

    def session_pids(self) -> list[int]:
        """Pids of the per-connection sshd processes of this server.

        Those below the listening sshd, plus orphans left by
        ``stop(kill_sessions=False)``, found by their TCP socket on addr:port.
        """
        table = _proc_table()
        listener = self.pid
        sshds = {pid for pid, (_, comm, state) in table.items() if comm in _SSHD_NAMES and state != "Z"}
        found = set()
        if listener is not None:
            found |= _descendants(table, listener) & sshds
        found |= _holders_of(_connected_socket_inodes(self.addr, self.port), sshds - found - {listener})
        found.discard(listener)
        return sorted(found)

    def kill_sessions(self, timeout: float = 5.0) -> list[int]:
        """SIGKILL this server's per-connection sshd processes; return their pids.

        To a client this is an abruptly dropped connection. The listening
        sshd keeps running, so new connections work. The processes are killed
        deepest first, each reaped by its still-living parent, so that no
        zombie "sshd" is left for init to collect. Raises `SshdError` if one
        survives `timeout` seconds.
        """
        pids = self.session_pids()
        table = _proc_table()

        def depth(pid: int) -> int:
            n = 0
            while pid in table and n < 64:
                pid, n = table[pid][0], n + 1
            return n

        deadline = time.monotonic() + timeout
        for pid in sorted(pids, key=depth, reverse=True):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            while not _done(pid):
                if time.monotonic() > deadline:
                    raise SshdError(f"sshd session {pid} of {self.addr}:{self.port} survived SIGKILL for {timeout:g} s")
                time.sleep(0.005)
        return pids

    def regenerate_host_key(self) -> str:
        """Replace the host key with a new one and return its public text.

        A running server is restarted (its sessions kept) so that every later
        connection sees the new key whatever the sshd version: Debian's sshd
        9.2 re-executes itself for each connection and so reads the key from
        disk anyway, but that is an implementation detail. The testbed's
        known_hosts keeps the old line (see `SshTestbed.trust`).
        """
        _keygen(self.host_key_path, f"reprobook-test-host@{self.addr}")
        if self.running:
            self.restart(kill_sessions=False)
        return self.host_key_pub


class SshTestbed:
    """Several `SshServer` behind one client key, ``known_hosts`` and ``ssh_config``.

    Parameters
    ----------
    root : path, optional
        Directory for everything (e.g. pytest's ``tmp_path``). By default a
        temporary directory, removed by `close`.
    user : str, optional
        Login name written to ``ssh_config``; by default the current user,
        since sshd can only log in as the user it can become.

    Examples
    --------
    >>> with SshTestbed(tmp_path) as bed:                          # doctest: +SKIP
    ...     bed.add_host("node1", "127.0.0.2")
    ...     subprocess.run(bed.ssh_argv("node1") + ["hostname"])
    """

    def __init__(self, root=None, *, user: str | None = None):
        self._owns_root = root is None
        self._root = Path(tempfile.mkdtemp(prefix="reprobook-sshbed-") if root is None else root).resolve()
        self._root.mkdir(parents=True, exist_ok=True)
        _check_path_is_plain(self._root)
        self.user = user or pwd.getpwuid(os.getuid()).pw_name
        self.servers: dict[str, SshServer] = {}
        self._closed = False
        self._client_key = self._root / "id_ed25519"
        _keygen(self._client_key, "reprobook-test-client")
        self._authorized_keys = self._root / "authorized_keys"
        self._authorized_keys.write_text(_public_key_text(self._client_key) + "\n")
        self._known_hosts = self._root / "known_hosts"
        self._known_hosts.write_text("")
        self._ssh_config = self._root / "ssh_config"
        self._ssh_config.write_text("# Written by tests/support/sshd.py: one block per test host.\n")

    def __enter__(self) -> SshTestbed:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    @property
    def root(self) -> Path:
        return self._root

    @property
    def ssh_config_path(self) -> Path:
        return self._ssh_config

    @property
    def known_hosts_path(self) -> Path:
        return self._known_hosts

    @property
    def client_key_path(self) -> Path:
        return self._client_key

    @property
    def authorized_keys_path(self) -> Path:
        return self._authorized_keys

    def add_host(self, alias: str, addr: str, *, trust: bool = True, port: int | None = None,
                 extra_config: Sequence[str] = (), isolated: bool = False,
                 private_dirs: Sequence[str | os.PathLike] = (), own_home: bool = False) -> SshServer:
        """Start an sshd on `addr` and make it reachable as ``ssh -F ssh_config alias``.

        With ``trust=False`` its host key is left out of known_hosts, so a
        strict client refuses it as an unknown host. ``extra_config`` lines
        are appended to its sshd_config. ``isolated`` runs it in namespaces of
        its own, named ``alias``, with ``private_dirs`` its own, and with ``own_home`` the login user's home
        directory too, as a freshly installed machine has it (see `SshServer`).
        """
        if self._closed:
            raise SshdError("this SshTestbed is closed")
        if alias in self.servers:
            raise ValueError(f"host alias {alias!r} is already in the testbed")
        server = SshServer(self._root / "hosts" / alias, addr, self._authorized_keys, port=port,
                           extra_config=extra_config, isolated=alias if isolated else None,
                           private_dirs=private_dirs, home=pwd.getpwnam(self.user).pw_dir if own_home else None)
        try:
            server.start()
        except BaseException:
            server.shutdown()
            raise
        self.servers[alias] = server
        with open(self._ssh_config, "a") as cfg:
            cfg.write(
                f"\nHost {alias}\n"
                f"    HostName {addr}\n"
                f"    Port {server.port}\n"
                f"    User {self.user}\n"
                f"    IdentityFile {self._client_key}\n"
                "    IdentitiesOnly yes\n"
                f"    UserKnownHostsFile {self._known_hosts}\n"
                "    GlobalKnownHostsFile /dev/null\n"
                "    StrictHostKeyChecking yes\n"
                "    UpdateHostKeys no\n"
                "    ConnectTimeout 5\n"
            )
        if trust:
            self.trust(alias)
        return server

    def _known_hosts_without(self, server: SshServer) -> list[str]:
        name = _known_hosts_name(server.addr, server.port)
        return [line for line in self._known_hosts.read_text().splitlines() if line.split(" ", 1)[0] != name]

    def trust(self, alias: str) -> None:
        """Put the current host key of `alias` in known_hosts, replacing any old one."""
        server = self.servers[alias]
        lines = self._known_hosts_without(server) + [server.known_hosts_line()]
        self._known_hosts.write_text("\n".join(lines) + "\n")

    def forget(self, alias: str) -> None:
        """Remove the known_hosts line of `alias`."""
        lines = self._known_hosts_without(self.servers[alias])
        self._known_hosts.write_text("".join(line + "\n" for line in lines))

    def ssh_argv(self, alias: str) -> list[str]:
        """Argv of the OpenSSH client reaching `alias` through the testbed's config."""
        return ["ssh", "-F", str(self._ssh_config), alias]

    def close(self) -> None:
        """Stop every server and kill their sessions; remove the directory if it was made here."""
        if self._closed:
            return
        self._closed = True
        errors = []
        for server in self.servers.values():
            try:
                server.shutdown()
            except Exception as exc:  # stop the others, then report
                errors.append(f"{server!r}: {exc}")
        if self._owns_root:
            shutil.rmtree(self._root, ignore_errors=True)
        if errors:
            raise SshdError("could not stop every test sshd: " + "; ".join(errors))


class BlackholeServer:
    """A TCP listener that accepts connections and never sends a byte.

    For "host accepts TCP but never answers" tests. Runs in a daemon thread;
    `close` drops the connections and the listener.
    """

    def __init__(self, addr: str = "127.0.0.1", port: int | None = None):
        self.addr = addr
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((addr, port or 0))
        self._sock.listen(64)
        self._sock.settimeout(0.05)
        self.port = self._sock.getsockname()[1]
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._accept_loop, name=f"blackhole-{addr}:{self.port}", daemon=True)
        self._thread.start()

    def __repr__(self) -> str:
        return f"<BlackholeServer {self.addr}:{self.port} accepted={self.accepted}>"

    def __enter__(self) -> BlackholeServer:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    @property
    def accepted(self) -> int:
        """How many connections were accepted so far."""
        with self._lock:
            return len(self._conns)

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with self._lock:
                self._conns.append(conn)

    def close(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)
        with self._lock:
            for conn in self._conns:
                conn.close()
        self._sock.close()


@atexit.register
def _stop_all_servers() -> None:
    for server in _started_servers:
        try:
            server.stop(kill_sessions=True, timeout=2.0)
            server.shutdown()
        except Exception as exc:  # keep stopping the others; say so, nothing else will
            print(f"tests/support/sshd.py: could not stop {server!r} at exit: {exc}", file=sys.stderr)
