"""Plots through seaborn: facets from the claim, measured solid, published hollow, the band only where measured,
several runs overlaid."""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

import reprobook as rb  # noqa: E402
from reprobook.book import plots  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def points(ax, *, filled: bool) -> dict[tuple, np.ndarray]:
    """The markers of ``ax`` that are filled (measured) or hollow (published), by colour and marker: one per series."""
    out: dict[tuple, list] = {}
    for c in ax.collections:
        if not isinstance(c, PathCollection):
            continue
        xy, face, edge, paths = c.get_offsets(), c.get_facecolors(), c.get_edgecolors(), c.get_paths()
        for i, p in enumerate(xy):
            f, e, marker = face[i % len(face)], edge[i % len(edge)], paths[i % len(paths)]
            if (f[3] > 0) == filled:
                out.setdefault((tuple(np.round(e[:3], 3)), marker.vertices.round(3).tobytes()), []).append(p)
    return {k: np.array(v) for k, v in out.items()}


def is_log(axis) -> bool:
    """Whether ``axis`` is logarithmic (seaborn draws log axes as a function scale)."""
    a, b, c = axis.get_transform().transform([1.0, 10.0, 100.0])
    return b - a == pytest.approx(c - b)


def ys(series: dict) -> list[float]:
    return sorted(float(y) for v in series.values() for y in v[:, 1])


def from_published(claim, *, y: str, factor: float = 0.9) -> pd.DataFrame:
    """A measured table made of the claim's published numbers times ``factor`` (same labels, same columns)."""
    pub = plots.published_frame(claim.published, y=y)
    return pub.assign(**{y: pub[y] * factor}).drop(columns=["published_id", "precision", "source", "source_name"])


def validator(cores=(1, 2, 4, 8, 16, 32)) -> pd.DataFrame:
    rows = [{"op": op, "cores": c, "mean_ops_per_s": base * c} for op, base in (("create", 70), ("delete", 46))
            for c in cores]
    return pd.DataFrame(rows)


def test_a_facet_per_value_from_the_claim_with_measured_solid_and_published_hollow():
    claim = rb.claim("verus/node-replication")
    assert claim.plots[0]["col"] == "write_pct"
    fig = rb.plot(claim, from_published(claim, y="mops"))
    assert len(fig.axes) == 3
    assert [ax.get_title() for ax in fig.axes] == ["write_pct: 0", "write_pct: 10", "write_pct: 100"]
    pub = plots.published_frame(claim.published, y="mops")
    for ax, pct in zip(fig.axes, (0, 10, 100)):
        want = pub[pub["write_pct"] == pct]
        solid, hollow = points(ax, filled=True), points(ax, filled=False)
        assert len(solid) == len(hollow) == want["system"].nunique() == 3  # a series per system, each kind
        assert ys(hollow) == pytest.approx(sorted(want["mops"]))
        assert ys(solid) == pytest.approx(sorted(want["mops"] * 0.9))
        assert {c for c, _ in solid} == {c for c, _ in hollow}  # a system's colour is the same for both
        assert len(ax.lines) == 3  # the measured means, joined (x is a number)
        assert ax.get_xlabel() == "threads" and ax.get_ylabel() in ("throughput (Mop/s)", "")
    assert fig.axes[0].get_ylabel() == "throughput (Mop/s)"
    # sharey: false in the claim, since 0 % writes reach 800 Mop/s and 100 % about 5
    assert fig.axes[0].get_ylim()[1] > 500 > 10 > fig.axes[2].get_ylim()[1]
    (legend,) = fig.subfigs[0].legends  # one legend for the three panels
    assert [t.get_text() for t in legend.get_texts()] == ["Verus-NR", "IronSync-NR", "NR", "measured (solid)",
                                                           "published (hollow)"]


def test_the_band_is_shaded_only_where_a_point_was_measured():
    claim = rb.claim("aardvark/validator-throughput")
    ax = plots.claim_plot(claim, validator(), ax=plt.figure().subplots())
    bands = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_height() > 0]
    assert len(bands) == 1  # the claim's range is about 32 cores
    box = bands[0].get_bbox()
    assert (box.y0, box.y1) == pytest.approx((1000, 3000))
    assert 16 < box.x0 < 32 < box.x1 < 64  # around 32 on the log axis, not over every core count
    assert is_log(ax.xaxis) and [t for t in ax.get_xticks() if 1 <= t <= 32] == [1, 2, 4, 8, 16, 32]
    assert ax.get_ylabel() == "throughput (operations/s)" and ax.get_xlabel() == "cores"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    # modify: published at 32 cores, not measured here
    assert labels == ["create", "delete", "modify", "measured (solid)", "published (hollow)", "accepted (1000–3000)"]

    ax = plots.claim_plot(claim, validator(cores=(1, 2, 4)), ax=plt.figure().subplots())
    assert not [p for p in ax.patches if p.get_height() > 0]  # nothing measured at 32 cores: no band
    assert "accepted (1000–3000)" not in [t.get_text() for t in ax.get_legend().get_texts()]


def test_a_whole_plot_band_follows_the_measured_points():
    measured = pd.DataFrame({"op": ["a", "b"], "v": [2.0, 5.0]})
    ax = plots.overlay(measured, x="op", y="v", band=(1.0, 4.0), band_label="ok", ax=plt.figure().subplots())
    boxes = sorted((p.get_bbox().x0, p.get_bbox().y0, p.get_bbox().y1) for p in ax.patches)
    assert [b[1:] for b in boxes] == [(1.0, 4.0), (1.0, 4.0)] and boxes[0][0] < 0 < 1 < boxes[1][0] + 1


def test_several_runs_overlay_as_series_of_their_own_style():
    claim = rb.claim("aardvark/validator-throughput")
    a, b = validator(), validator(cores=(1, 2, 4, 8))
    b["mean_ops_per_s"] *= 1.3
    fig = rb.plot(claim, {"node1, 3 May": a, "node2, 9 May": b})
    (ax,) = fig.axes
    solid = points(ax, filled=True)
    assert len(solid) == 4  # two ops × two runs
    assert len({marker for _, marker in solid}) == 2  # a marker per run
    assert sorted(len(v) for v in solid.values()) == [4, 4, 6, 6]
    assert sorted(len(ln.get_xdata()) for ln in ax.lines) == [4, 4, 6, 6]  # the mean line of each op in each run
    legend = ax.get_legend()
    labels = [t.get_text() for t in legend.get_texts()]
    styles = {t.get_text(): (h.get_marker(), h.get_linestyle())
              for t, h in zip(legend.get_texts(), legend.legend_handles) if hasattr(h, "get_marker")}
    assert styles["node1, 3 May (solid)"] != styles["node2, 9 May (solid)"]
    assert "node1, 3 May (solid)" in labels and "node2, 9 May (solid)" in labels and "published (hollow)" in labels
    with pytest.raises(ValueError, match="published"):
        rb.plot(claim, {"published": a})


def test_nothing_measured_no_legend_no_warning_and_no_empty_unit_axis():
    claim = rb.claim("aardvark/validator-throughput")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="jupyter_client")
        fig = rb.plot(claim, pd.DataFrame())
    (ax,) = fig.axes
    assert ax.get_legend() is None and not fig.legends
    assert plots.NOT_RUN in [t.get_text() for t in ax.texts]
    assert points(ax, filled=False) and not points(ax, filled=True)  # the published values still show
    assert not [p for p in ax.patches if p.get_height() > 0]

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ax = plots.overlay(pd.DataFrame(), None, x="a", y="b", ylabel="b (s)", ax=plt.figure().subplots())
    assert ax.get_legend() is None and list(ax.get_yticks()) == [] and ax.get_ylabel() == "b (s)"


def test_categories_in_order_with_published_beside_the_measured_of_its_hue():
    measured = pd.DataFrame({"op": ["delete", "create", "delete", "create"], "sys": ["x", "x", "y", "y"],
                             "v": [1.0, 2.0, 3.0, 4.0]})
    published = pd.DataFrame({"op": ["create"], "sys": ["y"], "v": [4.5]})
    ax = plots.overlay(measured, published, x="op", y="v", hue="sys", order=["create", "delete"], logy=True,
                       ax=plt.figure().subplots())
    assert [t.get_text() for t in ax.get_xticklabels()] == ["create", "delete"] and is_log(ax.yaxis)
    (hollow,) = points(ax, filled=False).values()
    created_y = [xy for v in points(ax, filled=True).values() for xy in v if xy[1] == 4.0]
    assert hollow[0][0] == pytest.approx(created_y[0][0]) and 0 < created_y[0][0] < 0.5  # dodged beside x's


def test_facets_need_a_figure_and_rows_without_a_facet_value_go_everywhere():
    measured = pd.DataFrame({"n": [1, 2, 1, 2], "w": ["A", "A", "B", "B"], "v": [1.0, 2.0, 3.0, 4.0]})
    with pytest.raises(ValueError, match="on="):
        plots.overlay(measured, x="n", y="v", col="w", ax=plt.figure().subplots())
    published = pd.DataFrame({"n": [2], "v": [2.5]})  # no w: about every panel
    axes = plots.overlay(measured, published, x="n", y="v", col="w", title="T")
    assert len(axes) == 2 and [ys(points(ax, filled=False)) for ax in axes] == [[2.5], [2.5]]
    assert axes[0].figure.get_suptitle() == "T"


def test_the_plot_spec_schema_takes_facets_and_names_an_unknown_key(tmp_path, root):
    import yaml
    from reprobook.core.config import load_paper
    from reprobook.errors import ConfigError
    spec = yaml.safe_load((root / "configs/papers/verus.yaml").read_text())
    plot = next(c for c in spec["claims"] if c["id"] == "node-replication")["plot"][0]
    assert plot["col"] == "write_pct" and plot["sharey"] is False
    import shutil
    shutil.copytree(root / "configs/patches", tmp_path / "configs/patches")  # the recorded patches it names
    path = tmp_path / "configs/papers/verus.yaml"
    path.parent.mkdir(parents=True)
    plot.update(row="system", wrap=2)
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    assert load_paper(path).claims["node-replication"].plots[0]["row"] == "system"
    plot["colour"] = "system"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    with pytest.raises(ConfigError, match="colour"):
        load_paper(path)


def test_runs_without_a_hue_take_a_colour_each_and_a_table_without_the_hue_still_plots():
    a = pd.DataFrame({"n": [1, 2, 4], "v": [1.0, 2.0, 4.0]})
    ax = plots.overlay({"A": a, "B": a.assign(v=a["v"] * 2)}, x="n", y="v", logx=True, ax=plt.figure().subplots())
    assert len({colour for colour, _ in points(ax, filled=True)}) == 2
    handles = {t.get_text(): h for t, h in zip(ax.get_legend().get_texts(), ax.get_legend().legend_handles)}
    assert handles["A (solid)"].get_color() != handles["B (solid)"].get_color()
    published = pd.DataFrame({"n": [2], "sys": ["x"], "v": [2.5]})  # the hue is only in the published table
    ax = plots.overlay(a, published, x="n", y="v", hue="sys", ax=plt.figure().subplots())
    assert ys(points(ax, filled=True)) == [1.0, 2.0, 4.0] and ys(points(ax, filled=False)) == [2.5]


def _bars(ax) -> list[np.ndarray]:
    from matplotlib.collections import LineCollection
    return [seg for c in ax.collections if isinstance(c, LineCollection) for seg in c.get_segments()]


def test_a_point_measured_several_times_shows_each_trial_and_the_interval_of_their_statistic():
    """Three trials at x=1 and x=2, one at x=4: a bar at the first two (the seeded bootstrap interval of the
    mean, within the trials' range and around their mean), none where one trial gives no spread."""
    measured = pd.DataFrame({"x": [1, 1, 1, 2, 2, 2, 4], "y": [9.0, 10.0, 11.0, 19.0, 20.0, 24.0, 40.0]})
    ax = plots.overlay(measured, None, x="x", y="y")
    bars = sorted(_bars(ax), key=lambda s: s[0][0])
    assert [float(s[0][0]) for s in bars] == [1.0, 2.0]
    for seg, trials in zip(bars, ([9, 10, 11], [19, 20, 24])):
        lo, hi = sorted(float(v) for v in seg[:, 1])
        assert min(trials) <= lo < np.mean(trials) < hi <= max(trials)
    again = sorted(_bars(plots.overlay(measured, None, x="x", y="y", ax=plt.figure().gca())), key=lambda s: s[0][0])
    assert all(np.array_equal(a, b) for a, b in zip(bars, again))   # seeded: the same page on every build
    assert any("95 % interval of the trials' mean" == t.get_text() for t in ax.get_legend().get_texts())
    single = plots.overlay(measured.drop_duplicates("x"), None, x="x", y="y", ax=plt.figure().gca())
    assert _bars(single) == [] and not any("interval" in t.get_text() for t in single.get_legend().get_texts())


def test_a_loaders_trials_are_plotted_when_they_hold_the_plotted_columns():
    """A summary table whose trials are in attrs (as Aardvark's and Pesto's loaders keep them): the plot
    draws every trial and the interval of the loader's statistic; a plot of a column only the summary has
    draws the summary."""
    trials = [{"n": n, "trial": t, "rate": r} for n, rates in ((1, [90.0, 100.0, 110.0]), (2, [180.0, 200.0, 220.0]))
              for t, r in enumerate(rates)]
    summary = pd.DataFrame({"n": [1, 2], "rate": [float(np.mean([90, 100, 110])), 200.0], "only_here": [1.0, 2.0]})
    summary.attrs["trials"] = {"column": "trial", "statistic": "mean", "rows": trials}
    data, stat = plots._with_trials(summary, {"n", "rate"})
    assert len(data) == 6 and stat == "mean"
    data, _ = plots._with_trials(summary, {"n", "only_here"})
    assert data is summary
    ax = plots.overlay(*[plots._with_trials(summary, {"n", "rate"})[0]], None, x="n", y="rate", statistic=stat)
    assert len(_bars(ax)) == 2
