"""One point of the authors' Pequin harness driven by reprobook, against the same point run by hand.

`by_reprobook` runs a claim's point (one config, one client count) through `reprobook.remote.live.perform`; `by_hand`
then runs the config reprobook derived for it through the authors' ``run_multiple_experiments.py`` over ssh, as a
person would. `Timeline` watches both from this machine (every host of a loopback cluster is a set of processes
here): when the harness, a replica server and the first benchmark client (the load) start, and when reprobook's
steps start. Used by ``make live-pesto`` (the real binaries) and by ``make bench`` (stand-in binaries).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import threading
import time
from pathlib import Path

from reprobook.core.loaders import load
from reprobook.core.runs import RunStore
from reprobook.remote.live import perform
from reprobook.sources import from_run

_STEP = re.compile(r"^### reprobook step (\S+): (.*?)(?: \(expected .*\))?(?: \[point .*\])?$")
class Timeline:
    """What the loopback cluster does from ``t0`` on, seen from this machine (every host is a set of processes here),
    polled from /proc every 0.2 s: the first and last instant the harness's Python, a replica server and a benchmark
    client run; and, given the path of a reprobook job's log (``log()``, None until known), when each of its step
    lines appeared."""

    PERIOD_S = 0.2

    def __init__(self, log=None):
        self.first: dict[str, float] = {}
        self.last: dict[str, float] = {}
        self.steps: list[tuple[float, str]] = []
        self._log, self._offset, self._rest = log, 0, b""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self):
        self.t0 = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._scan()

    def _loop(self):
        while not self._stop.wait(self.PERIOD_S):
            self._scan()

    def _scan(self):
        now = time.monotonic() - self.t0
        seen = set()
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                argv = Path(f"/proc/{entry.name}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            exe = argv[0]
            if os.path.basename(exe).startswith(b"python") and len(argv) > 1:
                exe = argv[1]   # a script's own path (the harness; a stand-in binary)
            if exe.endswith(b"/bin-nfs/bin/benchmark"):
                seen.add("client")
            elif exe.endswith(b"/bin-nfs/bin/server"):
                seen.add("server")
            elif exe.endswith(b"/run_multiple_experiments.py"):
                seen.add("harness")
        for what in seen:
            self.first.setdefault(what, now)
            self.last[what] = now
        path = self._log() if self._log else None
        if path is not None and path.exists():
            with open(path, "rb") as f:
                f.seek(self._offset)
                chunk = f.read()
            self._offset += len(chunk)
            *lines, self._rest = (self._rest + chunk).split(b"\n")
            for line in lines:
                m = _STEP.match(line.decode(errors="replace"))
                if m:
                    self.steps.append((now, f"{m.group(1)} {m.group(2)}"))

    def phases(self, wall: float) -> dict:
        """Seconds from the start: the harness's start, the first server, the first client (the load), the harness's
        end, and the whole."""
        got = {"harness_s": self.first.get("harness"), "server_s": self.first.get("server"),
               "load_s": self.first.get("client"), "harness_end_s": self.last.get("harness"), "wall_s": wall}
        return {k: (round(v, 1) if v is not None else None) for k, v in got.items()}


def by_reprobook(cluster, point: tuple[str, dict], target: str = "rehearsal") -> dict:
    """``point`` (a claim and its parameters: one config, one client count) through `perform` on the cluster
    ``target`` (a fresh run: every setup step runs and skips what is installed, or is skipped whole when it is
    unchanged since an earlier run: Pequin's build), with the default
    polling; its timeline, each step's start, and the throughput it measured. ``cluster`` has the ``project``, the
    testbed ``bed`` and a list ``started`` the run's id goes into."""
    project = cluster.project
    claim = project.claim(point[0])
    where: dict[str, Path] = {}

    def on_run(run):
        cluster.started.append(run.id)
        where["log"] = Path(run.manifest["remote_dir"]) / "log"
    with Timeline(log=lambda: where.get("log")) as tl:
        run = perform(project, claim, target, point[1], new=True, progress=False, on_run=on_run)
        wall = time.monotonic() - tl.t0
    assert run.status == "succeeded", (run.path / "log.txt").read_text()[-4000:]
    data = load(claim, from_run(claim, run))
    assert len(data) == 1 and (data["tput_tx_per_s"] > 0).all(), data
    steps = [{"at_s": round(t, 1), "step": s[:70]} for t, s in tl.steps]
    return {"how": "reprobook", "run": run.id, **tl.phases(wall),
            "tput_tx_per_s": round(float(data["tput_tx_per_s"].iloc[0])), "steps": steps}


def by_hand(cluster, run_id: str) -> dict:
    """The same point by hand: ssh to the control host and run the authors' run_multiple_experiments.py on the config
    reprobook derived for run ``run_id`` (its inputs), then copy the point's outputs here with rsync (reprobook's run
    ends with them fetched and recorded here: the same work), as a person whose ~/.ssh/config knows the cluster would: the
    harness's ssh and scp are one-line shell wrappers that add the loopback hosts' ssh configuration (the file a
    ~/.ssh/config would be) and keep the harness's control sockets in a directory of their own, removed after (not
    in this machine's ~/.ssh). Only the output directory differs (``pequin/by-hand/output``), so that no run of
    reprobook's sees these outputs."""
    run = RunStore(cluster.project.settings.runs_dir).load(run_id)
    workdir = cluster.project.hosts.host("control").workdir.rstrip("/")
    name = next(n for n in run.manifest["inputs"] if n.endswith(".json"))
    config = json.loads((run.path / "inputs" / name).read_text())
    here = Path(workdir) / "pequin" / "by-hand"
    out = here / "output"
    out.mkdir(parents=True, exist_ok=True)
    config["base_local_exp_directory"] = str(out)
    cfg = here / name
    cfg.write_text(json.dumps(config, indent=2))
    log = here / f"harness-{time.strftime('%H%M%S')}.log"
    q = shlex.quote
    ssh_config = str(cluster.bed.ssh_config_path)
    wrappers = here / "bin"
    wrappers.mkdir(exist_ok=True)
    for tool in ("ssh", "scp"):   # the first value of an option wins: these come before the harness's
        (wrappers / tool).write_text(f'#!/bin/sh\nexec /usr/bin/{tool} -F {q(ssh_config)} -o BatchMode=yes '
                                     f'-o ControlPath="$RB_SSH_CM/%C" "$@"\n')
        (wrappers / tool).chmod(0o755)
    script = (f"cd {q(workdir)} && export RB_SSH_CM=$(mktemp -d /tmp/rb-ssh.XXXXXX) && rc=0 && "
              f"PATH={q(str(wrappers))}:$PATH /usr/bin/python3 "
              f"Pequin-Artifact/experiment-scripts/run_multiple_experiments.py {q(str(cfg))} > {q(str(log))} 2>&1 "
              "|| rc=$?; for s in \"$RB_SSH_CM\"/*; do [ -S \"$s\" ] && /usr/bin/ssh -F /dev/null "
              "-o ControlPath=\"$s\" -O exit x >/dev/null 2>&1; done; rm -rf \"$RB_SSH_CM\"; exit $rc")
    before = set(os.listdir(out))
    fetched = here / "fetched"   # "this machine", where the person copies the point's outputs to look at them
    ssh = f"ssh -F {q(ssh_config)} -o BatchMode=yes"
    with Timeline() as tl:
        done = subprocess.run(["ssh", "-F", ssh_config, "-o", "BatchMode=yes", "control", script],
                              capture_output=True, text=True, timeout=1800)
        harness_wall = time.monotonic() - tl.t0
        assert done.returncode == 0, f"{done.stderr[-2000:]}\n{log.read_text()[-3000:] if log.exists() else ''}"
        made = sorted(set(os.listdir(out)) - before)
        assert made, f"the harness made no output directory by hand (its output: {log})"
        copy = subprocess.run(["rsync", "-a", "-e", ssh, f"control:{out / made[-1]}", str(fetched) + "/"],
                              capture_output=True, text=True, timeout=600)
        wall = time.monotonic() - tl.t0
    assert copy.returncode == 0, copy.stderr[-2000:]
    stats = [p for p in (fetched / made[-1]).rglob("stats.json") if "/out/" in str(p)]
    assert stats, f"the harness wrote no stats.json by hand (its output: {log})"
    tput = json.loads(stats[0].read_text())["run_stats"]["combined"]["tput"]["mean"]
    assert tput > 0, stats[0]
    return {"how": "by hand", "dir": str(out / made[-1]), **tl.phases(wall), "harness_wall_s": round(harness_wall, 1),
            "tput_tx_per_s": round(tput)}


def mean(runs: list[dict], how: str, col: str) -> float:
    """The mean of ``col`` over the runs made ``how`` ("reprobook" or "by hand")."""
    vals = [r[col] for r in runs if r["how"] == how]
    return sum(vals) / len(vals)


def summary(runs: list[dict]) -> dict:
    """From the runs of both sides: the ratios reprobook / by hand of the wall time and the time to the load, the
    seconds reprobook spends before the harness starts beyond what the ssh login by hand takes, each side's harness
    from its start to the load, and each side's time after the harness ended (reprobook: noticing the end,
    fetching, recording)."""
    sides = ("reprobook", "by hand")
    return {"ratio": {col: round(mean(runs, "reprobook", col) / mean(runs, "by hand", col), 2)
                      for col in ("wall_s", "load_s")},
            # for information: against the harness alone, its outputs left on the control host
            "ratio_harness_only": round(mean(runs, "reprobook", "wall_s") / mean(runs, "by hand", "harness_wall_s"), 2),
            "by_hand_copy_s": round(mean(runs, "by hand", "wall_s") - mean(runs, "by hand", "harness_wall_s"), 1),
            "before_harness_s": round(mean(runs, "reprobook", "harness_s") - mean(runs, "by hand", "harness_s"), 1),
            "harness_to_load_s": {h: round(mean(runs, h, "load_s") - mean(runs, h, "harness_s"), 1) for h in sides},
            "after_harness_s": {h: round(mean(runs, h, "wall_s") - mean(runs, h, "harness_end_s"), 1) for h in sides}}


def alternate(cluster, point: tuple[str, dict], pairs: int, target: str = "rehearsal") -> list[dict]:
    """``pairs`` runs of each side in the order reprobook, by hand, by hand, reprobook, ... (each by-hand run uses
    the config of the last run reprobook made). Every run must have had its harness, a server and a client."""
    runs: list[dict] = []
    for i in range(pairs):
        for how in (("reprobook", "by hand") if i % 2 == 0 else ("by hand", "reprobook")):
            if how == "reprobook":
                runs.append(by_reprobook(cluster, point, target))
            else:
                runs.append(by_hand(cluster, [r for r in runs if r["how"] == "reprobook"][-1]["run"]))
    for r in runs:
        if None in (r["harness_s"], r["server_s"], r["load_s"], r["harness_end_s"]):
            raise AssertionError(f"the timeline of a run is incomplete (no harness, server or client seen): {r}")
    return runs


def table(runs: list[dict]) -> list[str]:
    """The runs as lines of a table: seconds from the start to each event, and the throughput measured."""
    cols = ("harness_s", "server_s", "load_s", "harness_end_s", "wall_s")
    out = [f"  {'':10} {'harness':>8} {'server':>8} {'load':>8} {'h. end':>8} {'wall':>8} {'tx/s':>6}"]
    for r in runs:
        out.append(f"  {r['how']:10} " + " ".join(f"{r[c] if r[c] is not None else '-':>8}" for c in cols)
                   + f" {r['tput_tx_per_s']:>6}")
    for r in runs:
        if r["how"] == "reprobook":   # each step from its start to the next one's (the last: to the harness's end)
            out.append(f"  {r['run']}: its steps, from {r['steps'][0]['at_s'] if r['steps'] else '-'} s on")
            ends = [s["at_s"] for s in r["steps"][1:]] + [r["harness_end_s"]]
            out += [f"    {end - s['at_s']:6.1f} s  {s['step'][:80]}" for s, end in zip(r["steps"], ends)]
    return out
