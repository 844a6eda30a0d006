"""Papers as plug-ins: the one place the engine finds them.

A paper is a Python package that registers what it adds to the engine when it is imported: its
loaders (`reprobook.core.loaders.loader`), its input generators (`reprobook.core.inputs.generator`).
The engine never imports a paper by name. It finds them here, in two ways:

* the papers that ship with reprobook: every package under ``reprobook/papers/`` (a fifth paper
  is a new folder there, ``reprobook new PAPER`` makes one);
* papers installed from elsewhere: a distribution that declares an entry point in the group
  ``reprobook.papers``, e.g. in its ``pyproject.toml``::

      [project.entry-points."reprobook.papers"]
      mypaper = "mypaper_reprobook"

`load_papers` imports each once per process; the registries call it before they answer.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from pathlib import Path

from reprobook.errors import ConfigError

GROUP = "reprobook.papers"
BUILTIN = "reprobook.papers"
_LOADED: dict[str, str] | None = None


def load_papers() -> dict[str, str]:
    """Import every paper package (once): its name -> the module that registered it."""
    global _LOADED
    if _LOADED is not None:
        return _LOADED
    found: dict[str, str] = {}
    spec = importlib.util.find_spec(BUILTIN)
    if spec is not None and spec.submodule_search_locations:
        for mod in sorted(pkgutil.iter_modules(spec.submodule_search_locations), key=lambda m: m.name):
            if mod.ispkg and not mod.name.startswith("_"):
                found[mod.name] = f"{BUILTIN}.{mod.name}"
    from importlib.metadata import entry_points   # (a twentieth of a second: only when the papers are loaded)
    for ep in entry_points(group=GROUP):
        found.setdefault(ep.name, ep.value)
    loaded: dict[str, str] = {}
    for name, module in found.items():
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ConfigError(f"the paper plug-in {name!r} ({module}) cannot be imported: {exc}") from exc
        loaded[name] = module
    _LOADED = loaded
    return loaded


def load_paper(name: str) -> bool:
    """Import the paper ``name`` alone (a paper shipped with reprobook), not every paper: True if it was found.

    The registries use it first for what a paper registered under its own name (its loader ``verus.mimalloc``:
    paper ``verus``), so that a command about one paper does not import the others; anything else, and a paper
    installed from elsewhere, is found by `load_papers`.
    """
    module = f"{BUILTIN}.{name}"
    if not name.isidentifier() or name.startswith("_"):
        return False
    if module in sys.modules:
        return True
    if importlib.util.find_spec(module) is None:
        return False
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(f"the paper plug-in {name!r} ({module}) cannot be imported: {exc}") from exc
    return True


def source_folders() -> list[Path]:
    """reprobook's folder and each paper plug-in's outside it (a plug-in of one module: its file): the code a loaded
    paper was checked by (`reprobook.core.cache` keeps a paper with the sizes and times of their files)."""
    top = Path(__file__).resolve().parents[1]
    out = [top]
    for module in load_papers().values():
        mod = sys.modules.get(module.split(":")[0])
        where = getattr(mod, "__file__", None)
        if where:
            where = Path(where).resolve()
            where = where.parent if hasattr(mod, "__path__") else where
            if not where.is_relative_to(top) and where not in out:
                out.append(where)
    return out
