"""Running one command on several hosts at once (a cluster's role, or a list of hosts).

The result maps each host name to its `Result`, or to the exception that
stopped it there, like Fabric's ``GroupResult``: nothing on one host hides
what happened on the others.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Iterable, Mapping

from .config import Project
from .errors import ReprobookError
from .hosts import Host, Result, open_host


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
        def one(host: Host):
            try:
                return host.run(command, env=env, timeout=timeout, check=False, retries=retries)
            except ReprobookError as exc:
                return exc

        with ThreadPoolExecutor(max_workers=max(1, len(self.hosts))) as pool:
            results = list(pool.map(one, self.hosts))
        return GroupResult(zip((h.name for h in self.hosts), results))

    def close(self) -> None:
        for h in self.hosts:
            h.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
