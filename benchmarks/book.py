"""Building the website: cold, again with nothing changed, and after a new run of one claim.

The book is built in a copy of the project (``_config.yml``, ``_toc.yml``, ``book/``, ``notebooks/``,
``configs/``) in the scratch directory, with its own run store and the artifact mirror, so the
project's own ``_build`` is left alone. Each build is ``python -m reprobook book`` as a user runs it
(interpreter start included). The plain tool is ``jupyter-book build`` itself on a clean ``_build``.

Targets: a rebuild with nothing changed costs at most 10 % of a cold build, and after a new run is
recorded for aardvark/archive-throughput exactly that claim's page and the summary execute again.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .common import ROOT, Context, Result, Samples, fmt_s, interpreter_start, library_fingerprint, timed

TARGET_NOOP = 0.10
CLAIM = "aardvark/archive-throughput"
EXPECTED = ["archive-throughput.ipynb", "summary.ipynb"]
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


def _executed(log: str) -> list[str]:
    return sorted(line.split(":")[0].rsplit("/", 1)[-1] for line in log.splitlines() if "Executing notebook" in line)


def run(ctx: Context) -> list[Result]:
    if not ctx.mirror.is_dir():
        raise RuntimeError(f"no artifact mirror at {ctx.mirror}; set REPROBOOK_ARTIFACT_MIRROR")
    base = ctx.tmp / "book"
    root, runs = base / "root", base / "runs"
    _copy_project(root)
    env = {**os.environ, "REPROBOOK_ROOT": str(root), "REPROBOOK_RUNS": str(runs),
           "REPROBOOK_ARTIFACT_MIRROR": str(ctx.mirror), "REPROBOOK_ARTIFACT_CACHE": str(base / "cache")}
    for key in ("REPROBOOK_HOSTS", "REPROBOOK_SSH_CONFIG"):
        env.pop(key, None)
    lib_before = library_fingerprint()

    def build(*extra: str) -> tuple[float, str]:
        took, p = timed(lambda: subprocess.run([sys.executable, "-m", "reprobook", "book", *extra], cwd=root, env=env,
                                               stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=1200))
        log = p.stdout + p.stderr
        if p.returncode != 0:
            raise RuntimeError(f"`reprobook book {' '.join(extra)}` failed (exit {p.returncode}):\n{log[-3000:]}")
        return took, log

    results = []
    plain_s = None
    if not ctx.quick:
        ctx.log("plain: jupyter-book build -W --keep-going on a clean _build")
        jb = Path(sys.executable).with_name("jupyter-book")
        plain_s, p = timed(lambda: subprocess.run([str(jb), "build", str(root), "-W", "--keep-going"], cwd=root,
                                                  env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                                  timeout=1200))
        if p.returncode != 0:
            raise RuntimeError(f"jupyter-book build failed (exit {p.returncode}):\n{(p.stdout + p.stderr)[-3000:]}")
        shutil.rmtree(root / "_build")

    ctx.log("cold: reprobook book --clean")
    cold, log = build("--clean")
    cold_exec = _executed(log)
    ctx.log(f"cold build {fmt_s(cold)}, {len(cold_exec)} notebooks executed")
    results.append(Result(
        "book", "book cold build",
        f"reprobook book --clean {fmt_s(cold)} ({len(cold_exec)} notebooks executed)"
        + (f", jupyter-book build {fmt_s(plain_s)}" if plain_s else ""),
        value=cold, unit="s", plain_tool="jupyter-book build", plain_value=plain_s or cold,
        ratio=cold / plain_s if plain_s else 1.0,
        comparison=f"{cold / plain_s:.2f}x jupyter-book build" if plain_s else "is jupyter-book build (quick mode)",
        samples={"cold_s": cold, "jupyter_book_s": plain_s, "executed": cold_exec}))

    n = ctx.repeats(3, 1)
    ctx.log(f"rebuild with nothing changed, {n} time(s)")
    noop = []
    for _ in range(n):
        took, log = build()
        if "book is up to date" not in log or _executed(log):
            raise RuntimeError(f"a rebuild with nothing changed did work:\n{log[-2000:]}")
        noop.append(took)
    s_noop = Samples(tuple(noop))
    # the same in-process, and the interpreter start it pays, to say where the time goes
    from reprobook.book import build as build_in_process
    from reprobook.config import load_project
    with ctx.env(REPROBOOK_ROOT=str(root), REPROBOOK_RUNS=str(runs), REPROBOOK_ARTIFACT_MIRROR=str(ctx.mirror),
                 REPROBOOK_HOSTS=None, REPROBOOK_SSH_CONFIG=None), contextlib.redirect_stdout(io.StringIO()):
        in_proc = Samples(tuple(timed(lambda: build_in_process(load_project(root)))[0] for _ in range(3)))
    share = s_noop.median / cold
    if ctx.quick:
        why = f"the up-to-date check in-process takes {fmt_s(in_proc.median)}; the rest is starting Python and imports"
        start = js = None
    else:
        start = interpreter_start("import reprobook.cli", 3)
        js = interpreter_start("import jsonschema", 3)
        why = (f"of which: python start + `import reprobook.cli` {fmt_s(start.median)} (`import jsonschema` alone "
               f"{fmt_s(js.median)}); the up-to-date check in-process {fmt_s(in_proc.median)}")
    results.append(Result(
        "book", "book rebuild, nothing changed",
        f"reprobook book {fmt_s(s_noop.median)} (cold {fmt_s(cold)})",
        value=s_noop.median, unit="s", plain_tool="cold build", plain_value=cold, ratio=share,
        comparison=f"{share:.1%} of cold", target=f"<= {TARGET_NOOP:.0%}", passed=share <= TARGET_NOOP,
        notes=[why],
        samples={"noop_s": s_noop.as_dict(), "in_process_s": in_proc.as_dict(),
                 "import_cli_s": start.as_dict() if start else None,
                 "import_jsonschema_s": js.as_dict() if js else None}))

    ctx.log(f"record a new successful run of {CLAIM} (the mirror's archives.csv) and rebuild")
    from reprobook.runs import RunStore
    claim = load_project(root).claim(CLAIM)
    run_ = RunStore(runs).create(claim, "bench-recorded-run", source="live", host="local", status="succeeded")
    data = (ctx.mirror / ARCHIVES).read_bytes()
    dest = run_.path / "outputs" / "archives" / "archives.csv"
    dest.parent.mkdir(parents=True)
    dest.write_bytes(data)
    run_.update(files=[{"output": "archives", "path": "outputs/archives/archives.csv", "size": len(data),
                        "sha256": hashlib.sha256(data).hexdigest()}])
    took, log = build()
    executed = _executed(log)
    share = took / cold
    results.append(Result(
        "book", "book rebuild after a new run of one claim",
        f"reprobook book {fmt_s(took)}, executed: {', '.join(executed) or 'nothing'}",
        value=took, unit="s", plain_tool="cold build", plain_value=cold, ratio=share,
        comparison=f"{share:.0%} of cold", target="runs only its page + summary",
        passed=executed == EXPECTED, samples={"rebuild_s": took, "executed": executed}))

    if library_fingerprint() != lib_before:
        for r in results:
            r.notes.append("lib/ changed while this benchmark ran (someone edited it): rebuild figures may be off")
    return results
