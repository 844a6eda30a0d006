"""Checks at their edges: bounds of 0, negative values, zero denominators and targets, NaN rows, groups missing a
side, and a claim's own point that the run never reached (issues 26 and 32)."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from reprobook.core.checks import Verdict, bound_margin, evaluate_check, room_words
from reprobook.core.config import CheckSpec, PublishedNumber

finite = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False)
bound = st.one_of(st.just(0.0), finite)


def spec(kind, value="v", **opts):
    return CheckSpec(kind=kind, what=f"a {kind} check", value=value, options=opts)


# --------------------------------------------------------------------------- bounds mean what they say

@given(x=finite, lo=bound)
def test_a_lower_bound_holds_exactly_when_the_value_reaches_it(x, lo):
    assert (bound_margin(x, lo, None) >= 0) == (x >= lo)


@given(x=finite, hi=bound)
def test_an_upper_bound_holds_exactly_when_the_value_stays_under_it(x, hi):
    assert (bound_margin(x, None, hi) >= 0) == (x <= hi)


@given(x=finite, a=bound, b=bound)
@example(x=-5e-324, a=0.0, b=1e9)   # a miss that underflows to -0.0 when divided by the scale
def test_a_range_holds_exactly_when_the_value_is_inside(x, a, b):
    lo, hi = min(a, b), max(a, b)
    assert (bound_margin(x, lo, hi) >= 0) == (lo <= x <= hi)


@given(x=finite, lo=st.one_of(st.none(), bound), hi=st.one_of(st.none(), bound))
@settings(max_examples=300)
@example(x=-1.0, lo=None, hi=5e-324)      # found by CI: only an upper bound, the value far under it
@example(x=1.0, lo=-5e-324, hi=None)
def test_the_words_never_say_inf_nor_hundreds_of_per_cent(x, lo, hi):
    if lo is None and hi is None:
        return
    words = room_words(x, lo, hi)
    assert "inf" not in words and "nan" not in words, words
    pct = re.search(r"([0-9][0-9,.]*)%", words)
    assert pct is None or float(pct.group(1).replace(",", "")) < 100, words


@pytest.mark.parametrize("value, lo, hi, words", [
    (-0.5, 0, None, "below the lower bound 0"),
    (0.0, 0, None, "exactly at the bound 0"),
    (3.0, None, 0, "above the upper bound 0"),
    (0.3, 1, None, "0.3 times the lower bound"),
    (12.0, None, 1, "12 times the upper bound"),
    (0.0852, 0.0001, None, "852 times the lower bound"),
    (0.9, 1, None, "outside by 10.0%"),
    (-3.0, -5, None, "closest to a bound by 40.0%"),     # a negative bound keeps its sense: -3 is above -5
    (-30.0, -5, None, "25 below the lower bound"),
    (-2.0, 1, None, "below the lower bound 1"),           # across a change of sign: placed, not a ratio
])
def test_the_room_in_words(value, lo, hi, words):
    assert room_words(value, lo, hi) == words


def test_a_bound_of_zero_is_a_bound():
    data = pd.DataFrame({"op": ["a", "b"], "v": [0.4, -0.2]})
    r = evaluate_check(spec("at_least", min=0), data, {})
    assert r.verdict is Verdict.FAILS and "op=b" not in r.reason and "-0.2 vs required >= 0 — below the lower bound 0" \
        in r.reason, r.reason
    r = evaluate_check(spec("at_most", max=0), data.assign(v=[-0.4, 0.0]), {})
    assert r.verdict is Verdict.HOLDS and "exactly at the bound 0" in r.reason and math.isfinite(r.margin)
    r = evaluate_check(spec("in_range", min=0, max=1), data.assign(v=[0.5, 1.4]), {})
    assert r.verdict is Verdict.FAILS and "outside by 40.0%" in r.reason
    r = evaluate_check(spec("in_range", min=0, max=1), data.assign(v=[0.5, 1.5]), {})
    assert r.verdict is Verdict.FAILS and "1.5 times the upper bound" in r.reason


def test_nan_rows_and_empty_groups_are_inconclusive():
    data = pd.DataFrame({"g": ["a", "b"], "v": [1.0, math.nan]})
    r = evaluate_check(spec("at_least", min=0), data, {})
    assert r.verdict is Verdict.INCONCLUSIVE and "no value" in r.reason
    r = evaluate_check(spec("at_least", min=0, select={"g": "c"}), data, {})
    assert r.verdict is Verdict.INCONCLUSIVE and "the run has g a, b; the claim is about g=c" in r.reason


# --------------------------------------------------------------------------- zero denominators and targets

def test_a_zero_denominator_leaves_its_group_unjudged_and_says_so():
    data = pd.DataFrame({"w": ["x", "x", "y", "y"], "s": ["n", "d", "n", "d"], "v": [3.0, 0.0, 4.0, 2.0]})
    r = evaluate_check(spec("ratio", numerator={"s": "n"}, denominator={"s": "d"}, by=["w"], min=1), data, {})
    assert r.verdict is Verdict.INCONCLUSIVE and "w=x: the denominator (s=d) is 0" in r.reason, r.reason


def test_zero_targets_and_factors_across_signs_are_not_judged():
    data = pd.DataFrame({"v": [1.0], "t": [0.0]})
    r = evaluate_check(spec("close_to", target_column="t", rel_tol=0.1), data, {})
    assert r.verdict is Verdict.INCONCLUSIVE and "the target is 0" in r.reason
    assert evaluate_check(spec("close_to", target_column="t", rel_tol=0.1), data.assign(v=0.0), {}).verdict \
        is Verdict.HOLDS
    r = evaluate_check(spec("within_factor", target=-2, factor=2), data, {})
    assert r.verdict is Verdict.INCONCLUSIVE and "not a factor apart" in r.reason


def test_a_gain_from_zero_is_not_judged():
    data = pd.DataFrame({"x": [1, 2], "v": [0.0, 5.0]})
    r = evaluate_check(spec("grows_with", x="x", min_gain=2), data, {})
    assert r.verdict is Verdict.INCONCLUSIVE and "a gain needs a positive starting value" in r.reason


# --------------------------------------------------------------------------- partial groups

RATIOS = pd.DataFrame({"w": ["x", "x", "y", "z", "z"], "s": ["n", "d", "n", "n", "d"],
                       "v": [3.0, 1.0, 4.0, 1.0, 1.0]})


def test_a_ratio_judges_every_group_it_can_and_names_those_it_cannot():
    r = evaluate_check(spec("ratio", numerator={"s": "n"}, denominator={"s": "d"}, by=["w"], min=0.5), RATIOS, {})
    assert r.verdict is Verdict.INCONCLUSIVE and r.margin is None
    assert "the groups judged hold" in r.reason and "not judged: w=y: no measured rows for {'s': 'd'}" in r.reason
    assert set(r.evidence["w"]) == {"x", "z"}
    # a group that fails still fails the check, the unjudged one listed beside it
    r = evaluate_check(spec("ratio", numerator={"s": "n"}, denominator={"s": "d"}, by=["w"], min=2), RATIOS, {})
    assert r.verdict is Verdict.FAILS and "w=z" in r.reason and "not judged: w=y" in r.reason


# --------------------------------------------------------------------------- the claim's own point

SMALL = pd.DataFrame({"op": ["create", "create", "delete", "delete"], "cores": [1, 2, 1, 2],
                      "v": [13.29, 12.77, 10.0, 30.0]})
PUB = {"p": PublishedNumber("p", 2000.0, "ops/s", "Fig 7", "exact", labels={"op": "create", "cores": 32})}


@pytest.mark.parametrize("check", [
    spec("grows_with", x="cores", **{"from": 1, "to": 32}, by=["op"], min_gain=2),
    spec("at_least", min=1000, select={"cores": 32}),
    spec("in_range", min=1000, max=3000, select={"cores": 32}, by=["op"]),
    spec("close_to", target_published=True, rel_tol=0.1),
    spec("close_to", target=2000, rel_tol=0.1, select={"cores": 32}),
], ids=lambda s: s.kind)
def test_a_check_about_a_point_the_run_never_reached_is_inconclusive_naming_both(check):
    r = evaluate_check(check, SMALL, PUB)
    assert r.verdict is Verdict.INCONCLUSIVE, r.reason
    assert "the run has cores 1, 2; the claim is about cores=32" in r.reason, r.reason


def test_grows_with_judges_its_points_not_the_ends_of_the_run():
    data = pd.concat([SMALL, pd.DataFrame({"op": ["create", "delete"], "cores": [32, 32], "v": [40.0, 20.0]})])
    r = evaluate_check(spec("grows_with", x="cores", **{"from": 1, "to": 2}, by=["op"], min_gain=2), data, PUB)
    assert r.verdict is Verdict.FAILS and "op=create: 13.29 at cores=1 to 12.77 at cores=2" in r.reason
    r = evaluate_check(spec("grows_with", x="cores", **{"from": 1, "to": 32}, by=["op"], min_gain=2), data, PUB)
    assert r.verdict is Verdict.HOLDS and "delete" in r.reason and "2 times the lower bound" not in r.reason


# --------------------------------------------------------------------------- repeated trials (issue 26)

import itertools  # noqa: E402

import numpy as np  # noqa: E402


def _trials(values_by_point):
    return pd.DataFrame([{"op": op, "trial": i, "v": x} for op, xs in values_by_point.items() for i, x in enumerate(xs)])


def _exact_margins(values_by_point, check):
    """Every resample of every point's trials (with replacement, order kept as drawn), judged: the exact bootstrap
    distribution of the check's margin, each outcome with its probability."""
    points = list(values_by_point)
    choices = [list(itertools.product(values_by_point[p], repeat=len(values_by_point[p]))) for p in points]
    out = []
    for combo in itertools.product(*choices):
        data = pd.DataFrame([{"op": p, "v": float(np.mean(xs))} for p, xs in zip(points, combo)])
        out.append(evaluate_check(check, data, {}).margin)
    return np.array(out, dtype=float)


@pytest.mark.parametrize("values, minimum, verdict", [
    ({"a": [10.0, 11.0, 12.0], "b": [20.0, 21.0]}, 9.0, Verdict.HOLDS),      # every resample holds
    ({"a": [10.0, 11.0, 12.0], "b": [20.0, 21.0]}, 13.0, Verdict.FAILS),     # every resample fails
    ({"a": [8.0, 10.0, 14.0], "b": [20.0, 21.0]}, 10.5, Verdict.INCONCLUSIVE),
])
def test_an_interval_verdict_agrees_with_brute_force_resampling(values, minimum, verdict):
    plain = spec("at_least", min=minimum)
    exact = _exact_margins(values, plain)
    # the normal bootstrap interval, exactly: the margin on the data +- 1.96 standard deviations of every resample's
    centre = evaluate_check(plain, pd.DataFrame([{"op": p, "v": float(np.mean(xs))} for p, xs in values.items()]),
                            {}).margin
    lo, hi = centre - 1.959964 * exact.std(), centre + 1.959964 * exact.std()
    r = evaluate_check(spec("at_least", min=minimum, trials="trial"), _trials(values), {}, resamples=500)
    assert r.verdict is verdict, r.reason
    assert r.trials == 2 and r.interval is not None
    width = exact.max() - exact.min()
    assert r.interval[0] == pytest.approx(lo, abs=0.1 * width) and r.interval[1] == pytest.approx(hi, abs=0.1 * width)
    expected = Verdict.HOLDS if lo >= 0 else Verdict.FAILS if hi < 0 else Verdict.INCONCLUSIVE
    assert expected is verdict
    if verdict is Verdict.INCONCLUSIVE:
        assert "spans 0" in r.reason and "trials per point would likely settle it" in r.reason


def test_one_outlier_trial_makes_a_mean_inconclusive_not_a_flip_and_a_median_sees_through_it():
    values = {"a": [1.13, 1.12, 1.14, 1.13, 1.12, 1.14, 1.13, 1.13, 3.0]}   # one noisy trial on a shared machine
    data = _trials(values)
    mean = evaluate_check(spec("at_most", max=1.3, trials="trial"), data, {})
    assert mean.verdict is Verdict.INCONCLUSIVE and "95 % interval" in mean.reason
    median = evaluate_check(spec("at_most", max=1.3, trials="trial", statistic="median"), data, {})
    assert median.verdict is Verdict.HOLDS and "the median of 9 trials per point" in median.reason


def test_one_trial_says_no_spread_could_be_measured_and_a_page_is_reproducible():
    r = evaluate_check(spec("at_least", min=1, trials="trial"), _trials({"a": [2.0], "b": [3.0]}), {})
    assert r.verdict is Verdict.HOLDS and "no spread could be measured" in r.reason and r.interval is None
    data = _trials({"a": [8.0, 10.0, 14.0, 9.0], "b": [20.0, 21.0, 19.0, 18.0]})
    one = evaluate_check(spec("at_least", min=10.5, trials="trial"), data, {})
    two = evaluate_check(spec("at_least", min=10.5, trials="trial"), data, {})
    assert one.interval == two.interval and one.reason == two.reason


def test_trials_work_for_every_kind_that_compares_points():
    data = pd.DataFrame([{"sys": s, "n": n, "trial": t, "v": base * n + t * 0.1}
                         for s, base in (("x", 1.0), ("y", 2.0)) for n in (1, 4) for t in range(4)])
    for check in (spec("ratio", numerator={"sys": "y"}, denominator={"sys": "x"}, by=["n"], min=1.5, trials="trial"),
                  spec("grows_with", x="n", by=["sys"], min_gain=3, trials="trial"),
                  spec("within_factor", target_rows={"sys": "x"}, by=["n"], factor=3, trials="trial"),
                  spec("rank_order", across="sys", order=["x", "y"], by=["n"], trials="trial", statistic="geomean")):
        r = evaluate_check(check, data, {})
        assert r.verdict is Verdict.HOLDS and r.interval is not None and r.trials == 4, (check.kind, r.reason)


def test_an_aggregate_over_groups_is_judged_as_one_number_with_each_group_in_the_evidence():
    data = pd.DataFrame([{"bench": b, "tool": t, "v": v} for b, (x, y) in
                         {"p": (1.0, 2.0), "q": (1.0, 1.1), "r": (1.0, 1.5)}.items() for t, v in (("new", x), ("old", y))])
    check = spec("ratio", numerator={"tool": "old"}, denominator={"tool": "new"}, by=["bench"], min=1.2,
                 aggregate="geomean")
    r = evaluate_check(check, data, {})
    geo = (2.0 * 1.1 * 1.5) ** (1 / 3)
    assert r.verdict is Verdict.HOLDS and r.margin == pytest.approx(geo / 1.2 - 1)
    assert f"the geometric mean of tool=old / tool=new over 3 group(s) is {geo:.3g}" in r.reason
    assert list(r.evidence["bench"]) == ["p", "q", "r"] and r.evidence["ratio"].tolist() == pytest.approx([2, 1.1, 1.5])
    # each group on its own would fail at q (1.1 < 1.2): the aggregate is a different claim, said as such
    assert evaluate_check(spec("ratio", numerator={"tool": "old"}, denominator={"tool": "new"}, by=["bench"],
                               min=1.2), data, {}).verdict is Verdict.FAILS


def test_throughput_of_equal_trials_is_their_harmonic_mean_total_work_over_total_time():
    seconds = np.array([349.0, 340.0, 360.0])
    data = _trials({"a": list(100000 / seconds)})
    r = evaluate_check(spec("at_least", min=1, trials="trial", statistic="hmean"), data, {})
    assert f"{100000 / seconds.mean():.4g} vs required" in r.reason and "the hmean of 3 trials" in r.reason
    data.attrs["trial_statistic"] = "hmean"          # a loader may say which statistic its trials are about
    assert evaluate_check(spec("at_least", min=1, trials="trial"), data, {}).reason == r.reason


# --------------------------------------------------------------------------- groups with nothing to compare with

def test_a_group_without_target_rows_is_named_never_dropped():
    data = pd.DataFrame({"system": ["a", "a", "a", "b", "b"], "op": ["x", "y", "z", "x", "y"],
                         "v": [10.0, 20.0, 30.0, 11.0, 19.0]})
    base = dict(select={"system": "a"}, target_rows={"system": "b"}, by=["op"])
    for kind, opts in (("within_factor", {"factor": 2}), ("close_to", {"rel_tol": 0.2})):
        r = evaluate_check(spec(kind, **base, **opts), data, {})
        assert r.verdict is Verdict.INCONCLUSIVE and "op=z: no rows of system=b to compare with" in r.reason, r.reason
        r = evaluate_check(spec(kind, **base, **opts, only_paired=True), data, {})
        assert r.verdict is Verdict.HOLDS and "not compared (no rows of system=b): op=z" in r.reason, r.reason
        assert set(r.evidence["op"]) == {"x", "y"}
    # only_paired does not hide a failure among the groups it compares
    r = evaluate_check(spec("within_factor", **base, factor=1.05, only_paired=True), data, {})
    assert r.verdict is Verdict.FAILS and "op=z" in r.reason


# --------------------------------------------------------------------------- bounds from other readings of a row

def test_a_bound_can_be_another_column_of_the_same_row_with_slack():
    """The server's count of one run lies between what its clients printed and that plus their estimated cool-down:
    the live point-scan run that failed a 5 % closeness test under load (6,178 counted against 6,627 estimated)."""
    data = pd.DataFrame({"point": ["a", "b"], "counted": [6178.0, 8668.0], "printed": [5400.0, 7900.0],
                         "whole": [6627.0, 8773.0]})
    s = spec("in_range", value="counted", by=["point"], min={"column": "printed"}, max={"column": "whole"}, slack=0.05)
    r = evaluate_check(s, data, {})
    assert r.verdict == Verdict.HOLDS, r.reason
    assert "(printed)" in r.reason and "(whole)" in r.reason and "widened by 5%" in r.reason
    over = evaluate_check(s, data.assign(counted=[6178.0, 9300.0]), {})   # 9,300 > 8,773 x 1.05 = 9,212
    assert over.verdict == Verdict.FAILS and over.reason.startswith("point=b")
    assert over.margin == pytest.approx((8773 * 1.05 - 9300) / (8773 * 1.05))
    under = evaluate_check(s, data.assign(counted=[5000.0, 8668.0]), {})   # 5,000 < 5,400 x 0.95 = 5,130
    assert under.verdict == Verdict.FAILS and "point=a" in under.reason


def test_a_row_without_its_bound_is_not_judged_and_says_so():
    data = pd.DataFrame({"point": ["a"], "counted": [6178.0], "printed": [math.nan], "whole": [6627.0]})
    r = evaluate_check(spec("in_range", value="counted", by=["point"], min={"column": "printed"},
                            max={"column": "whole"}), data, {})
    assert r.verdict == Verdict.INCONCLUSIVE and "no printed to bound it" in r.reason
    missing = evaluate_check(spec("at_least", value="counted", min={"column": "nowhere"}), data, {})
    assert missing.verdict == Verdict.INCONCLUSIVE and "no column 'nowhere'" in missing.reason
