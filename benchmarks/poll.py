"""Polling a long detached job: CPU used by the waiting process and SSH connections opened.

reprobook: `reprobook.remote.jobs.launch` of ``sleep N``, then ``Job.wait(progress=False, poll_s=5)`` in this
process. CPU is ``time.process_time()`` (every thread of the process, paramiko's included) over the
wait, divided by its wall time. Connections are counted twice: new connections made by
``SshHost._open``, and logins in the sshd's own log (``Accepted publickey``).

Plain: ``ssh node1 'sleep N'`` started at the same moment, holding one session open for the same
time; its CPU is read from ``wait4`` when it ends.
"""

from __future__ import annotations

import os
import subprocess
import time

from .common import Context, Result, fmt_s

TARGET_CPU_PCT = 1.0
TARGET_CONNECTIONS = 1


def run(ctx: Context) -> list[Result]:
    from reprobook.remote import hosts, jobs

    n_s = 300 if ctx.full else (8 if ctx.quick else 60)
    alias = ctx.node(1)
    opened = []
    original_open = hosts.SshHost._open

    def counting_open(self):
        fresh = self._conn is None or not self._conn.is_connected
        conn = original_open(self)
        if fresh:
            opened.append(time.monotonic())
        return conn

    statuses = []
    original_status = jobs.Job.status

    def counting_status(self, *a, **kw):
        statuses.append(time.monotonic())
        return original_status(self, *a, **kw)

    run_id = f"bench-poll-{os.getpid()}-{int(time.time())}"
    logins_before = ctx.accepted_logins(alias)
    hosts.SshHost._open, jobs.Job.status = counting_open, counting_status
    job = None
    plain = None
    finished = False
    try:
        host = ctx.ssh_host(alias)
        job, started = jobs.launch(host, run_id, f"sleep {n_s}")
        if not started:
            raise RuntimeError(f"run {run_id} attached instead of starting")
        ctx.log(f"launched `sleep {n_s}` as {run_id}; waiting with Job.wait(poll_s=5), "
                f"plain `ssh {alias} sleep {n_s}` alongside")
        logins_wait_before = ctx.accepted_logins(alias)
        plain = subprocess.Popen(ctx.ssh_argv(alias) + [f"sleep {n_s}"], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        opened_before_wait = len(opened)
        w0, c0 = time.perf_counter(), time.process_time()
        st = job.wait(progress=False, poll_s=5)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        _, status, usage = os.wait4(plain.pid, 0)
        plain_wall = time.perf_counter() - w0
        plain.returncode = os.waitstatus_to_exitcode(status)
        if plain.returncode != 0:
            raise RuntimeError(f"plain `ssh {alias} sleep {n_s}` exited {plain.returncode}")
        if st.state != "succeeded":
            raise RuntimeError(f"the job ended {st.state}, not succeeded: {st.log_tail}")
        opened_during_wait = len(opened) - opened_before_wait
        opened_total = len(opened)
        finished = True
        host.close()
    finally:
        hosts.SshHost._open, jobs.Job.status = original_open, original_status
        if plain is not None and plain.returncode is None:
            plain.kill()
            plain.wait()
        if job is not None and not finished and not job.status().done:  # interrupted: stop the job
            job.cancel()
            job.host.close()

    # the plain ssh session also started during the wait: take its login out of the sshd count
    logins_total = ctx.accepted_logins(alias) - logins_before - 1
    logins_wait = ctx.accepted_logins(alias) - logins_wait_before - 1
    pct = 100 * cpu / wall
    plain_cpu = usage.ru_utime + usage.ru_stime
    plain_pct = 100 * plain_cpu / plain_wall
    polls = len(statuses)
    return [
        Result("poll", f"poll a {n_s} s job: CPU while waiting",
               f"reprobook {pct:.2f}% of a core ({cpu * 1000:.0f} ms CPU in {wall:.1f} s, {polls} status polls, "
               f"{cpu / polls * 1000:.1f} ms each), plain ssh session {plain_pct:.3f}% ({plain_cpu * 1000:.0f} ms)",
               value=pct, unit="% core", plain_tool="ssh holding a session", plain_value=plain_pct,
               comparison=f"{pct - plain_pct:+.2f} points vs plain", target=f"< {TARGET_CPU_PCT:g}%",
               passed=pct < TARGET_CPU_PCT,
               notes=[f"at the steady 5 s interval, {cpu / polls * 1000:.1f} ms per poll is "
                      f"{cpu / polls / 5 * 100:.2f}% of a core"
                      + ("; this short job is mostly the fast first polls (0.05 s backing off to 5 s): "
                         "the default run waits 60 s" if n_s < 60 else "")],
               samples={"wait_s": wall, "cpu_s": cpu, "polls": polls, "job_seconds": n_s,
                        "plain_cpu_s": plain_cpu, "plain_wall_s": plain_wall}),
        Result("poll", f"poll a {n_s} s job: SSH connections",
               f"reprobook opened {opened_total} connection(s) for launch + wait ({opened_during_wait} during the "
               f"wait); sshd logged {logins_total} login(s) ({logins_wait} during the wait)",
               value=float(max(opened_total, logins_total)), unit="conn", plain_tool="ssh", plain_value=1.0,
               comparison=f"{max(opened_total, logins_total)} vs 1 for plain ssh",
               target=f"{TARGET_CONNECTIONS} for the whole wait",
               passed=max(opened_total, logins_total) <= TARGET_CONNECTIONS,
               notes=[f"the job is polled at 0.05 s, backing off by 1.5x to 5 s: {polls} polls in {fmt_s(wall)}; "
                      f"the wait returned {wall - n_s:.1f} s after the job's {n_s} s"],
               samples={"opened_by_reprobook": opened_total, "opened_during_wait": opened_during_wait,
                        "sshd_logins": logins_total, "sshd_logins_during_wait": logins_wait}),
    ]
