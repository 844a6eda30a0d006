"""Redaction (``redact_hosts``, ``REPROBOOK_REDACT_HOSTS``): what a published page or report must not name, by value.

The values are known, not guessed: the hosts and users of the hosts file, the hosts every recorded run was launched
on (each member of a cluster too) and the host names and users its probe found there, the machine descriptions of imported runs, and the local
directories (the project, the run store, the home directory). A field that holds one of them (a run's host, a
``hostname`` or ``user`` fact) is withheld as a whole; in free text each is replaced where it stands as a name of its
own, in any case: ``node7`` and ``NODE7.cluster.example`` are withheld in "ran on NODE7.cluster.example", ``run`` is
not withheld inside "rerun" or "run-7". Nothing else of a text changes, so a verdict, a status or a scale stays
one of the words its schema allows.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable

WITHHELD = "(withheld)"
IDENTITY_FACTS = ("hostname", "user", "fqdn", "host", "domain")
"""Facts of a probed machine that name it or its user: withheld as fields, and their values in text."""
NOT_SECRET = frozenset({"local", "localhost", "root", "none", "unknown"})
"""Values that name nothing in particular (the built-in host, the superuser): never withheld."""

_NAME_CHAR = r"[\w-]"


class Redactor:
    """Withholds the known ``names`` (whole names, any case, with any domain after them) and ``paths`` (a directory
    and anything under it) in text; `field` withholds a value that is a name as a whole.

    >>> r = Redactor(["node7", "alice"], ["/home/alice"])
    >>> r("alice@NODE7.cluster.example ran /home/alice/x; rerun node7s")
    '(withheld)@(withheld) ran (withheld)/x; rerun node7s'
    """

    def __init__(self, names: Iterable[str], paths: Iterable[str] = ()):
        names = {str(n).strip() for n in names if n is not None}
        self.names = frozenset(n for n in names if n and n.lower() not in NOT_SECRET)
        self.paths = frozenset(str(p).rstrip("/") for p in paths if p and str(p).rstrip("/"))
        parts = [re.escape(p) + r"(?![\w.-])" for p in sorted(self.paths, key=len, reverse=True)]
        parts += [rf"(?<![\w.-]){re.escape(n)}(?:\.{_NAME_CHAR}+)*(?!{_NAME_CHAR})"
                  for n in sorted(self.names, key=len, reverse=True)]
        self._pattern = re.compile("|".join(parts), re.IGNORECASE) if parts else None

    def __call__(self, value: Any) -> Any:
        """``value`` with every known name and path withheld: a string, or the strings in a list or dict's values."""
        if isinstance(value, str):
            return self._pattern.sub(WITHHELD, value) if self._pattern else value
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self(v) for v in value)
        return value

    def field(self, value: Any) -> Any:
        """A field that names a machine or a user: withheld whole when it holds anything."""
        return WITHHELD if value not in (None, "") else value

    def facts(self, facts: dict | None) -> dict | None:
        """A machine's facts: the ones that name it or its user withheld, every other value's known names too."""
        if not facts:
            return facts
        return {k: (self.field(v) if k in IDENTITY_FACTS or (isinstance(v, str) and v.strip() in self.names)
                    else self(v)) for k, v in facts.items()}


def known_names(project, store) -> Redactor:
    """The `Redactor` of ``project``: the names of its hosts file and of every run in ``store`` (see the module)."""
    from reprobook.errors import ConfigError
    names: set[str] = set()
    for spec in project.hosts.hosts.values():
        if spec.is_local:
            continue
        try:
            user, host, _ = spec.target()
        except ConfigError:
            user, host = None, spec.ssh
        names |= {spec.name, spec.ssh, host or "", user or ""}
    for cluster in project.hosts.clusters.values():   # the experiment a cluster was imported from names its owners
        names |= {str(cluster.cloudlab.get(k) or "") for k in ("experiment", "project", "user")}
    for run in store.runs():
        m = run.manifest
        names |= {str(m.get("host") or ""), str((m.get("imported") or {}).get("machine") or "")}
        members = m.get("hosts") if isinstance(m.get("hosts"), dict) else {}   # a cluster's: {host: {facts: ...}}
        recorded = [(h, f) for h, f in (m.get("host_facts") or {}).items()]
        recorded += [(h, (v or {}).get("facts") if isinstance(v, dict) else None) for h, v in members.items()]
        for host, facts in recorded:
            if host != "imported":
                names.add(str(host))
            if isinstance(facts, dict):
                names |= {str(facts[k]) for k in IDENTITY_FACTS if isinstance(facts.get(k), (str, int))}
    paths = {str(project.root), str(Path(project.settings.runs_dir).resolve()), str(project.settings.runs_dir),
             str(Path.home())}
    return Redactor(names, paths - {"", "/"})
