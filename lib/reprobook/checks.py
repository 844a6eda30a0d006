"""Checks: does a claim hold on the measured data, and by what margin.

Each check kind takes the measured table (tidy, one value column) and returns
a `CheckResult`: a verdict (``holds``, ``fails``, ``inconclusive``), a
one-line reason that states the margin, the margin itself as a signed
fraction (positive: room to spare; negative: missed by that much) and the
evidence table the verdict was computed from.

Kinds: ``at_least``, ``at_most``, ``in_range``, ``close_to`` (relative
tolerance), ``within_factor``, ``rank_order`` and ``grows_with`` (a value
rising with a resource such as cores).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from .config import CheckSpec, Claim, PublishedNumber


class Verdict(str, Enum):
    HOLDS = "holds"
    FAILS = "fails"
    INCONCLUSIVE = "inconclusive"
    NOT_RUN = "not run"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check."""

    what: str
    kind: str
    verdict: Verdict
    reason: str
    margin: float | None
    evidence: pd.DataFrame = field(repr=False)

    def as_dict(self) -> dict:
        return {"what": self.what, "kind": self.kind, "verdict": str(self.verdict), "reason": self.reason,
                "margin": self.margin}


@dataclass(frozen=True)
class ClaimVerdict:
    """The outcome of all of a claim's checks, with where the numbers came from."""

    claim: str
    verdict: Verdict
    reason: str
    margin: float | None
    source: str
    checks: tuple[CheckResult, ...] = ()

    def as_dict(self) -> dict:
        return {"claim": self.claim, "verdict": str(self.verdict), "reason": self.reason, "margin": self.margin,
                "source": self.source, "checks": [c.as_dict() for c in self.checks]}

    def table(self) -> pd.DataFrame:
        return pd.DataFrame([c.as_dict() for c in self.checks], columns=["what", "kind", "verdict", "margin", "reason"])

    def __str__(self) -> str:
        return f"{self.claim}: {self.verdict} ({self.reason}) [source: {self.source}]"

    def _repr_html_(self) -> str:
        from html import escape
        colour = {"holds": "#1a7f37", "fails": "#cf222e", "inconclusive": "#9a6700", "not run": "#57606a"}[str(self.verdict)]
        rows = "".join(
            f"<tr><td>{escape(c.what)}</td><td style='color:{colour_of(c.verdict)}'><b>{c.verdict}</b></td>"
            f"<td>{escape(c.reason)}</td></tr>" for c in self.checks)
        return (f"<div class='reprobook-verdict'><p style='font-size:1.2em'>Verdict: "
                f"<b style='color:{colour}'>{self.verdict}</b> — {escape(self.reason)}</p>"
                f"<p><i>Source of the measured numbers: {escape(self.source)}</i></p>"
                f"<table><tr><th>check</th><th>verdict</th><th>reason and margin</th></tr>{rows}</table></div>")


def colour_of(v: Verdict) -> str:
    return {"holds": "#1a7f37", "fails": "#cf222e", "inconclusive": "#9a6700", "not run": "#57606a"}[str(v)]


# --------------------------------------------------------------------------- helpers

def _resolve(ref: Any, published: Mapping[str, PublishedNumber]) -> float:
    if isinstance(ref, Mapping):
        return published[ref["published"]].value
    return float(ref)


def _select(data: pd.DataFrame, select: Mapping[str, Any] | None) -> pd.DataFrame:
    out = data
    for col, val in (select or {}).items():
        if col not in out.columns:
            raise KeyError(col)
        out = out[out[col].astype(str) == str(val)]
    return out


def _label(row: pd.Series, cols: Iterable[str]) -> str:
    return ", ".join(f"{c}={row[c]}" for c in cols) or "all"


def _pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def _inconclusive(spec: CheckSpec, why: str) -> CheckResult:
    return CheckResult(spec.what, spec.kind, Verdict.INCONCLUSIVE, why, None, pd.DataFrame())


def _finish(spec: CheckResult | CheckSpec, ev: pd.DataFrame, margins: pd.Series, describe) -> CheckResult:
    """Verdict from per-row margins: holds iff every margin >= 0; the worst row is named."""
    if ev.empty or margins.isna().all():
        return _inconclusive(spec, "no measured rows to check")
    if margins.isna().any():
        return _inconclusive(spec, f"{int(margins.isna().sum())} row(s) have no value")
    ev = ev.assign(margin=margins.values, ok=(margins >= 0).values)
    worst = ev.loc[ev["margin"].idxmin()]
    margin = float(worst["margin"])
    verdict = Verdict.HOLDS if margin >= 0 else Verdict.FAILS
    return CheckResult(spec.what, spec.kind, verdict, describe(worst, margin), margin, ev.reset_index(drop=True))


# --------------------------------------------------------------------------- the kinds

def evaluate_check(spec: CheckSpec, data: pd.DataFrame, published: Mapping[str, PublishedNumber]) -> CheckResult:
    """Run one check against the measured table."""
    o = spec.options
    if spec.value not in data.columns:
        return _inconclusive(spec, f"the measured data has no column {spec.value!r}")
    try:
        rows = _select(data, o.get("select"))
    except KeyError as exc:
        return _inconclusive(spec, f"the measured data has no column {exc.args[0]!r} to select on")
    if rows.empty:
        return _inconclusive(spec, f"no measured rows match {dict(o.get('select') or {})}")
    by = list(o.get("by") or [])
    v = spec.value
    kind = spec.kind

    if kind in ("at_least", "at_most", "in_range"):
        lo = _resolve(o["min"], published) if "min" in o else None
        hi = _resolve(o["max"], published) if "max" in o else None
        ev = rows.copy()
        m_lo = (ev[v] / lo - 1) if lo else pd.Series(np.inf, index=ev.index)
        m_hi = (1 - ev[v] / hi) if hi else pd.Series(np.inf, index=ev.index)
        margins = np.minimum(m_lo, m_hi)
        ev["min"], ev["max"] = lo, hi
        bound = " and ".join(x for x in (f">= {lo:g}" if lo else "", f"<= {hi:g}" if hi else "") if x)

        def describe(w, m):
            return (f"{_label(w, by)}: {w[v]:.4g} vs required {bound} — "
                    f"{'closest to a bound' if m >= 0 else 'outside'} by {abs(m) * 100:.1f}%")
        return _finish(spec, ev, pd.Series(margins, index=ev.index), describe)

    if kind in ("close_to", "within_factor"):
        ev = _targets(spec, rows, data, published, by)
        if isinstance(ev, str):
            return _inconclusive(spec, ev)
        ratio = ev[v] / ev["target"]
        ev["ratio"] = ratio
        if kind == "close_to":
            tol = float(o["rel_tol"])
            margins = tol - (ratio - 1).abs()

            def describe(w, m):
                return (f"{w['label']}: {w[v]:.4g} vs {w['target']:.4g} ({_pct(w['ratio'] - 1)}); "
                        f"tolerance ±{tol * 100:g}%, margin {m * 100:+.1f} points")
        else:
            factor = float(o["factor"])
            spread = np.maximum(ratio, 1 / ratio)
            margins = factor / spread - 1

            def describe(w, m):
                return (f"{w['label']}: {w[v]:.4g} vs {w['target']:.4g} is a factor "
                        f"{max(w['ratio'], 1 / w['ratio']):.2f} apart; allowed {factor:g}, margin {_pct(m)}")
        return _finish(spec, ev, pd.Series(margins, index=ev.index), describe)

    if kind == "rank_order":
        across, order = o["across"], [str(x) for x in o["order"]]
        if across not in rows.columns:
            return _inconclusive(spec, f"the measured data has no column {across!r}")
        recs = []
        for key, g in (rows.groupby(by, sort=False) if by else [((), rows)]):
            vals = {str(a): float(g[g[across].astype(str) == a][v].mean()) for a in order}
            if any(math.isnan(x) for x in vals.values()):
                missing = [a for a, x in vals.items() if math.isnan(x)]
                return _inconclusive(spec, f"no rows for {across}={', '.join(missing)}"
                                     + (f" in {key}" if by else ""))
            for a, b in zip(order, order[1:]):
                recs.append({**dict(zip(by, key if isinstance(key, tuple) else (key,))), "lower": a, "higher": b,
                             f"{v}_lower": vals[a], f"{v}_higher": vals[b]})
        ev = pd.DataFrame(recs)
        margins = ev[f"{v}_higher"] / ev[f"{v}_lower"].replace(0, np.nan) - 1
        # a zero lower value: any positive higher value is infinitely far above it
        margins = margins.fillna(pd.Series(np.where(ev[f"{v}_higher"] > 0, np.inf, -1.0), index=ev.index))

        def describe(w, m):
            return (f"{_label(w, by)}: {w['lower']} {w[f'{v}_lower']:.4g} < {w['higher']} {w[f'{v}_higher']:.4g}"
                    f"{'' if m >= 0 else ' is violated'}; tightest gap {_pct(m)}")
        return _finish(spec, ev, margins, describe)

    if kind == "grows_with":
        x = o["x"]
        need = float(o.get("min_gain", 1.0))
        if x not in rows.columns:
            return _inconclusive(spec, f"the measured data has no column {x!r}")
        recs = []
        for key, g in (rows.groupby(by, sort=False) if by else [((), rows)]):
            means = g.groupby(x)[v].mean().sort_index()
            if len(means) < 2:
                return _inconclusive(spec, f"only one value of {x} measured" + (f" for {key}" if by else ""))
            steps = means.values[1:] / means.values[:-1]
            recs.append({**dict(zip(by, key if isinstance(key, tuple) else (key,))),
                         f"{x}_from": means.index[0], f"{x}_to": means.index[-1],
                         f"{v}_from": means.values[0], f"{v}_to": means.values[-1],
                         "gain": means.values[-1] / means.values[0], "monotone": bool((steps >= 1).all())})
        ev = pd.DataFrame(recs)
        margins = ev["gain"] / need - 1

        def describe(w, m):
            return (f"{_label(w, by)}: {w[f'{v}_from']:.4g} at {x}={w[f'{x}_from']} to {w[f'{v}_to']:.4g} at "
                    f"{x}={w[f'{x}_to']}, a gain of {w['gain']:.2f}x (needed >= {need:g}x, margin {_pct(m)})"
                    f"{'' if w['monotone'] else '; not monotone'}")
        return _finish(spec, ev, margins, describe)

    raise ValueError(f"unknown check kind {kind!r}")


def _targets(spec, rows, data, published, by) -> pd.DataFrame | str:
    """Pair each measured row with its target: a literal, a published number, or other measured rows."""
    o, v = spec.options, spec.value
    if "target" in o:
        ev = rows.copy()
        ev["target"] = _resolve(o["target"], published)
        ev["label"] = [_label(r, by) for _, r in ev.iterrows()]
        return ev[[*by, "label", v, "target"]]
    if o.get("target_published"):
        recs = []
        for n in published.values():
            if not n.labels or not set(n.labels) <= set(rows.columns):
                continue
            match = rows
            for col, val in n.labels.items():
                match = match[match[col].astype(str) == str(val)]
            if match.empty:
                continue
            recs.append({"label": f"{n.id} ({', '.join(f'{k}={val}' for k, val in n.labels.items())})",
                         v: float(match[v].mean()), "target": n.value, "published": n.id,
                         "precision": n.precision})
        if not recs:
            return "no measured rows match any published number's labels"
        return pd.DataFrame(recs)
    other = dict(o["target_rows"])
    mine = rows
    for col in other:
        if col not in data.columns:
            return f"the measured data has no column {col!r}"
        mine = mine[mine[col].astype(str) != str(other[col])]
    theirs = _select(data, {**dict(o.get("select") or {}), **other}) if not set(other) & set(o.get("select") or {}) \
        else _select(data, other)
    if mine.empty or theirs.empty:
        return f"no measured rows for {other}" if theirs.empty else "no rows to compare"
    keys = [c for c in by if c not in other]
    t = theirs.groupby(keys)[v].mean().rename("target").reset_index() if keys else \
        pd.DataFrame({"target": [theirs[v].mean()]})
    ev = mine.merge(t, on=keys, how="inner") if keys else mine.assign(target=float(t["target"].iloc[0]))
    if ev.empty:
        return f"no measured rows pair up with {other} on {keys}"
    ev["label"] = [_label(r, by) + f" vs {', '.join(f'{k}={x}' for k, x in other.items())}" for _, r in ev.iterrows()]
    return ev[[*by, "label", v, "target"]]


def check_claim(claim: Claim, measured: pd.DataFrame | None, *, source: str,
                published: Mapping[str, PublishedNumber] | None = None) -> ClaimVerdict:
    """Every check of ``claim`` on ``measured``; ``None`` or an empty table means ``not run``.

    The claim holds only if every check holds; it fails if any fails; else it
    is inconclusive. The margin reported is the tightest of the checks.
    """
    pub = dict(published) if published is not None else {n.id: n for n in claim.published}
    if measured is None or measured.empty:
        return ClaimVerdict(claim.key, Verdict.NOT_RUN, "no outputs are available for this claim yet", None, source)
    results = tuple(evaluate_check(spec, measured, pub) for spec in claim.checks)
    failing = [r for r in results if r.verdict is Verdict.FAILS]
    unsure = [r for r in results if r.verdict is Verdict.INCONCLUSIVE]
    if failing:
        worst = min(failing, key=lambda r: r.margin)
        return ClaimVerdict(claim.key, Verdict.FAILS, f"{worst.what}: {worst.reason}", worst.margin, source, results)
    if unsure:
        return ClaimVerdict(claim.key, Verdict.INCONCLUSIVE, f"{unsure[0].what}: {unsure[0].reason}", None,
                            source, results)
    tight = min(results, key=lambda r: r.margin)
    return ClaimVerdict(claim.key, Verdict.HOLDS, f"tightest check — {tight.what}: {tight.reason}", tight.margin,
                        source, results)
