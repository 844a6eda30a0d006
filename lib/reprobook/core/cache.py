"""Configuration files already read, kept under the project so that the next command starts at once.

Reading the papers is most of a command's start: the YAML parse, the schema check, then the checks against the
registries (check kinds, loaders and their columns, requirements), which import every paper's code. Two kinds of
entry are kept here, one of each per file, each under the SHA-256 of everything it was made from:

* **data** (`get_data`, `put_data`): a file's parsed data as it passed its JSON schema, under the hash of the file's
  text and of the schema's text. `reprobook.core.schema.load_yaml` asks here first.
* **objects** (`get_object`, `put_object`): a whole `reprobook.core.config.Paper`, as `load_paper` built it, under
  the hash of the paper file's text and path, with the files it depends on: the recorded patches it read (their
  content hashes), the source files of reprobook and of every paper plug-in with their folders (size and mtime, so
  a new module or an edited one counts), and the folders where Python finds installed plug-ins.

An entry misses when anything it was made from differs, and is then made again: an edited paper file, patch,
schema or module is read again, never served from here. An entry that cannot be read (truncated, corrupt, from
another version) is a miss, never an error; one that cannot be written is not kept. Writers write a temporary
file and rename it, so a reader sees a whole entry or none, however many processes write at once. Entries are read
with `marshal` (data) and a `pickle` that makes only reprobook's own records and a few plain types (`_Unpickler`).
"""

from __future__ import annotations

import copyreg
import hashlib
import io
import marshal
import os
import pickle
import sys
import tempfile
from pathlib import Path
from types import MappingProxyType

FORMAT = b"reprobook-config-cache 2\n"
"""The first bytes of an entry; a change of what is kept changes it, and every older entry misses."""
_DIGEST = 32


def _hash(*parts: str | bytes) -> bytes:
    h = hashlib.sha256(FORMAT + sys.version.encode())
    for part in parts:
        b = part if isinstance(part, bytes) else part.encode("utf-8", "surrogatepass")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.digest()


def _entry(cache_dir: Path, source: Path, kind: str) -> Path:
    """The one entry of ``kind`` for ``source`` (its name, and a hash of its absolute path: two files of one name
    stay apart)."""
    where = hashlib.sha256(os.fsencode(Path(source).absolute())).hexdigest()[:16]
    return Path(cache_dir) / f"{Path(source).stem}-{where}.{kind}"


def _read(path: Path) -> bytes | None:
    """An entry's payload, or None when it is missing, of another format or damaged."""
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    head = len(FORMAT)
    if blob[:head] != FORMAT or len(blob) < head + _DIGEST:
        return None
    digest, payload = blob[head:head + _DIGEST], blob[head + _DIGEST:]
    return payload if hashlib.sha256(payload).digest() == digest else None


def _write(path: Path, payload: bytes) -> None:
    """Write an entry whole (a temporary file renamed over it); nothing when the folder cannot be written."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(FORMAT + hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


# --------------------------------------------------------------------------- data


def data_key(text: str, schema: str, schema_text: str) -> bytes:
    """What a file's data is kept under: the hash of its text and of its schema's name and text."""
    return _hash(b"data", schema, schema_text, text)


def get_data(cache_dir: Path, source: Path, key: bytes):
    """The data kept for ``source`` under ``key``, or None."""
    payload = _read(_entry(cache_dir, source, "data"))
    if payload is None:
        return None
    try:
        stored, data = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    return data if stored == key else None


def put_data(cache_dir: Path, source: Path, key: bytes, data) -> None:
    """Keep ``data`` (YAML's plain values) for ``source``; nothing for a value marshal cannot write (a YAML date)."""
    try:
        payload = marshal.dumps((key, data))
    except ValueError:
        return
    _write(_entry(cache_dir, source, "data"), payload)


# --------------------------------------------------------------------------- objects


def object_key(text: str, source: Path) -> bytes:
    """What a paper's objects are kept under: the hash of the file's text and of its path as given."""
    return _hash(b"object", str(source), text)


def code_files(packages: list[Path]) -> list[Path]:
    """The folders of ``packages`` and the ``.py`` and ``.json`` files in them (caches left out; a package of one
    module: its file), then the folders pip installs packages into (an install or a removal changes them, and an
    installed plug-in is found there)."""
    out: list[Path] = []
    for top in packages:
        if not os.path.isdir(top):
            out.append(Path(top))
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            out.append(Path(folder))
            out += [Path(folder, f) for f in sorted(files) if f.endswith((".py", ".json"))]
    out += [Path(p) for p in sys.path if Path(p).name in ("site-packages", "dist-packages") and os.path.isdir(p)]
    return out


def _stamp(path: Path, how: str) -> bytes | None:
    """What a dependency looked like: its content hash (``hash``) or its size and mtime (``stat``); None if absent."""
    try:
        if how == "hash":
            return hashlib.sha256(Path(path).read_bytes()).digest()
        st = os.stat(path)
        return f"{st.st_size}:{st.st_mtime_ns}".encode()
    except OSError:
        return None


def get_object(cache_dir: Path, source: Path, key: bytes):
    """The object kept for ``source`` under ``key`` when every file it depends on is as it was, else None."""
    payload = _read(_entry(cache_dir, source, "paper"))
    if payload is None:
        return None
    try:
        stored, deps, value = _Unpickler(io.BytesIO(payload)).load()
        if stored != key or any(_stamp(Path(p), how) != stamp for p, how, stamp in deps):
            return None
    except Exception:  # noqa: BLE001 - whatever a damaged or foreign entry raises, it is a miss
        return None
    return value


def put_object(cache_dir: Path, source: Path, key: bytes, value, *, hashed: list[Path], stated: list[Path]) -> None:
    """Keep ``value`` for ``source`` with the files it was made from: ``hashed`` by content, ``stated`` by size and
    mtime. A dependency missing now is not kept (the entry would never hit)."""
    deps = [(str(p), how, _stamp(p, how)) for how, paths in (("hash", hashed), ("stat", stated)) for p in paths]
    if any(stamp is None for _, _, stamp in deps):
        return
    out = io.BytesIO()
    try:
        _Pickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump((key, deps, value))
    except (pickle.PicklingError, TypeError, AttributeError):
        return
    _write(_entry(cache_dir, source, "paper"), out.getvalue())


def _proxy(mapping: dict) -> MappingProxyType:
    return MappingProxyType(mapping)


class _Pickler(pickle.Pickler):
    dispatch_table = copyreg.dispatch_table.copy()
    dispatch_table[MappingProxyType] = lambda m: (_proxy, (dict(m),))


_PLAIN = {("builtins", n) for n in ("set", "frozenset", "complex", "slice", "bytearray", "range")} | {
    ("pathlib", n) for n in ("Path", "PosixPath", "WindowsPath", "PurePath", "PurePosixPath", "PureWindowsPath")} | {
    ("re", "_compile"), ("copyreg", "_reconstructor"), ("builtins", "object"), ("collections", "OrderedDict"),
    ("datetime", "date"), ("datetime", "datetime"), ("datetime", "time"), ("datetime", "timedelta"),
    ("datetime", "timezone")}


def _class_method(cls: type, name: str):
    """``getattr(cls, name)`` as a record's ``__reduce__`` names it (`Requirements._checked`): a class method of one
    of the configuration's classes, nothing else."""
    found = getattr(cls, name, None) if _records(cls) and not name.startswith("__") else None
    if found is None or getattr(found, "__self__", None) is not cls:
        raise pickle.UnpicklingError(f"{cls!r}.{name} is not kept in a configuration cache")
    return found


def _records(cls) -> bool:
    return isinstance(cls, type) and cls.__module__.startswith("reprobook.core.")


class _Unpickler(pickle.Unpickler):
    """Makes the configuration's records (classes of `reprobook.core`) and the plain types above, nothing else: an
    entry is data, never code."""

    def find_class(self, module: str, name: str):
        if (module, name) in _PLAIN or (module, name) == (__name__, "_proxy"):
            return super().find_class(module, name)
        if (module, name) == ("builtins", "getattr"):
            return _class_method
        if module.startswith("reprobook.core."):
            found = super().find_class(module, name)
            if _records(found):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not kept in a configuration cache")
