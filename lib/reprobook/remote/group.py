"""Running one command on several hosts at once (a cluster's role, or a list of hosts).

The result maps each host name to its `Result`, or to the exception that
stopped it there, like Fabric's ``GroupResult``: nothing on one host hides
what happened on the others.
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Mapping, TypeVar

from reprobook.core.config import Project
from reprobook.errors import ReprobookError
from reprobook.remote.hosts import Host, Result, open_host


T = TypeVar("T")
MAX_PARALLEL = 64
"""At most this many hosts are talked to at once (a thread each)."""


def on_each(hosts: Mapping[str, Host], fn: Callable[[Host], T]) -> dict[str, T | ReprobookError]:
    """``fn(host)`` on every host at once: host name -> its result, or the `ReprobookError` it raised.

    The one fan-out of reprobook: a placement's checks and holds and `HostGroup.run` go through it.
    """
    def one(host: Host):
        try:
            return fn(host)
        except ReprobookError as exc:
            return exc
    if not hosts:
        return {}
    with _workers.lend(len(hosts)) as pool:
        return dict(zip(hosts, pool.map(one, hosts.values())))


class _Workers:
    """Threads kept for the fan-out, so that a round on 36 hosts does not start 36 threads.

    (Starting a thread waits for it to run, which with the hosts' connection threads busy
    cost ~2 ms each: 60 ms of a 36-host round.) A call that would overfill the kept pool, or
    that comes from one of its own threads (a fan-out inside a fan-out), gets a pool of its own.
    """

    def __init__(self, size: int):
        self.size = size
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._lent = 0
        self._mine = threading.local()

    @contextlib.contextmanager
    def lend(self, n: int):
        with self._lock:
            shared = self._lent + n <= self.size and not getattr(self._mine, "worker", False)
            if shared:
                self._lent += n
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.size, thread_name_prefix="reprobook-fanout",
                                                    initializer=self._mark)
        if not shared:
            with ThreadPoolExecutor(min(self.size, n)) as own:
                yield own
            return
        try:
            yield self._pool
        finally:
            with self._lock:
                self._lent -= n

    def _mark(self) -> None:
        self._mine.worker = True


_workers = _Workers(MAX_PARALLEL)


class GroupResult(dict):
    """host name -> `Result` or exception."""

    @property
    def succeeded(self) -> dict[str, Result]:
        return {h: r for h, r in self.items() if isinstance(r, Result) and r.ok}

    @property
    def failed(self) -> dict[str, object]:
        return {h: r for h, r in self.items() if not (isinstance(r, Result) and r.ok)}

    def raise_if_failed(self) -> None:
        if self.failed:
            lines = [f"{h}: {r if isinstance(r, Exception) else f'exit {r.exited}: {r.tail(3)}'}"
                     for h, r in self.failed.items()]
            raise ReprobookError(f"the command failed on {len(self.failed)} of {len(self)} host(s):\n  "
                                 + "\n  ".join(lines))


class HostGroup:
    """Several hosts, opened lazily and in parallel, closed together."""

    def __init__(self, hosts: Iterable[Host]):
        self.hosts = list(hosts)

    @classmethod
    def from_names(cls, project: Project, names: Iterable[str]) -> "HostGroup":
        return cls(open_host(project.hosts.host(n), project.settings) for n in names)

    @classmethod
    def from_role(cls, project: Project, cluster: str, role: str) -> "HostGroup":
        try:
            names = project.hosts.clusters[cluster].roles[role]
        except KeyError:
            raise ReprobookError(f"no role {role!r} in cluster {cluster!r}") from None
        return cls.from_names(project, names)

    def run(self, command: str, *, env: Mapping[str, object] | None = None, timeout: float | None = None,
            retries: int = 0) -> GroupResult:
        """Run ``command`` on every host concurrently; never raises for one host's failure."""
        return GroupResult(on_each({h.name: h for h in self.hosts},
                                   lambda h: h.run(command, env=env, timeout=timeout, check=False, retries=retries)))

    def close(self) -> None:
        for h in self.hosts:
            h.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
