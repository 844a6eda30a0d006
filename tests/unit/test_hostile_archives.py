"""Hostile inputs, second round: archives inside archives, and runs of many files.

An archive is unpacked once, when a run is imported (or fetched: ``tests/integration/test_hostile.py``), the
archives inside it with it, all within one budget of the run's limits (`reprobook.core.archives`); an
evaluation reads the unpacked files and never opens an archive. A refusal names the archive, the member and
the limit, and leaves nothing in the run store.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
import time
import zlib
from pathlib import Path

import pytest

import reprobook as rb
from reprobook import api
from reprobook.core import archives, artifacts
from reprobook.core.config import load_project
from reprobook.core.runs import RunStore
from reprobook.errors import ConfigError, OutputError

CLAIM = "pesto/sample-runs"


def _store_is_empty() -> None:
    runs = Path(os.environ["REPROBOOK_RUNS"])
    assert not list(runs.glob("*/*/*")), "a refused import left a run behind"
    assert not list((runs / ".staging").glob("*")), "a refused import left its work behind"


def _shipped(tar: tarfile.TarFile, claim) -> None:
    """The authors' shipped outputs of ``claim`` (from the artifact mirror), added to ``tar``."""
    proj = load_project()
    for name, ref in claim.reference.items():
        tar.add(artifacts.resolve(artifacts.parse_ref(ref, proj.paper(claim.paper)), proj.settings), arcname=name)


def _zeros_tar_gz(mib: int) -> bytes:
    """A tar.gz of one member of ``mib`` MiB of zeros (a real single gzip stream, about 1 KB per MiB)."""
    header = tarfile.TarInfo("zeros.bin")
    header.size = mib * 1024 ** 2
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts, zero = [z.compress(header.tobuf(format=tarfile.GNU_FORMAT))], bytes(1024 ** 2)
    parts += [z.compress(zero) for _ in range(mib)]
    return b"".join(parts + [z.compress(bytes(1024)), z.flush()])


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _many_files_tar_gz(n: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for i in range(n):
            _add(tar, f"client-{i}.log", b"%d\n" % i)
    return buf.getvalue()


@pytest.fixture
def count_unpacking(monkeypatch):
    """Every archive opened from here on (tarfile.open, archives.unpack), recorded."""
    calls = []
    real_unpack, real_open = archives.unpack, tarfile.open
    monkeypatch.setattr(archives, "unpack", lambda *a, **k: calls.append(("unpack", a)) or real_unpack(*a, **k))
    monkeypatch.setattr(tarfile, "open", lambda *a, **k: calls.append(("open", a)) or real_open(*a, **k))
    return calls


def test_a_nested_bomb_is_refused_at_import_naming_the_member_and_the_limit(mirror, tmp_path):
    """The authors' outputs and 20 inner archives of 95 MiB of zeros each, in an archive of a few kilobytes:
    1.9 GiB once unpacked, refused at the first or second inner archive, within seconds, storing nothing."""
    claim = rb.claim(CLAIM)
    bomb, inner = tmp_path / "runs.tar.gz", _zeros_tar_gz(95)
    with tarfile.open(bomb, "w:gz") as tar:
        _shipped(tar, claim)
        for i in range(20):
            _add(tar, f"logs/inner-{i:02d}.tar.gz", inner)
    assert bomb.stat().st_size < 1000 ** 2
    cpu, t0 = time.process_time(), time.monotonic()
    with pytest.raises(archives.ArchiveOverLimit) as info:
        rb.import_run(claim, [bomb], machine="a cluster")
    took, wall = time.process_time() - cpu, time.monotonic() - t0
    msg = str(info.value)
    assert str(bomb) in msg and re.search(r"member 'logs/inner-0[01]\.tar\.gz/zeros\.bin'", msg), msg
    assert "REPROBOOK_MAX_EXPANSION" in msg and "limits.expansion" in msg and "100 times" in msg
    assert took < 10 and wall < 30, (took, wall)
    _store_is_empty()
    print(f"nested bomb refused in {took:.1f} s of CPU ({wall:.1f} s wall)")


def test_an_archive_deeper_than_the_limit_is_refused(tmp_path):
    data = b"x\n"
    for level in range(archives.DEPTH + 1):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            _add(tar, "x.txt" if level == 0 else f"level-{level}.tar.gz", data)
        data = buf.getvalue()
    outer = tmp_path / "deep.tar.gz"
    outer.write_bytes(data)
    with pytest.raises(archives.ArchiveRefused, match=f"over the limit of {archives.DEPTH}"):
        archives.unpack(outer, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_ten_thousand_files_in_an_inner_archive_import_within_the_stated_limit_and_evaluate_unpacking_nothing(
        mirror, tmp_path, monkeypatch, count_unpacking):
    """10,000 client logs in an inner archive (a 77 KB-class archive): imported once, in a few seconds of CPU
    (the default limit is 20,000 files a run), and an evaluation opens no archive; with a limit of 5,000 files
    the same archive is refused naming the member and the limit, storing nothing."""
    claim = rb.claim(CLAIM)
    archive = tmp_path / "runs.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        _shipped(tar, claim)
        _add(tar, "logs/clients.tar.gz", _many_files_tar_gz(10_000))
    assert archive.stat().st_size < 1000 ** 2
    assert load_project().settings.limits.run_files == 20_000
    monkeypatch.setenv("REPROBOOK_MAX_RUN_FILES", "5000")
    cpu = time.process_time()
    with pytest.raises(archives.ArchiveOverLimit) as info:
        rb.import_run(claim, [archive], machine="a cluster")
    assert time.process_time() - cpu < 10
    msg = str(info.value)
    assert "logs/clients.tar.gz/client-" in msg and "5,000 files a run may hold" in msg
    assert "REPROBOOK_MAX_RUN_FILES" in msg and "limits.run_files" in msg
    _store_is_empty()
    monkeypatch.delenv("REPROBOOK_MAX_RUN_FILES")
    cpu, t0 = time.process_time(), time.monotonic()
    run = rb.import_run(claim, [archive], machine="a cluster")
    took = time.process_time() - cpu
    assert took < 10, took
    files = run.manifest["files"]
    assert len(files) > 10_000 and not any(archives.is_archive(f["path"]) for f in files)
    assert any(f["path"].endswith("logs/clients.tar.gz/client-9999.log") for f in files)
    count_unpacking.clear()
    verdicts = [api.evaluate(claim, run.id).verdict for _ in range(2)]
    assert count_unpacking == [], "an evaluation opened an archive"
    assert str(verdicts[0].verdict) != "not run" and verdicts[0].verdict == verdicts[1].verdict
    print(f"10,000-file import: {took:.1f} s of CPU ({time.monotonic() - t0:.1f} s wall)")


def test_the_authors_outputs_as_inner_archives_import_and_evaluating_twice_unpacks_nothing(
        mirror, tmp_path, count_unpacking):
    """An evaluator's bundle of the authors' shipped outputs, each experiment its own .tgz inside one archive."""
    claim = rb.claim(CLAIM)
    archive = tmp_path / "bundle.tar.gz"
    with tarfile.open(archive, "w:gz") as outer:
        proj = load_project()
        for name, ref in claim.reference.items():
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w:gz") as inner:
                inner.add(artifacts.resolve(artifacts.parse_ref(ref, proj.paper(claim.paper)), proj.settings),
                          arcname=name)
            _add(outer, f"{name}.tgz", buf.getvalue())
    run = rb.import_run(claim, [archive], machine="a cluster")
    assert not any(archives.is_archive(f["path"]) for f in run.manifest["files"])
    count_unpacking.clear()
    evaluations = [api.evaluate(claim, run.id) for _ in range(2)]
    assert count_unpacking == [], "an evaluation opened an archive"
    assert str(evaluations[0].verdict.verdict) != "not run", evaluations[0].verdict.reason
    reference = api.evaluate(claim, "reference").measured
    for ev in evaluations:   # the same numbers as the shipped tree itself
        assert sorted(ev.measured["tput_tx_per_s"]) == sorted(reference["tput_tx_per_s"]) and len(reference)


def test_an_archive_left_packed_in_a_run_is_refused_by_the_loader_never_opened(mirror, tmp_path, count_unpacking):
    """A run stored before archives were unpacked at import: evaluating it opens nothing and says what to do."""
    claim = rb.claim(CLAIM)
    store = RunStore(Path(os.environ["REPROBOOK_RUNS"]))
    run = store.create(claim, "old-import", source="import", status="succeeded", imported={"machine": "m"})
    packed = run.path / "outputs" / "runs" / "inner.tar.gz"
    packed.parent.mkdir(parents=True)
    packed.write_bytes(_zeros_tar_gz(1))
    from reprobook.core.runs import sha256_file
    run.update(files=[{"output": "runs", "path": "outputs/runs/inner.tar.gz", "size": packed.stat().st_size,
                       "sha256": sha256_file(packed)}])
    with pytest.raises(OutputError, match="never unpacked") as info:
        rb.load(claim, rb.obtain(claim, run.id))
    assert "outputs/runs/inner.tar.gz" in str(info.value) and "reprobook import" in str(info.value)
    assert count_unpacking == []


def test_a_link_inside_an_archive_is_not_made_and_its_files_are_kept(tmp_path):
    archive = tmp_path / "a.tar"
    with tarfile.open(archive, "w") as tar:
        _add(tar, "d/real.txt", b"1\n")
        link = tarfile.TarInfo("d/alias.txt")
        link.type, link.linkname = tarfile.SYMTYPE, "real.txt"
        tar.addfile(link)
        up = tarfile.TarInfo("d/up")
        up.type, up.linkname = tarfile.SYMTYPE, "../../etc"
        tar.addfile(up)
    with pytest.raises(archives.ArchiveRefused, match="'d/up' is a symbolic link to '../../etc', outside"):
        archives.unpack(archive, tmp_path / "out")
    archive2 = tmp_path / "b.tar"
    with tarfile.open(archive2, "w") as tar:
        _add(tar, "d/real.txt", b"1\n")
        link = tarfile.TarInfo("d/alias.txt")
        link.type, link.linkname = tarfile.SYMTYPE, "real.txt"
        tar.addfile(link)
    got = archives.unpack(archive2, tmp_path / "out2")
    assert [u.path.relative_to(tmp_path / "out2").as_posix() for u in got] == ["d/real.txt"]
    assert not (tmp_path / "out2" / "d" / "alias.txt").exists()


@pytest.mark.parametrize("raw, key, value", [({"run_files": 12}, "run_files", 12),
                                             ({"run_bytes": "2 GiB"}, "run_bytes", 2 * 1024 ** 3),
                                             ({"file_bytes": "500 MB"}, "file_bytes", 500 * 1000 ** 2),
                                             ({"expansion": 10}, "expansion", 10.0)])
def test_limits_come_from_the_settings_file_and_the_environment_wins(monkeypatch, raw, key, value):
    assert getattr(archives.Limits.from_settings(raw), key) == value
    monkeypatch.setenv(f"REPROBOOK_MAX_{key.upper()}" if key != "expansion" else "REPROBOOK_MAX_EXPANSION", "7")
    assert getattr(archives.Limits.from_settings(raw), key) == 7


@pytest.mark.parametrize("raw", [{"run_files": "many"}, {"run_bytes": -1}, {"expansion": "10 GiB"},
                                 {"file_bytes": True}, {"run_files": 0}])
def test_a_limit_that_is_not_a_positive_amount_is_refused_naming_it(raw):
    (key, given), = raw.items()
    with pytest.raises(ConfigError, match=f"limits.{key}=") as info:
        archives.Limits.from_settings(raw, file="configs/reprobook.yaml")
    assert "configs/reprobook.yaml" in str(info.value)
