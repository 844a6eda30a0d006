"""Ozz's rehearsal in a guest made here (guest=debian): what its steps are told, and what the run adapts.

The real thing (an image made with debootstrap, QEMU, LMBench in the guest) is `make live-guest`
(tests/live/test_guest_live.py); here the claim's own step scripts run with bash against stand-ins for LMBench's
scripts, in well under a second each.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from reprobook.core.config import load_project
from reprobook.core.plan import make_plan
from reprobook.core.requirements import facts_from
from reprobook.core.scales import adapt
from reprobook.remote.steps import param_env

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = "syscall select proc pagefault file mmap ctx pipe unix udp tcp connect rpc http bcopy mem ops".split()


@pytest.fixture(scope="module")
def claim():
    return load_project(ROOT).claim("ozz/lmbench-overhead")


def _step(claim, prefix: str):
    return next(s for s in claim.setup + claim.run if s.name.startswith(prefix))


def _bash(claim, prefix: str, params: dict, tmp_path: Path, **env) -> subprocess.CompletedProcess:
    plan = make_plan(claim, params)
    full = {**os.environ, **param_env(plan), "RB_RUN_DIR": str(tmp_path / "rd"), "RB_WORKDIR": str(tmp_path), **env}
    return subprocess.run(["bash", "-c", "set -euo pipefail\n" + _step(claim, prefix).run], capture_output=True,
                          text=True, env=full, timeout=60, cwd=tmp_path, stdin=subprocess.DEVNULL)


def test_the_rehearsal_is_debians_kernel_in_a_guest_made_here_with_three_benchmarks(claim):
    plan = make_plan(claim, {"scale": "rehearsal"})
    assert {k: plan.params[k] for k in ("guest", "kernels", "subset", "benchmarks", "reruns", "guest_key")} == {
        "guest": "debian", "kernels": "baseline", "subset": "DEVELOPMENT", "benchmarks": "syscall select proc",
        "reruns": 0, "guest_key": "guest-images/id_ed25519"}
    at = claim.at_scale("rehearsal")
    assert "kvm" not in dict(at.requires.items()) and "files" not in dict(at.requires.items())
    kinds = [d.kind for d in plan.deviations]
    assert "kernel" in kinds and "size" in kinds
    assert "the instrumented (OEMU) kernel is not run" in next(d.what for d in plan.deviations if d.kind == "kernel")
    image = _step(claim, "guest=debian: make the Debian 12 guest image")
    assert dict(image.packages)["Debian 12"] == ("qemu-system-x86", "debootstrap", "e2fsprogs")


def test_the_rehearsal_boots_its_guest_before_any_step_runs_there(claim):
    """Only the baseline's steps run: a guest step before the boot would find no guest to skip itself in."""
    from reprobook.remote.steps import step_plan
    at = claim.at_scale("rehearsal")
    steps = [s for _, s in step_plan(load_project(ROOT).paper("ozz"), at) if s is not None]
    names = [s.name for s in steps]
    assert not [n for n in names if n.startswith("oemu")]
    boot = next(i for i, n in enumerate(names) if n.startswith("baseline: boot"))
    assert all(s.where == "host" for s in steps[:boot]) and steps[boot + 2].where == "guest"
    assert names[-2] == "baseline: shut the guest down" and names[-1].startswith("record how long each step took")
    assert [s.name for s in claim.run if s.name.startswith("baseline")] == [n for n in names if n.startswith("baseline")]


@pytest.mark.parametrize("probe, accel", [("kvm=paravirtual", "tcg"), ("kvm=missing", "tcg"), ("kvm=usable", "kvm")])
def test_a_host_whose_kvm_cannot_run_a_standard_guest_gets_tcg_and_the_run_says_so(claim, probe, accel):
    used, made = adapt(claim.adaptations, {"scale": "rehearsal"}, {"h": facts_from(probe).as_dict()})
    assert used.get("accel", "kvm") == accel
    assert [m["set"] for m in made] == ([{"accel": "tcg"}] if accel == "tcg" else [])
    machine = [d.what for d in make_plan(claim, used).deviations if d.kind == "machine"]
    assert bool(machine) == (accel == "tcg")
    if machine:
        assert "QEMU emulates the guest (TCG)" in machine[0]
    # at the paper scale, Ozz's own run_qemu.sh boots the guest: the TCG deviation is the debian guest's alone
    assert not [d for d in make_plan(claim, {**used, "scale": "paper"}).deviations if d.kind == "machine"]


@pytest.mark.parametrize("params, code, words", [
    ({"scale": "rehearsal"}, 0, "subset DEVELOPMENT (syscall select proc), ENOUGH 5000"),
    ({"scale": "rehearsal", "kernels": "both"}, 2, "guest=debian boots Debian's own kernel"),
    ({"scale": "rehearsal", "accel": "hvf"}, 2, "accel must be kvm or tcg, not 'hvf'"),
    ({"scale": "rehearsal", "benchmarks": "syscall sig"}, 2, "benchmarks: 'sig' is not one of LMBench's"),
    ({"scale": "rehearsal", "benchmarks": ""}, 2, "subset=DEVELOPMENT runs the benchmarks named in benchmarks"),
    ({"scale": "paper", "benchmarks": "proc"}, 2, "which only subset=DEVELOPMENT runs (subset is OS)"),
    ({"scale": "paper"}, 0, "subset OS, ENOUGH calibrated")])
def test_the_parameters_are_checked_before_anything_is_made_or_booted(claim, tmp_path, params, code, words):
    out = _bash(claim, "check the parameters", params, tmp_path)
    assert out.returncode == code, out.stdout + out.stderr
    assert words in (out.stdout + out.stderr)


FAKE_CONFIG_RUN = r"""#!/bin/bash
# LMBench's scripts/config-run as far as the answers go: its questions in its order (DEVELOPMENT: one per benchmark)
read -r copies; read -r sched; read -r mb; read -r subset
C="../bin/$OS/CONFIG.rb-guest"; mkdir -p "../bin/$OS"
{
  echo 'LMBENCH_SCHED="DEFAULT"'; echo 'SYNC_MAX="1"'; echo "MB=$mb"
  case "$subset" in
    D*) echo BENCHMARK_OS=NO; echo BENCHMARK_HARDWARE=NO
        for n in SYSCALL SELECT PROC PAGEFAULT FILE MMAP CTX PIPE UNIX UDP TCP CONNECT RPC HTTP BCOPY MEM OPS; do
          read -r a; case "$a" in [nN]*) echo "BENCHMARK_$n=NO" ;; *) echo "BENCHMARK_$n=YES" ;; esac
        done ;;
    O*) echo BENCHMARK_OS=YES; echo BENCHMARK_HARDWARE=NO ;;
  esac
  read -r slowfs; read -r remote; read -r mhz; read -r fsdir; read -r status; read -r mail
  echo "MAIL=$mail"; echo "FSDIR=$fsdir"
} > "$C"
echo "Confguration done, thanks."
"""


def _fake_lmbench(guest: Path, config_run: str = FAKE_CONFIG_RUN) -> None:
    scripts = guest / "lmbench" / "scripts"
    scripts.mkdir(parents=True)
    (guest / "lmbench" / "src").mkdir()
    for name, text in {"os": "#!/bin/sh\necho x86_64-linux-gnu\n", "config": "#!/bin/sh\necho CONFIG.rb-guest\n",
                       "config-run": config_run,
                       "results": '#!/bin/sh\nmkdir -p "../results/$OS" && echo measured > "../results/$OS/rb-guest.0"\n'
                       }.items():
        (scripts / name).write_text(text)
        (scripts / name).chmod(0o755)


def test_lmbenchs_development_questions_are_answered_from_benchmarks_in_its_order(claim, tmp_path):
    guest = tmp_path / "guest"
    _fake_lmbench(guest)
    out = _bash(claim, "baseline, in the guest: first LMBench run", {"scale": "rehearsal", "guest_dir": str(guest),
                                                                   "fsdir": "/var/tmp/lmb"}, tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    answers = (guest / "lmbench" / "lmbench-answers.txt").read_text().split("\n")
    yes = [("yes" if b in ("syscall", "select", "proc") else "no") for b in BENCHMARKS]
    assert answers == ["", "1", "16", "DEVELOPMENT", *yes, "", "", "", "/var/tmp/lmb", "", "no", ""]
    assert "BENCHMARK_PROC=YES" in out.stdout and "BENCHMARK_CTX=NO" in out.stdout
    assert (guest / "lmbench" / "results" / "x86_64-linux-gnu" / "rb-guest.0").exists()


def test_a_configuration_that_missed_a_benchmark_is_caught_before_measuring(claim, tmp_path):
    """An LMBench that asks one question fewer shifts every answer after it: the recorded configuration says so."""
    guest = tmp_path / "guest"
    _fake_lmbench(guest, FAKE_CONFIG_RUN.replace("SYSCALL SELECT PROC", "SYSCALL PROC"))
    out = _bash(claim, "baseline, in the guest: first LMBench run", {"scale": "rehearsal", "guest_dir": str(guest)},
                tmp_path)
    assert out.returncode == 1
    assert "CONFIG.rb-guest lacks " in out.stderr   # the mail answer went to SLOWFS, the benchmarks' one row up
    assert "the answers did not reach the prompts they were meant for" in out.stderr
    assert not (guest / "lmbench" / "results").exists()


def test_other_guests_make_no_image(claim, tmp_path):
    out = _bash(claim, "guest=debian: make the Debian 12 guest image", {"scale": "paper"}, tmp_path)
    assert out.returncode == 0 and "guest=qemu: no guest image to make" in out.stdout
    assert not (tmp_path / "guest-images").exists()
