"""Tests of the Pesto parser (reprobook.papers.pesto.parsers), its loaders and the knee of a curve.

Real inputs: every ``stats.json`` the authors ship in the Pequin artifact's ``sample-output/Pesto``
(21 client settings of four experiments, from the artifact mirror), their resolved configs and
the authors' plot CSVs; the published curves are the guide's tables in ``configs/papers/pesto.yaml``.
Inputs that the artifact does not ship (several runs, reordered types, malformed files) are
derived from a shipped file in each test, which says how.
"""

from __future__ import annotations

import json
import math
import shutil
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reprobook.core.checks import Verdict, check_claim
from reprobook.core.config import load_project
from reprobook.errors import ConfigError, OutputError
from reprobook.core.loaders import get_loader
from reprobook.papers.pesto import loaders as loaders
from reprobook.papers.pesto import parsers as parse
from reprobook.sources import Outputs
from tests.conftest import ROOT

PEQUIN = "github.com/fsuri/Pequin-Artifact/3f47079c96be29565e16cefc21d14eda519c14a3/sample-output/Pesto"
TPCC = "1-Workloads/TPCC/2024-10-21-16-59-02"
ZINCON = "2-Microbenchmarks/2-Snapshot/Zipf-Inconsistent/2024-11-01-10-29-31/2024-11-01-10-29-31"
UFP = "2-Microbenchmarks/3-Failure/Uniform-Failure-2/2024-10-26-16-59-15/2024-10-26-16-59-15"
SCAN = "2-Microbenchmarks/1-Point-Scan/Range-Cond/2024-10-21-15-15-54"
# (client_total, throughput, mean latency) of run_stats.combined, as the authors' lat-tput.csv prints them
TPCC_POINTS = [(15, 1310.5666666666666, 11.771777716204186), (20, 1605.4666666666667, 12.820031009841376),
               (30, 1784.2666666666667, 17.311395202193243), (35, 1768.2333333333333, 20.395508472317),
               (40, 1741.6666666666667, 23.673802742870816), (45, 1705.1666666666667, 27.221747489434073)]


@pytest.fixture(scope="module")
def sample(mirror) -> Path:
    path = mirror / PEQUIN
    assert path.is_dir(), f"{path} is missing from the artifact mirror"
    return path


def outputs(*paths) -> Outputs:
    return Outputs("pesto/test", "reference", "test", {"runs": tuple(Path(p) for p in paths)}, location="test outputs")


def copy_point(src: Path, dest: Path) -> Path:
    """A copy of one client setting's directory (resolved config + out/stats.json)."""
    shutil.copytree(src, dest)
    return dest / "out" / "stats.json"


def rewrite(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


# --------------------------------------------------------------------------- stats.json

def test_every_shipped_stats_json_is_read(sample):
    stats = parse.find_stats([sample])
    assert len(stats) == 21  # 6 TPCC + 1 scan + 6 Z-Incon + 8 U-FP settings
    for path in stats:
        frame = parse.read_stats(path)
        assert frame["type"].iloc[0] == "combined"
        assert list(frame.columns) == parse.STATS_COLUMNS
        combined = frame.iloc[0]
        assert combined["tput_tx_per_s"] > 0 and combined["latency_ms"] > 0 and combined["p99_ms"] >= combined["p50_ms"]
        assert combined["runs"] == 1 and combined["tput_tx_per_s_std"] == 0.0
        # with one run, the pooled latency (the authors' lat-tput plot) is the run's mean
        assert combined["aggregate_latency_ms"] == pytest.approx(combined["latency_ms"], rel=1e-12)
        others = set(frame["type"][1:])
        assert others in ({"delivery", "new_order", "order_status", "payment", "stock_level"}, {"rw_sql"})


def test_tpcc_values_and_client_counts(sample):
    rows = []
    for path in parse.find_stats([sample / TPCC]):
        config = parse.read_config(parse.point_config(path))
        combined = parse.read_stats(path).iloc[0]
        rows.append((config["client_total"], parse.total_clients(config, path), combined["tput_tx_per_s"],
                     combined["latency_ms"], combined["tput_per_correct_client"]))
    assert [(r[0], r[2], r[3]) for r in sorted(rows)] == TPCC_POINTS
    assert all(r[0] == r[1] for r in rows)  # 6 servers x 1 node x 8 processes = 48 >= every client_total
    # tput_s_honest: throughput over ceil((1 - 0/100) * client_total * threads) correct clients
    assert all(r[4] == pytest.approx(r[2] / r[0]) for r in rows)


def test_plot_csvs_agree_with_the_statistics(sample):
    for exp in (TPCC, ZINCON, UFP, SCAN):
        stats = parse.find_stats([sample / exp])
        computed = []
        for path in stats:
            name, series, point = parse.resolved_name(parse.point_config(path))
            config = parse.read_config(parse.point_config(path))
            computed.append({"order": (series, point), "client_total": config["client_total"],
                             **parse.read_stats(path).iloc[0].to_dict()})
        computed = pd.DataFrame(computed).sort_values("order")
        checked = parse.check_plot_csvs(sample / exp / "plots", computed)
        assert len(checked) == len(stats)
        assert np.allclose(checked["tput_tx_per_s"], checked["computed_tput_tx_per_s"], rtol=1e-12)
        assert np.allclose(checked["aggregate_latency_ms"], checked["computed_latency_ms"], rtol=1e-12)
        assert list(checked["client_total"]) == list(computed["client_total"])


def test_a_plot_csv_that_disagrees_is_a_finding_naming_file_line_and_field(sample, tmp_path):
    exp = tmp_path / "exp"
    shutil.copytree(sample / TPCC, exp)
    csv = exp / "plots" / "lat-tput.csv"
    lines = csv.read_text().splitlines()
    lines[2] = "1784.2666666666667,18.5"  # the 30-client setting, with another latency
    csv.write_text("\n".join(lines) + "\n")
    # the authors' two files disagreeing is evidence about the artifact, not a reason to give no verdict
    frame = get_loader("pesto.curves")(outputs(exp))
    assert len(frame) == 6
    (finding,) = frame.attrs["findings"]
    assert finding.startswith(f"{csv.parent}/lat-tput.csv, line 3, field 'aggregate_latency_ms': the plot says 18.5, "
                              f"stats.json says 17.3114"), finding
    # called on its own without a list to collect them, the check still raises, naming file, line and field
    computed = pd.DataFrame(TPCC_POINTS, columns=["client_total", "tput_tx_per_s", "aggregate_latency_ms"])
    with pytest.raises(OutputError) as info:
        parse.check_plot_csvs(exp / "plots", computed)
    err = info.value
    assert err.file == str(csv) and err.line == 3 and err.field == "aggregate_latency_ms"


def test_combined_need_not_come_first(sample, tmp_path):
    src = parse.find_stats([sample / TPCC])[2]
    stats = copy_point(src.parent.parent, tmp_path / "point")
    data = json.loads(stats.read_text())
    data["run_stats"] = dict(reversed(list(data["run_stats"].items())))  # combined last
    data = {"runs": data["runs"], "run_stats": data["run_stats"], "aggregate": data["aggregate"]}
    stats.write_text(json.dumps(data))
    assert list(json.loads(stats.read_text())["run_stats"])[-1] == "combined"
    frame = parse.read_stats(stats)
    assert frame["type"].iloc[0] == "combined"
    assert frame["tput_tx_per_s"].iloc[0] == pytest.approx(1784.2666666666667)


def test_several_runs_keep_their_spread(sample, tmp_path):
    """Runs within one stats.json (run_stats over three runs, as eval_util.py writes them), and the same
    setting in two output directories, pooled by the loader."""
    src = parse.find_stats([sample / TPCC])[2].parent.parent
    stats = copy_point(src, tmp_path / "a" / src.name)
    tputs, lats = [1700.0, 1784.0, 1868.0], [16.0, 17.0, 18.0]

    def three_runs(data):
        data["runs"] = [data["runs"][0]] * 3
        for metric, values in (("tput", tputs), ("mean", lats)):
            data["run_stats"]["combined"][metric].update(mean=float(np.mean(values)), stddev=float(np.std(values)))
    rewrite(stats, three_runs)
    frame = parse.read_stats(stats).iloc[0]
    assert frame["runs"] == 3
    assert frame["tput_tx_per_s"] == pytest.approx(1784.0)
    assert frame["tput_tx_per_s_std"] == pytest.approx(np.std(tputs))
    # the same setting once more, in another output directory: one run at 1784 tx/s
    other = copy_point(src, tmp_path / "b" / src.name)
    rewrite(other, lambda d: d["run_stats"]["combined"]["tput"].update(mean=1784.0, stddev=0.0))
    measured = get_loader("pesto.curves")(outputs(tmp_path / "a", tmp_path / "b"))
    assert len(measured) == 1
    row = measured.iloc[0]
    every = tputs + [1784.0]
    assert row["runs"] == 4
    assert row["tput_tx_per_s"] == pytest.approx(np.mean(every))
    assert row["tput_tx_per_s_std"] == pytest.approx(np.std(every))
    # run_stats was rewritten here and its runs were not: the file disagrees with itself, which is a finding
    # (naming the file and the key), and the setting is judged on run_stats without trials
    assert "trials" not in measured.attrs
    assert [f for f in measured.attrs["findings"] if "run_stats.combined.tput.mean" in f and str(stats) in f
            and "the mean of its 3 runs" in f]


def _spread_runs(stats: Path, factors) -> None:
    """stats.json as eval_util.py writes it for len(factors) runs: each run's combined throughput and latency
    the shipped run's times a factor, and run_stats their mean and population spread."""
    def change(data):
        first = data["runs"][0]
        data["runs"] = [json.loads(json.dumps(first)) for _ in factors]
        for run, f in zip(data["runs"], factors):
            for metric in ("tput", "mean", "p50", "p99", "tput_s_honest"):
                if metric in run["combined"]:
                    run["combined"][metric] = first["combined"][metric] * f
        for metric in ("tput", "mean", "p50", "p99", "tput_s_honest"):
            if metric in data["run_stats"]["combined"]:
                values = [r["combined"][metric] for r in data["runs"]]
                data["run_stats"]["combined"][metric].update(mean=float(np.mean(values)), stddev=float(np.std(values)))
    rewrite(stats, change)


def test_repeated_runs_are_trials_and_a_check_on_them_has_an_interval(sample, tmp_path):
    """A TPCC curve whose settings ran three times: each run is a trial of its setting (labelled as the
    setting's row, its knee included), and a check on the knee judges the mean with a bootstrap interval;
    with the authors' single runs it says that no spread could be measured."""
    from reprobook.core.checks import evaluate_check, trial_rows
    from reprobook.core.model import CheckSpec
    shutil.copytree(sample / TPCC, tmp_path / "tpcc")
    for stats in parse.find_stats([tmp_path / "tpcc"]):
        _spread_runs(stats, (0.98, 1.0, 1.02))
    measured = get_loader("pesto.curves")(outputs(tmp_path / "tpcc"))
    trials = measured.attrs["trials"]
    assert trials["column"] == "trial" and trials["statistic"] == "mean" and "knee" in trials["keys"]
    assert len(trials["rows"]) == 3 * len(measured) and not measured.attrs["findings"]
    judged = trial_rows(measured)
    assert len(judged) == 3 * len(measured) and judged.attrs["trial_column"] == "trial"
    knee_tput = float(measured.loc[measured["knee"], "tput_tx_per_s"].iloc[0])
    spec = CheckSpec(kind="at_least", what="the knee's throughput", value="tput_tx_per_s",
                     options={"select": {"knee": True}, "min": knee_tput * 0.9})
    held = evaluate_check(spec, judged, {})
    assert held.verdict is Verdict.HOLDS and held.trials == 3 and held.interval is not None
    assert held.interval[0] > 0 and "95 % interval of the margin" in held.reason
    # a bound inside the runs' own spread: not a verdict
    close = evaluate_check(CheckSpec(kind="at_least", what="the knee's throughput", value="tput_tx_per_s",
                                     options={"select": {"knee": True}, "min": knee_tput * 0.995}), judged, {})
    assert close.verdict is Verdict.INCONCLUSIVE and "spans 0" in close.reason
    # the authors' outputs: one run per setting
    shipped = get_loader("pesto.curves")(outputs(sample / TPCC))
    one = evaluate_check(spec, trial_rows(shipped), {})
    assert one.verdict is Verdict.HOLDS and one.trials == 1 and "no spread could be measured" in one.reason


@pytest.mark.parametrize("change, field", [
    (lambda d: d.pop("run_stats"), "run_stats"),
    (lambda d: d["run_stats"].pop("combined"), "run_stats.combined"),
    (lambda d: d["run_stats"]["combined"].pop("tput"), "run_stats.combined.tput"),
    (lambda d: d["run_stats"]["combined"]["mean"].pop("mean"), "run_stats.combined.mean.mean"),
    (lambda d: d["run_stats"]["combined"]["tput"].update(mean="fast"), "run_stats.combined.tput.mean"),
    (lambda d: d["run_stats"]["combined"]["tput"].update(stddev=None), "run_stats.combined.tput.stddev"),
    (lambda d: d["run_stats"].update(combined=[1, 2]), "run_stats.combined"),
    (lambda d: d.update(runs=[]), "runs"),
])
def test_malformed_stats_name_file_and_key(sample, tmp_path, change, field):
    stats = copy_point(parse.find_stats([sample / TPCC])[0].parent.parent, tmp_path / "point")
    rewrite(stats, change)
    with pytest.raises(OutputError) as info:
        parse.read_stats(stats)
    assert info.value.file == str(stats) and info.value.field == field, str(info.value)


def test_invalid_json_names_line_and_column(tmp_path):
    path = tmp_path / "stats.json"
    path.write_text('{\n  "run_stats": {\n    "combined": {,\n')
    with pytest.raises(OutputError, match=r"stats.json, line 3: invalid JSON at column 18"):
        parse.read_stats(path)


def test_missing_or_malformed_config_beside_out(sample, tmp_path):
    point = parse.find_stats([sample / TPCC])[0].parent.parent
    stats = copy_point(point, tmp_path / "point")
    config = next((tmp_path / "point").glob("*-0-0.json"))
    rewrite(config, lambda d: d.pop("client_processes_per_client_node"))
    with pytest.raises(OutputError) as info:
        get_loader("pesto.curves")(outputs(tmp_path))
    assert info.value.file == str(config) and info.value.field == "client_processes_per_client_node"
    config.unlink()
    with pytest.raises(OutputError, match="expected one resolved config") as info:
        parse.point_config(stats)
    assert info.value.file == str(tmp_path / "point")
    with pytest.raises(OutputError, match="no out/stats.json"):
        get_loader("pesto.curves")(outputs(tmp_path / "nothing"))


def test_total_clients_is_the_scripts_count_not_the_guides_max():
    config = {"server_names": ["s"] * 6, "client_nodes_per_server": 1, "client_processes_per_client_node": 8,
              "client_threads_per_process": 1, "client_total": 30}
    assert parse.total_clients(config) == 30  # the guide's max(30, 48) would say 48
    assert parse.total_clients({**config, "client_total": 60}) == 48  # only 48 processes fit
    assert parse.total_clients({**config, "client_total": 30, "client_threads_per_process": 2}) == 60
    assert parse.total_clients({k: v for k, v in config.items() if k != "client_total"}) == 48
    with pytest.raises(OutputError) as info:
        parse.total_clients({**config, "client_total": [[30]]}, "cfg.json")
    assert info.value.field == "client_total" and "cfg.json" in str(info.value)


def test_paths_with_spaces_and_archives(sample, tmp_path):
    spaced = tmp_path / "Uniform - No batching" / "3-Micro: Crypto"
    shutil.copytree(sample / ZINCON, spaced)
    measured = get_loader("pesto.curves")(outputs(tmp_path / "Uniform - No batching"))
    assert list(measured["client_total"]) == [3, 5, 8, 12, 15, 20]
    assert measured.attrs["plot_csvs"] and all(" - No batching" in p for p in measured.attrs["plot_csvs"])
    archive = tmp_path / "runs with space.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(spaced, arcname="out dir")
    # the loader never opens an archive: one still packed is refused, naming it (an import or a fetch unpacks it)
    with pytest.raises(OutputError, match="never unpacked") as info:
        get_loader("pesto.curves")(outputs(archive))
    assert info.value.file == str(archive)
    from reprobook.core import archives
    archives.unpack(archive, tmp_path / "unpacked" / archive.name)
    from_archive = get_loader("pesto.curves")(outputs(tmp_path / "unpacked" / archive.name))
    pd.testing.assert_frame_equal(from_archive.drop(columns="directory"), measured.drop(columns="directory"))


def test_loader_labels_the_shipped_experiments(sample):
    measured = get_loader("pesto.curves")(outputs(sample))
    assert len(measured) == 21
    by_experiment = measured.groupby("experiment").size().to_dict()
    assert by_experiment == {"workloads": 6, "point-scan": 1, "snapshot": 6, "failure": 8}
    assert set(measured["system"]) == {"Pesto"}
    scan = measured[measured["experiment"] == "point-scan"].iloc[0]
    assert (scan["type"], scan["range_size"]) == ("Scan-Cond", 100000)
    assert scan["latency_ms"] == pytest.approx(198.798, abs=1e-3)
    micro = measured[measured["experiment"].isin(["snapshot", "failure"])]
    assert set(zip(micro["access"], micro["mode"])) == {("Z", "Incon"), ("U", "FP")}
    knees = measured[measured["knee"]].set_index("experiment")
    assert knees.loc["workloads", "client_total"] == 30
    assert knees.loc["workloads", "knee_tput_tx_per_s"] == pytest.approx(1784.2667, abs=1e-3)
    assert knees.loc["workloads", "knee_latency_ms"] == pytest.approx(17.3114, abs=1e-3)
    assert knees.loc["snapshot", "client_total"] == 8 and knees.loc["failure", "client_total"] == 45
    assert measured["knee_tput_tx_per_s"].notna().sum() == 4  # one knee per curve, its value on that row only
    assert len(measured.attrs["plot_csvs"]) == 8


@pytest.mark.parametrize("change, system", [
    (lambda c: c.update(fault_tolerance=0), "Pesto-unreplicated"),
    (lambda c: c.update(replication_protocol="peloton-smr", replication_protocol_settings={"SMR_mode": 1}),
     "Peloton-HS"),
    (lambda c: c.update(replication_protocol="peloton-smr", replication_protocol_settings={"SMR_mode": 2}),
     "Peloton-Smart"),
    (lambda c: c.update(replication_protocol="peloton-smr", replication_protocol_settings={"SMR_mode": 0}),
     "Peloton"),
    (lambda c: c.update(replication_protocol="pg", pg_replicated=True), "Postgres-PB"),
    (lambda c: c.update(replication_protocol="pg"), "Postgres"),
    (lambda c: c.update(replication_protocol="crdb"), "CRDB"),
    (lambda c: c.update(_reprobook_labels={"system": "Pesto (patched)"}), "Pesto (patched)"),
])
def test_systems_from_the_resolved_config(sample, tmp_path, change, system):
    """The shipped TPCC setting's resolved config, with the keys that tell the systems apart changed."""
    copy_point(parse.find_stats([sample / TPCC])[0].parent.parent, tmp_path / "point")
    rewrite(next((tmp_path / "point").glob("*-0-0.json")), change)
    assert get_loader("pesto.curves")(outputs(tmp_path))["system"].tolist() == [system]


def test_basil_loader_labels_failures(sample, tmp_path):
    """Basil's client-failure stats are Pequin's format; the labels come from its config (here the shipped
    Z-Incon setting's resolved config turned into Basil's RW-Z stall-early config Indicus-90-2)."""
    point = parse.find_stats([sample / ZINCON])[0].parent.parent
    stats = copy_point(point, tmp_path / "point")
    config = next((tmp_path / "point").glob("*-0-0.json"))
    rewrite(config, lambda c: c.update(replication_protocol="indicus", benchmark_name="rw", client_key_selector="zipf",
                                       replication_protocol_settings={"inject_failure_type": "client-crash",
                                                                      "inject_failure_proportion": 90}))
    config.rename(config.with_name("Indicus-90-2-0-0.json"))
    rewrite(stats, lambda d: [r.update(tx_attempted_failure_percentage=40.0) for r in d["runs"]])
    row = get_loader("pesto.basil")(outputs(tmp_path)).iloc[0]
    assert (row["system"], row["workload"], row["failure_type"], row["config"]) == ("Basil", "RW-Z", "stall-early",
                                                                                      "Indicus-90-2")
    assert row["faulty_pct"] == 40.0 and row["tput_per_correct_client"] == pytest.approx(200.3556, abs=1e-3)



@pytest.mark.parametrize("name, config, labels", [
    ("Indicus-90-2", "Indicus-90-2", {"experiment": "client-failures"}),
    ("RW-U-EquivReal-Indicus-90-2", "Indicus-90-2", {"experiment": "client-failures"}),
    ("RW-Z-Indicus-NoFailures-c4", "Indicus-NoFailures", {"experiment": "client-failures"}),
    ("RW-U-Indicus-c2", "Indicus", {"experiment": "micro", "microbenchmark": "crypto", "crypto": "on"}),
    ("RW-Z-Indicus-NoCrypto", "Indicus-NoCrypto", {"experiment": "micro", "microbenchmark": "crypto", "crypto": "off"}),
    ("f+1-c4", "f+1", {"microbenchmark": "reads", "reads": "f+1"}),
    ("3-Indicus-RW-U", "3-Indicus-RW-U", {"microbenchmark": "sharding", "crypto": "on", "shards": 3}),
    ("RW-Z-Indicus_4_FP_OFF-c2", "Indicus_4_FP_OFF", {"microbenchmark": "fast-path", "fast_path": "off"}),
    ("RW-U-Indicus_32", "Indicus_32", {"microbenchmark": "batching", "batch": 32}),
    ("Something-else", "Something-else", {"experiment": "micro"}),
])
def test_basil_loader_reads_the_authors_name_inside_a_derived_one(sample, tmp_path, name, config, labels):
    """A config reprobook derived is named with the folders that tell it apart and, on a cluster of ours, its
    client count (pequin.input_names, pequin.cluster): the labels and the ``config`` column are the authors'
    name's, so the published tables' selections (``config: Indicus-90-2``) find a live run's rows."""
    point = parse.find_stats([sample / ZINCON])[0].parent.parent
    copy_point(point, tmp_path / "point")
    resolved = next((tmp_path / "point").glob("*-0-0.json"))
    rewrite(resolved, lambda c: c.update(replication_protocol="indicus", benchmark_name="rw",
                                         client_key_selector="uniform",
                                         replication_protocol_settings={"inject_failure_type": "client-crash",
                                                                        "inject_failure_proportion": 90}))
    resolved.rename(resolved.with_name(f"{name}-0-0.json"))
    row = get_loader("pesto.basil")(outputs(tmp_path)).iloc[0]
    assert row["config"] == config
    assert {k: row[k] for k in labels} == labels


# --------------------------------------------------------------------------- knees

def test_knee_of_the_shipped_tpcc_run_is_the_guides_ankle(sample):
    points = sorted(TPCC_POINTS)
    at = parse.knee([p[1] for p in points], [p[2] for p in points])
    assert points[at][0] == 30
    assert points[at][1] == pytest.approx(1784, abs=1) and points[at][2] == pytest.approx(17.3, abs=0.05)


@pytest.fixture(scope="module")
def project():
    return load_project(ROOT)


# the knee of every published curve, (throughput, latency): the guide's ankle points where it names one
PUBLISHED_KNEES = {
    ("Pesto", "TPCC"): (1784, 17.3), ("Pesto", "Auctionmark"): (3315, 6.2), ("Pesto", "Seats"): (3958, 6.4),
    ("Pesto-unreplicated", "TPCC"): (1337, 11.5), ("Pesto-unreplicated", "Auctionmark"): (3353, 4.6),
    ("Pesto-unreplicated", "Seats"): (3570, 4.3),
    ("Peloton", "TPCC"): (1632, 12.6), ("Peloton", "Auctionmark"): (4582, 5.5), ("Peloton", "Seats"): (4840, 6.4),
    ("Postgres", "TPCC"): (1614, 7.7), ("Postgres", "Auctionmark"): (6530, 2.5), ("Postgres", "Seats"): (7444, 2.2),
    ("Peloton-HS", "TPCC"): (758, 68.3), ("Peloton-HS", "Auctionmark"): (3304, 37),
    ("Peloton-HS", "Seats"): (3420, 36.1),
    ("Peloton-Smart", "TPCC"): (785, 39.4), ("Peloton-Smart", "Auctionmark"): (3219, 28.5),
    ("Peloton-Smart", "Seats"): (3355, 30),
    ("Postgres-PB", "TPCC"): (1198, 17.2), ("Postgres-PB", "Auctionmark"): (5720, 5.3),
    ("Postgres-PB", "Seats"): (7471, 5.5),
}


def test_knees_of_every_published_curve(project):
    curves = loaders.published_curves(project.claim("pesto/workloads"))
    found = {(r.system, r.workload): (r.tput_tx_per_s, r.latency_ms) for r in curves[curves["knee"]].itertuples()}
    assert found == PUBLISHED_KNEES
    # against the ankle points the guide names: four exactly, Postgres-PB's Auctionmark and Seats one setting early
    ankles = {n.labels["system"] + "/" + n.labels["workload"]: n.value for n in project.paper("pesto").published_tables[
        "workloads-ankles"] if n.measure == "knee_tput_tx_per_s"}
    for key, value in ankles.items():
        system, workload = key.split("/")
        ratio = found[(system, workload)][0] / value
        assert ratio == 1.0 if workload == "TPCC" else 0.93 < ratio < 1.0, (key, ratio)
    micro = loaders.published_curves(project.claim("pesto/failures"))
    micro_knees = {(r.access, r.mode): (r.tput_tx_per_s, r.point) for r in micro[micro["knee"]].itertuples()}
    assert micro_knees == {("U", "Ideal"): (6911, 4), ("U", "FailEager"): (6140, 4), ("U", "Incon"): (6496, 5),
                           ("Z", "Ideal"): (2695, 4), ("Z", "FailEager"): (1823, 4), ("Z", "Incon"): (1333, 3),
                           ("U", "NoFP"): (5816, 6), ("U", "FP"): (5355, 5), ("Z", "NoFP"): (2521, 5),
                           ("Z", "FP"): (2116, 6)}


@pytest.mark.parametrize("tput, lat, expected", [
    ([100, 200, 300, 400], [5, 5, 5, 5], 3),            # never bends: the last point
    ([100, 200, 210, 220], [5, 5, 10, 20], 1),          # 5 % more for 100 % more latency is not worth it
    ([100, 200, 260, 250], [5, 5, 6, 9], 2),            # 30 % more for 20 % more latency is; then it falls
    ([100, math.nan, 300, 290], [5, 5, 6, 9], 2),       # a missing value is skipped
    ([300, 200, 100], [5, 6, 7], 0),                    # only losses
])
def test_knee_rule(tput, lat, expected):
    assert parse.knee(tput, lat) == expected


def test_knee_alpha_and_errors():
    # from 1605 to 1784 tx/s the TPCC curve gains 11 % for 35 % more latency: worth it at 0.3, not at 0.35
    tput, lat = [1311, 1605, 1784, 1768], [11.8, 12.8, 17.3, 20.4]
    assert parse.knee(tput, lat) == 2 and parse.knee(tput, lat, alpha=0.35) == 1
    with pytest.raises(ValueError, match="no point"):
        parse.knee([0, math.nan], [1, 2])
    with pytest.raises(ValueError, match="3 throughputs but 2"):
        parse.knee([1, 2, 3], [1, 2])


def test_mark_knees_per_curve():
    frame = pd.DataFrame({"system": ["A"] * 3 + ["B"] * 3, "clients": [30, 10, 20] * 2,
                          "tput_tx_per_s": [310, 100, 300, 300, 100, 200], "latency_ms": [20, 5, 6, 5, 5, 5]})
    marked = parse.mark_knees(frame, by=["system"], order="clients")
    assert marked[marked["knee"]][["system", "clients"]].values.tolist() == [["A", 20], ["B", 30]]


# --------------------------------------------------------------------------- the checks, on the guide's own numbers

def as_measured(curves: pd.DataFrame, **labels) -> pd.DataFrame:
    out = curves.assign(**labels)
    out["knee_tput_tx_per_s"] = out["tput_tx_per_s"].where(out["knee"])
    out["knee_latency_ms"] = out["latency_ms"].where(out["knee"])
    return out


@pytest.mark.parametrize("key, labels, tightest", [
    ("pesto/workloads", {"shards": 1}, 0.0402),       # Postgres-PB's Auctionmark knee, 6 % below the named ankle
    ("pesto/inconsistency", {}, 0.1105),               # U-FailEager keeps 88.8 % of Ideal, 80 % needed
    ("pesto/failures", {}, 0.1921),                    # U-FP keeps 77.5 %, 65 % needed
])
def test_the_guides_curves_pass_the_checks_at_their_knees(project, key, labels, tightest):
    """Calibration: the checks' readings hold on the guide's own tables, with the margins the pages state."""
    claim = project.claim(key)
    verdict = check_claim(claim, as_measured(loaders.published_curves(claim), **labels), source="the guide")
    assert verdict.verdict is Verdict.HOLDS, verdict.table()
    assert verdict.margin == pytest.approx(tightest, abs=5e-4)


def test_the_guides_ratios_recomputed_at_the_knees(project):
    claim = project.claim("pesto/workloads")
    ratios = loaders.knee_ratios(claim).set_index(["workload", "ratio", "measure"])
    at = ratios["published curves' knees"]
    assert at[("Auctionmark", "Peloton / Pesto", "throughput")] == pytest.approx(4582 / 3315)
    assert at[("TPCC", "Pesto / Peloton-HS", "throughput")] == pytest.approx(1784 / 758)
    assert at[("TPCC", "Peloton-HS / Pesto", "latency")] == pytest.approx(68.3 / 17.3)
    off = (ratios["published curves' knees"] / ratios["guide"] - 1).abs().reset_index()
    claim1 = off[off["ratio"].isin(["Peloton / Pesto", "Postgres / Pesto"])]
    assert claim1[claim1["workload"] != "TPCC"][0].max() < 0.04  # 1.38, 1.22, 1.97, 1.88 against 1.36, 1.22, 1.94, 1.94
    assert claim1[claim1["workload"] == "TPCC"][0].max() < 0.10   # "roughly equal": 0.91 and 0.90
    claim2 = off[off["ratio"].str.startswith("Pesto / ") & (off["measure"] == "throughput")]
    assert claim2[claim2["workload"] == "TPCC"][0].max() < 0.03   # 2.35 and 2.27 against 2.3
    assert ratios["measured knees"].isna().all()


def test_single_value_claims_hold_on_the_guides_numbers(project):
    """Sharding, point/scan and Basil: the published values, as one measured row each."""
    def frame(claim, y):
        from reprobook.book.plots import published_frame
        meta = ["published_id", "precision", "source", "source_name"]
        return published_frame(claim.published, y=y).drop(columns=meta)

    sharding = project.claim("pesto/sharding")
    rows = frame(sharding, "knee_tput_tx_per_s").rename(columns={"knee_tput_tx_per_s": "tput_tx_per_s"})
    rows = rows.assign(knee=True, workload="TPCC")
    assert check_claim(sharding, rows, source="the guide").verdict is Verdict.HOLDS
    point_scan = project.claim("pesto/point-scan")
    assert check_claim(point_scan, frame(point_scan, "latency_ms").assign(experiment="point-scan"),
                       source="the guide").verdict is Verdict.HOLDS
    failures = project.claim("pesto/basil-client-failures")
    rows = frame(failures, "tput_per_correct_client").assign(experiment="client-failures")
    assert check_claim(failures, rows, source="the guide").verdict is Verdict.HOLDS
    micro = project.claim("pesto/basil-microbenchmarks")
    parts = []
    for table, name in (("basil-crypto", "crypto"), ("basil-reads", "reads"), ("basil-sharding", "sharding"),
                        ("basil-fast-path", "fast-path"), ("basil-batching", "batching")):
        cells = project.paper("pesto").published_tables[table]
        parts.append(pd.DataFrame([{**n.labels, "tput_tx_per_s": n.value, "microbenchmark": name} for n in cells]))
    verdict = check_claim(micro, pd.concat(parts, ignore_index=True), source="the guide")
    assert verdict.verdict is Verdict.HOLDS, verdict.table()


def test_sample_runs_reference_verdict(project, sample):
    from reprobook import api
    evaluation = api.evaluate("pesto/sample-runs", "reference")
    assert evaluation.verdict.verdict is Verdict.HOLDS
    assert evaluation.verdict.margin == pytest.approx(0.0499, abs=5e-4)  # the TPCC knee, 1784.27 against 1784 (±5 %)
    assert len(evaluation.verdict.checks) == 10
    assert loaders.series_configs(evaluation.outputs)[0].name == "Pequin-TPCC-SQL-20wh-0.json"


# --------------------------------------------------------------------------- runs judged together

def _tree(sample, tmp_path, name: str, change) -> Path:
    """An archive of the shipped TPCC experiment with every resolved config changed by ``change``."""
    tree = tmp_path / name
    shutil.copytree(sample / TPCC, tree / "experiment")
    for config in tree.rglob("*.json"):
        if parse._RESOLVED.fullmatch(config.name) and (config.parent / "out").is_dir():
            rewrite(config, change)
    archive = tmp_path / f"{name}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tree, arcname=".")
    return archive


def test_a_live_pesto_run_and_an_imported_cockroachdb_run_are_judged_as_one(sample, tmp_path, monkeypatch):
    """The sharding claim's CockroachDB part is run by hand: its imported run joins a run of Pesto's shards
    (source RUN1+RUN2), and the checks that compare the two systems are judged on both runs' rows."""
    import reprobook as rb
    monkeypatch.setenv("REPROBOOK_RUNS", str(tmp_path / "runs"))
    claim = rb.claim("pesto/sharding")
    three = _tree(sample, tmp_path, "pesto-3s", lambda c: c.update(num_shards=3))
    crdb = _tree(sample, tmp_path, "crdb-9", lambda c: c.update(
        replication_protocol="crdb", server_names=[f"node-{i}" for i in range(9)],
        _reprobook_labels={"system": "CRDB"}))
    facts = tmp_path / "facts.json"   # what the evaluator states of the nodes (the stock image the profile asks for)
    facts.write_text(json.dumps(rb.sources.facts_from_flags(os="Ubuntu 22.04", cores=8)))
    pesto_run = rb.import_run(claim, [three], machine="CloudLab Utah, m510 nodes", facts=facts)
    crdb_run = rb.import_run(claim, [crdb], machine="CloudLab Utah, m510 nodes (CockroachDB)", facts=facts)
    alone = rb.load(claim, rb.obtain(claim, pesto_run.id))
    assert set(alone["system"]) == {"Pesto"}
    both = rb.obtain(claim, f"{pesto_run.id}+{crdb_run.id}")
    assert both.run_id == f"{pesto_run.id}+{crdb_run.id}" and "CockroachDB" in both.label
    measured = rb.load(claim, both)
    knees = measured[measured["knee"]].set_index("system")
    assert (knees.loc["Pesto", "scale"], knees.loc["CRDB", "scale"]) == (3, 9)
    verdict = rb.check(claim, measured, both)
    ratio = next(r for r in verdict.checks if r.what.startswith("three Pesto shards reach"))
    # the same shipped numbers under both names: a ratio of 1, computed from both runs' rows, short of 2
    assert str(ratio.verdict) == "fails" and "1" in ratio.reason, ratio.reason
    with pytest.raises(ConfigError, match="join two or more different run ids"):
        rb.obtain(claim, f"{pesto_run.id}+{pesto_run.id}")
    with pytest.raises(ConfigError, match="only recorded runs can be joined, not auto"):
        rb.obtain(claim, f"{pesto_run.id}+auto")
