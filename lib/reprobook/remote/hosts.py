"""Hosts: where experiments run, reached over SSH (Fabric) or, for ``local``, directly.

A host is opened lazily on first use and closed explicitly::

    with open_host(project.hosts.host("node0"), project.settings) as host:
        print(host.run("uname -r").stdout)

Host keys are checked against ``known_hosts`` (``~/.ssh/known_hosts`` and any
``UserKnownHostsFile`` of the host's ``~/.ssh/config`` entry). An unknown key
is refused unless the host says ``host_key_policy: accept-new``; a changed key
is always refused.

Nothing a host sends back is trusted to be small or timely: a command that
goes silent for `ANSWER_TIMEOUT_S` is abandoned with a `StepTimeout` naming
the step, captured output is capped at `MAX_OUTPUT_BYTES` (stderr keeps its
last `STDERR_TAIL_BYTES`), and a caller that expects a lot (a listing of a
million files) takes stdout as a stream with ``on_stdout``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import shlex
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping

from reprobook.core.config import HostSpec, Settings
from reprobook.errors import (AuthenticationFailed, ExperimentError, HostKeyError, HostUnreachable, StepTimeout,
                     TestbedError)

ANSWER_TIMEOUT_S = 120.0
"""A command that sends nothing (no output, no exit) for this long is given up as hung."""
MAX_OUTPUT_BYTES = 64 << 20
"""Captured stdout beyond this is refused: a command whose output can be large streams it (``on_stdout``)."""
STDERR_TAIL_BYTES = 64 << 10
DRAIN_WAKE_S = 0.25
"""A command's channel is waited on for at most this long between checks of its time limits."""
from reprobook.core.requirements import HostFacts, Requirements, facts_from, probe_script


@dataclass(frozen=True)
class Result:
    """What one command did on one host."""

    host: str
    command: str
    stdout: str
    stderr: str
    exited: int

    @property
    def ok(self) -> bool:
        return self.exited == 0

    def tail(self, lines: int = 20) -> str:
        text = (self.stdout + ("\n" + self.stderr if self.stderr else "")).strip("\n")
        return "\n".join(text.splitlines()[-lines:])


def env_prefix(env: Mapping[str, object] | None) -> str:
    """``export K='v';`` for each item, every value quoted for the shell."""
    if not env:
        return ""
    parts = []
    for k, v in env.items():
        if not k.replace("_", "").isalnum() or k[0].isdigit():
            raise ValueError(f"not a valid environment variable name: {k!r}")
        parts.append(f"export {k}={shlex.quote(str(v))};")
    return " ".join(parts) + " "


# --------------------------------------------------------------------------- facts

# What a host is (HostFacts) and how it is probed live in `requirements`, next to
# the requirements they are judged against; HostFacts stays importable from here.

# --------------------------------------------------------------------------- hosts

class Host:
    """The interface shared by SSH hosts and the local machine."""

    spec: HostSpec

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def workdir(self) -> str:
        return self.spec.workdir

    def run(self, command: str, *, env: Mapping[str, object] | None = None, timeout: float | None = None,
            check: bool = True, retries: int = 0, step: str | None = None, answer_timeout: float | None = None,
            on_stdout: Callable[[bytes], None] | None = None) -> Result:
        """Run ``command`` with bash on the host and return its `Result`.

        ``env`` values are exported, quoted, before the command. With
        ``check``, a non-zero exit raises `ExperimentError` with the exit
        code and the tail of the output. ``retries`` reconnects and runs
        again that many times if the connection drops (only for commands
        that are safe to repeat; a host that went silent is not asked again).

        ``step`` names what the command does, for messages. A command that
        sends nothing for ``answer_timeout`` seconds (default
        `ANSWER_TIMEOUT_S`), or has not finished after ``timeout``, raises
        `StepTimeout` naming the step. ``on_stdout`` receives stdout in
        chunks as it arrives (``Result.stdout`` is then empty); otherwise
        more than `MAX_OUTPUT_BYTES` of it is a `TestbedError`.
        """
        return self._run_checked(env_prefix({**self.spec.env, **(env or {})}) + command, command, check=check,
                                 retries=retries, limits=_Limits(step or f"running `{command[:80]}`", timeout,
                                                                 ANSWER_TIMEOUT_S if answer_timeout is None
                                                                 else answer_timeout, on_stdout))

    def _run_checked(self, full: str, command: str, *, check: bool, retries: int, limits: "_Limits") -> Result:
        """`run` of the line ``full`` (``command`` as messages name it)."""
        attempt = 0
        while True:
            try:
                res = self._run(full, limits)
                break
            except StepTimeout:
                raise
            except TestbedError:
                if attempt >= retries:
                    raise
                attempt += 1
                self.close()
                time.sleep(min(2 ** attempt * 0.25, 5))
        if check and not res.ok:
            raise ExperimentError("command failed", command=command, exit_code=res.exited,
                                  log_tail=res.tail(), host=self.name)
        return res

    def run_script(self, script: str, *args: str, retries: int = 0, step: str | None = None,
                   answer_timeout: float | None = None,
                   on_stdout: Callable[[bytes], None] | None = None) -> Result:
        """Run a bash ``script`` with ``args`` as its positional parameters, each quoted.

        Its bash reads no startup files: the login shell has read them once already. ``step``,
        ``answer_timeout`` and ``on_stdout`` are as for `run`.
        """
        argv = " ".join(shlex.quote(a) for a in args)
        # the host's environment is exported by that bash: the line is then one simple command that any
        # Bourne-like login shell runs as it is (no question asked of the shell first, no second bash)
        line = f"bash --norc --noprofile -c {shlex.quote(env_prefix(self.spec.env) + script)} reprobook {argv}"
        limits = _Limits(step or f"running `{script[:80]}`", None,
                         ANSWER_TIMEOUT_S if answer_timeout is None else answer_timeout, on_stdout, as_is=True)
        return self._run_checked(line, line, check=True, retries=retries, limits=limits)

    def facts(self, requirements: Requirements | Iterable[Requirements] = (), *,
              commands: Iterable[str] = ()) -> HostFacts:
        """Gather `HostFacts` in one round trip: every fact, and each command ``requirements`` or ``commands`` name.

        Free disk space is measured in the workdir (or, before it exists, its
        nearest existing parent).
        """
        reqs = [requirements] if isinstance(requirements, Requirements) else list(requirements)
        if commands:
            reqs.append(Requirements(commands=list(commands)))
        return facts_from(self.run_script(probe_script(reqs), self.workdir, retries=1,
                                          step="probing the host's facts").stdout)

    def put(self, local: Path, remote: str) -> None:
        raise NotImplementedError

    def get(self, remote: str, local: Path) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Drop the connection (a later call reopens it)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _run(self, command: str, limits: "_Limits") -> Result:
        raise NotImplementedError


class LocalHost(Host):
    """This machine, no SSH: the same interface, run with ``bash -c``."""

    def __init__(self, spec: HostSpec):
        self.spec = spec

    def _run(self, command: str, limits: "_Limits") -> Result:
        # its own session, so that a command given up on goes with everything it started
        p = subprocess.Popen(["bash", "-c", command], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
        sink = _Sink(limits, self.name)
        try:
            streams = {p.stdout.fileno(): sink.out, p.stderr.fileno(): sink.err}
            while streams:
                ready, _, _ = select.select(list(streams), [], [], 0.05)
                for fd in ready:
                    data = os.read(fd, 1 << 16)
                    if data:
                        streams[fd](data)
                    else:
                        del streams[fd]
                sink.check_time()
            code = p.wait()
        except BaseException:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.wait()
            raise
        finally:
            p.stdout.close()
            p.stderr.close()
        return Result(self.name, command, sink.stdout(), sink.stderr(), code)

    def put(self, local: Path, remote: str) -> None:
        Path(remote).parent.mkdir(parents=True, exist_ok=True)
        Path(remote).write_bytes(Path(local).read_bytes())

    def get(self, remote: str, local: Path) -> None:
        Path(local).parent.mkdir(parents=True, exist_ok=True)
        Path(local).write_bytes(Path(remote).read_bytes())


class _KeyPolicy:
    """Refuse unknown host keys (or record them, for ``accept-new``), saying how to fix it."""

    def __init__(self, host_name: str, accept_new: bool, known_hosts: Path):
        self.host_name, self.accept_new, self.known_hosts = host_name, accept_new, known_hosts

    def missing_host_key(self, client, hostname, key):
        fp = _fingerprint(key)
        if self.accept_new:
            self.known_hosts.parent.mkdir(parents=True, exist_ok=True)
            with open(self.known_hosts, "a") as f:
                f.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
            client.get_host_keys().add(hostname, key.get_name(), key)
            return
        raise HostKeyError(
            f"the host key of {hostname} is not in known_hosts ({key.get_name()} {fp}). "
            f"Check this fingerprint with the host's owner, then accept it deliberately: "
            f"`reprobook trust-host {self.host_name}` or `ssh {hostname.strip('[]').split(']')[0]}` once, "
            f"or set host_key_policy: accept-new for this host in configs/hosts.yaml.", host=self.host_name)


def _fingerprint(key) -> str:
    import base64
    import hashlib
    return "SHA256:" + base64.b64encode(hashlib.sha256(key.asbytes()).digest()).decode().rstrip("=")


class _Parsed:
    """The SSH config and known_hosts files, each parsed once per process while it is unchanged.

    A cluster is checked by opening every host at once. Read per connection, a 101-host cluster's
    known_hosts (paramiko merges each line against those before it) and SSH config cost every
    connection time in proportion to the cluster's size, the whole check its square: on 48 loopback
    hosts, half of reprobook's CPU. A file is read again as soon as its size or time stamp changes
    (a key recorded by trust-host, a cluster written by an import).
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._cache: dict[tuple, tuple[tuple, object]] = {}

    def _get(self, key: tuple, files: Iterable[str], parse: Callable[[], object]):
        stamp = tuple(_stamp(f) for f in files)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and hit[0] == stamp:
                return hit[1]
        value = parse()
        with self._lock:
            self._cache[key] = (stamp, value)
        return value

    def ssh_config(self, runtime_path: Path | None):
        """Fabric's base `SSHConfig`: the runtime file alone, else the system's and the user's files."""
        from fabric import Config
        # (Fabric's defaults for the two files; explicit, so that the files Fabric reads are those watched)
        files = [str(runtime_path)] if runtime_path else ["/etc/ssh/ssh_config", os.path.expanduser("~/.ssh/config")]
        return self._get(("ssh_config", *files), files,
                         lambda: (Config(runtime_ssh_path=files[0]) if runtime_path else
                                  Config(system_ssh_path=files[0], user_ssh_path=files[1])).base_ssh_config)

    def host_keys(self, path: Path):
        """The entries of one known_hosts file (shared: never change them; copy the list)."""
        import paramiko
        return self._get(("known_hosts", str(path)), [str(path)],
                         lambda: paramiko.HostKeys(str(path))._entries)


@functools.lru_cache(maxsize=1)
def _fabric_config():
    """Fabric's `Config`, its defaults computed once (Fabric asks for the local user's name each time)."""
    import copy

    from fabric import Config

    defaults = Config.global_defaults()

    class _Config(Config):
        @staticmethod
        def global_defaults():
            return copy.deepcopy(defaults)
    return _Config


def _stamp(path: str) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


_parsed = _Parsed()


class SshHost(Host):
    """A host reached over SSH with Fabric, honouring ``~/.ssh/config`` (jump hosts included)."""

    def __init__(self, spec: HostSpec, ssh_config: Path | None = None):
        self.spec = spec
        self._ssh_config = ssh_config
        self._conn = None
        self._login_bash: bool | None = None  # whether the login shell on the open connection is bash

    # -- connection

    def _make_connection(self):
        from fabric import Connection

        # a Config of its own (Fabric writes into its connect_kwargs), on the SSH config parsed once; lazy:
        # without Invoke's own fabric.yaml files, which reprobook does not use (hosts.yaml says it all)
        cfg = _fabric_config()(ssh_config=_parsed.ssh_config(self._ssh_config), lazy=True)
        user, host, port = self.spec.target()
        # An explicit timeout in hosts.yaml wins; else ~/.ssh/config's ConnectTimeout; else 10 s.
        timeout = int(round(self.spec.connect_timeout_s)) if self.spec.connect_timeout_s else None
        conn = Connection(host, user=user, port=port, config=cfg, connect_timeout=timeout)
        if not conn.connect_timeout:
            conn.connect_timeout = 10
        t = conn.connect_timeout
        conn.connect_kwargs.setdefault("banner_timeout", t)
        conn.connect_kwargs.setdefault("auth_timeout", t)
        conn.connect_kwargs.setdefault("channel_timeout", t)
        if str(conn.ssh_config.get("identitiesonly", "")).lower() == "yes":
            # Fabric ignores IdentitiesOnly; honour it so only the configured key is offered
            conn.connect_kwargs.update(look_for_keys=False, allow_agent=False)
        c = conn
        while c is not None and not isinstance(c, str):
            self._secure(c)
            c = c.gateway if c.gateway else None
        return conn

    def _secure(self, conn) -> None:
        client = conn.client
        files = (conn.ssh_config.get("userknownhostsfile") or "~/.ssh/known_hosts").split()
        first = Path(os.path.expanduser(files[0]))
        entries = []
        for f in files:
            p = Path(os.path.expanduser(f))
            if p.is_file():
                entries += _parsed.host_keys(p)
        # (what client.load_host_keys gives, parsed once per file: a list of this client's own, for the keys
        # that accept-new adds)
        client.get_host_keys()._entries = entries
        strict = str(conn.ssh_config.get("stricthostkeychecking", "")).lower()
        accept_new = self.spec.host_key_policy == "accept-new" or strict == "accept-new"
        client.set_missing_host_key_policy(_KeyPolicy(self.spec.name, accept_new, first))

    def _open(self):
        import paramiko

        if self._conn is not None and self._conn.is_connected:
            return self._conn
        self.close()
        conn = self._make_connection()
        where = f"{conn.host}:{conn.port}"
        try:
            conn.open()
        except HostKeyError:
            raise
        except paramiko.BadHostKeyException as exc:
            raise HostKeyError(
                f"the host key of {where} has CHANGED since it was recorded in known_hosts "
                f"(now {_fingerprint(exc.key)}). This can mean the machine was reinstalled, or that someone is "
                f"in the middle. If you know it was reinstalled, remove the old key with "
                f"`ssh-keygen -R '[{conn.host}]:{conn.port}'` and accept the new one deliberately.", host=self.name) from None
        except paramiko.AuthenticationException as exc:
            raise AuthenticationFailed(
                f"{where} refused our keys as user {conn.user!r} ({exc}). Put your public key in that user's "
                f"~/.ssh/authorized_keys, or name the right key with IdentityFile in ~/.ssh/config.", host=self.name) from None
        except (socket.timeout, TimeoutError) as exc:
            raise HostUnreachable(f"no answer from {where} within {conn.connect_timeout} s ({exc or 'timed out'}). "
                                  f"Is the machine up and the address and port right?", host=self.name) from None
        except paramiko.SSHException as exc:
            raise HostUnreachable(f"{where} did not complete the SSH handshake within {conn.connect_timeout} s "
                                  f"({exc}). Is an SSH server listening on that port?", host=self.name) from None
        except paramiko.ssh_exception.NoValidConnectionsError as exc:
            why = "; ".join(sorted({os.strerror(e.errno) if getattr(e, "errno", None) else str(e)
                                    for e in exc.errors.values()})) or "no address to try"
            raise HostUnreachable(f"cannot connect to {where}: {why}. Is the machine up, and the port right "
                                  f"(hosts.yaml or ~/.ssh/config)?", host=self.name) from None
        except (OSError, EOFError) as exc:
            raise HostUnreachable(f"cannot connect to {where}: {exc}. Is the machine up, and the port right "
                                  f"(hosts.yaml or ~/.ssh/config)?", host=self.name) from None
        transport = conn.client.get_transport()
        transport.set_keepalive(15)
        if isinstance(transport.sock, socket.socket):  # not a jump host's channel or a proxy command
            # as OpenSSH's client does: without it each new channel's small request waits for the
            # server's delayed ACK of the last one (Nagle), ~40 ms per command
            transport.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._conn = conn
        return conn

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001 - closing a dead connection may raise anything; it is gone either way
                pass
            self._conn = None
            self._login_bash = None

    # -- commands and files

    def _shell_line(self, conn, command: str, limits: "_Limits") -> str:
        """What the exec request sends for ``command``, so that bash runs it.

        sshd hands the request to the user's login shell, which reads the user's startup files
        once. When that shell is bash (not in POSIX mode), it runs the command itself, as with
        plain ``ssh host command``; otherwise ``exec bash --norc --noprofile -c`` hands the command
        over to a bash that does not read them a second time. (The hand-over costs the host an exec
        of bash per command: a fifth of a 36-host fan-out's remote CPU.) Which it is, is asked once
        per connection, of the shell that will read the commands (a ``ForceCommand`` wrapper
        included); a shell that cannot even read the question (csh, fish) gets the hand-over.
        """
        if limits.as_is:
            return command
        if self._login_bash is None:
            self._login_bash = self._ask(conn, _BASH_QUESTION, limits).strip() == "bash"
        return command if self._login_bash else "exec bash --norc --noprofile -c " + shlex.quote(command)

    def _ask(self, conn, command: str, limits: "_Limits") -> str:
        """The standard output of a short ``command`` run by the login shell; "" if it fails in any way."""
        import paramiko

        sink = _Sink(_Limits("asking which shell reads commands", limits.timeout, limits.answer_timeout, None),
                     self.name)  # its own output: none of it goes to the command's reader
        try:
            chan = conn.client.get_transport().open_session(timeout=conn.connect_timeout)
            with _WATCHDOG.armed(limits.answer_timeout, chan.close):
                chan.exec_command(command)
            chan.shutdown_write()
            _drain(chan, sink)
            code = chan.recv_exit_status()
            chan.close()
        except (paramiko.SSHException, EOFError, OSError, socket.timeout, TestbedError):
            return ""
        return sink.stdout() if code == 0 else ""

    def _run(self, command: str, limits: "_Limits") -> Result:
        import paramiko

        conn = self._open()
        sink = _Sink(limits, self.name)
        unanswered = threading.Event()
        try:
            line = self._shell_line(conn, command, limits)
            chan = conn.client.get_transport().open_session(timeout=conn.connect_timeout)

            def give_up():
                unanswered.set()
                chan.close()
            # paramiko waits for the answer to an exec request without a time limit
            with _WATCHDOG.armed(limits.answer_timeout, give_up):
                chan.exec_command(line)
            chan.shutdown_write()
            _drain(chan, sink)
            code = chan.recv_exit_status()
            chan.close()
        except (StepTimeout, TestbedError):
            self.close()
            raise
        except (paramiko.SSHException, EOFError, OSError, socket.timeout) as exc:
            self.close()
            if unanswered.is_set():
                raise sink.silence() from None
            raise TestbedError(f"connection lost while {limits.step} ({exc.__class__.__name__}: {exc})",
                               host=self.name) from None
        except BaseException:
            self.close()  # the command may still be sending: its channel is no use any more
            raise
        if code == -1:
            self.close()
            raise TestbedError(f"connection lost before the command reported its exit status ({limits.step})",
                               host=self.name)
        return Result(self.name, command, sink.stdout(), sink.stderr(), code)

    def sftp(self):
        import paramiko

        conn = self._open()
        try:
            sftp = conn.sftp()
            sftp.get_channel().settimeout(ANSWER_TIMEOUT_S)  # a host that stops answering mid-file
            return sftp
        except (paramiko.SSHException, EOFError, socket.timeout) as exc:
            self.close()
            raise TestbedError(f"the SSH server offers no SFTP ({exc.__class__.__name__}: {exc or 'channel closed'}); "
                               f"enable its sftp subsystem, or install rsync on both ends", host=self.name) from None

    def put(self, local: Path, remote: str) -> None:
        self._sftp_call("put", str(local), remote)

    def get(self, remote: str, local: Path) -> None:
        self._sftp_call("get", remote, str(local))

    def _sftp_call(self, op: str, *args: str) -> None:
        """An SFTP transfer; a connection that breaks off becomes a `TestbedError`, local disk errors stay `OSError`."""
        import paramiko

        sftp = self.sftp()
        try:
            getattr(sftp, op)(*args)
        except socket.timeout:
            self.close()
            raise StepTimeout(f"no answer for {ANSWER_TIMEOUT_S:.0f} s during an SFTP {op} of "
                              f"{args[0] if op == 'get' else args[1]}", host=self.name) from None
        except (paramiko.SSHException, EOFError, ConnectionError) as exc:
            self.close()
            raise TestbedError(f"the connection broke off during an SFTP {op} "
                               f"({exc.__class__.__name__}: {exc or 'closed'})", host=self.name) from None
        except OSError as exc:
            if exc.errno is None and not isinstance(exc, FileNotFoundError):
                # paramiko reports a dropped channel as a bare OSError ("Socket is closed")
                self.close()
                raise TestbedError(f"the connection broke off during an SFTP {op} ({exc})", host=self.name) from None
            raise


_BASH_QUESTION = '[ -z "${BASH_VERSION-}" ] || shopt -qo posix || echo bash'
"""Prints ``bash`` when read by bash outside POSIX mode, nothing (or an error) in any other shell."""


class _Watchdog:
    """One thread that runs an action when its deadline passes, for every command waiting on an answer.

    (A `threading.Timer` per command started and joined a thread each time: 36 of them per fan-out
    round.) ``armed(seconds, action)`` is a context: leaving it in time disarms the action.
    """

    def __init__(self):
        self._cond = threading.Condition()
        self._due: dict[int, tuple[float, Callable[[], None]]] = {}
        self._next_id = 0
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def armed(self, seconds: float | None, action: Callable[[], None]):
        if not seconds:
            yield
            return
        with self._cond:
            key = self._next_id = self._next_id + 1
            self._due[key] = (time.monotonic() + seconds, action)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._watch, name="reprobook-watchdog", daemon=True)
                self._thread.start()
            else:
                self._cond.notify()
        try:
            yield
        finally:
            with self._cond:
                self._due.pop(key, None)

    def _watch(self) -> None:
        while True:
            with self._cond:
                now = time.monotonic()
                late = [k for k, (when, _) in self._due.items() if when <= now]
                actions = [self._due.pop(k)[1] for k in late]
                if not actions:
                    soonest = min((when for when, _ in self._due.values()), default=now + 60.0)
                    self._cond.wait(soonest - now)
                    continue
            for action in actions:
                try:
                    action()
                except Exception:  # noqa: BLE001 - closing a channel that is already gone; the waiter sees it
                    pass


_WATCHDOG = _Watchdog()


class _Limits:
    """How long a command may stay silent or run, and where its stdout goes; ``step`` names it in messages."""

    def __init__(self, step: str, timeout: float | None, answer_timeout: float | None,
                 on_stdout: Callable[[bytes], None] | None, *, as_is: bool = False):
        self.step, self.timeout, self.answer_timeout, self.on_stdout = step, timeout, answer_timeout, on_stdout
        self.as_is = as_is   # the line is a plain `bash ... -c '...'` of its own: sent without the hand-over


class _Sink:
    """A command's output as it arrives, within `_Limits`: stdout capped or streamed, stderr's tail."""

    def __init__(self, limits: _Limits, host: str):
        self.limits, self.host = limits, host
        self._out, self._err = bytearray(), bytearray()
        self.started = self.last = time.monotonic()

    def out(self, data: bytes) -> None:
        self.last = time.monotonic()
        if self.limits.on_stdout is not None:
            self.limits.on_stdout(data)
            return
        self._out += data
        if len(self._out) > MAX_OUTPUT_BYTES:
            raise TestbedError(f"sent more than {MAX_OUTPUT_BYTES >> 20} MiB of output while {self.limits.step}; "
                               f"reprobook stopped reading. Is the host's shell printing something endless?",
                               host=self.host)

    def err(self, data: bytes) -> None:
        self.last = time.monotonic()
        self._err += data
        if len(self._err) > 2 * STDERR_TAIL_BYTES:
            del self._err[:-STDERR_TAIL_BYTES]

    def check_time(self) -> None:
        now = time.monotonic()
        lim = self.limits
        if lim.timeout and now - self.started > lim.timeout:
            raise StepTimeout(f"{lim.step} did not finish within {lim.timeout:g} s; reprobook gave up on it",
                              host=self.host)
        if lim.answer_timeout and now - self.last > lim.answer_timeout:
            raise self.silence()

    def silence(self) -> StepTimeout:
        return StepTimeout(f"no answer for {self.limits.answer_timeout:g} s while {self.limits.step}; reprobook "
                           f"closed the connection. Is the host overloaded or hung (its disk, NFS)? Try again "
                           f"once it answers `reprobook check-host {self.host}`.", host=self.host)

    def stdout(self) -> str:
        return self._out.decode(errors="replace")

    def stderr(self) -> str:
        return self._err[-STDERR_TAIL_BYTES:].decode(errors="replace")


def _drain(chan, sink: _Sink) -> None:
    """Read stdout and stderr of a channel into ``sink`` until the command ends.

    Paramiko's channel pipe wakes ``select`` for stdout and stderr data and at
    EOF (and stays set after it, until the exit status is in), so the wait is
    driven by the channel; its timeout only bounds how often the time limits
    are checked. (A 10 ms poll cost 36 waiting commands about 0.1 s of CPU
    per 0.2 s, under one interpreter lock.)
    """
    while True:
        while chan.recv_ready():
            sink.out(chan.recv(1 << 16))
        while chan.recv_stderr_ready():
            sink.err(chan.recv_stderr(1 << 16))
        if chan.exit_status_ready() and (chan.eof_received or chan.closed):
            if not chan.recv_ready() and not chan.recv_stderr_ready():
                break
            continue
        if chan.closed:
            break
        transport = chan.get_transport()
        if transport is None or not transport.is_active():
            raise EOFError("transport closed")
        sink.check_time()
        select.select([chan], [], [], DRAIN_WAKE_S)


def open_host(spec: HostSpec, settings: Settings | None = None) -> Host:
    """A `Host` for ``spec``: `LocalHost` for ``local``, else `SshHost`. Nothing connects until first use."""
    if spec.is_local:
        return LocalHost(spec)
    return SshHost(spec, ssh_config=settings.ssh_config if settings else None)
