"""Parsing the authors' shipped outputs with reprobook's parsers.

Every file of the artifact mirror that reprobook has a parser for (`reprobook.parsers.aardvark`):
``validators.csv`` and ``archives.csv`` (trial times), EDRAX's ``results`` and pointproofs'
``bench-results`` (Table 1 latencies). Each is parsed over and over for at least a second (a
quarter of one with ``--quick``). There is no target; the plain tool is ``pandas.read_csv`` on the
files that are plain CSV (it reads the values, without reprobook's checks, names and units).
"""

from __future__ import annotations

import time
from pathlib import Path

from .common import Context, Result, fmt_s

AARDVARK = "github.com/derbear/aardvark-prototype/dd8f6aaf5f76173118f3f3decbe099bda5972ce2/go-algorand/ledger"
EDRAX = "github.com/derbear/edrax-vcs/1f1a3748d1530da1e75fadbce987ee6e6fa3fd1d/results"
VECCOM = "github.com/derbear/pointproofs/d72ed3c8b0e4624053360591fcc8d03ce720ae90/bench-results"


def _rate(fn, min_s: float) -> tuple[int, float]:
    """Call ``fn`` until ``min_s`` has passed (at least 3 times); return (calls, seconds)."""
    fn()  # warm-up: first-call costs (imports, regex compilation) are not the steady rate
    n, t0 = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        took = time.perf_counter() - t0
        if took >= min_s and n >= 3:
            return n, took


def run(ctx: Context) -> list[Result]:
    import pandas as pd

    from reprobook.parsers import aardvark as pa

    m = ctx.mirror
    if not m.is_dir():
        raise RuntimeError(f"no artifact mirror at {m}; set REPROBOOK_ARTIFACT_MIRROR")
    formats = [
        ("validators.csv", m / AARDVARK / "validators.csv", lambda p: pa.read_trials_csv(p, role="validator"), True),
        ("archives.csv", m / AARDVARK / "archives.csv", lambda p: pa.read_trials_csv(p, role="archive"), True),
        ("edrax results", m / EDRAX, pa.read_edrax, False),
        ("pointproofs bench-results", m / VECCOM, pa.read_veccom, False),
    ]
    # the shipped files are a few KiB, so the per-file cost dominates; a copy of validators.csv repeated
    # to ~0.5 MB shows the per-byte rate
    big = ctx.tmp / "validators-x300.csv"
    big.write_text((m / AARDVARK / "validators.csv").read_text() * 300)
    formats.append(("validators.csv x300 (synthetic)", big, lambda p: pa.read_trials_csv(p, role="validator"), True))
    min_s = 0.2 if ctx.quick else 1.0
    results = []
    for name, path, parse, is_csv in formats:
        path = Path(path)
        size = path.stat().st_size
        rows = len(parse(path))
        n, took = _rate(lambda: parse(path), min_s)
        per = took / n
        figures = (f"reprobook {fmt_s(per)} per file ({size / 1e6 / per:.2f} MB/s, {1 / per:.0f} files/s, "
                   f"{rows} rows, {size / 1024:.1f} KiB)")
        if per > min_s:
            ctx.log(f"{name}: {fmt_s(per)} per parse")
        plain = ratio = None
        comparison = ""
        if is_csv:
            pn, ptook = _rate(lambda: pd.read_csv(path, header=None, names=["op", "cores", "seconds"]), min_s)
            plain = ptook / pn
            ratio = per / plain
            figures += f", pandas.read_csv {fmt_s(plain)} ({size / 1e6 / plain:.2f} MB/s)"
            comparison = f"{ratio:.1f}x the time of pandas.read_csv"
        ctx.log(f"{name}: {n} parses in {took:.2f} s")
        results.append(Result("parse", f"parse {name}", figures, value=size / 1e6 / per, unit="MB/s",
                              plain_tool="pandas.read_csv" if is_csv else None,
                              plain_value=size / 1e6 / plain if plain else None, ratio=ratio, comparison=comparison,
                              samples={"seconds_per_file": per, "calls": n, "bytes": size, "rows": rows,
                                       "files_per_s": 1 / per, "pandas_seconds_per_file": plain}))
    return results
