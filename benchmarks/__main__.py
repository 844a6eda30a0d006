"""``python -m benchmarks``: run the benchmarks, print each comparison and a summary table, and write
the figures to ``_build/benchmarks.json``."""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path

from . import BENCHMARKS
from .common import ROOT, Context, Result, error_result

WHAT = {
    "cli": "the command line's start: reprobook claims, run --dry-run and report vs reprobook --help",
    "e2e": "a trivial claim run live with perform() vs plain ssh + scp",
    "poll": "CPU and SSH connections while polling a long detached job",
    "fetch": "fetching 1 GiB in 1000 files vs plain rsync (sftp for information; re-fetch)",
    "fanout": "one command on 8 and on 36 hosts at once vs on 1 host (HostGroup and plain ssh); check-host of 101 hosts",
    "parse": "each format's reader on >= 1 MB (synthetic) vs the bare pandas/json read; 500 stats.json",
    "book": "cold build of the real and a 40-page synthetic book vs jupyter-book build; 1 vs 2 workers; rebuilds",
    "verus_live": "the real Verus page-table claim run live with perform() vs by hand (ssh + git + cargo + scp)",
    "aardvark_rehearsal": "Aardvark's three claims built from source and run at rehearsal scale with perform() vs by "
                          "hand (ssh + git + sed + make + cargo + go + scp)",
    "listing": "listing a million output files (time and peak memory) vs ssh find | wc -l",
    "pesto_point": "one Pesto harness point (stand-in binaries) with perform() vs the authors' harness by hand "
                   "(ssh + run_multiple_experiments.py): wall time and time to the load",
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Benchmarks of reprobook against the plain tools (ssh, scp, rsync, pandas, jupyter-book), "
                    "measured in the same run on real sshd hosts on loopback (127.0.0.2, ...). Prints each "
                    "comparison with its target and PASS/MISS, then a summary table, and writes the figures to "
                    "_build/benchmarks.json.",
        epilog="benchmarks: " + "; ".join(f"{k}: {v}" for k, v in WHAT.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true",
                      help="smaller sizes and fewer repetitions (under 90 s): 128 MiB fetch, 8 s poll, "
                           "one fanout command")
    mode.add_argument("--full", action="store_true", help="the long variants: a 300 s poll (default 60 s)")
    p.add_argument("--only", action="append", metavar="NAME", choices=BENCHMARKS,
                   help=f"run only this benchmark (repeatable): {', '.join(BENCHMARKS)}")
    p.add_argument("--repeats", type=int, metavar="N", help="repetitions of each timed measurement "
                   "(default: per benchmark, fewer with --quick)")
    p.add_argument("--output", type=Path, default=ROOT / "_build" / "benchmarks.json",
                   help="where to write the results (default: _build/benchmarks.json)")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory (testbed, projects, data)")
    p.add_argument("--strict", action="store_true", help="exit with status 1 when a target is missed, "
                   "not only when a benchmark fails to run")
    return p


def _version(argv: list[str]) -> str:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return (p.stdout or p.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "unknown"


def _machine() -> dict:
    model = ""
    try:
        model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu_model": model, "kernel": platform.release(),
            "python": platform.python_version(), "openssh": _version(["ssh", "-V"]),
            "rsync": _version(["rsync", "--version"])}


def _git_commit() -> str:
    p = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else "unknown"


def summary_table(results: list[Result]) -> str:
    rows = [("benchmark", "measure", "reprobook", "plain", "ratio", "target", "result")]
    for r in results:
        val = f"{r.value:.3g} {r.unit}".strip() if r.value is not None else "-"
        plain = f"{r.plain_value:.3g} {r.unit}".strip() if r.plain_value is not None else "-"
        ratio = r.comparison.split(" (")[0] if r.comparison else "-"
        rows.append((r.bench, r.name, val, plain, ratio, r.target or "-", r.verdict))
    widths = [min(max(len(row[i]) for row in rows), 60) for i in range(len(rows[0]))]
    lines = []
    for j, row in enumerate(rows):
        lines.append("  ".join(cell[:widths[i]].ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    names = [n for n in BENCHMARKS if not args.only or n in args.only]
    ctx = Context(quick=args.quick, full=args.full, repeats=args.repeats, keep=args.keep)
    print(f"reprobook benchmarks ({ctx.mode} mode): {', '.join(names)}; scratch {ctx.tmp}", flush=True)
    results: list[Result] = []
    timings: dict[str, float] = {}
    loads: dict[str, float] = {}
    t_suite = time.perf_counter()
    try:
        for name in names:
            ctx.bench = name
            load = os.getloadavg()[0]
            print(f"\n== {name}: {WHAT[name]}", flush=True)
            if load > 0.5:
                print(f"  (load average {load:.2f} on {os.cpu_count()} cores before starting: other processes are "
                      f"running; expect noisier figures)", flush=True)
            loads[name] = load
            t0 = time.perf_counter()
            try:
                got = importlib.import_module(f"benchmarks.{name}").run(ctx)
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # noqa: BLE001 - one broken benchmark must not hide the others' figures
                traceback.print_exc()
                got = [error_result(name, exc)]
            timings[name] = time.perf_counter() - t0
            for r in got:
                print(r.line(), flush=True)
                for note in r.notes:
                    print(f"    {note}", flush=True)
            print(f"  ({name} took {timings[name]:.0f} s)", flush=True)
            results.extend(got)
    finally:
        ctx.close()
    took = time.perf_counter() - t_suite

    print(f"\n== summary ({ctx.mode} mode, {took:.0f} s)")
    print(summary_table(results))
    missed = [r for r in results if r.passed is False]
    print(f"\n{sum(r.passed is True for r in results)} PASS, {len(missed)} MISS, "
          f"{sum(r.passed is None for r in results)} for information")

    report = {"generated": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "git_commit": _git_commit(), "mode": ctx.mode, "benchmarks": names, "duration_s": took,
              "benchmark_duration_s": timings, "load_average_before": loads, "machine": _machine(),
              "results": [r.as_dict() for r in results]}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.output.with_name(args.output.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=1, default=str) + "\n")
    os.replace(tmp, args.output)
    print(f"results written to {args.output}")
    errored = any(r.name.endswith("(did not complete)") for r in results)
    return 1 if errored or (args.strict and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
