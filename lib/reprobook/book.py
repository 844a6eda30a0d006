"""Building the website, with an execution cache that knows about data.

Jupyter Book re-executes a notebook only when its code changes. A claim page
also depends on data: the paper's configuration (published numbers, checks),
the latest recorded run of the claim, where the authors' outputs come from,
and the library that computes the verdict. Before each build, reprobook
fingerprints those inputs per page; a page whose fingerprint changed loses its
cache entry and is marked for re-reading, so exactly the affected pages (and
the summary) execute again, and a page never shows a stale verdict.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .config import Project
from .runs import RunStore

STATE = "reprobook-inputs.json"


def _h(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def _library_hash() -> str:
    pkg = Path(__file__).parent
    return _h(*(p.read_bytes() for p in sorted(pkg.rglob("*.py")) + sorted(pkg.rglob("*.json"))))


def fingerprints(project: Project) -> dict[str, str]:
    """Page (relative path) -> fingerprint of the data it is computed from."""
    s = project.settings
    common = _h(_library_hash(), str(s.artifact_mirror), s.git_base_url)
    store = RunStore(s.runs_dir)
    pages: dict[str, str] = {}
    per_claim = []
    for paper in project.papers.values():
        config = paper.path.read_bytes()
        pages[f"book/{paper.id}/index.ipynb"] = _h(common, config)
        for claim in paper.claims.values():
            latest = store.latest(claim, params=claim.resolve_params({}))
            fp = _h(common, config, claim.key, latest.id if latest else "no-run")
            pages[f"notebooks/{paper.id}/{claim.id}.ipynb"] = fp
            per_claim.append(fp)
    pages["book/summary.ipynb"] = _h(common, *per_claim)
    return pages


def site_fingerprint(project: Project, pages: dict[str, str]) -> str:
    """Everything the website is built from: the page fingerprints and every source file of the book."""
    root = project.root
    files = [root / "_config.yml", root / "_toc.yml"]
    for top in ("book", "notebooks", "configs"):
        files += sorted(p for p in (root / top).rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts)
    parts = [f"{p.relative_to(root)}:{_h(p.read_bytes())}" for p in files if p.is_file()]
    return _h(*parts, json.dumps(pages, sort_keys=True))


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


def build(project: Project, *, clean: bool = False, quiet: bool = False) -> int:
    """Build ``_build/html``; return the exit status of Jupyter Book."""
    root = project.root
    if clean:
        shutil.rmtree(root / "_build", ignore_errors=True)
    state_file = root / "_build" / STATE
    pages = fingerprints(project)
    site = site_fingerprint(project, pages)
    if state_file.is_file() and (root / "_build" / "html" / "index.html").is_file():
        if json.loads(state_file.read_text()).get("site") == site:
            print(f"book is up to date (no page, notebook, configuration, run or library change): "
                  f"{root / '_build' / 'html' / 'index.html'}")
            return 0
    stale = invalidate_stale(project)
    if stale and not quiet:
        print(f"inputs changed for: {', '.join(stale)}")
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb) if jb.exists() else "jupyter-book", "build", str(root), "-W", "--keep-going"]
    if quiet:
        cmd.append("-q")
    t0 = time.monotonic()
    rc = subprocess.call(cmd, env={**os.environ, "REPROBOOK_ROOT": str(root)})
    took = time.monotonic() - t0
    if rc == 0:
        state_file.write_text(json.dumps({"pages": pages, "site": site}, indent=1, sort_keys=True))
        print(f"book built in {took:.1f} s: {root / '_build' / 'html' / 'index.html'}")
    else:
        print(f"book build FAILED after {took:.1f} s (exit {rc}); see the messages above", file=sys.stderr)
    return rc
