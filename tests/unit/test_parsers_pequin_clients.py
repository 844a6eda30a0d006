"""The Pequin benchmark client's own output, read by `reprobook.papers.pesto.parsers.read_client_output`.

The inputs are REAL outputs of TAPIR (Retwis) and Pesto (rw-sql) built from source on this project's
test machine and run by hand on 127.0.0.1 (see ``data/pequin-live/README.md``): four client processes
each, their stdout and stderr in one file as the processes wrote them, the clients' statistics files
and the server's. They are kept as test input; nothing in them is made up.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from reprobook.errors import OutputError
from reprobook.papers.pesto import parsers as parse

DATA = Path(__file__).parent / "data" / "pequin-live"
OP = re.compile(r"^[A-Za-z_][\w-]*,\d+,\d+,\d+$")


def _clients(system: str) -> list[Path]:
    files = sorted(DATA.glob(f"{system}-client-*.out"))
    if not files:
        pytest.fail(f"no {system}-client-*.out under {DATA}")
    return files


@pytest.mark.parametrize("system", ["tapir-retwis", "pesto-rwsql"])
def test_each_client_counts_its_committed_transactions_and_says_how_long_it_measured(system):
    for path in _clients(system):
        summary, txns = parse.read_client_output(path)
        lines = [line for line in path.read_text(errors="replace").splitlines() if OP.match(line)]
        assert summary["committed"] == len(lines) == len(txns) > 0, path.name
        # the client's own count of requests over its measured interval includes the aborted ones
        assert summary["reported_requests"] >= summary["committed"] * 0.98, summary
        assert 1 <= summary["duration_s"] <= 60 and summary["tput_tx_per_s"] > 0
        # its median and 99th percentile: ours from the same transactions, the client's own lines beside them
        assert summary["p50_ms"] <= summary["p99_ms"]
        if summary["reported_p50_ms"] == summary["reported_p50_ms"]:  # printed when the client got that far
            assert summary["reported_p50_ms"] == pytest.approx(summary["p50_ms"], rel=0.1), path.name
            assert summary["reported_p99_ms"] == pytest.approx(summary["p99_ms"], rel=0.1), path.name


@pytest.mark.parametrize("system", ["tapir-retwis", "pesto-rwsql"])
def test_the_clients_together_and_what_their_statistics_files_say(system):
    per, txns = parse.read_clients(_clients(system))
    total = per.iloc[-1]
    assert total["file"] == "all" and total["committed"] == per.iloc[:-1]["committed"].sum() == len(txns)
    assert total["tput_tx_per_s"] == pytest.approx(per.iloc[:-1]["tput_tx_per_s"].sum())
    states = {parse.client_stats_state(p) for p in DATA.glob(f"{system}-client-*-stats.json")}
    assert states <= {"written", "empty"} and states, states
    # the clients' statistics cover the whole run (warm-up and cool-down too): never fewer commits than the
    # measured interval printed; the server's count, where it keeps one, covers every client's
    written = [json.loads(p.read_text()) for p in DATA.glob(f"{system}-client-*-stats.json")]
    committed = sum(v for d in written for k, v in d.items() if k.endswith("_committed") and isinstance(v, int))
    if committed:
        assert committed >= total["committed"]


def test_the_servers_count_agrees_with_the_clients_over_the_whole_run():
    """Pesto's server counts every commit of the run (warm-up and cool-down too); the clients print their
    warm-up and measured requests, and their cool-down (2 s here) is estimated at their measured rate."""
    per, _ = parse.read_clients(_clients("pesto-rwsql"))
    clients = per.iloc[:-1]
    warmups = [int(m) for p in _clients("pesto-rwsql")
               for m in re.findall(r"Completed warmup period of 2 seconds with (\d+) requests", p.read_text(errors="replace"))]
    assert clients["warmup_requests"].tolist() == warmups and len(warmups) == 4
    whole = parse.whole_run_requests(per, cooldown_s=2)
    assert whole > per.iloc[-1]["committed"] + sum(warmups)  # more than the lines printed: the cool-down is in it
    served = parse.server_commits(DATA / "pesto-rwsql-server-stats.json")
    assert served == json.loads((DATA / "pesto-rwsql-server-stats.json").read_text())["total_transactions_commit"]
    assert served == pytest.approx(whole, rel=0.03)  # measured: 8,668 counted, 8,773 from the clients (-1.2 %)
    assert parse.whole_run_requests(per, cooldown_s=0) < 0.9 * served  # without the cool-down they would not agree
    # the claims bound the count instead: from what the clients printed to that plus the estimated cool-down
    assert parse.printed_requests(per) == parse.whole_run_requests(per, cooldown_s=0) == \
        float(clients["warmup_requests"].sum() + clients["reported_requests"].sum())
    assert parse.printed_requests(per) < served < whole * 1.05


def test_a_server_that_keeps_no_count_says_none():
    assert "total_transactions_commit" not in json.loads((DATA / "tapir-retwis-server-stats.json").read_text())
    assert parse.server_commits(DATA / "tapir-retwis-server-stats.json") is None


def test_a_client_that_never_measured_is_an_error_naming_the_file(tmp_path):
    f = tmp_path / "client-0-0-0-stdout-0.log"
    f.write_text("starting client threadpool\nNum_cpus: 2\n")
    with pytest.raises(OutputError) as err:
        parse.read_client_output(f)
    assert "client-0-0-0-stdout-0.log" in str(err.value) and "did not get to measure" in str(err.value)


def test_an_empty_statistics_file_is_told_apart_from_a_missing_one(tmp_path):
    (tmp_path / "empty.json").write_text("{}")
    (tmp_path / "full.json").write_text('{"rw_sql_committed": 3}')
    assert parse.client_stats_state(tmp_path / "empty.json") == "empty"
    assert parse.client_stats_state(tmp_path / "full.json") == "written"
    assert parse.client_stats_state(tmp_path / "none.json") == "missing"


def test_a_client_that_committed_nothing_in_its_interval_measured_nothing_and_is_no_error(tmp_path):
    """A real Basil client that stalls its own transactions (``Indicus-90-2``; see the data's README): its stdout is
    empty, and its stderr says ``Completed 1185 requests in -94754367707406.774834 seconds`` (the interval's start is
    set by the first commit, which never came). It counts as a client that committed nothing, beside the others."""
    stderr = DATA / "basil-stalling-client-stderr.log"
    assert json.loads((DATA / "basil-stalling-client-stats.json").read_text())["total_byz_clients"] == 1
    (tmp_path / "client-0-0-0-stdout-0.log").write_text("")
    summary, txns = parse.read_client_output(tmp_path / "client-0-0-0-stdout-0.log", stderr)
    assert summary["committed"] == 0 and txns.empty and summary["tput_tx_per_s"] == 0
    assert summary["reported_requests"] == 1185 and summary["warmup_requests"] == 425
    assert summary["reported_s"] != summary["reported_s"]   # NaN, not -9.5e13
    # beside a client that measured, the point's sum is that client's alone
    per, _ = parse.read_clients([(tmp_path / "client-0-0-0-stdout-0.log", stderr), _clients("pesto-rwsql")[0]])
    measured = parse.read_client_output(_clients("pesto-rwsql")[0])[0]
    assert per.iloc[-1]["tput_tx_per_s"] == pytest.approx(measured["tput_tx_per_s"])
