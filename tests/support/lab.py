"""A real JupyterLab for browser tests (the panel test and the Lab tests): `lab` starts ``python -m jupyterlab`` on a free port with a token and
throwaway Jupyter directories, and stops it; `open_notebook` opens a notebook in Chromium and waits for its kernel.

Example::

    with lab(root_dir, tmp_path) as (url, token), browser() as b:
        page = open_notebook(b, url, token, "panel.ipynb")
        run_all(page)
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

from tests.support.sshd import free_port

KERNEL_UP = """() => {
    const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    return w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel
           && w.sessionContext.session.kernel.connectionStatus === 'connected'; }"""
IDLE = """() => { const w = window.jupyterapp.shell.currentWidget;
    return w && w.sessionContext.session.kernel.status === 'idle'; }"""


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


@contextlib.contextmanager
def lab(root_dir: Path, scratch: Path, *, cwd: Path | None = None, env: dict | None = None,
        settings: dict | None = None, args: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    """``jupyter lab`` serving ``root_dir``; yields (url, token). ``settings`` are user settings by plugin id
    (``{"@jupyterlab/docmanager-extension:plugin": {"autosaveInterval": 2}}``); ``args`` more options."""
    port, token = free_port(), secrets.token_hex(16)
    home = scratch / "jupyter"
    environ = {**os.environ, **(env or {}), "JUPYTER_CONFIG_DIR": str(home / "config"),
               "JUPYTER_DATA_DIR": str(home / "data"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
               "IPYTHONDIR": str(home / "ipython"), "JUPYTER_PLATFORM_DIRS": "1",
               "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"), "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces")}
    (home / "config" / "labconfig").mkdir(parents=True, exist_ok=True)  # no "get notified about news?" prompt
    (home / "config" / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    for plugin, values in (settings or {}).items():
        package, name = plugin.split(":")
        target = home / "settings" / package / f"{name}.jupyterlab-settings"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    log_path = scratch / "lab.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root_dir}",
         "--expose-app-in-browser", "--LabApp.news_url=", "--KernelManager.transport_encryption=auto",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.extension_manager=readonly",
         *(["--allow-root"] if os.geteuid() == 0 else []), *args],
        cwd=cwd or root_dir, env=environ, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while not _answers(f"{url}/api/status?token={token}"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"jupyter lab did not come up on port {port}: {log_path.read_text()[-2000:]}")
            time.sleep(0.3)
        yield url, token
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


def open_notebook(browser, url: str, token: str, path: str):
    """A page with ``path`` open in Lab and its kernel connected."""
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    # ?reset: a fresh workspace, so that notebooks an earlier test opened in this Lab are not restored beside
    # this one (and made the current one, which run_all would run)
    page.goto(f"{url}/lab/tree/{path}?reset&token={token}", wait_until="domcontentloaded", timeout=60_000)
    page.wait_for_function("() => window.jupyterapp && document.querySelector('.jp-Notebook')", timeout=60_000)
    page.wait_for_function(KERNEL_UP, timeout=90_000)
    return page


def run_all(page, timeout_ms: int = 300_000) -> None:
    """Run > Run All Cells, as a reader would, and wait until every code cell has run and the kernel is idle."""
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function("""() => { const w = window.jupyterapp.shell.currentWidget;
        const cells = w.content.widgets.filter(c => c.model.type === 'code');
        return w.sessionContext.session.kernel.status === 'idle'
               && cells.every(c => c.model.executionCount !== null && !c.hasClass('jp-mod-pending')); }""",
                           timeout=timeout_ms)
