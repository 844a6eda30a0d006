"""Listing a million output files on a host: time, and the memory the listing takes.

reprobook: `reprobook.remote.transfer.survey` of one output whose directory holds N empty files (a million;
``--quick``: 100,000) in 1000 subdirectories (on tmpfs, ``/dev/shm``, where there is one), on a host
already connected (as after polling a run).
It runs in a fresh Python process, whose peak resident memory is reset just before the survey
(``/proc/self/clear_refs``) and read after it (``VmHWM``): the figure is what the listing added to
the process, records parsed as they stream in and kept compact. Plain: ``ssh -F cfg node1 'cd DIR &&
find . -type f | wc -l'``, which keeps nothing: its time, and the ssh client's peak memory (wait4);
and, for the time target, the same listing made by hand (``find -printf`` of size, time and path,
``| wc -c``), which has to stat every file as reprobook's does. They take turns, the host's
directory cache warm for all.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from .common import MIB, ROOT, Context, Result, Samples, fmt_s

TARGET_OF_BY_HAND = 1.5        # reprobook's listing within 1.5x the same listing made by hand over ssh
TARGET_BYTES_PER_FILE = 128    # and within 128 bytes of memory per file listed

_CHILD = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from reprobook.remote import transfer
    from reprobook.core.config import HostSpec, OutputSpec
    from reprobook.remote.hosts import SshHost

    def status(key):
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith(key))

    alias, workdir, ssh_config, directory = sys.argv[1:5]
    host = SshHost(HostSpec(name=alias, ssh=alias, workdir=workdir), ssh_config=Path(ssh_config))
    host.run("true")  # connected, as after polling a run
    rss = status("VmRSS:")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM counts from here
    t0 = time.perf_counter()
    listing = transfer.survey(host, {"many": OutputSpec("many", directory, "*")})
    took = time.perf_counter() - t0
    print(json.dumps({"files": len(listing.files), "s": took, "rss_before": rss, "peak": status("VmHWM:"),
                      "refused": listing.refused_count}))
""")


def _make_tree(d: Path, n: int) -> None:
    done = d.with_name(d.name + ".complete")  # beside the tree, not in it
    if done.is_file() and done.read_text() == str(n):
        return
    per = max(1, n // 1000)
    for i in range(n):
        sub = d / f"d{i // per:03d}"
        if i % per == 0:
            sub.mkdir(parents=True, exist_ok=True)
        os.close(os.open(sub / f"f{i:07d}.txt", os.O_CREAT | os.O_WRONLY, 0o644))
    done.write_text(str(n))


def _reprobook(ctx: Context, alias: str, directory: str) -> dict:
    p = subprocess.run([sys.executable, "-c", _CHILD, alias, str(ctx.workdir(alias)), str(ctx.ssh_config), directory],
                       cwd=ROOT, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        raise RuntimeError(f"the survey process exited {p.returncode}: {p.stderr.strip()[-800:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def _plain(ctx: Context, alias: str, command: str) -> tuple[float, int, int]:
    """Time, printed number and the ssh client's peak memory of ``command`` over plain ssh."""
    t0 = time.perf_counter()
    p = subprocess.Popen(ctx.ssh_argv(alias) + [command], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = p.stdout.read()
    p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    took = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError(f"plain `{command}` exited {p.returncode}")
    return took, int(out.strip()), usage.ru_maxrss * 1024


def run(ctx: Context) -> list[Result]:
    n = 100_000 if ctx.quick else 1_000_000
    alias = ctx.node(1)
    # in memory (tmpfs) when there is one: making a million files on a shared disk can take many minutes,
    # and a listing reads a warm directory cache either way
    shm = Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else ctx.workdir(alias)
    tree = base / f"reprobook-bench-listing-{os.getpid()}"
    ctx.log(f"making {n:,} empty files in 1000 directories under {tree}")
    t0 = time.perf_counter()
    try:
        _make_tree(tree, n)
        ctx.log(f"made in {fmt_s(time.perf_counter() - t0)}")
        return _measure(ctx, alias, tree, n)
    finally:
        shutil.rmtree(tree, ignore_errors=True)
        tree.with_name(tree.name + ".complete").unlink(missing_ok=True)


def _measure(ctx: Context, alias: str, tree: Path, n: int) -> list[Result]:
    count = f"cd {tree} && find . -type f | wc -l"
    same = f"cd {tree} && find . -type f -printf 'many\\t%s\\t%T@\\t%P\\0' | wc -c"  # what the survey asks, by hand
    repeats = ctx.repeats(3, 1)
    _plain(ctx, alias, count)  # warm the host's directory cache for all
    rb, plain, by_hand, peaks, plain_rss = [], [], [], [], []
    for i in range(repeats):
        got = _reprobook(ctx, alias, str(tree))
        if got["files"] != n or got["refused"]:
            raise RuntimeError(f"the survey listed {got['files']} files ({got['refused']} refused), not {n}")
        rb.append(got["s"])
        peaks.append(got["peak"] - got["rss_before"])
        took, counted, rss = _plain(ctx, alias, count)
        if counted != n:
            raise RuntimeError(f"find | wc -l counted {counted} files, not {n}")
        plain.append(took)
        plain_rss.append(rss)
        took, nbytes, _ = _plain(ctx, alias, same)
        by_hand.append(took)
        ctx.log(f"repetition {i + 1}/{repeats}: reprobook {fmt_s(got['s'])}, +{peaks[-1] / MIB:.0f} MiB peak; "
                f"find | wc -l {fmt_s(plain[-1])}; find -printf | wc -c {fmt_s(took)} ({nbytes / MIB:.0f} MiB)")
    s_rb, s_plain, s_hand = Samples(tuple(rb)), Samples(tuple(plain)), Samples(tuple(by_hand))
    ratio, hand_ratio = s_rb.median / s_plain.median, s_rb.median / s_hand.median
    peak = max(peaks)
    per_file = peak / n
    label = f"{n:,} files"
    return [
        Result("listing", f"list {label}: time",
               f"reprobook survey {fmt_s(s_rb.median)} ({n / s_rb.median / 1e3:.0f}k files/s), "
               f"ssh find | wc -l {fmt_s(s_plain.median)}; the same listing by hand (ssh find -printf size, time, "
               f"path | wc -c) {fmt_s(s_hand.median)}",
               value=s_rb.median, unit="s", plain_tool="ssh find | wc -l", plain_value=s_plain.median, ratio=ratio,
               comparison=f"{ratio:.1f}x find | wc -l, {hand_ratio:.2f}x the same listing by hand",
               target=f"<= {TARGET_OF_BY_HAND:g}x by hand", passed=hand_ratio <= TARGET_OF_BY_HAND,
               notes=["find | wc -l reads the directories only; a listing with each file's size and modification "
                      "time must stat every file on the host, which is most of the difference. The rest is "
                      "reprobook's: bringing the records over its SSH connection and checking each (output, path, "
                      "size, time) before keeping it"],
               samples={"reprobook_s": s_rb.as_dict(), "plain_s": s_plain.as_dict(), "by_hand_s": s_hand.as_dict(),
                        "files": n}),
        Result("listing", f"list {label}: peak memory",
               f"reprobook +{peak / MIB:.0f} MiB at its peak ({per_file:.0f} B per file), ssh client of "
               f"find | wc -l {max(plain_rss) / MIB:.0f} MiB",
               value=peak / MIB, unit="MiB", plain_tool="ssh find | wc -l", plain_value=max(plain_rss) / MIB,
               comparison=f"{per_file:.0f} B per file listed", target=f"<= {TARGET_BYTES_PER_FILE} B per file",
               passed=per_file <= TARGET_BYTES_PER_FILE,
               notes=["what the listing added to the process's peak resident memory (VmHWM after the survey, minus "
                      "VmRSS before it); the listing streams in and each file is kept as its path, size and time "
                      "in shared buffers, not as a Python object"],
               samples={"peak_added_bytes": peaks, "plain_ssh_maxrss_bytes": plain_rss}),
    ]
