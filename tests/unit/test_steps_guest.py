"""Steps that run on a claim's guest (``where: guest``): validated, and carried over SSH byte for byte.

The job script runs here with a stand-in ``ssh`` on PATH that records its arguments and runs the remote
command locally, so what the guest's shell would receive can be checked without a server (the real thing,
through sshd, is in tests/integration/test_lmbench_live.py).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from reprobook.core.plan import make_plan
from reprobook.core.config import HostSpec, load_paper
from reprobook.errors import ConfigError
from reprobook.remote.steps import build_script

FAKE_SSH = r"""#!/bin/bash
# stand-in for ssh: record the arguments, then run what follows the destination as the remote shell would
# (the destination is the first word after "--": there ssh never reads it as an option)
printf '%s\n' "$@" > "$FAKE_SSH_ARGS"
while [ "$#" -gt 0 ] && [ "$1" != -- ]; do shift; done
shift 2
exec bash -c "$*"
"""


def _paper(tmp_path: Path, *, params: dict, steps: list, name: str = "guestfx") -> Path:
    loader_claim = {
        "id": "c", "title": "t", "statement": "s", "refs": ["r"], "loader": "ozz.lmbench",
        "checks": [{"kind": "at_least", "what": "w", "value": "value", "min": 0}],
        "parameters": params, "run": steps,
        "outputs": {"out": {"path": "out", "glob": "*"}},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"paper": {"id": name, "title": "GUESTFX", "venue": "tests"},
                                    "repositories": {}, "claims": [loader_claim]}, sort_keys=False))
    return path


def _run(tmp_path: Path, script: str) -> subprocess.CompletedProcess:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "ssh").write_text(FAKE_SSH)
    (bin_dir / "ssh").chmod(0o755)
    (tmp_path / "cmd.sh").write_text(script)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_SSH_ARGS": str(tmp_path / "ssh-args")}
    return subprocess.run(["bash", str(tmp_path / "cmd.sh")], capture_output=True, text=True, env=env, timeout=60,
                          stdin=subprocess.DEVNULL, cwd=tmp_path)


GUEST_PARAMS = {"guest_port": {"default": 2222, "help": "p"}, "guest_key": {"default": "keys/id", "help": "k"},
                "guest_user": {"default": "tester", "help": "u"}, "label": {"default": "x", "help": "free text"}}


def test_a_guest_step_reaches_the_guest_with_its_parameters_literally_and_no_stdin(tmp_path):
    steps = [{"name": "on the host", "run": 'echo "host: $RB_LABEL"'},
             {"name": "on the guest", "where": "guest", "cwd": str(tmp_path),
              "run": 'printf "%s" "$RB_LABEL" > guest-label.txt\npwd > guest-pwd.txt\n'
                     'if read -r line; then echo "stdin had: $line"; else echo "stdin is empty"; fi'},
             {"name": "host calls the guest", "run": "rb_guest echo via-rb-guest"}]
    paper = load_paper(_paper(tmp_path, params=GUEST_PARAMS, steps=steps))
    claim = paper.claim("c")
    assert [s.where for s in claim.run] == ["host", "guest", "host"]
    nasty = "; touch pwned $(id) `id` 'q' \"d\" \n #"
    workdir = tmp_path / "work"
    script = build_script(paper, make_plan(claim, {"label": nasty}), HostSpec("h", "h", str(workdir)), str(tmp_path / "rd"))
    assert nasty not in script  # the guest's copy travels encoded; the host's is quoted
    out = _run(tmp_path, script)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "guest-label.txt").read_text() == nasty
    assert (tmp_path / "guest-pwd.txt").read_text().strip() == str(tmp_path)  # the step's cwd, on the guest
    assert "stdin is empty" in out.stdout and "via-rb-guest" in out.stdout
    assert not list(tmp_path.rglob("pwned"))
    args = (tmp_path / "ssh-args").read_text().splitlines()
    assert args[args.index("-p") + 1] == "2222" and args[args.index("-l") + 1] == "tester"
    assert args[args.index("-i") + 1] == f"{workdir}/keys/id"  # a relative key is the host workdir's
    assert f"UserKnownHostsFile={tmp_path}/rd/guest_known_hosts" in args and "BatchMode=yes" in args
    assert args[args.index("--") + 1] == "localhost"  # the destination after "--": never an option
    assert "### reprobook step 2/3: on the guest" in out.stdout


def test_a_failing_guest_step_fails_the_run_and_an_unreachable_guest_is_said_so(tmp_path):
    steps = [{"name": "fails on the guest", "where": "guest", "run": "echo about to fail; exit 7"}]
    paper = load_paper(_paper(tmp_path, params=GUEST_PARAMS, steps=steps))
    script = build_script(paper, make_plan(paper.claim("c")), HostSpec("h", "h", str(tmp_path / "w")), str(tmp_path / "rd"))
    out = _run(tmp_path, script)
    assert out.returncode == 7 and "about to fail" in out.stdout
    steps = [{"name": "guest down", "where": "guest", "run": "exit 255"}]
    paper = load_paper(_paper(tmp_path, params=GUEST_PARAMS, steps=steps))
    script = build_script(paper, make_plan(paper.claim("c")), HostSpec("h", "h", str(tmp_path / "w")), str(tmp_path / "rd"))
    out = _run(tmp_path, script)
    assert out.returncode == 255
    assert "ssh to the guest tester@localhost:2222 ended with 255: the guest could not be reached" in out.stderr


def test_guest_steps_need_a_guest_port_and_where_is_host_or_guest(tmp_path):
    steps = [{"name": "on the guest", "where": "guest", "run": "true"}]
    paper = load_paper(_paper(tmp_path, params={"label": {"default": "x", "help": "h"}}, steps=steps))
    with pytest.raises(ConfigError, match="guestfx/c has steps on a guest but no parameter guest_port"):
        build_script(paper, make_plan(paper.claim("c")), HostSpec("h", "h", str(tmp_path)), "/tmp/rd")
    bad = _paper(tmp_path, params=GUEST_PARAMS, steps=[{"name": "x", "where": "vm", "run": "true"}])
    with pytest.raises(ConfigError) as err:
        load_paper(bad)
    assert "guestfx.yaml" in str(err.value) and "claims[0].run[0].where" in str(err.value)


def test_the_ozz_claim_runs_lmbench_in_its_guest_and_everything_else_on_the_host():
    from reprobook.core.config import load_project
    claim = load_project(Path(__file__).resolve().parents[2]).claim("ozz/lmbench-overhead")
    on_guest = [s.name for s in claim.setup + claim.run if s.where == "guest"]
    assert len(on_guest) == 9 and all(", in the guest: " in n for n in on_guest)
    assert any("make results" in n for n in on_guest) and any("enable_kssb" in n for n in on_guest)
    assert {"guest_port", "guest_host", "guest_user", "guest_key"} <= set(claim.parameters)


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.parametrize("start", ["sleep 300", "setsid sh -c 'sleep 0.7; exec sleep 300'"],
                         ids=["started", "still-starting"])
def test_a_guest_booted_by_a_step_goes_down_with_the_job_when_a_later_step_fails(tmp_path, start):
    """rb_guest_watchdog: the process a step started in the background (QEMU; here a sleep) ends with the job, also
    when the watchdog is called while it is still a shell (a QEMU started with setsid on a busy host: the watchdog
    once took that name, stopped watching when QEMU's replaced it, and the guest outlived a cancelled run)."""
    import time
    steps = [{"name": "boot a stand-in guest",
              "run": f'{start} > /dev/null 2>&1 &\necho $! > "$RB_RUN_DIR/guest.pid"\nrb_guest_watchdog "$!"'},
             {"name": "a step that fails (once the guest has become itself)", "run": "sleep 1.5; exit 5"}]
    paper = load_paper(_paper(tmp_path, params=GUEST_PARAMS, steps=steps))
    script = build_script(paper, make_plan(paper.claim("c")), HostSpec("h", "h", str(tmp_path / "w")), str(tmp_path / "rd"))
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                         env={**os.environ, "RB_WATCHDOG_S": "0.2"})
    assert out.returncode == 5, out.stdout + out.stderr
    pid = int((tmp_path / "rd" / "guest.pid").read_text())
    deadline = time.monotonic() + 20
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _running(pid), "the stand-in guest outlived the failed job"


def test_a_step_asks_rb_kvm_what_the_kvm_requirement_judges(tmp_path):
    """rb_kvm in a job script is the requirement's own probe: a step that boots with KVM refuses what check-host refuses."""
    from reprobook.core.requirements import Kvm, facts_from
    steps = [{"name": "ask", "run": 'rb_kvm > "$RB_RUN_DIR/kvm.txt"'}]
    paper = load_paper(_paper(tmp_path, params=GUEST_PARAMS, steps=steps))
    script = build_script(paper, make_plan(paper.claim("c")), HostSpec("h", "h", str(tmp_path / "w")), str(tmp_path / "rd"))
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stdout + out.stderr
    probed = subprocess.run(["bash", "-c", Kvm.probe], capture_output=True, text=True, timeout=30).stdout
    said = (tmp_path / "rd" / "kvm.txt").read_text()
    assert said == probed and said.startswith("kvm=")
    assert facts_from(said).kvm == (said == "kvm=usable\n")
