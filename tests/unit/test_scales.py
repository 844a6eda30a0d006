"""Scales, source patches from parameters, deviations, check needs and sparse checkouts (reprobook.core.scales).

The patch step and the sparse checkout run for real here: the job script reprobook builds, on a git
repository made in ``tmp_path`` (CRLF lines and tab indentation included, as EDRAX's test.cpp has),
with a blob deleted from the origin to stand for the two our Aardvark mirror lacks.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from reprobook.core.plan import make_plan
from reprobook.core.checks import Verdict, check_claim
from reprobook.core.config import HostSpec, load_paper, load_project
from reprobook.errors import ConfigError
from reprobook.core.scales import TOOLCHAIN_MARKER, manifest_fields, toolchains_from_log
from reprobook.remote.steps import build_script
from tests.support.gitcalls import counting_git
from reprobook.core.plan import resolve

PAPER_SRC = "package x\n\nconst startingAddrs = 1000000\n// const startingAddrs = 10\n\tconst txnsPerBlock = 10000\r\n"


def _git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})


def _origin(tmp_path: Path) -> tuple[Path, str, str]:
    """A bare repository with perf.go and a big/blob.tar.gz whose blob is then deleted; its commit and that blob."""
    src = tmp_path / "src"
    (src / "big").mkdir(parents=True)
    (src / "perf.go").write_bytes(PAPER_SRC.encode())
    (src / "big" / "blob.tar.gz").write_bytes(b"not in the mirror")
    _git("init", "-q", cwd=src)
    _git("add", ".", cwd=src)
    _git("commit", "-q", "-m", "c", cwd=src)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=src, capture_output=True, text=True).stdout.strip()
    blob = subprocess.run(["git", "rev-parse", "HEAD:big/blob.tar.gz"], cwd=src, capture_output=True,
                          text=True).stdout.strip()
    bare = tmp_path / "origin.git"
    _git("clone", "-q", "--bare", str(src), str(bare), cwd=tmp_path)
    (bare / "objects" / blob[:2] / blob[2:]).unlink()  # the mirror lacks this blob
    return bare, commit, blob


def _paper(tmp_path: Path, origin: Path, commit: str, *, exclude=("big/*.tar.gz",), extra: dict | None = None) -> Path:
    claim = {
        "id": "c", "title": "t", "statement": "s", "refs": ["r"], "loader": "aardvark.archives",
        "checks": [{"kind": "at_least", "what": "fast enough", "value": "v", "min": 1, "judged_at": ["rehearsal"],
                    "why": "any run that finishes is fast enough"},
                   {"kind": "at_least", "what": "fast on 32 cores", "value": "v", "min": 1,
                    "needs": {"scale": "paper", "cores": 32, "why": "the claim is about 32 cores"}}],
        "parameters": {"accounts": {"default": 1000000, "help": "a"}, "txns": {"default": 10000, "help": "t"},
                       "go": {"default": "pinned", "help": "g"}},
        "scales": {"paper": {"about": "the guide's sizes"},
                   "rehearsal": {"about": "small", "values": {"accounts": 1000, "txns": 20, "go": "host"}}},
        "patches": [{"file": "repo/perf.go", "lines": ["const startingAddrs = {accounts}",
                                                       "const txnsPerBlock = {txns}"]}],
        "deviations": [{"when": {"go": "host"}, "kind": "toolchain", "what": "the host's Go"}],
        "run": [{"name": "show", "cwd": "repo", "run": "cat perf.go"}],
        "outputs": {"logs": {"path": "repo", "glob": "*.txt"}},
        **(extra or {}),
    }
    path = tmp_path / "scalefx.yaml"
    repo = {"url": str(origin), "commit": commit, "checkout": "repo"}
    if exclude:
        repo["exclude"] = list(exclude)
    path.write_text(yaml.safe_dump({"paper": {"id": "scalefx", "title": "SCALEFX", "venue": "tests"},
                                    "repositories": {"repo": repo}, "claims": [claim]}, sort_keys=False))
    return path


def _job(tmp_path: Path, paper, params: dict, run_dir: str = "rd", env: dict | None = None) -> subprocess.CompletedProcess:
    claim = paper.claim("c")
    workdir = tmp_path / "work"
    script = build_script(paper, make_plan(claim, params), HostSpec("h", "h", str(workdir)), str(tmp_path / run_dir))
    (tmp_path / "cmd.sh").write_text(script)
    return subprocess.run(["bash", str(tmp_path / "cmd.sh")], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, cwd=tmp_path, env=env)


@pytest.fixture
def fx(tmp_path):
    origin, commit, blob = _origin(tmp_path)
    return load_paper(_paper(tmp_path, origin, commit)), origin, commit, blob


def test_a_scale_fills_in_parameters_and_explicit_values_win(fx):
    paper, *_ = fx
    claim = paper.claim("c")
    assert resolve(claim, {}) == {"accounts": 1000000, "txns": 10000, "go": "pinned", "scale": "paper"}
    assert resolve(claim, {"scale": "rehearsal"}) == {"accounts": 1000, "txns": 20, "go": "host",
                                                            "scale": "rehearsal"}
    assert resolve(claim, {"scale": "rehearsal", "txns": 50})["txns"] == 50
    assert claim.scale_of({"scale": "rehearsal"}) == "rehearsal" and claim.scale_of({}) == "paper"
    with pytest.raises(ConfigError, match=r"no scale 'huge' \(scales: paper, rehearsal\)"):
        resolve(claim, {"scale": "huge"})
    assert "rehearsal (small)" in claim.parameters["scale"].help


def test_deviations_of_a_rehearsal_are_recorded_with_the_patch_as_a_diff(fx):
    paper, *_ = fx
    claim = paper.claim("c")
    assert claim.deviations_for({}) == []
    devs = claim.deviations_for({"scale": "rehearsal"})
    assert [(d.kind, d.what) for d in devs][0] == ("toolchain", "the host's Go")
    patch = devs[1]
    assert patch.kind == "patch" and "2 line(s) in `repo/perf.go`" in patch.what
    assert patch.diff.splitlines() == ["--- a/repo/perf.go", "+++ b/repo/perf.go",
                                       "@@ @@", "-const startingAddrs = 1000000", "+const startingAddrs = 1000",
                                       "@@ @@", "-const txnsPerBlock = 10000", "+const txnsPerBlock = 20"]
    fields = manifest_fields(make_plan(claim, {"scale": "rehearsal"}))
    assert fields["scale"] == "rehearsal" and [d["kind"] for d in fields["deviations"]] == ["toolchain", "patch"]
    assert manifest_fields(make_plan(claim, {})) == {"scale": "paper", "deviations": []}


def test_the_patch_step_sets_the_constants_keeps_indentation_and_crlf_and_restores_them(fx, tmp_path):
    """A sparse checkout without the missing blob, then the patch at rehearsal scale, then at the paper's again."""
    paper, _, commit, blob = fx
    out = _job(tmp_path, paper, {"scale": "rehearsal"})
    assert out.returncode == 0, out.stdout + out.stderr
    perf = tmp_path / "work" / "repo" / "perf.go"
    assert perf.read_bytes().decode() == PAPER_SRC.replace("= 1000000", "= 1000").replace("= 10000\r", "= 20\r")
    assert not (tmp_path / "work" / "repo" / "big" / "blob.tar.gz").exists()  # left out: its blob is absent
    assert "-const startingAddrs = 1000000\n+const startingAddrs = 1000\n" in out.stdout  # the diff, in the log
    assert "invalid object" not in out.stderr
    # the same workdir, at the paper's scale: the file is as committed again (another run id, another run dir)
    out = _job(tmp_path, paper, {}, run_dir="rd2")
    assert out.returncode == 0, out.stdout + out.stderr
    assert perf.read_bytes().decode() == PAPER_SRC
    mtime = perf.stat().st_mtime_ns
    out = _job(tmp_path, paper, {}, run_dir="rd3")
    assert out.returncode == 0 and perf.stat().st_mtime_ns == mtime  # unchanged: not rewritten, nothing rebuilt


def test_a_patch_line_missing_from_the_file_fails_the_step_with_the_reason(tmp_path):
    origin, commit, _ = _origin(tmp_path)
    paper = load_paper(_paper(tmp_path, origin, commit, extra={
        "patches": [{"file": "repo/perf.go", "lines": ["const numBlocks = {txns}"]}]}))
    out = _job(tmp_path, paper, {"scale": "rehearsal"})
    assert out.returncode != 0
    assert "repo/perf.go has 0 line(s) 'const numBlocks = 10000' where the patch expects exactly one" in out.stderr


def test_without_the_exclusion_the_checkout_fails_on_the_missing_blob(tmp_path):
    origin, commit, _ = _origin(tmp_path)
    paper = load_paper(_paper(tmp_path, origin, commit, exclude=()))
    out = _job(tmp_path, paper, {})
    assert out.returncode == 3, out.stdout + out.stderr  # git itself exits 0 with the file missing
    assert "lacks files git could not read" in out.stderr and "big/blob.tar.gz" in out.stderr
    assert "under the repository's 'exclude'" in out.stderr


@pytest.mark.parametrize("extra, key, words", [
    ({"patches": [{"file": "f", "lines": ["N = {nope}"]}]}, "claims[0].patches[0].lines[0]", "no parameter 'nope'"),
    ({"patches": [{"file": "f", "lines": ["N = 3"]}]}, "claims[0].patches[0].lines[0]", "sets no parameter"),
    ({"scales": {"rehearsal": {"values": {"txns": 2}}}}, "claims[0].scales", "needs a 'paper' scale"),
    ({"scales": {"paper": {}, "small": {"values": {"nope": 2}}}}, "claims[0].scales.small.values.nope",
     "no parameter 'nope'"),
    ({"scales": {"paper": {}, "small": {"values": {"txns": "many"}}}}, "claims[0].scales.small", "takes a int"),
    ({"deviations": [{"when": {"nope": 1}, "what": "x"}]}, "claims[0].deviations[0].when.nope", "no parameter"),
    ({"checks": [{"kind": "at_least", "what": "w", "value": "v", "min": 1, "needs": {"scale": "huge"}}]},
     "claims[0].checks[0].needs.scale", "no scale 'huge'"),
    ({"checks": [{"kind": "at_least", "what": "w", "value": "v", "min": 1, "needs": {"cpus": 3}}]},
     "claims[0].checks[0].needs.cpus", "cpus"),
])
def test_configuration_errors_name_the_file_and_key(tmp_path, extra, key, words):
    origin, commit, _ = _origin(tmp_path)
    with pytest.raises(ConfigError) as err:
        load_paper(_paper(tmp_path, origin, commit, extra=extra))
    assert err.value.key == key and words in str(err.value), str(err.value)


def test_a_check_that_needs_32_cores_and_the_paper_scale_is_inconclusive_at_rehearsal_with_its_values(fx):
    paper, *_ = fx
    claim = paper.claim("c")
    measured = pd.DataFrame({"v": [5.0, 7.0]})
    small = {"cpus": 2}
    v = check_claim(claim, measured, source="run x", scale="rehearsal", host_facts=small)
    judged, needy = v.checks
    assert judged.verdict is Verdict.HOLDS and judged.reason.startswith("at rehearsal scale: ")
    assert needy.verdict is Verdict.INCONCLUSIVE and needy.margin is None
    assert needy.reason.startswith("cannot be judged on this run: this run is at rehearsal scale; the check "
                                   "needs the paper scale; the run's host needs 32 cores (CPUs online), has 2 (the "
                                   "claim is about 32 cores); a run at the paper scale on a machine with at least "
                                   "32 cores (CPUs online) would settle it. Measured: ")
    assert needy.judged_on == "rehearsal scale, on 2 CPUs" and judged.judged_on == "rehearsal scale, on 2 CPUs"
    assert "5 vs required >= 1" in needy.reason and not needy.evidence.empty  # the measured values stay
    assert v.verdict is Verdict.INCONCLUSIVE and v.scale == "rehearsal" and v.as_dict()["scale"] == "rehearsal"
    assert "Scale of the run: <b>rehearsal</b>" in v._repr_html_()
    # the paper's scale on a big host: judged; the authors' outputs (no scale, no facts): judged as before
    assert check_claim(claim, measured, source="s", scale="paper", host_facts={"cpus": 64}).verdict is Verdict.HOLDS
    plain = check_claim(claim, measured, source="reference")
    assert plain.verdict is Verdict.HOLDS and plain.scale == "" and "scale" not in plain.as_dict()
    assert all(not c.reason.startswith("at ") for c in plain.checks)


def test_toolchains_reported_in_a_log_are_read_once_each():
    log = "\n".join([f"{TOOLCHAIN_MARKER} go: go version go1.26.8 linux/amd64", "other",
                     f"{TOOLCHAIN_MARKER} rust: rustc 1.95.0 with RUSTC_BOOTSTRAP=1",
                     f"{TOOLCHAIN_MARKER} go: go version go1.26.8 linux/amd64", f"{TOOLCHAIN_MARKER}  "])
    assert toolchains_from_log(log) == ["go: go version go1.26.8 linux/amd64", "rust: rustc 1.95.0 with RUSTC_BOOTSTRAP=1"]


def test_aardvark_declares_paper_and_rehearsal_scales_and_the_workload_patch(root):
    project = load_project(root)
    for cid in ("vector-commitments", "validator-throughput", "archive-throughput"):
        claim = project.claim(f"aardvark/{cid}")
        assert list(claim.scales) == ["paper", "rehearsal"]
        devs = {d.kind: d for d in claim.deviations_for({"scale": "rehearsal"})}
        assert set(devs) == {"toolchain", "patch"} and claim.deviations_for({}) == []
        assert claim.setup[1].name.startswith("set the source constants from the parameters")
    validator = project.claim("aardvark/validator-throughput")
    diff = {d.kind: d for d in validator.deviations_for({"scale": "rehearsal"})}["patch"].diff
    assert "-const startingAddrs = 1000000\n+const startingAddrs = 1000\n" in diff
    assert [bool(c.needs and c.needs.requires) for c in validator.checks] == [True, True, True]
    assert project.paper("aardvark").repositories["aardvark-prototype"].exclude == (
        "go-algorand/installer/external/node_exporter-stable-*.tar.gz",)


# --------------------------------------------------------------------------- recorded patches and adaptations

FIX = """Explanation: the constant's comment is made to say what it is (a test fix).

diff --git a/perf.go b/perf.go
--- a/perf.go
+++ b/perf.go
@@ -1,4 +1,4 @@
 package x
 
-const startingAddrs = 1000000
+const startingAddrs = 1000000 // accounts
 // const startingAddrs = 10
"""
SMALL = """Only on a small host.

--- a/perf.go
+++ b/perf.go
@@ -4,2 +4,3 @@
 // const startingAddrs = 10
+// small host
 \tconst txnsPerBlock = 10000\r
"""


def _recorded_paper(tmp_path: Path, *, adapt=None) -> object:
    """The fixture paper with two recorded patches (one always, one when small_host), in configs/papers/."""
    origin, commit, _ = _origin(tmp_path)
    configs = tmp_path / "configs"
    (configs / "patches" / "fx").mkdir(parents=True)
    (configs / "patches" / "fx" / "comment.patch").write_text(FIX)
    (configs / "patches" / "fx" / "small.patch").write_text(SMALL)
    path = _paper(tmp_path, origin, commit, extra={
        "parameters": {"accounts": {"default": 1000000, "help": "a"}, "txns": {"default": 10000, "help": "t"},
                       "go": {"default": "pinned", "help": "g"}, "small_host": {"default": False, "help": "s"}},
        "patches": [{"diff": "patches/fx/comment.patch", "in": "repo", "why": "a comment fixed"},
                    {"diff": "patches/fx/small.patch", "in": "repo", "why": "for a small host",
                     "when": {"small_host": True}}],
        **({"adapt": adapt} if adapt else {})})
    (configs / "papers").mkdir()
    return load_paper(path.rename(configs / "papers" / path.name))


def test_recorded_patches_apply_once_and_one_not_wanted_is_taken_back(tmp_path):
    paper = _recorded_paper(tmp_path)
    perf = tmp_path / "work" / "repo" / "perf.go"
    out = _job(tmp_path, paper, {"small_host": True})
    assert out.returncode == 0, out.stdout + out.stderr
    assert "patch comment.patch: applied" in out.stdout and "patch small.patch: applied" in out.stdout
    assert "= 10\n// small host\n\tconst" in perf.read_text() and "1000000 // accounts" in perf.read_text()
    mtime = perf.stat().st_mtime_ns
    env, calls = counting_git(tmp_path)
    out = _job(tmp_path, paper, {"small_host": True}, run_dir="rd2", env=env)  # the same run's patches: left alone
    assert out.returncode == 0 and "patch small.patch: applied already" in out.stdout
    assert "patch comment.patch: applied already" in out.stdout
    assert perf.stat().st_mtime_ns == mtime
    # both found in place by one git apply of the series, last first
    assert [c for c in calls.read_text().splitlines() if " apply " in c] == ["-C repo apply --reverse --check"]
    out = _job(tmp_path, paper, {}, run_dir="rd3")  # a run without the small-host fix shares the checkout
    assert out.returncode == 0, out.stdout + out.stderr
    assert "patch small.patch: taken back" in out.stdout and "patch comment.patch: applied already" in out.stdout
    assert "// small host" not in perf.read_text() and "1000000 // accounts" in perf.read_text()


def test_a_recorded_patch_that_does_not_apply_fails_the_step_naming_it(tmp_path):
    paper = _recorded_paper(tmp_path)
    (tmp_path / "configs" / "patches" / "fx" / "comment.patch").write_text(FIX.replace("1000000", "7"))
    paper = load_paper(paper.path)
    out = _job(tmp_path, paper, {})
    assert out.returncode != 0
    assert "the recorded patch comment.patch does not apply in repo" in out.stderr


def test_recorded_patches_are_deviations_with_their_diff_when_wanted(tmp_path):
    claim = _recorded_paper(tmp_path).claim("c")
    always = [(d.kind, d.what) for d in claim.deviations_for({})]
    assert always == [("patch", "a comment fixed (`patches/fx/comment.patch`)")]
    devs = claim.deviations_for({"small_host": True})
    assert [d.what for d in devs][1] == "for a small host (`patches/fx/small.patch`)"
    assert devs[1].diff.startswith("--- a/perf.go") and "Only on a small host" not in devs[1].diff


@pytest.mark.parametrize("change, key, words", [
    ({"diff": "patches/fx/none.patch"}, "claims[0].patches[0].diff", "cannot read the recorded patch"),
    ({"when": {"tiny": True}}, "claims[0].patches[0].when.tiny", "no parameter 'tiny'"),
])
def test_a_bad_recorded_patch_is_a_config_error_naming_the_key(tmp_path, change, key, words):
    paper = _recorded_paper(tmp_path)
    data = yaml.safe_load(paper.path.read_text())
    data["claims"][0]["patches"][0].update(change)
    paper.path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(ConfigError) as err:
        load_paper(paper.path)
    assert err.value.key == key and words in err.value.message


def test_an_adaptation_sets_parameters_for_hosts_short_of_its_requirement_and_says_so(tmp_path):
    from reprobook.core.scales import adapt
    claim = _recorded_paper(tmp_path, adapt=[{"unless": {"cores": 3}, "set": {"small_host": True},
                                               "why": "the pool needs 3 CPUs"}]).claim("c")
    used, made = adapt(claim.adaptations, {"txns": 5}, {"h": {"cpus": 2}})
    assert used == {"txns": 5, "small_host": True}
    assert made == [{"set": {"small_host": True}, "why": "the pool needs 3 CPUs", "role": None, "hosts": ["h"],
                     "shortfalls": ["h: needs 3 cores (CPUs online), has 2"]}]
    assert adapt(claim.adaptations, {}, {"h": {"cpus": 8}}) == ({}, [])
    used, made = adapt(claim.adaptations, {"small_host": False}, {"h": {"cpus": 2}})
    assert used == {"small_host": False} and "kept the values given explicitly" in made[0]["not_made"]
    assert [d.kind for d in claim.deviations_for(adapt(claim.adaptations, {}, {"h": {"cpus": 2}})[0])] == \
        ["patch", "patch"]


def test_an_adaptation_with_a_role_looks_only_at_that_roles_hosts(tmp_path):
    from reprobook.core.scales import Adaptation, adapt
    from reprobook.core.requirements import parse_requirements
    a = Adaptation(parse_requirements({"cores": 3}, file="f", key="k"), {"small_host": True}, "why", role="server")
    facts = {"control": {"cpus": 1}, "s1": {"cpus": 8}}
    roles = {"control": ("control",), "s1": ("server",)}
    assert adapt([a], {}, facts, roles) == ({}, [])
    used, made = adapt([a], {}, {**facts, "s2": {"cpus": 2}}, {**roles, "s2": ("server",)})
    assert used == {"small_host": True} and made[0]["hosts"] == ["s2"]


def test_a_check_only_at_the_rehearsal_scale_is_left_out_of_the_papers_verdict(tmp_path):
    """A check of a rehearsal's own pipeline (its readings agree) belongs to the rehearsal's verdict only: a run
    at the paper's scale is neither judged by it nor made inconclusive by it."""
    origin, commit, _ = _origin(tmp_path)
    paper = load_paper(_paper(tmp_path, origin, commit, extra={"checks": [
        {"kind": "at_least", "what": "the paper's number", "value": "v", "min": 1},
        {"kind": "at_least", "what": "the rehearsal's readings agree", "value": "w", "min": 1,
         "only_at": ["rehearsal"], "why": "two readings of one run agree or not at any size"}]}))
    claim = paper.claim("c")
    data = pd.DataFrame({"v": [2.0], "w": [3.0]})
    at_paper = check_claim(claim, data, source="live", scale="paper", host_facts={})
    assert [r.what for r in at_paper.checks] == ["the paper's number"] and at_paper.verdict is Verdict.HOLDS
    at_rehearsal = check_claim(claim, data, source="live", scale="rehearsal", host_facts={})
    assert [r.verdict for r in at_rehearsal.checks] == [Verdict.INCONCLUSIVE, Verdict.HOLDS]
    assert "this run is at rehearsal scale" in at_rehearsal.checks[0].reason


@pytest.mark.parametrize("check, key, words", [
    ({"only_at": ["rehearsal"], "judged_at": ["rehearsal"], "why": "w"}, "claims[0].checks[0].only_at",
     "exclude each other"),
    ({"only_at": ["rehearsal"]}, "claims[0].checks[0].why", "go together"),
    ({"only_at": ["huge"], "why": "w"}, "claims[0].checks[0].only_at", "no scale 'huge'"),
])
def test_a_bad_only_at_is_a_config_error_naming_the_key(tmp_path, check, key, words):
    origin, commit, _ = _origin(tmp_path)
    with pytest.raises(ConfigError) as err:
        load_paper(_paper(tmp_path, origin, commit, extra={"checks": [
            {"kind": "at_least", "what": "w", "value": "v", "min": 1, **check}]}))
    assert err.value.key == key and words in str(err.value), str(err.value)


def test_a_claim_already_at_a_scale_keeps_what_was_changed_on_it(root):
    """A scale's own steps and roles are put in place once: a claim at the rehearsal scale whose steps a caller
    changed (a test keeping one step, say) keeps them through make_plan, and asking for the paper's scale gives the
    paper's fields back."""
    import dataclasses
    claim = load_project(root).claim("pesto/inconsistency")
    rehearsal = claim.at_scale("rehearsal")
    assert rehearsal.at == "rehearsal" and rehearsal.roles["server"].max == 1 and rehearsal.setup != claim.setup
    assert rehearsal.at_scale("rehearsal") is rehearsal
    one_step = dataclasses.replace(rehearsal, setup=rehearsal.setup[:1])
    assert make_plan(one_step, {"scale": "rehearsal"}).claim.setup == rehearsal.setup[:1]
    paper = make_plan(one_step, {"scale": "paper"}).claim
    assert (paper.roles["server"].min, paper.setup, paper.inputs) == (6, claim.setup, claim.inputs)


def test_a_submodule_left_out_of_a_sparse_checkout_is_not_cloned(tmp_path):
    """A repository whose submodule's URL leads nowhere (a mirror without it): excluded, the checkout succeeds and
    records only the repository; not excluded, git's failing clone of the submodule stops the checkout."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "perf.go").write_bytes(PAPER_SRC.encode())
    (src / ".gitmodules").write_text(f'[submodule "sub"]\n\tpath = sub\n\turl = {tmp_path / "absent.git"}\n')
    _git("init", "-q", cwd=src)
    _git("add", ".", cwd=src)
    _git("update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},sub", cwd=src)
    _git("commit", "-q", "-m", "c", cwd=src)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=src, capture_output=True, text=True).stdout.strip()
    out = _job(tmp_path, load_paper(_paper(tmp_path, src, commit, exclude=("sub",))), {})
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "rd" / "checkout.txt").read_text() == f"{tmp_path / 'work' / 'repo'} {commit}\n"
    assert not (tmp_path / "work" / "repo" / "sub").exists()   # left out of the work tree
    out = _job(tmp_path, load_paper(_paper(tmp_path, src, commit, exclude=())), {}, run_dir="rd2")
    assert out.returncode != 0 and "absent.git" in out.stderr
