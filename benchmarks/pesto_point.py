"""One Pesto harness point driven by reprobook, against the same point through the authors' harness by hand.

reprobook: `reprobook.remote.live.perform` of TAPIR on Retwis (``basil-workloads`` at rehearsal scale, one client
count of two clients, 15 s of loading and 10 s runs) on a loopback cluster of four isolated sshd hosts named as the
harness names them (control, us-east-1-0, client-0-0, client-0-1), each with a home of its own filled from /etc/skel as
on a freshly installed node (this machine's ~/.bashrc runs pyenv init, 0.11 s of CPU at every SSH session of either
side): connect and survey the hosts, derive the config,
launch the job (check out Pequin, apply the recorded patches, ship the keys and libraries, run the harness), poll
it to the end, fetch and record. By hand: ``ssh control`` and ``python3 run_multiple_experiments.py`` on the very
config reprobook derived (its ssh and scp given the cluster's ssh configuration, as a ~/.ssh/config would), then
``rsync`` of the point's output directory to this machine: reprobook's run ends with the outputs here, so the
person's does too (the ratio against the harness alone, outputs left on the control host, is printed beside it).

The harness is the authors' own (with the rehearsal's recorded patches), the binaries are stand-ins (the same
commands and outputs as Pequin's server and benchmark client, `tests/support/pequin_harness.py`): no 80-minute
build, so the install and build steps of the real claim are not part of it (``make live-pesto`` measures the same
pair on the real binaries). Each side's wall time and its time to the load (the first benchmark client process,
seen in /proc) are compared. The pairs start on a cluster one untimed run of reprobook prepared (the checkout, the
keys and libraries shipped, the harness's first copy of the binaries), as the by-hand runs find it. Needs root
(isolated hosts); ``--quick`` skips it; ``--repeats N``: N pairs.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

from .common import Context, Result, fmt_s

POINT = ("standin/basil-workloads", {"scale": "rehearsal", "clients": [2], "duration_s": 10, "ramp_s": 2,
                                     "load_s": 15})
TARGET_RATIO = 1.0


def _skipped(why: str) -> list[Result]:
    return [Result("pesto_point", "one Pesto harness point (perform vs the harness by hand)", f"skipped: {why}",
                   notes=["run it as root without --quick (about 4 minutes)"])]


def run(ctx: Context) -> list[Result]:
    if ctx.quick and not ctx.repeats_override:
        return _skipped("--quick (each side runs the harness for about a minute)")
    if os.geteuid() != 0:
        return _skipped("needs root (the hosts are isolated in namespaces of their own)")
    from reprobook.core.config import load_project
    from tests.integration.test_pequin_harness import standin_cluster
    from tests.support import pesto_point
    from tests.support.sshd import SshTestbed

    pairs = ctx.repeats(1, 1)
    base = ctx.tmp / "pesto_point"
    base.mkdir(parents=True)
    with SshTestbed(base / "ssh") as bed:
        env = standin_cluster(base, bed, isolated=True)
        with ctx.env(**env, REPROBOOK_HOSTS=None):
            cluster = SimpleNamespace(project=load_project(Path(env["REPROBOOK_ROOT"])), bed=bed, started=[])
            # the cluster is new: a first run checks Pequin out, ships the keys and libraries and the harness copies
            # its binaries to every host for the first time. The by-hand runs find all that done, as the person
            # the comparison stands for does; so the pairs start after one run of reprobook, not timed
            warm = pesto_point.by_reprobook(cluster, POINT)
            ctx.log(f"the cluster prepared by one run of reprobook, not timed ({warm['wall_s']} s)")
            ctx.log(f"{pairs} pair(s): perform() of {POINT[0]} {POINT[1]} and the same config by hand")
            runs = pesto_point.alternate(cluster, POINT, pairs)
    for line in pesto_point.table(runs):
        ctx.log(line)
    found = pesto_point.summary(runs)
    rb, hand = pesto_point.mean(runs, "reprobook", "wall_s"), pesto_point.mean(runs, "by hand", "wall_s")
    ratio = found["ratio"]["wall_s"]
    steps = runs[-1 if runs[-1]["how"] == "reprobook" else 0]["steps"]
    notes = [
        f"time to the load (the first benchmark client): reprobook "
        f"{fmt_s(pesto_point.mean(runs, 'reprobook', 'load_s'))}, by hand "
        f"{fmt_s(pesto_point.mean(runs, 'by hand', 'load_s'))} ({found['ratio']['load_s']:.2f}x)",
        f"before the harness starts, reprobook takes {found['before_harness_s']} s more than the ssh login by hand: "
        "its steps started at " + ", ".join(f"{s['at_s']} s ({s['step'][:30]})" for s in steps),
        f"the harness's own from its start to the load: {found['harness_to_load_s']} (its server_load_time, "
        "15 s, and its sleeps are most of it)",
        f"after the harness ended: {found['after_harness_s']} (reprobook: noticing the end, fetching, recording; "
        f"by hand: the ssh session's end and the copy of the outputs, {found['by_hand_copy_s']} s)",
        f"against the harness alone (its outputs left on the control host): {found['ratio_harness_only']:.2f}x",
    ]
    return [Result("pesto_point", "one Pesto harness point (perform vs the harness by hand, stand-in binaries)",
                   f"reprobook {fmt_s(rb)}, by hand {fmt_s(hand)}", value=rb, unit="s",
                   plain_tool="ssh + run_multiple_experiments.py + rsync", plain_value=hand, ratio=ratio,
                   comparison=f"{ratio:.2f}x by hand", target=f"<= {TARGET_RATIO:g}x", passed=ratio <= TARGET_RATIO,
                   notes=notes, samples={"runs": runs, **found})]
