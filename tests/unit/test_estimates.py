"""Every estimate is the estimate of the scale it is shown for: learned from the recorded runs at that scale (their
step times), else the scale's own figure in the paper file, else the steps' estimates at the scale's sweep."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reprobook.core.config import load_project
from reprobook.core.plan import learn, make_plan, step_times
from reprobook.core.runs import RunStore

ROOT = Path(__file__).resolve().parents[2]
PROJECT = load_project(ROOT)


def _plan(key, **params):
    claim = PROJECT.claim(key)
    return make_plan(claim, params, paper=PROJECT.paper(claim.paper), source="live")


def test_a_rehearsal_is_not_estimated_at_the_papers_size():
    paper, rehearsal = _plan("aardvark/validator-throughput"), _plan("aardvark/validator-throughput", scale="rehearsal")
    assert paper.expected_minutes > 500                 # the guide's nine hours or so
    assert rehearsal.expected_minutes == 6              # the paper file's figure for the rehearsal
    assert "the paper file's figure for a run at the rehearsal scale" in rehearsal.describe()
    assert "about 6 minutes" in rehearsal.describe() and "hours" not in rehearsal.describe().split("expected:")[1]
    # a scale with its own steps and no figure: its steps' estimates, a sweep step once per point of ITS sweep
    pesto = _plan("pesto/sample-runs", scale="rehearsal")
    steps = {s.name: s for s in (*pesto.claim.setup, *pesto.claim.run)}
    want = sum(s.expected_minutes * (len(pesto.sweep) if s.sweep else 1) for s in steps.values())
    assert len(pesto.sweep) == 2 and pesto.expected_minutes == pytest.approx(want)


LOG = """\
### reprobook step 1/4: check out aardvark-prototype
### reprobook: step 1 done in 12 s
### reprobook step 2/4: install build dependencies (apt; skipped when they are all there) (expected 3 min)
### reprobook: step 2 done in 1 s
### reprobook step 3/4: set the source constants from the parameters (iterations, warmup) [skipped: done in an earlier attempt]
### reprobook step 4-1/4: Rust: nightly (expected 2 min) [point 1/2: x=1]
### reprobook: step 4-1 done in 30 s
"""


def test_step_times_are_read_from_a_job_log():
    assert step_times(LOG) == {"check out aardvark-prototype": [12.0],
                               "install build dependencies (apt; skipped when they are all there)": [1.0],
                               "Rust: nightly": [30.0]}


def test_an_estimate_is_learned_from_the_recorded_runs_at_its_scale(tmp_path):
    key = "aardvark/vector-commitments"
    claim = PROJECT.claim(key)
    plan = _plan(key, scale="rehearsal")
    store = RunStore(tmp_path)
    names = [n for n, _, _ in plan.steps]
    log = "".join(f"### reprobook step {i}/{len(names)}: {n}\n### reprobook: step {i} done in {10 * i} s\n"
                  for i, n in enumerate(names, 1))
    for rid, scale in (("r1", "rehearsal"), ("p1", "paper")):
        run = store.create(claim, rid, source="live", scale=scale, status="succeeded")
        (run.path / "log.txt").write_text(log if scale == "rehearsal" else log.replace(" s\n", "0000 s\n"))
    got = learn(plan, store.runs(claim))
    assert got.learned_runs == 1   # the paper-scale run says nothing of a rehearsal
    assert got.expected_minutes == pytest.approx(sum(10 * i for i in range(1, len(names) + 1)) / 60)
    assert "the step times of 1 recorded run(s) at the rehearsal scale" in got.describe()
    assert learn(_plan(key), store.runs(claim)).learned_runs == 1   # and the rehearsal nothing of the paper's


def test_reprobook_plan_shows_the_learned_estimate(tmp_path):
    claim = PROJECT.claim("aardvark/vector-commitments")
    names = [n for n, _, _ in _plan(claim.key, scale="rehearsal").steps]
    store = RunStore(tmp_path)
    run = store.create(claim, "r1", source="live", scale="rehearsal", status="succeeded")
    # the vector-commitments rehearsal that took 2 min 43 s: 163 s in all
    (run.path / "log.txt").write_text("".join(f"### reprobook step {i}/{len(names)}: {n}\n"
                                              f"### reprobook: step {i} done in {163 if i == len(names) else 0} s\n"
                                              for i, n in enumerate(names, 1)))
    env = {**os.environ, "REPROBOOK_RUNS": str(tmp_path), "REPROBOOK_ROOT": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "reprobook", "plan", claim.key, "-p", "scale", "rehearsal"],
                         capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "expected:     about 3 minutes (the step times of 1 recorded run(s) at the rehearsal scale)" in out.stdout
