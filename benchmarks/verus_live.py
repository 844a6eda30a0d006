"""A real claim run live, against doing the same by hand: Verus's page-table benchmark (Claim C, Fig 11).

reprobook: `reprobook.remote.live.perform` of ``verus/page-table`` from the project's own configuration with
``rust=host, repetitions=1`` and ``new=True``: connect, gather host facts, launch the detached job
(clone at the pinned commit, the claim's setup steps, which fetch the crates and build, and its run step,
the authors' ``run.sh`` under ``RUSTUP_TOOLCHAIN=stable``), poll it to the end, fetch ``page-table.log``,
write the manifest. Plain: what a person types for the same (the FINDINGS of the by-hand run): ``ssh``
+ ``git clone``/``checkout`` from the mirror, ``ssh`` + ``RUSTUP_TOOLCHAIN=stable bash run.sh`` into the
log, ``scp`` of the log.

Both sides start cold, each in a fresh workdir (no checkout, no ``target/``) with a fresh, empty
``CARGO_HOME`` (so both download the crates, and neither touches ``~/.cargo``), on the same loopback
sshd host. The benchmark itself takes about a minute a side and varies by about ±10 s from run to
run, which is more than reprobook's overhead, so a single pair is a rough ratio; the notes say where
reprobook's time went. ``--quick`` skips it; ``--repeats N`` runs N cold pairs, taking turns.
"""

from __future__ import annotations

import datetime as dt
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import yaml

from .common import ROOT, Context, Phases, Result, fmt_s, interleaved, run_quiet, timed

CLAIM = "verus/page-table"
PARAMS = {"rust": "host", "repetitions": 1}
REPO = "verus-lang/paper-sosp24-artifact"
COMMIT = "60e29c16550f57f3fe062b7917734a78ee553524"
CRATE = "verus-sosp24-artifact/macro-perf/page-table-single-threaded"
GIT_MIRROR = ROOT.parent / "shared" / "git" / "github.com"
TARGET_RATIO = 1.25


def _prerequisites() -> str:
    """The host's cargo (``stable``), or raise naming what is missing."""
    if not (GIT_MIRROR / REPO).is_dir():
        raise RuntimeError(f"no git mirror of {REPO} at {GIT_MIRROR / REPO}")
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    probe = subprocess.run([cargo, "--version"], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "RUSTUP_TOOLCHAIN": "stable", "RUSTUP_AUTO_INSTALL": "0"}) \
        if os.access(cargo, os.X_OK) else None
    if probe is None or probe.returncode != 0:
        raise RuntimeError("cargo with rustup's 'stable' toolchain is not installed (PATH, ~/.cargo/bin)")
    return probe.stdout.strip()


def _skipped(why: str) -> list[Result]:
    return [Result("verus_live", "verus page-table claim live (perform vs ssh+git+cargo+scp)",
                   f"skipped: {why}", notes=["run it without --quick (about 2.5 minutes)"])]


def run(ctx: Context) -> list[Result]:
    from reprobook.remote import hosts, jobs, live
    from reprobook.core.config import load_project
    from reprobook.papers.verus.parsers import read_page_table_log

    if ctx.quick and not ctx.repeats_override:
        return _skipped("--quick (each side runs the real benchmark for about a minute)")
    rust = _prerequisites()
    alias = ctx.node(1)
    repeats = ctx.repeats(1, 1)
    base = ctx.tmp / "verus_live"
    # one host entry per cold repetition: a host's workdir keeps its checkout and target/ between runs
    rb_hosts = {f"verus-rb{i}": {"ssh": alias, "workdir": str(base / f"rb{i}" / "work"),
                                 "git_url_rewrites": {"https://github.com/": f"{GIT_MIRROR}/"},
                                 "env": {"CARGO_HOME": str(base / f"rb{i}" / "cargo"), "RUSTUP_AUTO_INSTALL": "0"}}
                for i in range(1, repeats + 1)}
    (base / "runs").mkdir(parents=True)
    (base / "hosts.yaml").write_text(yaml.safe_dump({"hosts": rb_hosts}))
    plain_dirs = iter(base / f"plain{i}" for i in range(1, repeats + 1))
    rb_names = iter(rb_hosts)
    performed, plain_logs, plain_parts = [], [], []

    with ctx.env(REPROBOOK_ROOT=str(ROOT), REPROBOOK_HOSTS=str(base / "hosts.yaml"),
                 REPROBOOK_RUNS=str(base / "runs")):
        project = load_project(ROOT)
        claim = project.claim(CLAIM)

        def reprobook_run():
            r = live.perform(project, claim, next(rb_names), PARAMS, new=True, allow_insufficient=True,
                             progress=False)
            performed.append(r)

        def plain_run():
            d = next(plain_dirs)
            work, cargo = d / "work", d / "cargo"
            q = shlex.quote
            ssh = ctx.ssh_argv(alias)
            clone = (f"mkdir -p {q(str(work))} && cd {q(str(work))} && "
                     f"git -c url.{q(str(GIT_MIRROR))}/.insteadOf=https://github.com/ clone -q "
                     f"https://github.com/{REPO} verus-sosp24-artifact && "
                     f"git -C verus-sosp24-artifact checkout -q {COMMIT}")
            bench = (f"export CARGO_HOME={q(str(cargo))} RUSTUP_AUTO_INSTALL=0 && cd {q(str(work / CRATE))} && "
                     ": > page-table.log && RUSTUP_TOOLCHAIN=stable bash run.sh >> page-table.log 2>&1; "
                     "grep '^Time' page-table.log")
            t_clone, _ = timed(lambda: run_quiet(ssh + [clone]))
            t_bench, _ = timed(lambda: run_quiet(ssh + [bench]))
            local = d / "page-table.log"
            d.mkdir(parents=True, exist_ok=True)
            t_scp, _ = timed(lambda: run_quiet(["scp", "-q", "-F", str(ctx.ssh_config),
                                                f"{alias}:{work / CRATE / 'page-table.log'}", str(local)]))
            plain_logs.append(local)
            plain_parts.append({"clone": t_clone, "run.sh": t_bench, "scp": t_scp})

        ctx.log(f"{repeats} cold pair(s): perform() of {CLAIM} {PARAMS} and the same by hand, on {alias} ({rust})")
        phases = Phases()
        with phases.wrap(hosts.SshHost, "_open", "connect"), phases.wrap(hosts.Host, "facts", "facts"), \
                phases.wrap(live, "launch", "launch"), phases.wrap(jobs.Job, "wait", "job + polling"), \
                phases.wrap(live, "collect", "fetch + manifest"), phases.count(jobs.Job, "status", "status polls"):
            s = interleaved({"reprobook": reprobook_run, "plain": plain_run}, repeats, log=ctx.log)

    # both sides must really have measured: five positive values from each log
    values = {}
    for r in performed:
        if r.status != "succeeded" or r.manifest["checkouts"] != {
                str(Path(rb_hosts[r.manifest["host"]]["workdir"]) / "verus-sosp24-artifact"): COMMIT}:
            raise RuntimeError(f"run {r.id} did not end as expected: status {r.status}, "
                               f"checkouts {r.manifest.get('checkouts')}")
        values.setdefault("reprobook", []).append(read_page_table_log(r.files("log")[0]))
    for log in plain_logs:
        values.setdefault("plain", []).append(read_page_table_log(log))
    for side, frames in values.items():
        for frame in frames:
            if len(frame) != 5 or not (frame["ns"] > 0).all():
                raise RuntimeError(f"{side}: the log does not hold five positive timings: {frame}")

    rb, plain = s["reprobook"].median, s["plain"].median
    ratio = rb / plain
    n = repeats
    per_run = {k: v / n for k, v in phases.totals.items()}
    job_s = [_seconds(r.manifest["started"], r.manifest["ended"]) for r in performed]
    steps = _step_seconds(performed[-1].path / "log.txt")
    parts = {k: sum(p[k] for p in plain_parts) / n for k in plain_parts[0]}
    last = {side: ", ".join(f"{row.impl} {row.op} {row.ns:.1f}" for row in frames[-1].itertuples())
            for side, frames in values.items()}
    notes = [
        "where reprobook's time goes (mean per run): "
        + ", ".join(f"{k} {fmt_s(v)}" for k, v in sorted(per_run.items(), key=lambda kv: -kv[1]))
        + f"; the job itself ran {fmt_s(sum(job_s) / n)} on the host (steps: "
        + ", ".join(f"{name} {sec} s" for name, sec in steps) + "), "
        f"{phases.counts.get('status polls', 0) / n:.0f} status polls (every {project.settings.poll_interval_s:g} s)",
        "plain (mean per run): " + ", ".join(f"{k} {fmt_s(v)}" for k, v in parts.items())
        + " (run.sh fetches the crates and builds, as reprobook's setup step does)",
        "the benchmark's own run-to-run noise is about ±10 s a repetition on a loaded 2-vCPU machine: "
        "one pair gives a rough ratio (--repeats N for more)",
        f"{rust}; last values (ns): reprobook {last['reprobook']}; plain {last['plain']}",
    ]
    return [Result("verus_live", "verus page-table claim live (perform vs ssh+git+cargo+scp)",
                   f"reprobook {fmt_s(rb)}, plain {fmt_s(plain)}", value=rb, unit="s",
                   plain_tool="ssh + git + cargo + scp", plain_value=plain, ratio=ratio,
                   comparison=f"{ratio:.2f}x plain", target=f"<= {TARGET_RATIO:g}x", passed=ratio <= TARGET_RATIO,
                   notes=notes,
                   samples={"reprobook": s["reprobook"].as_dict(), "plain": s["plain"].as_dict(),
                            "phases_per_run_s": per_run, "job_s": job_s, "job_steps_s": dict(steps),
                            "plain_parts_s": parts, "rust": rust,
                            "ns": {side: [f[["impl", "op", "ns"]].to_dict("records") for f in frames]
                                   for side, frames in values.items()}})]


def _seconds(start: str, end: str) -> float:
    return (dt.datetime.fromisoformat(end) - dt.datetime.fromisoformat(start)).total_seconds()


def _step_seconds(log: Path) -> list[tuple[str, int]]:
    """``(step, seconds)`` from the job log: each ``### reprobook step N/M: name`` line's name, cut at its first
    ``:`` or ``(``, with the seconds of the ``### reprobook: step N done in S s`` line that follows."""
    names, out = {}, []
    for line in log.read_text().splitlines():
        if line.startswith("### reprobook step "):
            number, _, name = line[len("### reprobook step "):].partition(": ")
            names[number.split("/")[0]] = name.split(":")[0].split(" (")[0].strip()
        elif line.startswith("### reprobook: step ") and " done in " in line:
            number, _, rest = line[len("### reprobook: step "):].partition(" done in ")
            out.append((names.get(number, f"step {number}"), int(rest.split()[0])))
    return out
