"""Kernels for the book's notebooks, forked from a warm process.

Every notebook of the book runs in its own fresh kernel, and most of a kernel's
time goes into starting Python and importing IPython, pandas, matplotlib and
reprobook (about 1.2 s of CPU of the 1.5 s a claim page costs). A *fork server*
imports those once; each kernel is then a ``fork`` of it: a new process with
its own kernel, started in the notebook's directory with the notebook's
environment, that has nothing to import.

How the pieces fit, without changing how Jupyter manages a kernel:

* `ForkServer` (in the process executing the book) starts ``python -m
  reprobook.book.kernels serve``, which imports the modules and listens on a Unix
  socket, and writes a kernel spec whose command is ``python -m
  reprobook.book.kernels launch -f {connection_file}``.
* jupyter_client starts that *launcher* as the kernel process. The launcher asks
  the server for a kernel (its arguments, working directory and environment),
  then stands in for it: it passes on the signals it gets (an interrupt, say)
  and exits when the kernel does.
* The forked kernel ends with its launcher: when jupyter_client kills the
  launcher (an immediate shutdown), the kernel sees it go and exits.

If the server cannot be reached, the launcher becomes an ordinary kernel
(``exec`` of ``python -m ipykernel_launcher``), so a notebook never fails
because of it.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

KERNEL_NAME = "reprobook-forked"
ENV_SOCKET = "REPROBOOK_FORK_SERVER"
PRELOAD = ("ipykernel.kernelapp", "ipykernel.debugger", "pdb", "IPython.core.debugger", "IPython.core.oinspect",
           "IPython.core.completerlib", "IPython.extensions.storemagic", "tornado.platform.asyncio", "numpy", "pandas",
           "matplotlib.pyplot", "seaborn", "reprobook.api", "reprobook.report", "reprobook.book.plots",
           "myst_nb.ext.glue")
"""What the server imports once: the kernel itself, with what ipykernel imports as each kernel starts (its debugger's
module and with it pydevd, about a third of a second a kernel; pdb, IPython's inspector, completer and store magic),
and what the book's notebooks import (the papers' plug-ins too, which `reprobook.core.plugins` finds; seaborn for the
plots; MyST-NB's glue, by which a page gives the book its verdict, and with it nbformat and jsonschema, imported
without the format checkers: see `reprobook.core.schema.jsonschema_module`)."""
INLINE = "module://matplotlib_inline.backend_inline"


def transport_encryption() -> str:
    """The ``transport_encryption`` of the book's kernel managers: ``"auto"`` if pyzmq has CurveZMQ.

    With it, jupyter_client gives each kernel whose spec declares ``curve`` support keys for its
    channels; a kernel without them logs, on the build's output, that it runs over TCP without
    encryption. Without CurveZMQ in libzmq, ``"disabled"`` (``"auto"`` would be refused).
    """
    import zmq
    return "auto" if zmq.has("curve") else "disabled"


def local_channels(km, directory: str | None = None) -> None:
    """Give ``km``'s kernel Unix-socket channels (ZeroMQ ``ipc``) in ``directory`` instead of TCP ports.

    Over TCP, jupyter_client picks five free ports on 127.0.0.1 and the kernel binds them a moment later; on a
    busy machine another process can take one in between, and the kernel dies ("Address already in use", then
    "Kernel died before replying to kernel_info"). Socket files named after this kernel cannot be taken. Where
    their path would be too long for a Unix socket, the kernel keeps TCP.
    """
    import uuid
    ip = os.path.join(directory or tempfile.gettempdir(), f"kernel-{uuid.uuid4().hex[:12]}")
    if len(ip) + len("-99") < 100 and os.name == "posix":   # sun_path holds 107 bytes
        km.transport, km.ip = "ipc", ip


class ForkServer:
    """A warm process forking kernels, for the duration of a ``with`` block.

    ``kernel_spec_dir`` holds the kernel spec (``KERNEL_NAME``) to start kernels from it.
    The server gets the environment ``env`` (the kernels get the one each is started with).
    """

    def __init__(self, env: dict[str, str] | None = None, preload: tuple[str, ...] = PRELOAD):
        self.env = dict(os.environ if env is None else env)
        self.preload = preload
        self.tmp: tempfile.TemporaryDirectory | None = None
        self.proc: subprocess.Popen | None = None
        self.kernel_spec_dir: str | None = None
        self._ready = None

    def __enter__(self) -> "ForkServer":
        self.start()
        self.wait_ready()
        return self

    def start(self) -> "ForkServer":
        """Start the server without waiting for it to be ready (its imports take a second or so): `wait_ready`
        before the first kernel, and end it with ``__exit__`` as a ``with`` block would."""
        self.tmp = tempfile.TemporaryDirectory(prefix="reprobook-kernels-")
        path = Path(self.tmp.name)
        sock = path / "server.sock"
        spec = path / "kernels" / KERNEL_NAME
        spec.mkdir(parents=True)
        (spec / "kernel.json").write_text(json.dumps({
            # a page's cells are not the user's IPython history (a build would fill it, and pay an SQLite write a cell)
            "argv": [sys.executable, "-m", "reprobook.book.kernels", "launch", "-f", "{connection_file}",
                     "--HistoryManager.enabled=False"],
            "display_name": "Python 3 (forked by reprobook)", "language": "python",
            "interrupt_mode": "signal", "env": {ENV_SOCKET: str(sock)},
            # the forked kernel is ipykernel's, reading its keys from the connection file as any other
            "metadata": {"supported_encryption": ["curve"]}}))
        self.kernel_spec_dir = str(path / "kernels")
        r, w = os.pipe()
        # pydevd (ipykernel's debugger, preloaded) would warn at import that Python's frozen modules may hide
        # breakpoints: nobody debugs a book's build (ipykernel's own kernel spec sets the same)
        env = {**self.env, "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
        try:
            # the server's output (and its kernels') goes where this process's goes, as for ordinary kernels;
            # it says it is ready on a pipe of its own
            self.proc = subprocess.Popen([sys.executable, "-m", "reprobook.book.kernels", "serve", str(sock),
                                          ",".join(self.preload), str(w)], env=env, stdin=subprocess.DEVNULL,
                                         cwd=path, pass_fds=(w,))
        except BaseException:
            os.close(r)
            raise
        finally:
            os.close(w)
        self._ready = os.fdopen(r, "rb")
        return self

    def wait_ready(self) -> bool:
        """Wait until the server has imported what it preloads; False (and the server stopped) if it failed."""
        ready, self._ready = self._ready, None
        if ready is not None:
            with ready:
                if ready.readline().strip() != b"ready":  # kernels are then started the ordinary way: slower, never wrong
                    self.close()
        return self.running

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:  # pragma: no cover - the server ignores SIGTERM only if stuck
                    self.proc.kill()
                    self.proc.wait()
            self.proc = None

    def __exit__(self, *exc) -> None:
        if self._ready is not None:
            self._ready.close()
            self._ready = None
        self.close()
        if self.tmp is not None:
            self.tmp.cleanup()
            self.tmp = None


# --------------------------------------------------------------------------- the server


def serve(sock_path: str, preload: list[str], ready_fd: int) -> None:
    """Import ``preload``, then fork a kernel for every request on ``sock_path`` until terminated."""
    import importlib
    started_in = os.getcwd()  # `python -m` put it first on sys.path; a kernel would not have it
    os.environ.setdefault("MPLBACKEND", INLINE)  # what ipykernel sets before the notebook imports matplotlib
    try:   # before anything imports jsonschema (nbformat does) with its checkers' grammars
        from reprobook.core.schema import jsonschema_module
        jsonschema_module()
    except Exception:  # noqa: BLE001 - as below
        pass
    for name in preload:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a module that cannot be preloaded is imported by the kernel itself
            pass
    try:   # every page loads its claim's outputs with a paper's loader
        from reprobook.core.plugins import load_papers
        load_papers()
    except Exception:  # noqa: BLE001 - as above: the kernel imports them itself, and says what went wrong
        pass
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(sock_path)
    server.listen(64)

    def reap(*_):
        while True:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
    signal.signal(signal.SIGCHLD, reap)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    os.write(ready_fd, b"ready\n")
    os.close(ready_fd)
    while True:
        conn, _ = server.accept()
        with conn:
            request = json.loads(_receive(conn))
            pid = os.fork()
            if pid == 0:
                server.close()
                conn.close()
                _become_kernel(request, started_in)  # never returns
            conn.sendall((json.dumps({"pid": pid}) + "\n").encode())


def _receive(conn: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return data.decode()


def _become_kernel(request: dict, started_in: str) -> None:
    """In the forked child: take the notebook's place and environment, and run the kernel."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.setsid()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        # as `python -m ipykernel_launcher` started in cwd: the kernel adds the working directory itself
        sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd(), started_in)]
        argv = list(request["argv"])
        if os.environ.get("JPY_PARENT_PID"):  # read by ipykernel at import (in the server): say it again
            argv.append(f"--IPKernelApp.parent_handle={os.environ['JPY_PARENT_PID']}")
        sys.argv = ["ipykernel_launcher", *argv]
        if "numpy" in sys.modules:  # a fresh process would not share its random state with its siblings
            sys.modules["numpy"].random.seed()
        _exit_with(request["launcher"])
        from ipykernel import kernelapp
        kernelapp.launch_new_instance(argv=argv)
    except BaseException:  # noqa: BLE001 - the child must never return into the server's loop
        import traceback
        traceback.print_exc()
        os._exit(1)
    os._exit(0)


def _exit_with(pid: int) -> None:
    """End this process when process ``pid`` (the launcher standing in for it) ends."""
    import threading
    fd = os.pidfd_open(pid)

    def watch():
        select.select([fd], [], [])
        os._exit(0)
    threading.Thread(target=watch, name="reprobook-launcher-watch", daemon=True).start()


# --------------------------------------------------------------------------- the launcher


def launch(argv: list[str]) -> None:
    """Stand in for a kernel forked by the server (or become an ordinary kernel if there is none)."""
    sock_path = os.environ.pop(ENV_SOCKET, "")
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(sock_path)
        with conn:
            conn.sendall((json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ),
                                      "launcher": os.getpid()}) + "\n").encode())
            pid = json.loads(_receive(conn))["pid"]
    except (OSError, ValueError, KeyError):
        os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *argv])
    fd = os.pidfd_open(pid)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, lambda signum, _frame: _forward(pid, signum))
    while True:
        try:
            ready, _, _ = select.select([fd], [], [])
        except InterruptedError:  # pragma: no cover - PEP 475 retries select itself
            continue
        if ready:
            os._exit(0)


def _forward(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        os._exit(0)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"]:
        serve(argv[1], [m for m in argv[2].split(",") if m], int(argv[3]))
    elif argv[:1] == ["launch"]:
        launch(argv[1:])
    else:
        sys.exit("usage: python -m reprobook.book.kernels serve SOCKET MODULES READY_FD | launch -f CONNECTION_FILE")


if __name__ == "__main__":
    main()
