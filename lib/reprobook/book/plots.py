"""Plots: measured values against the paper's, told apart at a glance, drawn with seaborn.

Measured values are solid markers (joined by their mean when x is numeric);
published values are hollow diamonds; a claim's tolerance is a shaded band,
drawn only where a point was measured. Where a point was measured several
times (the loader's trials), each trial is a marker and a vertical bar spans
the 95 % bootstrap interval of their statistic, the spread the checks judge. Facets (``col``, ``row``), hue and the
style of each series are seaborn's (`seaborn.objects`): a claim's ``plot``
entry names them. Several runs of a claim (two hosts, two dates) overlay as
series of one plot, told apart by marker and line style.

The helpers look like seaborn's: they take tidy DataFrames and column names,
draw on ``ax`` (or on a figure, for facets) and return the axes. Nothing here
calls ``show()`` or ``savefig()``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import seaborn.objects as so
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from reprobook.core.checks import STATISTICS, matches, resolve_bound, trial_rows
from reprobook.core.loaders import column_heading, column_words
from reprobook.core.config import Claim, PublishedNumber  # noqa: F401
from reprobook.core.published import published_frame  # noqa: F401  (public here too: the notebooks and tests call plots.published_frame)
from reprobook.errors import ReprobookError

SERIES = "series"
"""The column naming the series of a measured table: a run's label (``measured`` when there is one table)."""
MEASURED = "measured"
PUBLISHED = "published"
NOT_RUN = "no measured data: not run"
PALETTE = "colorblind"
RUN_MARKERS = ("o", "s", "^", "v", "P", "X", "<", ">")
RUN_LINES = ("-", "--", ":", "-.")
HUE_MARKERS = ("o", "s", "^", "v", "P", "X", "<", ">", "*", "h")
FACETS = ("col", "row")
_PUBLISHED_MARK = dict(marker="D", pointsize=10, fill=False, stroke=1.8)
_STAT_SHORT = {"hmean": "harmonic mean", "geomean": "geometric mean"}
INTERVAL_RESAMPLES = 200
"""Bootstrap resamples of a point's trials for its interval bar (seeded: a page is the same on every build)."""


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


    for c in claim.checks:
        o = c.options
        if c.value != y:
            continue
        if c.kind == "in_range" and not any(hasattr(o[k], "get") and "column" in o[k] for k in ("min", "max")):
            lo, hi = resolve_bound(o["min"], published, -1), resolve_bound(o["max"], published, +1)
            # a published number that is itself a bound needs no marker of its own (one moved by `within` does)
            used = {r["published"] for r in (o["min"], o["max"]) if hasattr(r, "get") and not r.get("within")}
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


def runs_frame(measured) -> pd.DataFrame:
    """Every measured series in one table, the column ``series`` naming each.

    ``measured`` is a DataFrame (one series, ``measured``, unless it already
    has a ``series`` column) or a mapping of labels to DataFrames, one series
    per run; empty tables and ``None`` are left out.
    """
    if measured is None:
        return pd.DataFrame()
    if isinstance(measured, pd.DataFrame):
        if SERIES in measured or measured.empty:
            return measured.reset_index(drop=True)
        return measured.assign(**{SERIES: MEASURED}).reset_index(drop=True)
    if not isinstance(measured, Mapping):
        raise TypeError(f"measured values are a DataFrame or a mapping of run labels to DataFrames, "
                        f"not {type(measured).__name__}")
    if PUBLISHED in measured:
        raise ValueError(f"{PUBLISHED!r} names the paper's values; give the run another label")
    parts = [f.assign(**{SERIES: str(label)}) for label, f in measured.items() if f is not None and not f.empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _numeric(values) -> bool:
    return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
               for v in values)


def _levels(var: str, frames: Sequence[pd.DataFrame], order: Sequence | None = None) -> list:
    """The values of ``var`` in ``frames``: ``order`` first, then the others as they appear (numbers sorted)."""
    seen = [v for f in frames if var in f for v in f[var].dropna()]
    values = list(dict.fromkeys(seen))
    if order is None and values and _numeric(values):
        values = sorted(values)
    return list(dict.fromkeys([*(order or ()), *values]))


def _spread(frame: pd.DataFrame, var: str, levels: Sequence) -> pd.DataFrame:
    """Rows without a value of facet ``var`` belong in every facet: one copy per level."""
    if frame.empty:
        return frame
    if var not in frame:
        return pd.concat([frame.assign(**{var: lv}) for lv in levels], ignore_index=True)
    bare = frame[var].isna()
    if not bare.any():
        return frame
    return pd.concat([frame[~bare], *(frame[bare].assign(**{var: lv}) for lv in levels)], ignore_index=True)


@dataclass
class _Layout:
    """What one plot draws, worked out before drawing: the tables, the facets and the mappings."""

    runs: pd.DataFrame          # measured rows, with SERIES
    points: pd.DataFrame        # published rows with an x
    lines: pd.DataFrame         # published rows without an x: a dashed horizontal line
    band: pd.DataFrame          # x (hue, facets), lo, hi: only where a point was measured
    facets: dict                # "col"/"row" -> column
    facet_levels: dict          # "col"/"row" -> its values, in order
    numeric: bool               # x is a number (continuous axis) rather than a category
    x_levels: list
    hue: str | None
    hue_levels: list
    run_labels: list
    wrap: int | None
    statistic: str = "mean"     # what joins a point's trials, and what its interval bar is of
    repeated: pd.DataFrame | None = None    # the runs' rows of points measured more than once: a bar each

    @property
    def spread(self) -> bool:
        return self.repeated is not None and not self.repeated.empty

    @property
    def shape(self) -> tuple[int, int]:
        """Rows and columns of the facet grid."""
        ncol = len(self.facet_levels.get("col", [None]))
        nrow = len(self.facet_levels.get("row", [None]))
        if self.wrap and "row" not in self.facets:
            return math.ceil(ncol / self.wrap), min(ncol, self.wrap)
        if self.wrap and "col" not in self.facets:
            return min(nrow, self.wrap), math.ceil(nrow / self.wrap)
        return nrow, ncol

    @property
    def cells(self) -> list[dict]:
        """The facet values of each panel, in the order seaborn lays the axes out (row by row)."""
        cols = self.facet_levels.get("col", [None])
        rows = self.facet_levels.get("row", [None])
        return [{k: v for k, v in (("row", r), ("col", c)) if v is not None or k in self.facets}
                for r in rows for c in cols]

    @property
    def palette(self) -> dict:
        return dict(zip(self.hue_levels, sns.color_palette(PALETTE, max(len(self.hue_levels), 1))))

    @property
    def run_colours(self) -> dict:
        """Each run's colour when there is no hue (with a hue, the runs take its colours)."""
        if self.hue or len(self.run_labels) < 2:
            return {r: "0.2" for r in self.run_labels}
        return dict(zip(self.run_labels, sns.color_palette(PALETTE, len(self.run_labels))))

    @property
    def hue_markers(self) -> dict:
        """Each hue level's marker, so that colour is never the only thing telling the levels apart."""
        return {level: HUE_MARKERS[i % len(HUE_MARKERS)] for i, level in enumerate(self.hue_levels)}

    @property
    def run_styles(self) -> dict:
        """Each run's marker and line style (one run: a circle and a solid line)."""
        return {r: (RUN_MARKERS[i % len(RUN_MARKERS)], RUN_LINES[i % len(RUN_LINES)])
                for i, r in enumerate(self.run_labels)}


def _layout(measured, published, *, x, y, hue, col, row, wrap, band, order, statistic="mean") -> _Layout:
    runs = runs_frame(measured)
    runs = runs.dropna(subset=[x, y]) if not runs.empty and x in runs and y in runs else pd.DataFrame()
    pub = published if published is not None and not published.empty and y in published else pd.DataFrame()
    if not pub.empty:
        pub = pub.dropna(subset=[y])
    has_x = pub[x].notna() if x in pub else pd.Series(False, index=pub.index)
    points, lines = pub[has_x].reset_index(drop=True), pub[~has_x].reset_index(drop=True)
    facets, facet_levels = {}, {}
    for dim, var in (("col", col), ("row", row)):
        levels = _levels(var, [runs, points, lines]) if var else []
        if levels:
            facets[dim], facet_levels[dim] = var, levels
            points, lines = _spread(points, var, levels), _spread(lines, var, levels)
    xs = [v for f in (runs, points) if x in f for v in f[x]]
    numeric = _numeric(xs) and (order is None or _numeric(order))
    if not numeric:  # categories are compared as text: an order of strings places numbers too
        runs, points = (f.assign(**{x: f[x].astype(str)}) if x in f else f for f in (runs, points))
        order = [str(v) for v in order] if order is not None else None
        band = band.assign(**{x: band[x].astype(str)}) if isinstance(band, pd.DataFrame) and x in band else band
    hue = hue if hue and any(hue in f for f in (runs, points, lines)) else None
    hue_levels = _levels(hue, [runs, points, lines]) if hue else []
    run_labels = list(dict.fromkeys(runs[SERIES])) if not runs.empty else []
    point = [c for c in (x, hue, SERIES, *facets.values()) if c and c in runs]
    repeated = (runs[runs.groupby(point, dropna=False)[y].transform("size") > 1] if not runs.empty
                else pd.DataFrame())
    return _Layout(runs=runs, points=points, lines=lines, band=_band_rows(band, runs, x=x, hue=hue, facets=facets),
                   statistic=statistic if statistic in STATISTICS else "mean", repeated=repeated,
                   facets=facets, facet_levels=facet_levels, numeric=numeric,
                   x_levels=[] if numeric else [str(v) for v in _levels(x, [runs, points], order)],
                   hue=hue, hue_levels=hue_levels, run_labels=run_labels,
                   wrap=wrap if wrap else (3 if len(facets) == 1 and len(next(iter(facet_levels.values()))) > 4
                                           else None))


def _band_rows(band, runs: pd.DataFrame, *, x: str, hue: str | None, facets: Mapping) -> pd.DataFrame:
    """The band's rows where a point was measured (same x, and same hue and facet when the band names them)."""
    if band is None or runs.empty:
        return pd.DataFrame()
    where = [x, *(v for v in facets.values() if v in runs)]
    if isinstance(band, tuple):
        return runs[where].drop_duplicates().assign(lo=float(band[0]), hi=float(band[1]))
    if band.empty or x not in band:
        return pd.DataFrame()
    keys = [k for k in (x, hue, *facets.values()) if k and k in band and k in runs]
    band = band[[*keys, "lo", "hi"]].dropna(subset=keys)
    measured = runs[list(dict.fromkeys([*keys, *where]))].drop_duplicates()
    if pd.api.types.is_numeric_dtype(band[x]) and pd.api.types.is_numeric_dtype(measured[x]):
        band, measured = band.astype({x: float}), measured.astype({x: float})
    return band.merge(measured, on=keys).drop_duplicates()


def _x_scale(layout: _Layout, x: str, logx: bool):
    if not layout.numeric:
        return so.Nominal(order=layout.x_levels)
    if not logx:
        return so.Continuous()
    ticks = sorted({float(v) for f in (layout.runs, layout.points) if x in f for v in f[x] if v > 0})
    powers_of_two = all(float(np.log2(v)).is_integer() for v in ticks)
    scale = so.Continuous(trans="log2" if powers_of_two else "log")
    return scale.tick(at=ticks).label(like="{x:g}") if 0 < len(ticks) <= 10 else scale


def _legend_handles(layout: _Layout, band_label: str) -> list:
    """One legend for the plot: the hue's colours, each run's style, published (hollow) and the band."""
    many = len(layout.run_labels) > 1
    markers = layout.hue_markers if not many else {}
    handles = [Line2D([], [], color=c, marker=markers.get(level, "o"), linestyle="-" if layout.numeric else "none",
                      label=str(level)) for level, c in layout.palette.items()] if layout.hue else []
    for run, (marker, dash) in layout.run_styles.items():
        handles.append(Line2D([], [], color=layout.run_colours[run], marker=marker,
                              linestyle=dash if layout.numeric else "none",
                              label=f"{run} (solid)" if many else "measured (solid)"))
    if not layout.points.empty or not layout.lines.empty:
        handles.append(Line2D([], [], color="0.2", marker="D", markerfacecolor="none", markersize=8,
                              linestyle="--" if layout.points.empty else "none", label="published (hollow)"))
    if not layout.band.empty:
        handles.append(Patch(facecolor="0.6", alpha=0.35, label=band_label))
    if layout.spread:
        handles.append(Line2D([], [], color="0.2", marker="|", markersize=12, markeredgewidth=1.8, linestyle="none",
                              label=f"95 % interval of the trials' {_STAT_SHORT.get(layout.statistic, layout.statistic)}"))
    return handles


def _theme() -> dict:
    """Matplotlib's current style, so that seaborn's facets look like the axes a notebook makes itself."""
    return {k: v for k, v in plt.rcParams.items()
            if k.startswith(("axes.", "font.", "grid.", "xtick.", "ytick.", "legend.", "lines.", "patch.", "text."))}


def _plot_spec(layout: _Layout, *, x: str, y: str, logx: bool, logy: bool, sharey: bool, xlabel, ylabel,
               title) -> so.Plot:
    many = len(layout.run_labels) > 1
    hue = {"color": layout.hue} if layout.hue else {}

    def coloured(frame: pd.DataFrame) -> bool:
        return bool(layout.hue) and layout.hue in frame

    # the runs take the hue's colours, or each its own when there is no hue; categories side by side per hue
    run_hue = hue if coloured(layout.runs) else {} if layout.hue else ({"color": SERIES} if many else {})
    dodge = [so.Dodge(by=["color"])] if layout.hue and not layout.numeric else []
    # each layer names the facet columns of its own table (seaborn would otherwise align the plot's by index)
    facets = dict(layout.facets)
    grid = pd.MultiIndex.from_product(list(layout.facet_levels.values()), names=list(facets.values())).to_frame(
        index=False) if facets else None
    p = so.Plot(grid).theme(_theme())
    if not layout.band.empty:
        banded = coloured(layout.band)
        mark = so.Bar(alpha=0.25, edgewidth=0) if banded else so.Bar(alpha=0.3, edgewidth=0, color="0.6")
        p = p.add(mark, *(dodge if banded else ()), data=layout.band, x=x, y="hi", baseline="lo",
                  legend=False, **facets, **(hue if banded else {}))
    if not layout.runs.empty:
        stat = STATISTICS[layout.statistic]
        if layout.numeric:
            p = p.add(so.Line(linewidth=1.6), so.Agg(stat), data=layout.runs, x=x, y=y, legend=False, **facets,
                      **run_hue, **({"linestyle": SERIES} if many else {}))
        if layout.spread:
            p = p.add(so.Range(linewidth=1.8), so.Est(stat, errorbar=("ci", 95), n_boot=INTERVAL_RESAMPLES, seed=0),
                      *(dodge if coloured(layout.runs) else ()), data=layout.repeated, x=x, y=y, legend=False,
                      **facets, **run_hue)
        by_hue = not many and coloured(layout.runs)  # one run, several hue levels: each its marker as well as colour
        p = p.add(so.Dot(pointsize=7), *(dodge if coloured(layout.runs) else ()), data=layout.runs, x=x, y=y,
                  legend=False, **facets, **run_hue,
                  **({"marker": SERIES} if many else {"marker": layout.hue} if by_hue else {}))
    if not layout.points.empty:
        if not layout.hue:
            p = p.add(so.Dot(**_PUBLISHED_MARK, color="0.2" if many else "C0"), data=layout.points, x=x, y=y,
                      legend=False, **facets)
        with_hue = layout.points[layout.points[layout.hue].notna()] if coloured(layout.points) else layout.points[:0]
        plain = layout.points.drop(with_hue.index) if layout.hue else layout.points[:0]
        if not with_hue.empty:
            p = p.add(so.Dot(**_PUBLISHED_MARK), *dodge, data=with_hue, x=x, y=y, legend=False, **facets, **hue)
        if not plain.empty:
            p = p.add(so.Dot(**_PUBLISHED_MARK, color="0.2"), data=plain, x=x, y=y, legend=False, **facets)
    p = p.scale(x=_x_scale(layout, x, logx))
    if logy:
        p = p.scale(y="log")
    if layout.hue:
        p = p.scale(color=so.Nominal(layout.palette, order=layout.hue_levels))
    elif many:
        p = p.scale(color=so.Nominal(layout.run_colours))
    if layout.hue and not many and coloured(layout.runs):
        p = p.scale(marker=so.Nominal(layout.hue_markers, order=layout.hue_levels))
    if many:
        p = p.scale(marker=so.Nominal({r: m for r, (m, _) in layout.run_styles.items()}),
                    linestyle=so.Nominal({r: d for r, (_, d) in layout.run_styles.items()}))
    if layout.facets:
        p = p.facet(**facets, order=layout.facet_levels, wrap=layout.wrap).share(y=sharey)
        p = p.label(**{dim: (lambda name: f"{name}:") for dim in layout.facets})
    return p.label(x=xlabel or x, y=ylabel or y, **({} if layout.facets or not title else {"title": title}))


def overlay(measured, published: pd.DataFrame | None = None, *, x: str, y: str, hue: str | None = None,
            col: str | None = None, row: str | None = None, wrap: int | None = None, sharey: bool = True,
            band: tuple[float, float] | pd.DataFrame | None = None, band_label: str = "claimed range",
            order: Sequence | None = None, logx: bool = False, logy: bool = False, xlabel: str | None = None,
            ylabel: str | None = None, title: str | None = None, ax: plt.Axes | None = None, on=None,
            statistic: str = "mean"):
    """Measured (solid) against published (hollow) values, with the tolerance band shaded where a point was measured.

    Parameters
    ----------
    measured : DataFrame or mapping of str to DataFrame
        A tidy table with columns ``x``, ``y`` (and ``hue``, the facets), or
        several runs by label (``{"node1, 3 May": frame_a, "node2": frame_b}``):
        each run is a series of its own marker and line style.
    published : DataFrame, optional
        The paper's values, same columns (`published_frame`). Rows without an
        ``x`` are dashed horizontal lines; rows without a facet value appear in
        every facet.
    hue, col, row : str, optional
        Columns mapped to colour, and to a grid of panels (seaborn's facets);
        ``wrap`` panels per line (default 3 past four panels of one facet);
        ``sharey=False`` gives each panel its own y axis.
    band : (lo, hi) or DataFrame
        The accepted range: for the whole plot, or rows ``x`` (``hue``, facet
        columns), ``lo``, ``hi``. It is shaded at each measured point only.
    order : sequence, optional
        The categories of ``x``, in order (others follow as they appear).
    logx, logy : bool
        Log axes (x: base 2 when every x is a power of two, ticks at the values).
    statistic : str
        What joins a point's repeated rows (its trials) and what their interval bar is of: ``mean``,
        ``median``, ``hmean`` or ``geomean`` (`reprobook.core.checks.STATISTICS`).
    ax : Axes, optional
        Where one panel is drawn (default: the current axes).
    on : Figure or SubFigure, optional
        Where a grid of facets is drawn (default: a new figure).

    Returns
    -------
    matplotlib.axes.Axes, or a list of them (one per facet) with ``col``/``row``.

    Examples
    --------
    >>> ax = overlay(measured, published_frame(claim.published, y="mean_ops_per_s"),
    ...              x="cores", y="mean_ops_per_s", hue="op", band=(1000, 3000), logx=True)
    >>> axes = overlay({"node1": m1, "node2": m2}, None, x="client_total", y="tput_tx_per_s",
    ...                hue="system", col="workload")
    """
    layout = _layout(measured, published, x=x, y=y, hue=hue, col=col, row=row, wrap=wrap, band=band, order=order,
                     statistic=statistic)
    if layout.facets and ax is not None:
        raise ValueError(f"a plot with facets ({', '.join(layout.facets.values())}) takes a figure: pass on=, not ax=")
    if layout.facets:
        nrow, ncol = layout.shape
        target = on if on is not None else plt.figure(figsize=facet_size(nrow, ncol), layout="constrained")
    else:
        target = ax if ax is not None else (on.subplots() if on is not None else plt.gca())

    if layout.runs.empty and layout.points.empty and layout.lines.empty:
        axes = [target if isinstance(target, plt.Axes) else target.subplots()]
        axes[0].set(xticks=[], yticks=[], xlabel=xlabel or x, ylabel=ylabel or y)  # not a 0–1 axis of nothing
    else:
        spec = _plot_spec(layout, x=x, y=y, logx=logx, logy=logy, sharey=sharey, xlabel=xlabel, ylabel=ylabel,
                          title=title)
        with warnings.catch_warnings():
            # seaborn 0.13 calls pandas with arguments pandas 3 deprecates; the reader can do nothing about it
            warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"seaborn\.")
            warnings.filterwarnings("ignore", category=FutureWarning, module=r"seaborn\.")
            spec.on(target).plot()
        axes = [target] if isinstance(target, plt.Axes) else list(target.axes)
    for panel, cell in zip(axes, layout.cells):
        _decorate(panel, layout, cell, x=x, y=y)
    if title and (layout.facets or not axes[0].get_title()):
        (target.suptitle(title) if layout.facets else axes[0].set_title(title))
    handles = _legend_handles(layout, band_label) if not layout.runs.empty else []
    if handles:  # nothing measured: nothing to tell apart, so no legend (and no warning about an empty one)
        if layout.facets:
            target.legend(handles=handles, loc="outside right upper", fontsize="small")
        else:
            axes[0].legend(handles=handles, loc="best", fontsize="small")
    return axes if layout.facets else axes[0]


def _decorate(ax: plt.Axes, layout: _Layout, cell: Mapping, *, x: str, y: str) -> None:
    """What seaborn does not draw: the not-run note, published values without an x, the grid."""
    if layout.runs.empty:
        ax.text(0.5, 0.5, NOT_RUN, ha="center", va="center", transform=ax.transAxes, zorder=5,
                bbox=dict(facecolor="white", edgecolor="none", alpha=0.85))
    lines = layout.lines
    for dim, value in cell.items():
        if dim in layout.facets and not lines.empty:
            lines = lines[lines[layout.facets[dim]] == value]
    palette = layout.palette
    for _, r in lines.iterrows():
        colour = palette.get(r[layout.hue], "0.25") if layout.hue and layout.hue in r else "0.25"
        ax.axhline(r[y], color=colour, linestyle="--", linewidth=1.2, zorder=2)
    ax.grid(True, which="major", alpha=0.3)


def facet_size(nrow: int, ncol: int) -> tuple[float, float]:
    """The figure size (inches) of a grid of ``nrow`` × ``ncol`` panels."""
    return max(8.0, 4.2 * ncol + 1.6), 3.6 * nrow + 0.8


def _claim_args(claim: Claim, measured, index: int, overrides: Mapping) -> dict:
    """`overlay`'s arguments for the claim's plot number ``index``: its spec, published values, band and labels."""
    spec = {**(dict(claim.plots[index]) if claim.plots else {}), **overrides}
    if "x" not in spec or "y" not in spec:
        raise ReprobookError(f"{claim.key} declares no plot (no 'plot' entry in its paper's YAML): pass x= and y= "
                             "to draw its table, or use the page's own figure")
    x, y, hue = spec["x"], spec["y"], spec.get("hue")
    select = spec.get("select")
    measured, statistic = _with_trials(measured, {x, y, *(c for c in (hue, spec.get("col"), spec.get("row")) if c),
                                                  *(select or {})})
    own = [c.options["statistic"] for c in claim.checks if c.value == y and c.options.get("statistic")]
    if own:   # the checks judge this statistic of the trials: the plot joins and bars the same one
        statistic = own[0]
    runs = runs_frame(measured)
    if not runs.empty:
        runs = _select_rows(runs, select)
    tol = tolerance(claim, y=y, x=x, hue=hue)
    band, label, used = tol if tol else (None, "", set())
    pub = published_frame(claim.published, y=y)
    if not pub.empty:
        pub = _select_rows(pub[~pub["published_id"].isin(used)], select)
    if isinstance(band, pd.DataFrame):
        band = _select_rows(band, select)
    unit = next((n.unit for n in claim.published if not n.measure or n.measure == y), "")
    return dict(measured=runs, published=pub if not pub.empty else None, x=x, y=y, hue=hue, col=spec.get("col"),
                row=spec.get("row"), wrap=spec.get("wrap"), sharey=spec.get("sharey", True), band=band,
                band_label=spec.get("band_label") or label or "accepted", order=spec.get("order"),
                logx=bool(spec.get("logx")), logy=bool(spec.get("logy")),
                xlabel=spec.get("xlabel") or column_heading(claim.loader, x),
                ylabel=spec.get("ylabel") or (f"{column_words(claim.loader, y)[0]} ({unit})" if unit
                                              else column_heading(claim.loader, y)), title=spec.get("title"),
                statistic=statistic)


def _with_trials(measured, columns: set) -> tuple:
    """The table to plot and the statistic of its trials: a loader's trials (``attrs["trials"]``, see
    `reprobook.core.checks.trial_rows`) when they hold every plotted column, so that the plot shows the
    spread the checks judge; else the table as it is."""
    if not isinstance(measured, pd.DataFrame):
        return measured, "mean"
    rows = trial_rows(measured)
    statistic = rows.attrs.get("trial_statistic") or "mean"
    if rows is measured or not columns <= set(rows.columns):
        return measured, (statistic if measured.attrs.get("trial_column") else "mean")
    # in the table's order (the colours and the legend follow the order values first appear in)
    keys = sorted(c for c in columns if c in measured.columns and not pd.api.types.is_float_dtype(measured[c]))
    if keys:
        first = {k: i for i, k in enumerate(dict.fromkeys(zip(*(measured[c] for c in keys))))}
        order = [first.get(k, len(first)) for k in zip(*(rows[c] for c in keys))]
        rows = rows.iloc[np.argsort(order, kind="stable")]
    return rows.reset_index(drop=True), statistic


def claim_plot(claim: Claim, measured, *, index: int = 0, ax: plt.Axes | None = None, on=None, **overrides):
    """The claim's plot number ``index``: measured against published, with the accepted band, labels from the claim.

    The axes, hue, facets (``col``, ``row``, ``wrap``, ``sharey``), selection, scales and
    labels come from the claim's ``plot`` entry; keyword arguments override
    them. ``measured`` is a table or a mapping of run labels to tables (see
    `overlay`). Returns the Axes, or the list of facet Axes.
    """
    return overlay(**_claim_args(claim, measured, index, overrides), ax=ax, on=on)


def claim_figure(claim: Claim, measured, **overrides) -> plt.Figure:
    """Every plot the claim declares, one under the other, in one figure (what `reprobook.api.plot` shows).

    Plots without facets are one row of axes each; when any has facets, each
    plot is a subfigure holding its grid.
    """
    args = [_claim_args(claim, measured, i, overrides) for i in range(max(1, len(claim.plots)))]
    words = claim_plot_words(claim, measured, args)
    fig = _claim_figure(args)
    setattr(fig, TEXT_ATTR, words)  # the page's alt text and caption (figure_png)
    return fig


def _claim_figure(args: Sequence[Mapping]) -> plt.Figure:
    layouts = [_layout(a["measured"], a["published"], x=a["x"], y=a["y"], hue=a["hue"], col=a["col"], row=a["row"],
                       wrap=a["wrap"], band=a["band"], order=a["order"], statistic=a["statistic"]) for a in args]
    if not any(lay.facets for lay in layouts):
        fig, axes = plt.subplots(len(args), 1, figsize=(8, 4.5 * len(args)), squeeze=False)
        for a, panel in zip(args, axes[:, 0]):
            overlay(**a, ax=panel)
        fig.tight_layout()
        return fig
    sizes = [facet_size(*lay.shape) if lay.facets else (8.0, 4.5) for lay in layouts]
    fig = plt.figure(figsize=(max(w for w, _ in sizes), sum(h for _, h in sizes)), layout="constrained")
    subfigs = fig.subfigures(len(args), 1, height_ratios=[h for _, h in sizes], squeeze=False)[:, 0]
    for a, sub in zip(args, subfigs):
        overlay(**a, on=sub)
    return fig


# --------------------------------------------------------------------------- words for a plot

TEXT_ATTR = "reprobook_text"
"""The attribute of a figure holding its ``(alt, caption)``, set by `claim_figure` (others are described from their axes)."""


def _num(v) -> str:
    """A number as a reader says it: three significant digits, thousands grouped (2,950, not 2.95e+03)."""
    if not (isinstance(v, (int, float, np.integer, np.floating)) and math.isfinite(v)):
        return str(v)
    return f"{float(f'{v:.3g}'):,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def _span(values) -> str:
    vals = [float(v) for v in values if isinstance(v, (int, float, np.integer, np.floating)) and math.isfinite(v)]
    if not vals:
        return ""
    lo, hi = min(vals), max(vals)
    return f"{_num(lo)}" if lo == hi else f"from {_num(lo)} to {_num(hi)}"


def _words(items, limit: int = 8) -> str:
    items = [str(i) for i in items]
    if len(items) > limit:
        items = [*items[:limit], f"{len(items) - limit} more"]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1] if items else ""


def claim_plot_words(claim: Claim, measured, args: Sequence[Mapping]) -> tuple[str, str]:
    """The text alternative and the caption of `claim_figure`'s plots, from the data it draws.

    The alternative says, per plot, what is plotted against what, how many points were measured (which
    series, their range), the published values (how many, their range) and the accepted band; the
    caption names the claim and how to read the marks (solid measured, hollow published, shaded band).
    """
    sentences, banded, spread = [], False, False
    for a in args:
        layout = _layout(a["measured"], a["published"], x=a["x"], y=a["y"], hue=a["hue"], col=a["col"], row=a["row"],
                         wrap=a["wrap"], band=a["band"], order=a["order"], statistic=a["statistic"])
        y, x = a["ylabel"] or a["y"], a["xlabel"] or a["x"]
        what = f"{y} against {x}"
        if layout.facets:
            what += ", in panels by " + " and ".join(layout.facets.values())
        if layout.hue:
            what += f", one colour and marker per {layout.hue} ({_words(layout.hue_levels)})"
        if layout.runs.empty:
            said = f"{what}: nothing was measured (not run)"
        else:
            runs = (f" from {len(layout.run_labels)} runs ({_words(layout.run_labels)}), each with its own marker "
                    f"and line style" if len(layout.run_labels) > 1 else "")
            point = [c for c in (a["x"], layout.hue, SERIES, *layout.facets.values()) if c and c in layout.runs]
            values = layout.runs.groupby(point, dropna=False)[a["y"]].agg(STATISTICS[layout.statistic])
            said = f"{what}: {len(values)} measured points{runs}, {_span(values)}"
            if len(values) < len(layout.runs):
                said += f" (the {_STAT_SHORT.get(layout.statistic, layout.statistic)} of each point's trials, {len(layout.runs)} trials in all"
                if layout.spread:
                    spread = True
                    said += (f", and a vertical bar at each point measured more than once: the 95 % interval of its "
                             f"{_STAT_SHORT.get(layout.statistic, layout.statistic)}")
                said += ")"
        published = [*layout.points.get(a["y"], []), *layout.lines.get(a["y"], [])]
        if published:
            said += (f"; {len(published)} published value{'s' if len(published) != 1 else ''} "
                     f"(hollow diamonds or dashed lines), {_span(published)}")
        else:
            said += "; no published value to compare with"
        if not layout.band.empty:
            banded = True
            said += f"; shaded where measured: {a['band_label']}"
        sentences.append(said[0].upper() + said[1:] + ".")
    alt = " ".join(sentences)
    caption = (f"{claim.title}: measured values as solid markers, the paper's as hollow diamonds"
               + (", the range the checks accept shaded" if banded else "")
               + (", the 95 % interval of each point's trials as a vertical bar" if spread else "") + ".")
    return alt, caption


def _legend_labels(fig) -> dict:
    """Legend texts per axes (a figure-level legend counts for every axes of its figure or subfigure)."""
    out = {}
    def walk(f):
        shared = [t.get_text() for leg in getattr(f, "legends", []) for t in leg.get_texts()]
        for ax in getattr(f, "_localaxes", []) or []:
            leg = ax.get_legend()
            out[ax] = [t.get_text() for t in leg.get_texts()] if leg else list(shared)
        for sub in getattr(f, "subfigs", []) or []:
            walk(sub)
    walk(fig)
    return out


def figure_words(fig) -> tuple[str, str]:
    """``(alt, caption)`` of a matplotlib figure: as `claim_figure` set them, else from its axes' titles, labels and legends."""
    given = getattr(fig, TEXT_ATTR, None)
    if given:
        return given
    legends = _legend_labels(fig)
    panels, titles = [], []
    for ax in fig.axes:
        if not (ax.has_data() or ax.texts) or not ax.get_visible():
            continue
        title = ax.get_title()
        titles += [title] if title else []
        said = f"{ax.get_ylabel() or 'values'} against {ax.get_xlabel() or 'x'}"
        labels = [t for t in legends.get(ax, []) if t and not t.startswith("_")]
        if labels:
            said += f", series {_words(labels, 12)}"
        notes = [t.get_text() for t in ax.texts if "not run" in t.get_text()]
        if notes:
            said += f" ({notes[0]})"
        panels.append((f"{title}: " if title else "") + said)
    suptitle = fig._suptitle.get_text() if getattr(fig, "_suptitle", None) else ""
    if not panels:
        return "An empty plot.", suptitle or "An empty plot."
    head = f"A plot of {len(panels)} panels: " if len(panels) > 1 else "A plot of "
    alt = head + "; ".join(panels) + "."
    caption = suptitle or (_words(titles, 6) + "." if titles else "")
    if not caption:
        caption = panels[0].split(":")[0] if len(panels) == 1 else f"{len(panels)} panels."
        caption = caption[0].upper() + caption[1:] + ("" if caption.endswith(".") else ".")
    return alt, caption


def figure_png(fig) -> str | None:
    """The figure as base64 PNG for a notebook, with its words inside (PNG ``Title``: caption, ``Description``: alt).

    The book's Sphinx extension (`reprobook.book.sphinxext`) reads them back to give the page's image its
    alt text and a caption; the notebook's own bytes carry them, so they cannot drift from the image.
    """
    from IPython.core.pylabtools import print_figure
    alt, caption = figure_words(fig)
    words = {"Title": caption, "Description": alt}
    smallest = smallest_text_px(fig)
    if smallest:
        words[TEXT_PX] = f"{smallest:.1f}"
    return print_figure(fig, "png", base64=True, metadata=words)


TEXT_PX = "reprobook-min-text-px"
"""The PNG text key holding the height in pixels of the figure's smallest text, at the image's own size: the
site keeps a plot wide enough on a phone for that text to stay readable (`reprobook.book.sphinxext`)."""


def smallest_text_px(fig) -> float | None:
    """The size in pixels (at the figure's dpi, as the PNG is written) of its smallest visible text, or None."""
    from matplotlib.text import Text
    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return min(sizes) * fig.dpi / 72 if sizes else None
