"""Verus's persistent-memory log (``verus/pm-log``) as a live claim: what can be checked without building it.

The real build and run in a guest are ``make live-pmlog`` (tests/live/test_pmlog_live.py). Here: the scales
and the deviations each brings; the generated patch step run for real on a checkout of verified-storage at
the pinned commit (the source constants set, the recorded tmpfs patch applied, then all of it taken back
for a run at the paper's scale); the parameter check refusing what the steps cannot use; the loader
computing throughput from what a run appended.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from reprobook.core.config import load_project
from reprobook.core.loaders import load
from reprobook.errors import OutputError
from reprobook.remote.steps import param_env
from reprobook.sources import Outputs
from reprobook.core.plan import make_plan
from tests.support.gitmirror import GIT_MIRROR, repaired_copy

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT.parent / "shared" / "artifacts" / "github.com"
COMMIT = "31b2256b06413c71245baf4b2bec9cea5b20e51b"
SRC = "verified-storage/artifact_eval/experiment/verif-storage-eval/src"


@pytest.fixture(scope="module")
def claim():
    return load_project(ROOT).claim("verus/pm-log")


def _step(claim, prefix: str):
    (step,) = [s for s in (*claim.setup, *claim.run) if s.name.startswith(prefix)]
    return step


def _run_step(step, params: dict, cwd: Path, claim) -> subprocess.CompletedProcess:
    env = {**os.environ, **param_env(make_plan(claim, params))}
    return subprocess.run(["bash", "-c", "set -euo pipefail\n" + step.run], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)


def test_the_scales_and_the_deviations_each_brings(claim):
    assert list(claim.scales) == ["paper", "rehearsal"]
    paper = claim.deviations_for({})
    assert [d.kind for d in paper] == ["setup"] and "loopback only" in paper[0].what
    rehearsal = claim.deviations_for({"scale": "rehearsal"})
    kinds = [d.kind for d in rehearsal]
    assert kinds == ["persistent memory", "machine", "toolchain", "patch", "patch"], kinds
    recorded, constants = rehearsal[3], rehearsal[4]
    assert "pmlog-tmpfs.patch" in recorded.what and '+    if device == "none" {' in recorded.diff
    assert sum(1 for l in constants.diff.splitlines() if l.startswith("+") and not l.startswith("+++")) == 2 and "+const BYTES_TO_APPEND: usize = 1024 * 1024 * 1024 * 1;" in constants.diff
    plan = make_plan(claim, {"scale": "rehearsal"})
    assert [dict(p)["append_size"] for p in plan.sweep] == [128, 256, 512, 1024, 4096, 8192, 65536, 131072, 262144]
    assert [s.where for s in claim.run] == ["guest", "host"]


@pytest.fixture
def checkout(tmp_path):
    """verified-storage at the pinned commit, cloned from a copy of the mirror (whose refs/ directory is missing)."""
    bare = GIT_MIRROR / "microsoft" / "verified-storage.git"
    if not bare.is_dir():
        pytest.skip(f"the git mirror {bare} is absent")
    copy = repaired_copy("microsoft/verified-storage.git", tmp_path / "vs.git")
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(copy), str(work / "verified-storage")], check=True)
    subprocess.run(["git", "-C", str(work / "verified-storage"), "checkout", "-q", "--detach", COMMIT], check=True)
    return work


def test_the_patch_step_sets_the_sizes_applies_the_tmpfs_patch_and_a_paper_run_takes_both_back(claim, checkout):
    step = _step(claim, "set the source constants")
    log_rs, main_rs = checkout / SRC / "log.rs", checkout / SRC / "main.rs"
    committed = main_rs.read_text(), log_rs.read_text()
    out = _run_step(step, {"scale": "rehearsal"}, checkout, claim)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "patch pmlog-tmpfs.patch: applied" in out.stdout
    assert "pub const LOG_SIZE: usize = 1024 * 1024 * 1024 * 1;" in log_rs.read_text()
    main = main_rs.read_text()
    assert "const BYTES_TO_APPEND: usize = 1024 * 1024 * 1024 * 1;" in main and 'if device == "none" {' in main
    assert "Some(mount)" in main
    # the same again (a new run at the same sizes): both files end as they were, time stamps included, so cargo
    # rebuilds nothing, although the step restores main.rs as committed and patches it anew
    stamps = main_rs.stat().st_mtime_ns, log_rs.stat().st_mtime_ns
    again = _run_step(step, {"scale": "rehearsal"}, checkout, claim)
    assert again.returncode == 0, again.stdout + again.stderr
    assert main_rs.read_text() == main and (main_rs.stat().st_mtime_ns, log_rs.stat().st_mtime_ns) == stamps
    paper = _run_step(step, {}, checkout, claim)
    assert paper.returncode == 0, paper.stdout + paper.stderr
    assert "patch pmlog-tmpfs.patch: not wanted by this run" in paper.stdout
    assert (main_rs.read_text(), log_rs.read_text()) == committed


@pytest.mark.parametrize("params, words", [
    ({"pm": "ramdisk"}, "pm must be dax or tmpfs, not 'ramdisk'"),
    ({"guest": "docker"}, "guest must be qemu or running, not 'docker'"),
    ({"iterations": 0}, "must be positive whole numbers (got '0')"),
    ({"append_size": [128, -4]}, "must be positive whole numbers (got '-4')"),
])
def test_the_parameter_check_refuses_what_the_steps_cannot_use(claim, tmp_path, params, words):
    out = _run_step(_step(claim, "check the parameters"), params, tmp_path, claim)
    assert out.returncode == 2 and words in out.stderr, out.stdout + out.stderr


def test_the_parameter_check_passes_the_rehearsal_and_says_what_it_will_do(claim, tmp_path):
    out = _run_step(_step(claim, "check the parameters"), {"scale": "rehearsal"}, tmp_path, claim)
    assert out.returncode == 0, out.stderr
    assert "guest=running pm=tmpfs rust=host: 2 iteration(s) of 1 GiB appended to a 1 GiB log" in out.stdout


def _authors_results() -> list[Path]:
    d = ARTIFACTS / "microsoft" / "verified-storage" / COMMIT / "artifact_eval" / "experiment" / "example_dram_results"
    if not d.is_dir():
        pytest.skip(f"the artifacts mirror {d} is absent")
    return sorted(d.glob("results_*.csv"))


def test_throughput_follows_from_what_the_run_appended(claim):
    files = tuple(_authors_results())
    guide = load(claim, Outputs(claim.key, "reference", "shipped", files={"results": files}))
    one = load(claim, Outputs(claim.key, "live", "a run", files={"results": files}, parameters={"append_gib": 1}))
    assert list(one["log"]) == list(guide["log"])
    assert (one["mib_per_s"] * 8).round(6).tolist() == guide["mib_per_s"].round(6).tolist()
    with pytest.raises(OutputError) as err:
        load(claim, Outputs(claim.key, "live", "a run", files={"results": files}, parameters={"append_gib": "0"}))
    assert "append_gib" in str(err.value) and "not a positive number of GiB" in str(err.value)
