"""The listing of a run's outputs on a host: one round trip, streamed, and trusted in nothing.

`survey` runs one script on the host that lists every output file (output,
size, modification time, path), names links and other odd files, reads the end
of a few texts (a run's log) and sends the bytes of small files inline. Its
NUL-separated records are parsed as they stream in (`reprobook.remote.hosts.Host.run`
with ``on_stdout``), so a million files cost about their paths' bytes in
memory (`RemoteFiles`), never the whole answer at once.

Every record is checked before it is kept: the output must be one that was
asked for; the size and time numbers; the path relative, valid UTF-8 and free
of empty, ``.``, ``..`` and ``.rsync-partial`` components; inline bytes no
more than was asked for; a record no longer than `MAX_RECORD_BYTES`. What
fails is not kept but listed in `Listing.refused` (shown safely by
`show_record`), for `reprobook.remote.transfer.fetch` to report with the host's name.
"""

from __future__ import annotations

import base64
import re
import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Iterator, Mapping

from reprobook.core.config import OutputSpec
from reprobook.errors import StepTimeout, TestbedError
from reprobook.remote.hosts import Host

INLINE_MAX_BYTES = 16 << 10  # files below this size (64 at most per output) travel inside the listing
INLINE_MAX_FILES = 64
TEXT_MAX_BYTES = 1 << 20     # of a text read whole (a run's log), only this much of its end comes back
MAX_RECORD_BYTES = 4 << 20   # a longer listing record is refused unread (a host printing one endless line)
MAX_PATH_BYTES = 4096
SHOWN_REFUSALS = 20


@dataclass(frozen=True)
class RemoteFile:
    output: str
    root: str
    relpath: str
    size: int
    mtime: str


_LIST = r"""
marker=$1; inline_max=$2; text_max=$3; nreads=$4; shift 4
b64() { base64 -w0 2>/dev/null || base64 | tr -d '\n'; }  # GNU, else BusyBox and BSD
# files read back in this same round trip (a run's log, its checkouts): their size and the end of them
while [ "$nreads" -gt 0 ]; do
  if [ -r "$1" ]; then printf 'RB:TEXT\t%s\t' "$(wc -c < "$1" | tr -d ' ')"; tail -c "$text_max" "$1" | b64
  else printf 'RB:TEXT\t-\t'; fi
  printf '\t%s\0' "$1"; shift; nreads=$((nreads - 1))
done
printf 'RB:RSYNC\t%s\0' "$(command -v rsync >/dev/null 2>&1 && echo yes || echo no)"
# the small files of an output travel in one tar (one process for them all) where GNU tar reads names verbatim
tar_ok=no
if [ "$inline_max" -gt 0 ] && tar --null --verbatim-files-from --no-recursion -T /dev/null -cf /dev/null 2>/dev/null; then
  tar_ok=yes
fi
while [ "$#" -ge 3 ]; do
  name=$1; root=$2; pattern=$3; shift 3
  ( cd "$root" 2>/dev/null || exit 0
    if [ -n "$marker" ] && [ -e "$marker" ]; then set -- -newer "$marker"; else set --; fi
    # one walk: regular files with size and time; links and other odd files named, so that the fetch
    # can say it skipped them
    find . -name "$pattern" "$@" \( -type f -printf "$name\t%s\t%T@\t%P\0" \
      -o ! -type d -printf "RB:SKIP\t$name\t%y\t%P\0" \)
    # small files come along inline: no second round trip for a run's few result files
    if [ "$inline_max" -gt 0 ]; then
      small=()
      mapfile -d '' -t small < <(find . -type f -name "$pattern" "$@" -size -"$inline_max"c -printf '%P\0' 2>/dev/null | head -z -n 64)
      if [ "${#small[@]}" -gt 0 ] && [ "$tar_ok" = yes ]; then
        printf 'RB:TAR\t%s\t' "$name"
        printf '%s\0' "${small[@]}" | tar --null --verbatim-files-from --no-recursion -b 1 -T - -cf - 2>/dev/null | b64
        printf '\0'
      else
        for f in "${small[@]}"; do printf 'RB:DATA\t%s\t' "$name"; b64 < "$f"; printf '\t%s\0' "$f"; done
      fi
    fi )
done
true
"""


class RemoteFiles(Sequence):
    """The files of a listing, kept compact: each costs its path and mtime in one shared buffer and
    a few machine words, not a Python object (a million files take some 60 MB, not several hundred)."""

    def __init__(self, outputs: Sequence[tuple[str, str]]):
        self._outputs = list(outputs)  # (name, root) by index
        self._blob = bytearray()
        self._ends = array("q")
        self._sizes = array("q")
        self._which = array("H")

    def _add(self, which: int, size: int, mtime_tab_rel: bytes) -> None:
        self._blob += mtime_tab_rel
        self._ends.append(len(self._blob))
        self._sizes.append(size)
        self._which.append(which)

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        start = self._ends[i - 1] if i else 0
        mtime, rel = bytes(self._blob[start:self._ends[i]]).split(b"\t", 1)
        name, root = self._outputs[self._which[i]]
        return RemoteFile(name, root, rel.decode(), self._sizes[i], mtime.decode())

    def __iter__(self) -> Iterator[RemoteFile]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other) -> bool:
        return list(self) == list(other)


@dataclass
class Listing:
    """What one round trip to the host found: output files, texts read, small files' bytes, and what
    was refused (record as received, reason; ``refused_count`` counts those not kept)."""

    files: Sequence[RemoteFile]
    texts: dict[str, str | None]
    inline: dict[tuple[str, str], bytes]
    rsync: bool | None
    text_sizes: dict[str, int] = field(default_factory=dict)
    refused: list[tuple[str, str]] = field(default_factory=list)
    refused_count: int = 0

    def refuse(self, record, why: str) -> None:
        self.refused_count += 1
        if len(self.refused) < 10 * SHOWN_REFUSALS:
            self.refused.append((show_record(record), why))


def show_record(record) -> str:
    """A record as received, safe to print: quoted, control characters escaped, a long one shortened."""
    if isinstance(record, (bytes, bytearray)):
        record = bytes(record[:200]).decode(errors="backslashreplace")
    text = repr(record)
    return text if len(text) <= 160 else text[:150] + "...'"


_MTIME = re.compile(rb"[0-9]{1,12}(?:\.[0-9]{1,10})?")
_BAD_REL = re.compile(rb"(?:^|/)(?:\.{1,2}|\.rsync-partial)?(?:/|$)|\x00")
_B64 = re.compile(rb"[A-Za-z0-9+/]*={0,2}")


def _check_rel(rel: bytes) -> str | None:
    """Why a relative path from the host cannot be a file of ours, or ``None`` if it can."""
    if rel.startswith(b"/"):
        return "an absolute path"
    if len(rel) > MAX_PATH_BYTES:
        return f"a path longer than {MAX_PATH_BYTES} bytes"
    if _BAD_REL.search(rel):
        return "a path with an empty, '.', '..' or '.rsync-partial' component: it could leave the output's directory"
    if not rel.isascii():
        try:
            rel.decode()
        except UnicodeDecodeError:
            return "a path that is not UTF-8"
    return None


def _safe_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\0" not in name


class _Parser:
    """Takes the listing as it streams in: NUL-separated records, each checked before it is kept."""

    def __init__(self, listing: Listing, outputs: list[tuple[str, str]], read: Sequence[str], inline_max: int):
        self.listing = listing
        self.index = {name.encode(): i for i, (name, _) in enumerate(outputs) if _safe_name(name)}
        self.read = set(read)
        self.inline_max = inline_max
        self.inline_count: dict[str, int] = {}
        self.buf = bytearray()
        self.skipping = False

    def feed(self, data: bytes) -> None:
        *complete, rest = data.split(b"\0")
        for piece in complete:
            if self.skipping:  # the end of a record already refused as too long
                self.skipping = False
                continue
            if self.buf:
                self.buf += piece
                piece = bytes(self.buf)
                self.buf.clear()
            if piece:
                self.record(piece)
        if not self.skipping:
            self.buf += rest
            if len(self.buf) > MAX_RECORD_BYTES:
                self.listing.refuse(self.buf[:120], f"a record of more than {MAX_RECORD_BYTES >> 20} MiB; skipped")
                self.buf.clear()
                self.skipping = True

    def end(self) -> None:
        if self.buf and not self.skipping:
            self.listing.refuse(self.buf, "a record cut off (no NUL at its end)")
        self.buf.clear()

    def archive(self, name: str, data: bytes, rec: bytes) -> None:
        """An output's small files in one tar: each kept as inline bytes (a file the archive lacks or refuses is then
        sent the usual way)."""
        L = self.listing
        if len(data) > (INLINE_MAX_FILES * (self.inline_max + 1024) + 10240) * 4 // 3 + 4:
            return L.refuse(rec[:120], "more inline bytes than asked for")
        members = _tar_members(_unb64(data), self.inline_max)
        if members is None:
            return L.refuse(rec[:120], "an inline archive that is not a tar")
        for rel, got in members:
            why = _check_rel(rel.encode())
            if why or isinstance(got, str):
                L.refuse(f"{name}/{rel}".encode(), why or got)
                continue
            L.inline[(name, rel)] = got

    def record(self, rec: bytes) -> None:
        L = self.listing
        if not rec.startswith(b"RB:"):
            parts = rec.split(b"\t", 3)
            if len(parts) != 4:
                return L.refuse(rec, "a malformed record (not output, size, time, path)")
            name, size, mtime, rel = parts
            which = self.index.get(name)
            if which is None:
                return L.refuse(rec, "an output reprobook never asked for")
            if not size.isdigit() or len(size) > 18:
                return L.refuse(rec, "a size that is not a number of bytes")
            if not _MTIME.fullmatch(mtime):
                return L.refuse(rec, "a modification time that is not a number")
            why = _check_rel(rel)
            if why:
                return L.refuse(rec, why)
            L.files._add(which, int(size), rec[len(name) + len(size) + 2:])
            return
        tag, _, rest = rec.partition(b"\t")
        if tag == b"RB:DATA":
            parts = rest.split(b"\t", 2)
            if len(parts) != 3:
                return L.refuse(rec, "a malformed inline record")
            name, data, rel = parts
            if name not in self.index:
                return L.refuse(rec, "bytes for an output reprobook never asked for")
            why = _check_rel(rel)
            if why:
                return L.refuse(rec, why)
            n = self.inline_count[name] = self.inline_count.get(name, 0) + 1
            if n > INLINE_MAX_FILES or len(data) > (self.inline_max * 4) // 3 + 4:
                return L.refuse(rec, f"more inline bytes than asked for (at most {INLINE_MAX_FILES} files under "
                                     f"{self.inline_max} bytes)")
            # bytes that do not decode are b"": that file is then sent the usual way
            L.inline[(name.decode(), rel.decode())] = _unb64(data)
        elif tag == b"RB:TAR":
            name, sep, data = rest.partition(b"\t")
            if not sep or name not in self.index:
                return L.refuse(rec, "a malformed inline archive, or one of an output reprobook never asked for")
            self.archive(name.decode(), data, rec)
        elif tag == b"RB:TEXT":
            parts = rest.split(b"\t", 2)
            if len(parts) != 3:
                return L.refuse(rec, "a malformed text record")
            size, data, path = parts
            path = path.decode(errors="replace")
            if path not in self.read:
                return L.refuse(rec, "the text of a file reprobook never asked for")
            if size == b"-":
                L.texts[path] = None
                return
            if not size.isdigit():
                return L.refuse(rec, "a text record whose size is not a number")
            L.text_sizes[path] = int(size)
            L.texts[path] = _unb64(data).decode(errors="replace")
        elif tag == b"RB:RSYNC":
            L.rsync = rest == b"yes"
        elif tag == b"RB:SKIP":
            parts = rest.split(b"\t", 2)
            if len(parts) != 3 or parts[0] not in self.index:
                return L.refuse(rec, "a malformed record")
            kind = {b"l": "a symbolic link", b"p": "a FIFO", b"s": "a socket", b"b": "a block device",
                    b"c": "a character device"}.get(parts[1], "not a regular file")
            L.refuse(parts[0] + b"/" + parts[2], f"{kind}: skipped (links are never created locally nor followed)")
        else:
            L.refuse(rec, "a record of an unknown kind")


def _tar_members(data: bytes, inline_max: int):
    """(path, bytes) of each member of the tar ``data`` (the small files of an output, `_LIST`), or the reason it
    cannot be taken; None for the whole archive when it is not one. Nothing is extracted: a member is read into
    memory, and only a regular file of at most ``inline_max`` bytes at most `INLINE_MAX_FILES` of them."""
    import io
    import tarfile
    out = []
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tf:
            for member in tf:
                if len(out) >= INLINE_MAX_FILES:
                    out.append((member.name, f"more than {INLINE_MAX_FILES} inline files"))
                    break
                if not member.isreg():
                    out.append((member.name, "not a regular file in the inline archive"))
                elif member.size >= inline_max:
                    out.append((member.name, f"more inline bytes than asked for (files under {inline_max} bytes)"))
                else:
                    out.append((member.name, tf.extractfile(member).read()))
    except (tarfile.TarError, EOFError, OSError):
        return None
    return out


def _unb64(data: bytes) -> bytes:
    if not _B64.fullmatch(data):
        return b""
    try:
        return base64.b64decode(data, validate=True)
    except ValueError:  # binascii.Error: a reader failed half-way on the host
        return b""


def _root(host: Host, spec: OutputSpec) -> str:
    return spec.path if spec.path.startswith("/") else f"{host.workdir.rstrip('/')}/{spec.path}"


class Pending:
    """A listing of ``outputs`` on ``host`` asked for ahead (see `survey` for the arguments): its ``script`` and
    ``args`` may ride on another round trip to the host (the status poll that sees a job end), its output fed to
    `feed` as it comes; `finish` then gives the `Listing`. `run` makes the round trip of its own."""

    def __init__(self, host: Host, outputs: Mapping[str, OutputSpec], *, newer_than: str | None = None,
                 read: Sequence[str] = (), inline_max: int = 0, text_max: int = TEXT_MAX_BYTES):
        self.host, self.read, self.inline_max = host, tuple(read), inline_max
        self.roots = [(name, _root(host, spec)) for name, spec in outputs.items()]
        self.script = _LIST
        self.args = [newer_than or "", str(int(inline_max)), str(int(text_max)), str(len(self.read)), *self.read]
        for (name, root), spec in zip(self.roots, outputs.values()):
            self.args += [name, root, spec.glob or "*"]
        self.reset()

    def reset(self) -> None:
        """Start over (a round trip that broke off is made again from scratch)."""
        self.listing = Listing(RemoteFiles(self.roots), {}, {}, None)
        self._parser = _Parser(self.listing, self.roots, self.read, self.inline_max)
        self.received = False

    def feed(self, data: bytes) -> None:
        self.received = True
        self._parser.feed(data)

    def finish(self) -> Listing:
        self._parser.end()
        for path in self.read:
            self.listing.texts.setdefault(path, None)
        return self.listing

    def run(self) -> Listing:
        """The listing, in a round trip of its own (made again, up to twice, when the connection drops)."""
        attempt = 0
        while True:
            self.reset()
            try:
                self.host.run_script(self.script, *self.args, step="listing the outputs", on_stdout=self.feed)
                break
            except StepTimeout:
                raise
            except TestbedError:
                if attempt >= 2:
                    raise
                attempt += 1  # a dropped connection: list again, from scratch
                time.sleep(0.25 * 2 ** attempt)
        return self.finish()


def survey(host: Host, outputs: Mapping[str, OutputSpec], *, newer_than: str | None = None,
           read: Sequence[str] = (), inline_max: int = 0, text_max: int = TEXT_MAX_BYTES) -> Listing:
    """One round trip: every file of ``outputs`` on ``host`` (only those newer than ``newer_than``, if
    given), the last ``text_max`` bytes of each remote path in ``read`` (``None`` if absent; its
    whole size in ``text_sizes``), and the bytes of files smaller than ``inline_max``.

    Records that cannot be trusted are not kept but listed in ``refused``; `fetch` names them.
    """
    return Pending(host, outputs, newer_than=newer_than, read=read, inline_max=inline_max, text_max=text_max).run()


def list_outputs(host: Host, outputs: Mapping[str, OutputSpec], *, newer_than: str | None = None) -> Sequence[RemoteFile]:
    """Every file of ``outputs`` on ``host``, in one round trip (optionally only files newer than ``newer_than``)."""
    return survey(host, outputs, newer_than=newer_than).files if outputs else []
