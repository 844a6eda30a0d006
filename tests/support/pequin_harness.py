"""STAND-IN binaries for the Pequin artifact's server and benchmark client (a FIXTURE, not Pesto or TAPIR).

The rehearsals of ``pesto/basil-workloads`` and ``pesto/inconsistency`` build the artifact from
source, a 45-minute build, and run the authors' own harness, ``run_multiple_experiments.py``, on a
cluster. The tests run that real harness from the real checkout, unchanged, on loopback sshd hosts,
with these stand-ins in place of the two binaries it starts:

- ``server``: stays up until it is killed, as a replica does (the harness checks that its SSH
  session is alive, then kills it by name and port at the end). It keeps no count of commits (it
  sees no transactions), so the check that sets the server's count beside the clients' has
  nothing to judge here.
- ``benchmark``: for ``--exp_duration`` seconds, paced no-op "transactions" in the real client's
  output format: ``<type>,<latency ns>,<end ns>,<client id>`` on stdout for each one inside the
  measured interval (after ``--warmup_secs``, before the last ``--cooldown_secs``), ``#end,<s>,<us>,<id>``
  when the interval ends, the ``Completed warmup period ...``, ``Completed N requests in T seconds``
  and latency ``Notice`` lines on stderr, and ``{}`` in its ``--stats_file``, as the real clients leave it when they crash in their
  clean-up. The numbers measure the stand-in, never Pequin.

`standin_src(path)` makes a git repository that the generated config names as ``src_directory``:
the harness runs ``make`` there (a no-op Makefile) and collects ``store/server`` and
``store/benchmark/async/benchmark`` into ``bin/``, as it does with the real build.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

HOSTS = {"control": "127.0.0.50", "us-east-1-0": "127.0.0.51", "client-0-0": "127.0.0.52", "client-0-1": "127.0.0.53"}
"""The loopback cluster: the control host, the one server and its two client nodes, under the harness's names."""

SERVER = r"""#!/usr/bin/env python3
# STAND-IN replica server (a test fixture, not Pequin): up until killed.
import signal, sys, time
print("STAND-IN server: up", " ".join(sys.argv[1:4]), flush=True)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
while True:
    time.sleep(3600)
"""

CLIENT = r"""#!/usr/bin/env python3
# STAND-IN benchmark client (a test fixture, not Pequin): paced no-op transactions in the real output format.
import json, random, sys, time
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
def arg(name, default):
    for a in sys.argv[1:]:
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return args.get(name, default)
duration, warmup, cooldown = float(arg("--exp_duration", 5)), float(arg("--warmup_secs", 1)), float(arg("--cooldown_secs", 1))
cid, stats = int(arg("--client_id", 0)), arg("--stats_file", "")
rng = random.Random(cid)
print("STAND-IN client (a test fixture, not Pequin)", file=sys.stderr, flush=True)
def unprinted(seconds):  # paced no-op transactions in the warm-up and the cool-down: counted, not printed
    until, k = time.time() + seconds, 0
    while time.time() < until:
        time.sleep(rng.randint(2_000_000, 6_000_000) / 1e9)
        k += 1
    return k
print(f"Notice: Completed warmup period of {warmup:.0f} seconds with {unprinted(warmup)} requests", file=sys.stderr)
start, n, lat = time.time(), 0, []
window = duration - warmup - cooldown
while time.time() - start < window:
    ns = rng.randint(2_000_000, 6_000_000)
    time.sleep(ns / 1e9)
    n += 1
    lat.append(ns)
    print(f"{rng.choice(['add_user', 'follow', 'post_tweet', 'get_timeline'])},{ns},{time.monotonic_ns()},{cid}", flush=True)
took = time.time() - start
print(f"#end,{int(took)},{int((took % 1) * 1e6)},{cid}", flush=True)
lat.sort()
print(f"Notice: Completed {n} requests in {took:.6f} seconds", file=sys.stderr)
print(f"Notice: Median latency is {lat[len(lat) // 2]} ns ({lat[len(lat) // 2] // 1000} us)", file=sys.stderr)
print(f"Notice: 99th percentile latency is {lat[int(len(lat) * 0.99)]} ns", file=sys.stderr, flush=True)
unprinted(cooldown)
if stats:
    with open(stats, "w") as f:
        f.write("{}")
"""


def standin_src(path: Path) -> Path:
    """A git repository with a no-op Makefile and the two stand-ins where the real build leaves its binaries."""
    (path / "store" / "benchmark" / "async").mkdir(parents=True, exist_ok=True)
    (path / "Makefile").write_text("# STAND-IN: the binaries are the test's fixtures; nothing to build\n"
                                   "all:\n\t@echo 'stand-in: nothing to build'\n")
    for rel, text in (("store/server", SERVER), ("store/benchmark/async/benchmark", CLIENT)):
        (path / rel).write_text(text)
        os.chmod(path / rel, 0o755)
    env = {**os.environ, "GIT_AUTHOR_NAME": "fixture", "GIT_AUTHOR_EMAIL": "f@example.org",
           "GIT_COMMITTER_NAME": "fixture", "GIT_COMMITTER_EMAIL": "f@example.org"}
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "stand-in binaries"]):
        subprocess.run(["git", *cmd], cwd=path, check=True, capture_output=True, env=env)
    return path
