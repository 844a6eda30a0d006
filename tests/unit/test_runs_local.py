"""Run store, transfers and detached jobs on the `local` host (the SSH versions are in tests/integration)."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import stat
import time
from pathlib import Path

import pytest

from reprobook.remote import jobs
from reprobook.core.config import HostSpec, OutputSpec, load_project
from reprobook.errors import ExperimentError, HostBusy, OutputError, RunLost
from reprobook.remote.hosts import LocalHost
from reprobook.core.runs import RunStore, run_id_for
from reprobook.remote.transfer import fetch


@pytest.fixture
def host(tmp_path):
    return LocalHost(HostSpec(name="local", ssh="local", workdir=str(tmp_path / "work")))


def test_run_store_is_owner_only_and_finds_latest(root, tmp_path):
    claim = load_project(root).claim("aardvark/archive-throughput")
    store = RunStore(tmp_path / "runs")
    a = store.create(claim, "run-a", source="live", status="succeeded")
    store.create(claim, "run-b", source="live", status="failed")
    assert stat.S_IMODE(os.stat(a.path).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(tmp_path / "runs").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(a.path / "manifest.json").st_mode) == 0o600
    assert store.latest(claim).id == "run-a"  # the failed one is newer but not eligible
    assert store.load("run-b").status == "failed"
    assert run_id_for(claim, "h", {"x": 1}) == run_id_for(claim, "h", {"x": 1}) != run_id_for(claim, "h", {"x": 2})


def test_truncated_manifest_is_an_error_naming_the_file_and_keeps_the_run(root, tmp_path):
    claim = load_project(root).claim("aardvark/archive-throughput")
    store = RunStore(tmp_path / "runs")
    run = store.create(claim, "run-t", source="live", status="succeeded")
    (run.path / "outputs").mkdir()
    (run.path / "outputs" / "a.csv").write_text("m,1,2\n")
    text = (run.path / "manifest.json").read_text()
    (run.path / "manifest.json").write_text(text[: len(text) // 2])  # the disk filled while it was written
    with pytest.raises(OutputError) as err:
        store.load("run-t")
    assert err.value.file == str(run.path / "manifest.json") and "not valid JSON" in str(err.value)
    assert (run.path / "outputs" / "a.csv").read_text() == "m,1,2\n"
    assert [r.id for r in store.runs()] == [] and store.unreadable() == [run.path / "manifest.json"]
    for not_ours in ("[]", '{"claim": "aardvark/archive-throughput", "status": "succeeded"}', '{"run_id": 7}'):
        (run.path / "manifest.json").write_text(not_ours)
        with pytest.raises(OutputError, match="run_id"):
            store.load("run-t")
        # the listings pass over it (and say so), as over a truncated one: nothing else of the store is lost
        assert [r.id for r in store.runs()] == [] and store.unreadable() == [run.path / "manifest.json"]


def test_the_run_listings_pass_over_a_manifest_without_run_id_and_warn(root, tmp_path, monkeypatch, capsys):
    """``reprobook status`` and ``reprobook runs`` list the good runs and warn of the manifest with no run_id
    (a JSON object, but not a reprobook run's): no traceback."""
    from reprobook.cli import main
    claim = load_project(root).claim("aardvark/archive-throughput")
    store = RunStore(tmp_path / "runs")
    store.create(claim, "run-good", source="live", status="succeeded")
    bad = store.create(claim, "run-bad", source="live", status="succeeded")
    (bad.path / "manifest.json").write_text('{"claim": "aardvark/archive-throughput", "status": "succeeded"}')
    monkeypatch.setenv("REPROBOOK_RUNS", str(tmp_path / "runs"))
    for argv in (["status"], ["runs", "aardvark/archive-throughput"]):
        assert main(argv) == 0, argv
        out, err = capsys.readouterr()
        assert "run-good" in out and "run-bad" not in out and "Traceback" not in out + err
        assert f"{bad.path / 'manifest.json'}: unreadable manifest" in err and "no run_id" in err


def test_fetch_resumes_and_verifies(host, tmp_path):
    out = Path(host.workdir) / "out"
    out.mkdir(parents=True)
    for i in range(5):
        (out / f"f{i}.txt").write_text(f"data {i}\n" * 100)
    outputs = {"logs": OutputSpec("logs", "out", "f*.txt")}
    first = fetch(host, outputs, tmp_path / "run")
    assert sorted(f.transferred for f in first) == [True] * 5
    (tmp_path / "run" / "outputs" / "logs" / "f3.txt").unlink()  # an interrupted fetch lost one file
    (out / "f1.txt").write_text("changed\n")                     # and one changed on the host
    again = {f.path: f.transferred for f in fetch(host, outputs, tmp_path / "run")}
    assert again == {f"outputs/logs/f{i}.txt": i in (1, 3) for i in range(5)}
    assert (tmp_path / "run" / "outputs" / "logs" / "f1.txt").read_text() == "changed\n"


def test_small_files_arrive_inside_the_listing_and_large_ones_separately(host, tmp_path, monkeypatch):
    out = Path(host.workdir) / "out"
    out.mkdir(parents=True)
    (out / "small.csv").write_bytes(b"x,y\n1,2\n")
    (out / "odd\tname\n.txt").write_bytes(b"a tab and a newline in its name\n")
    (out / "edge.bin").write_bytes(os.urandom(16 * 1024 - 1))  # the largest that travels inline
    (out / "large.bin").write_bytes(os.urandom(16 * 1024))
    gets, runs = [], []
    real_get, real_run = host.get, host._run   # _run: each command the host is sent (run and run_script)
    monkeypatch.setattr(host, "get", lambda remote, local: (gets.append(Path(remote).name), real_get(remote, local)))
    monkeypatch.setattr(host, "_run", lambda cmd, limits: (runs.append(cmd), real_run(cmd, limits))[1])
    got = fetch(host, {"o": OutputSpec("o", "out")}, tmp_path / "run")
    assert gets == ["large.bin"] and len(runs) == 1  # one listing; only the large file moved apart
    for f in got:
        assert (tmp_path / "run" / f.path).read_bytes() == (out / Path(f.path).name).read_bytes()
        assert f.transferred and f.sha256 == hashlib.sha256((out / Path(f.path).name).read_bytes()).hexdigest()
    assert sorted(p.name for p in (tmp_path / "run" / "outputs" / "o").iterdir()) == \
        ["edge.bin", "large.bin", "odd\tname\n.txt", "small.csv"]  # no .part left behind
    again = fetch(host, {"o": OutputSpec("o", "out")}, tmp_path / "run")
    assert not any(f.transferred for f in again) and gets == ["large.bin"]


def test_small_files_come_in_one_tar_or_one_by_one_where_tar_cannot_and_arrive_the_same(host, tmp_path, monkeypatch):
    """GNU tar carries an output's small files in one process, not one base64 each; a host whose tar cannot read
    names verbatim (BusyBox) sends them one by one; the listing is the same, odd names included."""
    from reprobook.remote.listing import survey
    out = Path(host.workdir) / "out"
    (out / "sub").mkdir(parents=True)
    files = {"small.csv": b"x,y\n1,2\n", "-starts-like-an-option": b"dash\n", "odd\tname\n.txt": b"tab\n",
             "sub/inner.txt": b"inner\n", "empty": b"", "large.bin": os.urandom(16 * 1024)}
    for rel, data in files.items():
        (out / rel).write_bytes(data)
    spec = {"o": OutputSpec("o", "out")}
    calls = []
    run = host._run
    monkeypatch.setattr(host, "_run", lambda cmd, limits: (calls.append(cmd), run(cmd, limits))[1])
    from reprobook.remote import listing
    archives = []
    real_archive = listing._Parser.archive
    monkeypatch.setattr(listing._Parser, "archive", lambda self, *a: (archives.append(a[0]), real_archive(self, *a))[1])
    tarred = survey(host, spec, inline_max=16 << 10)
    assert archives == ["o"]   # one tar for the output's five small files
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "tar").write_text('#!/bin/sh\necho "tar: unrecognized option" >&2\nexit 1\n')
    (shim / "tar").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}:{os.environ['PATH']}")
    one_by_one = survey(host, spec, inline_max=16 << 10)
    expected = {("o", rel): data for rel, data in files.items() if rel != "large.bin"}
    assert tarred.inline == one_by_one.inline == expected
    assert list(tarred.files) == list(one_by_one.files) and not tarred.refused and not one_by_one.refused
    assert len(calls) == 2 and archives == ["o"]   # the second, without tar: none


def test_listing_works_with_a_base64_that_has_no_w0_option(host, tmp_path, monkeypatch):
    """BusyBox and BSD base64 know no ``-w0`` and wrap lines: the listing falls back and unwraps."""
    shim = tmp_path / "bin"
    shim.mkdir()
    real = shutil.which("base64")
    (shim / "base64").write_text(f'#!/bin/sh\nfor a; do [ "$a" = -w0 ] && {{ echo "bad option" >&2; exit 1; }}; done\n'
                                 f'exec {real} "$@"\n')
    (shim / "base64").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}:{os.environ['PATH']}")
    out = Path(host.workdir) / "out"
    out.mkdir(parents=True)
    data = os.urandom(4000)  # wraps over many 76-column lines
    (out / "r.bin").write_bytes(data)
    gets = []
    monkeypatch.setattr(host, "get", lambda remote, local: gets.append(remote))
    got = fetch(host, {"o": OutputSpec("o", "out")}, tmp_path / "run")
    assert gets == [] and [f.transferred for f in got] == [True]
    assert (tmp_path / "run" / "outputs" / "o" / "r.bin").read_bytes() == data


def test_lost_fetch_state_is_made_good_by_checksums_not_by_sending_again(host, tmp_path, monkeypatch):
    out = Path(host.workdir) / "out"
    out.mkdir(parents=True)
    for name in ("a", "b", "c"):
        (out / f"{name}.bin").write_bytes(os.urandom(64 * 1024))
    outputs = {"o": OutputSpec("o", "out")}
    run = tmp_path / "run"
    fetch(host, outputs, run)
    (run / "outputs" / ".fetch-state.json").unlink()    # e.g. the disk was full when it was due
    (run / "outputs" / "o" / "b.bin").write_bytes(os.urandom(64 * 1024))  # same size, other bytes
    again = {Path(f.path).name: f.transferred for f in fetch(host, outputs, run)}
    assert again == {"a.bin": False, "b.bin": True, "c.bin": False}
    assert (run / "outputs" / "o" / "b.bin").read_bytes() == (out / "b.bin").read_bytes()


def test_full_disk_gives_clear_error_and_keeps_what_was_fetched(host, tmp_path):
    out = Path(host.workdir) / "out"
    out.mkdir(parents=True)
    (out / "a.txt").write_text("a")
    run = tmp_path / "run"
    outputs = {"o": OutputSpec("o", "out", "*.txt")}
    fetch(host, outputs, run)
    (out / "b.txt").write_text("b" * 10000)
    # the next file lands on a "disk" that is full: /dev/full answers every write with ENOSPC
    (run / "outputs" / "o" / "b.txt.part").symlink_to("/dev/full")
    with pytest.raises(OutputError) as err:
        fetch(host, outputs, run)
    assert "No space left on device" in str(err.value) and "b.txt" in str(err.value)
    assert "the files fetched so far are kept" in str(err.value)
    assert (run / "outputs" / "o" / "a.txt").read_text() == "a"
    assert not (run / "outputs" / "o" / "b.txt").exists()
    done = fetch(host, outputs, run)  # space is back: only the missing file moves
    assert {f.path: f.transferred for f in done} == {"outputs/o/a.txt": False, "outputs/o/b.txt": True}


def test_jobs_lifecycle_on_local_host(host):
    job, started = jobs.launch(host, "job-1", "echo hello; sleep 0.3; echo bye")
    assert started
    st = job.wait(progress=False, poll_s=0.1)
    assert st.state == "succeeded" and st.exit_code == 0 and "bye" in st.log_tail
    same, started = jobs.launch(host, "job-1", "echo hello")
    assert not started  # attaching, not starting twice

    bad, _ = jobs.launch(host, "job-2", "echo partial; exit 4")
    st = bad.wait(progress=False, poll_s=0.1)
    assert st.state == "failed" and st.exit_code == 4
    with pytest.raises(ExperimentError) as err:
        bad.raise_for_status(st)
    assert "exit code: 4" in str(err.value) and "partial" in str(err.value)


def test_a_status_poll_that_waits_on_the_host_reports_the_end_when_it_comes(host):
    """A poll asked to wait (a long poll, as `Job.wait` makes every poll) answers within
    a moment of the job's end instead of after its whole wait; a job still running is reported so when the wait is
    over."""
    job, _ = jobs.launch(host, "job-long-poll", "sleep 1")
    t0 = time.monotonic()
    st = job.status(wait_s=20)
    took = time.monotonic() - t0
    assert st.state == "succeeded" and took < 6, (st.state, took)
    slow, _ = jobs.launch(host, "job-long-poll-2", "sleep 30")
    try:
        t0 = time.monotonic()
        st = slow.status(wait_s=0.6)
        took = time.monotonic() - t0
        assert st.state == "running" and 0.5 <= took < 10, (st.state, took)
    finally:
        slow.cancel()


def test_a_short_job_is_seen_to_end_by_the_first_poll_after_its_launch(host, monkeypatch):
    """`Job.wait` follows the launch's own status with a long poll at once, not after a pause: a job that ends
    within its first second is reported by that one poll, however long the polling interval."""
    calls = []
    real = jobs.Job.status
    monkeypatch.setattr(jobs.Job, "status", lambda self, *a, **kw: (calls.append(kw.get("wait_s")), real(self, *a, **kw))[1])
    job, _ = jobs.launch(host, "job-short", "sleep 0.3", settle=False)
    assert job.last_status is not None and not job.last_status.done
    st = job.wait(progress=False, poll_s=30)
    assert st.state == "succeeded" and calls == [1.0], calls


def test_the_poll_that_sees_the_end_brings_the_outputs_listing_in_its_round_trip(host, tmp_path, monkeypatch):
    """`Job.wait(then=...)`: the status poll that finds the job ended also lists its outputs (as `survey` would, in
    a round trip of its own); the polls before it do not; a log line that looks like the separator is the log's."""
    from reprobook.remote.listing import Pending, survey
    out = tmp_path / "work" / "out"
    job, _ = jobs.launch(host, "job-then", f"sleep 1.2; mkdir -p {out}; printf 'a,1\\n' > {out}/a.csv; "
                                           "echo 'RB:THEN:0123456789abcdef0123456789abcdef'; echo last line",
                         settle=False)
    spec = {"o": OutputSpec("o", str(out), "*.csv")}
    d = job.remote_dir
    ahead = Pending(host, spec, newer_than=f"{d}/first_started", read=(f"{d}/log",), inline_max=1024)
    fed = []
    real = ahead.feed
    monkeypatch.setattr(ahead, "feed", lambda data: (fed.append(data), real(data))[1])
    calls = []
    run_script = host.run_script
    monkeypatch.setattr(host, "run_script", lambda *a, **kw: (calls.append(a[0][:30]), run_script(*a, **kw))[1])
    st = job.wait(progress=False, poll_s=0.3, then=ahead)
    assert st.state == "succeeded" and st.log_tail.endswith("RB:THEN:0123456789abcdef0123456789abcdef\nlast line\n")
    assert ahead.received and len(calls) >= 2   # polls while it ran brought nothing
    got = ahead.finish()
    alone = survey(host, spec, newer_than=f"{d}/first_started", read=(f"{d}/log",), inline_max=1024)
    assert [(f.relpath, f.size) for f in got.files] == [(f.relpath, f.size) for f in alone.files] == [("a.csv", 4)]
    assert got.inline == alone.inline == {("o", "a.csv"): b"a,1\n"} and got.texts == alone.texts
    assert got.texts[f"{d}/log"].endswith("last line\n") and not got.refused
    # a job that is lost (no exit code) brings none
    lost, _ = jobs.launch(host, "job-then-lost", "sleep 60", settle=False)
    time.sleep(0.3)
    os.killpg(int(Path(lost.remote_dir, "pid").read_text()), signal.SIGKILL)
    other = Pending(host, spec)
    assert lost.wait(progress=False, poll_s=0.1, then=other).state == "lost" and not other.received


def test_killed_job_is_lost_not_running_forever(host):
    job, _ = jobs.launch(host, "job-k", "echo started; sleep 60")
    time.sleep(0.3)
    pid = int(Path(job.remote_dir, "pid").read_text())
    os.killpg(pid, signal.SIGKILL)  # the host "reboots": every process of the job is gone
    st = job.wait(progress=False, poll_s=0.1)
    assert st.state == "lost" and st.exit_code is None
    with pytest.raises(RunLost, match="no exit code"):
        job.raise_for_status(st)
    # the lock died with the process: a new run may start
    other, started = jobs.launch(host, "job-after", "true")
    assert started and other.wait(progress=False, poll_s=0.1).state == "succeeded"


def test_lock_names_the_holder(host):
    a, _ = jobs.launch(host, "holder", "sleep 20")
    try:
        with pytest.raises(HostBusy, match="holder"):
            jobs.launch(host, "second", "true")
    finally:
        assert a.cancel().state == "cancelled"


def test_a_job_script_longer_than_one_argument_may_be_is_staged_and_launched_whole(host):
    """A sweep of many generated configs makes a job script of hundreds of KiB: the launch command reaches the remote
    shell as one argument, which Linux caps at 128 KiB (`make live-pesto` failed so: "Argument list too long"). The
    script goes in parts first; the job runs it whole, and no staged part is left behind."""
    filler = "".join(f"# generated config line {i:06d} " + "x" * 60 + "\n" for i in range(4000))   # about 340 KB
    script = filler + 'echo "script of $(wc -c < cmd.sh) bytes ran"\n'
    assert len(jobs._b64(script)) > 3 * jobs.INLINE_MAX
    job, started = jobs.launch(host, "r-long", script)
    assert started
    st = job.wait(expected_s=5, poll_s=0.1, progress=False)
    assert st.state == "succeeded", st
    ran = (Path(job.remote_dir) / "cmd.sh").read_text()
    assert ran == script and f"script of {len(script.encode())} bytes ran" in (Path(job.remote_dir) / "log").read_text()
    staging = Path(job.base) / "staging"
    assert staging.is_dir() and not list(staging.iterdir())
    assert stat.S_IMODE(staging.stat().st_mode) == 0o700
    # launched again (the same run): it attaches, and the parts sent for nothing are not kept either
    again, started = jobs.launch(host, "r-long", script)
    assert not started and not list(staging.iterdir())
