"""A host that lies: a real sshd whose forced command plays back crafted listings, checksums and logs.

Each test makes the host send something reprobook must not trust (a path that climbs out of the run
directory, an absolute path, an output never asked for, sizes and checksums that do not match what
arrives, links, malformed or endless records, a log of gigabytes, silence) and checks both halves of
the contract: nothing is written outside the run directory (the file system around it is listed
before and after), what the host sent properly is saved and recorded, and the error names the host
and the record. The host is `tests.support.hostile.HostileHost`: a normal host except where a test
scripts its answer.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import time
import tracemalloc
from pathlib import Path
from types import SimpleNamespace

import pytest

from reprobook.remote import hosts, jobs
from reprobook.core.config import OutputSpec, load_project
from reprobook.errors import ExperimentError, OutputsRefused, StepTimeout
from reprobook.remote.live import collect
from reprobook.core.runs import RunStore
from reprobook.remote.transfer import TEXT_MAX_BYTES, fetch, survey
from tests.support.hostile import HostileHost
from tests.support.sshd import SshTestbed

pytestmark = pytest.mark.ssh
MTIME = b"1700000000.0000000000"


@pytest.fixture(scope="module")
def evil_host(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    with SshTestbed(base / "ssh") as bed:
        yield HostileHost(bed, "evil", "127.0.0.12", base / "remote")


@pytest.fixture
def evil(evil_host, tmp_path):
    """The hostile host, honest until told otherwise, with outputs of its own under a fresh directory."""
    evil_host.honest()
    yield evil_host
    evil_host.honest()


@pytest.fixture
def around(tmp_path):
    """A place for the run directory with things around it that must stay untouched."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "bashrc").write_text("# the user's own file\n")
    run = tmp_path / "store" / "paper" / "claim" / "run-1"
    run.mkdir(parents=True)
    return SimpleNamespace(root=tmp_path, run=run, victim=victim)


def _snapshot(root: Path, *skip: Path) -> dict[str, tuple]:
    """Every entry under ``root`` (not following links) with its type, size, time and link target."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        dirnames[:] = [n for n in dirnames if d / n not in skip]
        for name in dirnames + filenames:
            p = d / name
            if p in skip:
                continue
            st = os.lstat(p)
            out[str(p.relative_to(root))] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns,
                                             os.readlink(p) if stat.S_ISLNK(st.st_mode) else None)
    return out


class _Watch:
    """The file system around the run directory (the test's whole tree, the host's included, and the
    home directory's top level), before and after."""

    def __init__(self, around, evil):
        self.around, self.evil = around, evil
        self.home = Path.home()
        self.before = self._now()

    def _now(self):
        return (_snapshot(self.around.root, self.around.run), _snapshot(self.evil.workdir),
                sorted(p.name for p in self.home.iterdir() if p.name.startswith(".reprobook-hostile")))

    def assert_nothing_outside(self):
        assert self._now() == self.before
        links = [p for p in self.around.run.rglob("*") if p.is_symlink()]
        assert links == [], links


def _legit(evil, name: str, files: dict[str, bytes]) -> tuple[Path, dict[str, OutputSpec]]:
    d = evil.workdir / name
    d.mkdir()
    for rel, data in files.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_bytes(data)
    return d, {"logs": OutputSpec("logs", name)}


def _rec(name: bytes, size: int, rel: bytes) -> bytes:
    return name + b"\t" + str(size).encode() + b"\t" + MTIME + b"\t" + rel + b"\0"


def _data(name: bytes, data: bytes, rel: bytes) -> bytes:
    return b"RB:DATA\t" + name + b"\t" + base64.b64encode(data) + b"\t" + rel + b"\0"


def _refused(err, *needles: str) -> None:
    msg = str(err.value)
    assert err.value.host == "evil" and "host 'evil'" in msg
    shown = [rec for rec, _ in err.value.records]
    for needle in needles:
        assert any(needle in rec for rec in shown), (needle, shown)
        assert needle in msg


def _saved(around, fetched, expected: dict[str, bytes]) -> None:
    """Exactly ``expected`` (path under outputs/logs -> bytes) was saved and recorded."""
    got = {Path(f.path).relative_to("outputs/logs").as_posix(): f.sha256 for f in fetched}
    assert got == {rel: hashlib.sha256(data).hexdigest() for rel, data in expected.items()}
    on_disk = {p.relative_to(around.run / "outputs" / "logs").as_posix(): p.read_bytes()
               for p in (around.run / "outputs" / "logs").rglob("*") if p.is_file()}
    assert on_disk == expected
    state = json.loads((around.run / "outputs" / ".fetch-state.json").read_text())
    assert sorted(state) == sorted(f"outputs/logs/{rel}" for rel in expected)


# --------------------------------------------------------------------------- paths

def test_paths_that_climb_out_are_refused_and_nothing_is_written_outside(evil, around):
    legit = {"a.txt": b"proper\n", "sub/b.txt": b"also proper\n"}
    _, outputs = _legit(evil, "climb", legit)
    up = b"../" * 6
    to_victim = os.path.relpath(around.victim / "bashrc", around.run / "outputs" / "logs").encode()
    to_home = (b"../" * 40) + str(Path.home() / ".reprobook-hostile-canary").lstrip("/").encode()
    crafted = b"".join([
        _rec(b"logs", 6, to_victim), _data(b"logs", b"pwned\n", to_victim),
        _rec(b"logs", 6, to_home), _data(b"logs", b"pwned\n", to_home),
        _rec(b"logs", 7, b"sub/../../../escape.txt"), _rec(b"logs", 7, up + b"x"),
        _rec(b"logs", 7, b"./a.txt"), _rec(b"logs", 7, b"sub//b.txt"), _rec(b"logs", 7, b".."),
    ])
    evil.play("listing", append=crafted)
    watch = _Watch(around, evil)
    with pytest.raises(OutputsRefused) as err:
        fetch(evil.host(), outputs, around.run)
    watch.assert_nothing_outside()
    _refused(err, to_victim.decode(), "sub/../../../escape.txt", "./a.txt", "sub//b.txt")
    assert err.value.records[0][1].startswith("a path with an empty, '.', '..'")
    assert len(err.value.records) == 9
    _saved(around, err.value.fetched, legit)
    assert (around.victim / "bashrc").read_text() == "# the user's own file\n"


def test_absolute_paths_are_refused(evil, around):
    legit = {"a.txt": b"proper\n"}
    _, outputs = _legit(evil, "absolute", legit)
    target = str(around.victim / "planted.txt").encode()
    evil.play("listing", append=_rec(b"logs", 6, target) + _data(b"logs", b"owned\n", target)
              + _rec(b"logs", 6, b"/etc/passwd"))
    watch = _Watch(around, evil)
    with pytest.raises(OutputsRefused) as err:
        fetch(evil.host(), outputs, around.run)
    watch.assert_nothing_outside()
    _refused(err, target.decode(), "/etc/passwd")
    assert all(why == "an absolute path" for _, why in err.value.records)
    assert not (around.victim / "planted.txt").exists()
    _saved(around, err.value.fetched, legit)


def test_a_local_link_in_the_run_directory_is_not_written_through(evil, around):
    """A link someone left in the run directory must not lead a proper-looking path outside."""
    _, outputs = _legit(evil, "through", {"a.txt": b"proper\n", "sub/x.txt": b"through the link\n"})
    (around.run / "outputs" / "logs").mkdir(parents=True)
    (around.run / "outputs" / "logs" / "sub").symlink_to(around.victim)
    before = _snapshot(around.victim)
    with pytest.raises(OutputsRefused) as err:
        fetch(evil.host(), outputs, around.run)
    assert _snapshot(around.victim) == before
    _refused(err, "logs/sub/x.txt")
    assert "leads outside the run's directory" in str(err.value)
    assert [f.path for f in err.value.fetched] == ["outputs/logs/a.txt"]


def test_outputs_never_asked_for_are_refused_not_a_crash(evil, around):
    legit = {"a.txt": b"proper\n"}
    _, outputs = _legit(evil, "unknown", legit)
    evil.play("listing", append=_rec(b"stolen", 5, b"x.txt") + _data(b"stolen", b"data\n", b"x.txt")
              + _rec(b"..", 5, b"y.txt") + _rec(b"logs/../..", 5, b"z.txt"))
    watch = _Watch(around, evil)
    with pytest.raises(OutputsRefused) as err:
        fetch(evil.host(), outputs, around.run)
    watch.assert_nothing_outside()
    _refused(err, "stolen\\t5", "'..\\t5", "logs/../..\\t5")
    assert {why for _, why in err.value.records} == {"an output reprobook never asked for",
                                                     "bytes for an output reprobook never asked for"}
    _saved(around, err.value.fetched, legit)
    assert sorted(p.name for p in (around.run / "outputs").iterdir() if not p.name.startswith(".")) == ["logs"]


# --------------------------------------------------------------------------- sizes and checksums

@pytest.mark.parametrize("method", ["sftp", "rsync"])
def test_sizes_that_do_not_match_what_arrives_are_refused(evil, around, method):
    big, small = os.urandom(100_000), os.urandom(50_000)
    d, outputs = _legit(evil, f"sizes-{method}", {"good.bin": b"g" * 70_000, "big.bin": big, "small.bin": small})
    # the listing the host sends: the good file as it is, the others with sizes they do not have
    evil.play("listing", bytes_=b"RB:RSYNC\tyes\0" + _rec(b"logs", 70_000, b"good.bin")
              + _rec(b"logs", 10, b"big.bin") + _rec(b"logs", 80_000, b"small.bin"))
    watch = _Watch(around, evil)
    with pytest.raises(OutputsRefused) as err:
        fetch(evil.host(), outputs, around.run, method=method)
    watch.assert_nothing_outside()
    _refused(err, "logs/big.bin", "logs/small.bin")
    assert "10 bytes listed but 100000 arrived" in str(err.value)
    assert "80000 bytes listed but 50000 arrived" in str(err.value)
    _saved(around, err.value.fetched, {"good.bin": b"g" * 70_000})
    assert list((around.run / "outputs" / "logs").glob("*.part")) == []


def test_inline_bytes_that_do_not_match_the_listed_size_are_not_taken(evil, around):
    """Inline bytes of the wrong length are not written; the file then comes the usual way and is checked."""
    d, outputs = _legit(evil, "inline-size", {"a.txt": b"the real bytes\n"})
    evil.play("listing", bytes_=b"RB:RSYNC\tno\0" + _rec(b"logs", 15, b"a.txt") + _data(b"logs", b"forged", b"a.txt"))
    fetched = fetch(evil.host(), outputs, around.run)
    assert (around.run / "outputs" / "logs" / "a.txt").read_bytes() == b"the real bytes\n"
    assert fetched[0].sha256 == hashlib.sha256(b"the real bytes\n").hexdigest()


def test_inline_bytes_for_a_file_not_listed_are_refused(evil, around):
    legit = {"a.txt": b"proper\n"}
    _, outputs = _legit(evil, "ghost", legit)
    evil.play("listing", append=_data(b"logs", b"boo\n", b"ghost.txt"))
    with pytest.raises(OutputsRefused) as err:
        fetch(evil.host(), outputs, around.run)
    _refused(err, "logs/ghost.txt")
    assert "inline bytes for a file the listing does not name" in str(err.value)
    assert not (around.run / "outputs" / "logs" / "ghost.txt").exists()
    _saved(around, err.value.fetched, legit)


def _tar(members: list[tuple[str, bytes | str]]) -> bytes:
    """A tar of regular files (bytes) and symbolic links (str: the target), as a host's RB:TAR would carry."""
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, what in members:
            info = tarfile.TarInfo(name)
            if isinstance(what, str):
                info.type, info.linkname = tarfile.SYMTYPE, what
                tf.addfile(info)
            else:
                info.size = len(what)
                tf.addfile(info, io.BytesIO(what))
    return buf.getvalue()


def test_an_inline_archive_gives_only_the_listed_regular_files_in_the_run(evil, around):
    """The small files of an output may come in one tar (RB:TAR). Only its regular members the listing names are
    taken, as bytes, never extracted: a link, a path that leaves the output, a file never listed, a member too big
    for inline and an archive that is not a tar are refused by name; the listed files all arrive (the refused ones
    the usual way, checked)."""
    legit = {"a.txt": b"proper\n", "b.txt": b"also proper\n"}
    _, outputs = _legit(evil, "tarred", legit)
    tar = _tar([("a.txt", b"proper\n"), ("link", "/etc/passwd"), ("../escape.txt", b"out\n"),
                ("ghost.txt", b"boo\n"), ("b.txt", b"x" * (16 << 10))])
    evil.play("listing", append=b"RB:TAR\tlogs\t" + base64.b64encode(tar) + b"\0"
                                + b"RB:TAR\tlogs\t" + base64.b64encode(b"not a tar at all" * 64) + b"\0")
    watch = _Watch(around, evil)
    with pytest.raises(OutputsRefused) as err:
        fetch(evil.host(), outputs, around.run)
    watch.assert_nothing_outside()
    _refused(err, "logs/link", "logs/../escape.txt", "logs/ghost.txt", "logs/b.txt", "RB:TAR\\tlogs")
    whys = {why for _, why in err.value.records}
    assert {"not a regular file in the inline archive", "an inline archive that is not a tar",
            "inline bytes for a file the listing does not name"} <= whys, whys
    assert any("more inline bytes than asked for" in w for w in whys), whys
    _saved(around, err.value.fetched, legit)
    assert not (around.root / "escape.txt").exists() and not (around.run / "outputs" / "logs" / "link").exists()


def test_checksums_the_host_lies_about_are_not_believed(evil, around):
    """A lost fetch state makes reprobook ask the host for checksums of files already here. An answer for
    a path never asked about, a malformed one or a wrong digest keeps nothing on the host's word: the
    file is sent again, and the sha256 recorded is always that of the bytes on the local disk."""
    real = {f"f{i}.bin": os.urandom(40_000) for i in range(3)}
    d, outputs = _legit(evil, "sums", real)
    fetch(evil.host(), outputs, around.run)
    (around.run / "outputs" / ".fetch-state.json").unlink()
    local = around.run / "outputs" / "logs"
    stale = {name: os.urandom(40_000) for name in real}  # same sizes, other bytes: not the host's files
    for name, data in stale.items():
        (local / name).write_bytes(data)
    lies = [f"{hashlib.sha256(stale['f0.bin']).hexdigest()}  /elsewhere/f0.bin",       # a path not asked about
            f"{hashlib.sha256(stale['f1.bin']).hexdigest()[:40]}  {d}/f1.bin",       # malformed
            f"{'0' * 64}  {d}/f2.bin", "\x1b]0;pwned\x07 garbage"]                      # wrong, and noise
    evil.play("sums", bytes_=("\n".join(lies) + "\n").encode())
    again = fetch(evil.host(), outputs, around.run)
    assert all(f.transferred for f in again)
    for f in again:
        data = (around.run / f.path).read_bytes()
        assert data == real[Path(f.path).name] and f.sha256 == hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- links and odd files

@pytest.mark.parametrize("method", ["sftp", "rsync"])
def test_links_on_the_host_are_skipped_named_and_never_made_here(evil, around, method):
    legit = {"a.txt": b"proper\n"}
    d, _ = _legit(evil, f"links-{method}", legit)
    (d / "passwd.txt").symlink_to("/etc/passwd")
    (d / "root").symlink_to("/")
    (d / "loop.txt").symlink_to(d / "loop.txt")
    os.mkfifo(d / "pipe.txt")
    outputs = {"logs": OutputSpec("logs", d.name, "*")}
    # and a listing that names a link as a regular file, for rsync to be handed
    evil.play("listing", append=_rec(b"logs", 11, b"root") if method == "rsync" else b"")
    watch = _Watch(around, evil)
    with pytest.raises(OutputsRefused) as err:
        fetch(evil.host(), outputs, around.run, method=method)
    watch.assert_nothing_outside()
    _refused(err, "logs/passwd.txt", "logs/root", "logs/loop.txt", "logs/pipe.txt")
    reasons = dict(err.value.records)
    assert reasons["'logs/passwd.txt'"].startswith("a symbolic link: skipped")
    assert reasons["'logs/pipe.txt'"].startswith("a FIFO: skipped")
    if method == "rsync":
        assert "not a regular file on the host" in str(err.value)
    _saved(around, err.value.fetched, legit)


def test_malformed_records_are_each_refused_and_the_rest_is_saved(evil, around):
    legit = {"a.txt": b"proper\n"}
    _, outputs = _legit(evil, "malformed", legit)
    bad = [b"logs\t5\tx.txt", b"logs\tfive\t" + MTIME + b"\tx.txt", b"logs\t-5\t" + MTIME + b"\tx.txt",
           b"logs\t5\tyesterday\tx.txt", b"RB:WHATEVER\tx", b"RB:TEXT\t5\taGVsbG8=\t/etc/shadow",
           b"RB:DATA\tlogs", b"logs\t5\t" + MTIME + b"\t\xff\xfe.txt", b"\x1b]0;pwned\x07",
           b"logs\t5\t" + MTIME + b"\tnul-in-the\0../../../name"]  # a NUL ends a record: two records
    evil.play("listing", append=b"\0".join(bad) + b"\0" + b"logs\t5\t" + MTIME + b"\tcut-off")
    watch = _Watch(around, evil)
    with pytest.raises(OutputsRefused) as err:
        fetch(evil.host(), outputs, around.run)
    watch.assert_nothing_outside()
    reasons = [why for _, why in err.value.records]
    assert reasons == ["a malformed record (not output, size, time, path)", "a size that is not a number of bytes",
                       "a size that is not a number of bytes", "a modification time that is not a number",
                       "a record of an unknown kind", "the text of a file reprobook never asked for",
                       "a malformed inline record", "a path that is not UTF-8", "a malformed record (not output, "
                       "size, time, path)", "a malformed record (not output, size, time, path)",
                       "a record cut off (no NUL at its end)", "listed, but the host has no such file (any more)"]
    assert "\x1b" not in str(err.value) and "\\x1b]0;pwned\\x07" in str(err.value)  # shown, not obeyed
    _saved(around, err.value.fetched, legit)


def test_an_endless_record_is_refused_in_bounded_memory(evil, around):
    legit = {"a.txt": b"proper\n"}
    _, outputs = _legit(evil, "endless", legit)
    evil.play("listing", flood_mib=48)
    host = evil.host()
    host.run("true")  # connect first: paramiko's own setup is not what is measured
    tracemalloc.start()
    try:
        with pytest.raises(OutputsRefused) as err:
            fetch(host, outputs, around.run)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "a record of more than 4 MiB; skipped" in str(err.value)
    assert peak < 16 << 20, f"{peak / 2**20:.1f} MiB for a 48 MiB record"
    _saved(around, err.value.fetched, legit)


# --------------------------------------------------------------------------- the whole path: collect

def test_collect_records_the_proper_files_and_fails_the_run(evil, around, root, tmp_path):
    claim = load_project(root).claim("aardvark/validator-throughput")
    store = RunStore(tmp_path / "runs")
    run = store.create(claim, "hostile-collect", source="live", host="evil", status="running")
    host = evil.host()
    job, _ = jobs.launch(host, "hostile-collect", f"mkdir -p {evil.workdir}/out-collect && "
                                                  f"echo ok > {evil.workdir}/out-collect/out1.txt")
    st = job.wait(progress=False, poll_s=0.1)
    evil.play("listing", append=_rec(b"logs", 7, b"../../../../../x.txt"))
    spec = SimpleNamespace(outputs={"logs": OutputSpec("logs", "out-collect", "out*.txt")})
    with pytest.raises(OutputsRefused):
        collect(spec, run, job, st)
    again = store.load("hostile-collect")
    assert again.status == "failed" and again.manifest["partial"] is True
    assert [f["path"] for f in again.manifest["files"]] == ["outputs/logs/out1.txt"]
    assert again.manifest["refused"][0]["record"].endswith("../../../../../x.txt'")
    assert "host 'evil'" in again.manifest["fetch_error"]
    again.verify()


# --------------------------------------------------------------------------- bounded: silence, huge logs

def test_a_host_that_never_answers_the_listing_times_out_naming_the_step(evil, around, monkeypatch):
    _, outputs = _legit(evil, "silent", {"a.txt": b"x\n"})
    evil.play("listing", hang=True)
    monkeypatch.setattr(hosts, "ANSWER_TIMEOUT_S", 1.5)
    t0 = time.monotonic()
    with pytest.raises(StepTimeout) as err:
        fetch(evil.host(), outputs, around.run)
    assert time.monotonic() - t0 < 10
    msg = str(err.value)
    assert msg.startswith("host 'evil':") and "no answer for 1.5 s while listing the outputs" in msg


def test_a_host_that_never_answers_a_status_poll_times_out_naming_the_step(evil, monkeypatch):
    host = evil.host()
    job, _ = jobs.launch(host, "hostile-silent", "true")
    evil.play("status", hang=True)
    monkeypatch.setattr(hosts, "ANSWER_TIMEOUT_S", 1.0)
    t0 = time.monotonic()
    with pytest.raises(StepTimeout) as err:
        job.status()
    assert time.monotonic() - t0 < 8
    assert "no answer for 1 s while reading the status of run hostile-silent" in str(err.value)


def _ended_job(evil, run_id: str):
    host = evil.host()
    job, _ = jobs.launch(host, run_id, "echo '### reprobook step 1/1: the one step'; echo done")
    assert job.wait(progress=False, poll_s=0.1).state == "succeeded"
    return host, job, evil.workdir / ".reprobook" / "runs" / run_id / "log"


def test_a_log_of_gigabytes_only_its_end_is_read(evil, root, tmp_path):
    host, job, log = _ended_job(evil, "hostile-big-log")
    with open(log, "r+b") as f:  # 3 GiB, sparse: the host's disk does not fill, reading it would take long
        f.truncate(3 << 30)
        f.seek(0, 2)
        f.write(b"\n### reprobook step 1/1: the last step\nthe very last line\n")
    size = log.stat().st_size
    t0 = time.monotonic()
    st = job.status()
    assert time.monotonic() - t0 < 3
    assert st.step == "1/1: the last step" and st.last_line == "the very last line"
    assert len(st.log_tail) <= 8192
    tracemalloc.start()
    try:
        listing = survey(host, {}, read=[str(log)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert listing.text_sizes[str(log)] == size
    text = listing.texts[str(log)]
    assert len(text.encode()) == TEXT_MAX_BYTES and text.endswith("the very last line\n")
    assert peak < 12 << 20, f"{peak / 2**20:.1f} MiB to read the end of a 3 GiB log"

    claim = load_project(root).claim("aardvark/validator-throughput")
    run = RunStore(tmp_path / "runs").create(claim, "hostile-big-log", source="live", host="evil", status="running")
    with pytest.raises(ExperimentError):
        collect(SimpleNamespace(outputs={}), run, job, job.status())  # no outputs at all: the run fails...
    kept = (run.path / "log.txt").read_text()  # ...but its log's end came home, saying what was left out
    assert kept.startswith(f"[reprobook: the log has {size} bytes; only its last {TEXT_MAX_BYTES} were fetched")
    assert kept.endswith("the very last line\n") and len(kept) < TEXT_MAX_BYTES + 500


def test_a_100_mb_line_and_binary_garbage_in_the_log(evil):
    host, job, log = _ended_job(evil, "hostile-garbage")
    with open(log, "ab") as f:
        f.write(b"\x1b]0;owned\x07\x1b[2J\x00\xff\xfe binary \x9b31m" + os.urandom(4096) + b"\n")
        f.write(b"A" * (100 << 20) + b"\n")
        f.write(b"\x1b[31mred\x1b[0m last line\r\n")
    st = job.status()
    assert len(st.log_tail) <= 8192 + 64
    assert not any(ch in st.log_tail for ch in "\x1b\x07\x00\x9b")  # nothing that a terminal would obey
    assert st.last_line == "␛[31mred␛[0m last line"   # shown, not obeyed (reprobook.formats.terminal)
    listing = survey(host, {}, read=[str(log)])
    assert listing.text_sizes[str(log)] == log.stat().st_size
    text = listing.texts[str(log)]
    assert text.endswith("A\n\x1b[31mred\x1b[0m last line\r\n")  # the log's end, as it is (log.txt keeps it)
    assert set(text[:-40]) == {"A"} and len(text) == TEXT_MAX_BYTES  # of the 100 MB line, only its last MiB


# --------------------------------------------------------------------------- limits: what a run may hold

def _collected(evil, tmp_path, root, name: str, files: dict[str, bytes | int]):
    """A job on the honest host that leaves ``files`` (bytes, or an int: a sparse file of that size) in
    ``out-<name>``, collected into a fresh run (the limits: the environment's): (the run, the exception collect
    raised or None)."""
    claim = load_project(root).claim("aardvark/validator-throughput")
    run = RunStore(tmp_path / "runs").create(claim, name, source="live", host="evil", status="running")
    out = evil.workdir / f"out-{name}"
    out.mkdir()
    for rel, data in files.items():
        if isinstance(data, int):
            with open(out / rel, "wb") as f:
                f.truncate(data)     # sparse: a few kilobytes on the host's disk
        else:
            (out / rel).write_bytes(data)
    job, _ = jobs.launch(evil.host(), name, f"sleep 0.1; touch -- {out}/*")   # outputs of this job: newer than it
    st = job.wait(progress=False, poll_s=0.1)
    spec = SimpleNamespace(outputs={"logs": OutputSpec("logs", f"out-{name}", "*")})
    try:
        collect(spec, run, job, st)
    except Exception as exc:   # noqa: BLE001 - the test looks at it
        return RunStore(tmp_path / "runs").load(name), exc
    return RunStore(tmp_path / "runs").load(name), None


def test_a_sparse_file_over_the_limit_is_refused_before_a_byte_moves(evil, root, tmp_path, monkeypatch):
    """A 1 GiB sparse output (12 KB on the host's disk) against a limit of 64 MB a run: the fetch is refused
    naming the file and the limit, the run is failed with that reason, and nothing of it is on this disk."""
    from reprobook.errors import LimitExceeded
    monkeypatch.setenv("REPROBOOK_MAX_RUN_BYTES", "64 MB")
    t0 = time.monotonic()
    run, exc = _collected(evil, tmp_path, root, "sparse", {"small.txt": b"1\n", "huge.bin": 1 << 30})
    assert time.monotonic() - t0 < 20
    assert isinstance(exc, LimitExceeded), exc
    msg = str(exc)
    assert "huge.bin" in msg and "1.00 GiB" in msg and "64.0 MB" in msg and "REPROBOOK_MAX_RUN_BYTES" in msg, msg
    assert "limits.run_bytes" in msg and "evil:" in msg
    assert run.status == "failed" and run.manifest["files"] == [] and "huge.bin" in run.manifest["fetch_error"]
    here = [p for p in (run.path / "outputs").rglob("*") if p.is_file() and p.name != ".fetch.lock"]
    assert here == [], here   # no file, no .part, no fetch state of a file
    monkeypatch.setenv("REPROBOOK_MAX_RUN_FILES", "1")
    monkeypatch.delenv("REPROBOOK_MAX_RUN_BYTES")
    run, exc = _collected(evil, tmp_path, root, "two-files", {"a.txt": b"1\n", "b.txt": b"2\n"})
    assert isinstance(exc, LimitExceeded) and "over the limit of 1 files a run may hold" in str(exc)
    assert "is file number 2 of the run" in str(exc) and ("'logs/a.txt'" in str(exc) or "'logs/b.txt'" in str(exc))
    assert RunStore(tmp_path / "runs").load("two-files").manifest["files"] == []


def test_an_archive_among_the_fetched_outputs_is_unpacked_once_and_a_bomb_in_it_refused(evil, root, tmp_path):
    """A host's archive is unpacked at the fetch, beside it, its files recorded; the loader then reads them and
    never the archive. An archive of zeros past the expansion limit leaves the run failed, naming the member,
    with the fetched files recorded and nothing of the archive unpacked."""
    import io
    import tarfile
    import zlib
    from reprobook.core.runs import Run

    def tgz(members: dict[str, bytes]) -> bytes:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return buf.getvalue()

    run, exc = _collected(evil, tmp_path, root, "packed", {"runs.tar.gz": tgz({"a/one.txt": b"1\n", "two.txt": b"2\n"}),
                                                           "plain.txt": b"3\n"})
    assert exc is None, exc
    paths = sorted(f["path"] for f in run.manifest["files"])
    assert paths == ["outputs/logs/plain.txt", "outputs/logs/runs.tar.gz", "outputs/logs/runs.tar.gz.unpacked/a/one.txt",
                     "outputs/logs/runs.tar.gz.unpacked/two.txt"]
    assert sorted(p.name for p in Run(run.path, run.manifest).files()) == ["one.txt", "plain.txt", "two.txt"]
    run.verify()

    header = tarfile.TarInfo("zeros.bin")
    header.size = 200 * 1024 ** 2
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = b"".join([z.compress(header.tobuf(format=tarfile.GNU_FORMAT)),
                     *(z.compress(bytes(1024 ** 2)) for _ in range(200)), z.compress(bytes(1024)), z.flush()])
    run, exc = _collected(evil, tmp_path, root, "bomb", {"runs.tar.gz": bomb})
    assert exc is not None and "'zeros.bin'" in str(exc) and "REPROBOOK_MAX_EXPANSION" in str(exc), exc
    assert run.status == "failed" and "zeros.bin" in run.manifest["fetch_error"]
    assert [f["path"] for f in run.manifest["files"]] == ["outputs/logs/runs.tar.gz"]
    assert not (run.path / "outputs" / "logs" / "runs.tar.gz.unpacked").exists()
