"""Commands are read by bash whatever shell the host's sshd hands them to.

sshd gives every command to the user's login shell. When that is bash, reprobook lets it run the
command (as plain ``ssh host command`` does, without a second bash per command); when it is another
shell, the command is handed over to ``bash --norc --noprofile``. A script (`run_script`) is sent as such a
bash command already, and needs neither the question nor the hand-over. Here the other shell is dash: a
real sshd whose ``ForceCommand`` passes each command to ``/bin/sh`` (dash on Debian), as a host
whose login shell is ``/bin/sh`` would.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from reprobook.core.config import HostSpec
from reprobook.remote.hosts import SshHost

pytestmark = pytest.mark.ssh

BASH_ONLY = 'a=(x y z); [[ ${#a[@]} == 3 ]] && echo "bash read ${#a[@]} items"; cat <(echo from a process substitution)'
HOW_STARTED = "tr '\\0' ' ' < /proc/$$/cmdline"


@pytest.mark.parametrize("login", ["bash", "sh"])
def test_bash_syntax_runs_whatever_the_login_shell(bed, login):
    if login == "sh":
        if os.path.basename(os.path.realpath("/bin/sh")) != "dash":
            pytest.skip("/bin/sh is not dash on this machine")
        bed.add_host("plain", "127.0.0.70", extra_config=['ForceCommand /bin/sh -c "$SSH_ORIGINAL_COMMAND"'])
    else:
        bed.add_host("plain", "127.0.0.70")
    # which shell reads what a client sends, asked with plain ssh
    seen = subprocess.run(bed.ssh_argv("plain") + ['echo "${BASH_VERSION:-not bash}"'],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert (seen != "not bash") == (login == "bash"), seen
    host = SshHost(HostSpec("plain", "plain", "/tmp"), ssh_config=bed.ssh_config_path)
    try:
        for _ in range(2):  # the first command on a connection asks which shell it is; the next ones know
            r = host.run(BASH_ONLY, check=False)
            assert (r.exited, r.stdout.splitlines()) == (0, ["bash read 3 items", "from a process substitution"]), r.stderr
            started = host.run(HOW_STARTED, check=False).stdout
            assert started.startswith("bash "), started
            assert ("--norc --noprofile" in started) == (login == "sh"), started
        host.close()  # a new connection asks again, and the answer is not part of the command's output
        streamed = []
        host.run_script('echo "$1"', "only this", on_stdout=streamed.append)
        assert b"".join(streamed) == b"only this\n"
        assert ("--norc" in host.run(HOW_STARTED).stdout) == (login == "sh")
    finally:
        host.close()
    # a script (`run_script`: a probe, a launch, a status poll) is one simple command, `bash --norc ... -c '...'`,
    # that either shell runs as sent: the shell is not asked, the host's environment is exported inside it
    host = SshHost(HostSpec("plain", "plain", "/tmp", env={"RB_X": "a b'c"}), ssh_config=bed.ssh_config_path)
    try:
        r = host.run_script(BASH_ONLY + '; echo "$RB_X|$1"; ' + HOW_STARTED, "it's")
        lines = r.stdout.splitlines()
        assert lines[:3] == ["bash read 3 items", "from a process substitution", "a b'c|it's"], r.stderr
        assert lines[3].startswith("bash --norc --noprofile -c "), lines
        assert host._login_bash is None   # no question was asked on this connection
    finally:
        host.close()
