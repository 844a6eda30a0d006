"""Configuration files as data: YAML read and validated against the package's JSON schemas.

Every error names the file and the key path (``claims[1].checks[0].kind``). The frozen objects
made from the data live in `reprobook.core.model` and `reprobook.core.config`.

The YAML is read by libyaml (PyYAML's C loader, which its wheels carry) where it is installed, else by PyYAML's pure
loader: the same data, five to ten times sooner. A file either loader refuses is read again by the pure loader, so
that a mistake is told in its words (line, what it expected), as it always was. A file read once is kept
(`reprobook.core.cache`) when the caller names a cache directory, as `reprobook.core.config.load_project` does.
"""

from __future__ import annotations

import json
import sys
from functools import lru_cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

import yaml

from reprobook.core import cache as _cache
from reprobook.errors import ConfigError

FAST_LOADER = getattr(yaml, "CSafeLoader", None)
"""libyaml's safe loader (None where PyYAML was built without libyaml): `parse_yaml` reads with it first."""


def _key_path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


@lru_cache(maxsize=None)
def _schema_text(name: str) -> str:
    return resources.files("reprobook.core.schemas").joinpath(f"{name}.json").read_text()


@lru_cache(maxsize=None)
def _schema(name: str) -> dict:
    return json.loads(_schema_text(name))


def parse_yaml(text: str):
    """``text`` as `yaml.safe_load` reads it: with libyaml when installed, and by the pure loader when libyaml
    refuses it (so a mistake raises the pure loader's `yaml.YAMLError`, with its mark and its words)."""
    if FAST_LOADER is not None:
        try:
            return yaml.load(text, Loader=FAST_LOADER)
        except (yaml.YAMLError, ValueError):   # ValueError: text libyaml cannot encode (a lone surrogate)
            pass
    return yaml.safe_load(text)


def load_yaml(path: Path, schema: str, *, cache: Path | None = None, text: str | None = None) -> dict:
    """Read ``path`` and validate it against the named schema.

    With ``cache`` (a directory), data that passed the same schema from the same text before is taken from there
    (`reprobook.core.cache`) and what passes now is kept there; the result is the same either way. ``text``: the
    file's text when the caller has read it already.

    Raises
    ------
    ConfigError
        If the file is missing, is not YAML, or breaks the schema; the
        message names the file and the key path.
    """
    path = Path(path)
    if text is None:
        if not path.is_file():
            raise ConfigError("file not found", file=path)
        text = path.read_text()
    if cache is not None:
        entry = _cache.data_key(text, schema, _schema_text(schema))
        data = _cache.get_data(cache, path, entry)
        if isinstance(data, dict):
            return data
    try:
        data = parse_yaml(text) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else None
        words = " ".join(x for x in (getattr(exc, "context", None), getattr(exc, "problem", None)) if x)
        raise ConfigError(f"not valid YAML: {words or str(exc).splitlines()[0]}", file=path, key=where) from None
    validator = jsonschema_module().Draft202012Validator(_schema(schema))
    errors = sorted(validator.iter_errors(data), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if errors:
        err = errors[0]
        key = _key_path(err.absolute_path)
        if err.validator == "additionalProperties":
            extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
            key = _key_path([*err.absolute_path, extra[0]]) if extra else key
            msg = f"unknown key (allowed here: {', '.join(sorted(err.schema.get('properties', {})))})"
        elif err.validator == "required":
            missing = err.message.split("'")[1] if "'" in err.message else err.message
            key = _key_path([*err.absolute_path, missing])
            msg = "required key is missing"
        else:
            msg = err.message
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise ConfigError(msg + more, file=path, key=key)
    if cache is not None:
        _cache.put_data(cache, path, entry, data)
    return data


OPTIONAL_FORMAT_MODULES = ("rfc3987_syntax", "rfc3987", "rfc3986_validator", "rfc3339_validator", "isoduration",
                           "fqdn", "idna", "webcolors", "jsonpointer", "uri_template")
"""What ``jsonschema`` imports to check string ``format``s when installed (Jupyter installs them all)."""


def jsonschema_module():
    """``jsonschema``, imported without its optional ``format`` checkers.

    Our schemas use no ``format``; the checkers' modules cost a tenth of a second to import (RFC 3987's grammar
    alone over a second to build) on every command that validates. Only the first import is affected.
    """
    if "jsonschema" in sys.modules:
        return sys.modules["jsonschema"]
    blocked = [m for m in OPTIONAL_FORMAT_MODULES if m not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # makes `import name` raise ImportError
    try:
        import jsonschema
    finally:
        for name in blocked:
            del sys.modules[name]
    return jsonschema


def frozen(mapping: Mapping | None) -> Mapping:
    """A read-only copy of ``mapping`` (empty for None)."""
    return MappingProxyType(dict(mapping or {}))
