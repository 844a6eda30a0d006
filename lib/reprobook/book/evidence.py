"""The evidence under a claim's verdict, as a reader wants it: the plot, a compact table, the details folded.

`reprobook.api.evidence` shows it in a notebook; on the website the book lifts the whole block under the verdict
(`reprobook.book.sphinxext`, between `START` and `END`). What it holds:

- the plot of the run against the paper (the claim's own, `reprobook.book.plots.claim_figure`, or the page's);
- one table of what the checks compared: per check a heading row (its words and its verdict), then per point
  the point, the measured value, what it was compared with, the margin and a mark (✓ within, ✗ outside).
  Columns are named by the loader's words with their units (`reprobook.core.loaders.column_words`), numbers
  are rounded to what their spread supports (`rounded`), and the measured value is the statistic the checks
  judge (`reprobook.core.checks.statistic_of`), said under the table;
- folded: each check's reason in full, where it was judged, and its rows.

A partial run (a sweep whose later points failed, `reprobook.sources.from_run`) is said above the table, with the
points that failed and why. Everything from a run is escaped: it is shown as text, never as markup.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any, Mapping

import numpy as np
import pandas as pd

from reprobook.core.checks import STATISTIC_WORDS, CheckResult, ClaimVerdict, Verdict, margin_words, statistic_of
from reprobook.core.loaders import column_heading, column_words

START, END = "<!-- reprobook-evidence -->", "<!-- /reprobook-evidence -->"
"""Around the evidence block: the book moves it under the verdict."""

MARKS = {True: "✓", False: "✗"}
VERDICT_MARKS = {"holds": "✓", "fails": "✗", "inconclusive": "?", "not run": "–"}
_INTERNAL = {"label", "published", "precision", "unpaired", "ok", "margin", "target", "ratio", "min", "max",
             "lower", "higher", "numerator", "denominator", "count", "values", "monotone", "gain", "series"}


def significant(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits as a reader writes it: thousands grouped, no exponent below 1e15,
    no trailing zeros after the point (``1,310``, ``0.0708``, ``12.4``)."""
    if value is None or isinstance(value, (bool, np.bool_)):
        return "—" if value is None else ("yes" if value else "no")
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(v):
        return "—"
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    if v == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(v)))
    return _grouped(round(v, digits - 1 - magnitude), max(0, digits - 1 - magnitude))


def as_given(value: float) -> str:
    """A published number as the paper gives it (no digit added or dropped), thousands grouped."""
    v = float(value)
    return f"{v:,.10g}".replace("-", "−") if abs(v) < 1e15 else f"{v:g}"


def _grouped(v: float, decimals: int) -> str:
    text = f"{v:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text.replace("-", "−")


def rounded(value: float, spread: float | None = None) -> str:
    """``value`` rounded to what its spread supports: its last digit at the spread's first one (2 to 4 significant
    digits), or 3 significant digits when no spread is known. ``spread`` is a half-width (a standard error, half a
    95 % interval), in the value's units.

    >>> rounded(1310.566667), rounded(1310.566667, 40), rounded(0.999669), rounded(12.44, 0.1)
    ('1,310', '1,310', '1', '12.4')
    """
    if spread is None or not (isinstance(spread, (int, float)) and math.isfinite(spread) and spread > 0):
        return significant(value, 3)
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(v) or v == 0:
        return significant(v, 3)
    digits = math.floor(math.log10(abs(v))) - math.floor(math.log10(spread)) + 1
    return significant(v, min(4, max(2, digits)))


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _value(v: Any, spread: float | None = None, unit: str = "") -> str:
    if not _is_number(v):
        return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
    text = rounded(v, spread) if isinstance(v, (float, np.floating)) else f"{int(v):,}"
    return f"{text}\u00a0{unit}" if unit and text != "—" else text   # a number and its unit never apart


def _spread(result: CheckResult, value: float) -> float | None:
    """The half-width of a value's uncertainty: the check's interval of its (relative) margin, applied to it."""
    if result.interval is None or not _is_number(value) or not math.isfinite(float(value)):
        return None
    lo, hi = result.interval
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    return abs(float(value)) * (hi - lo) / 2 or None


def _point_columns(claim, spec, ev: pd.DataFrame) -> list[str]:
    """The columns of ``ev`` that tell its rows apart: the check's groups, the published labels, the plot's axes."""
    o = spec.options if spec is not None else {}
    named = [*(o.get("by") or ()), *(k for n in claim.published for k in n.labels),
             *(p.get(a) for p in claim.plots for a in ("x", "hue", "col", "row")),
             *(k for k, v in dict(o.get("select") or {}).items() if isinstance(v, (list, tuple)))]
    value = spec.value if spec is not None else None
    cols = [c for c in dict.fromkeys(c for c in named if c) if c in ev.columns and c != value and c not in _INTERNAL]
    if len(ev) > 1:
        cols = [c for c in cols if ev[c].nunique(dropna=False) > 1] or cols[:1]
    return cols


def _point(claim, row: pd.Series, cols: list[str]) -> str:
    parts = []
    for c in cols:
        v = row.get(c)
        if v is None or (isinstance(v, float) and math.isnan(v)) or v == "":
            continue
        label, unit = column_words(claim.loader, c)
        if _is_number(v):
            parts.append(f"{label} {_value(v, None, unit)}")
        else:
            parts.append(str(v))
    if not parts and "label" in row and str(row["label"]) not in ("", "all"):
        return str(row["label"])
    return ", ".join(parts) or "all rows"


def _bound_text(lo, hi, unit: str = "") -> str:
    u = f"\u00a0{unit}" if unit else ""
    if lo is not None and hi is not None:
        return f"{significant(lo, 4)} to {significant(hi, 4)}{u}"
    if lo is not None:
        return f"≥ {significant(lo, 4)}{u}"
    if hi is not None:
        return f"≤ {significant(hi, 4)}{u}"
    return "—"


def _ref(ref, published: Mapping) -> float | None:
    if ref is None:
        return None
    if isinstance(ref, Mapping) and "published" in ref:
        n = published.get(ref["published"])
        return n.value if n is not None else None
    if isinstance(ref, Mapping):
        return None
    return float(ref)


def _compared(claim, spec, result: CheckResult, row: pd.Series) -> tuple[str, str]:
    """(measured, compared with) of one evidence row, in words with units."""
    o = spec.options if spec is not None else {}
    v = spec.value if spec is not None else ""
    label, unit = column_words(claim.loader, v) if v else ("", "")
    published = {n.id: n for n in claim.published}
    kind = result.kind
    if kind == "rank_order" and "lower" in row:
        a, b = row.get(f"{v}_lower"), row.get(f"{v}_higher")
        return (f"{row['lower']}: {_value(a, _spread(result, a), unit)}; {row['higher']}: "
                f"{_value(b, _spread(result, b), unit)}", f"{row['lower']} below {row['higher']}")
    if kind == "ratio" and "ratio" in row:
        return (f"{_value(row['ratio'], _spread(result, row['ratio']))} ({_value(row['numerator'])} / "
                f"{_value(row['denominator'])} {unit})".replace(" )", ")"),
                "ratio " + _bound_text(_ref(o.get("min"), published), _ref(o.get("max"), published)))
    if kind == "grows_with" and "gain" in row:
        x = o.get("x", "")
        xl, xu = column_words(claim.loader, x)
        lo = o.get("min_gain", None if "max_gain" in o else 1.0)
        return (f"×{significant(row['gain'], 3)} ({_value(row.get(f'{v}_from'), None, unit)} at {xl} "
                f"{_value(row.get(f'{x}_from'), None, xu)} → {_value(row.get(f'{v}_to'), None, unit)} at {xl} "
                f"{_value(row.get(f'{x}_to'), None, xu)})",
                "gain " + _bound_text(lo, o.get("max_gain")).replace("≥ ", "≥ ×").replace("≤ ", "≤ ×"))
    if kind == "count" and "count" in row:
        return f"{int(row['count'])} distinct", _bound_text(o.get("min"), o.get("max"))
    measured = _value(row.get(v), _spread(result, row.get(v)), unit)
    if "target" in row and kind in ("close_to", "within_factor"):
        tol = (f" ±\u00a0{float(o['rel_tol']) * 100:g}\u00a0%" if kind == "close_to"
               else f", within a factor of {float(o['factor']):g}")
        if "published" in row and isinstance(row.get("published"), str) and _is_number(row["target"]):
            # the paper's number, as the paper gives it
            return measured, f"published {as_given(row['target'])}" + (f"\u00a0{unit}" if unit else "") + tol
        target = _value(row["target"], _spread(result, row["target"]), unit)   # other measured rows: rounded so
        return measured, f"{target}{tol}"
    if kind in ("at_least", "at_most", "in_range"):
        lo = row.get("min") if "min" in row else None
        hi = row.get("max") if "max" in row else None
        lo = None if lo is None or (isinstance(lo, float) and math.isnan(lo)) else lo
        hi = None if hi is None or (isinstance(hi, float) and math.isnan(hi)) else hi
        return measured, _bound_text(lo, hi, unit)
    return measured, "—"


def check_rows(claim, verdict: ClaimVerdict) -> list[dict]:
    """The compact table's rows: per check a heading (``check``, ``verdict``), then one row per point compared."""
    specs = {s.what: s for s in claim.checks}
    out = []
    for result in verdict.checks:
        spec = specs.get(result.what)
        out.append({"check": result.what, "verdict": str(result.verdict), "margin": result.margin,
                    "interval": result.interval})
        ev = result.evidence
        if ev is None or ev.empty or spec is None:
            continue
        cols = _point_columns(claim, spec, ev)
        for _, row in ev.iterrows():
            measured, against = _compared(claim, spec, result, row)
            ok = row.get("ok")
            out.append({"point": _point(claim, row, cols), "measured": measured, "compared": against,
                        "margin": row.get("margin"), "ok": None if ok is None or pd.isna(ok) else bool(ok)})
    return out


def _margin_cell(m, interval=None) -> str:
    if m is None or not _is_number(m) or not math.isfinite(float(m)):
        return "—" if m is None or not _is_number(m) or math.isnan(float(m)) else ("+∞" if m > 0 else "−∞")
    text = _pct(float(m))
    if interval is not None and all(math.isfinite(x) for x in interval):
        text += f" ({_pct(interval[0])} to {_pct(interval[1])})"
    return text


def _pct(m: float) -> str:
    """A margin in per cent: one decimal near the bound, three significant digits far from it (``+47,700%``)."""
    pct = m * 100
    if abs(pct) < 1000:
        return margin_words(m).replace("-", "−")
    return ("+" if pct > 0 else "−") + significant(abs(pct), 3) + "%"


def table_html(claim, verdict: ClaimVerdict, measured: pd.DataFrame | None = None) -> str:
    """The compact table of what the checks compared, as HTML (every value escaped)."""
    rows = check_rows(claim, verdict)
    if not rows:
        return ""
    head = ("<thead><tr><th scope='col'>point</th><th scope='col'>measured</th><th scope='col'>compared with</th>"
            "<th scope='col'>margin</th><th scope='col'><span class='reprobook-sr'>within?</span></th></tr></thead>")
    body = []
    for r in rows:
        if "check" in r:
            mark = VERDICT_MARKS.get(r["verdict"], "")
            body.append(f"<tr class='reprobook-check reprobook-{escape(r['verdict'].replace(' ', '-'))}'>"
                        f"<td colspan='3'><b>{escape(r['check'])}</b></td>"
                        f"<td>{escape(_margin_cell(r['margin'], r['interval']))}</td>"
                        f"<td><span class='reprobook-mark' title='{escape(r['verdict'])}'>{mark}</span> "
                        f"{escape(r['verdict'])}</td></tr>")
            continue
        mark = "" if r["ok"] is None else MARKS[r["ok"]]
        words = "" if r["ok"] is None else ("within" if r["ok"] else "outside")
        body.append(f"<tr><td>{escape(r['point'])}</td><td>{escape(r['measured'])}</td>"
                    f"<td>{escape(r['compared'])}</td><td>{escape(_margin_cell(r['margin']))}</td>"
                    f"<td><span class='reprobook-mark' title='{words}'>{mark}</span> {words}</td></tr>")
    stats = {statistic_of(claim, s.value, measured) for s in claim.checks}
    trials = [r.trials for r in verdict.checks if r.trials]
    note = ""
    if trials:
        stat = next(iter(stats)) if len(stats) == 1 else "mean"
        note = (f"<p class='reprobook-note'>Measured: the {escape(STATISTIC_WORDS.get(stat, stat))} of each point's "
                f"trials, as the checks judge it; numbers are rounded to what the spread of the trials supports, "
                f"and a check's margin is followed by its 95 % interval.</p>")
    else:
        note = ("<p class='reprobook-note'>Numbers are rounded to three significant digits (the run gives no "
                "spread to round them by); published values are shown as the paper gives them.</p>")
    return (f"<div class='reprobook-scroll'><table class='reprobook-table reprobook-evidence-table'>{head}"
            f"<tbody>{''.join(body)}</tbody></table></div>{note}")


_ENDS = ("from", "to", "lower", "higher")
"""The ends a check's rows name a column by (``tput_tx_per_s_from``: the value at the first point)."""


def _frame_html(claim, ev: pd.DataFrame) -> str:
    """A check's rows for the folded details: columns in words, numbers rounded, marks for yes/no."""
    from reprobook.book.pages import table_html as frame_html
    keep = [c for c in ev.columns if c not in ("published", "precision", "unpaired", "label") or c == "label"
            and not any(c2 in ev.columns for c2 in ("published",))]
    ev = ev[keep].copy()
    shown = pd.DataFrame(index=ev.index)
    for c in ev.columns:
        heading = {"ok": "within?", "margin": "margin", "target": "target", "ratio": "ratio"}.get(c)
        if heading is None:
            base, _, end = str(c).rpartition("_")
            heading = (f"{column_heading(claim.loader, base)}, {end}" if base and end in _ENDS
                       else column_heading(claim.loader, c))
        col = ev[c]
        if c == "ok":
            shown[heading] = [("✓ yes" if bool(x) else "✗ no") if pd.notna(x) else "—" for x in col]
        elif c == "margin":
            shown[heading] = [_margin_cell(x) for x in col]
        elif pd.api.types.is_bool_dtype(col):
            shown[heading] = ["yes" if x else "no" for x in col]
        elif pd.api.types.is_float_dtype(col):
            shown[heading] = [significant(x, 4) for x in col]
        else:
            shown[heading] = [x if not isinstance(x, (bool, np.bool_)) else ("yes" if x else "no") for x in col]
    return frame_html(shown.reset_index(drop=True))


def details_html(claim, verdict: ClaimVerdict) -> str:
    """Folded: each check's reason in full, where it was judged, and the rows it judged."""
    parts = []
    for r in verdict.checks:
        judged = (f"<p class='reprobook-judged-on'>Judged on: {escape(r.judged_on)}</p>" if r.judged_on else "")
        rows = _frame_html(claim, r.evidence) if r.evidence is not None and not r.evidence.empty else ""
        parts.append(f"<div class='reprobook-check-detail'><p><b>{escape(r.what)}</b> "
                     f"({escape(r.kind.replace('_', ' '))}): {escape(str(r.verdict))}. {escape(r.reason)}</p>"
                     f"{judged}{rows}</div>")
    if not parts:
        return ""
    return ("<details class='reprobook-details'><summary>How each check was judged, row by row</summary>"
            + "".join(parts) + "</details>")


def partial_html(partial: Mapping | None) -> str:
    """What a partial run holds and lacks: its finished points, the points that failed and why, those not run."""
    if not partial:
        return ""
    done = list(partial.get("done") or ())
    failed = list(partial.get("failed") or ())
    missing = list(partial.get("not_run") or ())
    items = []
    for f in failed:
        items.append(f"<li>point {escape(str(f.get('point', '?')))} failed: {escape(str(f.get('why', 'no reason recorded')))}</li>")
    if missing:
        items.append(f"<li>not run after it: {escape(', '.join(map(str, missing)))}</li>")
    return (f"<div class='reprobook-partial'><p><b>A partial run.</b> The run "
            f"{escape(str(partial.get('status', 'failed')))}: {len(done)} of {int(partial.get('total') or len(done) + len(failed) + len(missing))} points finished"
            + (f" ({escape(', '.join(map(str, done)))})" if done else "")
            + "; the table and the plot show those, and the verdict judges only what they can.</p>"
            + (f"<ul>{''.join(items)}</ul>" if items else "") + "</div>")


def evidence_parts(claim, measured: pd.DataFrame | None, verdict: ClaimVerdict) -> tuple[str, str]:
    """``(before the plot, after the plot)``: the block's HTML around where the plot goes."""
    partial = (getattr(measured, "attrs", {}) or {}).get("partial") if measured is not None else None
    head = f"{START}<div class='reprobook-evidence'>" + partial_html(partial)
    if verdict.verdict is Verdict.NOT_RUN:
        tail = ("<p class='reprobook-note'>Nothing was measured, so none of the checks had anything to judge yet."
                "</p></div>" + END)
        return head, tail
    tail = table_html(claim, verdict, measured) + details_html(claim, verdict) + "</div>" + END
    return head, tail

