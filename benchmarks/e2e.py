"""End-to-end overhead of a live run of a trivial claim.

reprobook: `reprobook.remote.live.perform` with ``new=True`` (a fresh run id each time): connect, gather host
facts, launch the detached job, poll it to completion, fetch its one small output, write the manifest.
Plain: ``ssh -F cfg node1 'cd dir && ... echo 42 > out/result.txt'`` then ``scp`` of that file.

Timed in-process (the interpreter is already running, modules imported by a warm-up run); the cost
of starting Python and importing ``reprobook.remote.live`` is measured apart.
"""

from __future__ import annotations

import shlex

from .common import Context, Phases, Result, Samples, fmt_s, interleaved, interpreter_start, run_quiet, timed

TARGET_RATIO = 2.0
TARGET_ABS_S = 1.5
STEP = "mkdir -p out && echo 42 > out/result.txt"


def _paper() -> dict:
    return {
        "paper": {"id": "bench", "title": "benchmark paper", "venue": "benchmarks"},
        "repositories": {},
        "claims": [{
            "id": "trivial",
            "title": "a claim whose experiment writes 42",
            "statement": "The experiment writes the number 42 to a file.",
            "refs": ["benchmarks/e2e.py"],
            "requires": {"cores": 1},
            "run": [{"name": "write 42", "run": STEP}],
            "outputs": {"result": {"path": "out", "glob": "result.txt"}},
            "loader": "aardvark.validators",  # a registered loader; the benchmark never loads
            "checks": [{"kind": "at_least", "what": "the result is 42", "value": "value", "min": 42}],
        }],
    }


def run(ctx: Context) -> list[Result]:
    from reprobook.remote import hosts, jobs, live
    from reprobook.core import runs
    from reprobook.core.config import load_project

    alias = ctx.node(1)
    root = ctx.write_project("e2e", [alias], _paper())
    workdir = ctx.workdir(alias)
    repeats = ctx.repeats(7, 2)
    local = ctx.tmp / "e2e-plain"
    local.mkdir(exist_ok=True)

    with ctx.env(REPROBOOK_RUNS=None, REPROBOOK_ROOT=str(root)):
        project = load_project(root)
        claim = project.claim("bench/trivial")
        performed = []

        def reprobook_run():
            r = live.perform(project, claim, alias, {}, new=True, progress=False)
            performed.append(r)
            return r

        def plain_run():
            remote = f"cd {shlex.quote(str(workdir))} && {STEP}"
            run_quiet(ctx.ssh_argv(alias) + [remote])
            run_quiet(["scp", "-q", "-F", str(ctx.ssh_config),
                       f"{alias}:{workdir}/out/result.txt", str(local / "result.txt")])

        ctx.log(f"{repeats} repetitions (after one warm-up) of perform() and of ssh + scp on {alias}")
        phases = Phases()
        with phases.wrap(hosts.SshHost, "_open", "connect"), phases.wrap(hosts.Host, "facts", "facts"), \
                phases.wrap(runs.RunStore, "create", "manifest"), phases.wrap(live, "launch", "launch"), \
                phases.wrap(jobs.Job, "wait", "poll"), phases.wrap(live, "fetch", "fetch"), \
                phases.wrap(live, "collect", "collect (log, listing, small outputs)"), \
                phases.wrap(jobs.Job, "status", "status"), \
                phases.count(hosts.SshHost, "_run", "commands"), phases.count(hosts.SshHost, "get", "sftp gets"):
            # warm-up: imports (fabric, paramiko), first connection; not timed
            interleaved({"reprobook": reprobook_run, "plain": plain_run}, 1)
            phases.reset()
            host_cpu = {"reprobook": 0.0, "plain": 0.0}
            last = {"name": None, "cpu": ctx.testbed_cpu_s()}

            def account(name):  # untimed: the hosts' CPU since the previous call belongs to the previous contender
                now = ctx.testbed_cpu_s()
                if last["name"]:
                    host_cpu[last["name"]] += now - last["cpu"]
                last.update(name=name, cpu=now)

            s = interleaved({"reprobook": reprobook_run, "plain": plain_run}, repeats, setup=account, log=ctx.log)
            account(None)
        load_s = Samples(tuple(timed(lambda: load_project(root))[0] for _ in range(repeats)))
        # the unit cost: one remote command on an open connection (a new session, the login shell's
        # startup files, the command) -- what each of perform()'s round trips pays
        with ctx.ssh_host(alias) as h:
            h.run("true")
            one_cmd = Samples(tuple(timed(lambda: h.run("true"))[0] for _ in range(ctx.repeats(5, 3))))
        # the hosts log in as this user, whose shell reads ~/.bashrc for every remote command
        rc = [timed(lambda: run_quiet(["bash", "-c", ". ~/.bashrc >/dev/null 2>&1; true"]))[0]
              - timed(lambda: run_quiet(["bash", "-c", "true"]))[0] for _ in range(ctx.repeats(5, 3))]
        bashrc = Samples(tuple(rc))

    # every run must really have succeeded and fetched 42
    for r in performed:
        files = r.files("result")
        if r.status != "succeeded" or len(files) != 1 or files[0].read_text().strip() != "42":
            raise RuntimeError(f"run {r.id} did not end as expected: status {r.status}, files {files}")
    if (local / "result.txt").read_text().strip() != "42":
        raise RuntimeError("plain ssh + scp did not bring back 42")

    ctx.log("interpreter start: python -c 'import reprobook.remote.live' vs python -c 'pass'")
    start = interpreter_start("import reprobook.remote.live", ctx.repeats(3, 1))
    bare = interpreter_start("pass", ctx.repeats(3, 1))
    js = None if ctx.quick else interpreter_start("import jsonschema", 1)

    rb, plain = s["reprobook"].median, s["plain"].median
    ratio = rb / plain
    n = repeats
    per_run = {k: v / n for k, v in phases.totals.items()}
    polls = phases.calls.get("status", 0) / n
    commands = phases.counts.get("commands", 0) / n
    gets = phases.counts.get("sftp gets", 0) / n
    # "poll" is Job.wait minus its status calls; give the status round trips their own line
    breakdown = ", ".join(f"{k} {fmt_s(v)}" for k, v in sorted(per_run.items(), key=lambda kv: -kv[1]))
    other = rb - sum(per_run.values())
    notes = [f"where the time goes (mean per run): {breakdown}, rest {fmt_s(max(other, 0))}; "
             f"{polls:.1f} status polls per run",
             f"round trips: {commands:.1f} remote commands + {gets:.1f} SFTP get(s) per run; one remote command "
             f"on the open connection costs {fmt_s(one_cmd.median)} here (reading ~/.bashrc once, as the login "
             f"shell does, takes ~{fmt_s(max(bashrc.median, 0))}); plain does 1 command + 1 scp",
             f"the host's own CPU (sshd, remote shells) per run: reprobook {host_cpu['reprobook'] / n:.2f} core-s, "
             f"plain {host_cpu['plain'] / n:.2f} core-s"]
    results = [
        Result("e2e", "e2e trivial claim (perform vs ssh+scp)",
               f"reprobook {fmt_s(rb)}, plain ssh+scp {fmt_s(plain)}",
               value=rb, unit="s", plain_tool="ssh + scp", plain_value=plain, ratio=ratio,
               comparison=f"{ratio:.2f}x plain", target=f"<= {TARGET_RATIO:g}x",
               passed=ratio <= TARGET_RATIO, notes=notes,
               samples={"reprobook": s["reprobook"].as_dict(), "plain": s["plain"].as_dict(),
                        "phases_per_run_s": per_run, "status_polls_per_run": polls,
                        "remote_commands_per_run": commands, "sftp_gets_per_run": gets,
                        "one_remote_command_s": one_cmd.as_dict(), "bashrc_s": bashrc.as_dict(),
                        "host_cpu_core_s_per_run": {k: v / n for k, v in host_cpu.items()}}),
        Result("e2e", "e2e trivial claim, absolute", f"reprobook {fmt_s(rb)} in-process",
               value=rb, unit="s", target=f"<= {TARGET_ABS_S:g} s", passed=rb <= TARGET_ABS_S),
        Result("e2e", "interpreter start + import reprobook.remote.live",
               f"{fmt_s(start.median)} (bare python {fmt_s(bare.median)}); load_project {fmt_s(load_s.median)}",
               value=start.median, unit="s", plain_tool="python -c pass", plain_value=bare.median,
               notes=["not part of the in-process figures above"
                      + (f"; `import jsonschema` alone takes {fmt_s(js.median)} in a fresh interpreter" if js else "")],
               samples={"import": start.as_dict(), "bare": bare.as_dict(), "load_project": load_s.as_dict(),
                        "import_jsonschema": js.as_dict() if js else None}),
    ]
    return results
