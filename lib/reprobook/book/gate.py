"""Rendering while the notebooks execute: Sphinx reads a page as soon as its notebook is in the cache.

`reprobook book` (`reprobook.book.site`) starts Jupyter Book's rendering (`reprobook.book.render`) as soon as it
knows which notebooks it will execute, not after the last one: Sphinx starts, reads the pages that need no
execution (the Markdown pages, the notebooks already in the cache) and then each executed page as it lands in
MyST-NB's cache, while the other kernels still run. Only writing the HTML waits for the last page.

The two processes talk over a pipe whose reading end the render inherits (its number in ``$REPROBOOK_RENDER_GATE``),
one JSON object a line: first ``{"pending": [docnames]}``, the pages still to execute in the order they start;
then ``{"done": docname}`` as each is in the cache; last ``{"end": true}``, or ``{"failed": true}`` when a
notebook failed (the builder then stops the render and reports the notebook). Sphinx's own names are used
(the page's path from the book's root, without its suffix).

On the render's side (`Gate`, connected by `reprobook.book.sphinxext` when the variable is set): before reading,
the pages that are ready go first and the pending ones after, in the order they will finish; before a pending
page is read, the render waits until it is in the cache, so MyST-NB finds it there and never executes it itself.
After each page it puts the next page that is ready first. Sphinx reads one page at a time meanwhile (the pipe has
one reader); writing may use several processes again (``render --jobs``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import IO, Iterable

ENV = "REPROBOOK_RENDER_GATE"
"""The environment variable naming the file descriptor the render reads the gate from."""


def docname(root: Path, path: Path) -> str:
    """Sphinx's name of the page at ``path``: its path from the book's root, without its suffix."""
    return path.relative_to(root).with_suffix("").as_posix()


class Opening:
    """The builder's end: says which pages are pending, then each one that is done, then the end."""

    def __init__(self) -> None:
        read_fd, write_fd = os.pipe()
        self.read_fd = read_fd
        self._out: IO[str] | None = os.fdopen(write_fd, "w", buffering=1)

    def _send(self, message: dict) -> None:
        if self._out is None:
            return
        try:
            self._out.write(json.dumps(message) + "\n")
            self._out.flush()
        except (BrokenPipeError, OSError):  # the render ended already (it failed): its exit status tells
            self._close()

    def pending(self, names: Iterable[str]) -> None:
        self._send({"pending": list(names)})

    def done(self, name: str) -> None:
        self._send({"done": name})

    def end(self, ok: bool) -> None:
        self._send({"end": True} if ok else {"failed": True})
        self._close()

    def forget_reader(self) -> None:
        """Close this process's copy of the reading end (once the render has inherited it)."""
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1

    def _close(self) -> None:
        out, self._out = self._out, None
        if out is not None:
            try:
                out.close()
            except OSError:
                pass

    def close(self) -> None:
        self._close()
        self.forget_reader()


class Closed(Exception):
    """The builder said a notebook failed, or went away: the render must stop."""


class Gate:
    """The render's end: the order in which Sphinx reads the pages, and the waits before pending ones."""

    def __init__(self, stream: IO[str]):
        self._in = stream
        self.pending: list[str] | None = None   # in the order they start executing
        self.done: list[str] = []               # in the order they landed in the cache
        self._order: list[str] | None = None    # Sphinx's list of the pages to read (reordered in place)

    @classmethod
    def from_env(cls) -> "Gate | None":
        fd = os.environ.get(ENV)
        if not fd:
            return None
        try:
            return cls(os.fdopen(int(fd), "r", buffering=1))
        except (ValueError, OSError):
            return None

    def _next(self) -> None:
        line = self._in.readline()
        if not line:
            raise Closed("reprobook book stopped before the notebooks were all executed")
        message = json.loads(line)
        if "pending" in message:
            self.pending = list(message["pending"])
        elif "done" in message:
            self.done.append(message["done"])
        elif message.get("failed"):
            raise Closed("a notebook failed to execute (reprobook book names it)")
        elif message.get("end"):
            # everything pending is in the cache now
            self.done += [name for name in self.pending or () if name not in self.done]

    def _waiting(self, name: str) -> bool:
        return self.pending is not None and name in self.pending and name not in self.done

    def order(self, docnames: list[str]) -> None:
        """Reorder ``docnames`` in place: the pages that are ready first (as Sphinx sorted them), then the pending
        ones in the order they start executing."""
        while self.pending is None:
            self._next()
        self._order = docnames
        self._settle(0)

    def _settle(self, start: int) -> None:
        """From ``start`` on, the pages that are ready first, then those still pending, in their order."""
        rest = self._order[start:]
        ready = [d for d in rest if not self._waiting(d)]   # in Sphinx's order
        waiting = sorted((d for d in rest if self._waiting(d)), key=self.pending.index)
        self._order[start:] = ready + waiting

    def before_read(self, name: str) -> None:
        """Wait until page ``name`` is in the cache (at once if it needs no execution)."""
        while self._waiting(name):
            self._next()

    def after_read(self, name: str) -> None:
        """Put a page that is ready right after ``name``, waiting for one if every page left is still pending."""
        if self._order is None or name not in self._order:
            return
        at = self._order.index(name) + 1
        rest = self._order[at:]
        while rest and all(self._waiting(d) for d in rest):
            self._next()
        self._settle(at)


def stop(message: str) -> None:
    """End the render quietly: the builder reports what failed."""
    print(f"reprobook: rendering stopped: {message}", file=sys.stderr)
    sys.exit(3)
