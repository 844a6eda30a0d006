"""Archives of outputs, checked against limits and unpacked once.

An evaluator may bring a run's outputs back as one ``.tar``/``.tar.gz``/``.tgz``/``.tar.bz2``/``.tar.xz``
(a tree of output directories kept whole). Such a file is untrusted: a megabyte of gzip can
hold a terabyte of zeros. So an archive is read as a stream, each member's header judged
before any of its bytes are written, against `Limits`:

- a member's size (``REPROBOOK_ARCHIVE_MAX_MEMBER_BYTES``, default 4 GiB);
- the total of the members (``REPROBOOK_ARCHIVE_MAX_BYTES``, default 16 GiB);
- the number of members (``REPROBOOK_ARCHIVE_MAX_MEMBERS``, default 100,000);
- the expansion: past 100 MB unpacked, no more than 100 times the archive's own size
  (``REPROBOOK_ARCHIVE_MAX_RATIO``).

A refusal (`ArchiveRefused`) names the archive, the member and the limit. `check` reads the
headers only (and is how an import refuses before it stores anything); `unpack` checks again
as it writes, with ``tarfile``'s ``data`` filter (no absolute paths, nothing outside the
destination, no devices). `reprobook.core.runs.RunStore.import_files` unpacks an archive once,
into the run store; evaluations then read the unpacked files.
"""

from __future__ import annotations

import os
import tarfile
from dataclasses import dataclass
from pathlib import Path

from reprobook.errors import ConfigError, OutputError

SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
"""The file names taken for archives of outputs."""

MB, GIB = 1000 ** 2, 1024 ** 3


class ArchiveRefused(OutputError):
    """An archive over one of its `Limits` (or not readable as one): nothing of it is kept."""


@dataclass(frozen=True)
class Limits:
    """What an archive may hold (see the module doc)."""

    member_bytes: int = 4 * GIB
    total_bytes: int = 16 * GIB
    members: int = 100_000
    ratio: float = 100.0
    ratio_after_bytes: int = 100 * MB

    @classmethod
    def from_env(cls) -> "Limits":
        """The defaults, each overridden by its ``REPROBOOK_ARCHIVE_*`` variable."""
        def num(name: str, default, kind):
            raw = os.environ.get(name)
            if raw is None or not raw.strip():
                return default
            try:
                value = kind(raw)
            except ValueError:
                raise ConfigError(f"{name}={raw!r} is not a number") from None
            if value <= 0:
                raise ConfigError(f"{name}={raw!r} must be above 0")
            return value
        d = cls()
        return cls(member_bytes=num("REPROBOOK_ARCHIVE_MAX_MEMBER_BYTES", d.member_bytes, int),
                   total_bytes=num("REPROBOOK_ARCHIVE_MAX_BYTES", d.total_bytes, int),
                   members=num("REPROBOOK_ARCHIVE_MAX_MEMBERS", d.members, int),
                   ratio=num("REPROBOOK_ARCHIVE_MAX_RATIO", d.ratio, float))


def is_archive(path: str | Path) -> bool:
    """Whether ``path`` is named as an archive of outputs (`SUFFIXES`)."""
    return str(path).lower().endswith(SUFFIXES)


def _size(n: float) -> str:
    return f"{n / GIB:.2f} GiB" if n >= GIB else f"{n / MB:.1f} MB" if n >= MB else f"{int(n)} bytes"


@dataclass
class _Tally:
    archive: Path
    limits: Limits
    packed: int
    count: int = 0
    total: int = 0

    def admit(self, member: tarfile.TarInfo) -> None:
        """Count ``member`` in, or refuse it naming the archive, the member and the limit."""
        lim, name = self.limits, member.name

        def refuse(why: str):
            raise ArchiveRefused(f"archive refused: member {name!r} {why}; nothing of the archive was kept",
                                 file=self.archive)
        self.count += 1
        if self.count > lim.members:
            refuse(f"is member number {self.count}, over the limit of {lim.members} members "
                   f"(REPROBOOK_ARCHIVE_MAX_MEMBERS)")
        if not (member.isfile() or member.isdir() or member.issym()):
            refuse("is neither a file, a directory nor a symbolic link (a device, a pipe or a hard link): "
                   "outputs are files")
        size = member.size if member.isfile() else 0
        if size > lim.member_bytes:
            refuse(f"is {_size(size)}, over the limit of {_size(lim.member_bytes)} per member "
                   f"(REPROBOOK_ARCHIVE_MAX_MEMBER_BYTES)")
        self.total += size
        if self.total > lim.total_bytes:
            refuse(f"brings the unpacked total to {_size(self.total)}, over the limit of {_size(lim.total_bytes)} "
                   f"(REPROBOOK_ARCHIVE_MAX_BYTES)")
        if self.total > lim.ratio_after_bytes and self.total > lim.ratio * max(self.packed, 1):
            refuse(f"brings the unpacked total to {_size(self.total)}, {self.total / max(self.packed, 1):,.0f} times "
                   f"the archive's {_size(self.packed)}: over the limit of {lim.ratio:g} times past "
                   f"{_size(lim.ratio_after_bytes)} (REPROBOOK_ARCHIVE_MAX_RATIO)")


def _open(archive: Path) -> tarfile.TarFile:
    try:
        return tarfile.open(archive, mode="r|*")  # a stream: headers one by one, never a seek back
    except (tarfile.TarError, OSError) as exc:
        raise ArchiveRefused(f"cannot unpack the archive: not a readable tar archive ({exc})", file=archive) from None


def check(archive: str | Path, limits: Limits | None = None) -> tuple[int, int]:
    """Read the headers of ``archive`` against ``limits``: (members, unpacked bytes), or `ArchiveRefused`.

    A member over a limit is refused at its header: none of its bytes is read.
    """
    archive = Path(archive)
    tally = _Tally(archive, limits or Limits.from_env(), archive.stat().st_size)
    tar = _open(archive)
    try:
        with tar:
            for member in tar:
                tally.admit(member)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ArchiveRefused(f"cannot unpack the archive: not a readable tar archive ({exc}); nothing of it was kept",
                             file=archive) from None
    return tally.count, tally.total


def unpack(archive: str | Path, dest: str | Path, limits: Limits | None = None) -> list[Path]:
    """Unpack ``archive`` into ``dest`` (made; must not exist), checked as in `check`: the files written, sorted.

    On a refusal or an error, ``dest`` is removed: nothing of the archive is kept.
    """
    import shutil
    archive, dest = Path(archive), Path(dest)
    tally = _Tally(archive, limits or Limits.from_env(), archive.stat().st_size)
    dest.mkdir(parents=True)
    try:
        tar = _open(archive)
        with tar:
            for member in tar:
                tally.admit(member)
                tar.extract(member, dest, filter="data")
    except ArchiveRefused:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    except (tarfile.TarError, OSError, EOFError, ValueError) as exc:
        shutil.rmtree(dest, ignore_errors=True)
        raise ArchiveRefused(f"cannot unpack the archive ({exc}); nothing of it was kept", file=archive) from None
    return sorted(p for p in dest.rglob("*") if p.is_file() and not p.is_symlink())
