"""Fetching outputs from a host: resumable, verified, never destructive, and as fast as rsync.

1. One round trip lists every output file on the host with its size and
   modification time.
2. A file whose size and time match what the last fetch recorded (in
   ``outputs/.fetch-state.json``) and whose local copy is untouched is not
   transferred again: re-fetching unchanged outputs costs one listing.
3. The rest moves with ``rsync`` over the system's OpenSSH client (same
   ``~/.ssh/config``, same ``known_hosts``, batch mode: never a prompt, never
   an unknown key accepted), which checks each file with its own checksum and
   keeps partial files so an interrupted transfer resumes. A few small files,
   or a host without rsync, go one by one over the open SSH connection (SFTP,
   or a copy for ``local``), each first as ``<name>.part``, renamed only once
   complete.
4. The sha256 of every file that arrived is recorded for the manifest.

Nothing already fetched is ever deleted, whatever goes wrong.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import json
import os
import shlex
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Mapping, Sequence

from .config import OutputSpec
from .errors import OutputError, TestbedError
from .hosts import Host, SshHost

STATE = ".fetch-state.json"
RSYNC_MIN_BYTES = 32 << 20
RSYNC_MIN_FILES = 64


@dataclass(frozen=True)
class RemoteFile:
    output: str
    root: str
    relpath: str
    size: int
    mtime: str


@dataclass(frozen=True)
class FetchedFile:
    """One fetched file: its output, its path relative to the run directory, size, sha256, and whether it moved now."""

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
marker=$1; inline_max=$2; nreads=$3; shift 3
b64() { base64 -w0 2>/dev/null || base64 | tr -d '\n'; }  # GNU, else BusyBox and BSD
# files to read back whole, base64, in this same round trip (a run's log, its checkouts)
while [ "$nreads" -gt 0 ]; do
  printf 'RB:TEXT\t%s\t' "$1"; [ -r "$1" ] && b64 < "$1"; printf '\0'; shift; nreads=$((nreads - 1))
done
printf 'RB:RSYNC\t%s\0' "$(command -v rsync >/dev/null 2>&1 && echo yes || echo no)"
while [ "$#" -ge 3 ]; do
  name=$1; root=$2; pattern=$3; shift 3
  ( cd "$root" 2>/dev/null || exit 0
    if [ -n "$marker" ] && [ -e "$marker" ]; then set -- -newer "$marker"; else set --; fi
    find . -type f -name "$pattern" "$@" -printf "$name\t%s\t%T@\t%P\0"
    # small files come along inline: no second round trip for a run's few result files
    if [ "$inline_max" -gt 0 ]; then
      find . -type f -name "$pattern" "$@" -size -"$inline_max"c -printf '%P\0' 2>/dev/null | head -z -n 64 |
        while IFS= read -r -d '' f; do printf 'RB:DATA\t%s\t' "$name"; b64 < "$f"; printf '\t%s\0' "$f"; done
    fi )
done
true
"""
INLINE_MAX_BYTES = 16 << 10  # files below this size (64 at most per output) travel inside the listing


@dataclass
class Listing:
    """What one round trip to the host found: output files, texts read whole, small files' bytes."""

    files: list[RemoteFile]
    texts: dict[str, str | None]
    inline: dict[tuple[str, str], bytes]
    rsync: bool | None


def _root(host: Host, spec: OutputSpec) -> str:
    return spec.path if spec.path.startswith("/") else f"{host.workdir.rstrip('/')}/{spec.path}"


def survey(host: Host, outputs: Mapping[str, OutputSpec], *, newer_than: str | None = None,
           read: Sequence[str] = (), inline_max: int = 0) -> Listing:
    """One round trip: every file of ``outputs`` on ``host`` (only those newer than ``newer_than``, if
    given), the whole text of each remote path in ``read`` (``None`` if absent), and the bytes of
    files smaller than ``inline_max``."""
    args = [newer_than or "", str(int(inline_max)), str(len(read)), *read]
    roots = {}
    for name, spec in outputs.items():
        roots[name] = _root(host, spec)
        args += [name, roots[name], spec.glob or "*"]
    found, texts, inline, rsync = [], {}, {}, None
    for rec in host.run_script(_LIST, *args, retries=2).stdout.split("\0"):
        if not rec:
            continue
        if rec.startswith("RB:TEXT\t"):
            _, path, data = rec.split("\t", 2)
            texts[path] = _unb64(data).decode(errors="replace") if data else None
        elif rec.startswith("RB:DATA\t"):
            _, name, data, rel = rec.split("\t", 3)  # the path last: it may hold a tab
            inline[(name, str(PurePosixPath(rel)))] = _unb64(data)  # b"" if garbled: then sent the usual way
        elif rec.startswith("RB:RSYNC\t"):
            rsync = rec.endswith("yes")
        else:
            name, size, mtime, rel = rec.split("\t", 3)
            found.append(RemoteFile(name, roots[name], str(PurePosixPath(rel)), int(size), mtime))
    for path in read:
        texts.setdefault(path, None)
    return Listing(found, texts, inline, rsync)


def _unb64(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except ValueError:  # binascii.Error: a reader failed half-way on the host
        return b""


def list_outputs(host: Host, outputs: Mapping[str, OutputSpec], *, newer_than: str | None = None) -> list[RemoteFile]:
    """Every file of ``outputs`` on ``host``, in one round trip (optionally only files newer than ``newer_than``)."""
    return survey(host, outputs, newer_than=newer_than).files if outputs else []


def _load_state(local_dir: Path) -> dict:
    try:
        return json.loads((local_dir / "outputs" / STATE).read_text())
    except (OSError, ValueError):
        return {}


def _save_state(local_dir: Path, state: dict) -> None:
    path = local_dir / "outputs" / STATE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(STATE + ".tmp")
        tmp.write_text(json.dumps(state, sort_keys=True))
        os.replace(tmp, path)
    except OSError:
        _drop(path.with_name(STATE + ".tmp"))  # the state only saves time; without it the next fetch
        # compares checksums with the host (`_already_here`)


def fetch(host: Host, outputs: Mapping[str, OutputSpec], local_dir: Path, *, newer_than: str | None = None,
          method: str = "auto", listing: Listing | None = None) -> list[FetchedFile]:
    """Bring the outputs into ``local_dir/outputs/<name>/...``, transferring only what is missing or changed.

    ``method`` is ``auto`` (rsync for bulk transfers when the host is reached
    over SSH and rsync is installed on both ends, else SFTP), ``rsync``, or
    ``sftp``. With ``auto``, files under 16 KiB arrive inside the listing
    itself. ``listing`` is a `survey` already made (of the same outputs).

    Raises
    ------
    OutputError
        The local disk refused a file (full, read-only) or a file arrived
        corrupt. Files fetched before the error stay in place.
    TestbedError
        The connection broke off; fetching again resumes.
    """
    local_dir = Path(local_dir)
    if listing is None:
        listing = survey(host, outputs, newer_than=newer_than, inline_max=INLINE_MAX_BYTES if method == "auto" else 0)
    if listing.rsync is not None and isinstance(host, SshHost):
        host._rsync_remote = listing.rsync
    files = listing.files
    state = _load_state(local_dir)
    result: dict[str, FetchedFile] = {}
    todo: list[RemoteFile] = []
    for rf in files:
        rel = Path("outputs", rf.output, rf.relpath).as_posix()
        st, dest = state.get(rel), local_dir / rel
        if st and st["size"] == rf.size and st["mtime"] == rf.mtime and dest.is_file():
            ls = dest.stat()
            if ls.st_size == rf.size and ls.st_mtime_ns == st["local_mtime_ns"]:
                result[rel] = FetchedFile(rf.output, rel, rf.size, st["sha256"], transferred=False)
                continue
        todo.append(rf)
    if todo:
        try:
            if listing.inline:
                todo = _from_listing(listing, todo, local_dir, state, result)
            if todo:
                todo = _already_here(host, todo, local_dir, state, result)
            if todo:
                if method == "auto":
                    # a few files ride the open SSH connection; bulk goes to rsync, whose own
                    # connection costs a handshake but which moves data at OpenSSH's speed
                    bulk = sum(rf.size for rf in todo) >= RSYNC_MIN_BYTES or len(todo) >= RSYNC_MIN_FILES
                    method = "rsync" if bulk and _rsync_usable(host) else "sftp"
                if method == "rsync":
                    _via_rsync(host, todo, local_dir, state, result)
                else:
                    _one_by_one(host, todo, local_dir, state, result)
        finally:
            _save_state(local_dir, state)
    order = [Path("outputs", rf.output, rf.relpath).as_posix() for rf in files]
    return [result[r] for r in order]


def _local(local_dir: Path, rf: RemoteFile) -> Path:
    """Where ``rf`` goes in the run directory."""
    return local_dir / "outputs" / rf.output / rf.relpath


def _record(local_dir: Path, rf: RemoteFile, sha: str, state: dict, result: dict, transferred: bool = True) -> None:
    rel = Path("outputs", rf.output, rf.relpath).as_posix()
    state[rel] = {"size": rf.size, "mtime": rf.mtime, "sha256": sha,
                  "local_mtime_ns": (local_dir / rel).stat().st_mtime_ns}
    result[rel] = FetchedFile(rf.output, rel, rf.size, sha, transferred=transferred)


def _from_listing(listing: Listing, todo: list[RemoteFile], local_dir: Path, state: dict,
                  result: dict) -> list[RemoteFile]:
    """Write the files whose bytes came inside the listing; return the rest."""
    rest = []
    for rf in todo:
        data = listing.inline.get((rf.output, rf.relpath))
        if data is None or len(data) != rf.size:  # not sent, or changed between listing and reading
            rest.append(rf)
            continue
        dest = _local(local_dir, rf)
        part = dest.with_name(dest.name + ".part")
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            part.write_bytes(data)
            os.replace(part, dest)
        except OSError as exc:
            _drop(part)
            raise (_disk_error(exc, dest) or exc) from None
        _record(local_dir, rf, hashlib.sha256(data).hexdigest(), state, result)
    return rest


_SUMS = r"""
command -v sha256sum >/dev/null || exit 0
for f in "$@"; do [ -f "$f" ] && sha256sum -- "$f"; done
true
"""


def _already_here(host: Host, todo: list[RemoteFile], local_dir: Path, state: dict,
                  result: dict) -> list[RemoteFile]:
    """Files a previous fetch brought but could not record (its state was lost, e.g. on a full disk).

    A local file of the listed size is kept, without transferring it, if its
    sha256 equals the host's (one round trip for all candidates). Returns what
    still has to be transferred.
    """
    candidates = [rf for rf in todo if (p := _local(local_dir, rf)).is_file() and p.stat().st_size == rf.size]
    if not candidates:
        return todo
    paths = [f"{rf.root}/{rf.relpath}" for rf in candidates]
    try:
        out = host.run_script(_SUMS, *paths, retries=1).stdout
    except TestbedError:
        return todo
    remote = {}
    for line in out.splitlines():
        digest, _, path = line.partition("  ")
        remote[path] = digest
    with ThreadPoolExecutor(max_workers=2) as pool:
        local = list(pool.map(lambda rf: sha256_file(_local(local_dir, rf)), candidates))
    same = {id(rf) for rf, path, sha in zip(candidates, paths, local) if remote.get(path) == sha}
    for rf, sha in zip(candidates, local):
        if id(rf) in same:
            _record(local_dir, rf, sha, state, result, transferred=False)
    return [rf for rf in todo if id(rf) not in same]


def _disk_error(exc: OSError, dest: Path) -> OutputError | None:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EROFS, errno.EPERM, errno.ENOTDIR,
                     errno.EEXIST, errno.EISDIR):
        return OutputError(f"cannot write the fetched file ({os.strerror(exc.errno)}); the files fetched so far "
                           f"are kept. Free space or fix permissions, then fetch again: only what is missing is "
                           f"transferred.", file=dest)
    return None


# --------------------------------------------------------------------------- one by one (SFTP or local copy)

def _one_by_one(host: Host, todo: list[RemoteFile], local_dir: Path, state: dict, result: dict) -> None:
    for rf in todo:
        dest = _local(local_dir, rf)
        part = dest.with_name(dest.name + ".part")
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            host.get(f"{rf.root}/{rf.relpath}", part)
        except OSError as exc:
            _drop(part)
            err = _disk_error(exc, dest)
            if err:
                raise err from None
            raise TestbedError(f"transfer of {rf.relpath} broke off ({exc}); fetch again to resume",
                               host=host.name) from None
        except (EOFError, TestbedError) as exc:
            _drop(part)
            raise TestbedError(f"transfer of {rf.relpath} broke off ({exc}); fetch again to resume",
                               host=host.name) from None
        size = part.stat().st_size
        if size != rf.size:  # SSH protects the bytes in transit; a size change means the file changed meanwhile
            _drop(part)
            raise OutputError(f"the file changed on the host while it was fetched ({rf.size} bytes listed, "
                              f"{size} arrived); fetch again once the run has finished writing it.", file=dest)
        os.replace(part, dest)
        _record(local_dir, rf, sha256_file(dest), state, result)


def _drop(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


# --------------------------------------------------------------------------- rsync over OpenSSH

def _rsync_usable(host: Host) -> bool:
    if not isinstance(host, SshHost) or not shutil.which("rsync") or not shutil.which("ssh"):
        return False
    if getattr(host, "_rsync_remote", None) is None:
        host._rsync_remote = host.run("command -v rsync >/dev/null && echo yes || echo no", retries=1).stdout.strip() == "yes"
    return host._rsync_remote


def _ssh_command(host: SshHost) -> tuple[str, str]:
    """The ``-e`` command for rsync and the ``[user@]host`` to name, from the same settings Fabric uses."""
    user, target, port = host.spec.target()
    argv = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={int(host.spec.connect_timeout_s or 10)}",
            "-o", "ServerAliveInterval=15"]
    if host._ssh_config:
        argv += ["-F", str(host._ssh_config)]
    if host.spec.host_key_policy == "accept-new":
        argv += ["-o", "StrictHostKeyChecking=accept-new"]
    if port:
        argv += ["-p", str(port)]
    return " ".join(shlex.quote(a) for a in argv), (f"{user}@{target}" if user else target)


def _via_rsync(host: SshHost, todo: list[RemoteFile], local_dir: Path, state: dict, result: dict) -> None:
    ssh, target = _ssh_command(host)
    groups: dict[tuple[str, str], list[RemoteFile]] = {}
    for rf in todo:
        groups.setdefault((rf.output, rf.root), []).append(rf)
    with ThreadPoolExecutor(max_workers=2) as hasher:
        for (output, root), group in groups.items():
            dest = local_dir / "outputs" / output
            try:
                dest.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise (_disk_error(exc, dest) or exc) from None
            by_rel = {rf.relpath: rf for rf in group}
            cmd = ["rsync", "--archive", "--no-owner", "--no-group", "--whole-file", "--ignore-times",
                   "--partial-dir=.rsync-partial",
                   "--from0", "--files-from=-", "--out-format=%n", "-e", ssh,
                   f"{target}:{shlex.quote(root.rstrip('/') + '/')}", str(dest) + "/"]
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
            proc.stdin.write("\0".join(by_rel) + "\0")
            proc.stdin.close()
            # rsync names each file once it has it; the rename into place may lag, so hash after it exits
            arrived = [by_rel[rel] for rel in (line.rstrip("\n") for line in proc.stdout) if rel in by_rel]
            err = proc.stderr.read()
            rc = proc.wait()
            pending = [(rf, hasher.submit(sha256_file, dest / rf.relpath)) for rf in arrived
                       if (dest / rf.relpath).is_file()]
            for rf, fut in pending:
                _record(local_dir, rf, fut.result(), state, result)
            if rc != 0:
                disk = [line for line in err.splitlines()
                        if "No space left" in line or "Permission denied (13)" in line
                        or "Read-only file system" in line or "Disk quota exceeded" in line]
                if disk:
                    raise OutputError(f"cannot write the fetched files ({disk[0].strip()}); the files "
                                      f"fetched so far are kept. Free space or fix permissions, then fetch again.",
                                      file=dest)
                raise TestbedError(f"rsync stopped with exit code {rc} after {len(pending)} of {len(group)} file(s) "
                                   f"({(err.strip().splitlines() or ['no message'])[-1]}); fetch again to resume",
                                   host=host.name)
            missing = [r for r in by_rel if Path("outputs", output, r).as_posix() not in result]
            if missing:
                raise TestbedError(f"rsync did not bring {len(missing)} file(s), e.g. {missing[0]}; fetch again",
                                   host=host.name)
