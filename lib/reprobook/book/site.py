"""Building the website: notebooks executed in parallel, with an execution cache that knows about data.

Jupyter Book re-executes a notebook only when its code changes. A claim page
also depends on data: the paper's configuration (published numbers, checks),
the latest recorded run of the claim, where the authors' outputs come from,
the library that computes the verdict, and redaction (its setting and the
hosts file, whose names it withholds). Before each build, reprobook
fingerprints those inputs per page; a page whose fingerprint changed loses its
cache entry and is marked for re-reading, so exactly the affected pages (and
the summary) execute again, and a page never shows a stale verdict.

The notebooks missing from the cache are then executed by a pool of workers,
each in its own kernel (`reprobook.book.execution`), the summary page last so that it
reads the verdicts the claim pages recorded (`reprobook.core.verdicts`); Jupyter Book
renders from the cache, starting as the first kernels do: Sphinx reads each page as soon as
its notebook is in the cache (`reprobook.book.gate`) and writes the HTML once the last one is.
One build at a time per tree: a second ``reprobook book`` waits for the first, saying who holds
the lock.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import fnmatch
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

from reprobook.book import execution, gate
from reprobook.core import verdicts
from reprobook.core.config import CACHE_DIR, Project
from reprobook.core.redaction import known_names
from reprobook.errors import ReprobookError
from reprobook.core.runs import MANIFEST, RunStore

STATE = "reprobook-inputs.json"
LOCK = ".reprobook-book.lock"
SUMMARY = "book/summary.ipynb"
VERDICTS = "verdicts"
ENV_WORKERS = "REPROBOOK_BOOK_WORKERS"
"""Notebooks executed at once when ``workers`` is not given (default: two per core)."""
_NOT_INPUTS = {ENV_WORKERS, verdicts.ENV_DIR, verdicts.ENV_FINGERPRINT, "REPROBOOK_VERDICT_FILE"}


def _h(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def _library_hash() -> str:
    pkg = Path(__file__).parents[1]  # the whole reprobook package
    return _h(*(p.read_bytes() for p in sorted(pkg.rglob("*.py")) + sorted(pkg.rglob("*.json"))))


def fingerprints(project: Project) -> dict[str, str]:
    """Page (relative path) -> fingerprint of the data it is computed from."""
    s = project.settings
    # redaction changes what every page says about its runs' hosts, and the hosts file says which names it withholds
    store = RunStore(s.runs_dir)
    withheld = sorted(known_names(project, store).names) if s.redact_hosts else []   # from every run, not only a page's
    common = _h(_library_hash(), str(s.artifact_mirror), s.git_base_url, f"redact_hosts={s.redact_hosts}",
                _file_bytes(project.hosts.path), *withheld)
    pages: dict[str, str] = {}
    per_claim = []
    for paper in project.papers.values():
        config = paper.path.read_bytes()
        mine = []
        for claim in paper.claims.values():
            # every run the page could judge, whatever its parameters: a page may ask for other ones than the
            # claim's defaults (a rehearsal page asks for its rehearsal scale), and a new run changes what it shows
            runs = [r.id for r in store.candidates(claim)]
            fp = _h(common, config, claim.key, *(runs or ["no-run"]))
            pages[f"notebooks/{paper.id}/{claim.id}.ipynb"] = fp
            mine.append(fp)
        pages[f"book/{paper.id}/index.ipynb"] = _h(common, config, *mine)  # it lists its claims' verdicts
        per_claim += mine
    pages["book/summary.ipynb"] = _h(common, *per_claim)
    return pages


def _file_bytes(path: Path | None) -> bytes:
    try:
        return Path(path).read_bytes() if path else b""
    except OSError:
        return b""


def _source_files(root: Path) -> list[Path]:
    files = [root / "_config.yml", root / "_toc.yml"]
    for top in ("book", "notebooks", "configs"):
        files += sorted(p for p in (root / top).rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts)
    return [p for p in files if p.is_file()]


def site_fingerprint(project: Project, pages: dict[str, str]) -> str:
    """Everything the website is built from: the page fingerprints and every source file of the book."""
    root = project.root
    parts = [f"{p.relative_to(root)}:{_h(p.read_bytes())}" for p in _source_files(root)]
    return _h(*parts, json.dumps(pages, sort_keys=True))


def quick_stamp(root: Path, runs_dir: str | Path | None) -> str:
    """A stamp of everything a build reads, taken without loading the configuration.

    The ``REPROBOOK_*`` environment (redaction's setting among it) and the hosts file it names, every source file of
    the book (configuration, ``redact_hosts`` and the hosts file included),
    the library, and the run store's manifests (name, size, time of change). Equal stamps mean
    equal inputs, so a rebuild with nothing changed answers from it alone (loading the
    configuration costs half a second); a different stamp only means "look closer"
    (`fingerprints`).
    """
    env = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("REPROBOOK_") and k not in _NOT_INPUTS)
    hosts = os.environ.get("REPROBOOK_HOSTS")   # outside configs/ when given: its content, not only its name
    hosts_path = (root / Path(hosts).expanduser()) if hosts else None   # relative to the project, as it is loaded
    parts = [str(root), *env, _library_hash(), _h(_file_bytes(hosts_path))]
    parts += [f"{p.relative_to(root)}:{_h(p.read_bytes())}" for p in _source_files(root)]
    if runs_dir and Path(runs_dir).is_dir():
        for m in sorted(Path(runs_dir).glob(f"*/*/*/{MANIFEST}")):
            st = m.stat()
            parts.append(f"{m.relative_to(runs_dir)}:{st.st_size}:{st.st_mtime_ns}")
    return _h(*parts)


def invalidate_stale(project: Project) -> list[str]:
    """Drop the cache entries of pages whose inputs changed since the last successful build; return them."""
    root = project.root
    build = root / "_build"
    state_file = build / STATE
    old = json.loads(state_file.read_text()).get("pages", {}) if state_file.is_file() else {}
    new = fingerprints(project)
    stale = [page for page, fp in new.items() if old.get(page) != fp and (root / page).is_file()]
    cache_dir = build / ".jupyter_cache"
    if stale and cache_dir.is_dir():
        from jupyter_cache import get_cache
        cache = get_cache(str(cache_dir))
        for page in stale:
            while True:
                try:
                    record = cache.match_cache_file(str(root / page))
                except KeyError:
                    break
                cache.remove_cache(record.pk)
            os.utime(root / page)  # Sphinx re-reads a page only if its source looks newer than its doctree
    return stale


def claim_pages(project: Project) -> dict[str, str]:
    """Claim key -> its page (relative path)."""
    return {c.key: f"notebooks/{c.paper}/{c.id}.ipynb" for c in project.all_claims()}


def notebook_pages(root: Path) -> list[Path]:
    """The notebooks of the book, in the order of ``_toc.yml`` (its root and every ``file`` entry)."""
    import yaml
    toc = yaml.safe_load((root / "_toc.yml").read_text()) or {}
    found: list[str] = [toc["root"]] if toc.get("root") else []

    def walk(node) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("file"), str):
                found.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)
    walk({k: v for k, v in toc.items() if k != "root"})
    pages = []
    for name in dict.fromkeys(found):
        path = root / name
        path = path if path.suffix == ".ipynb" else path.with_name(path.name + ".ipynb")
        if path.is_file():
            pages.append(path)
    return pages


def execute_settings(root: Path) -> dict:
    """The ``execute`` section of ``_config.yml``, with Jupyter Book's defaults."""
    import yaml
    config = yaml.safe_load((root / "_config.yml").read_text()) or {}
    given = config.get("execute") or {}
    return {"execute_notebooks": given.get("execute_notebooks", "auto"), "cache": given.get("cache") or "",
            "timeout": given.get("timeout", 30), "allow_errors": bool(given.get("allow_errors", False)),
            "run_in_temp": bool(given.get("run_in_temp", False)),
            "exclude_patterns": list(given.get("exclude_patterns") or [])}


def workers_setting(workers: int | None = None) -> int:
    """Notebooks executed at once: ``workers``, else ``$REPROBOOK_BOOK_WORKERS``, else two per core."""
    if workers is None and os.environ.get(ENV_WORKERS):
        try:
            workers = int(os.environ[ENV_WORKERS])
        except ValueError:
            raise ReprobookError(f"{ENV_WORKERS}={os.environ[ENV_WORKERS]!r} is not a number of workers") from None
    if workers is not None and workers < 1:
        raise ReprobookError(f"the number of workers must be at least 1, not {workers}")
    return workers or execution.default_workers()


@contextlib.contextmanager
def locked(build_dir: Path, *, wait: bool = True, log: Callable[[str], None] = print) -> Iterator[None]:
    """Hold the tree's build lock (``_build/.reprobook-book.lock``) inside the block.

    A second build of the same tree waits, after saying which process holds the lock
    (``wait=False``: raises `ReprobookError` instead). The lock goes with its process, so a
    build that was killed leaves nothing to clean up.
    """
    build_dir.mkdir(parents=True, exist_ok=True)
    path = build_dir / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    held = False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = lock_holder(path)
            if not wait:
                raise ReprobookError(f"another build of this book is running: {holder}; wait for it "
                                     f"(lock: {path})") from None
            log(f"waiting for another build of this book to finish: {holder} (lock: {path})")
            t0 = time.monotonic()
            fcntl.flock(fd, fcntl.LOCK_EX)
            log(f"the other build finished after {time.monotonic() - t0:.1f} s; building")
        held = True
        me = {"pid": os.getpid(), "host": socket.gethostname(), "user": _user(),
              "started": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
              "command": " ".join(sys.argv) or sys.executable}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)
        yield
    finally:
        if held:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
        os.close(fd)


def lock_holder(path: Path) -> str:
    """Who holds the build lock at ``path``, in words."""
    try:
        me = json.loads(path.read_text())
        return (f"pid {me['pid']} ({me.get('user', '?')}@{me.get('host', '?')}, `{me.get('command', '?')}`, "
                f"since {me.get('started', '?')})")
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not said who it is yet"


def _user() -> str:
    try:
        import getpass
        return getpass.getuser()
    except (KeyError, OSError):  # pragma: no cover - no user name for this uid
        return str(os.getuid())


def _clean(build_dir: Path) -> None:
    """Remove everything built, keeping the lock this build holds and the configuration cache (not a part of the
    site: the papers as read, kept by content hash, `reprobook.core.cache`, which every page's kernel reads)."""
    keep = {LOCK, Path(CACHE_DIR).name}
    for item in build_dir.iterdir() if build_dir.is_dir() else ():
        if item.name in keep:
            continue
        if item.is_dir() and not item.is_symlink():
            shutil.rmtree(item, ignore_errors=True)
        else:
            item.unlink(missing_ok=True)


def kernel_env(root: Path) -> dict[str, str]:
    """The environment of the book's kernels (and of the fork server they come from)."""
    env = {**os.environ, "REPROBOOK_ROOT": str(root), verdicts.ENV_DIR: str(root / "_build" / VERDICTS)}
    env.pop("REPROBOOK_VERDICT_FILE", None)
    return env


def execute_pages(project: Project, pages: dict[str, str], *, stale: list[str], workers: int,
                  quiet: bool = False, started: Callable[[list[Path]], None] | None = None,
                  finished: Callable[[execution.Outcome], None] | None = None,
                  server=None) -> list[execution.Outcome] | None:
    """Execute the book's notebooks missing from MyST-NB's cache, in parallel, the summary last.

    Returns the outcomes, or None when ``_config.yml`` does not ask for the cache
    (``execute_notebooks`` other than ``cache``): then Jupyter Book executes as it will. ``started`` and
    ``finished`` are `reprobook.book.execution.execute`'s; the pages about to execute are touched before
    ``started`` hears of them (Sphinx reads a page again only if its source looks newer than its doctree).
    """
    root = project.root
    settings = execute_settings(root)
    if settings["execute_notebooks"] != "cache":
        if not quiet:
            print(f"_config.yml: execute_notebooks is {settings['execute_notebooks']!r}, not 'cache': "
                  "Jupyter Book executes the notebooks itself, one after another")
        return None
    cache_dir = root / (settings["cache"] or "_build/.jupyter_cache")
    record_dir = root / "_build" / VERDICTS
    claims = claim_pages(project)
    verdicts.expect(record_dir, {key: pages[page] for key, page in claims.items()})
    verdicts.discard(record_dir, [key for key, page in claims.items() if page in stale])
    by_page = {page: key for key, page in claims.items()}
    chapters = {f"book/{paper}/index.ipynb" for paper in project.papers}
    todo = []
    for path in notebook_pages(root):
        rel = path.relative_to(root).as_posix()
        if any(fnmatch.fnmatch(rel, pattern) for pattern in settings["exclude_patterns"]):
            continue
        env = {verdicts.ENV_FINGERPRINT: pages[rel]} if rel in by_page else {}
        # the summary and the chapter pages show the verdicts the claim pages record: they run after them (a
        # chapter page only when its data changed; otherwise its cached verdicts are still the right ones)
        todo.append(execution.Page(path, env=env, last=rel == SUMMARY or (rel in chapters and rel in stale)))
    todo.sort(key=lambda page: page.path == root / SUMMARY)  # the summary the very last: after the chapter pages too
    env = kernel_env(root)

    def touch_then_tell(paths: list[Path]) -> None:
        for path in paths:
            os.utime(path)
        if started is not None:
            started(paths)

    return execution.execute(todo, cache_dir=cache_dir, workers=workers, timeout=settings["timeout"],
                             allow_errors=settings["allow_errors"], in_temp=settings["run_in_temp"], env=env,
                             log=say if not quiet else lambda line: None,
                             started=touch_then_tell, finished=finished, server=server)


_SAY = threading.Lock()


def say(line: str, stream: str = "stdout") -> None:
    """Write one whole line to this process's stdout or stderr (the notebooks' log and the render's lines
    share the terminal while both run)."""
    out = getattr(sys, stream)
    with _SAY:
        try:
            out.write(line if line.endswith("\n") else line + "\n")
            out.flush()
        except (BrokenPipeError, ValueError):   # a reader that went away (| head) misses the rest, nothing more
            pass


def _relay(pipe, stream: str) -> None:
    with contextlib.suppress(ValueError, OSError):
        for line in pipe:
            say(line, stream)


def render_jobs() -> int:
    """Sphinx's processes for writing the HTML: one per core, and the main one (which builds the search index)."""
    return len(os.sched_getaffinity(0)) + 1


class Render:
    """Jupyter Book's rendering in its own process (`reprobook.book.render`), started while the notebooks execute.

    `start` with the pages still to execute opens the gate (`reprobook.book.gate`): Sphinx reads the others at
    once, and each of those as `finished` says it is in the cache. `start` with None renders without a gate.
    """

    def __init__(self, root: Path, *, quiet: bool, jobs: int | None = None):
        self.root = root
        self.cmd = [sys.executable, "-m", "reprobook.book.render", "--jobs", str(jobs or render_jobs()),
                    "build", str(root), "-W", "--keep-going"] + (["-q"] if quiet else [])
        self.opening: gate.Opening | None = None
        self.proc: subprocess.Popen | None = None
        self.relays: list[threading.Thread] = []

    def start(self, pending: list[Path] | None) -> None:
        env = {**os.environ, "REPROBOOK_ROOT": str(self.root)}
        env.pop(gate.ENV, None)
        if pending is None:
            self.proc = subprocess.Popen(self.cmd, env=env)
            return
        self.opening = gate.Opening()
        self.opening.pending([gate.docname(self.root, path) for path in pending])
        env[gate.ENV] = str(self.opening.read_fd)
        try:
            # its lines pass through this process, whole, between the notebooks' (`say`): never mixed mid-line
            self.proc = subprocess.Popen(self.cmd, env=env, pass_fds=(self.opening.read_fd,), stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
        finally:
            self.opening.forget_reader()
        self.relays = [threading.Thread(target=_relay, args=(self.proc.stdout, "stdout"), daemon=True),
                       threading.Thread(target=_relay, args=(self.proc.stderr, "stderr"), daemon=True)]
        for relay in self.relays:
            relay.start()

    def finished(self, outcome: execution.Outcome) -> None:
        if self.opening is None:
            return
        if outcome.status == "executed":
            self.opening.done(gate.docname(self.root, outcome.path))
        elif outcome.status == "failed":
            self.stop()

    def wait(self) -> int:
        if self.proc is None:
            self.start(None)
        if self.opening is not None:
            self.opening.end(ok=True)
        rc = self.proc.wait()
        for relay in self.relays:
            relay.join()
        return rc

    def stop(self) -> None:
        """Stop the render (a notebook failed, or the build was interrupted)."""
        if self.opening is not None:
            self.opening.end(ok=False)
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def build(project: Project | str | Path, *, clean: bool = False, quiet: bool = False, workers: int | None = None,
          wait: bool = True) -> int:
    """Build ``_build/html``; return the exit status (0: built or up to date).

    Parameters
    ----------
    project : Project, or the project's root
        Given a root, the configuration is loaded only if the book may be out of date.
    clean : bool
        Remove ``_build`` first (a cold build).
    quiet : bool
        Less output.
    workers : int, optional
        Notebooks executed at once (default: ``$REPROBOOK_BOOK_WORKERS``, else two per core).
    wait : bool
        If another build of this tree is running, wait for it (else raise `ReprobookError`).
    """
    if isinstance(project, Project):
        root, load = project.root, (lambda: project)
    else:
        from reprobook.core.config import load_project
        root = Path(project).resolve()
        load = lambda: load_project(root)  # noqa: E731
    workers = workers_setting(workers)
    with locked(root / "_build", wait=wait):
        return _build(root, load, clean=clean, quiet=quiet, workers=workers)


def _build(root: Path, load: Callable[[], Project], *, clean: bool, quiet: bool, workers: int) -> int:
    if clean:
        _clean(root / "_build")
    state_file = root / "_build" / STATE
    state = json.loads(state_file.read_text()) if state_file.is_file() else {}
    index = root / "_build" / "html" / "index.html"
    up_to_date = (f"book is up to date (no page, notebook, configuration, run or library change): {index}")
    if index.is_file() and state.get("quick") and state["quick"] == quick_stamp(root, state.get("runs_dir")):
        print(up_to_date)
        return 0
    with contextlib.ExitStack() as stack:
        server = None
        if execute_settings(root)["execute_notebooks"] == "cache":
            # the kernels' fork server imports pandas, matplotlib, ... (a second or so) while this process works out
            # what changed; a page to execute finds it ready (none: it was started for nothing, and stopped)
            from reprobook.book.kernels import ForkServer
            server = ForkServer(kernel_env(root)).start()
            stack.callback(server.__exit__, None, None, None)
        return _build_loaded(root, load, state_file, state, index, up_to_date, quiet=quiet, workers=workers,
                             server=server)


def _build_loaded(root: Path, load: Callable[[], Project], state_file: Path, state: dict, index: Path,
                  up_to_date: str, *, quiet: bool, workers: int, server) -> int:
    project = load()
    runs_dir = str(project.settings.runs_dir)
    quick = quick_stamp(root, runs_dir)
    pages = fingerprints(project)
    site = site_fingerprint(project, pages)
    if index.is_file() and state.get("site") == site:
        state_file.write_text(json.dumps({**state, "quick": quick, "runs_dir": runs_dir}, indent=1, sort_keys=True))
        print(up_to_date)
        return 0
    stale = invalidate_stale(project)
    if stale and not quiet:
        print(f"inputs changed for: {', '.join(stale)}")
    t0 = time.monotonic()
    render = Render(root, quiet=quiet)
    try:
        rc = _execute_and_render(project, pages, stale, render, workers=workers, quiet=quiet, t0=t0, server=server)
    finally:
        render.stop()   # still running only if the build was interrupted
    if rc is None:
        return 1
    took = time.monotonic() - t0
    if rc == 0:
        state_file.write_text(json.dumps({"pages": pages, "site": site, "quick": quick, "runs_dir": runs_dir},
                                         indent=1, sort_keys=True))
        print(f"book built in {took:.1f} s: {index}")
    else:
        print(f"book build FAILED after {took:.1f} s (exit {rc}); see the messages above", file=sys.stderr)
    return rc


def _execute_and_render(project: Project, pages: dict[str, str], stale: list[str], render: Render, *, workers: int,
                        quiet: bool, t0: float, server=None) -> int | None:
    """Execute the pages with the render started alongside; the render's exit status, or None if a notebook
    failed (said here, the render stopped)."""
    root = project.root
    outcomes = execute_pages(project, pages, stale=stale, workers=workers, quiet=quiet, started=render.start,
                             finished=render.finished, server=server)
    took_exec = time.monotonic() - t0
    if outcomes is not None:
        ran = [o for o in outcomes if o.status == "executed"]
        failed = [o for o in outcomes if o.status == "failed"]
        if failed:
            render.stop()
            for o in failed:
                print(f"\n{o.path}: the notebook failed:\n{o.error}", file=sys.stderr)
            skipped = [o.path.relative_to(root).as_posix() for o in outcomes if o.status == "skipped"]
            print(f"book build FAILED after {took_exec:.1f} s: {len(failed)} notebook(s) failed to execute ("
                  + ", ".join(o.path.relative_to(root).as_posix() for o in failed) + ")"
                  + (f"; not executed: {', '.join(skipped)}" if skipped else "")
                  + "; the tracebacks are above", file=sys.stderr)
            return None
        if not quiet:   # the render may be writing too
            say(f"executed {len(ran)} notebook(s) in {took_exec:.1f} s with {workers} worker(s); "
                f"{len(outcomes) - len(ran)} were in the cache")
    return render.wait()
