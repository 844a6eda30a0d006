"""Hostile inputs, second round (issue 50, points 5 to 8): each proof of the issue, as a test.

5. text from a run reaches the terminal as text: an escape sequence in a machine description, a host's facts or
   its log is shown, never obeyed (`reprobook run`'s why/source lines, `status`'s log tail, `check-host`'s facts);
6. a value that reaches a shell is checked at one place: a claim parameter declares a pattern, and a value outside
   it is refused with exit 2 before anything runs; the generated ssh/rsync lines put their values after ``--``;
7. `reprobook new` checks its input before writing anything: hostile ids and titles leave ``git status`` clean;
8. validators match the whole value: ``"x\\n"`` is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path
from types import SimpleNamespace

import pytest

from reprobook import cli
from reprobook.core.config import load_project
from reprobook.core.runs import RunStore
from reprobook.formats.terminal import printable

CLI = [sys.executable, "-m", "reprobook"]
ROOT = Path(__file__).resolve().parents[2]
# a clipboard write (OSC 52), a cleared screen, a C1 CSI, a carriage return and a bidi override
ESCAPES = "\x1b]52;c;aGk=\x07\x1b[2J\x9b31m\rover\u202eevil"
SHOWN = "␛]52;c;aGk=␇␛[2J"


def assert_inert(out: str) -> None:
    """``out`` holds no control or format character but line feeds and tabs: nothing a terminal would obey."""
    bad = [(i, hex(ord(c))) for i, c in enumerate(out)
           if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp") and c not in "\n\t"]
    assert not bad, (bad[:5], out)


# --------------------------------------------------------------------------- 5. the terminal

def test_printable_shows_every_control_and_keeps_text():
    assert printable("Ubuntu 22.04, café, 😀\ttab") == "Ubuntu 22.04, café, 😀\ttab"
    shown = printable(ESCAPES + "\nnext\ud800")
    assert_inert(shown)
    assert SHOWN in shown and "\\x9b31m" in shown and "␍over" in shown and "\\u202eevil" in shown
    assert "␊next" in shown and "\\ud800" in shown
    assert printable("a\r\nb\x1b", lines=True) == "a␍\nb␛"


def test_run_prints_a_hostile_machine_as_text(mirror, tmp_path):
    """The issue's proof: an imported run's ``--machine`` holding escapes, then ``reprobook run --source``."""
    log = tmp_path / "aout1.txt"
    log.write_text("=== RUN   TestTimeArchive\narchive d time: 13m20s\narchive m time: 6m40s\n"
                   "archive c time: 6m40s\n--- PASS: TestTimeArchive\n")
    out = subprocess.run(CLI + ["import", "aardvark/archive-throughput", str(log), "--machine", "box " + ESCAPES],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert_inert(out.stdout + out.stderr)
    run_id = out.stdout.split(" as run ")[1].split()[0]
    out = subprocess.run(CLI + ["run", "aardvark/archive-throughput", "--source", run_id, "-q"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode in (0, cli.EXIT_INCONCLUSIVE), out.stderr   # judged (no machine facts: inconclusive)
    source = next(line for line in out.stdout.splitlines() if line.startswith("  source:"))
    assert "box " + SHOWN in source
    assert_inert(out.stdout)


def test_run_why_and_source_lines_are_text(capsys):
    verdict = {"claim": "pesto/sample-runs", "verdict": "fails", "margin": -0.5,
               "reason": f"needs Ubuntu 20.04, has {ESCAPES}", "source": f"run r1 on {ESCAPES}"}
    code = cli._report(verdict, SimpleNamespace(id="r1", path=Path("/tmp/r1")))
    out = capsys.readouterr().out
    assert code == cli.EXIT_FAILS
    assert_inert(out)
    assert f"  why:    needs Ubuntu 20.04, has {SHOWN}" in out and f"  source: run r1 on {SHOWN}" in out


def test_status_shows_the_hosts_log_tail_as_text(capsys, monkeypatch):
    from reprobook.remote import live
    project = load_project()
    claim = project.claim("aardvark/archive-throughput")
    RunStore(project.settings.runs_dir).create(claim, "live-1", source="live", host="local", status="running")
    tail = f"step 1 ok\n{ESCAPES}\r\nprogress 10%\rprogress 100%\n"
    st = SimpleNamespace(state="running", elapsed_s=12.0, exit_code=None, step=f"2/3 build{ESCAPES}", log_tail=tail)
    monkeypatch.setattr(live, "repair", lambda project, run: [f"fixed {ESCAPES}"])
    monkeypatch.setattr(live, "status", lambda project, run_id: (None, st))
    assert cli.main(["status", "live-1"]) == 0
    out = capsys.readouterr().out
    assert_inert(out)
    assert f"  {SHOWN}" in out and "  progress 10%␍progress 100%" in out and "  step 1 ok" in out


def test_check_host_prints_the_hosts_facts_as_text(capsys, monkeypatch):
    from contextlib import contextmanager
    from reprobook.core.requirements import facts_from
    from reprobook.remote import hosts
    facts = facts_from(f"cpus=4\nos_name=Ubuntu{ESCAPES}\nos_version=22.04\nkernel=6.1{ESCAPES}\n"
                       f"cpu_model=Evil{ESCAPES}\nhostname=h{ESCAPES}\n")

    @contextmanager
    def fake_open(spec, settings):
        yield SimpleNamespace(facts=lambda reqs: facts)
    monkeypatch.setattr(hosts, "open_host", fake_open)
    cli.main(["check-host", "local", "--claim", "aardvark/archive-throughput"])
    out = capsys.readouterr().out
    assert_inert(out)
    assert SHOWN in out


def test_an_error_quoting_run_data_is_text(capsys):
    assert cli.main(["status", "no-such-run" + ESCAPES]) == 2
    assert_inert(capsys.readouterr().err)
