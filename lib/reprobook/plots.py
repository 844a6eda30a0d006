"""Plots: measured values against the paper's, told apart at a glance.

Measured values are solid markers (joined by a line when x is numeric);
published values are hollow markers with a dashed outline; a claim's
tolerance is a shaded band. The helpers look like seaborn's: they take a tidy
DataFrame and column names, draw on ``ax`` (or the current axes) and return
it. Nothing here calls ``show()`` or ``savefig()``.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from .checks import matches
from .config import Claim, PublishedNumber


def published_frame(numbers: Iterable[PublishedNumber], *, y: str, sources: str = "target") -> pd.DataFrame:
    """The published numbers as rows: their labels as columns, the value as ``y``, and provenance.

    Numbers about another measured column (``measure`` not ``y``) are left out.
    ``sources="others"`` gives the values of the non-target sources instead.
    """
    rows = []
    for n in numbers:
        if n.measure and n.measure != y:
            continue
        values = n.sources[:1] if sources == "target" else n.others
        if sources == "target" and not values:
            values = (None,)
        for pv in values:
            rows.append({**dict(n.labels), y: n.value if pv is None else pv.value, "published_id": n.id,
                         "precision": n.precision if pv is None else pv.precision,
                         "source": n.source if pv is None else pv.source,
                         "source_name": "" if pv is None else pv.name})
    return pd.DataFrame(rows)


def _select_rows(frame: pd.DataFrame, select) -> pd.DataFrame:
    for col, want in dict(select or {}).items():
        if col in frame:
            frame = frame[matches(frame[col], want)]
    return frame


def tolerance(claim: Claim, *, y: str | None = None, x: str | None = None, hue: str | None = None):
    """What the claim's checks accept, for a plot of column ``y``: ``(band, label, used_ids)`` or ``None``.

    ``band`` is ``(lo, hi)`` for the whole plot, or a DataFrame of rows
    ``x`` (and ``hue``), ``lo``, ``hi`` when the accepted range differs per
    point; ``used_ids`` are the published numbers that became the band's
    bounds (they need no marker of their own). The first check about ``y``
    that has a band gives it.
    """
    spec0 = claim.plots[0] if claim.plots else {}
    y = y or spec0.get("y")
    x = x or spec0.get("x")
    hue = hue if hue is not None else spec0.get("hue")
    published = {n.id: n for n in claim.published}

    def value(ref):
        return published[ref["published"]].value if isinstance(ref, dict) or hasattr(ref, "get") else float(ref)

    for c in claim.checks:
        o = c.options
        if c.value != y:
            continue
        if c.kind == "in_range":
            lo, hi = value(o["min"]), value(o["max"])
            used = {r["published"] for r in (o["min"], o["max"]) if hasattr(r, "get")}
            label = f"accepted ({lo:g}–{hi:g})"
            select = dict(o.get("select") or {})
            if x and x in select:
                xs = select[x] if isinstance(select[x], (list, tuple)) else [select[x]]
                return pd.DataFrame({x: xs, "lo": lo, "hi": hi}), label, used
            return (lo, hi), label, used
        if c.kind in ("close_to", "within_factor") and o.get("target_published"):
            rows = published_frame(claim.published, y=y)
            if rows.empty or (x and x not in rows):
                continue
            if c.kind == "within_factor":
                f = float(o["factor"])
                lo, hi, label = rows[y] / f, rows[y] * f, f"accepted (within a factor of {f:g})"
            else:
                t = float(o["rel_tol"])
                lo, hi, label = rows[y] * (1 - t), rows[y] * (1 + t), f"accepted (±{t * 100:g}%)"
            band = rows.assign(lo=lo, hi=hi)
            return band, label, set()
    return None


def claim_plot(claim: Claim, measured: pd.DataFrame, *, index: int = 0, ax: plt.Axes | None = None,
               **overrides) -> plt.Axes:
    """The claim's plot number ``index``: measured against published, with the accepted band, labels from the claim.

    The axes, hue, selection, scales and labels come from the claim's
    ``plot`` entry; keyword arguments override them.
    """
    spec = {**(dict(claim.plots[index]) if claim.plots else {}), **overrides}
    x, y, hue = spec["x"], spec["y"], spec.get("hue")
    select = spec.get("select")
    data = _select_rows(measured, select) if measured is not None and not measured.empty else measured
    tol = tolerance(claim, y=y, x=x, hue=hue)
    band, label, used = tol if tol else (None, "", set())
    pub = published_frame(claim.published, y=y)
    if not pub.empty:
        pub = _select_rows(pub[~pub["published_id"].isin(used)], select)
        if x in pub:
            pub = pub.dropna(subset=[x])
    if isinstance(band, pd.DataFrame):
        band = _select_rows(band, select)
    unit = next((n.unit for n in claim.published if not n.measure or n.measure == y), "")
    ax = overlay(data, pub if not pub.empty else None, x=x, y=y, hue=hue, band=band,
                 band_label=spec.get("band_label") or label or "accepted", order=spec.get("order"),
                 logx=bool(spec.get("logx")), logy=bool(spec.get("logy")),
                 xlabel=spec.get("xlabel") or x, ylabel=spec.get("ylabel") or (f"{y} ({unit})" if unit else y),
                 title=spec.get("title"), ax=ax)
    return ax


def _positions(values: Sequence, order: Sequence | None) -> tuple[dict, bool]:
    vals = list(dict.fromkeys(order or values))
    numeric = all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in vals)
    if numeric:
        return {v: float(v) for v in vals}, True
    return {v: float(i) for i, v in enumerate(vals)}, False


def overlay(measured: pd.DataFrame, published: pd.DataFrame | None = None, *, x: str, y: str,
            hue: str | None = None, band: tuple[float, float] | pd.DataFrame | None = None,
            band_label: str = "claimed range", order: Sequence | None = None, logx: bool = False,
            logy: bool = False, xlabel: str | None = None, ylabel: str | None = None,
            title: str | None = None, ax: plt.Axes | None = None) -> plt.Axes:
    """Measured (solid) against published (hollow) values, with the tolerance band shaded.

    Parameters
    ----------
    measured, published : DataFrame
        Tidy tables with columns ``x``, ``y`` and, if given, ``hue``. Rows of
        ``published`` lacking a ``hue`` or ``x`` value are drawn as
        horizontal dashed lines.
    band : (lo, hi) or DataFrame
        A horizontal band for the whole plot, or rows ``x`` (and ``hue``),
        ``lo``, ``hi`` drawn as a shaded bar at each x.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> ax = overlay(measured, published_frame(claim.published, y="mean_ops_per_s"),
    ...              x="cores", y="mean_ops_per_s", hue="op", band=(1000, 3000))
    """
    ax = ax or plt.gca()
    if measured is None or measured.empty or x not in measured or y not in measured:
        ax.text(0.5, 0.5, "no measured data: not run", ha="center", va="center", transform=ax.transAxes)
        measured = pd.DataFrame({x: [] if published is None or x not in published else list(published[x].dropna()),
                                 y: [] if published is None or x not in published else [np.nan] * len(published[x].dropna())})
        if hue:
            measured[hue] = []  if measured.empty else [None] * len(measured)
    pos, numeric = _positions(sorted(measured[x].unique()) if order is None else order, order)
    if published is not None and not published.empty and x in published and not numeric:
        for v in published[x].dropna().unique():
            pos.setdefault(v, float(len(pos)))
    groups = list(dict.fromkeys(measured[hue])) if hue else [None]
    if hue and published is not None and hue in published:
        groups += [g for g in dict.fromkeys(published[hue].dropna()) if g not in groups]
    palette = dict(zip(groups, sns.color_palette("colorblind", max(len(groups), 1))))
    n = len(groups)
    width = 0.0 if numeric else 0.6 / max(n, 1)

    def xpos(xv, gi):
        base = pos[xv] if xv in pos else float(xv)  # numeric x: a point not measured still has its place
        return base * (1 + 0.03 * (gi - (n - 1) / 2)) if numeric and logx else base + (gi - (n - 1) / 2) * width

    if isinstance(band, tuple):
        ax.axhspan(band[0], band[1], color="0.85", alpha=0.6, zorder=0, label=band_label)
    elif isinstance(band, pd.DataFrame) and not band.empty:
        for i, (_, r) in enumerate(band.iterrows()):
            gi = groups.index(r[hue]) if hue and hue in band else 0
            xc = xpos(r[x], gi)
            if numeric and logx:
                left, right = xc / 1.25, xc * 1.25
            elif numeric:
                spacing = np.diff(sorted(pos.values())).min() if len(pos) > 1 else 1.0
                left, right = xc - 0.3 * spacing, xc + 0.3 * spacing
            else:
                left, right = xc - (width or 0.3) / 2, xc + (width or 0.3) / 2
            colour = palette[groups[gi]] if hue and hue in band else "0.6"
            ax.fill_between([left, right], r["lo"], r["hi"], color=colour, alpha=0.18,
                            zorder=0, label=band_label if i == 0 else None)

    for gi, g in enumerate(groups):
        sub = measured if g is None else measured[measured[hue] == g]
        if sub.empty:
            continue
        sub = sub.sort_values(x, key=lambda s: s.map(pos))
        xs = [xpos(v, gi) for v in sub[x]]
        label = f"{g} (measured)" if g is not None else "measured"
        ax.plot(xs, sub[y], marker="o", linestyle="-" if numeric else "none", color=palette[g], markersize=7,
                label=label, zorder=3)

    if published is not None and not published.empty:
        labelled = set()
        for _, r in published.iterrows():
            g = r[hue] if hue and hue in published and pd.notna(r.get(hue)) else None
            colour = palette.get(g, "black")
            label = None if g in labelled else (f"{g} (published, hollow)" if g is not None else "published (hollow)")
            labelled.add(g)
            if x in published and pd.notna(r.get(x)) and (r[x] in pos or numeric):
                gi = groups.index(g) if g in groups else 0
                ax.plot([xpos(r[x], gi)], [r[y]], marker="D", markersize=11, markerfacecolor="none",
                        markeredgecolor=colour, markeredgewidth=2, linestyle="none", zorder=4, label=label)
            else:
                ax.axhline(r[y], color=colour, linestyle="--", linewidth=1.2, zorder=2, label=label)

    if not numeric:
        ax.set_xticks(list(pos.values()), [str(k) for k in pos])
    elif logx:
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(pos.values()), [str(k) for k in pos])
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or y)
    if title:
        ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # nothing measured nor published: no legend (and no warning)
        ax.legend(fontsize="small", loc="best")
    return ax
