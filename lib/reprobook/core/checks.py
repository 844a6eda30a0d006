"""Checks: does a claim hold on the measured data, and by what margin.

Each check kind takes the measured table (tidy, one value column) and returns
a `CheckResult`: a verdict (``holds``, ``fails``, ``inconclusive``), a
one-line reason that states the margin, the margin itself as a signed
fraction (positive: room to spare; negative: missed by that much) and the
evidence table the verdict was computed from.

The kinds live in one registry, `KINDS`: each is defined once, by the `kind`
decorator, with its options and their types. The paper files are validated
against it when they load (`validate`), so an unknown kind or option is a
configuration error naming the file and the key; `evaluate_check` looks the
kind up in the same place. Every kind also takes ``what`` (the check in
words), ``value`` (the measured column), ``select`` (``{column: value}``; a
list of values means any of them) and ``by`` (judge each group separately).
"""

from __future__ import annotations

import contextvars
import dataclasses
import math
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from reprobook.core.model import CheckSpec, PublishedNumber
from reprobook.errors import ConfigError
from reprobook.lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")

if TYPE_CHECKING:
    from reprobook.core.config import Claim


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
    interval: tuple[float, float] | None = None   # the margin's bootstrap interval over repeated trials
    trials: int | None = None                      # the fewest trials of any point judged (None: no trial column)
    judged_on: str = ""                            # the scale and machine the check was judged on, in words

    def as_dict(self) -> dict:
        return {"what": self.what, "kind": self.kind, "verdict": str(self.verdict), "reason": self.reason,
                "margin": self.margin,
                **({"interval": list(self.interval)} if self.interval is not None else {}),
                **({"trials": self.trials} if self.trials is not None else {}),
                **({"judged_on": self.judged_on} if self.judged_on else {})}


@dataclass(frozen=True)
class ClaimVerdict:
    """The outcome of all of a claim's checks, with where the numbers came from."""

    claim: str
    verdict: Verdict
    reason: str
    margin: float | None
    source: str
    checks: tuple[CheckResult, ...] = ()
    warnings: tuple[str, ...] = ()
    source_id: str = ""       # "reference", the run id, or "none": what `--source` would name to get these numbers
    wording: str = ""         # the verdict in words when "holds"/"fails" would overstate what was compared
    statement: str = ""       # the claim in one paragraph, shown with the verdict
    scale: str = ""           # the scale of the run judged ("" for a claim without scales; see reprobook.core.scales)
    findings: tuple[str, ...] = ()   # what the run's own files say about the artifact (two of them disagreeing)

    @property
    def says(self) -> str:
        """The verdict as the page and the summary say it: ``wording`` if set, else the verdict itself."""
        return self.wording or str(self.verdict)

    @property
    def margin_words(self) -> str:
        """``+12.3%``, or ``n/a`` when there is no finite margin."""
        return margin_words(self.margin)

    def as_dict(self) -> dict:
        return {"claim": self.claim, "verdict": str(self.verdict), "wording": self.says, "reason": self.reason,
                "margin": self.margin, "source": self.source, "source_id": self.source_id,
                "checks": [c.as_dict() for c in self.checks], "warnings": list(self.warnings),
                "findings": list(self.findings), **({"scale": self.scale} if self.scale else {})}

    def table(self) -> pd.DataFrame:
        return pd.DataFrame([c.as_dict() for c in self.checks], columns=["what", "kind", "verdict", "margin", "reason"])

    def __str__(self) -> str:
        return f"{self.claim}: {self.says} ({self.reason}) [source: {self.source}]"

    def badge_html(self) -> str:
        """The claim, its verdict (with margin and source) and any caution, as one block: the top of its page.

        The block is delimited by `BADGE_START` and `BADGE_END`, so that the book can lift it to the
        top of the claim's page (`reprobook.book.sphinxext`).
        """
        from html import escape

        from reprobook.core.artifacts import link_refs
        colour = colour_of(self.verdict)
        claim = (f"<p class='reprobook-badge-claim'><b>Claim.</b> {escape(self.statement)}</p>"
                 if self.statement else "")
        margin = (f" <span class='reprobook-badge-margin'>margin {self.margin_words}</span>"
                  if self.margin_words != "n/a" else "")
        warn = "".join(f"<p class='reprobook-caution'><b>Caution:</b> {escape(w)}</p>" for w in self.warnings)
        warn += "".join(f"<p class='reprobook-finding'><b>Finding about the artifact:</b> {escape(f)}</p>"
                        for f in self.findings)
        return (f"{BADGE_START}<div class='reprobook-badge reprobook-{str(self.verdict).replace(' ', '-')}' "
                f"style='border-left:6px solid {colour}'>{claim}"
                f"<p class='reprobook-badge-verdict'>Verdict: <b style='color:{colour}'>{escape(self.says)}</b>"
                f"{margin}</p><p>{escape(self.reason)}</p>"
                f"<p><i>Source of the measured numbers: {link_refs(self.source)}</i></p>"
                + (f"<p class='reprobook-scale'>Scale of the run: <b>{escape(self.scale)}</b></p>" if self.scale else "")
                + f"{warn}</div>{BADGE_END}")

    def _repr_html_(self) -> str:
        from html import escape
        rows = "".join(
            f"<tr><td>{escape(c.what)}</td><td style='color:{colour_of(c.verdict)}'><b>{c.verdict}</b></td>"
            f"<td>{escape(c.reason)}"
            + (f"<br><small class='reprobook-judged-on'>Judged on: {escape(c.judged_on)}</small>" if c.judged_on else "")
            + "</td></tr>" for c in self.checks)
        table = (f"<table><tr><th>check</th><th>verdict</th><th>reason and margin</th></tr>{rows}</table>"
                 if rows else "")
        return f"<div class='reprobook-verdict'>{self.badge_html()}{table}</div>"


BADGE_START, BADGE_END = "<!-- reprobook-badge -->", "<!-- /reprobook-badge -->"


def margin_words(margin: float | None) -> str:
    """A margin as the pages say it: ``+12.3%``, or ``n/a`` when there is none (or it is not finite)."""
    if margin is None or not math.isfinite(margin):
        return "n/a"
    return f"{margin * 100:+.1f}%"


def colour_of(v: Verdict | str) -> str:
    return {"holds": "#1a7f37", "fails": "#cf222e", "inconclusive": "#9a6700", "not run": "#57606a"}[str(v)]


# --------------------------------------------------------------------------- the registry

_NUMBER_OR_REF = {"oneOf": [{"type": "number"},
                            {"type": "object", "additionalProperties": False, "required": ["published"],
                             "properties": {"published": {"type": "string"}}}]}
_LABELS = {"type": "object", "additionalProperties": {"type": ["string", "number"]}}
_SELECT = {"type": "object", "additionalProperties": {
    "oneOf": [{"type": ["string", "number", "boolean"]},
              {"type": "array", "items": {"type": ["string", "number", "boolean"]}, "minItems": 1}]}}


def _described(fragment: dict, words: str) -> dict:
    """``fragment`` with its ``description``: what the generated reference (`reprobook.reference`) says of it."""
    return {**fragment, "description": words}


_COMMON = {
    "kind": {"type": "string", "description": "The check kind (one of those below)."},
    "what": {"type": "string", "description": "The check in words, as the verdict table shows it."},
    "value": {"type": "string", "description": "The measured column the check judges."},
    "select": _described(_SELECT, "Judge only the rows with these values: {column: value}, a list of values "
                                  "meaning any of them."),
    "by": {"type": "array", "items": {"type": "string"},
           "description": "Columns whose groups are judged separately; the worst group decides."},
    "needs": {"type": "object", "properties": {"scale": {"oneOf": [{"type": "string"}, {
        "type": "array", "items": {"type": "string"}, "minItems": 1}]}, "why": {"type": "string"}},
              "description": "What the check needs to be judged, besides the claim's requires: a scale (a name or a "
                             "list), machine requirements by name (cores: 32), and why. Judged on the facts of the "
                             "host that ran the measurement (or those an import gave)."},
    "trials": {"type": "string", "description": "The column numbering repeated trials of one point: the check "
                                                "judges a bootstrap interval of its margin and holds or fails only "
                                                "when the whole interval does."},
    "statistic": {"enum": ["mean", "median", "geomean", "hmean"],
                  "description": "The statistic of a point's trials the claim is about (default mean)."},
    "judged_at": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                  "description": "Scales at which the check may be judged on any machine, besides the paper's "
                                 "on a machine meeting the claim's requires (with why); [paper]: the paper's scale "
                                 "on any machine (two systems measured side by side)."},
    "only_at": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                "description": "The only scales at which the check belongs to the verdict (a check of a "
                               "rehearsal's own pipeline); elsewhere it is left out (with why)."},
    "why": {"type": "string", "minLength": 1,
            "description": "Why the comparison means something at the scales of judged_at or only_at."},
}
_TARGETS = ("target", "target_published", "target_rows", "target_column")


@dataclass(frozen=True)
class CheckKind:
    """One kind of check: its name, options (JSON-schema fragments), which are required, and its judge."""

    name: str
    judge: Callable[[CheckSpec, pd.DataFrame, pd.DataFrame, Mapping[str, PublishedNumber]], CheckResult]
    options: Mapping[str, dict]
    required: tuple[str, ...] = ()
    one_of: tuple[str, ...] = ()      # exactly one of these options
    any_of: tuple[str, ...] = ()      # at least one of these options
    doc: str = ""


KINDS: dict[str, CheckKind] = {}


def kind(name: str, *, options: Mapping[str, dict], required: Iterable[str] = (), one_of: Iterable[str] = (),
         any_of: Iterable[str] = ()):
    """Register the decorated judge as the check kind ``name``.

    The judge receives the spec, the selected rows, the whole measured table
    and the claim's published numbers, and returns a `CheckResult`.
    """
    def register(judge):
        if name in KINDS:
            raise ValueError(f"check kind {name!r} is registered twice")
        KINDS[name] = CheckKind(name, judge, {**_COMMON, **options}, tuple(required), tuple(one_of), tuple(any_of),
                                (judge.__doc__ or "").strip().splitlines()[0] if judge.__doc__ else "")
        return judge
    return register


def names() -> list[str]:
    return sorted(KINDS)


def validate(raw: Mapping, *, file, key: str, published: Iterable[str]) -> CheckSpec:
    """A `CheckSpec` from one ``checks:`` entry of a paper file, checked against the registry.

    Raises
    ------
    ConfigError
        Naming ``file`` and the key path (e.g. ``claims[1].checks[0].factor``)
        for an unknown kind or option, a missing or ill-typed option, or a
        reference to a published number the paper does not have.
    """
    from reprobook.core.schema import jsonschema_module
    for must in ("kind", "what", "value"):
        if must not in raw:
            raise ConfigError("required key is missing", file=file, key=f"{key}.{must}")
    k = KINDS.get(raw["kind"])
    if k is None:
        raise ConfigError(f"{raw['kind']!r} is not one of the check kinds: {', '.join(names())}",
                          file=file, key=f"{key}.kind")
    for opt in raw:
        if opt not in k.options:
            allowed = ", ".join(sorted(k.options))
            raise ConfigError(f"unknown option for a {k.name} check (allowed: {allowed})", file=file, key=f"{key}.{opt}")
    validator_cls = jsonschema_module().Draft202012Validator
    for opt, value in raw.items():
        err = next(iter(validator_cls(k.options[opt]).iter_errors(value)), None)
        if err is not None:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
            raise ConfigError(err.message, file=file, key=f"{key}.{opt}{where}")
    for opt in k.required:
        if opt not in raw:
            raise ConfigError(f"a {k.name} check needs {opt!r}", file=file, key=f"{key}.{opt}")
    if k.one_of and sum(o in raw for o in k.one_of) != 1:
        raise ConfigError(f"a {k.name} check needs exactly one of {', '.join(k.one_of)}", file=file, key=key)
    if k.any_of and not any(o in raw for o in k.any_of):
        raise ConfigError(f"a {k.name} check needs at least one of {', '.join(k.any_of)}", file=file, key=key)
    known = set(published)
    for opt in ("min", "max", "target"):
        ref = raw.get(opt)
        if isinstance(ref, Mapping) and "published" in ref and ref["published"] not in known:
            raise ConfigError(f"no published number {ref['published']!r} in this file", file=file,
                              key=f"{key}.{opt}.published")
    if "judged_at" in raw and "only_at" in raw:
        raise ConfigError("judged_at (further scales) and only_at (the only scales) exclude each other", file=file,
                          key=f"{key}.only_at")
    scoped = "judged_at" if "judged_at" in raw else "only_at" if "only_at" in raw else None
    if bool(scoped) != ("why" in raw):
        raise ConfigError("judged_at (or only_at) and why go together: the scales at which the check may be "
                          "judged, and why its comparison means something there",
                          file=file, key=f"{key}.{'why' if scoped else 'judged_at'}")
    from reprobook.core.scales import parse_needs
    needs = parse_needs(raw.get("needs"), file=file, key=f"{key}.needs", judged_at=raw.get("judged_at"),
                        judged_why=raw.get("why", ""), only_at=raw.get("only_at"))
    opts = {o: v for o, v in raw.items() if o not in ("kind", "what", "value", "needs", "judged_at", "only_at", "why")}
    return CheckSpec(kind=raw["kind"], what=raw["what"], value=raw["value"], options=opts, needs=needs)


# --------------------------------------------------------------------------- helpers

def resolve_bound(ref: Any, published: Mapping[str, PublishedNumber], sign: int = 0) -> float:
    """A bound or target as one number: a literal, a published number, or (``within``) a published number moved by
    that fraction of itself, down for a lower bound (``sign`` -1) and up for an upper one (+1)."""
    if isinstance(ref, Mapping):
        value = published[ref["published"]].value
        return value + sign * float(ref.get("within", 0)) * abs(value)
    return float(ref)


_resolve = resolve_bound


def _key(value) -> str:
    """A label value as text, with numbers in one spelling (1, 1.0 and "1" are the same label)."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return f"{number:g}" if math.isfinite(number) else str(value)


def matches(column: pd.Series, want) -> pd.Series:
    """Which values of ``column`` equal ``want`` (or any of a list of them), labels compared as `_key` text."""
    wanted = {_key(w) for w in (want if isinstance(want, (list, tuple)) else [want])}
    values = column.to_numpy()
    # one label of one kind (numbers, or text only) has one `_key` per distinct value: work those out, not every
    # row's (objects of mixed kinds go row by row: True and 1 are equal to Python, yet other labels)
    if values.dtype.kind in "biuf" or (values.dtype == object and all(type(x) is str for x in values)):
        hits = [u for u in pd.unique(values) if _key(u) in wanted]
        return column.isin(hits)
    return column.map(_key).isin(wanted)


_match = matches


def _select(data: pd.DataFrame, select: Mapping[str, Any] | None) -> pd.DataFrame:
    out = data
    for col, val in (select or {}).items():
        if col not in out.columns:
            raise KeyError(col)
        out = out[_match(out[col], val)]
    return out


def _selected(spec: CheckSpec, what: str, data: pd.DataFrame, select: Mapping[str, Any] | None,
              at: np.ndarray | None = None) -> np.ndarray:
    """The positions (in ``data``, among ``at`` when given) of the rows `_select` keeps: worked out once per check
    while its bootstrap resamples are judged, whose rows carry the same labels each time (only values change)."""
    cache = _RESAMPLE_CACHE.get()
    key = ("selected", id(spec), what, tuple(data.index), None if at is None else tuple(at))
    if cache is not None and key in cache:
        return cache[key]
    rows = data if at is None else data.iloc[at]
    keep = np.ones(len(rows), dtype=bool)
    for col, val in (select or {}).items():
        if col not in rows.columns:
            raise KeyError(col)
        keep &= _match(rows[col], val).to_numpy(bool)
    out = (np.arange(len(data)) if at is None else np.asarray(at))[keep]
    if cache is not None:
        cache[key] = out
    return out


def _label(row: pd.Series, cols: Iterable[str]) -> str:
    return ", ".join(f"{c}={row[c]}" for c in cols) or "all"


def _groups(rows: pd.DataFrame, by: list[str]):
    if not by:
        yield (), rows
        return
    for key, g in rows.groupby(by, sort=False):
        yield (key if isinstance(key, tuple) else (key,)), g


def _skipna_mean(values: np.ndarray) -> float:
    """The mean leaving NaN out, as pandas' ``Series.mean`` (NaN when nothing is left)."""
    kept = values[~np.isnan(values)]
    return float(kept.mean()) if len(kept) else math.nan


def _group_positions(spec: CheckSpec, rows: pd.DataFrame, by: list[str]) -> list[tuple[tuple, np.ndarray]]:
    """`_groups` as (key, row positions), worked out once per check while its bootstrap resamples are judged."""
    cache = _RESAMPLE_CACHE.get()
    key = ("groups", id(spec), tuple(rows.index), tuple(by))
    if cache is not None and key in cache:
        return cache[key]
    if not by:
        out = [((), np.arange(len(rows)))]
    else:
        out = [((k if isinstance(k, tuple) else (k,)), np.asarray(at))
               for k, at in rows.groupby(by, sort=False).indices.items()]
        out.sort(key=lambda item: item[1][0])   # in the order the groups first appear, as groupby(sort=False)
    if cache is not None:
        cache[key] = out
    return out


def _means_by(xs: np.ndarray, vs: np.ndarray) -> tuple[list, np.ndarray]:
    """The mean of ``vs`` for each distinct ``xs``, in ``xs``'s order (NaN values left out, as pandas does)."""
    try:
        levels, inverse = np.unique(xs, return_inverse=True)
    except TypeError:   # labels of mixed kinds: pandas sorts them as it can
        means = pd.Series(vs).groupby(pd.Series(xs)).mean().sort_index()
        return list(means.index), means.to_numpy(float)
    ok = np.isfinite(vs)
    with np.errstate(divide="ignore", invalid="ignore"):
        means = (np.bincount(inverse, weights=np.where(ok, vs, 0.0), minlength=len(levels))
                 / np.bincount(inverse, weights=ok.astype(float), minlength=len(levels)))
    return list(levels), means


def _pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def _inconclusive(spec: CheckSpec, why: str) -> CheckResult:
    return CheckResult(spec.what, spec.kind, Verdict.INCONCLUSIVE, why, None, pd.DataFrame())


_MARGIN_ONLY: contextvars.ContextVar[bool] = contextvars.ContextVar("reprobook_margin_only", default=False)
_RESAMPLE_CACHE: contextvars.ContextVar[dict | None] = contextvars.ContextVar("reprobook_resample_cache",
                                                                               default=None)
"""While one check's resamples are judged: what depends on the rows' labels only, worked out once."""


def _finish(spec: CheckSpec, ev: pd.DataFrame, margins: pd.Series, describe,
            undefined: pd.Series | None = None) -> CheckResult:
    """Verdict from per-row margins: holds iff every margin >= 0; the worst row is named.

    A row whose margin is NaN cannot be judged: ``undefined`` (text per row, "" where defined)
    says why (a zero denominator, a zero target); without it the row has no value.
    """
    if ev.empty or margins.isna().all() and undefined is None:
        return _inconclusive(spec, "no measured rows to check")
    if margins.isna().any():
        why = [str(u) for u in (undefined if undefined is not None else pd.Series("", index=ev.index))[margins.isna()]
               if str(u)]
        return _inconclusive(spec, "; ".join(dict.fromkeys(why)) if why
                             else f"{int(margins.isna().sum())} row(s) have no value")
    if _MARGIN_ONLY.get():   # a bootstrap resample: only its margin is used, not the words nor the evidence
        margin = float(margins.min())
        return CheckResult(spec.what, spec.kind, Verdict.HOLDS if margin >= 0 else Verdict.FAILS, "", margin,
                           pd.DataFrame())
    ev = ev.assign(margin=margins.values, ok=(margins >= 0).values)
    worst = ev.loc[ev["margin"].idxmin()]
    margin = float(worst["margin"])
    verdict = Verdict.HOLDS if margin >= 0 else Verdict.FAILS
    return CheckResult(spec.what, spec.kind, verdict, describe(worst, margin), margin, ev.reset_index(drop=True))


def _scale(bound: float, other: float | None, x: float) -> float:
    """What a distance to ``bound`` is measured against: the bound itself, or (a bound of 0) the other bound, or
    the value; 1 when all are 0. A margin is then a fraction of a number the check is about, never of 0."""
    for s in (bound, other, x):
        if s is not None and math.isfinite(s) and s != 0:
            return abs(s)
    return 1.0


def bound_margin(x: float, lo: float | None, hi: float | None) -> float:
    """The relative room of ``x`` to the nearer of ``lo`` and ``hi`` (None: no such bound); negative outside.

    A bound of 0 is a bound: ``x >= 0`` holds against ``min: 0``. Distances are measured against the
    bound's size (`_scale`), so a negative bound keeps its sense (``x = -3`` is above ``min: -5``). NaN
    for a NaN value.
    """
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return math.nan
    x = float(x)
    out = math.inf
    if lo is not None:
        out = min(out, _fraction(x - lo, _scale(lo, hi, x)))
    if hi is not None:
        out = min(out, _fraction(hi - x, _scale(hi, lo, x)))
    return out


def _fraction(d: float, s: float) -> float:
    """``d / s`` keeping its sign: a miss of a denormal (``-5e-324`` against a scale of ``1e9``) is still a miss,
    not a quotient that underflows to ``-0.0`` and reads as on the bound."""
    f = d / s
    return -math.ulp(0.0) if d < 0 and f == 0 else f


def _bounds_margins(values: pd.Series, lo: float | None, hi: float | None) -> pd.Series:
    """Per value: the relative room to the nearer bound (negative outside); see `bound_margin`."""
    return pd.Series([bound_margin(x, lo, hi) for x in values], index=values.index, dtype=float)


def _times(r: float) -> str:
    if not math.isfinite(r):   # a bound so near 0 that the ratio overflows
        return "over 1e308"
    return f"{r:,.0f}" if abs(r) >= 100 else f"{r:.3g}"


def room_words(x: float, lo: float | None, hi: float | None) -> str:
    """Where ``x`` stands against its bounds, in words: a per cent near a bound, a ratio far from it.

    Near a bound the room (or the miss) is a percentage of the bound; far from a positive bound it reads
    as a ratio ("0.3 times the lower bound", "12 times the upper bound"); against a bound of 0, or across
    a change of sign, the value is simply placed ("below the lower bound 0"), and far from a negative
    bound the distance is given. Never hundreds of per cent, never ``inf``.
    """
    if x is None or not math.isfinite(x):
        return "no finite value to place"
    m = bound_margin(x, lo, hi)
    if lo is not None and x < lo:
        side, bound, inside = "lower", lo, False
    elif hi is not None and x > hi:
        side, bound, inside = "upper", hi, False
    else:
        # inside: the nearer bound (the smaller room)
        if lo is None or hi is None:
            side, bound = ("upper", hi) if lo is None else ("lower", lo)
        else:
            m_lo, m_hi = bound_margin(x, lo, None), bound_margin(x, None, hi)
            side, bound = ("lower", lo) if m_lo <= m_hi else ("upper", hi)
        inside = True
    if bound == 0:
        return ("exactly at the bound 0" if x == 0 else
                f"{'above' if (side == 'lower') == inside else 'below'} the {side} bound 0")
    if abs(m) < (0.99 if inside else 0.5):
        return f"{'closest to a bound' if inside else 'outside'} by {abs(m) * 100:.1f}%"
    if bound > 0 and x > 0:
        return f"{_times(x / bound)} times the {side} bound"
    above = x > bound
    if (x > 0) != (bound > 0) or x == 0:
        return f"{'above' if above else 'below'} the {side} bound {bound:g}"
    return f"{abs(x - bound):.4g} {'above' if above else 'below'} the {side} bound"


def _bound_words(lo: float | None, hi: float | None) -> str:
    return " and ".join(x for x in (f">= {lo:g}" if lo is not None else "", f"<= {hi:g}" if hi is not None else "") if x)


# --------------------------------------------------------------------------- the kinds

def _bound_of(ref, rows: pd.DataFrame, published, slack: float, sign: int):
    """A bound as one number (a literal or a published number) or, for ``{column: name}``, per row: another
    reading of the same row. ``slack`` widens it by that fraction of itself (``sign`` -1 for a lower bound)."""
    if ref is None:
        return None
    if isinstance(ref, Mapping) and "column" in ref:
        b = rows[ref["column"]].astype(float)
        return b + sign * slack * b.abs()
    b = _resolve(ref, published, sign)
    return b + sign * slack * abs(b)


def _bounds(spec, rows, data, published):
    """Each value within its bounds (at_least: min; at_most: max; in_range: both)."""
    o, v, by = spec.options, spec.value, list(spec.options.get("by") or [])
    for ref in (o.get("min"), o.get("max")):
        if isinstance(ref, Mapping) and "column" in ref and ref["column"] not in rows.columns:
            return _inconclusive(spec, f"the measured data has no column {ref['column']!r}")
    slack = float(o.get("slack", 0))
    lo = _bound_of(o.get("min"), rows, published, slack, -1)
    hi = _bound_of(o.get("max"), rows, published, slack, +1)
    ev = rows.copy()
    ev["min"], ev["max"] = lo, hi
    if not isinstance(lo, pd.Series) and not isinstance(hi, pd.Series):
        bound = _bound_words(lo, hi)

        def describe(w, m):
            return f"{_label(w, by)}: {w[v]:.4g} vs required {bound} — {room_words(w[v], lo, hi)}"
        return _finish(spec, ev, _bounds_margins(ev[v], lo, hi), describe)

    # a bound from another column: each row against its own bounds; a row whose bound is missing is not judged
    def own(w, key):
        ref = o.get(key)
        return None if ref is None else float(w[key])
    margins = pd.Series([math.nan if any(ref is not None and not math.isfinite(float(w[k]))
                                         for k, ref in (("min", o.get("min")), ("max", o.get("max"))))
                         else bound_margin(w[v], own(w, "min"), own(w, "max")) for _, w in ev.iterrows()],
                        index=ev.index, dtype=float)
    names = {k: (f"{ref['column']}" if isinstance(ref, Mapping) and "column" in ref else None)
             for k, ref in (("min", o.get("min")), ("max", o.get("max")))}
    undefined = pd.Series([("; ".join(f"{_label(w, by)}: no {names[k]} to bound it" for k in ("min", "max")
                                      if names[k] and not math.isfinite(float(w[k]))))
                           for _, w in ev.iterrows()], index=ev.index)
    slack_words = f", each widened by {slack * 100:g}%" if slack else ""

    def describe_rows(w, m):
        lo_w, hi_w = own(w, "min"), own(w, "max")
        parts = [f">= {lo_w:.4g}" + (f" ({names['min']})" if names["min"] else "") if lo_w is not None else "",
                 f"<= {hi_w:.4g}" + (f" ({names['max']})" if names["max"] else "") if hi_w is not None else ""]
        return (f"{_label(w, by)}: {w[v]:.4g} vs required {' and '.join(x for x in parts if x)}{slack_words} — "
                f"{room_words(w[v], lo_w, hi_w)}")
    return _finish(spec, ev, margins, describe_rows, undefined)


_RELATIVE = {"type": "object", "additionalProperties": False, "required": ["published", "within"],
             "properties": {"published": {"type": "string"}, "within": {"type": "number", "minimum": 0}}}
_BOUND_WORDS = ("a number, {published: id} (a published number, or a cell of a published table), "
                "{published: id, within: 0.1} (10 % below the published value for a lower bound, above it for an "
                "upper one), or {column: name} (each row bounded by another reading of itself)")
_BOUND = {"oneOf": [*_NUMBER_OR_REF["oneOf"], _RELATIVE,
                    {"type": "object", "additionalProperties": False, "required": ["column"],
                     "properties": {"column": {"type": "string"}}}]}
_SLACK = {"slack": {"type": "number", "minimum": 0,
                    "description": "Widen every bound by this fraction of itself (0.05: 5 % of room)."}}
kind("at_least", options={"min": _described(_BOUND, f"The lower bound: {_BOUND_WORDS}."), **_SLACK},
     required=("min",))(_bounds)
kind("at_most", options={"max": _described(_BOUND, f"The upper bound: {_BOUND_WORDS}."), **_SLACK},
     required=("max",))(_bounds)
kind("in_range", options={"min": _described(_BOUND, f"The lower bound: {_BOUND_WORDS}."),
                          "max": _described(_BOUND, f"The upper bound: {_BOUND_WORDS}."), **_SLACK},
     required=("min", "max"))(_bounds)

_TARGET_OPTIONS = {
    "target": _described(_NUMBER_OR_REF, "One target for every row: a number or {published: id}."),
    "target_published": {"type": "boolean", "description": "true: each row's target is the published number (or "
                         "published table cell) whose labels match the row's values."},
    "target_rows": _described(_LABELS, "The target is other measured rows, {column: value} (the baseline's), "
                                       "paired with each group of by."),
    "target_column": {"type": "string", "description": "The target is another column of the same row (two "
                                                       "readings of one thing)."},
    # with target_rows: judge the groups both sides have (a claim "for the operations both have"); the others are
    # named in the reason as not compared. Without it, a group with nothing to compare with makes the check
    # inconclusive, naming the group: never dropped without a word.
    "only_paired": {"type": "boolean", "description": "With target_rows: judge only the groups both sides have, "
                                                     "naming the others as not compared (default: a group with no "
                                                     "counterpart makes the check inconclusive)."},
}


@kind("close_to", options={**_TARGET_OPTIONS, "rel_tol": {"type": "number", "exclusiveMinimum": 0, "description":
                                                 "The relative tolerance, a fraction (0.1: within ±10 %)."}},
      required=("rel_tol",), one_of=_TARGETS)
def _close_to(spec, rows, data, published):
    """Each value within a relative tolerance of its target."""
    ev = _targets(spec, rows, data, published)
    if isinstance(ev, str):
        return _inconclusive(spec, ev)
    v, tol = spec.value, float(spec.options["rel_tol"])
    # a target of 0 has no relative tolerance (unless the value is 0 too): that row is not judged, and says why
    zero = ev["target"] == 0
    ev["ratio"] = (ev[v] / ev["target"].where(~zero)).where(~(zero & (ev[v] == 0)), 1.0)
    margins = tol - (ev["ratio"] - 1).abs()
    undefined = pd.Series(np.where(ev["ratio"].isna() & zero, [f"{r}: the target is 0, so a relative tolerance "
                                                               f"has no meaning" for r in ev["label"]], ""),
                          index=ev.index)
    undefined = _why_unjudged(ev, undefined)

    def describe(w, m):
        return (f"{w['label']}: {w[v]:.4g} vs {w['target']:.4g} ({_pct(w['ratio'] - 1)}); "
                f"tolerance ±{tol * 100:g}%, margin {m * 100:+.1f} points")
    return _noting_unpaired(_finish(spec, ev, margins, describe, undefined), ev)


@kind("within_factor", options={**_TARGET_OPTIONS, "factor": {"type": "number", "minimum": 1, "description":
                                                      "The factor allowed either way (1.5: from 2/3 to 1.5 times)."}},
      required=("factor",), one_of=_TARGETS)
def _within_factor(spec, rows, data, published):
    """Each value within a factor of its target, either way."""
    ev = _targets(spec, rows, data, published)
    if isinstance(ev, str):
        return _inconclusive(spec, ev)
    v, factor = spec.value, float(spec.options["factor"])
    ev["ratio"] = ev[v] / ev["target"].where(ev["target"] != 0)
    # a factor is defined between two numbers of the same sign, neither 0
    ev["ratio"] = ev["ratio"].where(ev["ratio"] > 0)
    margins = factor / np.maximum(ev["ratio"], 1 / ev["ratio"]) - 1
    undefined = pd.Series([f"{r}: {x:.4g} vs {t:.4g} are not a factor apart (one is 0, or their signs differ)"
                           if not (q > 0) and pd.notna(x) else "" for r, x, t, q in
                           zip(ev["label"], ev[v], ev["target"], ev["ratio"])], index=ev.index)
    undefined = _why_unjudged(ev, undefined)

    def describe(w, m):
        return (f"{w['label']}: {w[v]:.4g} vs {w['target']:.4g} is a factor "
                f"{max(w['ratio'], 1 / w['ratio']):.2f} apart; allowed {factor:g}, margin {_pct(m)}")
    return _noting_unpaired(_finish(spec, ev, pd.Series(margins, index=ev.index), describe, undefined), ev)


@kind("rank_order", options={"across": {"type": "string", "description": "The column whose groups are ranked."},
                             "order": {"type": "array", "items": {"type": ["string", "number"]}, "minItems": 2,
                                       "description": "The groups' values of across, smallest value first."}},
      required=("across", "order"))
def _rank_order(spec, rows, data, published):
    """The groups of ``across`` rank in ``order``, smallest value first."""
    o, v, by = spec.options, spec.value, list(spec.options.get("by") or [])
    across, order = o["across"], [str(x) for x in o["order"]]
    if across not in rows.columns:
        return _inconclusive(spec, f"the measured data has no column {across!r}")
    recs = []
    for key, g in _groups(rows, by):
        vals = {a: float(g[matches(g[across], a)][v].mean()) for a in order}
        missing = [a for a, x in vals.items() if math.isnan(x)]
        if missing:
            return _inconclusive(spec, f"no rows for {across}={', '.join(missing)}" + (f" in {key}" if by else ""))
        for a, b in zip(order, order[1:]):
            recs.append({**dict(zip(by, key)), "lower": a, "higher": b,
                         f"{v}_lower": vals[a], f"{v}_higher": vals[b]})
    ev = pd.DataFrame(recs)
    margins = ev[f"{v}_higher"] / ev[f"{v}_lower"].replace(0, np.nan) - 1
    # a zero lower value: any positive higher value is infinitely far above it
    margins = margins.fillna(pd.Series(np.where(ev[f"{v}_higher"] > 0, np.inf, -1.0), index=ev.index))

    def describe(w, m):
        return (f"{_label(w, by)}: {w['lower']} {w[f'{v}_lower']:.4g} < {w['higher']} {w[f'{v}_higher']:.4g}"
                f"{'' if m >= 0 else ' is violated'}; tightest gap {_pct(m)}")
    return _finish(spec, ev, margins, describe)


@kind("grows_with", options={"x": {"type": "string", "description": "The column that grows (cores, clients)."},
                             "min_gain": {"type": "number", "exclusiveMinimum": 0, "description":
                                          "The least gain, value at to over value at from (default 1: no loss)."},
                             "max_gain": {"type": "number", "exclusiveMinimum": 0,
                                          "description": "The greatest gain allowed."},
                             "from": {"type": ["number", "string"], "description": "The x the gain starts at "
                                      "(default: the smallest measured); a run without it is not judged at another."},
                             "to": {"type": ["number", "string"], "description": "The x the gain ends at (default: "
                                    "the largest measured)."}},
      required=("x",))
def _grows_with(spec, rows, data, published):
    """Value at ``to`` (default: the largest ``x``) over value at ``from`` (the smallest): within the gains.

    A claim about two points (1 and 32 cores) names them in ``from`` and ``to``: a group whose rows do not
    reach them is not judged (and says which values it has), never judged at the nearest points.
    """
    o, v, by = spec.options, spec.value, list(spec.options.get("by") or [])
    x = o["x"]
    lo = float(o["min_gain"]) if "min_gain" in o else (None if "max_gain" in o else 1.0)
    hi = float(o["max_gain"]) if "max_gain" in o else None
    if x not in rows.columns:
        return _inconclusive(spec, f"the measured data has no column {x!r}")
    recs, skipped = [], []
    xs_all, vs_all = rows[x].to_numpy(), rows[v].to_numpy(float)
    for key, at in _group_positions(spec, rows, by):
        where = _label(pd.Series(dict(zip(by, key))), by) if by else ""
        levels, means = _means_by(xs_all[at], vs_all[at])   # the mean of each x, in x's order (numpy: this
        ends = []                                          # runs once per bootstrap resample)
        for end, fallback in (("from", 0), ("to", -1)):
            if end in o:
                hit = [i for i, level in enumerate(levels) if _key(level) == _key(o[end])]
                ends.append(hit[0] if hit else None)
            else:
                ends.append((len(levels) + fallback) % len(levels) if len(levels) else None)
        if None in ends:
            want = " and ".join(f"{x}={o[e]}" for e, got in zip(("from", "to"), ends) if got is None)
            skipped.append((where, f"{point_words(x, pd.Series(xs_all[at]))}; the claim is about {want}"))
            continue
        if len(levels) < 2 or ends[0] == ends[1]:
            skipped.append((where, f"only one value of {x} measured"))
            continue
        span = means[ends[0]:ends[1] + 1] if ends[0] <= ends[1] else means
        with np.errstate(divide="ignore", invalid="ignore"):   # a zero is caught as no gain below
            steps = span[1:] / span[:-1]
        first, last = float(means[ends[0]]), float(means[ends[1]])
        recs.append({**dict(zip(by, key)), f"{x}_from": levels[ends[0]], f"{x}_to": levels[ends[1]], f"{v}_from": first,
                     f"{v}_to": last, "gain": last / first if first > 0 and last >= 0 else math.nan,
                     "monotone": bool((steps >= 1).all())})
    need = " and ".join(w for w in (f">= {lo:g}x" if lo is not None else "", f"<= {hi:g}x" if hi is not None else "") if w)
    if not recs:
        return _inconclusive(spec, _skipped_words(skipped))
    ev = pd.DataFrame(recs)
    undefined = None if _MARGIN_ONLY.get() else pd.Series(
        [f"{_label(r, by)}: {r[f'{v}_from']:.4g} at {x}={r[f'{x}_from']} to {r[f'{v}_to']:.4g} "
         f"has no gain (a gain needs a positive starting value)" if pd.isna(r["gain"]) else ""
         for _, r in ev.iterrows()], index=ev.index)

    def describe(w, m):
        return (f"{_label(w, by)}: {w[f'{v}_from']:.4g} at {x}={w[f'{x}_from']} to {w[f'{v}_to']:.4g} at "
                f"{x}={w[f'{x}_to']}, a gain of {w['gain']:.2f}x (needed {need}, {room_words(w['gain'], lo, hi)})"
                f"{'' if w['monotone'] else '; not monotone'}")
    return _partial(spec, _finish(spec, ev, _bounds_margins(ev["gain"], lo, hi), describe, undefined), skipped)


def point_words(col: str, values: pd.Series) -> str:
    """The values of ``col`` a run has, in words: ``the run has cores 1–2`` (a range for numbers), or the list."""
    present = pd.Series(values).dropna().unique()
    if len(present) == 0:
        return f"the run has no value of {col}"
    try:
        nums = sorted(float(p) for p in present)
    except (TypeError, ValueError):
        return f"the run has {col} " + ", ".join(sorted(_key(p) for p in present))
    if len(nums) <= 3:
        return f"the run has {col} " + ", ".join(f"{n:g}" for n in nums)
    return f"the run has {col} {nums[0]:g}–{nums[-1]:g}"


def _skipped_words(skipped: list[tuple[str, str]]) -> str:
    return "; ".join(f"{where}: {why}" if where else why for where, why in skipped)


def _partial(spec: CheckSpec, result: CheckResult, skipped: list[tuple[str, str]]) -> CheckResult:
    """``result`` over the groups that could be judged, with those that could not: a failing group still fails
    the check; holding groups make it only inconclusive while others were not judged."""
    if not skipped:
        return result
    words = f"not judged: {_skipped_words(skipped)}"
    if result.verdict is Verdict.FAILS:
        return dataclasses.replace(result, reason=f"{result.reason}; {words}")
    if result.verdict is Verdict.HOLDS:
        return dataclasses.replace(result, verdict=Verdict.INCONCLUSIVE, margin=None,
                                   reason=f"the groups judged hold ({result.reason}); {words}")
    return dataclasses.replace(result, reason=f"{result.reason}; {words}")


@kind("ratio", options={"numerator": _described(_LABELS, "The rows on top, {column: value}: their mean."),
                        "denominator": _described(_LABELS, "The rows below, {column: value}: their mean."),
                        "min": _described({"oneOf": [*_NUMBER_OR_REF["oneOf"], _RELATIVE]},
                                          "The ratio's lower bound: a number, {published: id}, or {published: id, "
                                          "within: 0.1} (10 % below it). No slack: write the bound you mean."),
                        "max": _described({"oneOf": [*_NUMBER_OR_REF["oneOf"], _RELATIVE]},
                                          "The ratio's upper bound: a number, {published: id}, or {published: id, "
                                          "within: 0.1} (10 % above it)."),
                        "aggregate": {"enum": ["mean", "median", "geomean"], "description":
                                      "Judge one statistic of the groups' ratios (with by), not each group."}},
      required=("numerator", "denominator"), any_of=("min", "max"))
def _ratio(spec, rows, data, published):
    """The mean of the ``numerator`` rows over the mean of the ``denominator`` rows, within bounds.

    With ``by``, every group that has both sides is judged; a group missing one is listed as not judged,
    and the check is then at best inconclusive. A zero denominator leaves its group unjudged, saying so.
    """
    o, v, by = spec.options, spec.value, list(spec.options.get("by") or [])
    num, den = dict(o["numerator"]), dict(o["denominator"])
    lo = _resolve(o["min"], published, -1) if "min" in o else None
    hi = _resolve(o["max"], published, +1) if "max" in o else None
    for col in {*num, *den}:
        if col not in rows.columns:
            return _inconclusive(spec, f"the measured data has no column {col!r}")
    keys = [c for c in by if c not in num and c not in den]
    recs, skipped = [], []
    values = rows[v].to_numpy(float)
    for key, at in _group_positions(spec, rows, keys):
        where = ", ".join(f"{k}={x}" for k, x in zip(keys, key))
        top, bottom = (values[_selected(spec, side, rows, sel, at)] for side, sel in (("num", num), ("den", den)))
        top, bottom = top[~np.isnan(top)], bottom[~np.isnan(bottom)]
        if not len(top) or not len(bottom):
            which = num if not len(top) else den
            skipped.append((where, f"no measured rows for {which}"))
            continue
        n, d = float(top.mean()), float(bottom.mean())
        recs.append({**dict(zip(keys, key)), "numerator": n, "denominator": d,
                     "ratio": n / d if d != 0 else math.nan})
    if not recs:
        return _inconclusive(spec, _skipped_words(skipped))
    if _MARGIN_ONLY.get() and "aggregate" not in o and all(r["denominator"] != 0 for r in recs):
        # a bootstrap resample: its margin only (as `_finish` and `_partial` would give it), without their tables
        margins = [bound_margin(r["ratio"], lo, hi) for r in recs]
        margin = min(margins)
        verdict = Verdict.HOLDS if margin >= 0 else Verdict.FAILS
        if any(math.isnan(m) for m in margins) or skipped and verdict is Verdict.HOLDS:
            return CheckResult(spec.what, spec.kind, Verdict.INCONCLUSIVE, "", None, pd.DataFrame())
        return CheckResult(spec.what, spec.kind, verdict, "", margin, pd.DataFrame())
    ev = pd.DataFrame(recs)
    bound = _bound_words(lo, hi)
    nwords = ", ".join(f"{k}={x}" for k, x in num.items())
    dwords = ", ".join(f"{k}={x}" for k, x in den.items())
    undefined = pd.Series([f"{_label(r, keys)}: the denominator ({dwords}) is 0, so the ratio is not defined"
                           if r["denominator"] == 0 else "" for _, r in ev.iterrows()], index=ev.index)

    def describe(w, m):
        return (f"{_label(w, keys)}: {nwords} / {dwords} = {w['numerator']:.4g} / {w['denominator']:.4g} = "
                f"{w['ratio']:.3g} (required {bound}, {room_words(w['ratio'], lo, hi)})")
    if "aggregate" in o:
        return _partial(spec, _aggregate(spec, ev, lo, hi, f"{nwords} / {dwords}", undefined), skipped)
    return _partial(spec, _finish(spec, ev, _bounds_margins(ev["ratio"], lo, hi), describe, undefined), skipped)


def _aggregate(spec: CheckSpec, ev: pd.DataFrame, lo, hi, what: str, undefined: pd.Series) -> CheckResult:
    """One number over the groups (``aggregate``: the geometric mean speed-up over all benchmarks, as headline
    figures are phrased) judged against the bounds; each group's own ratio stays in the evidence."""
    name = spec.options["aggregate"]
    ratios = ev["ratio"].to_numpy(float)
    if np.isnan(ratios).any():
        return _inconclusive(spec, "; ".join(u for u in undefined if u) or "a group's ratio is not defined")
    if name == "geomean" and (ratios <= 0).any():
        return _inconclusive(spec, "a geometric mean needs positive ratios; "
                                   f"{int((ratios <= 0).sum())} group(s) have none")
    value = float(STATISTICS[name](ratios))
    margin = bound_margin(value, lo, hi)
    ev = ev.assign(margin=_bounds_margins(ev["ratio"], lo, hi).values)
    verdict = Verdict.HOLDS if margin >= 0 else Verdict.FAILS
    words = {"geomean": "geometric mean", "mean": "mean", "median": "median"}[name]
    return CheckResult(spec.what, spec.kind, verdict,
                       f"the {words} of {what} over {len(ev)} group(s) is {value:.3g} (required "
                       f"{_bound_words(lo, hi)}, {room_words(value, lo, hi)}); the groups range from "
                       f"{ratios.min():.3g} to {ratios.max():.3g}", margin, ev.reset_index(drop=True))


@kind("count", options={"min": {"type": "integer", "minimum": 0, "description": "The fewest distinct values."},
                        "max": {"type": "integer", "minimum": 0, "description": "The most distinct values."}},
      any_of=("min", "max"))
def _count(spec, rows, data, published):
    """The number of distinct values of ``value`` among the selected rows, within bounds."""
    o, v, by = spec.options, spec.value, list(spec.options.get("by") or [])
    lo, hi = o.get("min"), o.get("max")
    recs = []
    for key, g in _groups(rows, by):
        found = sorted(g[v].dropna().astype(str).unique())
        recs.append({**dict(zip(by, key)), "count": len(found), "values": ", ".join(found)})
    ev = pd.DataFrame(recs)
    counts = ev["count"].astype(float)
    margins = pd.Series(np.minimum(counts - lo if lo is not None else np.inf,
                                   hi - counts if hi is not None else np.inf), index=ev.index)
    # a count is judged exactly: margin in units of rows, as a fraction of the bound
    scale = float(lo or hi or 1)
    bound = _bound_words(lo, hi)

    def describe(w, m):
        return f"{_label(w, by)}: {w['count']} distinct {v} (required {bound}, margin {_pct(m)}): {w['values']}"
    return _finish(spec, ev, margins / scale, describe)


def _targets(spec, rows, data, published) -> pd.DataFrame | str:
    """Pair each measured row with its target: a literal, a published number, other measured rows, or another
    column of the same row (two readings of one thing)."""
    o, v = spec.options, spec.value
    by = list(o.get("by") or [])
    if "target_column" in o:
        col = o["target_column"]
        if col not in rows.columns:
            return f"the measured data has no column {col!r}"
        ev = rows.assign(target=rows[col])
        ev["label"] = [_label(r, by) + f" ({v} vs {col})" for _, r in ev.iterrows()]
        return ev[[*by, "label", v, "target"]]
    if "target" in o:
        ev = rows.copy()
        ev["target"] = _resolve(o["target"], published)
        ev["label"] = [_label(r, by) for _, r in ev.iterrows()]
        return ev[[*by, "label", v, "target"]]
    if o.get("target_published"):
        # which rows each published number is about depends on the labels only: the same for every bootstrap
        # resample of one check (same rows, other values), so it is worked out once per check there
        cache = _RESAMPLE_CACHE.get()
        key = ("published", id(spec), tuple(rows.index))
        plan = cache.get(key) if cache is not None else None
        if plan is None:
            plan = []
            for n in published.values():
                if n.measure and n.measure != v:
                    continue
                if not n.labels or not set(n.labels) <= set(rows.columns):
                    continue
                match = rows
                for col, val in n.labels.items():
                    match = match[matches(match[col], val)]
                if not match.empty:
                    plan.append((n, rows.index.get_indexer(match.index)))
            if cache is not None:
                cache[key] = plan
        values = rows[v].to_numpy(float)
        recs = [{"label": f"{n.what or n.id} ({', '.join(f'{k}={val}' for k, val in n.labels.items())})",
                 v: _skipna_mean(values[at]), "target": n.value, "published": n.id,
                 "precision": n.precision, **dict(n.labels)} for n, at in plan]
        if not recs:
            nums = [n for n in published.values() if n.labels and (not n.measure or n.measure == v)]
            points = "; ".join(dict.fromkeys(_missing_point(rows, n.labels) for n in nums))
            return "no measured rows match any published number's labels" + (f": {points}" if points else "")
        return pd.DataFrame(recs)
    other = dict(o["target_rows"])
    mine = rows
    for col in other:
        if col not in data.columns:
            return f"the measured data has no column {col!r}"
        mine = mine[~_match(mine[col], other[col])]
    select = {k: x for k, x in dict(o.get("select") or {}).items() if k not in other}
    theirs = _select(data, {**select, **other})
    if mine.empty or theirs.empty:
        return f"no measured rows for {other}" if theirs.empty else "no rows to compare"
    keys = [c for c in by if c not in other]
    t = theirs.groupby(keys)[v].mean().rename("target").reset_index() if keys else \
        pd.DataFrame({"target": [theirs[v].mean()]})
    # every measured group stays: one with no rows of ``other`` to compare with is not judged, and says so
    ev = mine.merge(t, on=keys, how="left") if keys else mine.assign(target=float(t["target"].iloc[0]))
    if ev.empty or ev["target"].isna().all():
        return f"no measured rows pair up with {other} on {keys}"
    against = ", ".join(f"{k}={x}" for k, x in other.items())
    ev["label"] = [_label(r, by) + f" vs {against}" for _, r in ev.iterrows()]
    ev["unpaired"] = [f"{_label(r, by)}: no rows of {against} to compare with" if pd.isna(r["target"]) else ""
                      for _, r in ev.iterrows()]
    out = ev[[*by, "label", v, "target", "unpaired"]]
    if o.get("only_paired"):
        skipped = [_label(r, by) for _, r in out[out["target"].isna()].iterrows()]
        out = out[out["target"].notna()].drop(columns="unpaired")
        out.attrs["not_compared"] = f"not compared (no rows of {against}): {', '.join(skipped)}" if skipped else ""
    return out


def _noting_unpaired(result: CheckResult, ev: pd.DataFrame) -> CheckResult:
    """The result, its reason naming the groups `_targets` left out (``only_paired``)."""
    note = ev.attrs.get("not_compared") if isinstance(ev, pd.DataFrame) else ""
    return dataclasses.replace(result, reason=f"{result.reason}; {note}") if note else result


def _why_unjudged(ev: pd.DataFrame, undefined: pd.Series) -> pd.Series:
    """Per row, why it cannot be judged: a group without a target (`_targets`), else the kind's own reason."""
    if "unpaired" not in ev.columns:
        return undefined
    return ev["unpaired"].where(ev["unpaired"] != "", undefined)


def _missing_point(data: pd.DataFrame, want: Mapping[str, Any]) -> str:
    """Which of the labels ``want`` the data stops short of, in words: "the run has cores 1–2; the claim is
    about cores=32" (the first label no row reaches, given the ones before it)."""
    rows = data
    for col, val in want.items():
        hit = rows[_match(rows[col], val)] if col in rows.columns else rows.iloc[0:0]
        if hit.empty:
            wanted = ", ".join(map(str, val)) if isinstance(val, (list, tuple)) else val
            return f"{point_words(col, rows[col]) if col in rows.columns else f'the run has no column {col!r}'}; " \
                   f"the claim is about {col}={wanted}"
        rows = hit
    return "the rows for each label exist, but not together"


RESAMPLES = 40
"""Bootstrap resamples per check with trials. Each resample is judged by the kind's own judge (a few milliseconds
of pandas), so this bounds the cost of a check with trials. The interval is the normal bootstrap interval (the
margin +- 1.96 standard errors, the standard error being the resampled margins' spread): 25 to 200 resamples
estimate a standard error well (Efron and Tibshirani, *An Introduction to the Bootstrap*, 1993, section 6.4),
where the 2.5 and 97.5 % quantiles of a percentile interval need about a thousand. At 40 the interval's width
moves by about a tenth between seeds."""
Z95 = 1.959963984540054

def evaluate_check(spec: CheckSpec, data: pd.DataFrame, published: Mapping[str, PublishedNumber], *,
                   seed: int = 0, resamples: int = RESAMPLES) -> CheckResult:
    """Run one check against the measured table.

    When the rows hold repeated trials of the same point (the check's ``trials`` option, or the loader's
    ``attrs["trial_column"]``), the check judges the statistic the claim is about (``statistic``: mean,
    median or geomean; mean by default) with a seeded bootstrap interval of its margin: see `_with_trials`.
    """
    trial = spec.options.get("trials") or data.attrs.get("trial_column")
    # a check of a label (a count of benchmarks) has no statistic over trials: it is judged on the rows as they are
    if trial and trial in data.columns and spec.value in data.columns and \
            pd.api.types.is_numeric_dtype(data[spec.value]):
        return _with_trials(spec, data, published, trial, seed=seed, resamples=resamples)
    return _evaluate(spec, data, published)


class _Statistics(Mapping):
    """Name -> function, numpy's own where there is one (pandas runs those on its fast paths); numpy is imported at
    the first function asked for, not when the checks are."""

    NAMES = ("mean", "median", "hmean", "geomean")

    def __getitem__(self, name: str) -> Callable:
        if name not in self.NAMES:
            raise KeyError(name)
        return {"mean": np.mean, "median": np.median,
                # throughput of trials of equal work: total work over total time (ops / mean seconds)
                "hmean": _hmean, "geomean": _geomean}[name]

    def __iter__(self):
        return iter(self.NAMES)

    def __len__(self) -> int:
        return len(self.NAMES)


def _hmean(x) -> float:
    return float(len(x) / np.sum(1.0 / np.asarray(x))) if (np.asarray(x) > 0).all() else math.nan


def _geomean(x) -> float:
    return float(np.exp(np.mean(np.log(x)))) if (np.asarray(x) > 0).all() else math.nan


STATISTICS: Mapping[str, Callable] = _Statistics()
"""The statistics a check (and a plot's interval) takes over a point's trials, by the name a loader or check gives."""


def _with_trials(spec: CheckSpec, data: pd.DataFrame, published, trial: str, *, seed: int,
                 resamples: int) -> CheckResult:
    """The check on the statistic of each point's trials, with a bootstrap interval of its margin.

    A point is a combination of the label columns (``attrs["trial_keys"]`` when the loader names them, else
    every column but the trial column and the float ones);
    its trials are resampled with replacement, each resample judged as the data itself is, and the interval is
    the margin +- 1.96 times the resampled margins' standard deviation (the normal bootstrap interval; see
    `RESAMPLES`). The check holds only when the whole interval is at or above 0,
    fails only when it is all below, and is otherwise inconclusive, with the interval and about how many
    trials would settle it. One trial per point: judged as it is, saying that no spread could be measured.
    The generator is seeded, so that a page is the same on every build.
    """
    stat_name = spec.options.get("statistic") or data.attrs.get("trial_statistic") or "mean"
    stat = STATISTICS[stat_name]
    values = [c for c in (spec.value, spec.options.get("target_column")) if c and c in data.columns]
    named = data.attrs.get("trial_keys")
    keys = ([c for c in named if c in data.columns and c != trial and c not in values] if named else
            [c for c in data.columns if c != trial and c not in values and not pd.api.types.is_float_dtype(data[c])])
    grouped = data.groupby(keys, dropna=False, sort=False) if keys else None
    groups = list(grouped.indices.values()) if keys else [np.arange(len(data))]
    # one row per point, in the order of `groups`: each resample only replaces the values (no groupby per resample)
    template = (pd.DataFrame([data.iloc[g[0]][keys] for g in groups]).reset_index(drop=True) if keys
                else pd.DataFrame(index=[0]))
    arrays = {c: data[c].to_numpy(float) for c in values}

    def collapse(picks: list[np.ndarray]) -> pd.DataFrame:
        return template.assign(**{c: [stat(a[p]) for p in picks] for c, a in arrays.items()})

    point = _evaluate(spec, collapse(groups), published)
    fewest = min(len(g) for g in groups)
    words = f"the {stat_name} of {fewest}{'+' if any(len(g) > fewest for g in groups) else ''} trials per point"
    if fewest < 2 or point.margin is None:
        why = "one trial per point: no spread could be measured" if fewest < 2 else words
        return dataclasses.replace(point, reason=f"{point.reason} ({why})", trials=fewest)
    rng = np.random.default_rng(seed)
    margins = []
    token, cache = _MARGIN_ONLY.set(True), _RESAMPLE_CACHE.set({})
    try:
        for _ in range(resamples):
            r = _evaluate(spec, collapse([rng.choice(g, size=len(g), replace=True) for g in groups]), published)
            margins.append(np.nan if r.margin is None else r.margin)
    finally:
        _MARGIN_ONLY.reset(token)
        _RESAMPLE_CACHE.reset(cache)
    m = np.asarray(margins, dtype=float)
    if np.isnan(m).mean() > 0.05:   # many resamples could not be judged at all: no honest interval
        return dataclasses.replace(point, verdict=Verdict.INCONCLUSIVE, margin=None, trials=fewest,
                                   reason=f"{point.reason} ({words}; {int(np.isnan(m).sum())} of {resamples} "
                                          f"resamples of the trials could not be judged)")
    se = float(np.nanstd(m, ddof=1)) if np.isfinite(m).sum() > 1 else 0.0
    lo, hi = point.margin - Z95 * se, point.margin + Z95 * se
    interval = f"95 % interval of the margin {_pct(lo)} to {_pct(hi)} ({words}, bootstrap of {resamples} resamples)"
    if lo >= 0 and point.verdict is Verdict.HOLDS or hi < 0 and point.verdict is Verdict.FAILS:
        return dataclasses.replace(point, reason=f"{point.reason}; {interval}", interval=(lo, hi), trials=fewest)
    centre, half = point.margin, (hi - lo) / 2
    settle = (f"about {math.ceil(fewest * (half / abs(centre)) ** 2)} trials per point would likely settle it"
              if centre and half else "no number of trials is likely to settle a margin this close to 0")
    return dataclasses.replace(point, verdict=Verdict.INCONCLUSIVE, interval=(lo, hi), trials=fewest,
                               reason=f"{point.reason}; but the {interval} spans 0: the run's own noise is as large "
                                      f"as the margin; {settle}")


def _evaluate(spec: CheckSpec, data: pd.DataFrame, published: Mapping[str, PublishedNumber]) -> CheckResult:
    if spec.value not in data.columns:
        return _inconclusive(spec, f"the measured data has no column {spec.value!r}")
    missing = [c for c in spec.options.get("by") or () if c not in data.columns]
    if missing:
        return _inconclusive(spec, f"the measured data has no column {missing[0]!r} to tell its points apart by")
    try:
        select = spec.options.get("select")
        rows = data.iloc[_selected(spec, "select", data, select)] if select else data
    except KeyError as exc:
        return _inconclusive(spec, f"the measured data has no column {exc.args[0]!r} to select on")
    if rows.empty:
        return _inconclusive(spec, f"no measured rows match {dict(spec.options.get('select') or {})}: "
                                   f"{_missing_point(data, spec.options.get('select') or {})}")
    return KINDS[spec.kind].judge(spec, rows, data, published)


def applies(spec: CheckSpec, scale: str | None) -> bool:
    """Whether the check belongs to the verdict of a run at ``scale`` (None: the paper's): every check does but one
    declared ``only_at`` other scales (a check of a rehearsal's own pipeline)."""
    only = spec.needs.only_at if spec.needs is not None else ()
    return not only or (scale or "paper") in only


def _judged(spec: CheckSpec, result: CheckResult, scale: str | None, host_facts: Mapping | None,
            requires=None, imported: bool = False) -> CheckResult:
    """``result`` as the run can judge it: ``inconclusive`` where the check may not be judged, the scale named.

    A check is judged at the paper's scale on a machine meeting the claim's ``requires``, unless it
    declares more (``judged_at``) or less (``needs``); see `reprobook.core.scales.CheckNeeds`.
    """
    from reprobook.core.scales import CheckNeeds
    needs = spec.needs if spec.needs is not None else CheckNeeds()
    unmet = needs.unmet(scale, host_facts, requires, imported=imported)
    on = judged_on(scale, host_facts)
    if unmet:
        why = f" ({needs.why})" if needs.why else ""
        return dataclasses.replace(
            result, verdict=Verdict.INCONCLUSIVE, margin=None, interval=None, judged_on=on,
            reason=f"cannot be judged on this run: {'; '.join(unmet)}{why}; "
                   f"{needs.settle(requires, imported=any(u.startswith('the imported run does not say') for u in unmet))}"
                   f". Measured: {result.reason}")
    if scale and scale != "paper" and result.verdict in (Verdict.HOLDS, Verdict.FAILS):
        return dataclasses.replace(result, reason=f"at {scale} scale: {result.reason}", judged_on=on)
    return dataclasses.replace(result, judged_on=on)


def judged_on(scale: str | None, host_facts: Mapping | None) -> str:
    """The scale and machine a check was judged on, in words (what the page and the report show per check)."""
    if host_facts is None:
        return "the authors' own outputs: the paper's scale, on their machine"
    f = host_facts
    parts = [f"{f['cpus']} CPUs" if f.get("cpus") else "",
             f"{f['physical_cores_per_socket']} physical cores per socket" if f.get("physical_cores_per_socket") else "",
             f"SMT {f['smt']}" if f.get("smt") not in (None, "", "unknown") else "",
             f"{f['mem_gib']:g} GiB" if isinstance(f.get("mem_gib"), (int, float)) else "",
             f"{f['numa_nodes']} NUMA node(s)" if f.get("numa_nodes") else "",
             str(f.get("os") or "")]
    machine = ", ".join(p for p in parts if p) or "a machine whose facts the run does not record"
    return f"{scale or 'paper'} scale, on {machine}"


def trial_rows(measured: pd.DataFrame) -> pd.DataFrame:
    """What the checks judge: the loader's rows of repeated trials when it keeps them (``attrs["trials"]``: the
    trial column, the statistic, the rows; see `_with_trials`), else the measured table itself."""
    spec = measured.attrs.get("trials")
    if not isinstance(spec, Mapping) or not spec.get("rows"):
        return measured
    rows = pd.DataFrame(list(spec["rows"]))
    trial, stat_name = spec.get("column", "trial"), spec.get("statistic", "mean")
    rows.attrs = {"trial_column": trial, "trial_statistic": stat_name}
    # only while they still are the table's trials: a table filtered or changed after loading keeps its attrs,
    # and is then judged as it is
    shared = [c for c in rows.columns if c in measured.columns and c != trial]
    if spec.get("keys"):   # the loader names the labels of a point (a label may be a number, e.g. a range size)
        keys = [c for c in spec["keys"] if c in shared]
        floats = [c for c in shared if c not in keys and pd.api.types.is_float_dtype(rows[c])]
        rows.attrs["trial_keys"] = keys
    else:
        floats = [c for c in shared if pd.api.types.is_float_dtype(rows[c])]
        keys = [c for c in shared if c not in floats]
    if not keys or not floats:
        return measured
    try:
        collapsed = rows.groupby(keys, dropna=False)[floats].agg(STATISTICS[stat_name]).reset_index()
        both = measured[keys + floats].merge(collapsed, on=keys, how="outer", suffixes=("", " (trials)"),
                                             indicator=True)
    except (KeyError, TypeError, ValueError):
        return measured
    same = (both["_merge"] == "both").all() and all(
        np.isclose(both[c].to_numpy(float), both[f"{c} (trials)"].to_numpy(float), rtol=1e-9, equal_nan=True).all()
        for c in floats)
    return rows if same else measured


def _columns_of(spec: CheckSpec) -> set[str]:
    """The columns a check reads: its value and every column its options name."""
    o = spec.options
    cols = {spec.value, *(o.get("by") or ())}
    cols |= {o[k] for k in ("x", "target_column") if isinstance(o.get(k), str)}
    cols |= {o[k]["column"] for k in ("min", "max") if isinstance(o.get(k), Mapping) and "column" in o[k]}
    for k in ("select", "numerator", "denominator", "target_rows"):
        if isinstance(o.get(k), Mapping):
            cols |= set(o[k])
    return cols


def with_attrs(frame: pd.DataFrame, keep: Iterable[str] = ()) -> pd.DataFrame:
    """``frame`` (not copied: a shallow view) with only the attrs named in ``keep``. pandas deep-copies a frame's
    attrs into every column and selection taken from it, and a loader's carry its trials' rows: code that selects
    many times works on this."""
    out = frame.copy(deep=False)
    out.attrs = {k: v for k, v in frame.attrs.items() if k in set(keep)}
    return out


_CHECKS_READ = ("trial_column", "trial_statistic", "trial_keys")
"""The attrs of a measured table that `evaluate_check` reads."""


def _rows_for(spec: CheckSpec, trials: pd.DataFrame, measured: pd.DataFrame) -> pd.DataFrame:
    """The loader's trials when they hold every column the check reads, else the measured table (a knee, found
    on the pooled curve, is a column of the table only)."""
    return trials if trials is measured or _columns_of(spec) <= set(trials.columns) else measured


def unmatched_labels(published: Iterable[PublishedNumber], measured: pd.DataFrame) -> list[str]:
    """The row labels of the published tables that no measured row has but one nearly has, one sentence each.

    A label misspelt in the paper file (``memcache`` for ``memcached``, ``tpcc`` for ``TPCC``) would otherwise
    leave its published numbers out of every comparison without a word; the page shows these beside the verdict.
    A label far from every measured value is a row this run did not measure (a table shared by several claims,
    a system run elsewhere), not a misspelling, and is not named.
    """
    import difflib
    out = []
    seen: set[tuple] = set()
    for n in published:
        for col, val in n.labels.items():
            if not n.table or col == n.column_label or col not in measured.columns or isinstance(val, (int, float)):
                continue
            if (n.table, col, val) in seen:
                continue
            seen.add((n.table, col, val))
            have = {_key(v): str(v) for v in measured[col].dropna().unique()}
            if _key(val) in have:
                continue
            folded = {k.casefold(): v for k, v in have.items()}
            near = ([folded[str(val).casefold()]] if str(val).casefold() in folded else
                    [have[k] for k in difflib.get_close_matches(str(val), list(have), n=1, cutoff=0.75)])
            if near:
                out.append(f"published table {n.table!r}: no measured row has {col} {val!r} (the run has "
                           f"{near[0]!r}): a label misspelt in the paper file? Its published numbers are compared "
                           f"with nothing")
    return out


def check_claim(claim: Claim, measured: pd.DataFrame | None, *, source: str,
                published: Mapping[str, PublishedNumber] | None = None, not_run_reason: str | None = None,
                warnings: Iterable[str] = (), scale: str | None = None,
                host_facts: Mapping | None = None, imported: bool = False,
                partial: Mapping | None = None) -> ClaimVerdict:
    """Every check of ``claim`` on ``measured``; ``None`` or an empty table means ``not run``.

    The claim holds only if every check holds; it fails if any fails; else it
    is inconclusive. The margin reported is the tightest of the checks.
    ``warnings`` (e.g. the host fell short of the claim's requirements) are
    carried to the page beside the verdict. ``scale`` and ``host_facts`` are
    the run's (``host_facts`` None for the authors' shipped outputs: their own
    machine; ``{}`` for a run that records no facts, ``imported`` if it was
    done by hand). A check is judged only at the paper's scale on a machine
    meeting the claim's requirements unless it declares otherwise
    (``judged_at``, ``needs``); elsewhere it is ``inconclusive`` with the reason
    and its measured values, and a check judged at a scale other than the
    paper's says so in its reason. ``partial`` (`reprobook.sources.partial_of`: a run that did not finish, with
    the points that did) makes a check that holds on the finished points only *inconclusive*, saying what was not
    judged; one that fails on them still fails.
    """
    pub = dict(published) if published is not None else {n.id: n for n in claim.published}
    warnings = tuple(warnings)
    missing = partial_words(partial) if partial else ""
    if missing:
        warnings += (f"a partial run: {missing}. The table and the plot show the points that finished; the checks "
                     f"judge only those.",)
    if measured is None or measured.empty:
        reason = (f"the run {partial.get('status', 'failed')} before any point finished: {missing}" if missing
                  else not_run_reason or "no outputs are available for this claim")
        return ClaimVerdict(claim.key, Verdict.NOT_RUN, reason, None, source, (), warnings)
    # files of one run that disagree (a loader's consistency check): evidence about the artifact, shown with the
    # verdict, which is computed from the primary data
    findings = tuple(dict.fromkeys(str(f) for f in measured.attrs.get("findings") or ()))
    if not scale or scale == "paper":   # a rehearsal measures fewer rows on purpose
        warnings = (*warnings, *unmatched_labels(claim.published, measured))
    trials = trial_rows(measured)
    # the checks judge the rows with only the attrs they read: pandas deep-copies a frame's attrs into every frame
    # made from it, and a loader's attrs carry its trials' rows, its findings, ... (a third of the checks' time)
    judged = with_attrs(measured, _CHECKS_READ)
    trials = judged if trials is measured else trials
    # the machine the numbers come from: the measured role's (its requires), else the claim's one host
    requires = claim.role(claim.measured_on).requires if claim.measured_on else claim.requires
    not_run = measured.attrs.get("not_run") or {}   # a column the run could not fill (loader): why, with the check

    def why_not_run(spec: CheckSpec, result: CheckResult) -> CheckResult:
        if spec.value in not_run and result.verdict is Verdict.INCONCLUSIVE:
            return dataclasses.replace(result, reason=f"{result.reason} ({spec.value}: {not_run[spec.value]})")
        return result
    results = tuple(_judged(spec, why_not_run(spec, evaluate_check(spec, _rows_for(spec, trials, judged), pub)),
                            scale, host_facts, requires, imported)
                    for spec in claim.checks if applies(spec, scale))
    if missing:
        results = tuple(_on_partial(r, missing) for r in results)
    failing = [r for r in results if r.verdict is Verdict.FAILS]
    unsure = [r for r in results if r.verdict is Verdict.INCONCLUSIVE]
    if failing:
        worst = min(failing, key=lambda r: r.margin)
        return ClaimVerdict(claim.key, Verdict.FAILS, f"{worst.what}: {worst.reason}", worst.margin, source, results,
                            warnings, scale=scale or "", findings=findings)
    if unsure:
        return ClaimVerdict(claim.key, Verdict.INCONCLUSIVE, f"{unsure[0].what}: {unsure[0].reason}", None,
                            source, results, warnings, scale=scale or "", findings=findings)
    tight = min(results, key=lambda r: r.margin)
    return ClaimVerdict(claim.key, Verdict.HOLDS, f"tightest check — {tight.what}: {tight.reason}", tight.margin,
                        source, results, warnings, scale=scale or "", findings=findings)


def statistic_of(claim: Claim, column: str | None, measured: pd.DataFrame | None) -> str:
    """The statistic the claim's checks take over a point's trials of ``column``: a check's own ``statistic``,
    else the loader's (``attrs["trials"]``, ``attrs["trial_statistic"]``), else ``mean``. What the plot joins and
    the comparison shows, so that the page shows the number the verdict judged."""
    for spec in claim.checks:
        if spec.value == column and spec.options.get("statistic"):
            return str(spec.options["statistic"])
    attrs = getattr(measured, "attrs", {}) or {}
    trials = attrs.get("trials")
    if isinstance(trials, Mapping) and trials.get("statistic"):
        return str(trials["statistic"])
    return str(attrs.get("trial_statistic") or "mean")


STATISTIC_WORDS = {"mean": "mean", "median": "median", "geomean": "geometric mean",
                   "hmean": "harmonic mean (total work over total time)"}
"""The statistics of `STATISTICS` in words."""


def partial_words(partial: Mapping) -> str:
    """What a partial run holds and lacks, in words: ``2 of 4 points finished (clients=2, clients=4); clients=6
    failed: its clients could not connect; not run: clients=8``."""
    done, failed, not_run = (list(partial.get(k) or ()) for k in ("done", "failed", "not_run"))
    total = partial.get("total") or len(done) + len(failed) + len(not_run)
    parts = [f"{len(done)} of {total} point{'s' if total != 1 else ''} finished"
             + (f" ({', '.join(map(str, done))})" if done else "")]
    parts += [f"{f.get('point', 'a point')} failed: {f.get('why', 'no reason recorded')}" for f in failed]
    if not_run:
        parts.append(f"not run: {', '.join(map(str, not_run))}")
    return "; ".join(parts)


def _on_partial(result: CheckResult, missing: str) -> CheckResult:
    """A check judged on the points a partial run finished: holding there is not holding (the rest was not
    measured), so it is inconclusive and says so; failing there is failing."""
    if result.verdict is Verdict.HOLDS:
        return dataclasses.replace(result, verdict=Verdict.INCONCLUSIVE, margin=None, interval=None,
                                   reason=f"holds on the points that finished ({result.reason}), but the run did not "
                                          f"finish ({missing}), so the claim is not judged as a whole")
    if result.verdict is Verdict.FAILS:
        return dataclasses.replace(result, reason=f"{result.reason} (on the points that finished)")
    return result
