"""Loaders: a claim's outputs -> the measured table its checks and plot use.

A loader is a paper's few lines that compose the format parsers of
`reprobook.formats` into one tidy DataFrame with units in its column names.
Each is registered once, by name, with the `loader` decorator::

    @loader("aardvark.validators")
    def validators(outputs) -> pd.DataFrame: ...

and a claim names it in its paper file (``loader: aardvark.validators``). The
configuration is checked against this registry when it loads: a misspelt
loader is a `ConfigError` naming the file and the key, not a surprise at load
time. Loaders accept both the authors' shipped outputs and the raw files of a
live run. Each paper's loaders live in its package (``reprobook/papers/<paper>/``), found
by `reprobook.core.plugins`; asking the registry imports them all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

from reprobook.core.plugins import load_paper, load_papers
from reprobook.errors import ConfigError, ReprobookError

_REGISTRY: dict[str, Callable] = {}


def loader(name: str, *, columns: tuple[str, ...] | list[str] | None = None,
           words: Mapping[str, str | tuple[str, str]] | None = None) -> Callable[[Callable], Callable]:
    """Register the decorated function as the loader ``name`` (``<paper>.<what>``).

    ``columns`` are the columns of the table it produces: a claim whose checks or plot name another
    column is then a `ConfigError` when its paper file loads (naming the file, the key and the columns
    there are), instead of an *inconclusive* verdict at run time. Loaders that do not declare them are
    not checked. ``words`` say what its columns are to a reader: ``{"tput_tx_per_s": ("throughput", "tx/s"),
    "op": "operation"}`` (a label and a unit, or a label); a page's tables head their columns so
    (`column_words`).
    """
    def register(func: Callable) -> Callable:
        if name in _REGISTRY and _REGISTRY[name] is not func:
            raise ValueError(f"loader {name!r} is registered twice ({_REGISTRY[name].__module__} and {func.__module__})")
        _REGISTRY[name] = func
        func.loader_name = name
        func.columns = tuple(columns) if columns is not None else None
        func.words = {c: (w, "") if isinstance(w, str) else (str(w[0]), str(w[1])) for c, w in (words or {}).items()}
        return func
    return register


def columns(name: str) -> tuple[str, ...] | None:
    """The columns the loader ``name`` declares it produces (None: it declares none)."""
    return getattr(get_loader(name), "columns", None)


_UNITS = (("_tx_per_s", "tx/s"), ("_ops_per_s", "ops/s"), ("_mib_per_s", "MiB/s"), ("_per_s", "/s"),
          ("_ms", "ms"), ("_us", "µs"), ("_ns", "ns"), ("_s", "s"), ("_kib", "KiB"), ("_mib", "MiB"), ("_gib", "GiB"),
          ("_mb", "MB"), ("_bytes", "bytes"), ("_pct", "%"), ("_loc", "lines"))
"""Unit suffixes of the project's column names (units in the names: ``latency_ms``), for a column no loader words."""


def column_words(name: str | None, column: str) -> tuple[str, str]:
    """``(label, unit)`` of ``column`` of loader ``name``'s table, as a reader reads it: the loader's ``words``,
    else made from the name (``latency_ms`` -> ``("latency", "ms")``, ``client_total`` -> ``("client total", "")``).

    >>> column_words(None, "tput_tx_per_s")
    ('tput', 'tx/s')
    """
    if name and name not in _REGISTRY:
        _discover(name)
    words = getattr(_REGISTRY.get(name or ""), "words", None) or {}
    if column in words:
        return words[column]
    col = str(column)
    for suffix, unit in _UNITS:
        if col.endswith(suffix) and len(col) > len(suffix):
            return col[: -len(suffix)].replace("_", " ").strip(), unit
    return col.replace("_", " ").strip(), ""


def column_heading(name: str | None, column: str) -> str:
    """A table's heading for ``column``: its label, with its unit in brackets (``throughput (tx/s)``)."""
    label, unit = column_words(name, column)
    return f"{label} ({unit})" if unit else label


def _discover(name: str | None = None) -> None:
    """Import the papers, so that their loaders are registered: only the one ``name`` is prefixed with (``verus`` of
    ``verus.mimalloc``) when it registers that loader, else every one."""
    if name and "." in name and load_paper(name.split(".", 1)[0]) and name in _REGISTRY:
        return
    load_papers()


def names() -> list[str]:
    """Every registered loader name, sorted."""
    _discover()
    return sorted(_REGISTRY)


def get_loader(name: str) -> Callable:
    """The loader registered as ``name`` (`ConfigError` listing the known ones if there is none)."""
    if name not in _REGISTRY:
        _discover(name)
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError(f"no loader {name!r} (known: {', '.join(sorted(_REGISTRY))})") from None


def load(claim, outputs):
    """The measured table of ``claim`` from ``outputs`` (empty if nothing was obtained)."""
    import pandas as pd
    if outputs is None or not outputs.available:
        return pd.DataFrame()
    name = getattr(outputs, "name", None)
    try:
        table = get_loader(claim.loader)(outputs)
    except ReprobookError as exc:   # its message names the files as a reader knows them, too
        if name is not None:
            exc.message = name(exc.message)
            exc.args = (exc.message, *exc.args[1:])
        raise
    partial = getattr(outputs, "partial", None)
    if partial and isinstance(table, pd.DataFrame):   # a run that did not finish: its table says so, and what failed
        table.attrs["partial"] = dict(partial)
    if name is not None and isinstance(table, pd.DataFrame):
        # the files a table's notes name (its source, findings, files checked) as a reader knows them: an artifact's
        # as owner/repo@commit:path, a run's relative to the run, never where they lie on the machine that read them
        for key, value in list(table.attrs.items()):
            if isinstance(value, (str, Path)):
                table.attrs[key] = name(value)
            elif isinstance(value, (list, tuple)) and all(isinstance(v, (str, Path)) for v in value):
                table.attrs[key] = [name(v) for v in value]
    return table
