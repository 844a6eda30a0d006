"""Holding the member hosts of a placement and letting them go (`reprobook.remote.placement.hold` / `release`), over
real sshd.

A held host refuses another run, naming the run that holds it. Once `release` returns, the host takes a new run at
once: the hold's job is woken by its release (a line on a fifo), and `release` waits until that job has ended
and the host's lock is free. Before, a launch right after a release was refused when the hold had not yet looked
(seen in CI on a loaded machine, `test_cluster.py::test_a_launch_that_fails_before_any_job_lets_the_held_hosts_go`).
"""

from __future__ import annotations

import stat
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from reprobook.core.config import HostSpec
from reprobook.errors import HostBusy
from reprobook.remote.hosts import open_host
from reprobook.remote.jobs import Job, launch
from reprobook.remote.placement import hold, release

pytestmark = pytest.mark.ssh


@pytest.fixture
def hosts(bed, tmp_path):
    opened = {}
    for name, addr in (("m1", "127.0.0.153"), ("m2", "127.0.0.154")):
        bed.add_host(name, addr)
        opened[name] = open_host(HostSpec(name=name, ssh=name, workdir=str(tmp_path / name)),
                                 SimpleNamespace(ssh_config=bed.ssh_config_path))
    yield opened
    for h in opened.values():
        h.close()


def test_a_released_host_takes_a_new_run_at_once_every_time(hosts):
    for k in range(3):   # a launch right after release must never fall between the hold's end and its lock's
        run_id = f"held-{k}"
        hold(hosts, run_id, "control")
        with pytest.raises(HostBusy) as busy:
            launch(hosts["m1"], f"other-{k}", "true\n")
        assert busy.value.holder == run_id
        assert release(hosts, run_id) == {}
        # released means free: each hold's job has ended (not "will end within the second")
        assert {n: Job(h, f"{run_id}.hold").status().state for n, h in hosts.items()} == \
            {n: "succeeded" for n in hosts}, f"attempt {k}"
        for name, host in hosts.items():
            job, started = launch(host, f"after-{k}-{name}", "true\n")
            assert started, f"{name} still held after release (attempt {k})"
            job.wait(poll_s=0.2, progress=False)


def test_release_of_hosts_never_held_or_released_twice_is_quiet(hosts):
    assert release(hosts, "never-held") == {}
    hold(hosts, "twice", "control")
    assert release(hosts, "twice") == {} and release(hosts, "twice") == {}
    job = Job(hosts["m2"], "twice.hold")
    assert job.status().state == "succeeded"   # the hold's job ended as released, not killed


def test_a_hold_sleeps_on_a_fifo_and_its_release_wakes_it_at_once(hosts, tmp_path):
    # without the wake it would look every 5 s (and before, every second, for the two days a hold may last)
    hold(hosts, "woken", "control")
    d = Path(Job(hosts["m1"], "woken.hold").remote_dir)
    deadline = time.monotonic() + 10
    while not (d / "wake").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert stat.S_ISFIFO((d / "wake").stat().st_mode)
    t0 = time.monotonic()   # the hold has just begun a wait of 5 s
    assert release(hosts, "woken") == {}
    took = time.monotonic() - t0
    assert took < 3.0, f"the release took {took:.1f} s: the hold was not woken, it found the release file by looking"
    assert Job(hosts["m1"], "woken.hold").status().state == "succeeded"
