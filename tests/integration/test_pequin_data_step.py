"""The step that generates the SQL benchmarks' data (TPC-C, Auctionmark, Seats) and ships it, run as its script is
written in the paper file, on a control host over real sshd, with the cluster's servers and clients beside it.

The artifact's generators take minutes to build (``make live-pesto`` runs the real ones); here ``make`` builds
stand-ins that record their arguments and write what the real ones write: ``sql-<bench>-tables-schema.json`` and
``sql-<bench>-data/`` in their directory, and Auctionmark's ``auctionmark_profile``. The configs are the run's
inputs as the engine derives them (`reprobook.papers.pesto.pequin`), so the benchmarks and the generators' arguments
come from their fields: ``tpcc_num_warehouses`` and ``scale_factor``.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from reprobook.core.config import load_project
from reprobook.errors import ConfigError
from reprobook.papers.pesto.pequin import SQL_DATA, sql_data

pytestmark = pytest.mark.ssh
ROOT = Path(__file__).resolve().parents[2]
BENCHES = ("tpcc", "auctionmark", "seats")
NAMES = {"control": "127.0.0.150", "us-east-1-0": "127.0.0.151", "client-0-0": "127.0.0.152"}

GENERATOR = """#!/bin/bash
# stand-in for sql_{bench}_generator: records its arguments, writes what the real one writes
echo "{bench} $*" >> "$RB_TEST_CALLS"
[ -f "$RB_TEST_FAIL_{bench}" ] && {{ echo "generator {bench} crashed" >&2; exit 6; }}
umask 077   # as under the run's umask: what it writes is its user's alone
mkdir -p sql-{bench}-data
echo "rows for $*" > sql-{bench}-data/table.csv
echo '{{"tables": "{bench}"}}' > sql-{bench}-tables-schema.json
[ {bench} = auctionmark ] && echo "profile for $*" > auctionmark_profile
exit 0
"""


def _step():
    project = load_project(ROOT)
    claim = project.claim("pesto/workloads").at_scale("rehearsal")
    return next(s for s in claim.setup if s.name.startswith("generate the benchmark data"))


@pytest.fixture
def control(bed, tmp_path):
    for name, addr in NAMES.items():
        bed.add_host(name, addr)
    src = tmp_path / "Pequin-Artifact" / "src"
    rules = []
    for bench in BENCHES:
        gen = src / "store" / "benchmark" / "async" / "sql" / bench
        gen.mkdir(parents=True)
        (gen / "stand-in").write_text(GENERATOR.format(bench=bench))
        target = f"store/benchmark/async/sql/{bench}/sql_{bench}_generator"
        rules.append(f"{target}:\n\tcp {Path(target).parent}/stand-in $@ && chmod +x $@\n")
    (src / "Makefile").write_text("\n".join(rules))
    return src


def _configs(inputs: Path, configs: dict[str, dict]) -> None:
    """The run's inputs as the generator makes them: the configs and, from them, the list of data to generate."""
    inputs.mkdir(parents=True, exist_ok=True)
    for name, fields in configs.items():
        (inputs / name).write_text(json.dumps(fields))
    (inputs / "Peloton-HS-TPCC-20wh.prepare.sh").write_text("# not a config\n")
    (inputs / SQL_DATA).unlink(missing_ok=True)
    if wanted := sql_data(list(configs.values())):
        (inputs / SQL_DATA).write_text(wanted)


def _run(bed, src: Path, tmp_path: Path, *, check: bool = True) -> subprocess.CompletedProcess:
    root = tmp_path / "run root"   # a space: every path that reaches a shell is quoted
    env = {"RB_ROOT": str(root), "RB_WORKDIR": str(tmp_path), "RB_INPUTS": str(tmp_path / "inputs"),
           "RB_RUN_DIR": str(tmp_path / "rd"), "RB_SSH_CONFIG": str(bed.ssh_config_path), "RB_JOBS": "1",
           "RB_HOSTS_SERVER": "us-east-1-0", "RB_HOSTS_CLIENT": "client-0-0", "RB_CONTROL_HOST": "control",
           "RB_TEST_CALLS": str(tmp_path / "calls"), "RB_TEST_FAIL_seats": str(tmp_path / "fail-seats")}
    (tmp_path / "rd").mkdir(exist_ok=True)
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
    script = f"set -euo pipefail\n{exports}cd {shlex.quote(str(src))}\n{_step().run}"
    r = subprocess.run(bed.ssh_argv("control") + ["bash", "-s"], input=script, capture_output=True, text=True,
                       timeout=300)
    if check:
        assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def _calls(tmp_path: Path) -> list[str]:
    path = tmp_path / "calls"
    return path.read_text().splitlines() if path.exists() else []


def test_each_benchmark_the_configs_load_is_generated_once_with_their_arguments_and_shipped(bed, control, tmp_path):
    _configs(tmp_path / "inputs", {
        "Pequin-unreplicated-TPCC-SQL-20wh-c2.json": {"benchmark_name": "tpcc-sql", "tpcc_num_warehouses": 1},
        "Peloton-TPCC-20wh-c2.json": {"benchmark_name": "tpcc-sql", "tpcc_num_warehouses": 1},
        "Pequin-Auction-sf1-unreplicated-c2.json": {"benchmark_name": "auctionmark-sql", "scale_factor": 0.5},
        "Pequin-unreplicated-Seats-sf1-c2.json": {"benchmark_name": "seats-sql", "scale_factor": 1},
        "Pequin-RW-c2.json": {"benchmark_name": "rw-sql"},   # no data to generate
    })
    first = _run(bed, control, tmp_path)
    assert sorted(_calls(tmp_path)) == ["auctionmark --scale_factor=0.5", "seats --scale_factor=1",
                                        "tpcc -num_warehouses=1"], first.stdout
    data = tmp_path / "run root" / "data"
    for bench in BENCHES:
        assert (data / f"sql-{bench}-tables-schema.json").is_file()
        assert (data / f"sql-{bench}-data" / "table.csv").is_file()
        assert f"{bench} data (" in first.stdout and "generated in" in first.stdout
    assert (data / "auctionmark_profile").read_text() == "profile for --scale_factor=0.5\n"
    # the Postgres server process (the user postgres) loads the tables itself: every user may read the data
    for path in [data, *data.rglob("*")]:
        assert path.stat().st_mode & (0o555 if path.is_dir() else 0o444) == (0o555 if path.is_dir() else 0o444), path
    # each server and client was sent the data over SSH (on loopback hosts share this file system)
    for host in ("us-east-1-0", "client-0-0"):
        assert f"{host}: auctionmark seats tpcc data and schemas in {data}" in first.stdout, first.stdout
    assert "control:" not in first.stdout

    # the same arguments again: nothing generated, everything shipped
    again = _run(bed, control, tmp_path)
    assert len(_calls(tmp_path)) == 3 and again.stdout.count("generated already") == 3, again.stdout

    # another warehouse count: TPC-C alone is generated anew
    _configs(tmp_path / "inputs", {"Peloton-TPCC-20wh-c2.json": {"benchmark_name": "tpcc-sql", "tpcc_num_warehouses": 2},
                                   "Pequin-unreplicated-TPCC-SQL-20wh-c2.json": {"benchmark_name": "tpcc-sql",
                                                                                 "tpcc_num_warehouses": 2}})
    third = _run(bed, control, tmp_path)
    assert _calls(tmp_path)[3:] == ["tpcc -num_warehouses=2"], third.stdout
    assert (data / "sql-tpcc-data" / "table.csv").read_text() == "rows for -num_warehouses=2\n"


def test_a_failing_generator_names_its_benchmark_and_a_run_without_sql_data_generates_nothing(bed, control, tmp_path):
    _configs(tmp_path / "inputs", {"Peloton-Seats-c2.json": {"benchmark_name": "seats-sql", "scale_factor": 1}})
    (tmp_path / "fail-seats").touch()
    failed = _run(bed, control, tmp_path, check=False)
    assert failed.returncode == 1
    assert "generator seats crashed" in failed.stderr and "the seats generator failed (--scale_factor=1)" in failed.stderr
    assert not (tmp_path / "run root" / "data" / "sql-seats-data").exists()

    (tmp_path / "fail-seats").unlink()
    for config in (tmp_path / "inputs").glob("*.json"):
        config.unlink()
    _configs(tmp_path / "inputs", {"Pequin-RW-c2.json": {"benchmark_name": "rw-sql"}})
    calls = len(_calls(tmp_path))
    nothing = _run(bed, control, tmp_path)
    assert "no config of this run loads SQL benchmark data" in nothing.stdout and len(_calls(tmp_path)) == calls


def test_the_data_a_runs_configs_load_is_listed_once_per_benchmark_and_two_sizes_of_one_are_refused():
    configs = [{"benchmark_name": "tpcc-sql", "tpcc_num_warehouses": 1}, {"benchmark_name": "rw-sql"},
               {"benchmark_name": "seats-sql", "scale_factor": 1}, {"benchmark_name": "tpcc-sql", "tpcc_num_warehouses": 1},
               {"benchmark_name": "auctionmark-sql", "scale_factor": 0.5}]
    assert sql_data(configs) == "auctionmark --scale_factor=0.5\nseats --scale_factor=1\ntpcc -num_warehouses=1\n"
    assert sql_data([{"benchmark_name": "rw-sql"}, {}]) == ""
    with pytest.raises(ConfigError, match=r"tpcc at two sizes \(-num_warehouses=1, -num_warehouses=2\)"):
        sql_data(configs + [{"benchmark_name": "tpcc-sql", "tpcc_num_warehouses": 2}])
