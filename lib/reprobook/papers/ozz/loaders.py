"""Ozz (SOSP'24): OEMU's overhead measured with LMBench in a guest kernel (Table 5).

A run measures two kernels, each in its own QEMU guest: the OEMU-instrumented one
(``oemu``) and the non-instrumented baseline (``baseline``). Each guest leaves LMBench's
summary (``summary-<kernel>.txt``) and the raw results files behind it
(``<kernel>/results/<OS>/<host>.<n>``); `reprobook.papers.ozz.lmbench` reads both, and where
both are there they must agree cell for cell.

The instrumented kernel's first LMBench run (``make results``) happens before
``~/enable_kssb`` turns OEMU's callbacks on, as the guide warns, so it is kept apart:
its rows have ``setting`` ``oemu-off``; the later runs (``make rerun``) are ``oemu``.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from reprobook.errors import OutputError
from reprobook.papers.ozz import lmbench
from reprobook.core.loaders import loader
from reprobook.lazy import lazy

pd = lazy("pandas")

KERNELS = ("oemu", "baseline")
"""The two kernels of the experiment, as they name the outputs' directories and files."""
COLUMNS = ["kernel", "setting", "section", "column", "row", "value", "unit", "direction"]
DIRECTION_WORDS = {"smaller": "smaller is better", "bigger": "bigger is better"}
NOT_RUN = "not run"  # the cells of a kernel with no row in the run (overhead)


def _kernel_of(path: Path) -> str:
    m = re.fullmatch(r"summary-(\w+)\.txt", path.name)
    if m and m.group(1) in KERNELS:
        return m.group(1)
    for parent in path.parents:
        if parent.name in KERNELS:
            return parent.name
    raise OutputError(f"cannot tell which kernel this file belongs to: it should be named summary-<kernel>.txt or "
                      f"lie under a directory named after the kernel ({' or '.join(KERNELS)})", file=path)


@loader("ozz.lmbench", words={"kernel": "kernel", "setting": "setting", "section": "section", "column": "LMBench column", "value": "value", "unit": "unit", "row": "run", "slowdown": ("slowdown", "×")})
def lmbench_overhead(outputs) -> pd.DataFrame:
    """Table 5: every LMBench cell of both kernels, one row per kernel, run and column.

    Outputs ``summary`` (``summary-<kernel>.txt``, from ``make -C results summary``) and
    ``results`` (the raw ``<host>.<n>`` files). The values come from the results files
    where they were fetched (the summary cuts digits off) after checking that the summary
    prints exactly what they hold, else from the summary. Machine parameters (the clock,
    cache line, ...) and blank cells are left out.

    A section LMBench left out of a run (its measurements did not come out, as happens on
    a loaded machine) has no rows: ``attrs["sections"]`` lists, per kernel, setting and run,
    each section the run's subset fills with ``measured`` or ``not measured``, and
    ``attrs["not_measured"]`` says in words what is missing (the verdict's reason carries
    it). With the results files the subset is read from their header; from a summary alone
    it is judged from the sections printed.

    Columns: ``kernel`` (``oemu``, ``baseline``), ``setting`` (``oemu-off``: the
    instrumented kernel before its callbacks were enabled; ``oemu``; ``baseline``),
    ``section`` (e.g. ``processes``), ``column`` (e.g. ``null call``), ``row`` (the
    summary's row in that section: one per LMBench run), ``value``, ``unit``,
    ``direction`` (``smaller`` or ``bigger`` is better).
    """
    summaries: dict[str, list[Path]] = {}
    results: dict[str, list[Path]] = {}
    for path in outputs.files.get("summary", ()):
        summaries.setdefault(_kernel_of(path), []).append(path)
    for path in outputs.files.get("results", ()):
        results.setdefault(_kernel_of(path), []).append(path)
    if not summaries and not results:
        raise OutputError("neither a summary (summary-<kernel>.txt) nor results files were fetched",
                          file=outputs.location or "ozz.lmbench")
    frames, coverage = [], []
    for kernel in KERNELS:
        paths = summaries.get(kernel, [])
        if len(paths) > 1:
            raise OutputError(f"{len(paths)} summaries of the {kernel} kernel; expected one", file=paths[1])
        if results.get(kernel):
            frame = lmbench.summarise(results[kernel])
            if paths:
                lmbench.agree(lmbench.read_summary(paths[0]), frame, file=paths[0])
            first = frame["number"] == frame["number"].min()
            runs = [lmbench.read_results(p) for p in results[kernel]]
            low = min(r.number for r in runs)
            for r in runs:
                setting = "oemu-off" if kernel == "oemu" and r.number == low else kernel
                coverage += _coverage(kernel, setting, str(r.number), r.expected(), r.present())
        elif paths:
            frame = lmbench.read_summary(paths[0])
            first = frame["row"] == 1
            present = tuple(dict.fromkeys(frame["section"]))
            settings = [kernel] if kernel != "oemu" else ["oemu-off"] + (["oemu"] if frame["row"].max() > 1 else [])
            for setting in settings:  # a summary alone cannot tell which run lacks a section, only that all do
                coverage += _coverage(kernel, setting, "all", lmbench.implied_subsets(present), present)
        else:
            continue
        setting = pd.Series(kernel, index=frame.index)
        if kernel == "oemu":
            setting[first] = "oemu-off"
        frames.append(frame.assign(kernel=kernel, setting=setting))
    frame = pd.concat(frames, ignore_index=True)
    frame = frame[(frame["direction"] != "") & frame["value"].notna()]
    frame = frame[COLUMNS].reset_index(drop=True)
    table = pd.DataFrame(coverage, columns=SECTION_COLUMNS)
    frame.attrs["sections"] = table.to_dict("records")
    frame.attrs["not_measured"] = _not_measured_words(table)
    frame.attrs["trial_column"] = "row"   # one row per LMBench run: the checks judge their mean, with an interval
    return frame


SECTION_COLUMNS = ["kernel", "setting", "run", "section", "title", "status"]


def _coverage(kernel: str, setting: str, run: str, expected, present) -> list[dict]:
    """One row per section the run's subset can fill (or it printed): measured, or not measured."""
    wanted = list(expected) if expected is not None else []
    wanted += [s for s in present if s not in wanted]
    return [{"kernel": kernel, "setting": setting, "run": run, "section": sid, "title": lmbench.BY_ID[sid].title,
             "status": "measured" if sid in present else lmbench.NOT_MEASURED}
            for sid in (sec.id for sec in lmbench.SECTIONS) if sid in wanted]


def _not_measured_words(table: pd.DataFrame) -> list[str]:
    """One sentence per setting and section LMBench left out, naming the runs (``not_measured`` of the loader)."""
    out = []
    missing = table[table["status"] == lmbench.NOT_MEASURED]
    for (setting, section), rows in missing.groupby(["setting", "section"], sort=False):
        runs = list(rows["run"])
        which = "" if runs == ["all"] else f" in run{'s' if len(runs) > 1 else ''} {', '.join(runs)}"
        out.append(f"{setting}: {lmbench.left_out_words(section)}{which}")
    return out


def sections(measured: pd.DataFrame) -> pd.DataFrame:
    """Which LMBench sections each setting measured, from the loader's table: the page's account of what is missing.

    One row per setting and section that setting's LMBench subset fills: ``setting``,
    ``section`` (LMBench's title), ``runs`` (how many runs printed it, of how many) and
    ``status``: ``measured``, or ``not measured`` when LMBench left the section out of
    every run (a section it printed for some runs only says which). A section is never
    reported as zero or as an empty row. Empty without a run.
    """
    cols = ["setting", "section", "runs", "status"]
    table = pd.DataFrame(getattr(measured, "attrs", {}).get("sections") or [], columns=SECTION_COLUMNS)
    rows = []
    for (setting, section), group in table.groupby(["setting", "section"], sort=False):
        done = group[group["status"] == "measured"]
        status = ("measured" if len(done) == len(group) else lmbench.NOT_MEASURED if done.empty else
                  f"{lmbench.NOT_MEASURED} in run(s) {', '.join(group.loc[group['status'] != 'measured', 'run'])}")
        runs = "all" if list(group["run"]) == ["all"] else f"{len(done)} of {len(group)}"
        rows.append({"setting": setting, "section": group["title"].iloc[0], "runs": runs, "status": status})
    return pd.DataFrame(rows, columns=cols)


def _mark_not_measured(table: pd.DataFrame, measured: pd.DataFrame | None, settings) -> pd.DataFrame:
    """Write ``not measured`` in the cells of ``settings`` whose section LMBench left out of every run."""
    cover = pd.DataFrame(getattr(measured, "attrs", {}).get("sections") or [], columns=SECTION_COLUMNS)
    for setting in settings:
        mine = cover[cover["setting"] == setting]
        left_out = [sid for sid, g in mine.groupby("section", sort=False) if (g["status"] != "measured").all()]
        for sid in left_out:
            sec = lmbench.BY_ID[sid]
            if not sec.direction:
                continue  # machine parameters: never in this table, measured or not (sections() says it)
            for col in (c for c in sec.columns if c.measure):
                hit = (table["section"] == sid) & (table["column"] == col.name)
                if not hit.any():
                    table = pd.concat([table, pd.DataFrame([{
                        "section": sid, "column": col.name, "unit": col.unit if col.unit is not None else sec.unit,
                        "direction": DIRECTION_WORDS.get(sec.direction, sec.direction)}])], ignore_index=True)
                    hit = (table["section"] == sid) & (table["column"] == col.name)
                table[setting] = table[setting].astype(object)
                table.loc[hit, setting] = lmbench.NOT_MEASURED
    return table


def _lmbench_order(frame: pd.DataFrame) -> pd.DataFrame:
    rank = {(sec.id, col.name): (i, j) for i, sec in enumerate(lmbench.SECTIONS) for j, col in enumerate(sec.columns)}
    key = [rank.get(k, (len(rank), 0)) for k in zip(frame["section"], frame["column"])]
    return frame.iloc[sorted(range(len(frame)), key=key.__getitem__)].reset_index(drop=True)


def overhead(measured: pd.DataFrame, *, guide: pd.DataFrame | None = None, slower: str = "oemu",
             faster: str = "baseline") -> pd.DataFrame:
    """The instrumented kernel against the baseline, per LMBench column: the mean of each, their ratio, the slowdown.

    ``measured`` is the loader's table, or the published numbers as
    ``rb.published(claim, y="value")`` gives them. ``ratio`` is ``slower`` over
    ``faster``; ``slowdown`` turns it so that above 1 always means slower (the ratio for
    times, its inverse for bandwidths). A side that was not measured leaves NaN. With
    ``guide`` (published numbers), its baseline, instrumented and slowdown columns are
    added beside, labelled as the guide's example. Rows come in LMBench's order. A section
    LMBench left out of every run of a setting (the loader's ``attrs["sections"]``) has its
    cells in that setting's column say ``not measured``, never a number; a setting with no
    row at all (a kernel the run did not boot) says ``not run`` in every cell.
    """
    cols = ["section", "column", "unit", "direction", faster, slower, "ratio", "slowdown"]
    rows = []
    if measured is not None and not measured.empty:
        keys = ["section", "column"]
        means = measured[measured["setting"].isin([slower, faster])].pivot_table(
            index=keys, columns="setting", values="value", aggfunc="mean")
        info = measured.drop_duplicates(keys).set_index(keys)
        for section, column in dict.fromkeys(zip(measured["section"], measured["column"])):
            got = means.loc[(section, column)] if (section, column) in means.index else pd.Series(dtype=float)
            base, slow = float(got.get(faster, math.nan)), float(got.get(slower, math.nan))
            unit = info.loc[(section, column)].get("unit", "")
            direction = info.loc[(section, column)].get("direction", "")
            if not isinstance(direction, str) or not direction:  # published rows carry none: it is the section's
                direction = lmbench.BY_ID[section].direction if section in lmbench.BY_ID else ""
            if not isinstance(unit, str) or not unit:
                unit = lmbench.BY_ID[section].unit if section in lmbench.BY_ID else ""
            ratio = slow / base if base else math.nan
            rows.append({"section": section, "column": column, "unit": unit,
                         "direction": DIRECTION_WORDS.get(direction, direction), faster: base, slower: slow,
                         "ratio": ratio, "slowdown": 1 / ratio if direction == "bigger" else ratio})
    table = _mark_not_measured(pd.DataFrame(rows, columns=cols), measured, (faster, slower))
    if measured is not None and not measured.empty and "setting" in measured and not table.empty:
        for setting in (faster, slower):  # a kernel the run never measured (the rehearsal's OEMU kernel): not run
            if setting not in set(measured["setting"]):
                table[setting] = NOT_RUN
    if guide is not None:
        example = overhead(guide, slower=slower, faster=faster)
        example = example[["section", "column", "unit", "direction", faster, slower, "slowdown"]].rename(
            columns={c: f"{c} (guide's example)" for c in (faster, slower, "slowdown")})
        table = table.merge(example, on=["section", "column"], how="outer", suffixes=("", " (guide)"))
        for c in ("unit", "direction"):
            table[c] = table[c].where(table[c].notna(), table[f"{c} (guide)"])
        table = table.drop(columns=["unit (guide)", "direction (guide)"])
    return _lmbench_order(table)


_STEP = re.compile(r"^### reprobook step (\d+)/(\d+): (.*?)( \[skipped: done in an earlier attempt\])?$")
_DONE = re.compile(r"^### reprobook: step (\d+) done in (\d+) s$")


def phases(outputs) -> pd.DataFrame:
    """How long each step of the live run took, from its log (output ``timings``).

    A run resumed after a failure took each step in the attempt that finished it; the
    timings file holds every attempt's step lines, earlier attempts first.

    Columns: ``step``, ``name``, ``seconds`` (NaN for a step that never finished) and
    ``hours``.
    """
    paths = outputs.files.get("timings", ()) if outputs is not None and outputs.available else ()
    names: dict[int, str] = {}
    seconds: dict[int, float] = {}
    for path in paths:
        for line in Path(path).read_text(errors="replace").splitlines():
            if m := _STEP.match(line):
                names[int(m.group(1))] = re.sub(r" \(expected [^)]*\)$", "", m.group(3))
            elif m := _DONE.match(line):
                seconds[int(m.group(1))] = float(m.group(2))
    frame = pd.DataFrame([{"step": i, "name": names[i], "seconds": seconds.get(i, math.nan)} for i in sorted(names)],
                         columns=["step", "name", "seconds"])
    return frame.assign(hours=(frame["seconds"] / 3600).round(2))
