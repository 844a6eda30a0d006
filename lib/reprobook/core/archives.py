"""What a run's outputs may hold, and archives of outputs unpacked once, within those limits.

A run's outputs come from outside: files an evaluator imports, files a host lists for a fetch,
and ``.tar``/``.tar.gz``/``.tgz``/``.tar.bz2``/``.tar.xz`` archives among either (a tree of output
directories kept whole). None of it is trusted: a megabyte of gzip can hold a terabyte of zeros,
an archive can hold archives, a host can list a sparse file of a terabyte. So everything a run
stores is counted against one `Budget` of `Limits` (``limits:`` in ``configs/reprobook.yaml``, each
overridden by its ``REPROBOOK_MAX_*`` variable):

- ``run_bytes``: the bytes a run's outputs may take once stored, unpacked archives included
  (``REPROBOOK_MAX_RUN_BYTES``, default 16 GiB);
- ``run_files``: the files a run may hold, each entry of an archive counted, directories too
  (``REPROBOOK_MAX_RUN_FILES``, default 20,000);
- ``file_bytes``: one file, or one member of an archive (``REPROBOOK_MAX_FILE_BYTES``, default 4 GiB);
- ``expansion``: past 100 MB unpacked, an archive (the archives inside it included) may not
  unpack to more than this many times its own size (``REPROBOOK_MAX_EXPANSION``, default 100).

An archive is read as a stream, each member's header judged before any of its bytes are written.
A member that is itself an archive is unpacked in its place (a directory of its name), counted
against the same budget and the same expansion as the archive that holds it, at most `DEPTH`
archives deep. Members are regular files and directories only: a hard link, a device or a pipe
is refused, and so is a symbolic link that leads outside the archive (the others are not made:
outputs are files); a name that is absolute or climbs with ``..`` is refused. A refusal
(`ArchiveRefused`, a `LimitExceeded` for a limit) names the archive, the member and the limit,
and leaves nothing of the archive behind.

`unpack` is the only place that opens an archive of outputs: an import (`reprobook.core.runs.RunStore.import_files`)
and a live fetch (`reprobook.remote.live`) call it once; evaluations read the unpacked files.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from reprobook.errors import ConfigError, LimitExceeded, OutputError

SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
"""The file names taken for archives of outputs."""
UNPACKED = ".unpacked"
"""The suffix of the directory a fetched archive is unpacked into, beside it (a fetch keeps what it fetched)."""
DEPTH = 4
"""How many archives deep an archive of outputs may nest (an archive in an archive is 2)."""

MB, GIB = 1000 ** 2, 1024 ** 3
_CHUNK = 1 << 20


class ArchiveRefused(OutputError):
    """An archive that cannot be unpacked (not readable as one, or a member refused): nothing of it is kept."""


class ArchiveOverLimit(ArchiveRefused, LimitExceeded):
    """An archive whose members go over one of the `Limits`: nothing of it is kept."""


# key: (variable, kind, default, what the limit bounds)
_KNOBS = {
    "run_bytes": ("REPROBOOK_MAX_RUN_BYTES", int, 16 * GIB, "bytes a run's outputs may take"),
    "run_files": ("REPROBOOK_MAX_RUN_FILES", int, 20_000, "files a run may hold"),
    "file_bytes": ("REPROBOOK_MAX_FILE_BYTES", int, 4 * GIB, "bytes per file"),
    "expansion": ("REPROBOOK_MAX_EXPANSION", float, 100.0, "times an archive's own size, past 100 MB unpacked"),
}
_UNITS = {"": 1, "b": 1, "kb": 1000, "mb": MB, "gb": 1000 ** 3, "tb": 1000 ** 4,
          "kib": 1024, "mib": 1024 ** 2, "gib": GIB, "tib": 1024 ** 4}
_AMOUNT = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*")


def _amount(text: str, kind) -> float:
    """``"16 GiB"``, ``"500MB"`` or a plain number."""
    m = _AMOUNT.fullmatch(text)
    if not m or m.group(2).lower() not in _UNITS or (kind is float and m.group(2)):
        raise ValueError(text)
    return kind(float(m.group(1)) * _UNITS[m.group(2).lower()])


@dataclass(frozen=True)
class Limits:
    """What one run's outputs may hold (see the module doc)."""

    run_bytes: int = _KNOBS["run_bytes"][2]
    run_files: int = _KNOBS["run_files"][2]
    file_bytes: int = _KNOBS["file_bytes"][2]
    expansion: float = _KNOBS["expansion"][2]
    expansion_after_bytes: int = 100 * MB

    @classmethod
    def from_settings(cls, raw: Mapping | None = None, file: str | Path | None = None) -> "Limits":
        """The ``limits`` mapping of the settings over the defaults, each overridden by its variable.

        Raises
        ------
        ConfigError
            Naming the variable (or the file and key) and what it holds, when that is not a positive amount.
        """
        values = {}
        for key, (env, kind, default, _) in _KNOBS.items():
            given, where = os.environ.get(env), env
            if given is None or not given.strip():
                given, where = (raw or {}).get(key), f"limits.{key}"
            if given is None:
                values[key] = default
                continue
            try:
                value = _amount(given, kind) if isinstance(given, str) else kind(given)
                if isinstance(given, bool) or not value > 0 or value != value:
                    raise ValueError(given)
            except (ValueError, TypeError, OverflowError):
                unit = "a number" if kind is float else "a whole number of bytes or files, or an amount such as '16 GiB'"
                raise ConfigError(f"{where}={given!r} is not a positive amount: give {unit}",
                                  file=None if where == env else file) from None
            values[key] = value
        return cls(**values)

    @classmethod
    def from_env(cls) -> "Limits":
        """The defaults, each overridden by its ``REPROBOOK_MAX_*`` variable (no settings file)."""
        return cls.from_settings(None)

    @staticmethod
    def named(key: str) -> str:
        """How a user changes the limit ``key``: ``limits.<key> in configs/reprobook.yaml, or REPROBOOK_MAX_...``."""
        return f"limits.{key} in configs/reprobook.yaml, or {_KNOBS[key][0]}"


def size_words(n: float) -> str:
    """``n`` bytes as a reader takes them in (``1.00 GiB``, ``95.0 MB``, ``300 bytes``)."""
    return f"{n / GIB:.2f} GiB" if n >= GIB else f"{n / MB:.1f} MB" if n >= MB else f"{int(n)} bytes"


@dataclass
class Budget:
    """What a run's outputs have taken so far (files, bytes), checked against `Limits` as each one comes.

    One budget spans everything one run stores: the files imported or fetched, and every archive's
    members (nested ones too). `take` raises `LimitExceeded` before the thing it counts is written.
    """

    limits: Limits
    files: int = 0
    bytes: int = 0

    def take(self, name: str, size: int, *, file: str | Path, what: str = "file",
             refusal=LimitExceeded) -> None:
        """Count one file (or archive member) ``name`` of ``size`` bytes in, or raise ``refusal`` naming it."""
        lim = self.limits
        where = f"{what} {name!r}"
        if size > lim.file_bytes:
            raise refusal(f"{where} is {size_words(size)}, over the limit of {size_words(lim.file_bytes)} per file "
                          f"({Limits.named('file_bytes')}); nothing of it was kept", file=file)
        if self.files + 1 > lim.run_files:
            raise refusal(f"{where} is file number {self.files + 1} of the run, over the limit of "
                          f"{lim.run_files:,} files a run may hold ({Limits.named('run_files')}); nothing of it "
                          f"was kept", file=file)
        if self.bytes + size > lim.run_bytes:
            raise refusal(f"{where} ({size_words(size)}) brings the run's outputs to "
                          f"{size_words(self.bytes + size)}, over the limit of {size_words(lim.run_bytes)} "
                          f"({Limits.named('run_bytes')}); nothing of it was kept", file=file)
        self.files += 1
        self.bytes += size


def is_archive(path: str | Path) -> bool:
    """Whether ``path`` is named as an archive of outputs (`SUFFIXES`)."""
    return str(path).lower().endswith(SUFFIXES)


@dataclass(frozen=True)
class Unpacked:
    """One file written by `unpack`: its path under the destination (``/``-separated), its size and sha256
    (computed as it was written)."""

    dest: Path
    rel: str
    size: int
    sha256: str

    @property
    def path(self) -> Path:
        """Where the file is."""
        return self.dest / self.rel


@dataclass
class _Unpacking:
    archive: Path          # the archive as the user or the host named it (for messages)
    budget: Budget
    packed: int            # the outermost archive's own size: the expansion is measured against it
    written: int = 0
    out: list = field(default_factory=list)
    made: set = field(default_factory=set)

    def refuse(self, member: str, why: str, over_limit: bool = False):
        kind = ArchiveOverLimit if over_limit else ArchiveRefused
        raise kind(f"archive refused: member {member!r} {why}; nothing of the archive was kept", file=self.archive)

    def unpack(self, source: Path, dest: Path, prefix: str, depth: int) -> None:
        """Unpack ``source`` into ``dest``; each file written goes into ``out`` as (path, size, sha256)
        (``prefix``: the name of ``source`` in the archive that holds it, for messages)."""
        try:
            # headers one by one, each member read right after its own (only forward: ``r:`` reads a compressed
            # file through its buffered reader, three times faster than the block-by-block ``r|`` stream)
            tar = tarfile.open(source, mode="r:*")
        except (tarfile.TarError, OSError, EOFError) as exc:
            where = f"its member {prefix.rstrip('/')!r} " if prefix else ""
            raise ArchiveRefused(f"cannot unpack the archive: {where}is not a readable tar archive ({exc}); "
                                 f"nothing of it was kept", file=self.archive) from None
        with tar:
            for member in tar:
                self.member(tar, member, dest, prefix, depth)

    def member(self, tar: tarfile.TarFile, member: tarfile.TarInfo, dest: Path, prefix: str, depth: int) -> None:
        raw = member.name
        name = prefix + raw
        parts = [p for p in raw.split("/") if p not in ("", ".")]
        if raw.startswith("/") or ".." in parts or "\0" in raw:
            self.refuse(name, "has a path that is absolute or climbs out with '..': cannot unpack it")
        if member.issym():
            target, level = member.linkname, len(parts) - 1
            for p in target.split("/"):
                level += -1 if p == ".." else 0 if p in ("", ".") else 1
                if level < 0:
                    break
            if target.startswith("/") or level < 0:
                self.refuse(name, f"is a symbolic link to {target!r}, outside the archive: cannot unpack it")
            return  # a link inside the archive is not made: outputs are files, each read where it is
        if not (member.isfile() or member.isdir()):
            self.refuse(name, "is neither a file, a directory nor a symbolic link (a device, a pipe or a hard link): "
                              "outputs are files")
        size = member.size if member.isfile() else 0
        self.budget.take(name, size, file=self.archive, what="archive refused: member", refusal=ArchiveOverLimit)
        self.written += size
        lim = self.budget.limits
        if self.written > lim.expansion_after_bytes and self.written > lim.expansion * max(self.packed, 1):
            self.refuse(name, f"brings what the archive unpacks to {size_words(self.written)}, "
                              f"{self.written / max(self.packed, 1):,.0f} times the archive's {size_words(self.packed)}: "
                              f"over the limit of {lim.expansion:g} times past {size_words(lim.expansion_after_bytes)} "
                              f"({Limits.named('expansion')})", over_limit=True)
        if not parts:
            return
        path = os.path.join(dest, *parts)
        if member.isdir():
            self.mkdirs(path)
            return
        self.mkdirs(os.path.dirname(path))
        h = hashlib.sha256()
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            self.refuse(name, "appears twice in the archive (or as a file and a directory)")
        with os.fdopen(fd, "wb") as out:
            if size:
                src, left = tar.extractfile(member), size
                while left > 0:
                    chunk = src.read(min(_CHUNK, left))
                    if not chunk:
                        raise EOFError(f"member {name!r} ends early")
                    out.write(chunk)
                    h.update(chunk)
                    left -= len(chunk)
        if is_archive(parts[-1]):
            if depth >= DEPTH:
                self.refuse(name, f"is an archive {depth + 1} archives deep, over the limit of {DEPTH}")
            inner, first = path + ".unpacking", len(self.out)
            os.mkdir(inner)
            self.unpack(Path(path), Path(inner), name + "/", depth + 1)
            os.unlink(path)
            os.rename(inner, path)    # the inner archive's place is taken by its files, as the outer archive's is
            cut = len(inner)
            self.out[first:] = [(path + p[cut:], n, sha) for p, n, sha in self.out[first:]]
            return
        self.out.append((path, size, h.hexdigest()))

    def mkdirs(self, path: str) -> None:
        if path not in self.made:
            os.makedirs(path, exist_ok=True)
            self.made.add(path)


def unpack(archive: str | Path, dest: str | Path, limits: Limits | None = None, *, budget: Budget | None = None,
           shown: str | Path | None = None) -> list[Unpacked]:
    """Unpack ``archive`` into ``dest`` (made; must not exist), archives inside it in their place: the files written.

    Everything is counted against ``budget`` (a fresh one of ``limits`` when not given: the run's budget
    when the run stores more than this archive). ``shown`` is the archive's name in messages (default:
    its path). On a refusal or an error, ``dest`` is removed and ``budget`` is as it was: nothing of the
    archive is kept.

    Raises
    ------
    ArchiveRefused
        Naming the archive, the member and why (`ArchiveOverLimit`, with the limit, when over one).
    """
    archive, dest = Path(archive), Path(dest)
    budget = budget if budget is not None else Budget(limits or Limits.from_env())
    before = (budget.files, budget.bytes)
    job = _Unpacking(Path(shown) if shown else archive, budget, archive.stat().st_size)
    dest.mkdir(parents=True)
    try:
        job.unpack(archive, dest, "", 1)
    except BaseException as exc:
        shutil.rmtree(dest, ignore_errors=True)
        budget.files, budget.bytes = before
        if isinstance(exc, ArchiveRefused):
            raise
        if isinstance(exc, (tarfile.TarError, OSError, EOFError, ValueError)):
            raise ArchiveRefused(f"cannot unpack the archive ({exc}); nothing of it was kept", file=job.archive) from None
        raise
    cut = len(str(dest)) + 1
    return sorted((Unpacked(dest, p[cut:].replace(os.sep, "/"), n, sha) for p, n, sha in job.out), key=lambda u: u.rel)
