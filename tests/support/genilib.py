"""The real geni-lib (the maintained source, ../shared/git/github.com/nbastin/genilib.git), for running profiles.

`site_dir` installs it once into a throwaway target directory under ``/tmp`` shared by every test of the
session (and by later sessions: the directory is named by the source's commit), with pip from a clone of
the local mirror (the mirror is a bare repository without ``refs/``, which git will not read in place).
lxml, its one dependency the venv lacks, comes from the package registry. `run_profile` runs a profile
the way the portal does (``GENILIB_PORTAL_MODE``, parameters from a JSON file) and returns the request
RSpec: geni-lib's own ``printRequestRSpec`` writes bytes to a text file and fails on Python 3, so the
runner writes ``toXMLString(pretty_print=True, ucode=True)`` in its place (../shared/cloudlab/README.md).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

MIRROR = Path(__file__).resolve().parents[3] / "shared" / "git" / "github.com" / "nbastin" / "genilib.git"
CACHE = Path(os.environ.get("REPROBOOK_GENILIB_CACHE", "/tmp/rb-genilib-cache"))

RUNNER = r'''
import json, runpy, sys
import geni.portal as portal
out, script = sys.argv[1], sys.argv[2]
def emit(self, rspec=None):
    rspec = rspec or self._request
    if any(self._parameters):
        rspec.ParameterData(self._parameters)
    with open(out, "w") as f:
        f.write(rspec.toXMLString(pretty_print=True, ucode=True))
portal.Context.printRequestRSpec = emit
sys.argv = [script]
runpy.run_path(script, run_name="__main__")
'''


class Unavailable(RuntimeError):
    pass


def _commit() -> str:
    refs = (MIRROR / "packed-refs").read_text().splitlines()
    head = (MIRROR / "HEAD").read_text().split()[-1]
    for line in refs:
        if line.endswith(" " + head):
            return line.split()[0]
    raise Unavailable(f"no {head} in {MIRROR}/packed-refs")


def site_dir() -> Path:
    """A directory holding geni-lib and lxml (put it on PYTHONPATH), installed once per source commit."""
    if not (MIRROR / "packed-refs").is_file():
        raise Unavailable(f"no geni-lib mirror at {MIRROR}")
    commit = _commit()
    root = CACHE / commit[:12]
    site = root / "site"
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)   # one install at a time, the others wait and reuse it
        if (site / "geni" / "portal.py").is_file() and (root / "done").is_file():
            return site
        with tempfile.TemporaryDirectory(prefix="rb-genilib-src-") as tmp:
            bare = Path(tmp) / "genilib.git"
            shutil.copytree(MIRROR, bare)
            for d in ("refs/heads", "refs/tags"):
                (bare / d).mkdir(parents=True, exist_ok=True)
            src = Path(tmp) / "genilib"
            subprocess.run(["git", "clone", "-q", str(bare), str(src)], check=True, capture_output=True, timeout=120)
            shutil.rmtree(site, ignore_errors=True)
            got = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
                                  str(src), "lxml"], capture_output=True, text=True, timeout=600)
            if got.returncode != 0:
                raise Unavailable(f"pip could not install geni-lib and lxml: {got.stderr[-800:]}")
        (root / "done").write_text(commit + "\n")
    return site


def run_profile(script: Path, out: Path, params: dict | None = None) -> str:
    """Run ``script`` under geni-lib as the portal does; the request RSpec it builds."""
    site = site_dir()
    env = {**os.environ, "PYTHONPATH": str(site), "GENILIB_PORTAL_MODE": "1"}
    if params:
        pfile = out.with_suffix(".params.json")
        pfile.write_text(json.dumps(params))
        env["GENILIB_PORTAL_PARAMS_PATH"] = str(pfile)
    runner = out.with_suffix(".runner.py")
    runner.write_text(RUNNER)
    got = subprocess.run([sys.executable, str(runner), str(out), str(script)], env=env, capture_output=True,
                         text=True, timeout=120, cwd=out.parent)
    if got.returncode != 0:
        raise AssertionError(f"the profile {script} failed under geni-lib:\n{got.stdout}\n{got.stderr}")
    return out.read_text()
