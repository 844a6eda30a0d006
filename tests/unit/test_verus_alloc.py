"""Verus-mimalloc (``verus/mimalloc``) at rehearsal scale: what can be checked without building it.

The real build and run are ``make live-verus-alloc`` (tests/live/test_verus_alloc_live.py). Here: the three recorded
patches apply to the mirrored commits they name; the rustc wrapper of the compile-pass patch, run with a stand-in
rustc that prints its arguments, gives each crate what Verus 097ac7e gives it (the feature and lint lists compared
with Verus's own source in the mirror); the scales, the deviations and which checks a rehearsal judges; the loader
on a real rehearsal log.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from reprobook.core.checks import check_claim
from reprobook.core.config import load_project
from reprobook.core.loaders import load
from reprobook.sources import Outputs
from tests.support.gitmirror import GIT_MIRROR

ROOT = Path(__file__).resolve().parents[2]
PATCHES = ROOT / "configs" / "patches" / "verus"
DATA = Path(__file__).parent / "data" / "verus-mimalloc"
VERUS = "097ac7ed283ae60375cd9b2b6017b3c629883b2b"
VMA = "6ee4b4fc8ac107f10d3ad420a2c42e26e3033ba7"


@pytest.fixture(scope="module")
def claim():
    return load_project(ROOT).claim("verus/mimalloc")


def _mirror(repo: str) -> Path:
    path = GIT_MIRROR / repo
    if not path.is_dir():
        pytest.skip(f"the git mirror {path} is absent")
    return path


def _applies(repo: str, commit: str, patch: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    """``git apply --check`` of ``patch`` against ``commit`` of the mirror's ``repo``, in an index of its own (the
    mirror is read-only and nothing is checked out)."""
    env = {**os.environ, "GIT_DIR": str(_mirror(repo)), "GIT_INDEX_FILE": str(tmp_path / f"{patch.stem}.index")}
    subprocess.run(["git", "read-tree", commit], env=env, check=True)
    return subprocess.run(["git", "apply", "--cached", "--check", str(patch)], env=env, capture_output=True,
                          text=True)


@pytest.mark.parametrize("repo, commit, patch", [
    ("verus-lang/verus.git", VERUS, "builtin-macros-rust-1.95.patch"),
    ("verus-lang/verified-memory-allocator.git", VMA, "verus-mimalloc-compile-pass.patch"),
    ("verus-lang/verified-memory-allocator.git", VMA, "mimalloc-bench-without-shbench.patch"),
])
def test_each_recorded_patch_applies_to_the_mirrored_commit(repo, commit, patch, tmp_path):
    out = _applies(repo, commit, PATCHES / patch, tmp_path)
    assert out.returncode == 0, out.stderr


def test_the_macro_patch_renames_exactly_the_two_calls_rust_1_95_refuses():
    text = (PATCHES / "builtin-macros-rust-1.95.patch").read_text()
    removed = [l[1:].strip() for l in text.splitlines() if l.startswith("-") and not l.startswith("---")]
    added = [l[1:].strip() for l in text.splitlines() if l.startswith("+") and not l.startswith("+++")]
    assert removed == ['match proc_macro::tracked_env::var("VERUSDOC") {',
                       "s1.source_file() == s2.source_file() && l1.eq(&l2)"]
    assert added == ['match proc_macro::tracked::env_var("VERUSDOC") {', "s1.file() == s2.file() && l1.eq(&l2)"]


def _new_file(patch: Path, name: str) -> str:
    """The text of a file the patch adds."""
    text = patch.read_text()
    block = text.split(f"+++ b/{name}\n", 1)[1]
    lines = []
    for line in block.splitlines()[1:]:   # after the hunk header
        if not line.startswith("+"):
            break
        lines.append(line[1:])
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def wrapper(tmp_path_factory):
    """The patch's rustc-wrapper.sh, and a stand-in rustc that prints its arguments and RUSTC_BOOTSTRAP."""
    tmp = tmp_path_factory.mktemp("wrapper")
    script = tmp / "rustc-wrapper.sh"
    script.write_text(_new_file(PATCHES / "verus-mimalloc-compile-pass.patch", "rb-compile-pass/rustc-wrapper.sh"))
    rustc = tmp / "rustc"
    rustc.write_text('#!/bin/sh\necho "RUSTC_BOOTSTRAP=${RUSTC_BOOTSTRAP:-}"\nfor a in "$@"; do echo "$a"; done\n')
    rustc.chmod(0o755)

    def run(crate: str) -> list[str]:
        out = subprocess.run(["sh", str(script), str(rustc), "--crate-name", crate, "--edition=2021", "lib.rs"],
                             capture_output=True, text=True, check=True,
                             env={**os.environ, "CARGO_MANIFEST_DIR": "/w/verified-memory-allocator/rb-compile-pass"})
        return out.stdout.splitlines()
    return run


def _verus_source(path: str) -> str:
    env = {**os.environ, "GIT_DIR": str(_mirror("verus-lang/verus.git"))}
    return subprocess.run(["git", "show", f"{VERUS}:{path}"], env=env, capture_output=True, text=True,
                          check=True).stdout


def test_the_wrapper_gives_the_allocator_what_verus_compile_pass_gives_rustc(wrapper):
    args = wrapper("verus_mimalloc")
    assert args[0] == "RUSTC_BOOTSTRAP=1"
    assert args[1:5] == ["--crate-name", "verus_mimalloc", "--edition=2021", "lib.rs"]   # the crate's own, kept
    pairs = list(zip(args, args[1:]))
    assert ("--cfg", "verus_keep_ghost") in pairs and "verus_keep_ghost_body" not in args   # macros erase ghost code
    assert "-Clink-arg=" not in args and ("-C", "link-arg=/w/verified-memory-allocator/rb-compile-pass/../build/"
                                                "overrides.o") in pairs
    # config.rs's crate attributes and the lints the compile pass allows, as Verus 097ac7e's source lists them
    config = _verus_source("source/rust_verify/src/config.rs")
    body = config.split("pub fn enable_default_features_and_verus_attr", 1)[1].split("\n}\n", 1)[0]
    features = re.findall(r'"([a-z_0-9]+)"', body.split("for feature in &[", 1)[1].split("]", 1)[0])
    tools = re.findall(r'register_tool\(([a-z]+)\)', body)
    assert len(features) == 9 and tools == ["verus", "verifier", "verusfmt"]
    attrs = [a[len("-Zcrate-attr="):] for a in args if a.startswith("-Zcrate-attr=")]
    assert attrs == ["allow(internal_features)", *(f"feature({f})" for f in features),
                     *(f"register_tool({t})" for t in tools)]
    driver = _verus_source("source/rust_verify/src/driver.rs")
    allowed = set(re.findall(r'"([a-z_]+)"', driver.split("let allow = &[", 1)[1].split("];", 1)[0]))
    allowed |= {"unused_parens", "unused_braces", "unused_imports", "unused_mut"}   # config.rs: syntax macro, erase
    assert {b for a, b in pairs if a == "-A"} == allowed


def test_the_wrapper_builds_vstd_as_vstd_build_does_the_macro_crates_as_vargo_and_the_rest_as_they_are(wrapper):
    vstd = wrapper("vstd")
    assert ("--cfg", "erasure_macro_todo") in zip(vstd, vstd[1:]) and "-Zcrate-attr=feature(rustc_attrs)" in vstd
    assert "link-arg" not in " ".join(vstd)
    for crate in ("builtin", "builtin_macros", "state_machines_macros"):
        assert wrapper(crate)[5:] == ["--cfg", "verus_keep_ghost"], crate   # vargo's RUSTFLAGS' cfg, nothing else
    assert wrapper("libc") == ["RUSTC_BOOTSTRAP=1", "--crate-name", "libc", "--edition=2021", "lib.rs"]
    cargo = _new_file(PATCHES / "verus-mimalloc-compile-pass.patch", "rb-compile-pass/Cargo.toml")
    assert 'path = "../verus-mimalloc/lib.rs"' in cargo and 'crate-type = ["cdylib"]' in cargo
    assert 'default = ["override_system_allocator"]' in cargo and 'panic = "abort"' in cargo


def test_the_rehearsal_scale_its_deviations_and_the_checks_it_can_judge(claim):
    assert list(claim.scales) == ["paper", "rehearsal"]
    assert [d.kind for d in claim.deviations_for({})] == []   # the paper's scale: the guide's commands as they are
    rehearsal = claim.deviations_for({"scale": "rehearsal"})
    assert [d.kind for d in rehearsal] == ["toolchain", "size", "patch", "patch", "patch"]
    assert "no Verus binary" in rehearsal[0].what and "RUSTUP_TOOLCHAIN=stable" in rehearsal[0].what
    assert "sh6bench" in rehearsal[1].what and "core count" in rehearsal[1].what
    paper, rehearsal_claim = claim.at_scale("paper"), claim.at_scale("rehearsal")
    paper_run = "\n".join(s.run for s in paper.run)
    assert "entry-mimalloc.sh" in paper_run and "docker run" in paper_run
    steps = "\n".join(s.run for s in (*rehearsal_claim.setup, *rehearsal_claim.run))
    assert "docker" not in steps and steps.count("RUSTUP_TOOLCHAIN=stable") == 2
    assert rehearsal_claim.repositories == ("verus", "verified-memory-allocator")


LOGS = ["rb-mimalloc.log", "rb-mimalloc-2.log"]   # two runs of make live-verus-alloc (see data/verus-mimalloc/README.md)


def _sample_outputs(name: str = LOGS[0]) -> Outputs:
    return Outputs("verus/mimalloc", "run", "test", {"log": (DATA / name,)}, location=str(DATA))


@pytest.mark.parametrize("name", LOGS)
def test_the_loader_reads_a_real_rehearsal_log(claim, name):
    frame = load(claim, _sample_outputs(name))
    assert sorted(set(frame["run"])) == [1, 2, 3]
    assert sorted(set(frame["benchmark"])) == sorted(["cfrac", "larsonN-sized", "xmalloc-testN", "cache-scratch1",
                                                      "cache-scratchN", "glibc-simple", "glibc-thread"])
    assert (frame["status"] == "ok").all() and len(frame) == 42
    assert frame.attrs["procs"] == 2 and frame.attrs["toolchain"].startswith("host, rustc 1.95.0")
    # the first table of the log, read by hand: repetition 1's 'bench mi vmi' rows
    text = (DATA / name).read_text().splitlines()
    first = text[text.index("bench           mi      vmi") + 1]
    bench, mi, vmi = first.split()
    one = frame[(frame["run"] == 1) & (frame["benchmark"] == bench)].set_index("allocator")["seconds"]
    assert (one["mimalloc"], one["verus-mimalloc"]) == (float(mi), float(vmi))


@pytest.mark.parametrize("name", LOGS)
def test_a_rehearsal_judges_only_the_per_benchmark_comparison_with_the_spread_of_its_repetitions(claim, name):
    frame = load(claim, _sample_outputs(name))
    verdict = check_claim(claim, frame, source="test", scale="rehearsal", host_facts={"cpus": 2})
    per_benchmark = [r for r in verdict.checks if r.what.startswith("on none of")]
    others = [r for r in verdict.checks if not r.what.startswith("on none of")]
    assert len(others) == 2 and all(r.verdict.value == "inconclusive" and "rehearsal scale" in r.reason
                                    for r in others)
    (check,) = per_benchmark
    # the point margin: the slowest-relative benchmark's ratio of mean times against the bound 0.9
    means = frame.groupby(["benchmark", "allocator"])["seconds"].mean().unstack()
    ratio = (means["verus-mimalloc"] / means["mimalloc"]).min()
    assert check.margin == pytest.approx(ratio / 0.9 - 1, abs=1e-3)
    lo, hi = check.interval
    assert lo < check.margin < hi and check.trials == 3
    # holds only when the whole interval is above 0, fails only when all of it is below
    expected = "holds" if lo >= 0 else "fails" if hi < 0 else "inconclusive"
    assert check.verdict.value == expected and ("spans 0" in check.reason) == (expected == "inconclusive")


LINE_COUNTS = DATA / "macro-stats"   # a macro-stats rehearsal's rb-macro-stats directory, one directory per case study


@pytest.fixture(scope="module")
def macro_stats():
    return load_project(ROOT).claim("verus/macro-stats")


def _linecounts(claim):
    files = tuple(sorted(LINE_COUNTS.glob("*/verus-linecount.json")))
    return load(claim, Outputs("verus/macro-stats", "run", "test", {"linecount": files}, location=str(LINE_COUNTS)))


def test_line_count_outputs_of_a_real_rehearsal_give_each_mirrored_case_study_its_row(macro_stats):
    from reprobook.api import shown
    frame = _linecounts(macro_stats).set_index("system")
    assert sorted(frame.index) == ["Mimalloc", "NR", "P. log"] and (frame["verifier"] == "Verus").all()
    # the allocator's counts are the paper's to the line
    assert tuple(frame.loc["Mimalloc", ["trusted_loc", "proof_loc", "code_loc"]]) == (282, 13703, 3178)
    # as the summariser adds them up: proof = proof + spec + "proof,exec", code = exec + "proof,exec"
    import json
    total = json.loads((LINE_COUNTS / "nr" / "verus-linecount.json").read_text())["total"]
    assert frame.loc["NR", "proof_loc"] == total["proof"] + total["spec"] + total["proof,exec"]
    assert frame.loc["NR", "code_loc"] == total["exec"] + total["proof,exec"]
    page = shown(frame.reset_index())
    for column in ("time_1core_s", "time_8cores_s", "smt_mb"):
        assert set(page[column]) == {"not run here: they need the Verus binary, which needs Rust 1.76 with rustc-dev"}


def test_a_line_count_rehearsal_judges_the_counts_against_the_paper_and_leaves_the_rest_inconclusive(macro_stats):
    frame = _linecounts(macro_stats)
    verdict = check_claim(macro_stats, frame, source="test", scale="rehearsal", host_facts={"cpus": 2})
    by_what = {r.what: r for r in verdict.checks}
    published = {row[0]: row[2:5] for row in (
        ("Mimalloc", "Verus", 282, 13703, 3178), ("P. log", "Verus", 1284, 2913, 739))}
    for i, column in enumerate(("trusted", "proof", "code")):
        check = by_what[f"page table, Mimalloc, persistent log: {column} lines within 20 % of the paper's"]
        measured = frame.set_index("system")[f"{column}_loc"]
        within = all(abs(measured[s] / published[s][i] - 1) <= 0.2 for s in published)
        assert check.verdict.value == ("holds" if within else "fails"), check.reason
    timing = [by_what[spec.what] for spec in macro_stats.checks if spec.value in ("time_1core_s", "smt_mb")]
    # inconclusive, each saying why its column is empty: the loader's reason
    assert len(timing) == 5 and all(r.verdict.value == "inconclusive" and "needs Rust 1.76 with rustc-dev" in r.reason
                                    for r in timing), [r.reason for r in timing]
