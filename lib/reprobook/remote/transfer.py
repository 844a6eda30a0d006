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

Nothing the host sends is trusted. What it lists counts against the run's limits
(`reprobook.core.archives.Limits`: files, bytes, one file's size) before anything moves. The listing (`reprobook.remote.listing`) is parsed
as it streams in and every record is checked before anything is written: the
output must be one that was asked for, the path relative and free of ``..``,
empty and NUL components, and the local file it names must resolve inside the
run's directory. Sizes must match what arrives, inline bytes must belong to a
listed file, and symbolic links (or other non-regular files) are skipped, never
created locally nor followed; rsync runs with ``--no-links`` and is handed only
checked paths. Whatever is refused is named, with the host, in one
`OutputsRefused` raised after every proper file has been saved and recorded.

One process at a time fetches into a run directory (a lock in ``outputs/``,
held by rsync too while it runs).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from reprobook.core.archives import Budget, Limits
from reprobook.core.config import OutputSpec
from reprobook.errors import OutputError, OutputsRefused, TestbedError
from reprobook.remote.hosts import Host, SshHost
from reprobook.remote.listing import INLINE_MAX_BYTES, SHOWN_REFUSALS, Listing, RemoteFile, show_record, survey
from reprobook.remote.listing import TEXT_MAX_BYTES, list_outputs  # noqa: F401 - importable from here, where they used to live
from reprobook.core.locks import Lock
from reprobook.core.runs import sha256_file, write_atomic  # noqa: F401  (sha256_file: public here too)

STATE = ".fetch-state.json"
FETCH_LOCK = ".fetch.lock"
RSYNC_MIN_BYTES = 32 << 20
RSYNC_MIN_FILES = 64


@dataclass(frozen=True)
class FetchedFile:
    """One fetched file: its output, its path relative to the run directory, size, sha256, and whether it moved now."""

    output: str
    path: str
    size: int
    sha256: str
    transferred: bool


def _load_state(local_dir: Path) -> dict:
    try:
        state = json.loads((local_dir / "outputs" / STATE).read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _save_state(local_dir: Path, state: dict) -> None:
    try:
        write_atomic(local_dir / "outputs" / STATE, json.dumps(state, sort_keys=True))
    except OSError:
        pass  # the state only saves time; without it the next fetch compares checksums with the host (`_already_here`)


class _Refused(Exception):
    """One file that will not be written, and why (collected, then reported together)."""


class _Fetch:
    """One fetch into one run directory: where each file goes, what was recorded, what was refused."""

    def __init__(self, host: Host, local_dir: Path, listing: Listing):
        self.host, self.local_dir, self.listing = host, local_dir, listing
        self.state = _load_state(local_dir)
        self.result: dict[str, FetchedFile] = {}
        self.refused: list[tuple[str, str]] = []
        self._bases: dict[str, Path] = {}
        self._parents: dict[Path, bool] = {}

    def refuse(self, rf: RemoteFile, why: str) -> None:
        self.listing.refused_count += 1
        if len(self.refused) + len(self.listing.refused) < 10 * SHOWN_REFUSALS:
            self.refused.append((show_record(f"{rf.output}/{rf.relpath}"), why))

    def dest(self, rf: RemoteFile) -> Path:
        """Where ``rf`` goes; `_Refused` if that is not inside the output's directory of the run."""
        base = self._bases.get(rf.output)
        if base is None:
            base = self._bases[rf.output] = (self.local_dir / "outputs" / rf.output).resolve()
        dest = self.local_dir / "outputs" / rf.output / rf.relpath
        parent = dest.parent
        inside = self._parents.get(parent)
        if inside is None:
            real = parent.resolve()  # a link already on the local disk must not lead out either
            inside = self._parents[parent] = real == base or base in real.parents
        if not inside:
            raise _Refused("its local path leads outside the run's directory (through a link on the local disk, "
                           "which reprobook never made)")
        if dest.is_symlink():
            raise _Refused("its local path is a symbolic link (reprobook never writes through one)")
        return dest

    def record(self, rf: RemoteFile, sha: str, transferred: bool = True) -> None:
        rel = f"outputs/{rf.output}/{rf.relpath}"
        self.state[rel] = {"size": rf.size, "mtime": rf.mtime, "sha256": sha,
                           "local_mtime_ns": (self.local_dir / rel).stat().st_mtime_ns}
        self.result[rel] = FetchedFile(rf.output, rel, rf.size, sha, transferred=transferred)


def _admit(job: _Fetch) -> tuple[list[RemoteFile], list[str]]:
    """The listed files that may be written, in order (and their keys); the others are refused."""
    seen: set[tuple[str, str]] = set()
    dirs: set[tuple[str, str]] = set()
    files: list[RemoteFile] = []
    for rf in job.listing.files:
        key = (rf.output, rf.relpath)
        if key in seen:
            job.refuse(rf, "listed twice")
            continue
        seen.add(key)
        parts = rf.relpath.split("/")
        for i in range(1, len(parts)):
            dirs.add((rf.output, "/".join(parts[:i])))
        files.append(rf)
    admitted = []
    for rf in files:
        if (rf.output, rf.relpath) in dirs:
            job.refuse(rf, "listed as a file and as a directory")
            continue
        try:
            job.dest(rf)
        except _Refused as why:
            job.refuse(rf, str(why))
            continue
        admitted.append(rf)
    for (name, rel) in job.listing.inline:
        if (name, rel) not in seen:
            job.listing.refuse(f"{name}/{rel}", "inline bytes for a file the listing does not name")
    return admitted, [f"outputs/{rf.output}/{rf.relpath}" for rf in admitted]


def _outputs_dir(local_dir: Path) -> Path:
    d = local_dir / "outputs"
    try:
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
    except FileExistsError:
        exc = OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
        raise _disk_error(exc, d) from None
    except OSError as exc:
        raise (_disk_error(exc, d) or exc) from None
    return d


def fetch(host: Host, outputs: Mapping[str, OutputSpec], local_dir: Path, *, newer_than: str | None = None,
          method: str = "auto", listing: Listing | None = None, budget: Budget | None = None) -> list[FetchedFile]:
    """Bring the outputs into ``local_dir/outputs/<name>/...``, transferring only what is missing or changed.

    ``method`` is ``auto`` (rsync for bulk transfers when the host is reached
    over SSH and rsync is installed on both ends, else SFTP), ``rsync``, or
    ``sftp``. With ``auto``, files under 16 KiB arrive inside the listing
    itself. ``listing`` is a `survey` already made (of the same outputs). Every listed file counts against
    ``budget`` (the run's: `reprobook.core.archives.Budget`, by default one of the limits from the
    environment) before anything is transferred: a host that lists more files or bytes than a run may hold
    has nothing of its outputs fetched.

    Raises
    ------
    LimitExceeded
        The listing goes over one of the run's limits: it names the file and the limit, and nothing was
        transferred.
    OutputsRefused
        The host sent something that cannot be trusted (a path leaving the
        run directory, an output never asked for, a size that does not match
        what arrived, a link, a malformed record). Every proper file was
        saved and recorded first; they are in the exception's ``fetched``.
    OutputError
        The local disk refused a file (full, read-only). Files fetched before
        the error stay in place.
    TestbedError
        The connection broke off; fetching again resumes.
    """
    local_dir = Path(local_dir)
    outdir = _outputs_dir(local_dir)
    lock = Lock(outdir / FETCH_LOCK, f"the fetch into {local_dir}")
    with lock.acquire():
        if listing is None:
            listing = survey(host, outputs, newer_than=newer_than,
                             inline_max=INLINE_MAX_BYTES if method == "auto" else 0)
        if listing.rsync is not None and isinstance(host, SshHost):
            host._rsync_remote = listing.rsync
        job = _Fetch(host, local_dir, listing)
        files, order = _admit(job)
        budget = budget if budget is not None else Budget(Limits.from_env())
        for rf in files:   # what the host lists, counted before a byte moves: a sparse terabyte stays there
            budget.take(f"{rf.output}/{rf.relpath}", rf.size, what="output file",
                        file=f"{host.name}:{rf.root}/{rf.relpath}")
        todo: list[RemoteFile] = []
        for rf, rel in zip(files, order):
            st, dest = job.state.get(rel), local_dir / rel
            if isinstance(st, dict) and st.get("size") == rf.size and st.get("mtime") == rf.mtime and dest.is_file():
                ls = dest.stat()
                if ls.st_size == rf.size and ls.st_mtime_ns == st.get("local_mtime_ns"):
                    job.result[rel] = FetchedFile(rf.output, rel, rf.size, st["sha256"], transferred=False)
                    continue
            todo.append(rf)
        if todo:
            try:
                if listing.inline:
                    todo = _from_listing(job, todo)
                if todo:
                    todo = _already_here(job, todo)
                if todo:
                    if method == "auto":
                        # a few files ride the open SSH connection; bulk goes to rsync, whose own
                        # connection costs a handshake but which moves data at OpenSSH's speed
                        bulk = sum(rf.size for rf in todo) >= RSYNC_MIN_BYTES or len(todo) >= RSYNC_MIN_FILES
                        method = "rsync" if bulk and _rsync_usable(host) else "sftp"
                    if method == "rsync":
                        _via_rsync(job, todo, lock)
                    else:
                        _one_by_one(job, todo)
            finally:
                _save_state(local_dir, job.state)
        fetched = [job.result[r] for r in order if r in job.result]
        if listing.refused_count:
            raise _refusal(job, fetched)
        return fetched


def _refusal(job: _Fetch, fetched: list[FetchedFile]) -> OutputsRefused:
    records = job.listing.refused + job.refused
    total = job.listing.refused_count
    shown = "\n".join(f"  - {rec}: {why}" for rec, why in records[:SHOWN_REFUSALS])
    if total > SHOWN_REFUSALS:
        shown += f"\n  - ... and {total - SHOWN_REFUSALS} more"
    return OutputsRefused(
        f"sent {total} record(s) that reprobook refused; the {len(fetched)} file(s) it listed properly are saved "
        f"and recorded, and nothing was written outside the run directory.\n{shown}\n"
        f"A host that sends these is misconfigured or compromised (or, for a size that changed, was still "
        f"writing the file): check it before trusting its numbers, then fetch again.",
        file=job.local_dir / "outputs", host=job.host.name, records=records, fetched=fetched)


def _local(local_dir: Path, rf: RemoteFile) -> Path:
    """Where ``rf`` goes in the run directory (its path was checked when the listing was read)."""
    return local_dir / "outputs" / rf.output / rf.relpath


def _from_listing(job: _Fetch, todo: list[RemoteFile]) -> list[RemoteFile]:
    """Write the files whose bytes came inside the listing; return the rest."""
    rest = []
    for rf in todo:
        data = job.listing.inline.get((rf.output, rf.relpath))
        if data is None or len(data) != rf.size:  # not sent, or changed between listing and reading
            rest.append(rf)
            continue
        try:
            dest = job.dest(rf)
        except _Refused as why:
            job.refuse(rf, str(why))
            continue
        part = dest.with_name(dest.name + ".part")
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            part.write_bytes(data)
            os.replace(part, dest)
        except OSError as exc:
            _drop(part)
            if _name_error(exc):
                job.refuse(rf, f"cannot be a local file name ({os.strerror(exc.errno)})")
                continue
            raise (_disk_error(exc, dest) or exc) from None
        job.record(rf, hashlib.sha256(data).hexdigest())
    return rest


_SUMS = r"""
command -v sha256sum >/dev/null || exit 0
for f in "$@"; do [ -f "$f" ] && sha256sum -- "$f"; done
true
"""
_SUM_LINE = re.compile(r"([0-9a-f]{64})  (.*)")


def _already_here(job: _Fetch, todo: list[RemoteFile]) -> list[RemoteFile]:
    """Files a previous fetch brought but could not record (its state was lost, e.g. on a full disk).

    A local file of the listed size is kept, without transferring it, if its
    sha256 equals the host's (one round trip for all candidates). Returns what
    still has to be transferred. The host's answer is only believed for the
    paths asked about; the sha256 recorded is always the local file's own.
    """
    candidates = [rf for rf in todo if (p := _local(job.local_dir, rf)).is_file() and not p.is_symlink()
                  and p.stat().st_size == rf.size]
    if not candidates:
        return todo
    paths = [f"{rf.root}/{rf.relpath}" for rf in candidates]
    try:
        out = job.host.run_script(_SUMS, *paths, retries=1, step="comparing checksums").stdout
    except TestbedError:
        return todo
    asked = set(paths)
    remote = {}
    for line in out.splitlines():
        m = _SUM_LINE.fullmatch(line)
        if m and m.group(2) in asked:
            remote[m.group(2)] = m.group(1)
    with ThreadPoolExecutor(max_workers=2) as pool:
        local = list(pool.map(lambda rf: sha256_file(_local(job.local_dir, rf)), candidates))
    same = {id(rf) for rf, path, sha in zip(candidates, paths, local) if remote.get(path) == sha}
    for rf, sha in zip(candidates, local):
        if id(rf) in same:
            job.record(rf, sha, transferred=False)
    return [rf for rf in todo if id(rf) not in same]


def _disk_error(exc: OSError, dest: Path) -> OutputError | None:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EROFS, errno.EPERM, errno.ENOTDIR,
                     errno.EEXIST, errno.EISDIR):
        return OutputError(f"cannot write the fetched file ({os.strerror(exc.errno)}); the files fetched so far "
                           f"are kept. Free space or fix permissions, then fetch again: only what is missing is "
                           f"transferred.", file=dest)
    return None


def _name_error(exc: OSError) -> bool:
    """An error that comes from the file's name (sent by the host), not from the disk."""
    return exc.errno in (errno.ENAMETOOLONG, errno.EILSEQ, errno.EINVAL)


# --------------------------------------------------------------------------- one by one (SFTP or local copy)

def _one_by_one(job: _Fetch, todo: list[RemoteFile]) -> None:
    host = job.host
    for rf in todo:
        try:
            dest = job.dest(rf)
        except _Refused as why:
            job.refuse(rf, str(why))
            continue
        part = dest.with_name(dest.name + ".part")
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            host.get(f"{rf.root}/{rf.relpath}", part)
        except FileNotFoundError:  # the host listed a file it does not have (or no longer has)
            _drop(part)
            job.refuse(rf, "listed, but the host has no such file (any more)")
            continue
        except OSError as exc:
            _drop(part)
            err = _disk_error(exc, dest)
            if err:
                raise err from None
            if _name_error(exc):
                job.refuse(rf, f"cannot be a local file name ({os.strerror(exc.errno)})")
                continue
            raise TestbedError(f"transfer of {rf.relpath} broke off ({exc}); fetch again to resume",
                               host=host.name) from None
        except (EOFError, TestbedError) as exc:
            _drop(part)
            raise TestbedError(f"transfer of {rf.relpath} broke off ({exc}); fetch again to resume",
                               host=host.name) from None
        if part.is_symlink() or not part.is_file():
            _drop(part)
            job.refuse(rf, "did not arrive as a regular file")
            continue
        size = part.stat().st_size
        if size != rf.size:  # SSH protects the bytes in transit; a size change means the file changed meanwhile
            _drop(part)
            job.refuse(rf, f"{rf.size} bytes listed but {size} arrived: the file changed on the host while it was "
                           f"fetched, or the listing lied")
            continue
        os.replace(part, dest)
        job.record(rf, sha256_file(dest))


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


_RSYNC_ESCAPE = re.compile(rb"\\#([0-7]{3})")
_RSYNC_SKIPPED = re.compile(r'skipping non-regular file "(.*)"')


def _rsync_name(line: bytes) -> str:
    """A name as rsync prints it (``%n``: unprintable bytes as ``\\#ooo``), back to the name itself."""
    return _RSYNC_ESCAPE.sub(lambda m: bytes([int(m.group(1), 8)]), line.rstrip(b"\n")).decode(errors="replace")


def _via_rsync(job: _Fetch, todo: list[RemoteFile], lock: Lock) -> None:
    host, local_dir = job.host, job.local_dir
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
            by_rel = {rf.relpath: rf for rf in group}  # each path checked when the listing was read
            # no links made locally, no devices, no owners; arguments passed by the protocol, not a
            # remote shell; only the listed (checked) paths; the run directory's owner-only modes
            cmd = ["rsync", "--recursive", "--times", "--no-links", "--no-devices", "--no-specials", "--no-owner",
                   "--no-group", "--perms", "--chmod=D700,F600", "--protect-args", "--whole-file", "--ignore-times",
                   "--partial-dir=.rsync-partial", "--timeout=120",
                   "--from0", "--files-from=-", "--out-format=%n", "-e", ssh,
                   "--", f"{target}:{root.rstrip('/')}/", str(dest) + "/"]  # after "--": never an option
            # rsync holds the fetch lock too: killed, this process leaves no rsync writing beside the next fetch
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    pass_fds=(lock.fd,) if lock.fd is not None else ())
            proc.stdin.write(b"\0".join(rel.encode() for rel in by_rel) + b"\0")
            proc.stdin.close()
            # rsync names each file once it has it; the rename into place may lag, so hash after it exits
            arrived, skipped = [], []
            for line in proc.stdout:
                name = _rsync_name(line)
                if name in by_rel:
                    arrived.append(by_rel[name])
                elif (m := _RSYNC_SKIPPED.search(name)) and m.group(1) in by_rel:
                    skipped.append(by_rel[m.group(1)])
            err = proc.stderr.read().decode(errors="replace")[-20000:]
            rc = proc.wait()
            for rf in skipped:
                job.refuse(rf, "not a regular file on the host (a link?): skipped, never created locally")
            pending = []
            for rf in arrived:
                p = dest / rf.relpath
                if p.is_symlink() or not p.is_file():
                    job.refuse(rf, "did not arrive as a regular file")
                    continue
                size = p.stat().st_size
                if size != rf.size:
                    job.refuse(rf, f"{rf.size} bytes listed but {size} arrived: the file changed on the host while "
                                   f"it was fetched, or the listing lied")
                    _drop(p)  # not recorded, and not mistaken for a good copy by the next fetch
                    continue
                pending.append((rf, hasher.submit(sha256_file, p)))
            for rf, fut in pending:
                job.record(rf, fut.result())
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
            done = {id(rf) for rf in arrived} | {id(rf) for rf in skipped}
            missing = [rf.relpath for rf in group if id(rf) not in done]
            if missing:
                raise TestbedError(f"rsync did not bring {len(missing)} file(s), e.g. {missing[0]}; fetch again",
                                   host=host.name)
