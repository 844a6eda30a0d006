"""The handful of calls a claim notebook makes, each one step of the story."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import pandas as pd

from . import checks, loaders, sources
from .config import Claim, Project, load_project
from .plots import published_frame

_PROJECTS: dict[tuple, Project] = {}


def project(root: str | Path | None = None) -> Project:
    """The project's configuration, loaded once per process (and per ``REPROBOOK_*`` environment)."""
    key = (str(root), *(os.environ.get(k) for k in sorted(os.environ) if k.startswith("REPROBOOK_")), os.getcwd())
    if key not in _PROJECTS:
        _PROJECTS[key] = load_project(Path(root) if root else None)
    return _PROJECTS[key]


def claim(key: str) -> Claim:
    """A claim by ``paper/claim``, e.g. ``aardvark/validator-throughput``."""
    return project().claim(key)


def obtain(claim: Claim, source: str = "auto", *, host: str = "local", params: Mapping | None = None,
           new: bool = False, allow_small_host: bool = False, progress: bool = True) -> sources.Outputs:
    """The claim's outputs from ``source``: ``auto``, ``reference``, ``live`` or a run id.

    See `reprobook.sources` for what each means. ``live`` runs the experiment
    on ``host`` (detached; re-running attaches to the same run).
    """
    return sources.obtain(project(), claim, source, host=host, params=params, new=new,
                          allow_insufficient=allow_small_host, progress=progress)


def load(claim: Claim, outputs: sources.Outputs) -> pd.DataFrame:
    """The measured table: the claim's loader applied to ``outputs`` (empty when nothing was obtained)."""
    return loaders.load(claim, outputs)


def check(claim: Claim, measured: pd.DataFrame, outputs: sources.Outputs) -> checks.ClaimVerdict:
    """The claim's verdict on ``measured``, tagged with where the numbers came from."""
    label = outputs.label if outputs.available else f"not run: {outputs.detail}"
    return checks.check_claim(claim, measured, source=label)


def published(claim: Claim, *, y: str) -> pd.DataFrame:
    """The claim's published numbers as a table (value in column ``y``) for plotting."""
    return published_frame(claim.published, y=y)


@dataclass(frozen=True)
class Evaluation:
    claim: Claim
    outputs: sources.Outputs
    measured: pd.DataFrame
    verdict: checks.ClaimVerdict


def evaluate(key: str | Claim, source: str = "auto") -> Evaluation:
    """Obtain, load and check in one call (what the summary page does for every claim)."""
    c = claim(key) if isinstance(key, str) else key
    outputs = obtain(c, source, progress=False)
    measured = load(c, outputs)
    return Evaluation(c, outputs, measured, check(c, measured, outputs))


def describe(claim: Claim):
    """The claim, its references, machine needs and published numbers, as Markdown for the page."""
    from IPython.display import Markdown
    r = claim.requires
    needs = ", ".join(x for x in (
        f"{r.cores} cores" if r.cores else "", f"{r.memory_gib:g} GiB memory" if r.memory_gib else "",
        f"{r.numa_nodes} NUMA nodes" if r.numa_nodes else "", " or ".join(r.os) if r.os else "",
        "Docker" if r.docker else "") if x)
    lines = [f"**Claim.** {claim.statement}", "",
             f"**In the paper:** {', '.join(claim.refs)}. **Machine:** {needs or 'any'}"
             + (f" ({r.testbed})" if r.testbed else "") + ". "
             + (f"**Expected time of a live run:** about {_duration(claim.expected_minutes)}." if claim.expected_minutes else ""),
             ""]
    if claim.published:
        lines += ["| published number | value | unit | source | how exact |", "|---|---|---|---|---|"]
        precision = {"exact": "exact", "approximate": "approximate (stated as “about”)",
                     "read-off-figure": "read off a figure"}
        for n in claim.published:
            lines.append(f"| {n.what or n.id} | {n.value:g} | {n.unit} | {n.source} | {precision[n.precision]} |")
    if claim.published_note:
        lines += ["", f"*{claim.published_note}*"]
    return Markdown("\n".join(lines))


def _duration(minutes: float) -> str:
    return f"{minutes / 60:.1f} hours" if minutes >= 90 else f"{minutes:.0f} minutes"


def glue_verdict(verdict: checks.ClaimVerdict) -> None:
    """Record the verdict for the book (MyST-NB glue) and, under ``reprobook run``, for the run directory."""
    out = os.environ.get("REPROBOOK_VERDICT_FILE")
    if out:
        Path(out).write_text(json.dumps(verdict.as_dict(), indent=2) + "\n")
    try:
        from myst_nb import glue
    except ImportError:  # pragma: no cover - myst-nb is a dependency
        return
    glue("verdict", str(verdict.verdict), display=False)
    glue("margin", "n/a" if verdict.margin is None else f"{verdict.margin * 100:+.1f}%", display=False)
