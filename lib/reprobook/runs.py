"""The run store: one directory per run, with its outputs and a manifest.

Layout: ``runs/<paper>/<claim>/<run-id>/`` holding ``manifest.json``,
``outputs/<name>/...`` (the fetched files), ``notebook.ipynb`` (when run
through papermill) and ``verdict.json``. Directories are created owner-only.

The manifest records the claim, parameters, source, hosts and their facts, the
artifact commits actually checked out, the commands, start and end, the exit
status, the library version and the sha256 of every fetched file.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from .config import Claim
from .errors import ConfigError, OutputError

MANIFEST = "manifest.json"


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
        """Write the manifest atomically."""
        tmp = self.path / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(self.manifest, indent=2, sort_keys=True, default=str) + "\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path / MANIFEST)

    def update(self, **fields: Any) -> None:
        self.manifest.update(fields)
        self.save()

    def files(self, output: str | None = None) -> list[Path]:
        """Local paths of the fetched files (of one output, or all)."""
        return [self.path / f["path"] for f in self.manifest.get("files", [])
                if output is None or f["output"] == output]

    def verify(self) -> None:
        """Check every fetched file against the manifest's sha256.

        Raises
        ------
        OutputError
            A file is missing or its content changed.
        """
        from .transfer import sha256_file
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

    def create(self, claim: Claim, run_id: str, **fields: Any) -> Run:
        """A new run directory (owner-only) with an initial manifest; an existing one is reopened."""
        from . import __version__
        path = self.root / claim.paper / claim.id / run_id
        if (path / MANIFEST).exists():
            run = Run(path, json.loads((path / MANIFEST).read_text()))
            run.update(**fields)
            return run
        for d in (self.root, self.root / claim.paper, self.root / claim.paper / claim.id):
            d.mkdir(mode=0o700, exist_ok=True)
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        manifest = {"run_id": run_id, "paper": claim.paper, "claim": claim.id, "created": utcnow(),
                    "reprobook_version": __version__, "status": "created", "files": []}
        manifest.update(fields)
        run = Run(path, manifest)
        run.save()
        return run

    def runs(self, claim: Claim | None = None) -> list[Run]:
        """Every run (of ``claim``), oldest first."""
        pattern = f"{claim.paper}/{claim.id}/*/{MANIFEST}" if claim else f"*/*/*/{MANIFEST}"
        out = []
        for m in self.root.glob(pattern):
            try:
                out.append(Run(m.parent, json.loads(m.read_text())))
            except (OSError, json.JSONDecodeError):
                continue
        return sorted(out, key=lambda r: (r.manifest.get("created", ""), r.id))

    def unreadable(self, claim: Claim | None = None) -> list[Path]:
        """Manifests `runs` passes over because they cannot be read (truncated, not JSON)."""
        pattern = f"{claim.paper}/{claim.id}/*/{MANIFEST}" if claim else f"*/*/*/{MANIFEST}"
        bad = []
        for m in sorted(self.root.glob(pattern)):
            try:
                json.loads(m.read_text())
            except (OSError, json.JSONDecodeError):
                bad.append(m)
        return bad

    def latest(self, claim: Claim, *, sources: Iterable[str] = ("live", "import"), status: Iterable[str] = ("succeeded",),
               params: dict | None = None) -> Run | None:
        """The most recent run of ``claim`` from one of ``sources`` with that status, or ``None``.

        With ``params`` (resolved: every parameter with its value), only a run
        with the same parameters counts; a run recorded before parameters were
        resolved is compared with the claim's defaults filled in.
        """
        status, sources = set(status), set(sources)
        for run in reversed(self.runs(claim)):
            if run.manifest.get("source") not in sources or run.status not in status:
                continue
            if params is not None:
                try:
                    theirs = claim.resolve_params(run.manifest.get("parameters") or {})
                except ConfigError:
                    continue  # recorded with parameters the claim no longer has
                if theirs != params:
                    continue
            return run
        return None

    def import_files(self, claim: Claim, files: dict[str, list[Path]], *, machine: str, who: str, note: str = "",
                     params: dict | None = None) -> Run:
        """A run made of files produced by hand: copied under ``outputs/<name>/``, checksummed, status succeeded."""
        import shutil
        from .transfer import sha256_file
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        run = self.create(claim, f"{claim.paper}-{claim.id}-import-{stamp}", source="import", status="importing",
                          parameters=dict(params or {}), imported={"by": who, "at": utcnow(), "machine": machine,
                                                                   "note": note})
        records = []
        for output, paths in files.items():
            dest = run.path / "outputs" / output
            dest.mkdir(parents=True, exist_ok=True)
            for src in paths:
                target = dest / Path(src).name
                if target.exists():
                    raise ConfigError(f"two files named {Path(src).name!r} for output {output!r}")
                shutil.copyfile(src, target)
                records.append({"output": output, "path": str(target.relative_to(run.path)),
                                "size": target.stat().st_size, "sha256": sha256_file(target),
                                "original": str(Path(src).resolve())})
        run.update(files=records, status="succeeded", ended=utcnow())
        return run

    def load(self, run_id: str) -> Run:
        """A run by id, wherever it is in the store."""
        hits = list(self.root.glob(f"*/*/{run_id}/{MANIFEST}"))
        if not hits:
            raise ConfigError(f"no run {run_id!r} in the run store {self.root}")
        try:
            manifest = json.loads(hits[0].read_text())
        except json.JSONDecodeError as exc:
            raise OutputError(f"the run's manifest is not valid JSON ({exc.msg} at line {exc.lineno}, column "
                              f"{exc.colno}; truncated?). The fetched files beside it are untouched.",
                              file=hits[0], line=exc.lineno) from None
        if not isinstance(manifest, dict) or "run_id" not in manifest:
            raise OutputError("the run's manifest has no run_id: not a reprobook manifest", file=hits[0],
                              field="run_id")
        return Run(hits[0].parent, manifest)
