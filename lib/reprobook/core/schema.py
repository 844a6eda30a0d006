"""Configuration files as data: YAML read and validated against the package's JSON schemas.

Every error names the file and the key path (``claims[1].checks[0].kind``). The frozen objects
made from the data live in `reprobook.core.model` and `reprobook.core.config`.
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

from reprobook.errors import ConfigError

def _key_path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


@lru_cache(maxsize=None)
def _schema(name: str) -> dict:
    return json.loads(resources.files("reprobook.core.schemas").joinpath(f"{name}.json").read_text())


def load_yaml(path: Path, schema: str) -> dict:
    """Read ``path`` and validate it against the named schema.

    Raises
    ------
    ConfigError
        If the file is missing, is not YAML, or breaks the schema; the
        message names the file and the key path.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError("file not found", file=path)
    try:
        data = yaml.safe_load(path.read_text()) or {}
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
    return data


def jsonschema_module():
    """``jsonschema``, imported without its optional RFC 3987 format checker.

    Our schemas use no ``format``; that checker's grammar takes over a second
    to build at import, on every command. Only the first import is affected.
    """
    if "jsonschema" in sys.modules:
        return sys.modules["jsonschema"]
    block = "rfc3987_syntax" not in sys.modules
    if block:
        sys.modules["rfc3987_syntax"] = None  # makes `import rfc3987_syntax` raise ImportError
    try:
        import jsonschema
    finally:
        if block:
            del sys.modules["rfc3987_syntax"]
    return jsonschema


def frozen(mapping: Mapping | None) -> Mapping:
    """A read-only copy of ``mapping`` (empty for None)."""
    return MappingProxyType(dict(mapping or {}))
