"""Steps with ``unchanged:``: skipped on a host when their text, the variables they read, their inputs and their
products are what their last successful run there left, as make skips a target; run as before otherwise.

The job script runs here under bash, run after run in one workdir (each run a run directory of its own, as every
run of reprobook has), with a build step that counts its runs in a file outside the workdir.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from reprobook.core.config import HostSpec, load_paper
from reprobook.core.plan import make_plan
from reprobook.errors import ConfigError
from reprobook.remote.steps import build_script

BUILD = {"name": "build", "cwd": "src",
         "run": 'echo ran >> "$COUNT"; [ -z "${FAIL:-}" ] || exit 9; cat main.c "$RB_INPUTS/extra.h" > prog; echo "$RB_OPT" >> prog',
         "unchanged": {"inputs": [".", "$RB_INPUTS/extra.h", "../lib.a"], "env": ["RB_OPT"], "products": ["prog"]}}


def _paper(tmp_path: Path, steps: list, name: str = "unchfx", **params) -> Path:
    claim = {"id": "c", "title": "t", "statement": "s", "refs": ["r"], "loader": "ozz.lmbench",
             "checks": [{"kind": "at_least", "what": "w", "value": "value", "min": 0}],
             "parameters": {"opt": {"default": "o1", "help": "read by the build"},
                            "other": {"default": "x", "help": "not read by the build"}, **params},
             "setup": steps, "run": [{"name": "use it", "run": "true"}],
             "outputs": {"out": {"path": "out", "glob": "*"}}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"paper": {"id": name, "title": "UNCH", "venue": "tests"},
                                    "repositories": {}, "claims": [claim]}, sort_keys=False))
    return path


@pytest.fixture
def job(tmp_path):
    """Run the job once more (a new run directory) with ``params``; its stdout, exit status and the build's count."""
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "main.c").write_text("int main;\n")
    (work / "lib.a").write_text("lib\n")
    subprocess.run(["git", "init", "-q", str(work / "src")], check=True)
    subprocess.run(["git", "-C", str(work / "src"), "-c", "user.name=t", "-c", "user.email=t@t", "add", "main.c"],
                   check=True)
    subprocess.run(["git", "-C", str(work / "src"), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c"],
                   check=True)
    count = tmp_path / "count"
    runs = []

    def run(params=None, *, steps=None, fresh=None, extra="h1\n", **env):
        paper = load_paper(_paper(tmp_path, steps or [BUILD]))
        claim = paper.claim("c")
        rd = tmp_path / f"run{len(runs)}"
        script = build_script(paper, make_plan(claim, params or {}), HostSpec("h", "h", str(work)), str(rd),
                              inputs={"extra.h": extra}, fresh=fresh)
        (tmp_path / "cmd.sh").write_text(script)
        done = subprocess.run(["bash", str(tmp_path / "cmd.sh")], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "COUNT": str(count), **env}, stdin=subprocess.DEVNULL)
        runs.append(rd)
        ran = len(count.read_text().splitlines()) if count.exists() else 0
        return done, ran
    run.work = work
    return run


def _skipped(out: str) -> bool:
    return "build [unchanged since run run" in out and ": skipped]" in out


def test_a_second_run_with_nothing_changed_skips_the_step_and_says_since_which_run(job):
    out, n = job()
    assert out.returncode == 0 and n == 1 and not _skipped(out.stdout), out.stdout + out.stderr
    out, n = job()
    assert out.returncode == 0 and n == 1, out.stdout + out.stderr
    assert "### reprobook step 1/2: build [unchanged since run run0: skipped]" in out.stdout
    assert "### reprobook step 2/2: use it" in out.stdout   # the later step runs as ever
    out, n = job({"other": "y"})   # a parameter the step does not read
    assert n == 1 and "unchanged since run run0" in out.stdout


@pytest.mark.parametrize("change", ["tracked source", "commit", "untracked input file", "generated input",
                                    "variable it reads", "step text"])
def test_an_edited_input_runs_the_step_again(job, change):
    job()
    assert job()[1] == 1
    params, kw = {}, {}
    src = job.work / "src"
    if change == "tracked source":
        (src / "main.c").write_text("int main2;\n")
    elif change == "commit":
        (src / "new.c").write_text("x\n")
        subprocess.run(["git", "-C", str(src), "add", "new.c"], check=True)
        subprocess.run(["git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "d"],
                       check=True)
    elif change == "untracked input file":
        (job.work / "lib.a").write_text("lib2\n")
    elif change == "generated input":
        kw["extra"] = "h2\n"
    elif change == "variable it reads":
        params["opt"] = "o2"
    else:
        kw["steps"] = [{**BUILD, "run": BUILD["run"] + " # changed"}]
    out, n = job(params, **kw)
    assert out.returncode == 0 and n == 2 and not _skipped(out.stdout), out.stdout + out.stderr
    out, n = job(params, **kw)   # and the run after that skips it again
    assert n == 2 and _skipped(out.stdout), out.stdout


def test_a_deleted_or_changed_product_runs_the_step_again(job):
    job()
    (job.work / "src" / "prog").unlink()
    out, n = job()
    assert n == 2 and not _skipped(out.stdout) and (job.work / "src" / "prog").exists()
    os.utime(job.work / "src" / "prog", (1, 1))   # another build of it
    assert job()[1] == 3


def test_a_failed_run_leaves_no_stamp(job):
    job()
    (job.work / "src" / "main.c").write_text("int main3;\n")
    out, n = job(FAIL="1")
    assert out.returncode == 9 and n == 2
    (job.work / "src" / "main.c").write_text("int main;\n")   # back to what the successful run saw
    out, n = job()
    assert n == 3 and not _skipped(out.stdout), "a failed run's stamp (or the old one) let the step be skipped"
    assert not list((job.work / ".reprobook" / "unchanged").glob("*.tmp"))


def test_fresh_runs_every_step(job):
    job()
    out, n = job(fresh=True)
    assert n == 2 and not _skipped(out.stdout)
    out, n = job(RB_FRESH="1")   # the host's own environment says so
    assert n == 3
    assert job()[1] == 3   # and a fresh run stamps too


def test_inputs_changed_while_it_ran_leave_no_stamp(job):
    steps = [{**BUILD, "run": BUILD["run"] + '; echo "// $RANDOM" >> main.c'}]   # it edits a tracked input
    job(steps=steps)
    out, n = job(steps=steps)
    assert n == 2 and "inputs changed while it ran" in out.stdout


def test_unchanged_is_refused_where_the_control_host_does_not_run_the_step_itself(tmp_path):
    paper = load_paper(_paper(tmp_path, [{**BUILD, "sweep": True}], n={"default": [1, 2], "help": "an axis"}))
    claim = paper.claim("c")
    with pytest.raises(ConfigError, match="'unchanged' is for a step the control host runs itself"):
        build_script(paper, make_plan(claim), HostSpec("h", "h", str(tmp_path)), str(tmp_path / "rd"))
