"""The ssh and scp wrappers the Pesto harness step puts before the authors' harness (configs/papers/pesto.yaml,
``rehearsal_run``): taken from the paper file as the step writes them, run under /bin/sh with a recording ssh and scp
in place of /usr/bin's (``RB_SSH_BIN``), and the argument vector that reaches them compared word for word, with what
the step's earlier Python wrapper made of the same arguments as a second opinion."""

from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CM = "ControlPath=/tmp/rb-ssh.X/%C"   # the job's socket directory (RB_SSH_CM) as every call names it


@functools.lru_cache(maxsize=None)
def _wrapper_text() -> str:
    shared = yaml.safe_load((ROOT / "configs" / "papers" / "pesto.yaml").read_text())["shared"]
    run = shared["rehearsal_run"][0]["run"]
    m = re.search(r"<<'SH'\n(.*?)\nSH\n", run, re.S)
    assert m, "the harness step writes no rb-ssh-wrap heredoc"
    return m.group(1) + "\n"


@pytest.fixture
def wrap(tmp_path):
    """Run the wrapper as ``tool`` with ``args``; the argv the recording tool got (its own name first)."""
    shims, real = tmp_path / "shims", tmp_path / "real"
    shims.mkdir()
    real.mkdir()
    text = _wrapper_text()
    for tool in ("ssh", "scp"):
        (shims / tool).write_text(text)
        (shims / tool).chmod(0o755)
        (real / tool).write_text("#!/bin/sh\nprintf '%s\\0' \"${0##*/}\" \"$@\"\n")
        (real / tool).chmod(0o755)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RB_SSH_BIN": str(real), "RB_SSH_CM": "/tmp/rb-ssh.X",
           "RB_SSH_CONFIG": "/etc/rb ssh config"}

    def run(tool: str, *args: str, **extra: str | None) -> list[str]:
        e = {**env, **extra}
        e = {k: v for k, v in e.items() if v is not None}
        done = subprocess.run([str(shims / tool), *args], env=e, capture_output=True, check=True)
        return done.stdout.decode().split("\0")[:-1]
    return run


def _python_rewrite(tool: str, args: list[str], cm: str, cfg: str | None) -> list[str]:
    """What the step's Python wrapper (before it was sh) passed on: the same rules, kept here as a second opinion."""
    takes = set("BbcDEeFIiJLlmOoPpQRSWw")
    out, i = [], 0
    while i < len(args):
        a = args[i]
        if tool == "ssh" and len(a) == 2 and a[0] == "-" and a[1] in takes and a != "-o" and i + 1 < len(args):
            out += [a, args[i + 1]]
            i += 2
            continue
        if a == "-o" and i + 1 < len(args):
            o = args[i + 1]
            if o.startswith("StrictHostKeyChecking="):
                o = "StrictHostKeyChecking=yes"
            elif o.startswith("ControlPath="):
                o = "ControlPath=" + cm + "/%C"
            out += ["-o", o]
            i += 2
            continue
        if tool == "ssh" and not a.startswith("-"):
            rest = args[i + 1:]
            out += [a] + (["ulimit -c 0; " + " ".join(rest)] if rest else [])
            break
        out.append(a)
        i += 1
    return [tool] + (["-F", cfg] if cfg else []) + ["-o", "BatchMode=yes", "-o", f"ControlPath={cm}/%C"] + out


def test_the_harness_ssh_call_gets_the_cluster_config_checked_keys_our_sockets_and_no_core_dumps(wrap):
    got = wrap("ssh", "-o", "StrictHostKeyChecking=no", "-o", "ControlMaster=auto", "-o",
               "ControlPath=~/.ssh/%r@%h:%p", "-o", "ControlPersist=2m", "us-east-1-0", "cd /x && ./server --a 1")
    assert got == ["ssh", "-F", "/etc/rb ssh config", "-o", "BatchMode=yes", "-o", CM, "-o", "StrictHostKeyChecking=yes",
                   "-o", "ControlMaster=auto", "-o", "ControlPath=/tmp/rb-ssh.X/%C", "-o", "ControlPersist=2m",
                   "us-east-1-0", "ulimit -c 0; cd /x && ./server --a 1"]


def test_scp_is_rewritten_but_gets_no_remote_command(wrap):
    got = wrap("scp", "-o", "StrictHostKeyChecking=no", "-r", "a file;x", "client-0-0:/y z/")
    assert got == ["scp", "-F", "/etc/rb ssh config", "-o", "BatchMode=yes", "-o", CM, "-o", "StrictHostKeyChecking=yes",
                   "-r", "a file;x", "client-0-0:/y z/"]


def test_without_an_ssh_config_there_is_no_dash_f(wrap):
    assert wrap("ssh", "h", RB_SSH_CONFIG=None) == ["ssh", "-o", "BatchMode=yes", "-o", CM, "h"]
    assert wrap("ssh", "h", RB_SSH_CONFIG="") == ["ssh", "-o", "BatchMode=yes", "-o", CM, "h"]


def test_calls_that_name_no_control_path_are_carried_by_the_jobs_connections(wrap):
    """The harness's rsync runs ``ssh`` with no options of its own, and its scp names none: both get the job's
    socket directory, ahead of anything the caller says (ssh takes the first value of an option)."""
    assert wrap("ssh", "-l", "root", "client-0-0", "rsync", "--server", ".") == [
        "ssh", "-F", "/etc/rb ssh config", "-o", "BatchMode=yes", "-o", CM, "-l", "root", "client-0-0",
        "ulimit -c 0; rsync --server ."]
    assert wrap("scp", "-r", "-p", "root@h:/x/logs.tar", "/y")[:5] == ["scp", "-F", "/etc/rb ssh config", "-o",
                                                                      "BatchMode=yes"]
    assert wrap("scp", "-r", "-p", "root@h:/x/logs.tar", "/y")[5:7] == ["-o", CM]


CASES = [
    ("ssh", ["-p", "22", "-l", "me", "host", "echo", "it's", "a;b", '"q"', "$HOME", "", "`id`", "*"]),
    ("ssh", ["-i", "/k ey", "-tt", "-p22", "host"]),
    ("ssh", ["--", "host", "a  b", "\\n", "x\ny"]),
    ("ssh", ["-o", "StrictHostKeyChecking=accept-new", "-o", "ControlPath=none", "-o"]),
    ("ssh", ["-L", "1:h:2", "-N", "-f", "host"]),
    ("ssh", ["-p"]),
    ("ssh", ["", "cmd"]),
    ("ssh", ["-F", "-o", "host", "-o", "StrictHostKeyChecking=no"]),
    ("scp", ["-P", "22", "-p", "a", "host:b"]),
    ("scp", ["-o", "ControlPath=/z", "-3", "-i", "-l", "x y", "h:'q'"]),
    ("ssh", []),
]


@pytest.mark.parametrize("tool,args", CASES)
def test_every_argument_reaches_ssh_as_the_python_wrapper_passed_it(wrap, tool, args):
    """Spaces, quotes, ``;``, glob and shell characters, empty words and newlines are passed on unchanged (the
    remote command's words joined by one space, as ssh joins them)."""
    assert wrap(tool, *args) == _python_rewrite(tool, args, "/tmp/rb-ssh.X", "/etc/rb ssh config")


def test_no_control_socket_directory_is_an_error_not_a_socket_in_the_root(tmp_path, wrap):
    with pytest.raises(subprocess.CalledProcessError):
        wrap("ssh", "-o", "ControlPath=~/.ssh/x", "h", RB_SSH_CM=None)
