"""Running one command on several hosts at once (a cluster's role, or a list of hosts).

The result maps each host name to its `Result`, or to the exception that
stopped it there, like Fabric's ``GroupResult``: nothing on one host hides
what happened on the others.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Mapping, TypeVar

from .config import Project
from .errors import ReprobookError
from .hosts import Host, Result, open_host


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
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(hosts))) as pool:
        return dict(zip(hosts, pool.map(one, hosts.values())))


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
