"""One command on 8 hosts (and on 36, a Pesto cluster) at once against the same command on 1 host.

Eight hosts ``node1`` .. ``node8`` (127.0.0.2 .. 127.0.0.9), one sshd each. reprobook:
`reprobook.remote.group.HostGroup.run` on a new group (connections opened in parallel, as a notebook does
it once) and again on the same group (connections open). Plain: ``ssh -F cfg nodeN cmd`` as 8
parallel subprocesses against 1.

Commands: ``sleep 0.2; hostname`` (waiting, the orchestration is what is measured; the target
applies) and ``sha256sum`` of a 16 MiB file (CPU work: 8 hashes on this machine's cores cannot take
the time of one, so it is given for information, next to plain ssh's ratio).

**A cluster checked**, as ``reprobook check-host CLUSTER`` (and ``cloudlab import``) does it: a cluster of
101 lean hosts (the size of the real CloudLab manifest in ``shared/cloudlab``) against a cluster of one,
each round in a new process's state (connections opened, the probe run, facts judged), against plain
``ssh host bash -s < probe`` to every host at once. The hosts are processes of this machine: 101 sshd
sessions and probes share its two cores, which a real cluster spreads over 101 machines; the notes give
reprobook's own CPU per host.

The waiting command runs twice: on hosts whose login shells read this user's ``~/.bashrc`` (here
it starts pyenv: about 0.1 s of CPU, and its rehash lock makes concurrent logins queue), and on
eight "lean" hosts ``lean1`` .. ``lean8`` (127.0.0.22 ..) whose login shells read no startup files,
as with the stock ``~/.bashrc`` of a Debian or Ubuntu testbed node.
"""

from __future__ import annotations

import os
import subprocess

from .common import MIB, Context, CpuMeter, Result, Samples, fmt_s, timed

TARGET_RATIO = 1.5
N_HOSTS = 8
CLUSTER_HOSTS = 36
"""The largest Pesto placement of the guide: 36 CloudLab nodes."""
CHECKED_HOSTS = 101
"""The real CloudLab manifest of ``shared/cloudlab``: 101 nodes."""


def run(ctx: Context) -> list[Result]:
    data = ctx.tmp / "fanout-16MiB.bin"
    data.write_bytes(os.urandom(16 * MIB))
    results = []
    for startup_files in (True, False):
        commands = {"sleep 0.2; hostname": True, f"sha256sum {data}": False}
        if ctx.quick or not startup_files:
            commands.popitem()  # the CPU-bound variant is for information only
        results += _hosts(ctx, commands, startup_files)
    # cluster scale (a Pesto cluster: 36 CloudLab nodes), on lean hosts only
    results += _hosts(ctx, {"sleep 0.2; hostname": True}, False, CLUSTER_HOSTS)
    results.append(_check_cluster(ctx, CHECKED_HOSTS if not ctx.quick else CLUSTER_HOSTS))
    return results


def _check_cluster(ctx: Context, n_hosts: int) -> Result:
    """check-host of an n-host cluster against a 1-host cluster, cold (a new connection to every host)."""
    import time

    import yaml

    from reprobook.cloudlab import check_cluster
    from reprobook.core.config import load_project
    from reprobook.core.requirements import Requirements, probe_script
    aliases = [ctx.node(i, startup_files=False) for i in range(1, n_hosts + 1)]
    root = ctx.tmp / "projects" / "check-cluster"
    (root / "configs" / "papers").mkdir(parents=True, exist_ok=True)
    (root / "_config.yml").write_text("title: reprobook benchmark project\n")
    (root / "configs" / "hosts.yaml").write_text(yaml.safe_dump({
        "hosts": {a: {"ssh": a, "workdir": str(ctx.workdir(a))} for a in aliases},
        "clusters": {"big": {"roles": {"control": aliases[:1], "server": aliases[1:]}},
                     "one": {"roles": {"control": aliases[:1]}}}}))
    (root / "configs" / "reprobook.yaml").write_text(yaml.safe_dump({"runs_dir": str(root / "runs")}))
    probe = probe_script([Requirements()])

    def plain(hosts):
        procs = [subprocess.Popen(ctx.ssh_argv(a) + ["bash", "-s", "--", str(ctx.workdir(a))], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for a in hosts]
        outs = [p.communicate(probe) for p in procs]
        bad = [a for a, p, (o, _) in zip(hosts, procs, outs) if p.returncode != 0 or "cpus=" not in o]
        if bad:
            raise RuntimeError(f"plain ssh probe failed on {bad[:3]}")

    repeats = ctx.repeats(3, 1)
    t = {k: [] for k in ("big", "one", "plain_big", "plain_one")}
    own_cpu = []
    with ctx.env(REPROBOOK_ROOT=str(root), REPROBOOK_HOSTS=None, REPROBOOK_SSH_CONFIG=str(ctx.ssh_config)):
        project = load_project(root)
        for i in range(repeats + 1):   # round 0: warm-up (imports, the sshd processes' first sessions)
            for cluster in ("big", "one"):
                c0 = time.process_time()
                took, (code, report) = timed(lambda: check_cluster(project, cluster))
                if code != 0:
                    raise RuntimeError("check-host of the loopback cluster failed:\n" + "\n".join(report[:5]))
                if i:
                    t[cluster].append(took)
                    if cluster == "big":
                        own_cpu.append(time.process_time() - c0)
            for key, hosts in (("plain_big", aliases), ("plain_one", aliases[:1])):
                took, _ = timed(lambda: plain(hosts))
                if i:
                    t[key].append(took)
    s = {k: Samples(tuple(v)) for k, v in t.items()}
    ratio = s["big"].median / s["one"].median
    plain_ratio = s["plain_big"].median / s["plain_one"].median
    per_host_ms = 1000 * Samples(tuple(own_cpu)).median / n_hosts
    return Result(
        "fanout", f"check-host of a {n_hosts}-host cluster vs a 1-host cluster, connecting (lean logins)",
        f"reprobook {n_hosts} hosts {fmt_s(s['big'].median)}, 1 host {fmt_s(s['one'].median)}; plain ssh + probe "
        f"{n_hosts} {fmt_s(s['plain_big'].median)}, 1 {fmt_s(s['plain_one'].median)}",
        value=ratio, unit="x", plain_tool="ssh in parallel", plain_value=plain_ratio, ratio=ratio,
        comparison=f"{ratio:.2f}x (plain ssh {plain_ratio:.2f}x)", target=f"<= {TARGET_RATIO:g}x",
        passed=ratio <= TARGET_RATIO,
        notes=[f"reprobook's own CPU: {per_host_ms:.1f} ms per host (connection, probe, judging); the rest of the "
               f"time is the {n_hosts} sshd sessions and probes, which here share {os.cpu_count()} cores and on a real "
               f"cluster run on {n_hosts} machines",
               f"reprobook's ratio over plain ssh's: {ratio / plain_ratio:.2f}"],
        samples={**{k: v.as_dict() for k, v in s.items()}, "own_cpu_ms_per_host": per_host_ms})


def _hosts(ctx: Context, commands: dict[str, bool], startup_files: bool, n_hosts: int = N_HOSTS) -> list[Result]:
    from reprobook.remote.group import HostGroup

    first = 2 if startup_files else 22
    ctx.log(f"starting {n_hosts} sshd hosts on 127.0.0.{first} .. 127.0.0.{first + n_hosts - 1}, "
            + ("their login shells reading this user's ~/.bashrc" if startup_files else
               "their login shells reading no startup files (SHLVL=1, like a stock ~/.bashrc on a testbed)"))
    aliases = [ctx.node(i, startup_files=startup_files) for i in range(1, n_hosts + 1)]
    N = n_hosts
    logins = "" if startup_files else ", lean logins"
    repeats = ctx.repeats(3, 1)
    warmup = 0 if ctx.quick else 1  # first connections and imports; --quick saves the round

    def group_run(group, cmd):
        res = group.run(cmd)
        if len(res.succeeded) != len(group.hosts) or not all(r.stdout.strip() for r in res.succeeded.values()):
            raise RuntimeError(f"{cmd!r} failed on {sorted(res.failed)}: {list(res.failed.values())[:1]}")
        return res

    def plain_run(hosts, cmd):
        procs = [subprocess.Popen(ctx.ssh_argv(a) + [cmd], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for a in hosts]
        outs = [p.communicate() for p in procs]
        bad = [(a, p.returncode, e) for a, p, (o, e) in zip(hosts, procs, outs) if p.returncode != 0 or not o.strip()]
        if bad:
            raise RuntimeError(f"plain ssh {cmd!r} failed: {bad[:1]}")

    results = []
    for cmd, targeted in commands.items():
        short = cmd if targeted else "sha256sum 16 MiB"
        t = {k: [] for k in (f"cold{N}", f"warm{N}", "cold1", "warm1", f"plain{N}", "plain1")}
        cpu = {k: CpuMeter() for k in t}
        host_cpu = {f"reprobook{N}": 0.0, f"plain{N}": 0.0}
        ctx.log(f"{short!r}: {repeats} round(s) (after {warmup} warm-up) of {N} hosts and 1 host, "
                f"reprobook and plain ssh")
        for i in range(1 - warmup, repeats + 1):  # round 0 is the warm-up
            round_t = {}
            meters = {k: CpuMeter() for k in t}
            for n in (N, 1):
                h0 = ctx.testbed_cpu_s()
                group = HostGroup(ctx.ssh_host(a) for a in aliases[:n])
                try:
                    with meters[f"cold{n}"].measure():
                        round_t[f"cold{n}"], _ = timed(lambda: group_run(group, cmd))
                    with meters[f"warm{n}"].measure():
                        round_t[f"warm{n}"], _ = timed(lambda: group_run(group, cmd))
                finally:
                    group.close()
                h1 = ctx.testbed_cpu_s()
                with meters[f"plain{n}"].measure():
                    round_t[f"plain{n}"], _ = timed(lambda: plain_run(aliases[:n], cmd))
                h2 = ctx.testbed_cpu_s()
                if n == N and i > 0:
                    host_cpu[f"reprobook{N}"] += (h1 - h0) / repeats
                    host_cpu[f"plain{N}"] += (h2 - h1) / repeats
            if i == 0:
                continue  # warm-up
            for k, m in meters.items():
                cpu[k].process_s += m.process_s
                cpu[k].machine_s += m.machine_s
                cpu[k].wall_s += m.wall_s
            for k, v in round_t.items():
                t[k].append(v)
            ctx.log(f"round {i}/{repeats}: " + ", ".join(f"{k} {fmt_s(v)}" for k, v in round_t.items()))
        s = {k: Samples(tuple(v)) for k, v in t.items()}
        plain_ratio = s[f"plain{N}"].median / s["plain1"].median
        for kind, what in (("cold", "connecting"), ("warm", "connected")):
            r8, r1 = s[f"{kind}{N}"].median, s[f"{kind}1"].median
            ratio = r8 / r1
            m8 = cpu[f"{kind}{N}"]
            busy = m8.machine_s / m8.wall_s  # cores busy on average
            cores = os.cpu_count()
            notes = [f"during the {N}-host runs the machine ({cores} cores, every process on it) was {busy / cores:.0%} "
                     f"busy ({m8.machine_s / repeats:.2f} core-s per run, of which reprobook's own process "
                     f"{m8.process_s / repeats:.2f}); the {N} hosts are sshd processes sharing those cores; "
                     f"reprobook's {N}-vs-1 ratio over plain ssh's: {ratio / plain_ratio:.2f}",
                     f"the hosts' own CPU (sshd sessions, remote shells) per {N}-host round: reprobook "
                     f"{host_cpu[f'reprobook{N}']:.2f} core-s ({N} connections, 2 commands each), plain ssh "
                     f"{host_cpu[f'plain{N}']:.2f} core-s ({N} connections, 1 command each); on {cores} cores that alone "
                     f"takes >= {host_cpu[f'reprobook{N}'] / 2 / cores:.2f} s per {N}-host run of reprobook, "
                     f"{host_cpu[f'plain{N}'] / cores:.2f} s of plain ssh"]
            results.append(Result(
                "fanout", f"fanout {short!r} {N} vs 1 hosts, {what}{logins}",
                f"reprobook {N} hosts {fmt_s(r8)}, 1 host {fmt_s(r1)}; plain ssh {N} {fmt_s(s[f'plain{N}'].median)}, "
                f"1 {fmt_s(s['plain1'].median)}",
                value=ratio, unit="x", plain_tool="ssh in parallel", plain_value=plain_ratio, ratio=ratio,
                comparison=f"{ratio:.2f}x (plain ssh {plain_ratio:.2f}x)",
                target=f"<= {TARGET_RATIO:g}x" if targeted else "",
                passed=(ratio <= TARGET_RATIO) if targeted else None,
                notes=notes if targeted else notes + [f"CPU-bound: {N} hashes share this machine's "
                                                      f"{os.cpu_count()} cores (information, no target)"],
                samples={**{k: v.as_dict() for k, v in s.items() if k.startswith((kind, "plain"))},
                         f"host_side_cpu_core_s_per_{N}_host_round": host_cpu,
                         "cpu_core_s_per_run": {k: {"process": c.process_s / repeats, "machine": c.machine_s / repeats}
                                                for k, c in cpu.items() if k.startswith((kind, "plain"))}}))
    return results
