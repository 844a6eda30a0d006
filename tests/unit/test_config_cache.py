"""The configuration's quick start: libyaml reads what the pure loader reads, and the cache of papers read before
serves only what the files still say; a cache that cannot be read is passed over."""

from __future__ import annotations

import io
import os
import pickle
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from reprobook.core import cache, config, schema
from reprobook.core.config import load_paper, load_project
from reprobook.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
PAPERS = sorted((ROOT / "configs" / "papers").glob("*.yaml"))


@pytest.fixture
def project(tmp_path) -> Path:
    """A project of the real configuration files (papers, patches, hosts, settings), with no cache yet."""
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    return tmp_path


def _entries(root: Path) -> list[Path]:
    return sorted((root / config.CACHE_DIR).glob("*"))


def test_libyaml_is_used_here():
    # PyYAML's wheels carry libyaml; without it the pure loader reads alone (the next test still holds)
    assert schema.FAST_LOADER is yaml.CSafeLoader


@pytest.mark.parametrize("path", PAPERS + [ROOT / "configs" / "hosts.yaml", ROOT / "configs" / "reprobook.yaml"],
                         ids=lambda p: p.name)
def test_libyaml_and_the_pure_loader_read_the_same_data(path):
    text = path.read_text()
    assert yaml.load(text, Loader=yaml.CSafeLoader) == yaml.load(text, Loader=yaml.SafeLoader)


def test_both_loaders_give_the_same_project(project, monkeypatch):
    fast = load_project(project)
    shutil.rmtree(project / config.CACHE_DIR)
    monkeypatch.setattr(schema, "FAST_LOADER", None)
    pure = load_project(project)
    assert list(fast.papers) == ["aardvark", "ozz", "pesto", "verus"]
    for name in fast.papers:
        assert fast.papers[name] == pure.papers[name], name
    assert fast.hosts == pure.hosts and fast.settings == pure.settings


@pytest.mark.parametrize("text", [
    "paper: {id: x\nclaims: []\n",            # a flow mapping left open
    "paper:\n  id: x\n   title: y\n",         # a key indented under a scalar
    "paper:\n\t- id: x\n",                     # a tab for indentation
    "a: 'unterminated\n",
    "- a\nb: c\n",
    "a: b: c\n",
    "x: \x07\n",                               # a control character
    "key: [1, 2\n",
])
def test_a_mistake_is_told_in_the_pure_loaders_words(tmp_path, monkeypatch, text):
    path = tmp_path / "aardvark.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as fast:
        load_paper(path, cache=tmp_path / "cache")
    monkeypatch.setattr(schema, "FAST_LOADER", None)
    with pytest.raises(ConfigError) as pure:
        load_paper(path)
    assert str(fast.value) == str(pure.value)
    assert "not valid YAML" in str(fast.value)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_a_second_load_is_served_from_the_cache(project, monkeypatch):
    first = load_project(project)
    kinds = sorted(p.suffix for p in _entries(project))
    assert kinds.count(".paper") == 4 and kinds.count(".data") == 6   # four papers; hosts and settings: data

    def must_not_read(*args, **kwargs):
        raise AssertionError("read again although nothing changed")
    monkeypatch.setattr(config, "_read_paper", must_not_read)
    monkeypatch.setattr(schema, "parse_yaml", must_not_read)
    again = load_project(project)
    assert again.papers == first.papers and again.hosts == first.hosts


def test_an_edited_paper_file_is_read_again(project):
    path = project / "configs" / "papers" / "aardvark.yaml"
    before = load_project(project).claim("aardvark/archive-throughput")
    stat = path.stat()
    text = path.read_text()
    assert before.title in text
    title = before.title[:-4] + "ABCD"                         # the same length, the same mtime below
    path.write_text(text.replace(before.title, title))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size
    assert load_project(project).claim("aardvark/archive-throughput").title == title

    # a mistake made now is reported, never hidden by what the cache held
    path.write_text(path.read_text().replace("loader: aardvark.archives", "loader: aardvark.archivez"))
    with pytest.raises(ConfigError, match=r"aardvark\.yaml: claims\[2\]\.loader: no loader 'aardvark.archivez'"):
        load_project(project)
    path.write_text(text)
    assert load_project(project).claim("aardvark/archive-throughput").title == before.title


def test_an_edited_patch_is_read_again(project):
    claim = next(c for c in load_project(project).all_claims() if any(hasattr(p, "text") for p in c.patches))
    patch = next(p for p in claim.patches if hasattr(p, "text"))
    path = project / "configs" / patch.file
    path.write_text(patch.text + "# edited\n")
    again = load_project(project).claim(claim.key)
    assert next(p for p in again.patches if p.file == patch.file).text.endswith("# edited\n")


def test_an_edited_schema_or_module_is_a_miss(project, tmp_path):
    paper = project / "configs" / "papers" / "ozz.yaml"
    code = tmp_path / "plugin"
    code.mkdir()
    (code / "a.py").write_text("X = 1\n")
    text = paper.read_text()
    key = cache.object_key(text, paper)
    where = tmp_path / "c"
    cache.put_object(where, paper, key, {"any": "value"}, hashed=[], stated=cache.code_files([code]))
    assert cache.get_object(where, paper, key) == {"any": "value"}
    (code / "b.py").write_text("Y = 2\n")                        # a new module
    assert cache.get_object(where, paper, key) is None
    cache.put_object(where, paper, key, {"any": "value"}, hashed=[], stated=cache.code_files([code]))
    (code / "a.py").write_text("X = 22\n")                       # an edited one
    assert cache.get_object(where, paper, key) is None
    assert cache.data_key(text, "paper", "{}") != cache.data_key(text, "paper", '{"type": "object"}')


DAMAGE = [
    lambda b: b[: len(b) // 2],                                # cut short
    lambda b: b[:-1] + bytes([b[-1] ^ 1]),                     # one bit flipped
    lambda b: b"",                                             # empty
    lambda b: os.urandom(len(b)),                              # noise
    lambda b: b.replace(b"reprobook-config-cache", b"reprobook-config-cachX", 1),   # another format
]


def test_a_damaged_cache_is_passed_over(project):
    first = load_project(project)
    entries = _entries(project)
    assert len(entries) == 10
    for i, entry in enumerate(entries):                        # each kind of damage to a paper's and a data entry
        entry.write_bytes(DAMAGE[i // 2 % len(DAMAGE)](entry.read_bytes()))
    again = load_project(project)
    assert again.papers == first.papers and again.hosts == first.hosts and again.settings == first.settings
    assert all(cache._read(e) is not None for e in _entries(project))   # written anew, whole


def test_a_cache_that_cannot_be_written_changes_nothing(project):
    (project / "_build").mkdir()
    (project / config.CACHE_DIR).write_text("not a folder")
    assert load_project(project).paper("verus").claims


def test_an_entry_never_makes_anything_but_records(tmp_path):
    # a planted entry whose pickle would call os.system is a miss, and runs nothing
    source = tmp_path / "x.yaml"
    source.write_text("a: 1\n")
    key = cache.object_key(source.read_text(), source)

    class Evil:
        def __reduce__(self):
            return os.system, (f"touch {tmp_path / 'pwned'}",)
    out = io.BytesIO()
    pickle.dump((key, [], Evil()), out)
    cache._write(cache._entry(tmp_path / "c", source, "paper"), out.getvalue())
    assert cache.get_object(tmp_path / "c", source, key) is None
    assert not (tmp_path / "pwned").exists()


def test_writers_at_once_leave_a_whole_entry(tmp_path):
    source = tmp_path / "p.yaml"
    key = b"k" * 32
    values = [{"writer": i, "rows": list(range(2000))} for i in range(8)]
    threads = [threading.Thread(target=lambda v=v: [cache.put_data(tmp_path / "c", source, key, v) for _ in range(20)])
               for v in values]
    for t in threads:
        t.start()
    seen = []
    while any(t.is_alive() for t in threads):
        got = cache.get_data(tmp_path / "c", source, key)
        if got is not None:
            seen.append(got)
    for t in threads:
        t.join()
    assert all(v in values for v in seen)
    assert cache.get_data(tmp_path / "c", source, key) in values
    assert [p.name for p in (tmp_path / "c").iterdir()] == [cache._entry(tmp_path / "c", source, "data").name]


def test_listing_claims_imports_no_table_library(project):
    """``reprobook claims`` (and ``plan``, ``run --dry-run``) read no outputs: pandas, numpy and jsonschema wait for
    the commands that need them."""
    load_project(project)
    code = ("import sys, io, contextlib; from reprobook.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): assert main(['claims']) == 0\n"
            "print(sorted(m for m in ('pandas', 'numpy', 'jsonschema', 'matplotlib', 'paramiko') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True,
                         env={**os.environ, "REPROBOOK_ROOT": str(project)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
