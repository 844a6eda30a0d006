"""Executing the book's notebooks in parallel, into MyST-NB's execution cache.

MyST-NB (``execute_notebooks: cache``) executes the notebooks it finds missing from its
jupyter-cache one after another, each in its own kernel, while Sphinx reads the pages. Before
Jupyter Book runs, reprobook executes those same notebooks itself: a pool of workers (two per
core by default), each notebook in its own fresh kernel started in the notebook's directory, as
MyST-NB does, and puts each executed notebook into the cache the way MyST-NB does
(``cache_notebook_bundle``, keyed by jupyter-cache's hash of the code cells). Jupyter Book then
finds every page in the cache and renders without executing.

The kernels of Python notebooks are forked from a warm process that has already imported
IPython, pandas, matplotlib and reprobook (`reprobook.book.kernels`): each is still a new process with
its own kernel, but it skips the second or so a kernel spends starting and importing.

A page can ask to run after all the others (the summary reads the verdicts the claim pages
record). A failing notebook stops nothing else from running, but it is not cached and the pages
that wait for the others do not run; its traceback goes to the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass(frozen=True)
class Page:
    """A notebook of the book to have in the cache.

    ``env`` is added to its kernel's environment; ``last`` pages start once every other page
    has executed (and only if every one succeeded), and execute again whenever another page does.
    """

    path: Path
    env: Mapping[str, str] = field(default_factory=dict)
    last: bool = False


@dataclass(frozen=True)
class Outcome:
    """What became of a page: ``cached`` (found in the cache), ``executed``, ``failed`` or ``skipped``."""

    path: Path
    status: str
    seconds: float = 0.0
    error: str = ""
    worker: int | None = None


def default_workers() -> int:
    """Two workers per core this process may use.

    A kernel waits part of its time (starting, exchanging messages with this process), so one
    notebook per core leaves cores idle; measured on 2 cores, 4 workers build the book in about
    three quarters of the time 2 take (`book/performance.md`).
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return 2 * max(1, cores)


def _read(path: Path):
    import nbformat
    return nbformat.read(str(path), as_version=4)


def execute(pages: Sequence[Page], *, cache_dir: Path, workers: int | None = None, timeout: int | None = None,
            allow_errors: bool = False, in_temp: bool = False, env: Mapping[str, str] | None = None,
            fork: bool = True, log: Callable[[str], None] = print,
            started: Callable[[list[Path]], None] | None = None,
            finished: Callable[[Outcome], None] | None = None, server=None) -> list[Outcome]:
    """Execute every page missing from the jupyter-cache at ``cache_dir``, ``workers`` at a time.

    Parameters
    ----------
    pages : sequence of Page
    cache_dir : Path
        MyST-NB's cache (``_build/.jupyter_cache``); created if missing.
    workers : int, optional
        Notebooks executing at once (default: `default_workers`).
    timeout, allow_errors, in_temp
        As Jupyter Book's ``execute.timeout``, ``execute.allow_errors`` and ``execute.run_in_temp``.
    env : mapping, optional
        The kernels' environment (default: this process's), to which each page's ``env`` is added.
    fork : bool
        Fork the kernels of Python notebooks from a warm process (`reprobook.book.kernels`) rather than
        start each from scratch: the same kernels, without the second or so each spends importing.
    log : callable
        Receives one line per notebook started, finished or failed (failures with the traceback).
    started : callable, optional
        Called once, before any kernel starts, with the pages that will execute, in the order they start
        (an empty list when every page is in the cache).
    finished : callable, optional
        Called with each page's outcome as soon as it is known (an executed page is in the cache by then).
    server : reprobook.book.kernels.ForkServer, optional
        A fork server the caller started (`ForkServer.start`) and stops; else one is started here if ``fork``.

    Returns
    -------
    list of Outcome
        In the order of ``pages``; a failure's ``error`` holds the traceback.
    """
    from jupyter_cache import get_cache
    cache = get_cache(str(cache_dir))
    workers = max(1, workers or default_workers())
    todo: list[Page] = []
    outcomes: dict[Path, Outcome] = {}
    for page in pages:
        try:
            cache.match_cache_file(str(page.path))
        except KeyError:
            todo.append(page)
        else:
            outcomes[page.path] = Outcome(page.path, "cached")
    if any(not page.last for page in todo):  # the last pages read what the others make: they run again too
        todo += [page for page in pages if page.last and page not in todo]
    todo = [p for p in todo if not p.last] + [p for p in todo if p.last]   # the order they start in
    if started is not None:
        started([page.path for page in todo])
    if todo:
        from reprobook.book.kernels import ForkServer
        base_env = dict(os.environ if env is None else env)
        if server is not None:
            server.wait_ready()
            fork = False   # this one, not another
        with ForkServer(base_env) if fork else contextlib.nullcontext(server) as server:
            spec_dir = server.kernel_spec_dir if server is not None and server.running else None
            runner = _Runner(cache, workers, timeout, allow_errors, in_temp, base_env, log, spec_dir, finished)
            for outcome in asyncio.run(runner.run(todo)):
                outcomes[outcome.path] = outcome
    return [outcomes[page.path] for page in pages]


class _Runner:
    def __init__(self, cache, workers, timeout, allow_errors, in_temp, env, log, spec_dir, finished=None):
        self.cache, self.workers, self.timeout, self.spec_dir = cache, workers, timeout, spec_dir
        self.allow_errors, self.in_temp, self.env, self.log = allow_errors, in_temp, env, log
        self.finished = finished
        self.free = list(range(workers, 0, -1))

    async def run(self, todo: list[Page]) -> list[Outcome]:
        slots = asyncio.Semaphore(self.workers)
        first = [p for p in todo if not p.last]
        last = [p for p in todo if p.last]
        self.gate = asyncio.get_running_loop().create_future()  # True once every other page executed
        # the last pages queue behind the others (the semaphore is first come, first served); their kernels
        # start as soon as a worker is free, and their cells wait at the gate
        tasks = [asyncio.ensure_future(self._one(p, slots, gated=p.last)) for p in first + last]
        done = list(await asyncio.gather(*tasks[:len(first)]))
        failed = [o for o in done if o.status == "failed"]
        if not self.gate.done():
            self.gate.set_result(not failed)
        return done + list(await asyncio.gather(*tasks[len(first):]))

    async def _one(self, page: Page, slots: asyncio.Semaphore, *, gated: bool) -> Outcome:
        async with slots:
            worker = self.free.pop()
            try:
                outcome = await self._execute(page, worker, self.gate if gated else None)
            finally:
                self.free.append(worker)
        if self.finished is not None:
            self.finished(outcome)
        return outcome

    async def _execute(self, page: Page, worker: int, gate) -> Outcome:
        from jupyter_cache.base import CacheBundleIn

        nb = _read(page.path)
        where = "temporary" if self.in_temp else "local"
        self.log(f"{page.path}: Executing notebook using {where} CWD [reprobook, worker {worker} of {self.workers}]")
        t0 = time.monotonic()
        with (tempfile.TemporaryDirectory() if self.in_temp else contextlib.nullcontext(page.path.parent)) as cwd:
            # as jupyter-cache's single_nb_execution (MyST-NB): notebook metadata may override the settings
            meta = nb.metadata.get("execution", {})
            client = _client_class()(
                nb, timeout=meta.get("timeout", self.timeout), allow_errors=meta.get("allow_errors", self.allow_errors),
                record_timing=False,  # timings in cell metadata would change the cache key
                shutdown_kernel="immediate",  # the outputs are in: no need to wait for a graceful exit
                resources={"metadata": {"path": str(cwd)}})
            client.gate = gate
            if self.spec_dir and nb.metadata.get("kernelspec", {}).get("name", "python3") == "python3":
                client.spec_dir = self.spec_dir
            try:
                await client.async_execute(env={**self.env, **page.env})
            except _Skipped:
                self.log(f"{page.path}: not executed, because another notebook failed")
                return Outcome(page.path, "skipped", error="another notebook failed", worker=worker)
            except Exception as exc:  # noqa: BLE001 - any failure of a notebook is reported, with its traceback
                took = time.monotonic() - t0
                detail = _ANSI.sub("", str(exc)).strip() or repr(exc)
                last = detail.splitlines()[-1] if detail else ""
                self.log(f"{page.path}: Executing notebook FAILED after {took:.2f} seconds ({type(exc).__name__}: "
                         f"{last}) [reprobook]")
                return Outcome(page.path, "failed", took, f"{type(exc).__name__}: {detail}", worker)
        took = time.monotonic() - t0
        self.cache.cache_notebook_bundle(CacheBundleIn(nb, str(page.path), data={"execution_seconds": took}),
                                         check_validity=False, overwrite=True)
        self.log(f"{page.path}: Executed notebook in {took:.2f} seconds [reprobook, worker {worker}]")
        return Outcome(page.path, "executed", took, worker=worker)


class _Skipped(Exception):
    """A gated page whose gate said the others did not all succeed."""


_CLIENT = None


def _client_class():
    """nbclient's NotebookClient, whose first cell waits for the page's gate (if it has one)."""
    global _CLIENT
    if _CLIENT is None:
        from nbclient import NotebookClient

        class GatedClient(NotebookClient):  # noqa: D401 - see the docstring of _client_class
            gate = None
            spec_dir = None  # set: the kernel is forked (reprobook.book.kernels)

            def create_kernel_manager(self):
                from reprobook.book.kernels import KERNEL_NAME, local_channels, transport_encryption
                if self.spec_dir is None:
                    self.km = super().create_kernel_manager()
                else:
                    from jupyter_client.kernelspec import KernelSpecManager
                    from jupyter_client.manager import AsyncKernelManager
                    specs = KernelSpecManager(kernel_dirs=[self.spec_dir], ensure_native_kernel=False)
                    self.km = AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs,
                                                 config=self.config)
                # encrypted channels, as the command line's kernels (cli.py): no plain-TCP warning in the build log
                self.km.transport_encryption = transport_encryption()
                # Unix sockets beside the fork server's socket (its private directory), not ports another
                # process can take first
                local_channels(self.km, os.path.dirname(self.spec_dir) if self.spec_dir else None)
                return self.km

            async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
                if self.gate is not None:
                    gate, self.gate = self.gate, None
                    if not await gate:
                        raise _Skipped()
                return await super().async_execute_cell(cell, cell_index, execution_count, store_history)

        _CLIENT = GatedClient
    return _CLIENT
