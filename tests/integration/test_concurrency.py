"""Two processes at once on one run store (two notebooks, a notebook and the CLI), against real sshd.

Launching, attaching and fetching the same run at the same moment never corrupts a file nor launches
twice: one process works on the run, the other waits and says for whom (pid and command), then
finds the run as the first left it. Manifest updates from several processes lose no field, and a
reader never sees half a manifest. The processes here are plain Python processes driving the library
(as two notebook kernels would), so that no notebook execution slows the tests down.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from reprobook.core.config import OutputSpec, load_project
from reprobook.errors import RunBusy
from reprobook.remote.hosts import open_host
from reprobook.core.locks import Lock
from reprobook.core.runs import RunStore
from reprobook.remote.transfer import fetch, sha256_file
from tests.conftest import ROOT
from tests.integration.conftest import _wait_for

pytestmark = pytest.mark.ssh
CLAIM = "fixture/validator-throughput"


def _spawn(code: str, *args: str, env: dict | None = None, go: Path | None = None) -> subprocess.Popen:
    """A Python process running ``code`` (``sys.argv[1:]`` are ``args``), as a second notebook kernel would.

    With ``go``, it imports what it needs, says READY and waits for that file before it starts: on a busy
    machine starting Python and importing the library takes seconds, and two processes meant to meet on one
    run must not miss each other because one of them was still importing (see `_ready`).
    """
    prelude = "" if go is None else textwrap.dedent(f"""
        import os, time
        import reprobook.remote.live
        print("READY", flush=True)
        while not os.path.exists({str(go)!r}):
            time.sleep(0.01)
    """)
    return subprocess.Popen([sys.executable, "-c", prelude + textwrap.dedent(code), *args], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)


def _ready(*procs: subprocess.Popen, timeout: float = 300) -> None:
    """Wait until each process (spawned with ``go``) has imported the library and waits for the go file."""
    deadline = time.monotonic() + timeout
    for p in procs:
        line = ""
        while not line.startswith("READY"):
            assert time.monotonic() < deadline, f"a helper process did not get ready in {timeout:g} s (importing)"
            line = p.stdout.readline()
            assert line or p.poll() is None, f"a helper process ended before it was ready: {p.stderr.read()}"


PERFORM = """
    import sys
    from reprobook.core.config import load_project
    from reprobook.remote.live import perform
    project = load_project()
    run = perform(project, project.claim(sys.argv[1]), "node1", {"duration": float(sys.argv[2])}, progress=False,
                  poll_s=0.2)
    print("RESULT", run.id, run.status, len(run.manifest["files"]))
"""
REATTACH = """
    import sys
    from reprobook.core.config import load_project
    from reprobook.remote.live import reattach
    run = reattach(load_project(), sys.argv[1], progress=False, poll_s=0.2)
    print("RESULT", run.id, run.status, len(run.manifest["files"]))
"""


REATTACH_FROM_FILE = """
    import sys
    from pathlib import Path
    from reprobook.core.config import load_project
    from reprobook.remote.live import reattach
    run = reattach(load_project(), Path(sys.argv[1]).read_text().strip(), progress=False, poll_s=0.2)
    print("RESULT", run.id, run.status, len(run.manifest["files"]))
"""


def _result(p: subprocess.Popen, timeout: float = 120) -> tuple[str, str]:
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, out + err
    assert "Traceback" not in err, err
    line = [l for l in out.splitlines() if l.startswith("RESULT ")]
    assert line, out + err
    return line[0], err


def _remote_runs(fixture) -> list[Path]:
    d = fixture.workdirs["node1"] / ".reprobook" / "runs"
    return sorted(p for p in d.iterdir() if p.is_dir()) if d.is_dir() else []


def test_the_same_run_performed_by_two_processes_at_once_runs_once(fixture, tmp_path):
    go = tmp_path / "go"
    a = _spawn(PERFORM, CLAIM, "2", go=go)
    b = _spawn(PERFORM, CLAIM, "2", go=go)
    _ready(a, b)
    go.touch()   # both start now, their imports done: the second reaches the run while the first holds it
    (ra, err_a), (rb, err_b) = _result(a), _result(b)
    assert ra == rb and " succeeded 3" in ra  # both return the same recorded run, out1, out32 and label
    remote = _remote_runs(fixture)
    assert len(remote) == 1
    assert (remote[0] / "log").read_text().count("fixture step 1/4") == 1  # launched once
    # the one that came second waited, and said for whom: the other's pid and command
    waited = err_a + err_b
    assert "is being worked on by pid" in waited and "-c" in waited and "waiting for it to finish" in waited
    holder = a if "is being worked on" in err_b else b
    assert f"pid {holder.pid}" in waited
    run = RunStore(load_project(fixture.root).settings.runs_dir).load(remote[0].name)
    assert run.status == "succeeded"
    run.verify()


def test_attach_while_another_process_follows_the_run_waits_and_says_who(fixture, tmp_path):
    project = load_project(fixture.root)
    store = RunStore(project.settings.runs_dir)
    go, second_go = tmp_path / "go", tmp_path / "run-id"
    # both processes import first (seconds on a busy machine); the second attaches as soon as it is told the run
    first = _spawn(PERFORM, CLAIM, "3", go=go)
    second = _spawn(REATTACH_FROM_FILE, str(second_go), go=second_go)
    _ready(first, second)
    go.touch()
    run = _wait_for(lambda: next((r for r in store.runs() if r.status == "running"), None), timeout=60,
                    what="the run to be running")
    holder = run.lock.holder()
    assert holder is not None and holder.pid == first.pid and "-c" in holder.command
    (tmp_path / "run-id.tmp").write_text(run.id)
    (tmp_path / "run-id.tmp").rename(second_go)
    (r1, _), (r2, err2) = _result(first), _result(second)
    assert r1 == r2 == f"RESULT {run.id} succeeded 3"
    assert f"run {run.id} is being worked on by pid {first.pid}" in err2
    assert len(_remote_runs(fixture)) == 1
    again = store.load(run.id)
    assert again.status == "succeeded" and len(again.manifest["files"]) == 3
    again.verify()
    assert run.lock.holder() is None  # released by both


def test_a_waiting_process_can_be_told_who_holds_the_run_instead(tmp_path):
    lock_path = tmp_path / ".locks" / "r.lock"
    holder = _spawn("""
        import sys, time
        from pathlib import Path
        from reprobook.core.locks import Lock
        with Lock(Path(sys.argv[1]), "run r").acquire():
            print("held", flush=True)
            time.sleep(30)
    """, str(lock_path))
    try:
        assert holder.stdout.readline().strip() == "held"
        t0 = time.monotonic()
        with pytest.raises(RunBusy) as err:
            Lock(lock_path, "run r").acquire(wait=0.5)
        assert 0.4 < time.monotonic() - t0 < 3
        assert f"run r is being worked on by pid {holder.pid}" in str(err.value)
        assert err.value.holder.pid == holder.pid and "-c" in err.value.holder.command
    finally:
        holder.kill()
        holder.wait()
    with Lock(lock_path, "run r").acquire(wait=2):  # the kernel dropped it with the process
        pass


def test_manifest_updates_from_several_processes_lose_nothing_and_never_show_half(root, tmp_path):
    claim = load_project(root).claim("aardvark/validator-throughput")
    store = RunStore(tmp_path / "runs")
    run = store.create(claim, "run-concurrent", source="live", status="running")
    writer = """
        import sys
        from reprobook.core.runs import RunStore
        run = RunStore(sys.argv[1]).load("run-concurrent")
        for i in range(int(sys.argv[3])):
            run.update(**{f"{sys.argv[2]}{i}": i, "last": sys.argv[2]})
        print("RESULT done")
    """
    seen, bad = [0], []
    stop = threading.Event()

    def read():
        while not stop.is_set():
            try:
                m = json.loads((run.path / "manifest.json").read_text())
                assert m["run_id"] == "run-concurrent"
                seen[0] += 1
            except (ValueError, AssertionError, KeyError) as exc:
                bad.append(repr(exc))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    procs = [_spawn(writer, str(store.root), name, "60") for name in ("a", "b", "c")]
    for p in procs:
        _result(p)
    stop.set()
    reader.join(5)
    assert bad == [] and seen[0] > 10
    final = store.load("run-concurrent").manifest
    assert all(f"{name}{i}" in final for name in "abc" for i in range(60))
    assert final["status"] == "running" and final["last"] in "abc"
    assert list(run.path.glob(".*.tmp")) == []


def test_two_fetches_into_one_run_directory_at_once(fixture, tmp_path):
    """One process fetches with (slowed) rsync; meanwhile another (a second kernel) fetches the same outputs
    into the same directory with SFTP: it waits, then finds every file there, recorded, and moves none."""
    remote = fixture.workdirs["node1"] / "many"
    remote.mkdir()
    for i in range(80):
        (remote / f"f{i:02d}.bin").write_bytes(os.urandom(64 << 10))
    outputs = {"many": OutputSpec("many", "many", "*.bin")}
    local = tmp_path / "run"
    shim = tmp_path / "slow-bin"  # rsync at 2 MiB/s: the 5 MiB take a few seconds, long enough to overlap
    shim.mkdir()
    (shim / "rsync").write_text(f'#!/bin/sh\nexec {shutil.which("rsync")} --bwlimit=2048 "$@"\n')
    (shim / "rsync").chmod(0o755)
    other = _spawn("""
        import sys
        from pathlib import Path
        from reprobook.core.config import OutputSpec, load_project
        from reprobook.remote.hosts import open_host
        from reprobook.remote.transfer import fetch
        project = load_project()
        with open_host(project.hosts.host("node1"), project.settings) as host:
            host.run("true")
            print("go", flush=True)
            got = fetch(host, {"many": OutputSpec("many", "many", "*.bin")}, Path(sys.argv[1]), method="rsync")
        print("RESULT", len(got), sum(f.transferred for f in got))
    """, str(local), env={"PATH": f"{shim}{os.pathsep}{os.environ['PATH']}"})
    assert other.stdout.readline().strip() == "go"
    time.sleep(0.3)
    project = load_project(fixture.root)
    t0 = time.monotonic()
    with open_host(project.hosts.host("node1"), project.settings) as host:
        mine = fetch(host, outputs, local, method="sftp")
    waited = time.monotonic() - t0
    theirs, _ = _result(other)
    assert theirs == "RESULT 80 80" and len(mine) == 80
    assert sum(f.transferred for f in mine) == 0 and waited > 1.0  # it waited, then had nothing left to move
    want = {f"outputs/many/{p.name}": sha256_file(p) for p in remote.iterdir()}
    assert {f.path: f.sha256 for f in mine} == want
    assert {p.relative_to(local).as_posix(): sha256_file(p) for p in (local / "outputs" / "many").iterdir()} == want
    state = json.loads((local / "outputs" / ".fetch-state.json").read_text())
    assert {k: v["sha256"] for k, v in state.items()} == want
    assert [p for p in (local / "outputs").rglob("*") if p.name.endswith(".part") or ".rsync-partial" in p.parts] == []
