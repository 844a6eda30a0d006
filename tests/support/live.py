"""What the opt-in live targets' tests (``make live-*``) share: their preconditions, the project's run store, the
hosts file of a loopback host, and what they read back from a job's log, the store and a notebook.

Each module keeps its own words about its target (why it is opt-in, why it needs root or cargo) and passes them
in; the helpers add the fixed start of each message (``opt-in: ``, ``needs root: `` ...), so the
skip and fail messages read as before. A skip or fail raised here is reported at the caller's line.

A live run is recorded in the project's run store, so that ``make book`` afterwards shows it on the claim's page:
`project_store_env` points the engine at the project for the module's fixture, and `project_runs`, imported into
a module, undoes per test what ``tests/conftest.py``'s autouse ``_isolated`` sets up (a temporary store per test).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from contextlib import contextmanager
from html import unescape
from pathlib import Path
from typing import Iterator, NamedTuple

import pytest
import yaml

from tests.support.gitmirror import GIT_MIRROR

ROOT = Path(__file__).resolve().parents[2]
REPROBOOK = [sys.executable, "-m", "reprobook"]
"""The command line, as an evaluator runs it (in this interpreter)."""


def live_dir(default: str) -> Path:
    """The kept workdir of a live target: ``$REPROBOOK_LIVE_DIR``, else ``default`` (a path under /var/tmp)."""
    return Path(os.environ.get("REPROBOOK_LIVE_DIR", default))


# ------------------------------------------------------------------ preconditions

def opt_in(variable: str, why: str) -> None:
    """Skip, saying ``opt-in: why`` (the make target, what it does and how long it takes), unless the environment
    variable ``variable`` is ``1``."""
    __tracebackhide__ = True
    if os.environ.get(variable) != "1":
        pytest.skip(f"opt-in: {why}")


def needs_root(why: str) -> None:
    """Skip, saying ``needs root: why``, unless this process runs as root."""
    __tracebackhide__ = True
    if os.geteuid() != 0:
        pytest.skip(f"needs root: {why}")


def needs_mirror(*repos: str, mirror: Path = GIT_MIRROR) -> None:
    """Fail, naming the first one missing, unless every one of ``repos`` (``owner/name[.git]``) is in the git
    mirror."""
    __tracebackhide__ = True
    for repo in repos:
        if not (mirror / repo).is_dir():
            pytest.fail(f"the git mirror lacks {repo} ({mirror})")


def needs_cargo(why: str) -> None:
    """Fail, saying ``no cargo on this machine: why``, unless cargo is on PATH or in ``~/.cargo/bin``."""
    __tracebackhide__ = True
    if not (shutil.which("cargo") or (Path.home() / ".cargo" / "bin" / "cargo").exists()):
        pytest.fail(f"no cargo on this machine: {why}")


# ------------------------------------------------------------------ the host and the project's run store

def write_hosts(path: Path, name: str, workdir: Path, mirror: Path = GIT_MIRROR, **settings) -> Path:
    """A hosts file at ``path`` with one host ``name`` (its ssh alias is its name) working in ``workdir``, GitHub's
    URLs rewritten to ``mirror``, and any further host ``settings`` (``env=...``); returns ``path``."""
    host = {"ssh": name, "workdir": str(workdir), "git_url_rewrites": {"https://github.com/": f"{mirror}/"},
            **settings}
    path.write_text(yaml.safe_dump({"hosts": {name: host}}))
    return path


@contextmanager
def project_store_env(hosts_file: Path, bed) -> Iterator[dict[str, str]]:
    """The engine pointed at the project (``REPROBOOK_ROOT``), its hosts at ``hosts_file`` and its SSH client at
    the testbed ``bed``'s config, with no verdict file and no run store of the tests' own (``REPROBOOK_VERDICT_FILE``
    and ``REPROBOOK_RUNS`` unset): the runs go to the project's run store. Set in this process for the duration;
    yields a copy of the environment so set, for subprocesses started later (after conftest's per-test changes)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("REPROBOOK_ROOT", str(ROOT))
        mp.setenv("REPROBOOK_HOSTS", str(hosts_file))
        mp.setenv("REPROBOOK_SSH_CONFIG", str(bed.ssh_config_path))
        mp.delenv("REPROBOOK_VERDICT_FILE", raising=False)
        mp.delenv("REPROBOOK_RUNS", raising=False)
        yield dict(os.environ)


@pytest.fixture(autouse=True)
def project_runs(monkeypatch):
    """The project's run store, as ``make book`` reads it, in every test of a module that imports this fixture: it
    runs after ``tests/conftest.py``'s autouse ``_isolated``, which points ``REPROBOOK_RUNS`` at each test's temporary
    directory (where the runs would go, and be lost with it)."""
    monkeypatch.delenv("REPROBOOK_RUNS", raising=False)


# ------------------------------------------------------------------ reading back what a run left

_DONE = re.compile(r"^### reprobook: step (\S+) done in (\d+) s")
_STEP = re.compile(r"^### reprobook step (\S+)/\d+: (.*?)(?: \(expected .*\))?(?: \[point .*\])?$")


class StepTime(NamedTuple):
    step: str       # as the job numbers it: "4", or "9-2" for a sweep's second point
    name: str       # the step's title, without its " (expected …)" and " [point …]"
    seconds: int


def step_times(log: str) -> list[StepTime]:
    """The steps a job's log says were done, in the order they ended, each with its title and its seconds (a step
    skipped as done in an earlier attempt has no time, and is not listed)."""
    names: dict[str, str] = {}
    done = []
    for line in log.splitlines():
        if m := _STEP.match(line):
            names[m.group(1)] = m.group(2)
        elif m := _DONE.match(line):
            done.append(StepTime(m.group(1), names.get(m.group(1), ""), int(m.group(2))))
    return done


def latest_rehearsal(store, claim, **parameters):
    """The newest rehearsal-scale run of ``claim`` in ``store`` whose parameters include ``parameters``: the one whose
    record was written last (a test's own run is the newest of its claim's)."""
    runs = [r for r in store.runs(claim) if r.manifest.get("scale") == "rehearsal"
            and all(r.manifest.get("parameters", {}).get(k) == v for k, v in parameters.items())]
    return max(runs, key=lambda r: ((Path(r.path) / "manifest.json").stat().st_mtime, r.id))


def page_text(notebook: Path) -> str:
    """What an executed notebook shows: its code cells' HTML, Markdown and plain-text outputs, unescaped."""
    nb = json.loads(notebook.read_text())
    return unescape("".join("".join(o["data"].get("text/html", "")) + "".join(o["data"].get("text/markdown", ""))
                            + "".join(o["data"].get("text/plain", ""))
                            for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
                            if "data" in o))


def write_summary(path: Path, summary: dict) -> None:
    """Write a live run's ``summary`` (step times, tables, verdicts) as JSON to ``path`` and print it."""
    text = json.dumps(summary, indent=1)
    path.write_text(text)
    print("\n" + text)
