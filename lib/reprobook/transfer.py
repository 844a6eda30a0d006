"""Fetching outputs from a host: resumable, verified, and never destructive.

Each output is listed on the host with its size and sha256 in one round trip.
A local file that already has that checksum is skipped, so an interrupted fetch
resumes with what is missing or changed. Files arrive as ``<name>.part`` and are
renamed only once their checksum matches; nothing already fetched is deleted,
whatever goes wrong.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shlex
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Mapping

from .config import OutputSpec
from .errors import OutputError, TestbedError
from .hosts import Host


@dataclass(frozen=True)
class RemoteFile:
    output: str
    relpath: str
    size: int
    sha256: str


@dataclass(frozen=True)
class FetchedFile:
    """One fetched file: which output it belongs to, where it is (relative to the run directory), its checksum."""

    output: str
    path: str
    size: int
    sha256: str
    transferred: bool


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_LIST = r"""
root=$1; pattern=$2; marker=$3
cd "$root" 2>/dev/null || { echo "RB:NODIR"; exit 0; }
if [ -n "$marker" ] && [ -e "$marker" ]; then set -- -newer "$marker"; else set --; fi
find . -type f -name "$pattern" "$@" -print0 | while IFS= read -r -d '' f; do
  printf '%s\t%s\n' "$(stat -c %s -- "$f")" "$(sha256sum -- "$f" | cut -c1-64)"
  printf '%s\0' "$f"
done
"""


def list_outputs(host: Host, outputs: Mapping[str, OutputSpec], *, newer_than: str | None = None) -> list[RemoteFile]:
    """Every file of ``outputs`` on ``host`` (optionally only those newer than the file ``newer_than``)."""
    found = []
    for name, spec in outputs.items():
        root = spec.path if spec.path.startswith("/") else f"{host.workdir.rstrip('/')}/{spec.path}"
        cmd = "bash -c " + shlex.quote(_LIST) + " reprobook " + " ".join(
            shlex.quote(a) for a in (root, spec.glob or "*", newer_than or ""))
        out = host.run(cmd, retries=2).stdout
        if out.startswith("RB:NODIR"):
            continue
        # records: "<size>\t<sha>\n<path>\0"
        for rec in out.split("\0"):
            if not rec.strip():
                continue
            meta, _, rel = rec.partition("\n")
            size, sha = meta.split("\t")
            rel = str(PurePosixPath(rel))
            found.append(RemoteFile(name, rel, int(size), sha))
    return found


def fetch(host: Host, outputs: Mapping[str, OutputSpec], local_dir: Path, *,
          newer_than: str | None = None) -> list[FetchedFile]:
    """Copy the outputs into ``local_dir/outputs/<name>/...``, resuming and verifying.

    Raises
    ------
    OutputError
        A file arrived with the wrong checksum, or the local disk refused it
        (full, read-only). Files fetched before the error stay in place.
    """
    local_dir = Path(local_dir)
    files = list_outputs(host, outputs, newer_than=newer_than)
    fetched = []
    for rf in files:
        spec = outputs[rf.output]
        root = spec.path if spec.path.startswith("/") else f"{host.workdir.rstrip('/')}/{spec.path}"
        rel = Path("outputs", rf.output, rf.relpath)
        dest = local_dir / rel
        if dest.is_file() and dest.stat().st_size == rf.size and sha256_file(dest) == rf.sha256:
            fetched.append(FetchedFile(rf.output, rel.as_posix(), rf.size, rf.sha256, transferred=False))
            continue
        part = dest.with_name(dest.name + ".part")
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            host.get(f"{root}/{rf.relpath}", part)
        except OSError as exc:
            _drop(part)
            if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EROFS, errno.EPERM):
                raise OutputError(f"cannot write the fetched file ({os.strerror(exc.errno)}); the files "
                                  f"fetched so far are kept. Free space or fix "
                                  f"permissions, then fetch again: only what is missing is transferred.",
                                  file=dest) from None
            raise TestbedError(f"transfer of {rf.relpath} broke off ({exc}); fetch again to resume",
                               host=host.name) from None
        except (EOFError, TestbedError) as exc:
            _drop(part)
            raise TestbedError(f"transfer of {rf.relpath} broke off ({exc}); fetch again to resume",
                               host=host.name) from None
        got = sha256_file(part)
        if got != rf.sha256:
            _drop(part)
            raise OutputError(f"checksum mismatch after transfer (host says {rf.sha256[:12]}, got {got[:12]}); "
                              f"the file changed while being fetched, or the transfer is corrupt. Fetch again.",
                              file=dest)
        os.replace(part, dest)
        fetched.append(FetchedFile(rf.output, rel.as_posix(), rf.size, rf.sha256, transferred=True))
    return fetched


def _drop(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
