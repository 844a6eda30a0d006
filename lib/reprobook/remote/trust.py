"""Accepting a host key deliberately: show the fingerprint, ask, record it."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

from reprobook.errors import HostUnreachable
from reprobook.remote.hosts import SshHost, _fingerprint


def trust_host(project, name: str, *, assume_yes: bool = False) -> int:
    """Record the SSH host key of host ``name`` in its known_hosts file after confirmation."""
    import paramiko

    spec = project.hosts.host(name)
    conn = SshHost(spec, project.settings.ssh_config)._make_connection()
    if conn.gateway:
        print("this host is reached through a jump host: connect once with `ssh` to record its key", file=sys.stderr)
        return 2
    try:
        sock = socket.create_connection((conn.host, conn.port), timeout=conn.connect_timeout)
        t = paramiko.Transport(sock)
        t.start_client(timeout=conn.connect_timeout)
        key = t.get_remote_server_key()
        t.close()
    except (OSError, paramiko.SSHException) as exc:
        raise HostUnreachable(f"cannot read the host key of {conn.host}:{conn.port}: {exc}", host=name) from None
    files = (conn.ssh_config.get("userknownhostsfile") or "~/.ssh/known_hosts").split()
    known = Path(os.path.expanduser(files[0]))
    entry = conn.host if conn.port == 22 else f"[{conn.host}]:{conn.port}"
    print(f"host {name} ({entry}) presents {key.get_name()} {_fingerprint(key)}")
    if not assume_yes:
        if not sys.stdin.isatty():
            print("not recording it: no terminal to confirm on (pass --yes once you have checked the fingerprint)",
                  file=sys.stderr)
            return 2
        if input("Does this match the fingerprint the host's owner gave you? [y/N] ").strip().lower() not in ("y", "yes"):
            print("not recorded")
            return 1
    known.parent.mkdir(parents=True, exist_ok=True)
    with open(known, "a") as f:
        f.write(f"{entry} {key.get_name()} {key.get_base64()}\n")
    print(f"recorded in {known}")
    return 0
