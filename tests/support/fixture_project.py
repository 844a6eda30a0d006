"""A throwaway reprobook project around a FIXTURE artifact, for live-path tests.

The fixture artifact is a small git repository made here (with a submodule),
served to the SSH test hosts as a mirror of ``https://github.com/`` through
the hosts' ``git_url_rewrites``. Its benchmark writes Aardvark-format
``outN.txt`` logs slowly, so tests can cut connections while it runs. None of
this is the real Aardvark artifact; it only speaks its output format.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]

# seconds per 100,000-operation trial -> 2,500-ish ops/s at 32 cores, ~300 at 1 core
_BENCH = r"""#!/bin/bash
# FIXTURE benchmark: Aardvark-format go test logs, written slowly.
set -eu
duration=${RB_DURATION:-4}
steps=4
for i in $(seq 1 $steps); do
  echo "fixture step $i/$steps"
  sleep "$(awk -v d="$duration" -v s="$steps" 'BEGIN{print d/s}')"
done
printf '=== RUN   TestTimeWorkload\nm time: 5m40s\nc time: 5m50s\nd time: 11m30s\n--- PASS: TestTimeWorkload\n' > out1.txt
printf '=== RUN   TestTimeWorkload\nm time: 34s\nc time: 45.5s\nd time: 1m7s\n--- PASS: TestTimeWorkload\n' > out32.txt
if [ "${RB_FAIL:-no}" = "yes" ]; then echo "fixture: failing on purpose after writing out1.txt" >&2; exit 7; fi
echo "fixture done"
"""


def _git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "fixture", "GIT_AUTHOR_EMAIL": "f@example.org",
                        "GIT_COMMITTER_NAME": "fixture", "GIT_COMMITTER_EMAIL": "f@example.org"})
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True).stdout.strip()


@dataclass
class FixtureProject:
    root: Path
    mirror: Path
    commit: str
    sub_commit: str
    workdirs: dict


def make_git_mirror(base: Path) -> tuple[Path, str, str]:
    """Bare repos ``<base>/github.com/fixture/{bench,helper}``: bench pinned at a commit with helper as submodule."""
    mirror = base / "git-mirror"
    work = base / "git-work"
    (work / "helper").mkdir(parents=True)
    (work / "helper" / "README").write_text("FIXTURE submodule\n")
    _git("init", "-q", "-b", "main", cwd=work / "helper")
    _git("add", ".", cwd=work / "helper")
    sub = _git("commit", "-q", "-m", "fixture helper", cwd=work / "helper")
    (mirror / "github.com" / "fixture").mkdir(parents=True)
    _git("clone", "-q", "--bare", str(work / "helper"), str(mirror / "github.com/fixture/helper"), cwd=base)

    (work / "bench").mkdir()
    (work / "bench" / "bench.sh").write_text(_BENCH)
    os.chmod(work / "bench" / "bench.sh", 0o755)
    _git("init", "-q", "-b", "main", cwd=work / "bench")
    # add the submodule by hand so its URL is the GitHub one (rewritten to the mirror on the host)
    subprocess.run(["git", "-c", "protocol.file.allow=always", "submodule", "add", "-q",
                    str(mirror / "github.com/fixture/helper"), "helper"], cwd=work / "bench", check=True,
                   capture_output=True)
    subprocess.run(["git", "config", "-f", ".gitmodules", "submodule.helper.url", "https://github.com/fixture/helper"],
                   cwd=work / "bench", check=True)
    _git("add", ".", cwd=work / "bench")
    commit = _git("commit", "-q", "-m", "fixture bench", cwd=work / "bench")
    _git("clone", "-q", "--bare", str(work / "bench"), str(mirror / "github.com/fixture/bench"), cwd=base)
    return mirror, commit, sub


def make_project(base: Path, hosts: dict[str, str], *, extra_hosts_yaml: dict | None = None) -> FixtureProject:
    """A project root with the real notebooks' shape, a ``fixture`` paper and hosts ``{name: ssh alias}``."""
    base = Path(base)
    mirror, commit, sub = make_git_mirror(base)
    root = base / "project"
    (root / "configs" / "papers").mkdir(parents=True)
    (root / "_config.yml").write_text("title: fixture\n")
    workdirs = {}
    hosts_yaml = {"hosts": {}}
    for name, alias in hosts.items():
        wd = base / "remote" / name
        wd.mkdir(parents=True)
        workdirs[name] = wd
        hosts_yaml["hosts"][name] = {"ssh": alias, "workdir": str(wd),
                                     "git_url_rewrites": {"https://github.com/": f"file://{mirror}/github.com/"}}
    hosts_yaml["hosts"].update(extra_hosts_yaml or {})
    (root / "configs" / "hosts.yaml").write_text(yaml.safe_dump(hosts_yaml))

    paper = yaml.safe_load((ROOT / "configs" / "papers" / "aardvark.yaml").read_text())
    claim = next(c for c in paper["claims"] if c["id"] == "validator-throughput")
    for key in ("scales", "patches", "deviations", "repositories"):  # the real claim's name its own parameters, not the fixture's
        claim.pop(key, None)
    for chk in claim.get("checks", []):
        chk.pop("needs", None)
    claim.update(
        statement="FIXTURE claim in the validator-throughput format.",
        requires={"cores": 1, "why": "fixture"},
        setup=[{"name": "fixture build (counts its runs in build-count.txt)",
                "run": 'echo built >> "$RB_WORKDIR/build-count.txt"'}],
        parameters={"duration": {"default": 4.0, "help": "seconds the fixture benchmark takes"},
                    "fail": {"default": "no", "help": "yes: exit 7 after writing out1.txt"},
                    "label": {"default": "x", "help": "free text that must reach the host literally"}},
        run=[{"name": "fixture benchmark", "cwd": "bench", "expected_minutes": 0.1,
              "run": 'printf "%s" "$RB_LABEL" > label.txt\n'
                     'if [ -e "$RB_WORKDIR/fail-once" ]; then echo "fixture: fail-once is there" >&2; exit 9; fi\n'
                     './bench.sh'}],
        outputs={"logs": {"path": "bench", "glob": "out*.txt"}, "label": {"path": "bench", "glob": "label.txt"}},
        reference={},
    )
    fixture = {
        "paper": {"id": "fixture", "title": "FIXTURE paper", "venue": "tests"},
        "repositories": {"bench": {"url": "https://github.com/fixture/bench", "commit": commit,
                                   "submodules": {"helper": sub}}},
        "published": paper["published"],
        "claims": [claim],
    }
    (root / "configs" / "papers" / "fixture.yaml").write_text(yaml.safe_dump(fixture, sort_keys=False))
    nb = (ROOT / "notebooks" / "aardvark" / "validator-throughput.ipynb").read_text()
    (root / "notebooks" / "fixture").mkdir(parents=True)
    (root / "notebooks" / "fixture" / "validator-throughput.ipynb").write_text(
        nb.replace("aardvark/validator-throughput", "fixture/validator-throughput"))
    return FixtureProject(root, mirror, commit, sub, workdirs)
