"""The verdicts the claim pages computed during a book build, recorded for the summary page.

While ``reprobook book`` executes the book, each claim page's `reprobook.api.glue_verdict`
writes a small JSON record of its verdict to ``_build/verdicts/<paper>/<claim>.json``, stamped
with the fingerprint of the data the page was computed from (`reprobook.book.site.fingerprints`).
The build writes the fingerprints it expects beside them (``expected.json``) before any page
executes, and runs the summary page after every claim page. The summary then reads the records
instead of obtaining, loading and checking every claim a second time; a record counts only when
its stamp is the one the build expects, so a verdict computed from other data is never shown.

Outside a build (JupyterLab, papermill, a plain ``jupyter-book build``) nothing is recorded and
the summary computes every verdict itself, as before.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Mapping

ENV_DIR = "REPROBOOK_VERDICTS"
"""Where the records go; set by the book build for every kernel it starts."""
ENV_FINGERPRINT = "REPROBOOK_PAGE_FINGERPRINT"
"""The fingerprint of the data of the page a kernel executes; set per kernel by the book build."""
EXPECTED = "expected.json"
FIELDS = ("claim", "verdict", "margin", "reason", "source", "source_detail")
"""What a record holds besides its stamp: what the summary shows for the claim."""


def record_path(directory: str | Path, key: str) -> Path:
    """The record of claim ``key`` (``paper/claim``)."""
    paper, claim = key.split("/")
    return Path(directory) / paper / f"{claim}.json"


def record(verdict, outputs=None, *, fingerprint: str | None = None) -> dict:
    """The record of a `~reprobook.core.checks.ClaimVerdict`, with the short source tag of ``outputs``.

    Without ``outputs`` the source tag is unknown (``None``), and the summary does not use the record.
    """
    available = outputs is not None and outputs.available
    return {"claim": verdict.claim, "verdict": str(verdict.verdict), "wording": verdict.says, "margin": verdict.margin,
            "reason": verdict.reason, "warnings": list(verdict.warnings),
            "source": None if outputs is None else outputs.source if available else "none",
            "source_detail": None if outputs is None else outputs.label if available else outputs.detail,
            "fingerprint": fingerprint}


def write(directory: str | Path, rec: Mapping) -> Path:
    """Write a record atomically (a summary reading at the same moment sees the old one or the new one)."""
    path = record_path(directory, rec["claim"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(dict(rec), indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)
    return path


def expect(directory: str | Path, fingerprints: Mapping[str, str]) -> None:
    """Say which fingerprint each claim's record must carry in this build (claim key -> fingerprint)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / EXPECTED).write_text(json.dumps(dict(fingerprints), indent=1, sort_keys=True) + "\n")


def discard(directory: str | Path, keys: Iterable[str]) -> None:
    """Remove the records of ``keys`` (their pages are about to execute again)."""
    for key in keys:
        record_path(directory, key).unlink(missing_ok=True)


def read(directory: str | Path) -> tuple[dict[str, dict], dict[str, str]]:
    """The records the summary may use, and for every other record found, why not.

    Returns
    -------
    (dict, dict)
        Claim key -> record (its stamp is the expected one and it holds every field);
        claim key -> the reason a record found was set aside.
    """
    directory = Path(directory)
    try:
        expected = json.loads((directory / EXPECTED).read_text())
    except (OSError, ValueError):
        expected = {}
    good, rejected = {}, {}
    for path in sorted(directory.glob("*/*.json")):
        key = f"{path.parent.name}/{path.stem}"
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            rejected[key] = f"unreadable record ({exc})"
            continue
        if not isinstance(rec, dict) or any(rec.get(f) is None for f in FIELDS if f != "margin"):
            rejected[key] = "an incomplete record"
        elif key not in expected or rec.get("fingerprint") != expected[key]:
            rejected[key] = "a record computed from other data"
        else:
            good[key] = rec
    return good, rejected
