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

from .config import PublishedNumber


def published_frame(numbers: Iterable[PublishedNumber], *, y: str) -> pd.DataFrame:
    """The published numbers as rows: their labels as columns, the value as ``y``, and provenance."""
    rows = [{**dict(n.labels), y: n.value, "published_id": n.id, "precision": n.precision, "source": n.source}
            for n in numbers]
    return pd.DataFrame(rows)


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
        base = pos[xv]
        return base * (1 + 0.03 * (gi - (n - 1) / 2)) if numeric and logx else base + (gi - (n - 1) / 2) * width

    if isinstance(band, tuple):
        ax.axhspan(band[0], band[1], color="0.85", alpha=0.6, zorder=0, label=band_label)
    elif isinstance(band, pd.DataFrame) and not band.empty:
        for i, (_, r) in enumerate(band.iterrows()):
            gi = groups.index(r[hue]) if hue and hue in band else 0
            xc = xpos(r[x], gi)
            half = (width or 0.3) / 2
            ax.fill_between([xc - half, xc + half], r["lo"], r["hi"], color=palette[groups[gi]], alpha=0.18,
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
        first = True
        for _, r in published.iterrows():
            g = r[hue] if hue and hue in published and pd.notna(r.get(hue)) else None
            colour = palette.get(g, "black")
            label = "published (hollow)" if first else None
            if x in published and pd.notna(r.get(x)) and r[x] in pos:
                gi = groups.index(g) if g in groups else 0
                ax.plot([xpos(r[x], gi)], [r[y]], marker="D", markersize=11, markerfacecolor="none",
                        markeredgecolor=colour, markeredgewidth=2, linestyle="none", zorder=4, label=label)
            else:
                ax.axhline(r[y], color=colour, linestyle="--", linewidth=1.2, zorder=2, label=label)
            first = False

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
    ax.legend(fontsize="small", loc="best")
    return ax
