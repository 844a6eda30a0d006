"""A hostile test host: a real sshd whose forced command plays back crafted answers.

The sshd's ``ForceCommand`` runs `FORCED` (this file's `_forced_main`) for every session. It looks
at what the client asked for (``SSH_ORIGINAL_COMMAND``), works out which step of reprobook that is,
and, if the test has put a script for that step in the scenario directory, answers with it; every
other command runs as usual (SFTP and rsync included), so the host is otherwise a normal one::

    with HostileHost(bed, "evil", "127.0.0.12", tmp / "evil-work") as evil:
        evil.play("listing", append=b"logs\\t5\\t1700000000.0\\t../../../.bashrc\\0")
        fetch(evil.host(), outputs, run_dir)

Steps (what the command contains): ``listing`` (the outputs' listing, ``RB:RSYNC``), ``sums`` (the
checksum comparison, ``sha256sum``), ``status`` (a job's status, ``---tail``), ``launch``
(``RB:STARTED``). For a step, the scenario can give:

``<step>.bytes``    the whole answer, instead of running the command
``<step>.append``   bytes written after the command's real answer
``<step>.flood``    after the real answer, this many MiB of ``x`` without a NUL, then a NUL
``<step>.hang``     never answer (sleep), as a host whose disk or NFS hangs
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

FORCED = Path(__file__).resolve()
SFTP_SERVER = next((p for p in ("/usr/lib/openssh/sftp-server", "/usr/libexec/openssh/sftp-server",
                                "/usr/libexec/sftp-server") if Path(p).is_file()), None)
# in this order: the launch script ends with the status script, so it holds both markers
STEPS = {"listing": "RB:RSYNC", "sums": "sha256sum", "launch": "RB:STARTED", "status": "---tail"}


def _step(command: str) -> str | None:
    for step, marker in STEPS.items():
        if marker in command:
            return step
    return None


def _forced_main(scenario: Path) -> int:
    command = os.environ.get("SSH_ORIGINAL_COMMAND", "")
    if command in ("internal-sftp", "sftp") or command.endswith("sftp-server"):
        os.execv(SFTP_SERVER, [SFTP_SERVER])
    step = _step(command)
    if command.startswith("rsync --server") or step is None or not any(
            (scenario / f"{step}.{kind}").exists() for kind in ("bytes", "append", "flood", "hang")):
        os.execv("/bin/bash", ["bash", "-c", command])
    hang = scenario / f"{step}.hang"
    if hang.exists():
        deadline = time.monotonic() + 300
        while hang.exists() and time.monotonic() < deadline:  # until the test makes the host honest again
            time.sleep(0.1)
        return 0
    out = sys.stdout.buffer
    if (scenario / f"{step}.bytes").exists():
        out.write((scenario / f"{step}.bytes").read_bytes())
        out.flush()
        return 0
    real = subprocess.run(["bash", "-c", command], stdout=subprocess.PIPE)
    out.write(real.stdout)
    if (scenario / f"{step}.append").exists():
        out.write((scenario / f"{step}.append").read_bytes())
    if (scenario / f"{step}.flood").exists():
        chunk = b"x" * (1 << 20)
        for _ in range(int((scenario / f"{step}.flood").read_text())):
            out.write(chunk)
        out.write(b"\0")
    out.flush()
    return real.returncode


class HostileHost:
    """One sshd in ``bed`` (an `SshTestbed`) whose sessions go through `FORCED`, and its scenario."""

    def __init__(self, bed, alias: str, addr: str, workdir: Path):
        self.alias = alias
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.scenario = bed.root / f"scenario-{alias}"
        self.scenario.mkdir(exist_ok=True)
        self.ssh_config = bed.ssh_config_path
        self.server = bed.add_host(alias, addr, extra_config=[
            f"ForceCommand {sys.executable} {FORCED} {self.scenario}"])

    def play(self, step: str, *, bytes_: bytes | None = None, append: bytes | None = None,
             flood_mib: int | None = None, hang: bool = False) -> None:
        """What the host answers at ``step`` from now on (see the module doc)."""
        assert step in STEPS, step
        if bytes_ is not None:
            (self.scenario / f"{step}.bytes").write_bytes(bytes_)
        if append is not None:
            (self.scenario / f"{step}.append").write_bytes(append)
        if flood_mib is not None:
            (self.scenario / f"{step}.flood").write_text(str(flood_mib))
        if hang:
            (self.scenario / f"{step}.hang").write_text("")

    def honest(self) -> None:
        """Back to answering truthfully."""
        shutil.rmtree(self.scenario)
        self.scenario.mkdir()

    def spec(self):
        from reprobook.core.config import HostSpec
        return HostSpec(name=self.alias, ssh=self.alias, workdir=str(self.workdir))

    def host(self):
        """A fresh, not yet connected `reprobook.remote.hosts.SshHost` for this host."""
        from reprobook.remote.hosts import SshHost
        return SshHost(self.spec(), ssh_config=self.ssh_config)


if __name__ == "__main__":
    sys.exit(_forced_main(Path(sys.argv[1])))
