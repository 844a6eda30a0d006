"""Locks: one process at a time works on a run (launches it, follows it, fetches its outputs).

A lock is an ``flock`` on a small file, e.g. ``<run store>/.locks/<run-id>.lock`` for a run. The
kernel drops it when its process dies, however it dies (``kill -9``, a closed laptop, the OOM
killer), so a killed reprobook never leaves a stale lock behind. While it is held the file names
its holder (pid, command, since when), so a second process can say whom it waits for::

    with Lock(path, "run X").acquire(on_wait=lambda h: print(f"waiting for {h}")):
        ...              # released at the end of the block, or when the process dies

Within one process a lock is re-entrant for the thread that holds it (`live.perform` takes a run's
lock and `live.collect`, called under it, takes it again for free); another thread of the same
process waits like another process does.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from reprobook.errors import RunBusy


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as it wrote itself into the lock file."""

    pid: int | None
    command: str
    since: str
    host: str

    def __str__(self) -> str:
        where = f" on {self.host}" if self.host and self.host != socket.gethostname() else ""
        return f"pid {self.pid}{where} (`{self.command}`), since {self.since}"


class _Entry:
    """This process's hold on one lock file: a thread lock, and the flocked descriptor while held."""

    def __init__(self):
        self.thread_lock = threading.RLock()
        self.fd: int | None = None
        self.depth = 0


_entries: dict[str, _Entry] = {}
_entries_lock = threading.Lock()


def _entry(path: Path) -> _Entry:
    with _entries_lock:
        return _entries.setdefault(str(path), _Entry())


def _me() -> dict:
    argv = [os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python", *sys.argv[1:]]
    if argv[0] in ("__main__.py", "-m") or argv[0].endswith("reprobook/__main__.py"):
        argv[0] = "reprobook"
    command = " ".join(argv)
    return {"pid": os.getpid(), "command": command[:300], "host": socket.gethostname(),
            "since": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())}


def _read_holder(fd: int) -> Holder | None:
    try:
        raw = os.pread(fd, 4096, 0)
        d = json.loads(raw.decode()) if raw else None
    except (OSError, ValueError):
        return None
    if not isinstance(d, dict):
        return None
    pid = d.get("pid")
    return Holder(pid if isinstance(pid, int) else None, str(d.get("command", "?")), str(d.get("since", "?")),
                  str(d.get("host", "")))


class Lock:
    """An exclusive lock on ``path`` (created owner-only if missing); ``what`` names it in messages."""

    def __init__(self, path: Path, what: str):
        self.path = Path(path)
        self.what = what

    @property
    def fd(self) -> int | None:
        """The locked descriptor while this process holds the lock (to hand to a child process that must
        keep it held until it exits), else ``None``."""
        return _entry(self.path).fd

    def acquire(self, *, wait: float | None = None, on_wait: Callable[[Holder | None], None] | None = None,
                poll_s: float = 0.05) -> "_Held":
        """Take the lock, waiting ``wait`` seconds at most (``None``: as long as it takes).

        ``on_wait`` is called once, with the holder, if the lock is taken by someone else.

        Raises
        ------
        RunBusy
            The lock was still held after ``wait`` seconds; the message names the holder.
        """
        entry = _entry(self.path)
        deadline = None if wait is None else time.monotonic() + wait
        if not entry.thread_lock.acquire(timeout=-1 if wait is None else max(wait, 0)):
            raise self._busy(None)
        try:
            if entry.depth == 0:
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                told = False
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        holder = _read_holder(fd)
                        if deadline is not None and time.monotonic() >= deadline:
                            os.close(fd)
                            raise self._busy(holder) from None
                        if not told and on_wait is not None:
                            on_wait(holder)
                            told = True
                        time.sleep(poll_s)
                        poll_s = min(poll_s * 1.5, 0.5)
                info = json.dumps(_me()).encode()
                os.ftruncate(fd, 0)
                os.pwrite(fd, info, 0)
                entry.fd = fd
            entry.depth += 1
        except BaseException:
            entry.thread_lock.release()
            raise
        return _Held(self)

    def release(self) -> None:
        entry = _entry(self.path)
        entry.depth -= 1
        if entry.depth == 0 and entry.fd is not None:
            fd, entry.fd = entry.fd, None
            try:
                os.ftruncate(fd, 0)  # a reader that finds it empty knows nobody holds it
            except OSError:
                pass
            os.close(fd)  # closing the last descriptor drops the flock
        entry.thread_lock.release()

    def holder(self) -> Holder | None:
        """Who holds the lock now (``None`` if nobody does). Holding it ourselves counts."""
        entry = _entry(self.path)
        if entry.fd is not None:
            return _read_holder(entry.fd)
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return _read_holder(fd) or Holder(None, "unknown", "?", "")
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)

    def held_elsewhere(self) -> bool:
        """Whether another process (or another thread of this one) holds the lock now."""
        entry = _entry(self.path)
        if entry.fd is not None:
            if entry.thread_lock.acquire(blocking=False):  # re-entrant: succeeds in the thread that holds it
                entry.thread_lock.release()
                return False
            return True
        return self.holder() is not None

    def _busy(self, holder: Holder | None) -> RunBusy:
        who = str(holder) if holder else "another process"
        return RunBusy(f"{self.what} is being worked on by {who}. Wait for it to finish, or stop that process "
                       f"(a live run goes on on its host either way).", holder=holder)

    def __enter__(self) -> "Lock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class _Held:
    """What `Lock.acquire` returns: usable as ``with lock.acquire(...):``, which releases it at the end."""

    def __init__(self, lock: Lock):
        self.lock = lock

    def __enter__(self) -> Lock:
        return self.lock

    def __exit__(self, *exc) -> None:
        self.lock.release()
