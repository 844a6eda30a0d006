"""Measured against published, cell by cell: the table presentation of a claim."""

from __future__ import annotations

import pandas as pd

from reprobook.core.checks import ClaimVerdict, matches
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

    The measured value of a cell is the mean of the measured rows whose
    labels match the number's; ``ratio`` is measured / published. A cell's
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
    for n in claim.published:
        col = _value_column(claim, n.measure)
        got = None
        if measured is not None and not measured.empty and col in measured and set(n.labels) <= set(measured.columns):
            match = measured
            for k, v in n.labels.items():
                match = match[matches(match[k], v)]
            if not match.empty:
                got = float(match[col].mean())
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
    return pd.DataFrame(rows, columns=cols)
