"""Aardvark's three claims at rehearsal scale, run live with perform(), against doing the same by hand.

reprobook: `reprobook.remote.live.perform` of ``aardvark/vector-commitments``, ``aardvark/validator-throughput``
and ``aardvark/archive-throughput`` with ``scale=rehearsal`` and ``new=True``, one after the other on one
host workdir (so the second and third reuse the checkout, the builds and the workload): connect, gather
host facts, launch each detached job (sparse checkout with submodules from the mirror, the source
constants set from the parameters, the builds, the workload, the timing runs), poll it to the end,
fetch the outputs, write the manifests.

Plain: what a person types for the same, with the same toolchains and sizes: ``ssh`` + ``git`` (clone,
sparse-checkout, submodules through the same URL rewrite), ``sed`` for the five source constants,
``make``/``cmake`` for EDRAX, ``cargo`` with ``RUSTC_BOOTSTRAP=1``, ``make`` for libsodium, ``go test``
for the ledger build, the workload and the timings (``numactl`` as the guide's scripts pin them), then
``scp`` of the five output files.

Both sides start cold, each in a fresh workdir with a fresh cargo home and Go build cache; the Go
module cache is one for both, filled before the timed pair, so that neither side's figure is the
module proxy's. Each side takes several minutes on 2 cores, dominated by the C, Rust and Go builds and
the workload generation, whose noise on a loaded machine is larger than reprobook's overhead: one
pair gives a rough ratio. ``--quick`` skips it; ``--repeats N`` runs N cold pairs, taking turns.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import yaml

from .common import ROOT, Context, Phases, Result, fmt_s, interleaved, run_quiet, timed
from .verus_live import _step_seconds

CLAIMS = ("vector-commitments", "validator-throughput", "archive-throughput")
PARAMS = {"scale": "rehearsal"}
REPO = "derbear/aardvark-prototype"
COMMIT = "dd8f6aaf5f76173118f3f3decbe099bda5972ce2"
GIT_MIRROR = ROOT.parent / "shared" / "git" / "github.com"
TARGET_RATIO = 1.05
OUTPUTS = ("edrax/bench.csv", "veccom-rust/bench-results.txt", "go-algorand/ledger/out2.txt",
           "go-algorand/ledger/aout1.txt")


def _prerequisites() -> None:
    if not (GIT_MIRROR / f"{REPO}.git").is_dir():
        raise RuntimeError(f"no git mirror of {REPO} at {GIT_MIRROR}")
    path = f"{shutil.os.environ.get('PATH', '')}:{Path.home() / '.cargo' / 'bin'}:/usr/local/go/bin"
    missing = [t for t in ("cargo", "go", "cmake", "autoconf", "automake", "libtoolize", "numactl")
               if not shutil.which(t, path=path)]
    if missing:
        raise RuntimeError(f"{', '.join(missing)} not installed")


def _skipped(why: str) -> list[Result]:
    return [Result("aardvark_rehearsal", "aardvark's three claims at rehearsal scale (perform vs ssh+git+make+cargo+go+scp)",
                   f"skipped: {why}", notes=["run it without --quick (about 15 minutes on 2 cores)"])]


def _plain_script(work: Path, caches: Path, gomod: Path) -> dict[str, str]:
    """The by-hand session, phase by phase: what a person types on the host for the three rehearsals."""
    q = shlex.quote
    env = (f"export CARGO_HOME={q(str(caches / 'cargo'))} GOCACHE={q(str(caches / 'go-build'))} "
           f"GOMODCACHE={q(str(gomod))} GOPATH={q(str(caches / 'go'))} RUSTUP_AUTO_INSTALL=0 "
           f"RUSTUP_TOOLCHAIN=stable RUSTC_BOOTSTRAP=1 GO111MODULE=on GOFLAGS='-modcacherw -mod=mod -buildvcs=false' "
           f"PATH=\"$PATH:$HOME/.cargo/bin:/usr/local/go/bin\" && set -e && cd {q(str(work))}/aardvark-prototype")
    rewrite = (f"export GIT_CONFIG_COUNT=2 GIT_CONFIG_KEY_0=url.{q(str(GIT_MIRROR))}/.insteadOf "
               f"GIT_CONFIG_VALUE_0=https://github.com/ GIT_CONFIG_KEY_1=protocol.file.allow GIT_CONFIG_VALUE_1=always")
    return {
        "git": (f"set -e; {rewrite}; mkdir -p {q(str(work))} && cd {q(str(work))} && "
                f"git clone -q --no-checkout https://github.com/{REPO} aardvark-prototype && cd aardvark-prototype && "
                f"git sparse-checkout set --no-cone '/*' '!/go-algorand/installer/external/node_exporter-stable-*.tar.gz' && "
                f"git checkout -q --detach {COMMIT} 2>/dev/null && git submodule update -q --init --recursive"),
        "sed": (f"{env} && sed -i 's/^const WARM: usize = 100;/const WARM: usize = 5;/' "
                "veccom-rust/src/bin/run_aardvark_bench.rs && "
                "sed -i 's/^\\tauto iters = 1000;/\\tauto iters = 20;/; s/^\\tauto warm = 100;/\\tauto warm = 5;/' "
                "edrax/test.cpp && sed -i 's/^const startingAddrs = 1000000$/const startingAddrs = 1000/; "
                "s/^const numBlocksWorkload = 10$/const numBlocksWorkload = 2/; "
                "s/^const txnsPerBlock = 10000$/const txnsPerBlock = 20/' go-algorand/ledger/perf_test.go"),
        "edrax": (f"{env} && cd edrax && ((cd ate-pairing && make -j$(nproc)) > /dev/null 2>&1 || true) && "
                  "((cd xbyak && make -j$(nproc)) > /dev/null 2>&1 || true) && cmake . > /dev/null && "
                  "make -j$(nproc) > /dev/null 2>&1 && (./bench.sh || true)"),
        "cargo": (f"{env} && cd veccom-rust && cargo build -q --release 2> /dev/null && "
                  "cargo run -q --release --bin run_aardvark_bench 1024 20 > bench-results.txt 2> /dev/null"),
        "go": (f"{env} && cd go-algorand && make -j$(nproc) crypto/lib/libsodium.a > /dev/null 2>&1 && cd ledger && "
               "go test -c -o /dev/null > /dev/null 2>&1 && "
               "go test -v -run TestWorkloadGen -cpuprofile gen.out -timeout 5h > /dev/null 2>&1 && "
               "numactl -C 0-1 -- go test -v -run TestTimeWorkload -timeout 4h -count 1 > out2.txt && "
               "numactl -C 0-0 -- go test -v -run TestTimeArchive -cpuprofile abench1.out -timeout 4h -count 1 "
               "> aout1.txt"),
    }


def run(ctx: Context) -> list[Result]:
    from reprobook.remote import hosts, jobs, live
    from reprobook.core.config import load_project
    from reprobook.core.loaders import load
    from reprobook.sources import from_run

    if ctx.quick and not ctx.repeats_override:
        return _skipped("--quick (each side builds Aardvark from source and runs its three claims: minutes)")
    _prerequisites()
    alias = ctx.node(1)
    repeats = ctx.repeats(1, 1)
    base = ctx.tmp / "aardvark_rehearsal"
    gomod = base / "go-mod"  # one module cache for both sides, filled first: the proxy's speed is not measured
    rb_hosts = {f"aard-rb{i}": {"ssh": alias, "workdir": str(base / f"rb{i}" / "work"),
                                "git_url_rewrites": {"https://github.com/": f"{GIT_MIRROR}/"},
                                "env": {"CARGO_HOME": str(base / f"rb{i}" / "cargo"),
                                        "GOCACHE": str(base / f"rb{i}" / "go-build"), "GOMODCACHE": str(gomod),
                                        "GOPATH": str(base / f"rb{i}" / "go"), "GOFLAGS": "-modcacherw",
                                        "RUSTUP_AUTO_INSTALL": "0"}}
                for i in range(1, repeats + 1)}
    (base / "runs").mkdir(parents=True)
    (base / "hosts.yaml").write_text(yaml.safe_dump({"hosts": rb_hosts}))
    ssh = ctx.ssh_argv(alias)
    warm = base / "warm"
    ctx.log("filling the shared Go module cache (go mod download in a scratch checkout)")
    warm_script = _plain_script(warm, base / "warm-caches", gomod)
    run_quiet(ssh + [warm_script["git"]])
    run_quiet(ssh + [warm_script["go"].split(" && make ")[0] + " && go mod download"])
    plain_dirs = iter(base / f"plain{i}" for i in range(1, repeats + 1))
    rb_names = iter(rb_hosts)
    performed: list[list] = []
    plain_parts, plain_outputs = [], []

    with ctx.env(REPROBOOK_ROOT=str(ROOT), REPROBOOK_HOSTS=str(base / "hosts.yaml"),
                 REPROBOOK_RUNS=str(base / "runs")):
        project = load_project(ROOT)
        claims = [project.claim(f"aardvark/{c}") for c in CLAIMS]

        def reprobook_run():
            name = next(rb_names)
            performed.append([live.perform(project, c, name, PARAMS, new=True, allow_insufficient=True,
                                           progress=False) for c in claims])

        def plain_run():
            d = next(plain_dirs)
            parts = {}
            for phase, script in _plain_script(d / "work", d / "caches", gomod).items():
                parts[phase], _ = timed(lambda: run_quiet(ssh + [script]))
            local = d / "outputs"
            local.mkdir(parents=True)
            remote = [f"{alias}:{d / 'work' / 'aardvark-prototype' / p}" for p in OUTPUTS]
            parts["scp"], _ = timed(lambda: run_quiet(["scp", "-q", "-F", str(ctx.ssh_config), *remote, str(local)]))
            plain_parts.append(parts)
            plain_outputs.append(local)

        ctx.log(f"{repeats} cold pair(s): perform() of the three Aardvark claims {PARAMS} and the same by hand, "
                f"on {alias}")
        phases = Phases()
        with phases.wrap(hosts.SshHost, "_open", "connect"), phases.wrap(hosts.Host, "facts", "facts"), \
                phases.wrap(live, "launch", "launch"), phases.wrap(jobs.Job, "wait", "job + polling"), \
                phases.wrap(live, "collect", "fetch + manifest"), phases.count(jobs.Job, "status", "status polls"):
            s = interleaved({"reprobook": reprobook_run, "plain": plain_run}, repeats, log=ctx.log)

        # both sides must really have measured: every run succeeded and loads; the plain outputs are all there
        for runs in performed:
            for claim, r in zip(claims, runs):
                if r.status != "succeeded" or load(claim, from_run(claim, r)).empty:
                    raise RuntimeError(f"run {r.id} did not end as expected: status {r.status}")
    for local in plain_outputs:
        missing = [p for p in OUTPUTS if not (local / Path(p).name).stat().st_size]
        if missing:
            raise RuntimeError(f"the plain side produced no {', '.join(missing)}")

    rb, plain = s["reprobook"].median, s["plain"].median
    ratio = rb / plain
    n = repeats
    per_run = {k: v / n for k, v in phases.totals.items()}
    steps = {c: _step_seconds(r.path / "log.txt") for c, r in zip(CLAIMS, performed[-1])}
    parts = {k: sum(p[k] for p in plain_parts) / n for k in plain_parts[0]}
    notes = [
        "where reprobook's time goes (mean per run of the three): "
        + ", ".join(f"{k} {fmt_s(v)}" for k, v in sorted(per_run.items(), key=lambda kv: -kv[1]))
        + f"; {phases.counts.get('status polls', 0) / n:.0f} status polls (every {project.settings.poll_interval_s:g} s)",
        *(f"{c} steps: " + ", ".join(f"{name} {sec} s" for name, sec in st) for c, st in steps.items()),
        "plain (mean per run): " + ", ".join(f"{k} {fmt_s(v)}" for k, v in parts.items()),
        "the builds and the workload generation vary by tens of seconds from run to run on a loaded 2-vCPU "
        "machine, more than reprobook's overhead: one pair gives a rough ratio (--repeats N for more)",
    ]
    return [Result("aardvark_rehearsal",
                   "aardvark's three claims at rehearsal scale (perform vs ssh+git+make+cargo+go+scp)",
                   f"reprobook {fmt_s(rb)}, plain {fmt_s(plain)}", value=rb, unit="s",
                   plain_tool="ssh + git + sed + make + cargo + go + scp", plain_value=plain, ratio=ratio,
                   comparison=f"{ratio:.2f}x plain", target=f"<= {TARGET_RATIO:g}x", passed=ratio <= TARGET_RATIO,
                   notes=notes,
                   samples={"reprobook": s["reprobook"].as_dict(), "plain": s["plain"].as_dict(),
                            "phases_per_run_s": per_run, "job_steps_s": {c: dict(st) for c, st in steps.items()},
                            "plain_parts_s": parts})]
