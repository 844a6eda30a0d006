"""Measured against published, cell by cell: the table presentation of a claim."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reprobook.core.checks import STATISTICS, ClaimVerdict, matches, statistic_of, trial_rows, with_attrs
from reprobook.core.config import Claim


def _value_column(claim: Claim, measure: str) -> str | None:
    if measure:
        return measure
    for c in claim.checks:
        if c.options.get("target_published"):
            return c.value
    return claim.plots[0]["y"] if claim.plots else None


def comparison(claim: Claim, measured: pd.DataFrame | None, verdict: ClaimVerdict | None = None) -> pd.DataFrame:
    """One row per published number: labels, published (target and other sources), measured, ratio, verdict.

    The measured value of a cell is the statistic the checks judge (`reprobook.core.checks.statistic_of`: the
    mean unless a check or the loader says otherwise) of the measured rows whose labels match the number's,
    over the loader's trials where it keeps them (``attrs["statistic"]`` names it); ``ratio`` is
    measured / published. A cell's
    verdict is that of the check whose evidence names it (``holds`` /
    ``fails``), else empty.
    """
    judged: dict[str, str] = {}
    for r in (verdict.checks if verdict else ()):
        ev = r.evidence
        if not ev.empty and "published" in ev and "ok" in ev:
            for pid, ok in zip(ev["published"], ev["ok"]):
                judged[pid] = "holds" if ok else "fails"
    label_cols = list(dict.fromkeys(k for n in claim.published for k in n.labels))
    other_names = list(dict.fromkeys(pv.name or pv.source for n in claim.published for pv in n.others))
    rows = []
    trials = trial_rows(measured) if measured is not None and not measured.empty else measured
    has_trials = trials is not None and trials is not measured
    # the tables without their attrs (pandas deep-copies a frame's attrs into every column and selection taken
    # from it, and a loader's carry its trials' rows), and each label's rows worked out once for all the numbers
    frames = {"measured": None if measured is None else with_attrs(measured),
              "trials": with_attrs(trials) if has_trials else None}
    masks: dict[tuple, np.ndarray] = {}

    def rows_of(which: str, column: str, want) -> np.ndarray:
        key = (which, column, repr(want))
        if key not in masks:
            masks[key] = matches(frames[which][column], want).to_numpy(bool)
        return masks[key]

    stats = set()
    for n in claim.published:
        col = _value_column(claim, n.measure)
        got = None
        stat = statistic_of(claim, col, measured)
        which = ("trials" if has_trials and col in trials and set(n.labels) <= set(trials.columns) else "measured")
        source = frames[which]
        if source is not None and not source.empty and col in source and set(n.labels) <= set(source.columns):
            keep = np.ones(len(source), dtype=bool)
            for k, v in n.labels.items():
                keep &= rows_of(which, k, v)
            values = source[col].to_numpy()[keep]
            values = values[pd.notna(values)].astype(float)
            if len(values):
                got = float(STATISTICS[stat](values)) if which == "trials" else float(values.mean())
                stats.add(stat if which == "trials" else "mean")
        row = {k: n.labels.get(k, "") for k in label_cols}
        if n.measure:
            row["measure"] = n.measure
        row.update({"unit": n.unit, "published": n.value, "measured": got,
                    "ratio": (got / n.value) if got is not None and n.value else None,
                    "verdict": judged.get(n.id, "—")})
        for pv in n.others:
            row[f"published ({pv.name or pv.source})"] = pv.value
        row["source"] = n.source + (" (read off a figure)" if n.read_off_figure else "")
        rows.append(row)
    cols = [*label_cols, *(["measure"] if any(n.measure for n in claim.published) else []), "unit", "published",
            *[f"published ({o})" for o in other_names], "measured", "ratio", "verdict", "source"]
    out = pd.DataFrame(rows, columns=cols)
    out.attrs["statistic"] = next(iter(stats)) if len(stats) == 1 else "mean"
    return out
