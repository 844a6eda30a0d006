"""A checkout's excluded paths leave out the submodules under them, and a later whole checkout of the same directory
brings them back (the job's own ``rb_checkout``, run on real git repositories).

verified-node-replication pins three submodules; two (IronSync's source and vmware/node-replication) serve only
IronSync's benchmark and cannot be reached here, so its rehearsal excludes them, while its paper scale checks out
the same directory whole.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from reprobook.core.config import HostSpec, load_paper
from reprobook.core.plan import make_plan
from reprobook.remote.steps import build_script
from tests.support.gitcalls import counting_git

ENV = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "protocol.file.allow", "GIT_CONFIG_VALUE_0": "always",
       "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def _git(*args: str, cwd: Path) -> str:
    import os
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, **ENV})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def _repo(path: Path, files: dict[str, str]) -> str:
    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    _git("init", "-q", cwd=path)
    _git("add", ".", cwd=path)
    _git("commit", "-q", "-m", "c", cwd=path)
    return _git("rev-parse", "HEAD", cwd=path)


def _origin(tmp_path: Path) -> tuple[Path, str, Path]:
    """A repository with two submodules: ``lib/used`` (reachable) and ``extra/far`` (its URL leads nowhere yet)."""
    _repo(tmp_path / "used", {"used.txt": "used\n"})
    far = tmp_path / "far"   # not made: as out of reach as IronSync's source is here
    top = tmp_path / "top"
    _repo(top, {"main.txt": "main\n"})
    _git("submodule", "add", "-q", str(tmp_path / "used"), "lib/used", cwd=top)
    _repo(tmp_path / "far-src", {"far.txt": "far\n"})
    _git("submodule", "add", "-q", str(tmp_path / "far-src"), "extra/far", cwd=top)
    _git("config", "-f", ".gitmodules", "submodule.extra/far.url", str(far), cwd=top)
    _git("commit", "-q", "-am", "submodules", cwd=top)
    return top, _git("rev-parse", "HEAD", cwd=top), far


def _paper(tmp_path: Path, origin: Path, commit: str, exclude: list[str]):
    repo = {"url": str(origin), "commit": commit, "checkout": "repo", **({"exclude": exclude} if exclude else {})}
    claim = {"id": "c", "title": "t", "statement": "s", "refs": ["r"], "loader": "aardvark.archives",
             "checks": [{"kind": "at_least", "what": "w", "value": "v", "min": 1}],
             "run": [{"name": "list", "cwd": "repo", "run": "find . -name '*.txt' | sort"}],
             "outputs": {"logs": {"path": "repo", "glob": "*.txt"}}}
    path = tmp_path / f"p{len(exclude)}" / "subfx.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump({"paper": {"id": "subfx", "title": "SUBFX", "venue": "tests"},
                                    "repositories": {"repo": repo}, "claims": [claim]}, sort_keys=False))
    return load_paper(path)


def _job(tmp_path: Path, paper, run_dir: str) -> subprocess.CompletedProcess:
    import os
    script = build_script(paper, make_plan(paper.claim("c"), {}), HostSpec("h", "h", str(tmp_path / "work")),
                          str(tmp_path / run_dir))
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, cwd=tmp_path, env={**os.environ, **ENV})


def test_an_excluded_submodule_is_not_cloned_and_a_whole_checkout_brings_it_back(tmp_path):
    origin, commit, far = _origin(tmp_path)
    out = _job(tmp_path, _paper(tmp_path, origin, commit, ["extra/far"]), "rd1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "./lib/used/used.txt" in out.stdout and "far.txt" not in out.stdout
    work = tmp_path / "work" / "repo"
    assert not (work / "extra" / "far").exists() or not any((work / "extra" / "far").iterdir())
    assert not far.exists()   # nothing tried to clone it: a clone would have failed the job

    # the same directory checked out whole (another scale of the claim): the sparse checkout is undone and the
    # submodule comes, now that its repository can be reached
    _repo(far, {"far.txt": "far\n"})
    subprocess.run(["git", "-C", str(far), "fetch", "-q", str(tmp_path / "far-src"), "HEAD"], check=True)
    head = _git("rev-parse", "HEAD:extra/far", cwd=origin)
    subprocess.run(["git", "-C", str(far), "update-ref", "refs/heads/pinned", head], check=True)
    out = _job(tmp_path, _paper(tmp_path, origin, commit, []), "rd2")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "./extra/far/far.txt" in out.stdout and "./lib/used/used.txt" in out.stdout
    assert _git("config", "--get", "core.sparseCheckout", cwd=work) == "false"
    assert subprocess.run(["git", "-C", str(work), "config", "--get-all", "submodule.active"],
                          capture_output=True).returncode == 1   # none left


def test_a_checkout_already_at_its_commit_is_taken_as_it_is_and_one_short_of_a_submodule_is_mended(tmp_path):
    """A run on a host whose checkout is at the pinned commit with its submodules at theirs (the previous run's) checks
    that and records it, running neither git checkout nor submodule update; a submodule taken away since is brought
    back by the full checkout, and every run's checkout.txt says the same."""
    import os
    _repo(tmp_path / "used", {"used.txt": "used\n"})
    top = tmp_path / "top"
    _repo(top, {"main.txt": "main\n"})
    _git("submodule", "add", "-q", str(tmp_path / "used"), "lib/used", cwd=top)
    _git("commit", "-q", "-am", "submodule", cwd=top)
    paper = _paper(tmp_path, top, _git("rev-parse", "HEAD", cwd=top), [])
    first = _job(tmp_path, paper, "rd1")
    assert first.returncode == 0, first.stdout + first.stderr
    recorded = (tmp_path / "rd1" / "checkout.txt").read_text()
    assert len(recorded.splitlines()) == 2 and "lib/used" in recorded

    # git, as the job calls it, writes down each of its subcommands
    env, calls = counting_git(tmp_path)

    def job(run_dir):
        calls.write_text("")
        script = build_script(paper, make_plan(paper.claim("c"), {}), HostSpec("h", "h", str(tmp_path / "work")),
                              str(tmp_path / run_dir))
        out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                             stdin=subprocess.DEVNULL, env={**env, **ENV})
        assert out.returncode == 0, out.stdout + out.stderr
        assert "./lib/used/used.txt" in out.stdout
        assert (tmp_path / run_dir / "checkout.txt").read_text() == recorded
        return [c.split()[2] for c in calls.read_text().splitlines() if c.startswith("-C ")]

    done = job("rd2")
    assert "checkout" not in done and "update" not in " ".join(done), done
    assert "ls-files" in done   # a file gone from the checkout is still looked for
    work = tmp_path / "work" / "repo"
    subprocess.run(["git", "-C", str(work), "submodule", "deinit", "-q", "-f", "lib/used"], check=True,
                   env={**os.environ, **ENV})
    assert "checkout" in job("rd3")
