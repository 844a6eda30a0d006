"""Run the ``reprobook`` command and SIGKILL it at a chosen, random instant of one phase.

``python -m tests.support.killpoint reprobook-args...`` is ``reprobook reprobook-args...`` with these
environment variables:

``RB_KILL_PHASE``  ``start`` (from the process's start), ``launch``, ``wait``, ``fetch`` (the whole
                   of `reprobook.remote.live.collect`: listing, log, transfer, records) or ``manifest``
``RB_KILL_AT``     for a timed phase, seconds after the phase begins; if the phase ends first, the
                   kill comes as it ends (right after it returned, before anything else)
``RB_KILL_WRITE``  for ``manifest``: ``N:cut``, the N-th write of a run manifest, cut ``before`` it,
                   ``mid-temp`` (half of the temporary file written), ``before-rename`` (written and
                   flushed, not renamed) or ``after-rename`` (renamed, the directory not yet flushed)
``RB_KILL_LOG``    a file that gets one JSON line per phase entered or left and one for the kill,
                   naming the phase the process was in

If the planned instant is never reached (the run had already got further), the process is killed
when the claim's notebook is about to run. The kill is ``os.kill(os.getpid(), SIGKILL)``: nothing
of the process runs after it, as when a laptop's lid closes or the OOM killer strikes.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

T0 = time.monotonic()
PHASE = os.environ.get("RB_KILL_PHASE", "")
AT = float(os.environ.get("RB_KILL_AT", "0") or 0)
WRITE = os.environ.get("RB_KILL_WRITE", "")
LOG = os.environ.get("RB_KILL_LOG", "")
_stack: list[str] = ["start"]
_lock = threading.Lock()


def _log(**event) -> None:
    if LOG:
        event["t"] = round(time.monotonic() - T0, 4)
        fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (json.dumps(event) + "\n").encode())
        finally:
            os.close(fd)


def kill(how: str) -> None:
    with _lock:  # one kill, whichever thread gets here first
        _log(event="kill", phase=_stack[-1], planned=PHASE, how=how)
        os.kill(os.getpid(), signal.SIGKILL)


def _timed(owner, attr: str, phase: str):
    original = getattr(owner, attr)

    def wrapper(*args, **kwargs):
        _stack.append(phase)
        _log(event="enter", phase=phase)
        timer = None
        if phase == PHASE:
            timer = threading.Timer(AT, kill, args=(f"{AT:.3f} s into {phase}",))
            timer.daemon = True
            timer.start()
        try:
            return original(*args, **kwargs)
        finally:
            if timer is not None:
                timer.cancel()
                kill(f"at the end of {phase} (it took less than {AT:.3f} s)")
            _stack.pop()
            _log(event="leave", phase=phase)

    setattr(owner, attr, wrapper)


class _CutOs:
    """The ``os`` module as `reprobook.core.runs` sees it during the manifest write that is to be cut."""

    def __init__(self, cut: str):
        self.cut = cut

    def __getattr__(self, name):
        return getattr(os, name)

    def fdopen(self, fd, mode="r", *a, **kw):
        f = os.fdopen(fd, mode, *a, **kw)
        if self.cut != "mid-temp":
            return f

        class Half:
            def __enter__(self_):
                return self_

            def __exit__(self_, *exc):
                f.close()

            def write(self_, data):
                f.write(data[: len(data) // 2])
                f.flush()
                kill("half of the manifest's temporary file written")

            def __getattr__(self_, name):
                return getattr(f, name)
        return Half()

    def replace(self, src, dst):
        if self.cut == "before-rename":
            kill("manifest written and flushed, not yet renamed into place")
        os.replace(src, dst)
        if self.cut == "after-rename":
            kill("manifest renamed into place, its directory not yet flushed")


def _install() -> None:
    from reprobook import cli
    from reprobook.remote import jobs, live
    from reprobook.core import runs

    _timed(live, "launch", "launch")
    _timed(jobs.Job, "wait", "wait")
    _timed(live, "collect", "fetch")
    real_write = runs.write_atomic
    count = [0]
    nth, _, cut = WRITE.partition(":")

    def write_atomic(path, data, **kw):
        if os.path.basename(path) != runs.MANIFEST:
            return real_write(path, data, **kw)
        count[0] += 1
        _stack.append("manifest")
        _log(event="enter", phase="manifest", n=count[0])
        try:
            if PHASE == "manifest" and str(count[0]) == nth:
                if cut == "before":
                    kill("just before a manifest write")
                runs.os = _CutOs(cut)
            return real_write(path, data, **kw)
        finally:
            runs.os = os
            _stack.pop()
            _log(event="leave", phase="manifest", n=count[0])

    runs.write_atomic = write_atomic
    real_execute = cli._execute

    def execute(*args, **kwargs):
        if PHASE:
            kill(f"the planned {PHASE} instant was never reached; killed as the notebook starts")
        return real_execute(*args, **kwargs)

    cli._execute = execute
    if PHASE == "start":
        timer = threading.Timer(AT, kill, args=(f"{AT:.3f} s after the process started",))
        timer.daemon = True
        timer.start()


def main(argv: list[str]) -> int:
    _install()
    from reprobook.cli import main as reprobook
    return reprobook(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
