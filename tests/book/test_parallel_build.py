"""The parallel build: notebooks executed by a pool of kernels into MyST-NB's cache, the summary last and
reading the claim pages' verdicts, one build per tree at a time."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from reprobook.book import site as book, execution
from reprobook.core import verdicts

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.book


def _notebook(path: Path, *cells: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


# Each page writes when it started and ended, its process, and what its environment said.
STAMP = ("import json, os, time\n"
         "import numpy\n"
         "start = time.time()\n"
         "time.sleep({sleep})\n"
         "json.dump({{'start': start, 'end': time.time(), 'pid': os.getpid(), 'cwd': os.getcwd(),\n"
         "           'who': os.environ.get('WHO'), 'all': os.environ.get('ALL'), 'draw': numpy.random.rand()}},\n"
         "          open('{name}.json', 'w'))\n"
         "print('done')")


def _stamps(tmp_path: Path, names) -> dict:
    return {n: json.loads((tmp_path / "pages" / f"{n}.json").read_text()) for n in names}


@pytest.mark.parametrize("fork", [True, False], ids=["forked kernels", "fresh kernels"])
def test_pages_run_at_once_each_in_its_own_kernel_and_land_in_the_cache(tmp_path, fork):
    from jupyter_cache import get_cache
    names = ["a", "b", "c", "d"]
    pages = [execution.Page(_notebook(tmp_path / "pages" / f"{n}.ipynb", STAMP.format(sleep=1.5, name=n)),
                            env={"WHO": n}) for n in names]
    pages.append(execution.Page(_notebook(tmp_path / "pages" / "last.ipynb", STAMP.format(sleep=0, name="last")),
                                env={"WHO": "last"}, last=True))
    lines = []
    out = execution.execute(pages, cache_dir=tmp_path / "cache", workers=4, timeout=60, fork=fork,
                            env={**os.environ, "ALL": "yes"}, log=lines.append)
    assert [o.status for o in out] == ["executed"] * 5, lines
    stamps = _stamps(tmp_path, [*names, "last"])
    # the four pages of 1.5 s ran side by side: each started before any of them ended
    assert max(stamps[n]["start"] for n in names) < min(stamps[n]["end"] for n in names)
    # the last page started once every other one had ended
    assert stamps["last"]["start"] >= max(stamps[n]["end"] for n in names)
    # one kernel per page, in the page's directory, with the common and the page's own environment
    assert len({s["pid"] for s in stamps.values()}) == 5 and os.getpid() not in {s["pid"] for s in stamps.values()}
    assert {s["cwd"] for s in stamps.values()} == {str(tmp_path / "pages")}
    assert [stamps[n]["who"] for n in [*names, "last"]] == [*names, "last"] and {s["all"] for s in stamps.values()} == {"yes"}
    assert len({s["draw"] for s in stamps.values()}) == 5  # forked or not, no two kernels share a random state
    assert sum("Executing notebook" in line for line in lines) == 5
    # the executed notebooks are in the cache under the key MyST-NB looks them up by, with their outputs
    cache = get_cache(str(tmp_path / "cache"))
    for page in pages:
        record = cache.match_cache_notebook(nbformat.read(str(page.path), as_version=4))
        cached = cache.get_cache_bundle(record.pk).nb
        assert cached.cells[0].outputs[0]["text"] == "done\n"
    again = execution.execute(pages, cache_dir=tmp_path / "cache", workers=4, fork=fork, log=lines.append)
    assert [o.status for o in again] == ["cached"] * 5
    _notebook(pages[0].path, STAMP.format(sleep=0, name="a"))  # its code changed: it, and the last page, again
    changed = execution.execute(pages, cache_dir=tmp_path / "cache", workers=4, fork=fork, log=lines.append)
    assert [o.status for o in changed] == ["executed", "cached", "cached", "cached", "executed"]


def test_a_failing_page_is_reported_with_its_traceback_and_the_last_pages_do_not_run(tmp_path):
    from jupyter_cache import get_cache
    good = _notebook(tmp_path / "pages" / "good.ipynb", "x = 1")
    bad = _notebook(tmp_path / "pages" / "bad.ipynb", "x = 1", "def f():\n    raise ValueError('broken on purpose')\nf()")
    last = _notebook(tmp_path / "pages" / "last.ipynb", "open('ran', 'w')")
    lines = []
    out = execution.execute([execution.Page(good), execution.Page(bad), execution.Page(last, last=True)],
                            cache_dir=tmp_path / "cache", workers=2, timeout=60, log=lines.append)
    assert [o.status for o in out] == ["executed", "failed", "skipped"]
    assert "ValueError: broken on purpose" in out[1].error and "----> 3 f()" in out[1].error
    assert "\x1b[" not in out[1].error  # readable in a log file
    assert any("bad.ipynb: Executing notebook FAILED" in line and "broken on purpose" in line for line in lines)
    assert not (tmp_path / "pages" / "ran").exists()
    cache = get_cache(str(tmp_path / "cache"))
    cache.match_cache_file(str(good))
    for path in (bad, last):
        with pytest.raises(KeyError):
            cache.match_cache_file(str(path))


def test_a_second_build_of_the_same_tree_waits_and_says_who_holds_it(tmp_path):
    build_dir = tmp_path / "_build"
    code = ("import sys; from pathlib import Path; from reprobook.book.site import locked\n"
            "with locked(Path(sys.argv[1])):\n    print('building', flush=True)\n")
    with book.locked(build_dir):
        holder = book.lock_holder(build_dir / book.LOCK)
        assert f"pid {os.getpid()}" in holder
        with pytest.raises(book.ReprobookError, match=f"another build of this book is running: pid {os.getpid()}"):
            with book.locked(build_dir, wait=False):
                pass
        second = subprocess.Popen([sys.executable, "-c", code, str(build_dir)], stdout=subprocess.PIPE, text=True)
        first_line = second.stdout.readline()
        assert first_line.startswith("waiting for another build of this book to finish: pid " + str(os.getpid()))
        time.sleep(0.5)
        assert second.poll() is None  # still waiting
    rest = second.communicate(timeout=30)[0]
    assert second.returncode == 0 and "building" in rest.splitlines()[-1]
    with book.locked(build_dir, wait=False):  # free again; --clean keeps the lock file it holds
        book._clean(build_dir)
        assert (build_dir / book.LOCK).is_file()


def test_the_summary_uses_the_pages_verdicts_and_evaluates_only_what_is_missing(tmp_path, monkeypatch):
    from reprobook import report
    from reprobook.api import project
    claims = project().all_claims()
    expected = {c.key: f"fp-{i}" for i, c in enumerate(claims)}
    verdicts.expect(tmp_path, expected)
    for i, c in enumerate(claims):
        verdicts.write(tmp_path, {"claim": c.key, "verdict": "holds", "margin": 0.5, "reason": f"recorded {i}",
                                  "source": "reference", "source_detail": "the authors' files",
                                  "fingerprint": expected[c.key]})
    evaluated = []
    real = report.evaluate
    monkeypatch.setattr(report, "evaluate", lambda claim: evaluated.append(claim.key) or real(claim))
    frame = report.summary_frame(tmp_path)
    assert evaluated == [] and frame.attrs["evaluated"] == []
    assert list(frame["reason"]) == [f"recorded {i}" for i in range(len(claims))]
    assert set(frame["margin"]) == {50.0}
    assert "none was computed a second time" in report.summary_note(frame)
    # a record from other data (a run recorded since) and a missing one are evaluated here, and the page says so
    stale, missing = claims[0].key, claims[-1].key
    rec = json.loads(verdicts.record_path(tmp_path, stale).read_text())
    verdicts.write(tmp_path, {**rec, "fingerprint": "from-an-older-build"})
    verdicts.discard(tmp_path, [missing])
    frame = report.summary_frame(tmp_path)
    assert evaluated == [stale, missing] and frame.attrs["evaluated"] == [stale, missing]
    assert frame.loc[0, "reason"] != "recorded 0" and frame.loc[1, "reason"] == "recorded 1"
    note = report.summary_note(frame)
    assert f"`{stale}` (a record computed from other data)" in note
    assert f"`{missing}` (its page recorded no verdict in this build)" in note


def test_a_cold_build_executes_every_page_once_in_parallel_and_renders_from_the_cache(tmp_path, mirror):
    root = tmp_path / "book"
    root.mkdir()
    for item in ("_config.yml", "_toc.yml", "book", "notebooks", "configs"):
        src = ROOT / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, root / item)
    env = {**os.environ, "REPROBOOK_ROOT": str(root), "REPROBOOK_ARTIFACT_MIRROR": str(mirror),
           "REPROBOOK_RUNS": str(tmp_path / "runs")}
    out = subprocess.run([sys.executable, "-m", "reprobook", "book", "--workers", "3"], cwd=root, capture_output=True,
                         text=True, timeout=900, env=env)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log[-3000:]
    assert "without encryption" not in log  # every kernel's channels encrypted: no plain-TCP warning
    from reprobook.core.config import load_project
    claims = load_project(root).all_claims()
    pages = [p.relative_to(root).as_posix() for p in book.notebook_pages(root)]
    papers = {c.paper for c in claims}
    assert len(pages) == len(claims) + len(papers) + 1  # the claim pages, the chapter pages and the summary
    assert {f"notebooks/{c.key}.ipynb" for c in claims} <= set(pages) and "book/summary.ipynb" in pages
    ran = [line.split(":")[0] for line in log.splitlines() if "Executing notebook" in line]
    assert sorted(ran) == sorted(str(root / p) for p in pages)  # each once, by reprobook
    assert all("[reprobook, worker" in line for line in log.splitlines() if "Executing notebook" in line)
    assert {int(line.split("worker ")[1].split()[0]) for line in log.splitlines() if "Executing notebook" in line} \
        == {1, 2, 3}
    assert ran[-1] == str(root / "book" / "summary.ipynb")
    assert log.count("Using cached notebook") == len(pages)  # Jupyter Book executed nothing itself
    # Sphinx read the claim pages while the last notebooks still executed (reprobook.book.gate), each after its own
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in log.splitlines()]
    summary_done = next(i for i, line in enumerate(lines) if "summary.ipynb: Executed notebook" in line)
    read = {line.split("] ")[-1].strip(): i for i, line in enumerate(lines) if "reading sources" in line}
    assert any(read[page[:-len(".ipynb")]] < summary_done for page in pages if page.startswith("notebooks/"))
    for page in pages:
        done = next(i for i, line in enumerate(lines) if f"{root / page}: Executed notebook" in line)
        assert done < read[page[:-len(".ipynb")]], page
    records, rejected = verdicts.read(root / "_build" / "verdicts")
    assert set(records) == {c.key for c in claims} and not rejected
    summary = (root / "_build" / "html" / "book" / "summary.html").read_text()
    assert f"All {len(claims)} verdicts are the ones the claim pages computed in this build" in summary


@pytest.mark.parametrize("fork", [True, False], ids=["forked kernels", "fresh kernels"])
def test_the_kernels_talk_over_encrypted_channels_and_say_nothing_about_it(tmp_path, capfd, fork):
    # a kernel's own log (its stderr, which is the build's) would say "Kernel is running over TCP without encryption"
    page = _notebook(tmp_path / "pages" / "a.ipynb",
                     "from ipykernel.kernelapp import IPKernelApp\napp = IPKernelApp.instance()\n"
                     "print(app.curve_secretkey is not None, app.transport)")
    out = execution.execute([execution.Page(page)], cache_dir=tmp_path / "cache", workers=1, timeout=60, fork=fork,
                            log=lambda line: None)
    assert [o.status for o in out] == ["executed"]
    log = "".join(capfd.readouterr())
    assert "without encryption" not in log and "plain text" not in log, log
    from jupyter_cache import get_cache
    cache = get_cache(str(tmp_path / "cache"))
    executed = cache.get_cache_bundle(cache.match_cache_file(str(page)).pk).nb
    # the kernel got CurveZMQ keys, and Unix sockets: no TCP port that another process could take before it binds
    assert executed.cells[0].outputs[0]["text"] == "True ipc\n"
