"""Steps: the job script of a live run, built so that a run can be resumed at the step that failed.

A live run is one detached job (see `reprobook.jobs`) whose script checks out
the paper's repositories at their pinned commits and then runs the claim's
setup and run steps in order. Each step records its completion on the host,
in ``<run dir>/steps/<n>.done``, with a hash of the step's text. When a run
is launched again after it failed (same claim, host and parameters: the same
run id), the script skips every step already done with the same text, says
so in the log, and starts again at the first step that is not; once one step
runs, every later step runs too. Different parameters make a different run
id, and so start from scratch.

Parameters reach the steps as environment variables ``RB_<NAME>``, each value
quoted; the step commands in the paper file read them from there.

A step marked ``where: guest`` runs on the claim's *guest*: a virtual machine the host
boots, or any machine only the host can reach (QEMU's forwarded SSH port, for
instance). The host's job runs it over SSH, so the whole run stays one detached job on
the host, and the client may come and go. The guest is named by the claim's
parameters ``guest_port`` (required), ``guest_host`` (default ``localhost``),
``guest_user`` (default ``root``) and ``guest_key`` (a private key on the host; ``~/``
and paths relative to the host's workdir are allowed). The step's commands reach the
guest as they are, with the parameters exported as on the host; its ``cwd`` is a
directory on the guest (default: the guest user's home). Host steps can call
``rb_guest COMMAND...`` to run a command there too (to upload or copy back files with
``tar``), so that fetching the outputs stays a matter of the host. The guest's host key
is trusted on first use and kept in the run's directory (``guest_known_hosts``): a VM
image's key is the image's own, and it is the host, not the client, that connects.
"""

from __future__ import annotations

import base64
import hashlib
import shlex
from typing import Mapping

from .config import Claim, HostSpec, Paper, Repository, Step
from .errors import ConfigError

STEP_MARKER = "### reprobook step"
"""The prefix of the log line that starts each step (`reprobook.jobs` reads the last one as the current step)."""

_PRELUDE = r"""
rb_force=0
mkdir -p "$RB_RUN_DIR/steps"
rb_begin() {  # index total name hash: 0 = run this step, 1 = skip it (done in an earlier attempt)
  if [ "$rb_force" = 0 ] && [ "$(cat "$RB_RUN_DIR/steps/$1.done" 2>/dev/null)" = "$4" ]; then
    echo "### reprobook step $1/$2: $3 [skipped: done in an earlier attempt]"
    return 1
  fi
  rb_force=1
  rm -f "$RB_RUN_DIR/steps/$1.done"
  echo "### reprobook step $1/$2: $3"
  rb_t0=$(date +%s)
  return 0
}
rb_end() {  # index hash
  printf '%s\n' "$2" > "$RB_RUN_DIR/steps/$1.done"
  echo "### reprobook: step $1 done in $(( $(date +%s) - rb_t0 )) s"
}
rb_checkout() {  # url commit dir
  if [ ! -d "$3/.git" ]; then git clone -q --no-checkout "$1" "$3"; fi
  git -C "$3" cat-file -e "$2^{commit}" 2>/dev/null || git -C "$3" fetch -q origin "$2" 2>/dev/null || git -C "$3" fetch -q origin
  git -C "$3" checkout -q --detach "$2"
  git -C "$3" submodule update -q --init --recursive
  echo "$3 $(git -C "$3" rev-parse HEAD)" >> "$RB_RUN_DIR/checkout.txt"
  git -C "$3" submodule status --recursive | while read -r sha path rest; do
    echo "$3/$path ${sha#[-+U ]}" >> "$RB_RUN_DIR/checkout.txt"
  done
}
rb_guest() {  # command...: run it on the claim's guest (parameters guest_host, guest_port, guest_user, guest_key)
  local key=${RB_GUEST_KEY:-} rc=0
  case "$key" in "") ;; "~/"*) key="$HOME/${key#\~/}" ;; /*) ;; *) key="$RB_WORKDIR/$key" ;; esac
  ssh -F /dev/null -o BatchMode=yes -o ConnectTimeout=20 -o ServerAliveInterval=30 -o ServerAliveCountMax=10 \
      -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile="$RB_RUN_DIR/guest_known_hosts" \
      -o GlobalKnownHostsFile=/dev/null -o LogLevel=ERROR ${key:+-o IdentitiesOnly=yes -i "$key"} \
      -p "${RB_GUEST_PORT:?the claim names no guest_port}" -l "${RB_GUEST_USER:-root}" "${RB_GUEST_HOST:-localhost}" \
      -- "$@" || rc=$?
  if [ "$rc" = 255 ]; then
    echo "reprobook: ssh to the guest ${RB_GUEST_USER:-root}@${RB_GUEST_HOST:-localhost}:$RB_GUEST_PORT ended with 255:" \
         "the guest could not be reached (is it up?), or the command there exited 255" >&2
  fi
  return "$rc"
}
rb_expect_submodule() {  # dir path commit
  got=$(git -C "$1/$2" rev-parse HEAD)
  if [ "$got" != "$3" ]; then echo "submodule $2 is at $got, expected $3" >&2; exit 3; fi
}
"""


def param_env(claim: Claim, params: Mapping) -> dict[str, str]:
    """``RB_<NAME>`` for each of the claim's parameters, defaults filled in (`ConfigError` for unknown names)."""
    env = {}
    for name, val in claim.resolve_params(params).items():
        env["RB_" + name.upper()] = str(val).lower() if isinstance(val, bool) else str(val)
    return env


def _checkout_lines(repo: Repository, workdir: str) -> list[str]:
    d = f"{workdir.rstrip('/')}/{repo.checkout}"
    q = shlex.quote
    lines = [f"rb_checkout {q(repo.url)} {q(repo.commit)} {q(d)}"]
    for sub, sha in repo.submodules.items():
        lines.append(f"rb_expect_submodule {q(d)} {q(sub)} {q(sha)}")
    return lines


def step_hash(name: str, cwd: str, body: str) -> str:
    """What identifies a step's work: its name, directory and commands (a changed step runs again)."""
    return hashlib.sha256("\0".join((name, cwd, body)).encode()).hexdigest()[:16]


GUEST_PARAMETERS = ("guest_host", "guest_port", "guest_user", "guest_key")
"""The claim parameters that name its guest (only ``guest_port`` is required)."""


def _guest_body(step: Step, env: Mapping[str, str]) -> str:
    """The host's command for a guest step: its script, with the parameters, run on the guest over SSH.

    The script travels base64-encoded on the SSH command line, so the guest's shell
    receives it byte for byte and its standard input stays free (a step that reads
    stdin gets end-of-file, not the rest of its own script).
    """
    q = shlex.quote
    lines = [f"export {k}={q(v)}" for k, v in env.items()] + ["set -euo pipefail"]
    if step.cwd:
        lines.append(f"cd {q(step.cwd)}")
    script = "\n".join(lines) + "\n" + step.run.rstrip() + "\n"
    b64 = base64.b64encode(script.encode()).decode()
    remote = f'bash -c "$(echo {b64} | base64 -d)" reprobook-guest-step'
    return f"rb_guest {q(remote)} < /dev/null"


def plan(paper: Paper, claim: Claim) -> list[tuple[str, Step | None]]:
    """The steps of a live run in order: the checkout (``None``), then setup and run steps."""
    repos = paper.repositories_for(claim)
    steps: list[tuple[str, Step | None]] = [("check out " + ", ".join(r.name for r in repos), None)] if repos else []
    return steps + [(s.name, s) for s in claim.setup + claim.run]


def build_script(paper: Paper, claim: Claim, host: HostSpec, params: Mapping, remote_run_dir: str) -> str:
    """The job script: environment, checkouts at the pinned commits, then the setup and run steps, each resumable."""
    q = shlex.quote
    env = {"RB_RUN_DIR": remote_run_dir, "RB_WORKDIR": host.workdir, **param_env(claim, params)}
    git_config = [(f"url.{new}.insteadOf", old) for old, new in host.git_url_rewrites.items()]
    if any(new.startswith(("/", "file:")) for new in host.git_url_rewrites.values()):
        # a local mirror: let submodules be cloned from it too (git refuses file:// submodules by default)
        git_config.append(("protocol.file.allow", "always"))
    if git_config:
        env["GIT_CONFIG_COUNT"] = str(len(git_config))
        for i, (key, value) in enumerate(git_config):
            env[f"GIT_CONFIG_KEY_{i}"] = key
            env[f"GIT_CONFIG_VALUE_{i}"] = value
    env["GIT_TERMINAL_PROMPT"] = "0"
    out = ["#!/bin/bash", f"# reprobook: {claim.key}", "set -euo pipefail"]
    out += [f"export {k}={q(str(v))}" for k, v in env.items()]
    out.append(_PRELUDE)
    out.append(f"mkdir -p {q(host.workdir)} && cd {q(host.workdir)}")
    steps = plan(paper, claim)
    if any(step and step.where == "guest" for _, step in steps) and "guest_port" not in claim.parameters:
        raise ConfigError(f"{claim.key} has steps on a guest but no parameter guest_port to reach it by "
                          f"(the guest is named by the parameters {', '.join(GUEST_PARAMETERS)})")
    guest_env = param_env(claim, params)
    total = len(steps)
    for i, (name, step) in enumerate(steps, 1):
        minutes = f" (expected {step.expected_minutes:g} min)" if step and step.expected_minutes else ""
        if step is None:
            body = "\n".join(line for repo in paper.repositories_for(claim) for line in _checkout_lines(repo, host.workdir))
            cwd = host.workdir
        elif step.where == "guest":
            cwd = step.cwd
            body = f"( cd {q(host.workdir)} && set -euo pipefail\n{_guest_body(step, guest_env)}\n)"
        else:
            cwd = step.cwd if step.cwd.startswith("/") else f"{host.workdir.rstrip('/')}/{step.cwd}".rstrip("/")
            body = f"( cd {q(cwd)} && set -euo pipefail\n{step.run.rstrip()}\n)"
        h = step_hash(name, cwd, body)
        out.append(f"if rb_begin {i} {total} {q(name + minutes)} {h}; then\n{body}\nrb_end {i} {h}\nfi")
    out.append('echo "### reprobook: all steps done"')
    return "\n".join(out) + "\n"
