"""ShellCheck over every job script the engine generates for the project's claims, and over the scripts those carry
inside them (a role's share on each of its hosts, a guest's step), each as a host runs it: preamble included.

ShellCheck's errors (its ``error`` severity: syntax a shell misreads, constructs that cannot work) fail the test;
warnings and style notes do not. ShellCheck comes from Debian (``.ci/install-system-deps.sh`` installs it).
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from reprobook.core.plan import make_plan
from reprobook.core.config import HostSpec, load_project
from reprobook.remote.placement import Placement
from reprobook.remote.steps import build_script

ROOT = Path(__file__).resolve().parents[2]
# the scripts a job carries base64-encoded: `rb_par HOST B64` (a role's share) and `echo B64 | base64 -d` (a guest's step)
_EMBEDDED = re.compile(r"(?:rb_par \S+ |echo )([A-Za-z0-9+/]{40,}={0,2})")


def _shellcheck() -> str:
    found = shutil.which("shellcheck")
    if not found:
        import os
        if os.environ.get("CI"):
            pytest.fail("CI is set, so this test must run, but shellcheck is missing (.ci/install-system-deps.sh)")
        pytest.skip("shellcheck is missing: install it with .ci/install-system-deps.sh")
    return found


def _scripts(tmp_path: Path) -> dict[str, str]:
    """Every claim's job script (its roles on hosts of their own, so that their shares are carried), and each script
    carried inside one, by a name that says where it comes from."""
    project = load_project(ROOT)
    out: dict[str, str] = {}
    for claim in project.all_claims():
        paper = project.paper(claim.paper)
        params = {"guest_port": 2222} if "guest_port" in claim.parameters else {}
        workdir = str(tmp_path / "w")
        if len(claim.roles) > 1:
            names = {role: f"{role}1" for role in claim.roles}
            placement = Placement({role: (name,) for role, name in names.items()}, claim.control_role)
            members = {n: HostSpec(n, n, workdir) for n in names.values()}
            script = build_script(paper, make_plan(claim, params), members[names[claim.control_role]], str(tmp_path / "rd"),
                                  placement=placement, members=members)
        else:
            script = build_script(paper, make_plan(claim, params), HostSpec("h", "h", workdir), str(tmp_path / "rd"))
        out[claim.key] = script
        for k, b64 in enumerate(_EMBEDDED.findall(script), 1):
            out[f"{claim.key} (carried script {k})"] = base64.b64decode(b64).decode()
    return out


def test_every_generated_step_script_passes_shellcheck(tmp_path):
    shellcheck = _shellcheck()
    scripts = _scripts(tmp_path)
    carried = [name for name in scripts if "carried" in name]
    assert len(scripts) > 20 and carried, "the project's claims give job scripts, some carrying role or guest scripts"
    files: dict[str, tuple[str, list[str]]] = {}
    for k, (name, text) in enumerate(scripts.items()):
        path = tmp_path / f"script{k}.sh"
        text = text if text.startswith("#!") else "#!/bin/bash\n" + text
        path.write_text(text)
        files[str(path)] = (name, text.splitlines())
    # one run over all of them (ShellCheck starts slowly)
    res = subprocess.run([shellcheck, "--severity=error", "--format=json", "--shell=bash", *files],
                         capture_output=True, text=True)
    assert res.returncode in (0, 1), f"shellcheck failed to run: {res.stderr}"
    errors = []
    for c in json.loads(res.stdout or "[]"):
        name, lines = files[c["file"]]
        errors.append(f"{name}, line {c['line']}: SC{c['code']} {c['message']}\n    {lines[c['line'] - 1].strip()}")
    assert not errors, "ShellCheck errors in the generated step scripts:\n" + "\n".join(errors)


def test_shellcheck_finds_an_error_in_a_step(tmp_path):
    """The check above can fail: a step with an error ShellCheck knows is reported."""
    shellcheck = _shellcheck()
    path = tmp_path / "bad.sh"
    path.write_text("#!/bin/bash\nif [ -n \"$x\" ]; then echo yes\n")   # no fi
    res = subprocess.run([shellcheck, "--severity=error", "--format=json", str(path)], capture_output=True, text=True)
    assert res.returncode == 1 and json.loads(res.stdout)
