"""Building the website: the real book and a synthetic book of 40 claim pages, cold, against a plain
``jupyter-book build`` of the same tree in the same run; the speed-up from 1 to 2 workers; a rebuild with
nothing changed; a rebuild after a new run of one claim.

Each book is built in a copy of the project (``_config.yml``, ``_toc.yml``, ``book/``, ``notebooks/``,
``configs/``) in the scratch directory, with its own run store and the artifact mirror, so the project's own
``_build`` is left alone. Each build is ``python -m reprobook book`` as a user runs it (interpreter start
included); the plain tool is ``jupyter-book build`` on a clean ``_build``, which executes the same notebooks
one after another in MyST-NB.

The **synthetic** book is generated from the real claims: the papers copied under other ids (``aardvark-s2``,
``verus-s2``, ...: the same claims, outputs and checks), each copy with its chapter page and its claim
notebooks, until the book has 40 claim pages (the last copy keeps only the claims still wanted), so that the
summary page and the table of contents hold 40 claims.

Targets: a cold build of either book in at most 0.3x the plain build; a rebuild with nothing changed in at
most 2 % of a cold build; after a new run of aardvark/archive-throughput exactly that page and the summary
execute again.

**The cost of judging with intervals.** Every claim of the real book is judged on the outputs its page
shows (the authors' shipped outputs), in-process, twice: as the pages judge it (a claim whose rows hold
repeated trials gets bootstrap intervals) and with its trials taken away (each point judged once). The
difference, summed over the book, is set against the time the cold build spent executing every page;
targets: at most 10 % of it, and at most 1 s on any one claim page.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from .common import ROOT, Context, Result, Samples, fmt_s, interpreter_start, library_fingerprint, timed

TARGET_COLD = 0.3
TARGET_NOOP = 0.02
TARGET_JUDGING_SHARE = 0.10
TARGET_JUDGING_PAGE_S = 1.0
TARGET_PAGE_EXTRA = 600_000  # bytes a claim page may weigh above the theme's bare page (its plots, tables, code)
SYNTHETIC_PAGES = 40
CLAIM = "aardvark/archive-throughput"
EXPECTED = sorted(["archive-throughput.ipynb", "index.ipynb", "summary.ipynb"])
"""What a new run of the claim re-executes: its page and the two pages that show its verdict (the chapter's list of
verdicts and the summary), nothing else."""
ARCHIVES = ("github.com/derbear/aardvark-prototype/dd8f6aaf5f76173118f3f3decbe099bda5972ce2/"
            "go-algorand/ledger/archives.csv")


def _copy_project(dest: Path) -> None:
    dest.mkdir(parents=True)
    ignore = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "_build")
    for item in ("_config.yml", "_toc.yml", "book", "notebooks", "configs"):
        src = ROOT / item
        if src.is_dir():
            shutil.copytree(src, dest / item, ignore=ignore)
        else:
            shutil.copy2(src, dest / item)


def synthetic_book(dest: Path, pages: int = SYNTHETIC_PAGES) -> int:
    """A copy of the project with its papers copied under other ids until it has ``pages`` claim pages.

    The copies (``aardvark-s2``, ``verus-s2``, ...) are the same claims, outputs and checks, each with its
    chapter page and claim notebooks; the last copy keeps only as many claims as are still wanted.
    Returns the number of claim pages.
    """
    _copy_project(dest)
    toc = yaml.safe_load((dest / "_toc.yml").read_text())
    papers = sorted(p.stem for p in (dest / "configs" / "papers").glob("*.yaml"))
    count = len(list((dest / "notebooks").glob("*/*.ipynb")))
    parts, k = list(toc["parts"]), 1
    while count < pages:
        k += 1
        for paper in papers:
            if count >= pages:
                break
            new = f"{paper}-s{k}"
            data = yaml.safe_load((dest / "configs" / "papers" / f"{paper}.yaml").read_text())
            data["paper"]["id"], data["paper"]["short"] = new, f"{data['paper']['short']} (synthetic {k})"
            data["claims"] = data["claims"][:pages - count]
            keep = {c["id"] for c in data["claims"]}
            count += len(keep)
            (dest / "configs" / "papers" / f"{new}.yaml").write_text(yaml.safe_dump(data, sort_keys=False,
                                                                                    allow_unicode=True))

            def rename(text: str) -> str:
                return (text.replace(f"notebooks/{paper}/", f"notebooks/{new}/").replace(f'"{paper}/', f'"{new}/')
                        .replace(f'("{paper}")', f'("{new}")').replace(f"papers/{paper}.yaml", f"papers/{new}.yaml"))

            sources = [p for p in sorted((dest / "notebooks" / paper).glob("*.ipynb")) if p.stem in keep]
            for src in sources + [dest / "book" / paper / "index.ipynb"]:
                target = Path(rename(str(src)).replace(f"/book/{paper}/", f"/book/{new}/"))
                target.parent.mkdir(parents=True, exist_ok=True)
                nb = json.loads(rename(src.read_text()))
                first = nb["cells"][0]
                if first["cell_type"] == "markdown" and first["source"]:
                    first["source"][0] = first["source"][0].rstrip("\n") + f" (synthetic copy {k})\n"
                if src.name == "index.ipynb":  # the chapter's list of claim pages: only those copied
                    for cell in nb["cells"]:
                        if cell["cell_type"] == "markdown":
                            cell["source"] = [line for line in cell["source"] if f"notebooks/{new}/" not in line
                                              or any(f"notebooks/{new}/{c}`" in line for c in keep)]
                target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
            part = next(p for p in toc["parts"] if any(c["file"] == f"book/{paper}/index" for c in p["chapters"]))
            chapters = json.loads(rename(json.dumps(part["chapters"])).replace(f"book/{paper}/", f"book/{new}/"))
            for chapter in chapters:
                chapter["sections"] = [s for s in chapter.get("sections", []) if s["file"].rsplit("/", 1)[-1] in keep]
            parts.append({"caption": f"{part['caption']} (synthetic copy {k})", "chapters": chapters})
    toc["parts"] = parts
    (dest / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    return len(list((dest / "notebooks").glob("*/*.ipynb")))


def _executed(log: str) -> list[str]:
    return sorted(line.split(":")[0].rsplit("/", 1)[-1] for line in log.splitlines() if "Executing notebook" in line)


class _Builder:
    def __init__(self, ctx: Context, root: Path, runs: Path):
        self.ctx, self.root = ctx, root
        self.env = {**os.environ, "REPROBOOK_ROOT": str(root), "REPROBOOK_RUNS": str(runs),
                    "REPROBOOK_ARTIFACT_MIRROR": str(ctx.mirror), "REPROBOOK_ARTIFACT_CACHE": str(runs.parent / "cache")}
        for key in ("REPROBOOK_HOSTS", "REPROBOOK_SSH_CONFIG", "REPROBOOK_BOOK_WORKERS"):
            self.env.pop(key, None)

    def reprobook(self, *extra: str) -> tuple[float, str]:
        took, p = timed(lambda: subprocess.run([sys.executable, "-m", "reprobook", "book", *extra], cwd=self.root,
                                               env=self.env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                               timeout=1800))
        log = p.stdout + p.stderr
        if p.returncode != 0:
            raise RuntimeError(f"`reprobook book {' '.join(extra)}` failed (exit {p.returncode}):\n{log[-3000:]}")
        return took, log

    def plain(self) -> float:
        shutil.rmtree(self.root / "_build", ignore_errors=True)
        jb = Path(sys.executable).with_name("jupyter-book")
        took, p = timed(lambda: subprocess.run([str(jb), "build", str(self.root), "-W", "--keep-going"], cwd=self.root,
                                               env=self.env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                               timeout=1800))
        if p.returncode != 0:
            raise RuntimeError(f"jupyter-book build failed (exit {p.returncode}):\n{(p.stdout + p.stderr)[-3000:]}")
        shutil.rmtree(self.root / "_build")
        return took


def _cold(name: str, what: str, cold: float, plain: float, executed: list[str], workers: int) -> Result:
    ratio = cold / plain
    return Result(
        "book", name,
        f"reprobook book --clean {fmt_s(cold)} ({len(executed)} notebooks, {workers} workers), "
        f"jupyter-book build {fmt_s(plain)}",
        value=cold, unit="s", plain_tool="jupyter-book build", plain_value=plain, ratio=ratio,
        comparison=f"{ratio:.2f}x jupyter-book build", target=f"<= {TARGET_COLD:g}x", passed=ratio <= TARGET_COLD,
        notes=[what], samples={"cold_s": cold, "jupyter_book_s": plain, "executed": executed, "workers": workers})


def run(ctx: Context) -> list[Result]:
    if not ctx.mirror.is_dir():
        raise RuntimeError(f"no artifact mirror at {ctx.mirror}; set REPROBOOK_ARTIFACT_MIRROR")
    from reprobook.book.execution import default_workers
    workers = default_workers()
    base = ctx.tmp / "book"
    root = base / "root"
    _copy_project(root)
    real = _Builder(ctx, root, base / "runs")
    lib_before = library_fingerprint()
    results = []

    ctx.log("real book: plain jupyter-book build on a clean _build")
    plain_s = real.plain()
    per = {}
    if not ctx.quick:
        for n in (1, 2):
            ctx.log(f"real book: reprobook book --clean --workers {n}")
            per[n], _ = real.reprobook("--clean", "--workers", str(n))
    # last, so that the rebuilds below start from the tree a default cold build leaves
    ctx.log(f"real book: reprobook book --clean ({workers} workers, the default)")
    cold, log = real.reprobook("--clean")
    cold_exec = _executed(log)
    ctx.log(f"cold build {fmt_s(cold)}, {len(cold_exec)} notebooks executed; jupyter-book build {fmt_s(plain_s)}")
    results.append(_cold("book cold build (the real book)", f"{len(cold_exec)} notebooks: the claim pages, the "
                         "chapter pages and the summary", cold, plain_s, cold_exec, workers))
    if per:
        speedup = per[1] / per[2]
        results.append(Result(
            "book", "book cold build, 1 worker vs 2 workers",
            f"1 worker {fmt_s(per[1])}, 2 workers {fmt_s(per[2])}, {workers} workers (the default) {fmt_s(cold)}",
            value=per[2], unit="s", plain_tool="1 worker", plain_value=per[1], ratio=per[2] / per[1],
            comparison=f"{speedup:.2f}x faster with the second core",
            notes=[f"speed-up per added core: {speedup:.2f}x from 1 to 2 workers on {os.cpu_count()} cores; "
                   f"the default, {workers} workers (two per core), {per[1] / cold:.2f}x"],
            samples={"one_worker_s": per[1], "two_workers_s": per[2], "default_s": cold, "default_workers": workers}))

    n = ctx.repeats(3, 1)
    ctx.log(f"rebuild with nothing changed, {n} time(s)")
    noop = []
    for _ in range(n):
        took, log = real.reprobook()
        if "book is up to date" not in log or _executed(log):
            raise RuntimeError(f"a rebuild with nothing changed did work:\n{log[-2000:]}")
        noop.append(took)
    s_noop = Samples(tuple(noop))
    from reprobook.book.site import build as build_in_process
    from reprobook.core.config import load_project
    with ctx.env(REPROBOOK_ROOT=str(root), REPROBOOK_RUNS=str(base / "runs"), REPROBOOK_ARTIFACT_MIRROR=str(ctx.mirror),
                 REPROBOOK_HOSTS=None, REPROBOOK_SSH_CONFIG=None), contextlib.redirect_stdout(io.StringIO()):
        in_proc = Samples(tuple(timed(lambda: build_in_process(root))[0] for _ in range(3)))
    share = s_noop.median / cold
    start = interpreter_start("import reprobook.cli", 3)
    results.append(Result(
        "book", "book rebuild, nothing changed",
        f"reprobook book {fmt_s(s_noop.median)} (cold {fmt_s(cold)})",
        value=s_noop.median, unit="s", plain_tool="cold build", plain_value=cold, ratio=share,
        comparison=f"{share:.1%} of cold", target=f"<= {TARGET_NOOP:.0%}", passed=share <= TARGET_NOOP,
        notes=[f"of which: python start + `import reprobook.cli` {fmt_s(start.median)}; the up-to-date check "
               f"in-process {fmt_s(in_proc.median)} (a stamp of the sources, the library and the run store, "
               "without loading the configuration)"],
        samples={"noop_s": s_noop.as_dict(), "in_process_s": in_proc.as_dict(), "import_cli_s": start.as_dict()}))

    ctx.log(f"record a new successful run of {CLAIM} (the mirror's archives.csv) and rebuild")
    from reprobook.core.runs import RunStore
    claim = load_project(root).claim(CLAIM)
    run_ = RunStore(base / "runs").create(claim, "bench-recorded-run", source="live", host="local", status="succeeded")
    data = (ctx.mirror / ARCHIVES).read_bytes()
    dest = run_.path / "outputs" / "archives" / "archives.csv"
    dest.parent.mkdir(parents=True)
    dest.write_bytes(data)
    run_.update(files=[{"output": "archives", "path": "outputs/archives/archives.csv", "size": len(data),
                        "sha256": hashlib.sha256(data).hexdigest()}])
    took, log = real.reprobook()
    executed = _executed(log)
    summary = (root / "_build" / "html" / "book" / "summary.html").read_text()
    from_pages = "none was computed a second time here" in summary
    results.append(Result(
        "book", "book rebuild after a new run of one claim",
        f"reprobook book {fmt_s(took)}, executed: {', '.join(executed) or 'nothing'}",
        value=took, unit="s", plain_tool="cold build", plain_value=cold, ratio=took / cold,
        comparison=f"{took / cold:.0%} of cold", target="runs only its page + the pages listing its verdict (chapter, summary)",
        passed=executed == EXPECTED and from_pages,
        notes=["the summary read every verdict from the claim pages (none evaluated twice)" if from_pages else
               "the summary evaluated some claims itself: see its page"],
        samples={"rebuild_s": took, "executed": executed, "summary_from_pages": from_pages}))

    if not ctx.quick:
        synth_root = base / "synthetic"
        pages = synthetic_book(synth_root)
        synth = _Builder(ctx, synth_root, base / "synthetic-runs")
        ctx.log(f"synthetic book ({pages} claim pages): plain jupyter-book build")
        synth_plain = synth.plain()
        ctx.log(f"synthetic book: reprobook book --clean ({workers} workers)")
        synth_cold, log = synth.reprobook("--clean")
        synth_exec = _executed(log)
        ctx.log(f"synthetic cold build {fmt_s(synth_cold)}, jupyter-book build {fmt_s(synth_plain)}")
        results.append(_cold(f"book cold build (synthetic book, {pages} claim pages)",
                             f"synthetic: the real papers and copies of them under other ids ({pages} claim "
                             f"pages, {len(synth_exec) - pages - 1} chapter pages, the summary)",
                             synth_cold, synth_plain, synth_exec, workers))

    results.append(page_weights(root / "_build" / "html"))
    with ctx.env(REPROBOOK_ROOT=str(root), REPROBOOK_RUNS=str(base / "judging-runs"),
                 REPROBOOK_ARTIFACT_MIRROR=str(ctx.mirror), REPROBOOK_HOSTS=None, REPROBOOK_SSH_CONFIG=None):
        results.append(judging(ctx, root, cold, len(cold_exec)))

    if library_fingerprint() != lib_before:
        for r in results:
            r.notes.append("lib/ changed while this benchmark ran (someone edited it): rebuild figures may be off")
    return results


def _without_trials(measured):
    bare = measured.copy()
    bare.attrs = {k: v for k, v in measured.attrs.items() if k not in ("trials", "trial_column", "trial_statistic")}
    return bare


def judging(ctx: Context, root: Path, cold_s: float, pages: int) -> Result:
    """Every claim judged as its page judges it, and without its trials: what the intervals cost."""
    from reprobook import api
    from reprobook.core.config import load_project
    project = load_project(root)
    per, with_trials = {}, 0
    repeats = ctx.repeats(3, 1)
    for claim in project.all_claims():
        try:
            ev = api.evaluate(claim.key, "reference")
        except Exception as exc:  # noqa: BLE001 - a claim whose outputs cannot be had is left out, and said
            ctx.log(f"  {claim.key}: not judged here ({type(exc).__name__}: {str(exc)[:80]})")
            continue
        if ev.measured is None or ev.measured.empty:
            continue
        bare = _without_trials(ev.measured)

        def cost(measured):   # wall and CPU seconds of one judgement (a page's kernel judges on one core)
            c0 = time.process_time()
            w, _ = timed(lambda: api.check(claim, measured, ev.outputs))
            return w, time.process_time() - c0
        full = [cost(ev.measured) for _ in range(repeats)]
        plain = [cost(bare) for _ in range(repeats)]
        trials = any(c.trials is not None for c in api.check(claim, ev.measured, ev.outputs).checks)
        with_trials += trials
        per[claim.key] = (Samples(tuple(w for w, _ in full)).median, Samples(tuple(w for w, _ in plain)).median,
                          trials, Samples(tuple(c for _, c in full)).median - Samples(tuple(c for _, c in plain)).median)
    added = {k: max(f - p, 0.0) for k, (f, p, _, _) in per.items()}
    added_cpu = {k: max(c, 0.0) for k, (_, _, _, c) in per.items()}
    total = sum(added.values())
    worst = max(added_cpu, key=added_cpu.get) if added_cpu else None
    share = total / cold_s if cold_s else float("nan")
    passed = bool(per) and share <= TARGET_JUDGING_SHARE and (not added or added_cpu[worst] <= TARGET_JUDGING_PAGE_S)
    return Result(
        "book", "judging with intervals: the whole book's checks",
        f"{len(per)} claims judged ({with_trials} with trials): checks with intervals "
        f"{fmt_s(sum(f for f, _, _, _ in per.values()))}, without {fmt_s(sum(p for _, p, _, _ in per.values()))}; "
        f"added {fmt_s(total)}; on one page at most {added_cpu[worst] if worst else 0:.2f} s of CPU "
        f"({added[worst] if worst else 0:.2f} s wall)" + (f" ({worst})" if worst else ""),
        value=total, unit="s", plain_tool="the cold build", plain_value=cold_s, ratio=share,
        comparison=f"+{share:.1%} of the cold build ({pages} notebooks), at most {added_cpu[worst] if worst else 0:.2f} s "
                   f"on one page",
        target=f"<= {TARGET_JUDGING_SHARE:.0%} and <= {TARGET_JUDGING_PAGE_S:g} s per page", passed=passed,
        notes=["in-process, on the authors' shipped outputs each page shows; median of "
               f"{repeats} judgement(s) per claim; the share is wall time against the same run's "
               "`reprobook book --clean`; the per-page figure is the judging process's CPU time (a page's kernel "
               "judges on one core; on a busy machine its wall time is longer by what others take of the core)",
               "per claim, wall with / without trials: " + "; ".join(f"{k} {f:.3f}/{p:.3f} s"
                                                                     for k, (f, p, t, _) in per.items() if t)],
        samples={"per_claim": {k: {"with_s": f, "without_s": p, "trials": t, "added_cpu_s": c}
                               for k, (f, p, t, c) in per.items()},
                 "added_s": total, "cold_s": cold_s})


def page_weight(html_dir: Path, page: str) -> int:
    """Bytes a reader's browser loads for ``page`` of the built site: its HTML and every local file it names.

    The files a page names: scripts, stylesheets, images, icons (``src`` and ``href`` of ``script``, ``link``,
    ``img``); each counted once. What a stylesheet imports in turn is left out, the same for every page.
    """
    from html.parser import HTMLParser
    from urllib.parse import urlsplit

    path = html_dir / page
    names: set[Path] = set()

    class Assets(HTMLParser):
        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            ref = a.get("src") if tag in ("script", "img") else a.get("href") if tag == "link" and (
                "stylesheet" in (a.get("rel") or "") or "icon" in (a.get("rel") or "")) else None
            if not ref or urlsplit(ref).scheme or ref.startswith(("//", "data:")):
                return
            target = (path.parent / urlsplit(ref).path).resolve()
            if target.is_file():
                names.add(target)

    Assets().feed(path.read_text(errors="replace"))
    return path.stat().st_size + sum(p.stat().st_size for p in names)


def page_weights(html_dir: Path) -> Result:
    """Bytes per claim page against the theme's bare page (the general index: the theme's assets, no content)."""
    import statistics
    claims = sorted(p.relative_to(html_dir).as_posix() for p in html_dir.glob("notebooks/*/*.html"))
    weights = {page: page_weight(html_dir, page) for page in claims}
    bare = page_weight(html_dir, "genindex.html")
    median = statistics.median(weights.values())
    heaviest = max(weights, key=weights.get)
    extra = median - bare
    return Result(
        "book", "book page weight (claim pages vs the theme's bare page)",
        f"claim pages: median {median / 1e6:.2f} MB, heaviest {weights[heaviest] / 1e6:.2f} MB ({heaviest}); "
        f"bare page {bare / 1e6:.2f} MB",
        value=median, unit="bytes", plain_tool="the theme's bare page (genindex.html)", plain_value=bare,
        ratio=median / bare, comparison=f"median +{extra / 1e3:.0f} kB over the bare page",
        target=f"<= +{TARGET_PAGE_EXTRA / 1e3:.0f} kB", passed=extra <= TARGET_PAGE_EXTRA,
        notes=["a page's HTML and the local scripts, stylesheets and images it names, as a reader's first visit "
               "loads them (the theme's fontawesome.js, 1.49 MB, is in every page and in the bare one)"],
        samples={"pages": weights, "bare": bare})
