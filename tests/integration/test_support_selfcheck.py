"""The test-support layer works with real processes: sshd, ssh, paramiko and Chromium.

If these fail, every integration and browser test built on tests/support
would fail for the wrong reason; these say so plainly.
"""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import time
import zlib

import paramiko
import pytest

from tests.support.sshd import BlackholeServer, SshdError, SshTestbed, free_port
from tests.support.web import browser, page_report, serve_directory


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    testbed = SshTestbed(tmp_path_factory.mktemp("sshbed"))
    try:
        testbed.add_host("node1", "127.0.0.2")
        testbed.add_host("node2", "127.0.0.3")
        yield testbed
    finally:
        testbed.close()


def plain_ssh(bed: SshTestbed, alias: str, command: str) -> subprocess.CompletedProcess:
    """OpenSSH client through the testbed's ssh_config, never prompting."""
    ssh, *rest = bed.ssh_argv(alias)
    return subprocess.run(
        [ssh, "-o", "BatchMode=yes", *rest, command],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=20,
    )


def connect(bed: SshTestbed, alias: str) -> paramiko.SSHClient:
    """Paramiko client that trusts only the testbed's known_hosts and key."""
    server = bed.servers[alias]
    client = paramiko.SSHClient()
    client.load_host_keys(str(bed.known_hosts_path))
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(
        server.addr,
        port=server.port,
        username=bed.user,
        key_filename=str(bed.client_key_path),
        look_for_keys=False,
        allow_agent=False,
        timeout=5,
        banner_timeout=5,
        auth_timeout=5,
    )
    return client


def run(client: paramiko.SSHClient, command: str) -> tuple[int, str]:
    _, stdout, _ = client.exec_command(command, timeout=10)
    out = stdout.read().decode()
    return stdout.channel.recv_exit_status(), out


def server_end(ssh_connection: str) -> tuple[str, int]:
    """(address, port) of the server side of $SSH_CONNECTION."""
    _, _, addr, port = ssh_connection.split()
    return addr, int(port)


# --- sshd -----------------------------------------------------------------------


@pytest.mark.ssh
@pytest.mark.parametrize("alias, addr", [("node1", "127.0.0.2"), ("node2", "127.0.0.3")])
def test_plain_ssh_reaches_each_host_on_its_own_address(bed, alias, addr):
    result = plain_ssh(bed, alias, "echo hi; echo $SSH_CONNECTION")

    assert result.returncode == 0, result.stderr
    hi, connection = result.stdout.splitlines()
    assert hi == "hi"
    assert server_end(connection) == (addr, bed.servers[alias].port)


@pytest.mark.ssh
def test_each_host_has_its_own_port_host_key_and_known_hosts_line(bed):
    one, two = bed.servers["node1"], bed.servers["node2"]

    assert one.port != two.port or one.addr != two.addr
    assert one.host_key_pub != two.host_key_pub
    assert one.host_key_pub.startswith("ssh-ed25519 AAAA")
    known = bed.known_hosts_path.read_text().splitlines()
    assert known == [one.known_hosts_line(), two.known_hosts_line()]
    assert one.known_hosts_line() == f"[127.0.0.2]:{one.port} {one.host_key_pub}"


@pytest.mark.ssh
def test_paramiko_with_testbed_key_and_known_hosts_runs_a_command(bed):
    with connect(bed, "node2") as client:
        status, out = run(client, "id -un; echo $SSH_CONNECTION; exit 3")

    user, connection = out.splitlines()
    assert status == 3
    assert user == bed.user
    assert server_end(connection) == ("127.0.0.3", bed.servers["node2"].port)


@pytest.mark.ssh
def test_sftp_put_and_get_round_trip(bed, tmp_path):
    payload = os.urandom(200_000)
    local = tmp_path / "sent.bin"
    local.write_bytes(payload)
    remote = str(tmp_path / "on-remote.bin")  # the "remote" host shares this filesystem

    with connect(bed, "node1") as client, client.open_sftp() as sftp:
        sftp.put(str(local), remote)
        size = sftp.stat(remote).st_size
        sftp.get(remote, str(tmp_path / "back.bin"))

    assert size == len(payload)
    assert (tmp_path / "on-remote.bin").read_bytes() == payload
    assert (tmp_path / "back.bin").read_bytes() == payload


@pytest.mark.ssh
def test_restart_keeps_address_port_and_key_and_accepts_new_connections(bed):
    server = bed.servers["node1"]
    before = (server.pid, server.port, server.host_key_pub)

    server.restart()

    assert server.pid != before[0]
    assert (server.port, server.host_key_pub) == before[1:]
    with connect(bed, "node1") as client:
        assert run(client, "echo again") == (0, "again\n")
    assert plain_ssh(bed, "node1", "echo again").stdout == "again\n"


@pytest.mark.ssh
def test_kill_sessions_drops_established_session_and_keeps_listening(bed):
    server = bed.servers["node2"]
    client = connect(bed, "node2")
    try:
        assert run(client, "echo before") == (0, "before\n")
        transport = client.get_transport()

        killed = server.kill_sessions()

        assert killed, "no session process found to kill"
        deadline = time.monotonic() + 5
        while transport.is_active() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not transport.is_active()
        with pytest.raises((paramiko.SSHException, EOFError, OSError)):
            run(client, "echo after")
    finally:
        client.close()
    assert server.running
    assert plain_ssh(bed, "node2", "echo still-listening").stdout == "still-listening\n"


@pytest.mark.ssh
def test_unknown_host_key_is_refused(bed):
    bed.add_host("stranger", "127.0.0.4", trust=False)

    result = plain_ssh(bed, "stranger", "echo should-not-run")

    assert result.returncode == 255
    assert "Host key verification failed." in result.stderr
    assert "should-not-run" not in result.stdout
    with pytest.raises(paramiko.SSHException, match="not found in known_hosts"):
        connect(bed, "stranger")


@pytest.mark.ssh
def test_changed_host_key_is_refused_until_trusted_again(bed):
    server = bed.add_host("rekeyed", "127.0.0.5")
    assert plain_ssh(bed, "rekeyed", "true").returncode == 0
    old_key = server.host_key_pub

    new_key = server.regenerate_host_key()

    assert new_key != old_key
    refused = plain_ssh(bed, "rekeyed", "true")
    assert refused.returncode == 255
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in refused.stderr
    with pytest.raises(paramiko.BadHostKeyException):
        connect(bed, "rekeyed")
    bed.trust("rekeyed")
    assert plain_ssh(bed, "rekeyed", "echo ok").stdout == "ok\n"


@pytest.mark.ssh
def test_blackhole_makes_paramiko_time_out_waiting_for_banner():
    with BlackholeServer("127.0.0.6") as hole:
        client = paramiko.SSHClient()
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        started = time.monotonic()
        # With timeout == banner_timeout, paramiko's start_client may give up
        # waiting first, without raising, and connect() then fails in auth
        # with "No existing session" instead of the banner error.
        with pytest.raises(paramiko.SSHException, match="banner|No existing session"):
            client.connect(
                hole.addr, port=hole.port, username="nobody", password="x",
                look_for_keys=False, allow_agent=False, timeout=2, banner_timeout=2,
            )
        elapsed = time.monotonic() - started
        client.close()
        assert hole.accepted == 1  # TCP got through; only the SSH banner never came

    assert 1.5 < elapsed < 5


@pytest.mark.ssh
def test_close_leaves_no_sshd_running(tmp_path):
    testbed = SshTestbed(tmp_path / "bed")
    try:
        server = testbed.add_host("short-lived", "127.0.0.7")
        client = connect(testbed, "short-lived")
        assert run(client, "echo up") == (0, "up\n")
        listener, sessions = server.pid, server.session_pids()
        assert sessions
    finally:
        testbed.close()
    client.close()

    for pid in [listener, *sessions]:
        assert _live(pid) is False, f"sshd {pid} still running after close()"
    assert server.pid is None
    with pytest.raises(OSError):  # nothing listens on that port any more
        with socket.create_connection((server.addr, server.port), timeout=1):
            pass


@pytest.mark.ssh
def test_start_on_a_taken_port_fails_with_the_sshd_log(bed):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.8", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]

        with pytest.raises(SshdError, match=rf"127\.0\.0\.8:{taken}.*\n.*Address already in use"):
            bed.add_host("squatted", "127.0.0.8", port=taken)

    assert "squatted" not in bed.servers
    assert "squatted" not in bed.ssh_config_path.read_text()


def _live(pid: int) -> bool:
    """Running, as opposed to gone or a zombie waiting for init to reap it."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except FileNotFoundError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def test_free_port_is_bindable():
    port = free_port("127.0.0.2")
    with socket.socket() as sock:
        sock.bind(("127.0.0.2", port))
    assert 1024 < port < 65536


# --- browser --------------------------------------------------------------------


def tiny_png(width: int, height: int) -> bytes:
    """A valid RGB PNG of the given size, a red-to-blue gradient."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(
        b"\x00" + bytes(c for x in range(width) for c in (255 * x // width, 0, 255 - 255 * x // width))
        for _ in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


@pytest.mark.browser
def test_browser_renders_served_page_and_tells_broken_images(tmp_path):
    (tmp_path / "plot.png").write_bytes(tiny_png(64, 32))
    (tmp_path / "index.html").write_text(
        "<!doctype html><html><head><title>Self-check</title></head><body>"
        "<h1>Claim 1</h1><p>Latency is 42 ms.</p><p style='display:none'>hidden words</p>"
        "<img src='plot.png' alt='latency plot'><img src='missing.png' alt='gone'>"
        "</body></html>"
    )

    with serve_directory(tmp_path) as url, browser() as chromium:
        page = chromium.new_page()
        response = page.goto(url + "index.html")
        report = page_report(page)

    assert response.status == 200
    assert report["title"] == "Self-check"
    assert "Latency is 42 ms." in report["text"]
    assert "hidden words" not in report["text"]
    plot, gone = report["images"]
    assert (plot["alt"], plot["src"]) == ("latency plot", url + "plot.png")
    assert (plot["naturalWidth"], plot["naturalHeight"]) == (64, 32)
    assert gone["complete"] and gone["naturalWidth"] == 0
