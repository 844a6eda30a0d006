"""The standard validators reprobook's outputs are held to, each run from its own virtual environment.

``roc-validator`` (RO-Crate, with the Process Run Crate profile) and ``cffconvert`` (CITATION.cff) cannot share the
project's environment: every roc-validator release asks for ``rich<14`` while the project's import-linter asks for
``rich>=14.2``, and cffconvert 2.0 for ``jsonschema~=3.2`` while the project uses jsonschema 4. So ``make test`` makes
``.venv-validators`` from ``tests/validators.txt`` (every package pinned), and the tests call them there.

This machine reaches no web site but the package registries, and a crate's ``@context`` names RO-Crate's JSON-LD
context on w3id.org. The validator's own offline mode serves web resources from its HTTP cache; this module puts the
context document into that cache first, from the copy the ``rocrate`` package ships (its releases up to 0.15 ship the
RO-Crate 1.1 context, the document w3id.org serves), so each validation runs as it would online, without the network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-validators"   # made by `make validators` (a part of `make test`)
PYTHON = VENV / "bin" / "python"

_SCRIPT = r'''
import importlib.resources, io, json, sys
from urllib3 import HTTPResponse
from pathlib import Path
import requests
from requests_cache import CachedSession

cache, crates = sys.argv[1], sys.argv[2:]
context_url = "https://w3id.org/ro/crate/1.1/context"
document = importlib.resources.files("rocrate").joinpath("data/ro-crate.jsonld").read_text("utf8")
assert json.loads(document)["@id"] == context_url, "the rocrate package ships another context"
session = CachedSession(cache_name=cache, backend="sqlite", allowable_methods=("GET",), expire_after=-1)
response = requests.Response()
response.status_code, response.url, response.encoding = 200, context_url, "utf-8"
response._content = document.encode()
response.headers["Content-Type"] = "application/ld+json"
response.request = requests.Request("GET", context_url).prepare()
response.raw = HTTPResponse(body=io.BytesIO(b""), headers=dict(response.headers), status=200, preload_content=False,
                            request_url=context_url)
session.cache.save_response(response)
session.close()

from rocrate_validator import services
from rocrate_validator.models import Severity
out = {}
for crate in crates:
    settings = services.ValidationSettings(rocrate_uri=crate, profile_identifier="process-run-crate-0.5",
                                           requirement_severity=Severity.RECOMMENDED, offline=True,
                                           cache_path=Path(cache), skip_availability_check=True)
    result = services.validate(settings)
    out[crate] = [{"severity": i.severity.name, "check": i.check.identifier, "message": i.message}
                  for i in result.get_issues()]
print(json.dumps(out))
'''


def available() -> bool:
    return PYTHON.is_file()


def rocrate_issues(crates: list[Path], cache_dir: Path) -> dict[str, list[dict]]:
    """Validate each crate (a directory or a zip) against the Process Run Crate 0.5 profile (and RO-Crate 1.1 under
    it) at the recommended level and above; returns crate -> its issues (an empty list: it passes)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([str(PYTHON), "-c", _SCRIPT, str(cache_dir / "http_cache"), *map(str, crates)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode:
        raise AssertionError(f"roc-validator did not run (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def cffconvert(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``cffconvert ARGS`` in ``cwd``, from the validators' environment."""
    return subprocess.run([str(VENV / "bin" / "cffconvert"), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=60)


if __name__ == "__main__":   # python -m tests.support.validators CRATE...: the issues, for a person to read
    print(json.dumps(rocrate_issues([Path(p) for p in sys.argv[1:]], Path("/tmp/reprobook-rocv-cache")), indent=1))
