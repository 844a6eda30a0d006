"""The gate between the notebooks executing and Sphinx reading the pages (`reprobook.book.gate`): the order the
pages are read in, and no pending page read before it is in the cache."""

from __future__ import annotations

import io
import json
import os
import threading

import pytest

from reprobook.book import gate


def _lines(*messages: dict) -> io.StringIO:
    return io.StringIO("".join(json.dumps(m) + "\n" for m in messages))


class Recorder(io.StringIO):
    """A gate's input that records how many messages each step had to read."""

    def __init__(self, *messages: dict):
        super().__init__("".join(json.dumps(m) + "\n" for m in messages))
        self.read = 0

    def readline(self, *args):
        line = super().readline(*args)
        self.read += bool(line)
        return line


def _read_all(g: gate.Gate, docnames: list[str]) -> list[str]:
    """Read the pages as Sphinx's serial read does (it walks the list by index, which the gate may reorder)."""
    g.order(docnames)
    seen, i = [], 0
    while i < len(docnames):
        name = docnames[i]
        g.before_read(name)
        assert not g._waiting(name)   # never read before it is in the cache
        seen.append(name)
        g.after_read(name)
        i += 1
    return seen


def test_ready_pages_first_then_the_executed_ones_as_they_land():
    stream = Recorder({"pending": ["n/a", "n/b", "n/c", "book/summary"]},
                      {"done": "n/b"}, {"done": "n/c"}, {"done": "n/a"}, {"done": "book/summary"}, {"end": True})
    g = gate.Gate(stream)
    docnames = sorted(["book/intro", "book/summary", "n/a", "n/b", "n/c", "book/z"])
    seen = _read_all(g, docnames)
    # the Markdown pages at once (Sphinx's order), then each notebook in the order it landed, the summary last
    assert seen == ["book/intro", "book/z", "n/b", "n/c", "n/a", "book/summary"]
    assert docnames == seen


def test_the_ready_pages_are_read_before_waiting_for_any():
    stream = Recorder({"pending": ["n/a"]}, {"done": "n/a"}, {"end": True})
    g = gate.Gate(stream)
    docnames = ["book/intro", "book/more", "n/a"]
    g.order(docnames)
    assert stream.read == 1          # only the list of pending pages
    g.before_read("book/intro")
    g.after_read("book/intro")
    assert stream.read == 1          # the next page is ready: no wait
    g.before_read("book/more")
    g.after_read("book/more")        # only pending pages are left: it waits for one
    assert stream.read == 2 and docnames[2] == "n/a"


def test_a_page_that_needs_no_execution_never_waits():
    g = gate.Gate(Recorder({"pending": []}))
    docnames = ["a", "b"]
    assert _read_all(g, docnames) == ["a", "b"]


def test_a_failed_notebook_or_a_builder_gone_closes_the_gate():
    g = gate.Gate(_lines({"pending": ["n/a", "n/b"]}, {"done": "n/a"}, {"failed": True}))
    docnames = ["n/a", "n/b"]
    g.order(docnames)
    g.before_read("n/a")
    with pytest.raises(gate.Closed, match="failed"):
        g.before_read("n/b")
    g = gate.Gate(_lines({"pending": ["n/a"]}))
    g.order(["n/a"])
    with pytest.raises(gate.Closed, match="stopped"):
        g.before_read("n/a")


def test_end_releases_every_page_still_pending():
    # a page the builder found in the cache after all (it executes nothing more) is read once the end is said
    g = gate.Gate(_lines({"pending": ["n/a", "n/b"]}, {"done": "n/a"}, {"end": True}))
    assert _read_all(g, ["n/a", "n/b"]) == ["n/a", "n/b"]


def test_the_builders_opening_and_the_renders_gate_over_a_real_pipe():
    opening = gate.Opening()
    reader = os.fdopen(os.dup(opening.read_fd), "r", buffering=1)
    opening.forget_reader()
    g = gate.Gate(reader)
    opening.pending(["n/slow", "n/fast"])
    seen: list[str] = []
    docnames = ["book/intro", "n/fast", "n/slow"]
    t = threading.Thread(target=lambda: seen.extend(_read_all(g, docnames)))
    t.start()
    opening.done("n/fast")
    opening.done("n/slow")
    opening.end(ok=True)
    t.join(10)
    assert not t.is_alive()
    assert seen[0] == "book/intro" and sorted(seen[1:]) == ["n/fast", "n/slow"]
    opening.done("n/late")   # the render is gone: saying more is harmless
    opening.close()


def test_docname_is_sphinxs_name(tmp_path):
    assert gate.docname(tmp_path, tmp_path / "notebooks" / "pesto" / "workloads.ipynb") == "notebooks/pesto/workloads"
