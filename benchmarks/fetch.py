"""Fetching a run's outputs: many megabytes in many files, from a host over SSH.

reprobook: `reprobook.remote.transfer.fetch` (method ``auto``: rsync over OpenSSH for bulk) into an empty
run directory, on a host object already connected (as after polling a run; its first fetch still
asks once whether the host has rsync). Plain: ``rsync -a -e "ssh -F cfg" node1:dir/ local/`` into
an empty directory. Both take turns, each into a fresh directory, with dirty pages flushed
before each. Then, for information, ``method="sftp"``; and a re-fetch of the unchanged outputs.

The data are random bytes (incompressible), made once in the host's workdir.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .common import MIB, Context, Phases, Result, Samples, fmt_s, fmt_size, run_quiet, timed

TARGET_OF_RSYNC = 0.80
TARGET_REFETCH = 0.05


def _make_data(d: Path, n_files: int, size: int) -> None:
    d.mkdir(parents=True, exist_ok=True)
    for i in range(n_files):
        p = d / f"part-{i:04d}.bin"
        if not (p.is_file() and p.stat().st_size == size):
            p.write_bytes(os.urandom(size))


def _reset(d: Path) -> None:
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    os.sync()  # the previous round's dirty pages are written now, not during the next timed transfer


def _count(d: Path) -> tuple[int, int]:
    files = [p for p in d.rglob("*") if p.is_file() and not p.name.startswith(".")]
    return len(files), sum(p.stat().st_size for p in files)


@contextlib.contextmanager
def _timed_popen(lifetimes: list[float]):
    """Record the lifetime of each subprocess started meanwhile (inside fetch: rsync) in ``lifetimes``."""
    original = subprocess.Popen

    class TimedPopen(original):
        def __init__(self, *a, **k):
            self._t0 = time.perf_counter()
            super().__init__(*a, **k)

        def wait(self, timeout=None):
            rc = super().wait(timeout)
            if not getattr(self, "_recorded", False):
                self._recorded = True
                lifetimes.append(time.perf_counter() - self._t0)
            return rc

    subprocess.Popen = TimedPopen
    try:
        yield
    finally:
        subprocess.Popen = original


def run(ctx: Context) -> list[Result]:
    from reprobook.remote import transfer
    from reprobook.core.config import OutputSpec

    alias = ctx.node(1)
    n_files, size = (128, MIB) if ctx.quick else (1000, MIB)
    total = n_files * size
    label = f"{fmt_size(total)}/{n_files} files"
    remote = ctx.workdir(alias) / "bulk"
    ctx.log(f"writing {label} of random bytes into {alias}'s workdir")
    _make_data(remote, n_files, size)
    outputs = {"bulk": OutputSpec("bulk", "bulk", "*")}
    base = ctx.tmp / "fetch"
    repeats = ctx.repeats(3, 2)

    phases = Phases()
    lifetimes: list[float] = []

    def via_reprobook(dest: Path, method: str = "auto"):
        host = ctx.ssh_host(alias)
        host.run("true")  # connected, as it is after polling a run
        try:
            with phases.wrap(transfer, "list_outputs", "list"), \
                    phases.wrap(transfer, "_rsync_usable", "rsync check"), \
                    phases.wrap(transfer, "_via_rsync", "rsync+hash"), \
                    phases.wrap(transfer, "_save_state", "save state"), _timed_popen(lifetimes):
                took, files = timed(lambda: transfer.fetch(host, outputs, dest, method=method))
            if len(files) != n_files or not all(f.transferred for f in files) or sum(f.size for f in files) != total:
                raise RuntimeError(f"fetch brought {len(files)} files, {sum(f.size for f in files)} bytes")
            again, files2 = timed(lambda: transfer.fetch(host, outputs, dest, method=method))
            if any(f.transferred for f in files2):
                raise RuntimeError("re-fetching unchanged outputs transferred files again")
            return took, again
        finally:
            host.close()

    def via_rsync(dest: Path) -> float:
        argv = ["rsync", "-a", "-e", f"ssh -F {ctx.ssh_config}", f"{alias}:{remote}/", f"{dest}/"]
        took, _ = timed(lambda: run_quiet(argv))
        if _count(dest) != (n_files, total):
            raise RuntimeError(f"rsync brought {_count(dest)}")
        return took

    ctx.log(f"{repeats} rounds of reprobook fetch (+ re-fetch) and plain rsync, taking turns")
    rb, refetch, rs = [], [], []
    counting = Phases()  # which way fetch chose to move the files
    with counting.count(transfer, "_via_rsync", "rsync"), counting.count(transfer, "_one_by_one", "sftp"):
        for i in range(repeats):
            dest = base / "reprobook"
            _reset(dest)
            t, t2 = via_reprobook(dest)
            rb.append(t)
            refetch.append(t2)
            dest = base / "rsync"
            _reset(dest)
            rs.append(via_rsync(dest))
            ctx.log(f"round {i + 1}/{repeats}: reprobook {t:.2f} s (re-fetch {t2 * 1000:.0f} ms), rsync {rs[-1]:.2f} s")

    # where reprobook's extra time goes: hashing every file after rsync exits (2 threads, as fetch does)
    fetched = sorted((base / "reprobook" / "outputs" / "bulk").glob("*.bin"))
    with ThreadPoolExecutor(max_workers=2) as pool:
        hash_s, _ = timed(lambda: list(pool.map(transfer.sha256_file, fetched)))

    # SFTP, for information, on the first files only (it is slow)
    sftp_files = 20 if ctx.quick else 100  # part-0000 .. part-0019 / part-0099
    sftp_outputs = {"bulk": OutputSpec("bulk", "bulk", "part-00[01]*.bin" if ctx.quick else "part-00*.bin")}
    ctx.log(f"method='sftp' on {sftp_files} files, once")
    dest = base / "sftp"
    _reset(dest)
    host = ctx.ssh_host(alias)
    host.run("true")
    try:
        sftp_s, got = timed(lambda: transfer.fetch(host, sftp_outputs, dest, method="sftp"))
    finally:
        host.close()
    if len(got) != sftp_files:
        raise RuntimeError(f"sftp fetch brought {len(got)} of {sftp_files} files")
    for d in ("reprobook", "rsync", "sftp"):
        shutil.rmtree(base / d, ignore_errors=True)

    s_rb, s_rs, s_re = Samples(tuple(rb)), Samples(tuple(rs)), Samples(tuple(refetch))
    per_fetch = {k: v / repeats for k, v in phases.totals.items()}
    if "rsync+hash" in per_fetch:  # split _via_rsync into the rsync process and the rest (hashing, records)
        life = sum(lifetimes) / repeats
        per_fetch["rsync process"] = life
        per_fetch["hash+record"] = per_fetch.pop("rsync+hash") - life
    per_fetch["rest"] = sum(rb) / repeats - sum(per_fetch.values())
    breakdown = ", ".join(f"{k} {fmt_s(v)}" for k, v in per_fetch.items())
    mib = total / MIB
    share = s_rs.median / s_rb.median  # throughput ratio = inverse time ratio
    re_share = s_re.median / s_rb.median
    sftp_rate = sftp_files * size / MIB / sftp_s
    methods = dict(counting.counts)
    used = ", ".join(f"{k} x{v}" for k, v in methods.items()) or "unknown"
    return [
        Result("fetch", f"fetch {label}",
               f"reprobook {fmt_s(s_rb.median)} ({mib / s_rb.median:.0f} MiB/s), "
               f"rsync {fmt_s(s_rs.median)} ({mib / s_rs.median:.0f} MiB/s)",
               value=mib / s_rb.median, unit="MiB/s", plain_tool="rsync -a -e ssh", plain_value=mib / s_rs.median,
               ratio=share, comparison=f"{share:.0%} of rsync", target=f">= {TARGET_OF_RSYNC:.0%}",
               passed=share >= TARGET_OF_RSYNC,
               notes=[f"reprobook moved the files with: {used} (auto); its time (mean per fetch): {breakdown}",
                      f"hashing the fetched files afterwards (2 threads, as fetch does once rsync has exited): "
                      f"{fmt_s(hash_s)}; reprobook minus rsync: {fmt_s(s_rb.median - s_rs.median)}"],
               samples={"reprobook_s": s_rb.as_dict(), "rsync_s": s_rs.as_dict(), "bytes": total,
                        "files": n_files, "hash_s": hash_s, "methods": methods,
                        "phases_per_fetch_s": per_fetch}),
        Result("fetch", f"re-fetch unchanged {label}",
               f"reprobook {fmt_s(s_re.median)} (first fetch {fmt_s(s_rb.median)})",
               value=s_re.median, unit="s", plain_tool="first fetch", plain_value=s_rb.median, ratio=re_share,
               comparison=f"{re_share:.1%} of the first fetch", target=f"<= {TARGET_REFETCH:.0%}",
               passed=re_share <= TARGET_REFETCH, samples={"refetch_s": s_re.as_dict()}),
        Result("fetch", f"fetch {fmt_size(sftp_files * size)}/{sftp_files} files, method=sftp",
               f"reprobook sftp {fmt_s(sftp_s)} ({sftp_rate:.0f} MiB/s), rsync above {mib / s_rs.median:.0f} MiB/s",
               value=sftp_rate, unit="MiB/s", plain_tool="rsync -a -e ssh", plain_value=mib / s_rs.median,
               ratio=sftp_rate / (mib / s_rs.median),
               comparison=f"{sftp_rate / (mib / s_rs.median):.0%} of rsync's throughput (information)",
               samples={"sftp_s": sftp_s, "files": sftp_files}),
    ]
