"""The evaluator's terminal: `claims` fits its width (everything with -v), `status` alone lists the recent runs, and
`make test-fast` installs the system programs its tests run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from reprobook.cli import main
from reprobook.core.config import load_project
from reprobook.core.runs import RunStore

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "reprobook"]


@pytest.fixture(scope="module")
def project():
    return load_project(ROOT)


@pytest.fixture(autouse=True)
def _loaded_once(project, monkeypatch):
    """The commands below get the project loaded once for the module (a second of CPU each time otherwise), with
    this test's own run store, as loading it again in this test's environment would give."""
    import dataclasses
    import reprobook.cli
    here = dataclasses.replace(project, settings=dataclasses.replace(
        project.settings, runs_dir=Path(os.environ["REPROBOOK_RUNS"])))
    monkeypatch.setattr(reprobook.cli, "_project", lambda: here)
    return here


def _cli(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_line(text: str) -> str:
    return " ".join(text.split())


# ------------------------------------------------------------------ claims

@pytest.mark.parametrize("width", [60, 80, 130])   # each claim on lines of its own; a table of four columns; of five
def test_claims_fit_the_terminal(width, project, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, _ = _cli(capsys, "claims")
    lines = out.splitlines()
    assert code == 0 and len(lines) > 20
    assert max(len(line) for line in lines) <= width, [line for line in lines if len(line) > width]
    for claim in project.all_claims():   # every claim's key whole, whatever was cut
        assert re.search(rf"^{re.escape(claim.key)}(\s|$)", out, re.M), claim.key


def test_claims_cut_at_100_columns_say_so_and_v_shows_every_field_in_full(project, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "100")
    _, table, _ = _cli(capsys, "claims")
    header = table.splitlines()[0].split()
    assert header[:2] == ["claim", "title"] and "live" in header
    assert "…" in table and "`reprobook claims -v` shows every field in full" in _one_line(table)
    code, full, _ = _cli(capsys, "claims", "-v")
    assert code == 0 and max(len(line) for line in full.splitlines()) <= 100
    flat = _one_line(full)
    for c in project.all_claims():
        block = flat[flat.index(c.key + " title: "):]
        assert block.startswith(f"{c.key} title: {_one_line(c.title)} paper refs: {_one_line(', '.join(c.refs))} "
                                f"machine: "), c.key
        for need in list(c.requires.describe()) + [f"{r.name} ({r.count_words})" for r in c.roles.values()]:
            assert _one_line(need) in block.split(" authors' outputs: ")[0], (c.key, need)
        assert f"live run: {c.expected_time or '-'} authors' outputs: {'yes' if c.reference else 'no'}" in block


def test_claims_outside_a_terminal_fit_100_columns_or_COLUMNS(monkeypatch, capsys):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    out = subprocess.run(CLI + ["claims"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0 and max(len(line) for line in out.stdout.splitlines()) == 100
    monkeypatch.setenv("COLUMNS", "250")
    _, wide, _ = _cli(capsys, "claims")
    assert "paper refs" in wide.splitlines()[0] and max(len(line) for line in wide.splitlines()) <= 250


def test_a_cell_cannot_move_the_cursor_or_break_the_table():
    from reprobook.cli import _cell, _fit
    assert _cell("a\x1b[2J\tb\nc\x07") == "a␛[2J b c␇"   # shown as formats.terminal.printable shows them
    rows = [{"a": "x" * 10, "b": "y" * 50, "c": "z" * 30}]
    shown, widths = _fit(rows, ["a", "b", "c"], 40, flexible={"b": (10, 2), "c": (10, 1)})
    assert shown == ["a", "b", "c"] and sum(widths.values()) + 4 == 40 and widths["b"] > widths["c"] >= 10
    shown, widths = _fit(rows, ["a", "b", "c"], 30, flexible={"b": (10, 2), "c": (10, 1)}, drop=("c",))
    assert shown == ["a", "b"] and widths == {"a": 10, "b": 18}
    assert _fit(rows, ["a", "b", "c"], 20, flexible={"b": (10, 2), "c": (10, 1)}, drop=("c",)) is None


# ------------------------------------------------------------------ status alone

def test_status_alone_with_no_runs_says_so(capsys):
    code, out, err = _cli(capsys, "status")
    assert code == 0 and not err
    assert _one_line(out).startswith(f"no runs recorded yet in the run store {os.environ['REPROBOOK_RUNS']}: "
                                     f"`reprobook run PAPER/CLAIM` makes one")


def _store_with_runs(n: int) -> list[str]:
    """``n`` runs of three claims, one a day, the newest last; every third at rehearsal scale and judged."""
    import reprobook.cli
    project = reprobook.cli._project()
    store = RunStore(project.settings.runs_dir)
    claims = [project.claim(k) for k in ("aardvark/archive-throughput", "pesto/sample-runs", "verus/ironkv")]
    ids = []
    for i in range(n):
        claim = claims[i % 3]
        run = store.create(claim, f"{claim.paper}-{claim.id}-{i:04d}", source="live", host="node-1",
                           status=("succeeded", "failed", "running")[i % 3],
                           parameters={"scale": "rehearsal"} if claim.scales else {},
                           **({"verdict": "holds"} if i % 3 == 0 else {}))
        run.update(created=f"2026-11-{i + 1:02d}T{i % 24:02d}:15:00+00:00")
        ids.append(run.id)
    return ids


def test_status_alone_lists_the_newest_runs_first(capsys, monkeypatch):
    ids = _store_with_runs(12)
    monkeypatch.setenv("COLUMNS", "120")
    code, out, _ = _cli(capsys, "status")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["run", "id", "claim", "scale", "state", "when", "(UTC)", "verdict"]
    rows = [line.split() for line in lines[1:11]]
    assert [r[0] for r in rows] == ids[::-1][:10]   # ten, newest first
    assert rows[0] == [ids[11], "verus/ironkv", "-", "running", "2026-11-12", "11:15", "-"]
    assert rows[1] == [ids[10], "pesto/sample-runs", "rehearsal", "failed", "2026-11-11", "10:15", "-"]
    assert rows[2] == [ids[9], "aardvark/archive-throughput", "rehearsal", "succeeded", "2026-11-10", "09:15", "holds"]
    assert _one_line(" ".join(lines[11:])) == "(the newest 10 of 12 runs: -n 12 lists them all)"
    code, out, _ = _cli(capsys, "status", "-n", "3")
    assert code == 0 and [line.split()[0] for line in out.splitlines()[1:4]] == ids[::-1][:3]
    assert "the newest 3 of 12" in out
    code, out, _ = _cli(capsys, "status", "-n", "12")
    assert [line.split()[0] for line in out.splitlines()[1:]] == ids[::-1]   # all of them, and no note


def test_status_alone_on_a_narrow_terminal_gives_each_run_two_lines(capsys, monkeypatch):
    ids = _store_with_runs(4)
    monkeypatch.setenv("COLUMNS", "50")
    code, out, _ = _cli(capsys, "status")
    lines = out.splitlines()
    assert code == 0 and max(len(line) for line in lines) <= 50
    assert lines[0] == ids[3] and _one_line(" ".join(lines[1:3])) == (
        "aardvark/archive-throughput at rehearsal scale, succeeded, holds, made 2026-11-04 03:15 UTC")
    assert lines[3] == ids[2] and _one_line(lines[4]) == "verus/ironkv, running, made 2026-11-03 02:15 UTC"
    assert lines[5] == ids[1] and ids[0] in lines


def test_status_counts_are_checked(capsys):
    (run_id,) = _store_with_runs(1)
    for bad in ("0", "-2", "ten"):
        with pytest.raises(SystemExit) as exit_:
            main(["status", "-n", bad])
        assert exit_.value.code == 2 and f"'{bad}' is not a count" in capsys.readouterr().err
    code, _, err = _cli(capsys, "status", run_id, "-n", "2")
    assert code == 2 and "-n 2 counts the runs `reprobook status` lists without a run id" in err


# ------------------------------------------------------------------ make test-fast on a fresh machine

def _stub_bin(tmp_path: Path, have: tuple[str, ...]) -> tuple[Path, Path]:
    """A PATH with only what the install script uses, ``have`` among the tools, and an apt-get that records."""
    bin_dir, log = tmp_path / "bin", tmp_path / "apt.log"
    bin_dir.mkdir()
    for prog in ("id", "env", "mkdir", "tee", "cat"):
        (bin_dir / prog).symlink_to(subprocess.run(["bash", "-c", f"command -v {prog}"], capture_output=True,
                                                   text=True, check=True).stdout.strip())
    for prog in have:
        (bin_dir / prog).write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "apt-get").write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    (bin_dir / "sudo").write_text('#!/bin/sh\n[ "$1" = -n ] && shift\nexec "$@"\n')
    for p in bin_dir.iterdir():
        if not p.is_symlink():
            p.chmod(0o755)
    return bin_dir, log


@pytest.mark.parametrize("have, installs", [(("git",), True), (("git", "shellcheck"), False), ((), True)])
def test_the_unit_tests_programs_are_installed_only_when_missing(have, installs, tmp_path):
    bin_dir, log = _stub_bin(tmp_path, have)
    out = subprocess.run(["/bin/bash", str(ROOT / ".ci" / "install-system-deps.sh"), "unit"], capture_output=True,
                         text=True, env={"PATH": str(bin_dir), "HOME": str(tmp_path)}, timeout=60)
    assert out.returncode == 0, out.stderr
    if installs:
        apt = log.read_text().splitlines()
        lock = "-o DPkg::Lock::Timeout=600 "   # apt waits for another job's dpkg lock instead of failing at once
        assert apt[0] == lock + "update -qq" and apt[1].startswith(lock + "install ")
        assert apt[1].split()[-2:] == ["git", "shellcheck"]
        assert f"missing were: {' '.join(t for t in ('git', 'shellcheck') if t not in have)}" in out.stdout
    else:
        assert not log.exists() and "nothing to install (git and shellcheck present)" in out.stdout


def test_make_test_fast_installs_them_first():
    dry = subprocess.run(["make", "-n", "test-fast"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    steps = dry.stdout.splitlines()
    deps = steps.index("bash .ci/install-system-deps.sh unit")
    assert deps < next(i for i, s in enumerate(steps) if "pytest" in s)


# the programs a base Debian system always has (its essential packages), and make, which runs test-fast; anything
# else a unit test runs is installed by `install-system-deps.sh unit`
BASE = {"bash", "sh", "tar", "perl", "base64", "id", "df", "uname", "getconf", "awk", "env", "cat", "true", "make"}


def test_every_program_the_unit_tests_run_is_installed_by_test_fast():
    script = (ROOT / ".ci" / "install-system-deps.sh").read_text()
    unit_tools = set(re.search(r'if \[ "\$mode" = unit \]; then\n\s*packages=\(([^)]*)\)', script)[1].split())
    run = set()
    for test in (ROOT / "tests" / "unit").glob("*.py"):
        text = test.read_text()
        run |= set(re.findall(r'subprocess\.run\(\[\s*"([\w.+-]+)"', text))
        run |= set(re.findall(r'shutil\.which\("([\w.+-]+)"\)', text))
    assert {"git", "shellcheck"} <= run   # the search finds what it looks for
    assert run - BASE <= unit_tools, f"run by a unit test, not installed by make test-fast: {run - BASE - unit_tools}"


def test_a_list_given_with_p_is_a_sweep_and_junk_is_refused_naming_the_parameter(capsys):
    """`-p clients '[2, 4]'` (the README's sweep) reaches the plan as two points; it used to be refused as text."""
    from reprobook.cli import _parse_params, main
    assert _parse_params([("clients", "[2, 4]"), ("configs", "[a.json, b.json]"), ("x", "{a: 1}"), ("y", "[a")]) == \
        {"clients": [2, 4], "configs": ["a.json", "b.json"], "x": "{a: 1}", "y": "[a"}
    assert main(["plan", "pesto/point-scan", "-p", "clients", "[2, 4]"]) == 0
    out = capsys.readouterr().out
    assert "clients=[2, 4]" in out, out
    assert main(["plan", "pesto/point-scan", "-p", "clients", "[a"]) == 2
    err = capsys.readouterr().err
    assert "parameter clients of pesto/point-scan takes a list of int" in err
    assert "(like its default [" in err and ",)" not in err, err   # a list as typed, not a Python tuple's (0,)
