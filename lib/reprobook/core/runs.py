"""The run store: one directory per run, with its outputs and a manifest.

Layout: ``runs/<paper>/<claim>/<run-id>/`` holding ``manifest.json``,
``outputs/<name>/...`` (the fetched files), ``notebook.ipynb`` (when run
through papermill) and ``verdict.json``. Directories are created owner-only.

The manifest records the claim, parameters, source, hosts and their facts, the
artifact commits actually checked out, the commands, start and end, the exit
status, the library version and the sha256 of every fetched file.

The store survives its own process being killed at any instant, and several
processes using it at once:

- every file is written whole or not at all (`write_atomic`: a temporary
  file, fsync, rename, fsync of the directory), so a manifest always reads
  back as the old one or the new one, never half of each;
- `Run.update` re-reads the manifest under a short lock on the run's
  directory and writes its fields over it, so two processes updating one run
  lose neither's fields;
- a status that only makes sense while a process works on the run
  (`IN_PROGRESS`: launching, fetching, evaluating, ...) carries that
  process's identity (``owner``), so a run whose process died is told apart
  from one still being worked on (`Run.stale`) and can be repaired
  (`Run.repair_local`, and `reprobook.remote.live.repair` for what the host knows);
- one process at a time works on a run: `RunStore.lock` (see `reprobook.core.locks`).
"""

from __future__ import annotations

import datetime as dt
import fcntl
import glob
import hashlib
import json
import os
import shutil
import socket
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from reprobook.core.config import Claim
from reprobook.core.plan import make_plan
from reprobook.errors import ConfigError, OutputError
from reprobook.core.locks import Lock

MANIFEST = "manifest.json"
IN_PROGRESS = frozenset({"created", "launching", "fetching", "evaluating", "importing"})
"""Statuses that are true only while a process works on the run; left behind by a killed process, they are stale."""
ON_HOST = frozenset({"running", "launch-unknown", "ended"})
"""Statuses that the host can settle: the job's state there decides (`reprobook.remote.live.repair`)."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_atomic(path: Path, data: bytes | str, *, durable: bool = True) -> None:
    """Write ``path`` whole or not at all, owner-only: a temporary file beside it, renamed over it.

    With ``durable``, the data and the rename are flushed to disk (fsync of
    the file and of its directory) before returning, so a power cut leaves
    the old file or the new one. The temporary file is ``.<name>.<random>.tmp``;
    one left by a killed process is removed by `Run.repair_local`.
    """
    path = Path(path)
    if isinstance(data, str):
        data = data.encode()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if durable:
        _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def _dir_lock(path: Path) -> Iterator[None]:
    """A short exclusive lock on a directory (flock on the directory itself: no extra file)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _start_ticks(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot), or ``None`` if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        return int(stat[stat.rindex(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def owner_stamp() -> dict:
    """This process, as a run's ``owner`` records it (to tell later whether it still lives)."""
    return {"pid": os.getpid(), "start": _start_ticks(os.getpid()), "boot": _boot_id(),
            "host": socket.gethostname(), "command": " ".join(sys.argv)[:300]}


def owner_alive(owner: dict | None) -> bool:
    """Whether the process an ``owner`` stamp names still runs (one on another machine is assumed to)."""
    if not isinstance(owner, dict) or not isinstance(owner.get("pid"), int):
        return False
    if owner.get("host") != socket.gethostname():
        return True  # a run store shared between machines: only the lock can tell
    if owner.get("boot") and owner.get("boot") != _boot_id():
        return False
    return _start_ticks(owner["pid"]) == owner.get("start")


def utcnow() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def run_id_for(claim: Claim, host: str, params: dict, nonce: str | None = None) -> str:
    """A run id that is the same for the same claim, host and parameters (so a relaunch attaches).

    A ``nonce`` (e.g. a timestamp) makes a fresh run.
    """
    blob = json.dumps({"claim": claim.key, "host": host, "params": params, "nonce": nonce}, sort_keys=True, default=str)
    digest = hashlib.sha256(blob.encode()).hexdigest()[:10]
    return f"{claim.paper}-{claim.id}-{digest}"


@dataclass
class Run:
    """A recorded run: its directory and its manifest (a plain dict, saved with `save`)."""

    path: Path
    manifest: dict

    @property
    def id(self) -> str:
        return self.manifest["run_id"]

    @property
    def status(self) -> str:
        return self.manifest.get("status", "unknown")

    def save(self) -> None:
        """Write the manifest atomically and durably (see `write_atomic`)."""
        with _dir_lock(self.path):
            self._write()

    def _write(self) -> None:
        if self.manifest.get("status") in IN_PROGRESS:
            if not owner_alive(self.manifest.get("owner")):  # a living owner stays the owner
                self.manifest["owner"] = owner_stamp()
        else:
            self.manifest.pop("owner", None)
        from reprobook.core.secrets import mask_credentials
        # a manifest is shared with evaluators: a token in a URL (a git_url_rewrites mirror) is masked
        text = json.dumps(self.manifest, indent=2, sort_keys=True, default=str)
        write_atomic(self.path / MANIFEST, mask_credentials(text) + "\n")

    def update(self, **fields: Any) -> None:
        """Set ``fields`` in the manifest on disk (as another process may have left it) and save it."""
        with _dir_lock(self.path):
            try:
                disk = json.loads((self.path / MANIFEST).read_text())
            except (OSError, ValueError):
                disk = None
            if isinstance(disk, dict) and disk.get("run_id") == self.manifest.get("run_id"):
                self.manifest = disk
            self.manifest.update(fields)
            self._write()

    def reload(self) -> "Run":
        """Read the manifest again from disk (another process may have changed it)."""
        self.manifest = _read_manifest(self.path / MANIFEST)
        return self

    @property
    def lock(self) -> Lock:
        """The lock a process holds while it works on this run (see `RunStore.lock`)."""
        return Lock(self.path.parents[2] / ".locks" / f"{self.id}.lock", f"run {self.id}")

    @property
    def stale(self) -> bool:
        """The status says a process is working on the run, but that process is gone (killed, crashed)."""
        return (self.status in IN_PROGRESS and not owner_alive(self.manifest.get("owner"))
                and not self.lock.held_elsewhere())

    def repair_local(self) -> list[str]:
        """Put right what a killed process left, as far as the local disk tells; return what was found.

        Unfinished temporary files are removed (never a fetched file). An
        evaluation or import cut off is recorded as ``interrupted``. A stale
        live run needs its host to be asked: see `reprobook.remote.live.repair`.
        Runs that a living process works on are left alone.
        """
        owner = self.manifest.get("owner")
        if self.lock.held_elsewhere() or (self.status in IN_PROGRESS and owner_alive(owner)
                                          and owner.get("pid") != os.getpid()):
            return []
        found = []
        # the manifest's writers hold the directory's lock, a fetch holds its own: no writer's file goes
        dirs = [self.path]
        if (self.path / "outputs").is_dir() and not Lock(self.path / "outputs" / ".fetch.lock", "").held_elsewhere():
            dirs.append(self.path / "outputs")
        with _dir_lock(self.path):
            temps = [p for d in dirs for p in d.glob(".*.tmp") if p.is_file()]
            for p in temps:
                try:
                    p.unlink()
                except OSError:
                    continue
        if temps:
            found.append(f"removed {len(temps)} unfinished temporary file(s) left by a killed process")
        if self.status in IN_PROGRESS and not owner_alive(owner) and self.manifest.get("source") != "live":
            owner = owner or {}
            what = {"evaluating": "the evaluation of its notebook", "importing": "the import of its files"}.get(
                self.status, "its creation")
            found.append(f"was recorded {self.status!r}, but the process doing it (pid {owner.get('pid', '?')}) is "
                         f"gone: {what} was cut off; now recorded 'interrupted'")
            self.update(status="interrupted", interrupted={"was": self.status, "at": utcnow(),
                                                           "pid": owner.get("pid")})
        return found

    def files(self, output: str | None = None) -> list[Path]:
        """Local paths of the output files (of one output, or all): an archive that was unpacked (`unpack_fetched`)
        is represented by the files it held, never by itself."""
        return [self.path / f["path"] for f in self.manifest.get("files", [])
                if (output is None or f["output"] == output) and not f.get("unpacked")]

    def verify(self) -> None:
        """Check every fetched file against the manifest's sha256.

        Raises
        ------
        OutputError
            A file is missing or its content changed.
        """
        for f in self.manifest.get("files", []):
            p = self.path / f["path"]
            if not p.is_file():
                raise OutputError("listed in the manifest but missing", file=p)
            if sha256_file(p) != f["sha256"]:
                raise OutputError("content differs from the sha256 in the manifest", file=p)


class RunStore:
    """All runs under one root directory."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def lock(self, run_id: str) -> Lock:
        """The lock on run ``run_id``: ``<root>/.locks/<run-id>.lock`` (the run need not exist yet)."""
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        return Lock(self.root / ".locks" / f"{run_id}.lock", f"run {run_id}")

    def create(self, claim: Claim, run_id: str, **fields: Any) -> Run:
        """A new run directory (owner-only) with an initial manifest; an existing one is reopened."""
        from reprobook import __version__
        path = self.root / claim.paper / claim.id / run_id
        if (path / MANIFEST).exists():
            run = Run(path, _read_manifest(path / MANIFEST))
            run.update(**fields)
            return run
        for d in (self.root, self.root / claim.paper, self.root / claim.paper / claim.id):
            d.mkdir(mode=0o700, exist_ok=True)
        manifest = {"run_id": run_id, "paper": claim.paper, "claim": claim.id, "created": utcnow(),
                    "reprobook_version": __version__, "status": "created", "files": []}
        manifest.update(fields)
        # the run directory appears whole, manifest included: made aside, then renamed into place
        staging = self.root / ".staging"
        staging.mkdir(mode=0o700, exist_ok=True)
        _clean_staging(staging)
        aside = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=staging))
        run = Run(aside, manifest)
        run.save()
        try:
            os.rename(aside, path)  # also over an empty directory an older reprobook may have left
        except OSError:
            shutil.rmtree(aside, ignore_errors=True)
            if (path / MANIFEST).exists():  # another process made it meanwhile
                run = Run(path, _read_manifest(path / MANIFEST))
                run.update(**fields)
                return run
            path.mkdir(mode=0o700, exist_ok=True)
            run = Run(path, manifest)
            run.save()
            return run
        _fsync_dir(path.parent)
        run.path = path
        return run

    def runs(self, claim: Claim | None = None) -> list[Run]:
        """Every run (of ``claim``), oldest first."""
        pattern = f"{claim.paper}/{claim.id}/*/{MANIFEST}" if claim else f"*/*/*/{MANIFEST}"
        out = []
        for m in self.root.glob(pattern):
            manifest = _manifest_or_none(m)
            if manifest is not None:
                out.append(Run(m.parent, manifest))
        return sorted(out, key=lambda r: (str(r.manifest.get("created", "")), r.id))

    def unreadable(self, claim: Claim | None = None) -> list[Path]:
        """Manifests `runs` passes over because they cannot be read (truncated, not JSON, not a reprobook manifest:
        no ``run_id``)."""
        pattern = f"{claim.paper}/{claim.id}/*/{MANIFEST}" if claim else f"*/*/*/{MANIFEST}"
        return [m for m in sorted(self.root.glob(pattern)) if _manifest_or_none(m) is None]

    def latest(self, claim: Claim, *, sources: Iterable[str] = ("live", "import"), status: Iterable[str] = ("succeeded",),
               params: dict | None = None) -> Run | None:
        """The most recent run of ``claim`` from one of ``sources`` with that status, or ``None``.

        With ``params`` (resolved: every parameter with its value), only a run
        with the same parameters counts; a run recorded before parameters were
        resolved is compared with the claim's defaults filled in.
        """
        return next(self.candidates(claim, sources=sources, status=status, params=params), None)

    def candidates(self, claim: Claim, *, sources: Iterable[str] = ("live", "import"),
                   status: Iterable[str] = ("succeeded",), params: dict | None = None) -> Iterator[Run]:
        """The runs `latest` chooses from, newest first (``auto`` passes over one its loader cannot read)."""
        status, sources = set(status), set(sources)
        for run in reversed(self.runs(claim)):
            if run.manifest.get("source") not in sources or run.status not in status:
                continue
            if params is not None:
                try:
                    theirs = make_plan(claim, run.manifest.get("parameters") or {}).params
                except ConfigError:
                    continue  # recorded with parameters the claim no longer has
                if theirs != params:
                    continue
            yield run

    def import_files(self, claim: Claim, files: dict[str, list[Path]], *, machine: str, who: str, note: str = "",
                     params: dict | None = None, check=None, limits=None, relative: Mapping[str, str] | None = None,
                     **fields: Any) -> Run:
        """A run made of files produced by hand: copied under ``outputs/<name>/``, checksummed, status succeeded.

        The run is made aside (in the store's ``.staging/``) and appears whole, or not at all: a refusal, an
        error or a killed process leaves nothing in the store. Everything it stores counts against one
        `reprobook.core.archives.Budget` of ``limits`` (files, bytes). An archive of outputs is unpacked once,
        with the archives inside it, under ``outputs/<name>/<archive name>/``: each of its files is recorded
        like a copied one (``archive`` names the archive it came from), and later evaluations read them as they
        are. ``check(run_dir, files)``, given the stored files of each output, may refuse them by raising.
        ``fields`` go into the manifest as they are (e.g. ``host_facts``). ``relative`` maps a file (as given) to
        the path it keeps under its output (a directory's files keep their places in it); default: its name.
        """
        from reprobook import __version__
        from reprobook.core import archives
        budget = archives.Budget(limits or archives.Limits.from_env())
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        run_id = f"{claim.paper}-{claim.id}-import-{stamp}"
        manifest = {"run_id": run_id, "paper": claim.paper, "claim": claim.id, "created": utcnow(),
                    "reprobook_version": __version__, "source": "import", "status": "importing",
                    "parameters": dict(params or {}), "files": [],
                    "imported": {"by": who, "at": utcnow(), "machine": machine, "note": note}, **fields}
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        staging = self.root / ".staging"
        staging.mkdir(mode=0o700, exist_ok=True)
        _clean_staging(staging)
        aside = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=staging))
        try:
            records = []
            for output, paths in files.items():
                dest = aside / "outputs" / output
                dest.mkdir(parents=True, exist_ok=True)
                for src in paths:
                    target = dest / (relative or {}).get(str(src), Path(src).name)
                    if target.exists():
                        raise ConfigError(f"two files named {target.relative_to(dest).as_posix()!r} for output "
                                          f"{output!r}")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    if archives.is_archive(src):
                        unpacked = archives.unpack(src, target, budget=budget)
                        archive = {"name": Path(src).name, "size": Path(src).stat().st_size,
                                   "sha256": sha256_file(src)}
                        where, original = str(target.relative_to(aside)), str(Path(src).resolve())
                        records += [{"output": output, "path": f"{where}/{u.rel}", "size": u.size,
                                     "sha256": u.sha256, "original": original, "archive": archive}
                                    for u in unpacked]
                        continue
                    budget.take(str(src), Path(src).stat().st_size, file=src)
                    shutil.copyfile(src, target)
                    records.append({"output": output, "path": str(target.relative_to(aside)),
                                    "size": target.stat().st_size, "sha256": sha256_file(target),
                                    "original": str(Path(src).resolve())})
            if check is not None:
                check(aside, {o: [aside / r["path"] for r in records if r["output"] == o] for o in files})
            manifest.update(files=records, status="succeeded", ended=utcnow())
            Run(aside, manifest).save()
            path = self.root / claim.paper / claim.id / run_id
            for d in (self.root / claim.paper, path.parent):
                d.mkdir(mode=0o700, exist_ok=True)
            os.rename(aside, path)   # the run appears whole, its manifest 'succeeded'
        except BaseException:
            shutil.rmtree(aside, ignore_errors=True)   # refused or cut off: nothing stored
            raise
        _fsync_dir(path.parent)
        return Run(path, manifest)

    def load(self, run_id: str) -> Run:
        """A run by id, wherever it is in the store."""
        # an id is a name, never a pattern: "*" or "[a-z]*" must not pick some run, nor ".." leave the store
        literal = isinstance(run_id, str) and run_id not in (".", "..") and not set(run_id) & set("/\\*?[]\0")
        hits = [m for m in self.root.glob(f"*/*/{glob.escape(run_id)}/{MANIFEST}")
                if m.parent.name == run_id] if literal and run_id else []
        if not hits:
            raise ConfigError(f"no run {run_id!r} in the run store {self.root}")
        return Run(hits[0].parent, _read_manifest(hits[0]))

    def stale(self, claim: Claim | None = None) -> list[Run]:
        """Runs whose status says a process works on them, though none does any more (see `Run.stale`)."""
        return [r for r in self.runs(claim) if r.stale]


def unpack_fetched(run_dir: Path, records: list[dict], budget) -> list[dict]:
    """``records`` (a fetch's, each with ``path`` relative to ``run_dir``) with every archive among them unpacked.

    A fetched archive stays where it is (a fetch again finds it there and does not move it again) and
    is unpacked once beside it, into ``<archive>.unpacked/`` (made again when it is fetched again),
    within ``budget`` (`reprobook.core.archives`). Its record gets ``unpacked`` (that directory), and each
    file it held a record with ``archive`` (the archive's path): readers take those files and pass over
    the archive itself (`Run.files`).

    Raises
    ------
    reprobook.core.archives.ArchiveRefused
        Naming the archive, the member and the limit; nothing of that archive is left unpacked.
    """
    from reprobook.core import archives
    out = []
    for rec in records:
        if not archives.is_archive(rec["path"]):
            out.append(rec)
            continue
        src = run_dir / rec["path"]
        dest = src.with_name(src.name + archives.UNPACKED)
        if dest.exists():
            shutil.rmtree(dest)
        unpacked = archives.unpack(src, dest, budget=budget, shown=rec["path"])
        out.append({**rec, "unpacked": str(dest.relative_to(run_dir))})
        where = str(dest.relative_to(run_dir))
        out += [{"output": rec["output"], "path": f"{where}/{u.rel}", "size": u.size, "sha256": u.sha256,
                 "archive": rec["path"]} for u in unpacked]
    return out


def _clean_staging(staging: Path) -> None:
    """Remove run directories that a killed process was making (named by its pid) in ``staging``."""
    for d in staging.iterdir():
        pid = d.name.split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and _start_ticks(int(pid)) is None:
            shutil.rmtree(d, ignore_errors=True)


def _manifest_or_none(path: Path) -> dict | None:
    """The manifest at ``path`` if it is one `_read_manifest` accepts, else None."""
    try:
        return _read_manifest(path)
    except (OSError, OutputError):
        return None


def _read_manifest(path: Path) -> dict:
    try:
        manifest = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise OutputError(f"the run's manifest is not valid JSON ({exc.msg} at line {exc.lineno}, column "
                          f"{exc.colno}; truncated?). The fetched files beside it are untouched.",
                          file=path, line=exc.lineno) from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("run_id"), str) or not manifest["run_id"]:
        raise OutputError("the run's manifest has no run_id: not a reprobook manifest", file=path, field="run_id")
    return manifest
