"""Detached jobs: runs that outlive the SSH connection and the notebook kernel.

A job lives on its host in ``<workdir>/.reprobook/runs/<run-id>/``::

    cmd.sh      the command, as written by reprobook
    wrapper.sh  runs cmd.sh, then records ``ended`` and ``exit_code``
    pid         the wrapper's pid (a session leader: cancel kills its group)
    boot_id     the kernel boot the job started in (a reboot means the job is lost)
    started     seconds since the epoch
    first_started  the first attempt's ``started`` (a resumed run keeps it; outputs are fetched if newer)
    log         stdout and stderr of cmd.sh
    exit_code   written last, atomically; its presence means the job ended

Launching is idempotent: a run id that exists on the host is attached to, not
started again. One benchmark at a time per host: the wrapper holds an
``flock`` on ``.reprobook/busy.lock`` while it runs (the kernel drops it when
the process dies, so a crashed job never leaves a stale lock), and a second
launch is refused with the id of the run that holds it.
"""

from __future__ import annotations

import base64
import re
import secrets
import time
from collections.abc import Sequence
from typing import Callable, Protocol
from dataclasses import dataclass

from reprobook.errors import ExperimentError, HostBusy, HostUnreachable, RunLost, TestbedError
from reprobook.formats.terminal import printable
from reprobook.remote.hosts import Host

RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")  # the whole id (fullmatch): "x\n" is none

_WRAPPER = """#!/bin/bash
# reprobook job wrapper: run cmd.sh detached, then record how it ended.
cd "$1" || exit 111
bash ./cmd.sh > log 2>&1 < /dev/null 9>&-
rc=$?
date +%s > ended
echo "$rc" > exit_code.tmp && mv exit_code.tmp exit_code
"""

_LAUNCH = r"""
set -eu
trap '' PIPE HUP  # a client that dies half-way must not cut this script between two of its steps
base=$1; run_id=$2; cmd_b64=$3; wrapper_b64=$4; resume=$5
staged=""   # a job script too long for one argument was staged in parts first, and comes as @<file> (see `launch`)
case "$cmd_b64" in @*) staged=${cmd_b64#@} ;; esac
trap '[ -z "$staged" ] || rm -f "$staged"' EXIT   # read once, or not needed (attached, busy): gone either way
rundir="$base/runs/$run_id"
umask 077
mkdir -p "$base/runs"
chmod 700 "$base" "$base/runs"
exec 8>"$base/launch.lock"
flock -w 30 8 || { echo "RB:MUTEX"; exit 0; }
if [ -f "$rundir/pid" ]; then
  # an ended job that did not succeed (or whose process is gone) is resumed when asked: its finished steps stay done
  pid=$(cat "$rundir/pid"); code=$(cat "$rundir/exit_code" 2>/dev/null || true)
  alive=no
  if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q wrapper.sh; then alive=yes; fi
  if [ "$resume" = 1 ] && [ "$alive" = no ] && [ "$code" != 0 ]; then
    n=1; while [ -e "$rundir/attempt-$n" ]; do n=$((n + 1)); done
    mkdir "$rundir/attempt-$n"
    for f in log exit_code ended pid cancelled started boot_id cmd.sh; do
      [ -e "$rundir/$f" ] && mv "$rundir/$f" "$rundir/attempt-$n/"
    done
    echo "RB:RESUMING $n" || true
  else
    echo "RB:ATTACH"; exit 0
  fi
fi
exec 9>>"$base/busy.lock"
if ! flock -n 9; then echo "RB:BUSY $(cat "$base/busy.owner" 2>/dev/null)"; exit 0; fi
mkdir -p "$rundir"
if [ -n "$staged" ]; then base64 -d < "$staged" > "$rundir/cmd.sh"; else printf '%s' "$cmd_b64" | base64 -d > "$rundir/cmd.sh"; fi
printf '%s' "$wrapper_b64" | base64 -d > "$rundir/wrapper.sh"
printf '%s\n' "$run_id" > "$base/busy.owner"
cat /proc/sys/kernel/random/boot_id > "$rundir/boot_id" 2>/dev/null || echo none > "$rundir/boot_id"
date +%s > "$rundir/started"
# the first attempt's start stays (outputs of finished steps are as old as that): what the fetch takes is newer
[ -e "$rundir/first_started" ] || cp -p "$rundir/started" "$rundir/first_started"
# the job gets the default signal handling back (a benchmark's `yes | head` must end as it always does)
( trap - PIPE HUP; exec setsid nohup bash "$rundir/wrapper.sh" "$rundir" ) > /dev/null 2>&1 < /dev/null 8>&- &
echo $! > "$rundir/pid"
echo "RB:STARTED $!"
# a step that ends at once (a check, a trivial run) is reported in this round trip, not the next (unless the
# caller knows its job does not: a hold, a live run's checkout and steps)
exec 8>&- 9>&-
if [ "${6:-1}" = 1 ]; then for i in 1 2 3 4 5 6 7 8; do [ -f "$rundir/exit_code" ] && break; sleep 0.03; done; fi
"""

_STATUS = r"""
rundir=$1; lines=$2; waits=${3:-0}; here=$PWD
if [ ! -d "$rundir" ]; then echo "exists=no"; exit 0; fi
cd "$rundir"
# the small files are read by bash itself, not by a process each: a status is a few processes, not twenty
rb_get() {  # file var: the file's first line ("" when there is none)
  local rb_v=""; { IFS= read -r rb_v < "$1"; } 2>/dev/null || true; printf -v "$2" '%s' "$rb_v"
}
rb_get pid pid
# a long poll: up to $waits times 0.2 s for the job to end, so that its end is reported at once, not a poll later.
# GNU tail watches the wrapper's pid (it wakes every 0.05 s, no process started); else a check every 0.2 s
if [ "$waits" -gt 0 ] && [ ! -f exit_code ]; then
  rc=1   # 0: the wrapper ended; 124: the wait is over; else no tail --pid here
  if [ -n "$pid" ]; then rc=0; timeout "$((waits / 5)).$((waits % 5 * 2))" tail --pid="$pid" -s 0.05 -f /dev/null 2>/dev/null || rc=$?; fi
  if [ "$rc" != 0 ] && [ "$rc" != 124 ]; then
    i=0; while [ "$i" -lt "$waits" ] && [ ! -f exit_code ]; do sleep 0.2; i=$((i + 1)); done
  fi
fi
# liveness first, exit code second: a wrapper that ends in between has written its exit code already
alive=no
rb_alive() {  # the pid is a process whose command line names wrapper.sh
  local rb_a
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  while IFS= read -r -d '' rb_a; do case $rb_a in *wrapper.sh*) return 0 ;; esac; done < "/proc/$pid/cmdline" 2>/dev/null
  return 1
}
if rb_alive; then alive=yes
# a process's command line reads empty while it execs (the launch's own status can see the wrapper then): a job
# is said to be gone only when a second look, a moment later, finds neither the wrapper nor its exit code
elif [ ! -f exit_code ] && sleep 0.1 && rb_alive; then alive=yes; fi
rb_get started started; rb_get ended ended; rb_get exit_code code; rb_get boot_id boot
rb_get /proc/sys/kernel/random/boot_id now_boot; [ -n "$now_boot" ] || now_boot=none
printf -v now '%(%s)T' -1
done_n=0; secs=""
for f in steps/*-*.done; do case ${f##*/} in *-*[!0-9]*.done|*-.done) ;; *) [ -e "$f" ] && done_n=$((done_n + 1)) ;; esac; done
for f in steps/*-*.secs; do [ -e "$f" ] || continue; rb_get "$f" v; secs="$secs$v "; done
echo "alive=$alive"
echo "exists=yes"
echo "pid=$pid"
echo "started=$started"
echo "ended=$ended"
echo "exit_code=$code"
cancelled=no; [ ! -f cancelled ] || cancelled=yes
same_boot=no; [ "$boot" != "$now_boot" ] || same_boot=yes
echo "cancelled=$cancelled"
echo "same_boot=$same_boot"
echo "now=$now"
echo "log_bytes=$(stat -c %s log 2>/dev/null || echo 0)"
echo "points_done=$done_n"
echo "point_secs=$secs"
# only the log's last MiB is searched for the current step: a log of gigabytes costs no more than a small one
step=$(tail -c 1048576 log 2>/dev/null | grep -a '^### reprobook step' | tail -n 1)
echo "step=${step:19:181}"
echo "---tail"
tail -c 8192 log 2>/dev/null | tail -n "$lines"
# once the job has ended, a caller's script in the same round trip (`Job.wait`'s ``then``: the outputs' listing), from
# where the session started: $4 the line its output follows, $5 the script, the rest its arguments
if [ -n "${4:-}" ] && [ -f exit_code ]; then printf '\n%s\n' "$4"; s=$5; shift 5; cd "$here" && bash -c "$s" reprobook "$@"; fi
"""
# the launch ends by reporting the job's status, as `Job.status` would in a second round trip
_LAUNCH += "[ \"${7:-1}\" = 1 ] || exit 0\n( set +eu; set -- \"$rundir\" 20\necho RB:STATUS\n" + _STATUS + ")\n"


LONG_POLL_MAX_S = 30.0
"""The longest a status poll waits on the host for the job's end (well under the answer timeout of a command)."""


@dataclass(frozen=True)
class JobStatus:
    """A snapshot of a job: ``running``, ``succeeded``, ``failed``, ``cancelled``, ``lost`` or ``unknown``."""

    run_id: str
    state: str
    exit_code: int | None
    started: float | None
    ended: float | None
    now: float | None
    step: str
    log_bytes: int
    log_tail: str
    points_done: int = 0    # points of a sweep finished (in this attempt or an earlier one)
    point_secs: tuple[float, ...] = ()   # how long each of them took

    @property
    def point_s(self) -> float | None:
        """The mean time of the sweep's points done so far, or None before the first."""
        return sum(self.point_secs) / len(self.point_secs) if self.point_secs else None

    @property
    def done(self) -> bool:
        return self.state in ("succeeded", "failed", "cancelled", "lost")

    @property
    def elapsed_s(self) -> float:
        if self.started is None:
            return 0.0
        end = self.ended if self.ended is not None else (self.now or time.time())
        return max(0.0, end - self.started)

    @property
    def last_line(self) -> str:
        lines = [l for l in self.log_tail.splitlines() if l.strip()]
        return lines[-1] if lines else ""


def _parse_status(run_id: str, text: str) -> JobStatus:
    # what the host says, as text: an escape sequence in its log (moving the cursor, retitling the window, writing
    # the clipboard) is shown (U+241B and the like), never obeyed, wherever the status is printed
    text = printable(text.replace("\r\n", "\n").replace("\r", "\n"), lines=True)
    head, _, tail = text.partition("---tail\n")
    kv = dict(l.split("=", 1) for l in head.splitlines() if "=" in l)
    num = lambda k: float(kv[k]) if kv.get(k, "").strip() else None  # noqa: E731
    if kv.get("exists") != "yes":
        return JobStatus(run_id, "unknown", None, None, None, None, "", 0, "")
    code = kv.get("exit_code", "").strip()
    exit_code = int(code) if code.lstrip("-").isdigit() else None
    if kv.get("cancelled") == "yes" and (exit_code is None or exit_code != 0):
        state = "cancelled"
    elif exit_code is not None:
        state = "succeeded" if exit_code == 0 else "failed"
    elif kv.get("alive") == "yes" and kv.get("same_boot") == "yes":
        state = "running"
    else:
        state = "lost"
    return JobStatus(run_id, state, exit_code, num("started"), num("ended"), num("now"), kv.get("step", ""),
                     int(num("log_bytes") or 0), tail, int(num("points_done") or 0),
                     tuple(float(x) for x in kv.get("point_secs", "").split() if x.isdigit()))


_POINT = re.compile(r"\[point (\d+)/(\d+): ([^\]]*)\]")


def progress_words(st: JobStatus) -> str:
    """The current step for a progress line; in a sweep, the points done / total and the current point first."""
    if not st.step:
        return ""
    m = _POINT.search(st.step)
    if not m:
        return st.step + " | "
    timing = ""
    if st.point_s is not None and not st.done:
        left = st.point_s * max(int(m[2]) - st.points_done, 0)
        timing = f" ({_minutes(st.point_s)} each, about {_minutes(left)} left)"
    return f"{st.points_done}/{m[2]} points done{timing}, now {m[3]} | "


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min" if seconds < 5400 else \
        f"{seconds / 3600:.1f} h"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


class Then(Protocol):
    """What `Job.status` runs on the host once the job has ended, in the same round trip (`reprobook.remote.listing.Pending`)."""

    script: str
    args: Sequence[str]
    received: bool

    def reset(self) -> None: ...

    def feed(self, data: bytes) -> None: ...


class _Split:
    """A status's output followed (the job having ended) by a ``then`` script's: the status text is kept, up to the
    line ``mark`` (random, so that no log line can pass for it), and what follows is fed to ``then``."""

    def __init__(self, mark: str, then: Then):
        self.mark, self.then = f"RB:THEN:{mark}", then
        self._sep = f"\n{self.mark}\n".encode()
        self._head = bytearray()
        self._found = False

    def feed(self, data: bytes) -> None:
        if self._found:
            self.then.feed(data)
            return
        self._head += data
        at = self._head.find(self._sep)
        if at >= 0:
            rest = bytes(self._head[at + len(self._sep):])
            del self._head[at:]
            self._found = True
            if rest:
                self.then.feed(rest)
        elif len(self._head) > MAX_STATUS_BYTES:
            raise TestbedError(f"a job's status sent more than {MAX_STATUS_BYTES >> 10} KiB; reprobook stopped reading")

    def head(self) -> str:
        return self._head.decode(errors="replace")


MAX_STATUS_BYTES = 1 << 20


class Job:
    """A detached run on one host, addressed by its run id.

    Create one with `launch` (start or attach) or `attach` (attach only).
    """

    def __init__(self, host: Host, run_id: str):
        if not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id):
            raise ValueError(f"not a valid run id: {run_id!r}")
        self.host = host
        self.run_id = run_id
        self.last_status: JobStatus | None = None  # as seen by the launch, if it just happened
        self.probed = ""   # what a probe run in the launch's round trip printed (`launch`'s ``probe``)
        self.fresh = False

    @property
    def base(self) -> str:
        return f"{self.host.workdir.rstrip('/')}/.reprobook"

    @property
    def remote_dir(self) -> str:
        return f"{self.base}/runs/{self.run_id}"

    def _sh(self, script: str, *args: str, retries: int = 2, step: str = "talking to the job", on_stdout=None):
        return self.host.run_script(script, *args, retries=retries, step=f"{step} of run {self.run_id}",
                                    on_stdout=on_stdout)

    def status(self, tail_lines: int = 20, *, wait_s: float = 0.0, then: "Then | None" = None) -> JobStatus:
        """One round trip: the job's state, exit code, current step and last log lines.

        ``wait_s`` (at most `LONG_POLL_MAX_S`): the host first waits that long for the job to end, answering
        within 0.05 s of its end (0.2 s on a host without GNU tail; a poll that sleeps here instead learns of the end
        up to a whole interval late). ``then``: when the job has ended, the host runs its script in this same round
        trip and its output goes to ``then.feed`` (``then.reset`` first; no retry here: a dropped connection raises
        `TestbedError`, and `wait` asks again)."""
        waits = round(min(wait_s, LONG_POLL_MAX_S) / 0.2)
        if then is None:
            return _parse_status(self.run_id, self._sh(_STATUS, self.remote_dir, str(tail_lines), str(waits),
                                                       step="reading the status").stdout)
        split = _Split(secrets.token_hex(16), then)
        then.reset()
        self._sh(_STATUS, self.remote_dir, str(tail_lines), str(waits), split.mark, then.script, *then.args,
                 retries=0, step="reading the status", on_stdout=split.feed)
        return _parse_status(self.run_id, split.head())

    def wait(self, *, expected_s: float | None = None, poll_s: float = 5.0, progress: bool = True,
             reconnect_for_s: float = 600.0, title: str | None = None,
             left_s: Callable[[JobStatus], float | None] | None = None, then: "Then | None" = None) -> JobStatus:
        """Poll until the job ends, showing elapsed time against ``expected_s``.

        ``left_s`` (a status -> the seconds still expected, or None) moves the expected end as the
        steps go: a run whose first steps are skipped or fast is not shown at 1 % for its whole length.
        ``then`` (see `status`) rides on the poll that sees the job end: ``then.received`` says whether it did
        (not when the launch's own round trip saw the end, nor for a job that is lost).

        A dropped connection is reopened with back-off for up to
        ``reconnect_for_s``; the job runs on meanwhile. Returns the final
        status; raises `HostUnreachable` if the host stays away (the job may
        still be running: re-attach later with its run id).
        """
        bar = None
        if progress:
            from tqdm.auto import tqdm
            total = int(expected_s) if expected_s else None
            bar = tqdm(total=total, desc=title or self.run_id, unit="s", leave=True,
                       bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} s expected {postfix}"
                       if total else "{desc}: {n:.0f} s {postfix}")
        down_since = None
        # every poll waits on the host for the end (a long poll), which it reports as it comes: a short job is
        # seen to end at once, and the polls need not be frequent to notice it. The first waits a second (the
        # progress line's first news), the next ones half as long again each, up to poll_s
        delay = min(1.0, poll_s)
        try:
            while True:
                asked = time.monotonic()
                launched = self.last_status is not None   # the launch's own status: the first long poll follows at once
                try:
                    st, self.last_status = self.last_status or self.status(wait_s=delay, then=then), None
                    down_since = None
                except TestbedError as exc:
                    down_since = down_since or time.monotonic()
                    if time.monotonic() - down_since > reconnect_for_s:
                        raise HostUnreachable(
                            f"lost contact for {reconnect_for_s:.0f} s while waiting for run {self.run_id} ({exc.message}). "
                            f"The run goes on there; re-attach later with `reprobook attach {self.run_id}`.",
                            host=self.host.name) from None
                    if bar is not None:
                        bar.set_postfix_str("connection lost, retrying", refresh=True)
                    time.sleep(min(poll_s, 2.0))
                    continue
                if st.state == "unknown":
                    raise ExperimentError(f"no run {self.run_id} on this host (looked in {self.remote_dir})",
                                          host=self.host.name)
                if bar is not None:
                    left = left_s(st) if left_s is not None and bar.total and not st.done else None
                    if left is not None:
                        bar.total = max(int(st.elapsed_s + left), 1)
                    elif st.state == "succeeded" and bar.total:
                        bar.total = max(int(st.elapsed_s), 1)   # done: the bar ends full, at the time it took
                    bar.n = min(st.elapsed_s, bar.total) if bar.total else st.elapsed_s
                    # the host's last log line, as text: an escape sequence in it is shown, never obeyed
                    bar.set_postfix_str(printable(progress_words(st) + st.last_line[-80:]), refresh=True)
                if st.done:
                    return st
                if launched:
                    continue
                # a host that answered early without the end (an interval too short to wait on the host) is
                # asked again only when the interval is over
                time.sleep(max(0.0, delay - (time.monotonic() - asked)))
                delay = min(poll_s, delay * 1.5)
        finally:
            if bar is not None:
                bar.close()

    def cancel(self) -> JobStatus:
        """Stop the job's whole process group; it ends as ``cancelled``."""
        script = r"""
rundir=$1
[ -d "$rundir" ] || exit 0
touch "$rundir/cancelled"
pid=$(cat "$rundir/pid" 2>/dev/null)
[ -n "$pid" ] && kill -TERM -- "-$pid" 2>/dev/null
for i in 1 2 3 4 5 6 7 8 9 10; do [ -f "$rundir/exit_code" ] && exit 0; sleep 0.3; done
[ -n "$pid" ] && kill -KILL -- "-$pid" 2>/dev/null
true
"""
        self._sh(script, self.remote_dir, step="cancelling the job")
        return self.status()

    def raise_for_status(self, st: JobStatus) -> None:
        """Raise `ExperimentError` (or `RunLost`) unless ``st`` is a success."""
        if st.state == "succeeded":
            return
        cls = RunLost if st.state == "lost" else ExperimentError
        why = {"failed": "the run failed", "cancelled": "the run was cancelled",
               "lost": "the run's process is gone and left no exit code (killed, or the host rebooted)"}.get(st.state, st.state)
        raise cls(f"{why}: run {self.run_id}", command=f"{self.remote_dir}/cmd.sh", exit_code=st.exit_code,
                  log_tail=st.log_tail, host=self.host.name)


INLINE_MAX = 96 * 1024
"""Bytes of a job script (base64) sent inside the launch command itself. The whole command reaches the remote
shell as one argument, which Linux caps at 128 KiB (MAX_ARG_STRLEN; the launch script and its quoting take under
10 KiB of it): a longer script (a sweep of many generated configs) is staged in parts of this size first. A
Pesto rehearsal's script (its patches and configs inside) is about 85 KB: one round trip, not three."""

_STAGE = r"""
set -eu
umask 077
mkdir -p "$1/staging"
chmod 700 "$1" "$1/staging"
f="$1/staging/$2.cmd.b64"
if [ "$3" = first ]; then : > "$f"; fi
printf '%s' "$4" >> "$f"
wc -c < "$f"
"""


def _stage(job: "Job", run_id: str, payload: str) -> str:
    """Write ``payload`` to a file under the host's base in parts of `INLINE_MAX`; returns ``@<path>`` for `_LAUNCH`.
    Each part is checked by the size the file has after it, so a part lost to a dropped connection is an error,
    not a truncated script."""
    parts = [payload[i:i + INLINE_MAX] for i in range(0, len(payload), INLINE_MAX)]
    done = 0
    for i, part in enumerate(parts):
        res = job._sh(_STAGE, job.base, run_id, "first" if i == 0 else "more", part, retries=0,
                      step=f"sending the job script (part {i + 1} of {len(parts)})")
        done += len(part)
        if res.stdout.strip() != str(done):
            raise TestbedError(f"sending the job script of run {run_id}: after part {i + 1} of {len(parts)} the "
                               f"staged file holds {res.stdout.strip() or 'nothing'} bytes, not {done}",
                               host=job.host.name)
    return f"@{job.base}/staging/{run_id}.cmd.b64"


def launch(host: Host, run_id: str, script: str, *, resume: bool = False, first: str = "",
           settle: bool = True, probe: str = "", report: bool = True) -> tuple[Job, bool]:
    """Start ``script`` as run ``run_id`` on ``host``, detached; or attach if that run exists.

    ``first``: shell commands run on the host before the launch, in the same round trip (``$1`` is the host's
    ``.reprobook`` directory, ``$2`` the run id); they must not fail. ``probe``: a script run before everything,
    in a subshell of its own, in the same round trip: its standard output is ``job.probed``. ``settle``: the launch waits up to a quarter of
    a second for the job to end, so that a job that ends at once is reported in the same round trip; False for a
    job that does not (a hold): the launch answers as soon as the job started. ``report``: the launch's answer
    carries the job's status (``job.last_status``); False for a job nobody follows (a hold): the host is spared it.

    With ``resume``, a run that exists but ended without success (failed,
    cancelled or lost) is started again with ``script``: its earlier attempt
    is kept in ``attempt-<n>/`` and the steps it finished are skipped (see
    `reprobook.remote.steps`). Returns the `Job` and whether it was started now
    (``False``: attached).

    Raises
    ------
    HostBusy
        Another run holds the host's benchmark lock; the message names it.
    """
    job = Job(host, run_id)
    payload = _b64(script)
    if len(payload) > INLINE_MAX:
        payload = _stage(job, run_id, payload)
    text = (first.rstrip() + "\n" if first else "") + _LAUNCH
    if probe:
        text = f"(\n{probe.rstrip()}\n) || true\necho RB:PROBED\n" + text
    res = job._sh(text, job.base, run_id, payload, _b64(_WRAPPER),
                  "1" if resume else "0", "1" if settle else "0", "1" if report else "0", retries=2,
                  step="launching the job")
    stdout = res.stdout
    if probe:
        job.probed, _, stdout = stdout.partition("RB:PROBED\n")
    head, _, status = stdout.partition("RB:STATUS\n")
    out = head.strip().splitlines()
    word = out[-1] if out else ""
    job.fresh = "RB:FRESH" in out   # a ``first`` that says so: this run had no directory on the host before
    if word.startswith(("RB:STARTED", "RB:ATTACH")):
        job.last_status = _parse_status(run_id, status) if status else None
        return job, word.startswith("RB:STARTED")
    if word.startswith("RB:BUSY"):
        holder = word[len("RB:BUSY"):].strip() or "unknown"
        if holder.endswith(".hold"):  # a member of another run's placement (see reprobook.remote.placement)
            holder = holder[:-len(".hold")]
            raise HostBusy(f"this host is held for run {holder}, whose job runs on another host of its cluster. "
                           f"Wait for it (`reprobook status {holder}`) or cancel it (`reprobook cancel {holder}`) "
                           f"first.", host=host.name, holder=holder)
        raise HostBusy(f"another run holds this host's benchmark lock: {holder}. Wait for it "
                       f"(`reprobook status {holder}`) or cancel it (`reprobook cancel {holder}`) first.",
                       host=host.name, holder=holder)
    raise TestbedError(f"unexpected answer while launching run {run_id}: {res.stdout[-500:]!r} {res.stderr[-500:]!r}",
                       host=host.name)


def attach(host: Host, run_id: str) -> Job:
    """The `Job` for an existing run (raises `ExperimentError` if the host has no such run)."""
    job = Job(host, run_id)
    if job.status().state == "unknown":
        raise ExperimentError(f"no run {run_id} on this host (looked in {job.remote_dir})", host=host.name)
    return job
