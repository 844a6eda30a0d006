"""The command line's start: what a command that reads the papers costs, against ``reprobook --help``.

reprobook: ``reprobook claims``, ``reprobook run pesto/workloads --dry-run`` and ``reprobook report verus``, each a
fresh process of this project's venv, run from the project root as a user runs them, taking turns with
``reprobook --help`` (argument parsing only: the floor of any command). The figure for the first two is the
process's CPU (user + system, from ``wait4``); for the report, which judges every Verus claim on the authors'
outputs, its wall time. ``claims`` is also measured cold (the configuration cache, ``_build/.reprobook-cache``,
removed before each run), and cold with libyaml hidden (``yaml.CSafeLoader`` absent, as on a PyYAML without it:
the pure loader), for information.

The bytecode is compiled first (as ``make setup`` does), so that no run compiles the sources; one untimed run of
each command fills the configuration cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .common import ROOT, Context, Result, Samples, fmt_s

TARGET_CLAIMS_RATIO = 4.0
TARGET_DRY_RUN_CPU_S = 0.4
TARGET_REPORT_WALL_S = 0.8
CACHE = ROOT / "_build" / ".reprobook-cache"
NO_LIBYAML = "import yaml; del yaml.CSafeLoader; from reprobook.cli import main; raise SystemExit(main())"


def _run(argv: list[str], *, cwd: Path, env: dict) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one command, which must succeed."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[-4:])} exited {proc.returncode}: {err.decode(errors='replace')[-500:]}")
    return usage.ru_utime + usage.ru_stime, wall


def run(ctx: Context) -> list[Result]:
    bin_dir = Path(sys.executable).parent
    cli = [str(bin_dir / "reprobook")]
    env = {**os.environ, "REPROBOOK_ARTIFACT_MIRROR": str(ctx.mirror), "COLUMNS": "100"}
    env.pop("REPROBOOK_ROOT", None)
    out = ctx.tmp / "cli-report"
    out.mkdir(parents=True, exist_ok=True)
    commands = {
        "help": cli + ["--help"],
        "claims": cli + ["claims"],
        "dry-run": cli + ["run", "pesto/workloads", "--dry-run"],
        "report": cli + ["report", "verus", "--out", str(out)],
        "claims (cold cache)": cli + ["claims"],
        "claims (no libyaml)": [sys.executable, "-c", NO_LIBYAML, "claims"],
    }
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "lib")], check=True,
                   stdout=subprocess.DEVNULL)
    for name in ("claims", "dry-run", "report"):
        _run(commands[name], cwd=ROOT, env=env)
    repeats = ctx.repeats(7, 3)
    cpu: dict[str, list[float]] = {n: [] for n in commands}
    wall: dict[str, list[float]] = {n: [] for n in commands}
    for i in range(repeats):
        for name, argv in commands.items():
            if name in ("claims (cold cache)", "claims (no libyaml)"):
                shutil.rmtree(CACHE, ignore_errors=True)
            c, w = _run(argv, cwd=ROOT, env=env)
            cpu[name].append(c)
            wall[name].append(w)
        ctx.log(f"repetition {i + 1}/{repeats}: " + ", ".join(f"{n} {cpu[n][-1]:.2f} s CPU" for n in commands))
    _run(commands["claims"], cwd=ROOT, env=env)   # the cache as a user finds it
    c = {n: Samples(tuple(v)) for n, v in cpu.items()}
    w = {n: Samples(tuple(v)) for n, v in wall.items()}
    help_s = c["help"].median
    notes = [f"{n}: CPU median {fmt_s(c[n].median)} (min {fmt_s(c[n].min)}, max {fmt_s(c[n].max)}), wall median "
             f"{fmt_s(w[n].median)}, {repeats} runs" for n in commands]
    ratio = c["claims"].median / help_s
    results = [
        Result("cli", "reprobook claims / reprobook --help, CPU",
               f"claims {fmt_s(c['claims'].median)}, --help {fmt_s(help_s)}", value=c["claims"].median, unit="s",
               plain_tool="reprobook --help", plain_value=help_s, ratio=ratio, comparison=f"{ratio:.1f}x --help",
               target=f"<= {TARGET_CLAIMS_RATIO:g}x", passed=ratio <= TARGET_CLAIMS_RATIO, notes=notes,
               samples={n: c[n].as_dict() for n in commands}),
        Result("cli", "reprobook run pesto/workloads --dry-run, CPU", fmt_s(c["dry-run"].median),
               value=c["dry-run"].median, unit="s", comparison=f"{c['dry-run'].median / help_s:.1f}x --help",
               target=f"<= {TARGET_DRY_RUN_CPU_S:g} s", passed=c["dry-run"].median <= TARGET_DRY_RUN_CPU_S),
        Result("cli", "reprobook report verus, wall",
               f"{fmt_s(w['report'].median)} wall ({fmt_s(c['report'].median)} CPU)", value=w["report"].median,
               unit="s", target=f"<= {TARGET_REPORT_WALL_S:g} s", passed=w["report"].median <= TARGET_REPORT_WALL_S,
               samples={"wall": w["report"].as_dict()}),
        Result("cli", "reprobook claims without the cache / without libyaml, CPU (information)",
               f"cold cache {fmt_s(c['claims (cold cache)'].median)}, no libyaml (cold cache) "
               f"{fmt_s(c['claims (no libyaml)'].median)}, warm {fmt_s(c['claims'].median)}",
               value=c["claims (cold cache)"].median, unit="s"),
    ]
    return results
