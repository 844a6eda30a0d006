"""The one watchdog thread that gives up on SSH exec requests nobody answers (`reprobook.remote.hosts._Watchdog`)."""

from __future__ import annotations

import threading
import time

from reprobook.remote.hosts import _Watchdog


def test_an_action_runs_when_its_deadline_passes_and_not_before():
    dog, fired = _Watchdog(), threading.Event()
    t0 = time.monotonic()
    with dog.armed(0.3, fired.set):
        assert not fired.wait(0.15)
        assert fired.wait(2.0)
    assert 0.25 <= time.monotonic() - t0 < 1.5


def test_leaving_the_context_in_time_disarms_the_action():
    dog, fired = _Watchdog(), threading.Event()
    with dog.armed(0.2, fired.set):
        pass
    assert not fired.wait(0.5)


def test_a_sooner_deadline_armed_later_wakes_the_watchdog_early():
    dog = _Watchdog()
    late, soon = threading.Event(), threading.Event()
    with dog.armed(30.0, late.set):
        time.sleep(0.05)  # the watchdog is asleep until the 30 s deadline
        t0 = time.monotonic()
        with dog.armed(0.2, soon.set):
            assert soon.wait(2.0)
        assert time.monotonic() - t0 < 1.0
    assert not late.is_set()


def test_no_time_limit_arms_nothing():
    dog, fired = _Watchdog(), threading.Event()
    with dog.armed(None, fired.set), dog.armed(0, fired.set):
        pass
    assert dog._thread is None and not fired.is_set()


def test_many_commands_share_one_thread():
    dog = _Watchdog()
    before = threading.active_count()
    contexts = [dog.armed(60.0, lambda: None) for _ in range(36)]
    for c in contexts:
        c.__enter__()
    assert threading.active_count() == before + 1
    for c in contexts:
        c.__exit__(None, None, None)
    assert dog._due == {}
