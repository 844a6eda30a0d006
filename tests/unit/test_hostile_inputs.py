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
import subprocess
import sys
import textwrap
import unicodedata
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.support.project_copy import copy_project

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


def test_the_progress_line_shows_the_jobs_last_log_line_as_text(tmp_path):
    """A live run's progress bar and status carry the last lines of the host's log: a step that prints escapes or a
    bidi override moves no cursor and reorders nothing. The wait runs in a process of its own, as on a user's terminal
    (in a test worker that had run the whole suite, the bar's output once reached no capture at all)."""
    code = textwrap.dedent(f"""
        from reprobook.core.config import HostSpec
        from reprobook.remote import jobs
        from reprobook.remote.hosts import LocalHost
        host = LocalHost(HostSpec(name="local", ssh="local", workdir={str(tmp_path / "work")!r}))
        job, _ = jobs.launch(host, "job-esc", "printf 'line \\033]52;c;aGk=\\007\\033[2J \\\\342\\\\200\\\\256evil\\n'; sleep 1")
        st = job.wait(progress=True, poll_s=0.2)
        print(st.state)
        print(st.last_line)
        """)
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env,
                          stdin=subprocess.DEVNULL)
    err = done.stderr
    assert done.returncode == 0, err
    state, last = done.stdout.splitlines()
    # the escapes shown as text, the bidi override (printf's octal escapes: its UTF-8 bytes in the log) as its escape
    assert state == "succeeded" and last == "line ␛]52;c;aGk=␇␛[2J \\u202eevil", done.stdout
    assert "\u202e" not in last and last in err
    assert_inert(err.replace("\r", "\n"))   # (tqdm's own carriage returns redraw the bar)


def test_an_error_quoting_run_data_is_text(capsys, tmp_path):
    log = tmp_path / "aout1.txt"
    log.write_text("archive d time: 1s\n")
    missing = tmp_path / f"facts{ESCAPES}.txt"
    assert cli.main(["import", "aardvark/archive-throughput", str(log), "--machine", "m", "--facts", str(missing)]) == 2
    err = capsys.readouterr().err
    assert_inert(err)
    assert f"facts{SHOWN}" in err


# --------------------------------------------------------------------------- 6. values that reach a shell

SHELL_VALUES = ["x;id>/tmp/p;#", " -oProxyCommand=x", "-oProxyCommand=x", "$(id)", "a b", "pequin\n", "x`id`"]


@pytest.mark.parametrize("name", ["cloudlab_user", "cloudlab_experiment", "cloudlab_project"])
def test_every_pesto_claim_declares_the_cloudlab_patterns(name):
    claims = [c for c in load_project().paper("pesto").claims.values() if name in c.parameters]
    assert len(claims) >= 8
    for c in claims:
        p = c.parameters[name].pattern
        assert p is not None and p.spec == ("user" if name == "cloudlab_user" else "name"), c.key
        assert p.allows({"cloudlab_user": "fs435", "cloudlab_experiment": "pequin",
                         "cloudlab_project": "pequin-pg0"}[name])
        assert not any(p.allows(v) for v in SHELL_VALUES)


@pytest.mark.parametrize("value", ["x;id>/tmp/p;#", " -oProxyCommand=x", '"pequin\\n"'])
@pytest.mark.parametrize("name", ["cloudlab_user", "cloudlab_experiment"])
def test_a_cloudlab_value_for_a_shell_is_refused_before_anything_runs(tmp_path, name, value):
    """The issue's proof: the value would reach upload_data_remote.sh unquoted; it is refused with exit 2, naming
    the parameter, the value and what is allowed, and nothing is launched or written."""
    hosts = tmp_path / "hosts.yaml"   # a cluster the claim's roles fit: without the pattern, the run would go on
    names = {"control": ["control"], "server": [f"us-east-1-{i}" for i in range(3)] + [f"eu-west-1-{i}" for i in range(3)],
             "client": [f"client-{i}-0" for i in range(6)]}
    import yaml
    hosts.write_text(yaml.safe_dump({
        "hosts": {h: {"ssh": f"{h}.invalid", "workdir": "/w"} for hs in names.values() for h in hs},
        "clusters": {"pesto": {"roles": names}}}))
    env = {**os.environ, "REPROBOOK_HOSTS": str(hosts), "REPROBOOK_SSH_CONFIG": str(tmp_path / "ssh_config")}
    out = subprocess.run(CLI + ["run", "pesto/sample-runs", "--source", "live", "--host", "pesto", "-q",
                                "-p", name, value], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2, out.stderr
    assert f"parameter {name} of pesto/sample-runs must be a " in out.stderr and "Traceback" not in out.stderr
    assert ("user name" if name == "cloudlab_user" else "a name (letters") in out.stderr
    assert repr(yaml.safe_load(value)) in out.stderr
    assert not (tmp_path / "runs").exists() and not Path("/tmp/p").exists()
    assert_inert(out.stderr)


def test_a_pattern_is_checked_when_the_paper_loads(tmp_path):
    import yaml
    from reprobook.core.config import load_paper
    from reprobook.core.plan import make_plan
    from reprobook.errors import ConfigError

    def paper(params):
        claim = {"id": "c", "title": "t", "statement": "s", "refs": ["r"], "loader": "ozz.lmbench",
                 "checks": [{"kind": "at_least", "what": "w", "value": "value", "min": 0}], "parameters": params,
                 "outputs": {"out": {"path": "o", "glob": "*"}}}
        path = tmp_path / "patternfx.yaml"
        path.write_text(yaml.safe_dump({"paper": {"id": "patternfx", "title": "P", "venue": "tests"},
                                        "repositories": {}, "claims": [claim]}))
        return load_paper(path)
    with pytest.raises(ConfigError, match=r"claims\[0\]\.parameters\.who\.pattern") as info:
        paper({"who": {"default": "x", "help": "h", "pattern": "[a-"}})
    assert "not a regular expression" in str(info.value)
    with pytest.raises(ConfigError, match="the default 'Bad Name' is not a user name"):
        paper({"who": {"default": "Bad Name", "help": "h", "pattern": "user"}})
    with pytest.raises(ConfigError, match="the default 'c' is not a value matching"):
        paper({"axis": {"default": ["a", "b", "c"], "help": "h", "pattern": "[ab]"}})
    p = paper({"axis": {"default": ["a", "b"], "help": "the axis", "pattern": "[ab]"},
               "who": {"default": "", "help": "h", "pattern": "user"}})
    claim = p.claim("c")
    assert make_plan(claim, {"axis": ["b", "a"], "who": "fs435"}).params["axis"] == ("b", "a")
    with pytest.raises(ConfigError, match=r"parameter axis of patternfx/c must be a value matching the pattern "
                                          r"'\[ab\]', not 'ab': the axis"):
        make_plan(claim, {"axis": ["a", "ab"]})
    with pytest.raises(ConfigError, match=r"not 'fs435\\n'"):
        make_plan(claim, {"who": "fs435\n"})


def _stub(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    # one write a record: the script runs ssh for several hosts at once, and two writes a record interleaved
    path.write_text("#!/bin/bash\n" + 'rec=$(printf "%s\\x1f" "$(basename "$0")" "$@"); printf "%s\\n" "$rec" >> "$RB_ARGV_LOG"\n'
                    + body)
    path.chmod(0o755)


def test_the_preparations_ssh_and_rsync_put_every_host_after_double_dash(tmp_path):
    """The built command lines, recorded by an ssh and an rsync standing in for the real ones: the generated script
    of Postgres-PB (every kind of call: address lookup, a command on a host, a copy, a pipe between hosts)."""
    from reprobook.papers.pesto.systems import SYSTEMS, PostgresPlacement, placeholder, postgres_files, prepare_script
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _stub(bin_dir, "ssh", 'if [ "$1" = -G ] || [ "$2" = -G ]; then echo "hostname 127.0.0.1"; fi\n'
                          'case "$*" in *"cat "*password*) echo secret ;; esac\ncat > /dev/null\n')  # reads its input
    _stub(bin_dir, "rsync", "exit 0\n")
    servers, clients = ["us-east-1-0", "us-east-1-1"], ["client-0-0"]
    placement = PostgresPlacement(primary=servers[0], backup=servers[1], clients=clients, root=str(tmp_path / "r"),
                                  addresses={h: placeholder(h) for h in servers + clients})
    script = prepare_script(SYSTEMS["Postgres-PB"], servers=servers, clients=clients, root=str(tmp_path / "r"),
                            src_dir="/nowhere", files=postgres_files(placement))
    log = tmp_path / "argv.log"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "RB_RUN_DIR": str(tmp_path / "run"),
           "RB_ARGV_LOG": str(log)}
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and "prepared for this placement" in done.stdout, done.stderr
    calls = [line.split("\x1f")[:-1] for line in log.read_text().splitlines()]
    hosts = set(servers + clients)
    seen = set()
    for argv in calls:
        assert "--" in argv, argv
        after = argv[argv.index("--") + 1:]
        before = argv[:argv.index("--")]
        assert not any(a.split(":")[0] in hosts for a in before), argv   # no host among the options
        if argv[0] == "ssh":
            assert after[0] in hosts, argv
            seen.add(("ssh", after[0]))
        else:
            assert argv[0] == "rsync" and after[1].split(":")[0] in hosts, argv
            seen.add(("rsync", after[1].split(":")[0]))
    assert seen == {(tool, h) for tool in ("ssh", "rsync") for h in hosts}


@pytest.mark.parametrize("host", ["-oProxyCommand=touch /tmp/x", "a b", "h;id", "h\n", ""])
def test_a_placement_host_that_could_read_as_an_option_is_refused(host):
    from reprobook.errors import ConfigError
    from reprobook.papers.pesto.systems import SYSTEMS, prepare_script
    with pytest.raises(ConfigError, match="the placement's host") as info:
        prepare_script(SYSTEMS["Postgres-PB"], servers=[host, "b"], clients=["c"], root="/r", src_dir="/s",
                       files={"pg-primary.sh": ""})
    assert repr(host) in str(info.value)


# --------------------------------------------------------------------------- 7. reprobook new

def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), "-c", "user.email=t@example.org", "-c", "user.name=t", *args],
                          check=True, capture_output=True, text=True).stdout


@pytest.fixture()
def project(tmp_path):
    """A copy of the project (its library too, so a new paper's package is imported from the copy), under git."""
    dest = copy_project(tmp_path / "project")
    (dest / ".gitignore").write_text("__pycache__/\nruns/\n")
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "the project")
    return dest


def _new(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(project / "lib"), "REPROBOOK_ROOT": str(project),
           "REPROBOOK_RUNS": str(project / "runs")}
    # no stdin: `new` asks only at a terminal, and a test run from one must not wait for an answer
    return subprocess.run(CLI + ["new", *args], cwd=project, env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


HOSTILE_IDS = ["import", "class", "async", "no", "yes", "on", "off", "true", "null", "nl\n", "pesto", "aardvark"]


def test_reprobook_new_refuses_hostile_input_and_writes_nothing(project, monkeypatch, capsys):
    """The issue's proof: each hostile name, and a title or venue that would break the YAML, is refused with exit 2
    and leaves ``git status`` clean; the project's commands still work after."""
    cases = [[name] for name in HOSTILE_IDS]
    cases += [["toy", "--claim", claim] for claim in ("no", "null", "x\n")]
    cases += [["toy", "--title", "T\nextra: injected"], ["toy", "--venue", "SOSP\\\n  id: evil"],
              ["toy", "--title", "T\x1b[2J"], ["toy", "--venue", "V\r"]]
    monkeypatch.setenv("REPROBOOK_ROOT", str(project))
    for args in cases:   # in this process: the refusals come before anything is imported from the project
        code = cli.main(["new", *args])
        err = capsys.readouterr().err
        assert code == 2, (args, err)
        assert "Traceback" not in err and "nothing was written" in err, (args, err)
        assert _git(project, "status", "--porcelain", "--untracked-files=all") == "", args
    for args in (["import"], ["no"], ["nl\n"]):   # and through the command itself
        out = _new(project, *args)
        assert out.returncode == 2 and "nothing was written" in out.stderr, (args, out.stderr)
        assert _git(project, "status", "--porcelain", "--untracked-files=all") == "", args
    assert "first-claim" not in (project / "_toc.yml").read_text()
    claims = subprocess.run(CLI + ["claims"], env={**os.environ, "PYTHONPATH": str(project / "lib"),
                                                     "REPROBOOK_ROOT": str(project)},
                            capture_output=True, text=True, timeout=120)
    assert claims.returncode == 0 and "pesto/sample-runs" in claims.stdout, claims.stderr


def test_reprobook_new_writes_titles_through_yaml(project):
    """A title and a venue with YAML's and Python's special characters are written as themselves: the paper file
    loads with exactly them, no key is added, and the package imports."""
    title = 'A\\B: "quoted" #not-a-comment {x} """ \'s'
    venue = "SOSP '25: id: evil \\"
    out = _new(project, "toy", "--title", title, "--venue", venue)
    assert out.returncode == 0, out.stderr
    import yaml
    doc = yaml.safe_load((project / "configs/papers/toy.yaml").read_text())
    # the short name is the title's part before its colon, with the venue (no year at its end: as given)
    assert doc["paper"] == {"id": "toy", "title": title, "short": f"A\\B ({venue})", "venue": venue}
    toc = yaml.safe_load((project / "_toc.yml").read_text())
    assert toc["parts"][-1]["caption"] == f"A\\B ({venue})"
    env = {**os.environ, "PYTHONPATH": str(project / "lib"), "REPROBOOK_ROOT": str(project)}
    claims = subprocess.run(CLI + ["claims", "toy"], env=env, capture_output=True, text=True, timeout=120)
    assert claims.returncode == 0 and "toy/first-claim" in claims.stdout, claims.stderr


def test_a_failure_after_writing_began_removes_what_was_written(tmp_path):
    from reprobook.errors import ConfigError
    from reprobook.scaffold import new_paper
    root = tmp_path / "p"
    (root / "configs" / "papers").mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\n# the user's comment\nparts: []\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "x")

    def broken(path):
        assert path.is_file()
        raise ConfigError("the written paper does not load")
    with pytest.raises(ConfigError, match="does not load"):
        new_paper(root, "toy", check=broken)
    assert _git(root, "status", "--porcelain", "--untracked-files=all", "--ignored") == ""
    assert (root / "_toc.yml").read_text() == "format: jb-book\n# the user's comment\nparts: []\n"


# --------------------------------------------------------------------------- 8. whole-value validators

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_validators_refuse_a_trailing_newline(tmp_path):
    from reprobook.core.artifacts import parse_ref
    from reprobook.core.config import HostSpec
    from reprobook.errors import ConfigError
    from reprobook.papers.pesto.systems import PostgresPlacement, postgres_files
    from reprobook.remote.jobs import Job
    from reprobook.scaffold import check_id

    Job(None, "run-1")
    with pytest.raises(ValueError, match="not a valid run id"):
        Job(None, "run-1\n")
    assert HostSpec("h", "u@host:22", "/w").target() == ("u", "host", 22)
    with pytest.raises(ConfigError, match="cannot read SSH target"):
        HostSpec("h", "host\n", "/w").target()
    assert parse_ref(f"o/r@{COMMIT}:p").path == "p"
    with pytest.raises(ConfigError, match="not an artifact reference"):
        parse_ref(f"o/r@{COMMIT}:p\n")
    check_id("paper", "toy")
    for bad in ("toy\n", "nl\n"):
        with pytest.raises(ConfigError, match="lower-case"):
            check_id("paper", bad)
    good = PostgresPlacement(primary="a", clients=[], addresses={"a": "10.0.0.1"}, root="/r")
    assert "10.0.0.1" in postgres_files(good)["pg-primary.sh"]
    with pytest.raises(ConfigError, match="is not an IP address"):
        postgres_files(PostgresPlacement(primary="a", clients=[], addresses={"a": "10.0.0.1\n"}, root="/r"))
    with pytest.raises(ConfigError, match="not a plain name and value"):
        postgres_files(PostgresPlacement(primary="a", clients=[], addresses={"a": "10.0.0.1"}, root="/r",
                                         settings={"work_mem\n": "'4MB'"}))
    with pytest.raises(ConfigError, match="not a plain name and value"):
        postgres_files(PostgresPlacement(primary="a", clients=[], addresses={"a": "10.0.0.1"}, root="/r",
                                         settings={"work_mem": "4MB\n"}))


@pytest.mark.parametrize("where, bad", [("claims[0].id", "c\n"),
                                        ("repositories.art.commit", COMMIT + "\n")])
def test_the_paper_schema_matches_ids_and_commits_in_full(tmp_path, where, bad):
    import yaml
    from reprobook.core.config import load_paper
    from reprobook.errors import ConfigError
    doc = {"paper": {"id": "toy", "title": "T", "venue": "V"},
           "repositories": {"art": {"url": "https://example.org/a", "commit": COMMIT}},
           "claims": [{"id": "c", "title": "t", "statement": "s", "refs": ["r"], "loader": "ozz.lmbench",
                       "checks": [{"kind": "at_least", "what": "w", "value": "value", "min": 0}],
                       "outputs": {"out": {"path": "o", "glob": "*"}}}]}
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert load_paper(path).id == "toy"
    node, *keys = where.replace("[0]", ".0").split(".")
    target = doc[node]
    for k in keys[:-1]:
        target = target[int(k)] if k.isdigit() else target[k]
    target[keys[-1]] = bad
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match="toy.yaml"):
        load_paper(path)


def test_runs_json_is_the_same_json_and_inert(capsys):
    project = load_project()
    claim = project.claim("aardvark/archive-throughput")
    RunStore(project.settings.runs_dir).create(claim, "r-1", source="import", status="succeeded",
                                               parameters={"note": ESCAPES}, host=ESCAPES)
    assert cli.main(["runs", "--json"]) == 0
    out = capsys.readouterr().out
    assert_inert(out)
    row = json.loads(out)[0]
    assert row["host"] == ESCAPES and row["parameters"] == {"note": ESCAPES}
    assert cli.main(["runs"]) == 0
    assert_inert(capsys.readouterr().out)
