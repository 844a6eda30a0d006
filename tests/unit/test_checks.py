"""Checks: each kind holds, fails and is inconclusive on data built to make it so, with the margin stated."""

from __future__ import annotations

import pandas as pd
import pytest

from reprobook.core.checks import Verdict, check_claim, evaluate_check
from reprobook.core.config import CheckSpec, PublishedNumber, load_project


def spec(kind, value="v", **opts):
    return CheckSpec(kind=kind, what=f"a {kind} check", value=value, options=opts)


PUB = {"p": PublishedNumber("p", 100.0, "ops/s", "Table 9", "exact", labels={"op": "m"})}
DATA = pd.DataFrame({"op": ["m", "m", "d", "d"], "cores": [1, 32, 1, 32], "v": [10.0, 95.0, 5.0, 40.0],
                     "w": [10.5, 90.0, 5.0, 40.0]})


@pytest.mark.parametrize("check, verdict, margin", [
    (spec("at_least", min=4, select={"cores": 1}), Verdict.HOLDS, 0.25),          # 5 vs 4
    (spec("at_least", min=6, select={"cores": 1}), Verdict.FAILS, -1 / 6),        # 5 vs 6
    (spec("at_most", max=100), Verdict.HOLDS, 0.05),                               # 95 vs 100
    (spec("in_range", min=30, max=90, select={"cores": 32}), Verdict.FAILS, -95 / 90 + 1),
    (spec("close_to", target={"published": "p"}, rel_tol=0.1, select={"op": "m", "cores": 32}), Verdict.HOLDS, 0.05),
    (spec("close_to", target_published=True, rel_tol=0.1), Verdict.FAILS, 0.1 - (1 - 52.5 / 100)),
    (spec("within_factor", target=50, factor=2, select={"op": "d", "cores": 32}), Verdict.HOLDS, 2 / 1.25 - 1),
    (spec("within_factor", target_rows={"op": "m"}, factor=2, by=["cores"]), Verdict.FAILS, 2 / (95 / 40) - 1),
    (spec("close_to", target_column="w", rel_tol=0.06, by=["op", "cores"]), Verdict.HOLDS, 0.06 - (95 / 90 - 1)),
    (spec("close_to", target_column="w", rel_tol=0.05, by=["op", "cores"]), Verdict.FAILS, 0.05 - (95 / 90 - 1)),
    (spec("rank_order", across="op", order=["d", "m"], by=["cores"]), Verdict.HOLDS, 10 / 5 - 1),
    (spec("rank_order", across="op", order=["m", "d"], by=["cores"]), Verdict.FAILS, 40 / 95 - 1),
    (spec("grows_with", x="cores", by=["op"], min_gain=8), Verdict.HOLDS, 8 / 8 - 1),
    (spec("grows_with", x="cores", by=["op"], min_gain=9), Verdict.FAILS, 8 / 9 - 1),
])
def test_kinds_margin_and_verdict(check, verdict, margin):
    r = evaluate_check(check, DATA, PUB)
    assert r.verdict is verdict, r.reason
    assert r.margin == pytest.approx(margin)
    assert not r.evidence.empty and "margin" in r.evidence
    assert f"{abs(margin) * 100:.1f}" in r.reason or f"{margin * 100:+.1f}" in r.reason


@pytest.mark.parametrize("check, words", [
    (spec("at_least", value="nope", min=1), "no column 'nope'"),
    (spec("at_least", min=1, select={"cores": 64}), "no measured rows match"),
    (spec("rank_order", across="op", order=["m", "x"]), "no rows for op=x"),
    (spec("grows_with", x="cores", select={"cores": 32}), "only one value of cores"),
    (spec("within_factor", target_rows={"system": "edrax"}, factor=2), "no column 'system'"),
    (spec("close_to", target_column="x", rel_tol=0.1), "no column 'x'"),
])
def test_inconclusive_when_data_cannot_answer(check, words):
    r = evaluate_check(check, DATA, PUB)
    assert r.verdict is Verdict.INCONCLUSIVE and words in r.reason


def test_missing_values_are_inconclusive_not_holding():
    data = DATA.assign(v=[10.0, None, 5.0, 40.0])
    assert evaluate_check(spec("at_least", min=1), data, PUB).verdict is Verdict.INCONCLUSIVE


def test_claim_aggregation_and_not_run(root):
    claim = load_project(root).claim("aardvark/archive-throughput")
    assert check_claim(claim, None, source="x").verdict is Verdict.NOT_RUN
    assert check_claim(claim, pd.DataFrame(), source="x").verdict is Verdict.NOT_RUN
    ok = pd.DataFrame({"op": ["delete", "modify", "create"], "cores": 1, "ops_per_s_per_core": [12.0, 24.0, 24.0]})
    v = check_claim(claim, ok, source="s")
    assert v.verdict is Verdict.HOLDS and v.margin == pytest.approx(1.5 / 1.2 - 1)
    slow = ok.assign(ops_per_s_per_core=[6.0, 24.0, 24.0])  # deletions at 6/s: a factor 1.67 below 10
    v = check_claim(claim, slow, source="s")
    assert v.verdict is Verdict.FAILS and "delete" in v.reason and v.margin < 0
    partial = ok[ok["op"] == "banana"].pipe(lambda d: pd.concat([d, pd.DataFrame({"op": ["x"], "cores": [1],
                                                                                  "ops_per_s_per_core": [1.0]})]))
    assert check_claim(claim, partial, source="s").verdict is Verdict.INCONCLUSIVE


@pytest.mark.parametrize("minimum, words", [
    (4, "5 vs required >= 4 — closest to a bound by 25.0%"),       # near the bound: the room, in per cent
    (2, "5 vs required >= 2 — 2.5 times the lower bound"),          # far above it: a ratio
    (0.004, "5 vs required >= 0.004 — 1,250 times the lower bound"),
])
def test_bounds_reason_states_the_room_as_per_cent_near_the_bound_and_as_a_ratio_far_above_it(minimum, words):
    r = evaluate_check(spec("at_least", min=minimum, select={"cores": 1, "op": "d"}), DATA, PUB)
    assert r.verdict is Verdict.HOLDS and words in r.reason, r.reason


@pytest.mark.parametrize("column", [
    pd.Series([1, 2, 3, 2]), pd.Series([1.0, float("nan"), 2.5]), pd.Series(["1", "a", "1.0", "2"]),
    pd.Series([True, False, True]), pd.Series([True, 1, "1", 1.0], dtype=object), pd.Series(["x", None, "y"]),
    pd.Series(pd.array([1, None, 3], dtype="Int64")), pd.Series(["a", "b"], dtype="string"),
    pd.Series([float("nan")] * 2)], ids=lambda c: str(c.dtype) + ":" + ",".join(map(str, c)))
def test_labels_match_alike_by_distinct_value_and_row_by_row(column):
    """`matches` works out each distinct value's label once where a column holds one kind; the answer is the one
    row by row gives (1, 1.0 and "1" alike; True not 1; "nan" only NaN)."""
    from reprobook.core.checks import _key, matches
    for want in (1, "1", 1.0, [1, 2], "a", "True", True, "nan", 2.5, "x", [3, "b"]):
        wanted = {_key(w) for w in (want if isinstance(want, list) else [want])}
        assert matches(column, want).tolist() == column.map(_key).isin(wanted).tolist(), want
