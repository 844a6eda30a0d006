"""The configuration model: the frozen records a paper file becomes (below a claim).

Made by `reprobook.core.config` from validated YAML; read by the checks, the steps and the pages.
Nothing here reads a file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from reprobook.core.patterns import Pattern

if TYPE_CHECKING:
    from reprobook.core.requirements import Requirements


@dataclass(frozen=True)
class Repository:
    name: str
    url: str
    commit: str
    checkout: str
    submodules: Mapping[str, str] = field(default_factory=dict)
    license: str = ""
    exclude: tuple[str, ...] = ()    # paths (git patterns) a checkout leaves out: a sparse checkout

    @property
    def slug(self) -> str:
        """``owner/name`` for a GitHub-style URL, else the local name."""
        m = re.search(r"github\.com[/:]([^/]+/[^/]+?)(?:\.git)?/?$", self.url)
        return m.group(1) if m else self.name


@dataclass(frozen=True)
class Unchanged:
    """What decides that a step need not run again on a host (its ``unchanged:`` in the paper file): the paths it reads
    (``inputs``), the variables it reads (``env``; None: every parameter), and the paths it makes (``products``). Paths
    are relative to the step's directory; the shell expands variables and globs in them."""

    inputs: tuple[str, ...] = ()
    products: tuple[str, ...] = ()
    env: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Step:
    name: str
    run: str
    cwd: str = ""
    expected_minutes: float = 0.0
    note: str = ""
    where: str = "host"    # "guest": run on the claim's guest, through the host (see reprobook.remote.steps)
    role: str = ""         # the role whose hosts run it ("": the control role; see reprobook.remote.placement)
    sweep: bool = False    # run once per point of the claim's sweep (see reprobook.sweeps)
    scales_with: tuple[str, ...] = ()   # number parameters its expected_minutes are proportional to (at their defaults)
    # the packages it installs, by OS release: (("Debian 12", (name, ...)), ...), in the paper file's order; the step's
    # shell gets rb_packages (reprobook.remote.steps), and the role's os requirement names only these releases
    packages: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # skipped when unchanged since its last successful run on the host (reprobook.remote.steps): None, or its
    # `Unchanged` (what it reads, the variables it reads, what it makes)
    unchanged: "Unchanged | None" = None

    @property
    def releases(self) -> tuple[str, ...]:
        """The OS releases the step installs for ("Debian 12", ...): its package table's; () for a step without one."""
        return tuple(os for os, _ in self.packages)

    def packages_for(self, release: str) -> tuple[str, ...]:
        """The packages of ``release`` ("Ubuntu 22.04"), as its row of the table names them (() when it has none)."""
        return next((p for os, p in self.packages if os.lower() == release.lower()), ())


@dataclass(frozen=True)
class PublishedValue:
    """One source's value for a published number (a figure of a draft, of the camera-ready, a guide's example)."""

    name: str
    value: float
    source: str
    precision: str


@dataclass(frozen=True)
class PublishedNumber:
    """A number the paper (or its guide) publishes: the target value of the checks, and where it comes from.

    ``labels`` say which measured rows it speaks of; ``measure`` names the
    measured column when it is not the check's own (a table of several
    measures); ``sources`` holds every source's value, the target's first.
    """

    id: str
    value: float
    unit: str
    source: str
    precision: str
    what: str = ""
    labels: Mapping[str, Any] = field(default_factory=dict)
    measure: str = ""
    table: str = ""
    sources: tuple[PublishedValue, ...] = ()
    column_label: str = ""   # of a table's cell: the label its columns stand for (the others label its rows)

    @property
    def read_off_figure(self) -> bool:
        return self.precision == "read-off-figure"

    @property
    def others(self) -> tuple[PublishedValue, ...]:
        """The sources other than the target."""
        return self.sources[1:]


@dataclass(frozen=True)
class CheckSpec:
    kind: str
    what: str
    value: str
    options: Mapping[str, Any]
    needs: Any = None      # a `reprobook.core.scales.CheckNeeds`: the scale and host the check needs to be judged


@dataclass(frozen=True)
class OutputSpec:
    name: str
    path: str
    glob: str = "*"
    description: str = ""
    role: str = ""         # the role whose hosts hold it ("": the control role)


@dataclass(frozen=True)
class Parameter:
    name: str
    default: Any
    help: str
    pattern: Pattern | None = None   # what a value may look like (`reprobook.core.patterns`); None: any of its type
    from_cluster: str = ""
    """``cloudlab.experiment`` ...: a live run on a cluster that records it takes its value from there unless given
    (`reprobook.core.plan.cluster_values`)."""
    required: bool = False
    """A live run is refused until it is given (`reprobook.core.plan.make_plan`)."""


PRESENTATIONS = ("plot", "table", "both")
CONTROL = "control"
"""The role of a claim without roles: its one host, where the job runs."""


@dataclass(frozen=True)
class RoleSpec:
    """A role of a claim's placement: how many hosts it takes (``max`` None: any number) and what they need."""

    name: str
    min: int = 1
    max: int | None = 1
    requires: Requirements | None = None
    description: str = ""

    @property
    def count_words(self) -> str:
        if self.max == self.min:
            return f"{self.min} host{'s' if self.min != 1 else ''}"
        return f"{self.min} or more hosts" if self.max is None else f"{self.min} to {self.max} hosts"


def duration_words(minutes: float) -> str:
    """``90`` -> ``"1.5 hours"``, ``12`` -> ``"12 minutes"``."""
    return f"{minutes / 60:.1f} hours" if minutes >= 90 else f"{minutes:.0f} minutes"
