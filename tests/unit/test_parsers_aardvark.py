"""Tests of reprobook.papers.aardvark.parsers on the authors' shipped outputs.

The CSVs, EDRAX's ``results`` and pointproofs' ``bench-results`` are the real
files from the artifact mirror. No ``outN.txt`` / ``aoutN.txt`` log is shipped,
so the ``go test -v`` inputs here are constructed from the format the guide and
``cores.sh`` describe (timing lines such as ``m time: 33.5s`` among other
``go test`` lines).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from reprobook.errors import ConfigError, OutputError
from reprobook.papers.aardvark import parsers as aardvark
from reprobook.papers.aardvark.parsers import (
    ARCHIVE_OPS_PER_TRIAL, VALIDATOR_OPS_PER_TRIAL, latency_summary, parse_go_duration,
    read_edrax, read_go_test_times, read_table1, read_trials_csv, read_veccom, throughput,
    throughput_summary)

LEDGER = ("github.com/derbear/aardvark-prototype/dd8f6aaf5f76173118f3f3decbe099bda5972ce2"
          "/go-algorand/ledger")
EDRAX = "github.com/derbear/edrax-vcs/1f1a3748d1530da1e75fadbce987ee6e6fa3fd1d/results"
VECCOM = "github.com/derbear/pointproofs/d72ed3c8b0e4624053360591fcc8d03ce720ae90/bench-results"
TRIAL_COLUMNS = ["role", "op", "cores", "trial", "seconds"]
LATENCY_COLUMNS = ["system", "op", "iteration", "latency_us"]
FUZZ = settings(max_examples=100, deadline=None)


def artifact(relative: str) -> Path:
    from tests.conftest import require_mirror
    root = require_mirror()
    path = root / relative
    assert path.is_file(), f"{path} is missing from the artifact mirror at {root}"
    return path


@pytest.fixture(scope="module")
def validators() -> pd.DataFrame:
    return read_trials_csv(artifact(f"{LEDGER}/validators.csv"), role="validator")


@pytest.fixture(scope="module")
def archives() -> pd.DataFrame:
    return read_trials_csv(artifact(f"{LEDGER}/archives.csv"), role="archive")


@pytest.fixture(scope="module")
def table1() -> pd.DataFrame:
    return read_table1(artifact(EDRAX), artifact(VECCOM))


def summary_row(summary: pd.DataFrame, **keys) -> pd.Series:
    mask = pd.Series(True, index=summary.index)
    for column, value in keys.items():
        mask &= summary[column] == value
    assert mask.sum() == 1, f"expected one row for {keys}, found {mask.sum()}"
    return summary[mask].iloc[0]


# --- the authors' validators.csv and archives.csv ----------------------------------------------

def test_validators_csv_has_ten_trials_per_op_and_core_count(validators):
    assert list(validators.columns) == TRIAL_COLUMNS
    assert len(validators) == 180
    assert set(validators["role"]) == {"validator"}
    assert set(validators["op"]) == {"modify", "create", "delete"}
    assert set(validators["cores"]) == {1, 2, 4, 8, 16, 32}
    assert (validators.groupby(["op", "cores"]).size() == 10).all()
    assert (validators.groupby(["op", "cores"])["trial"].apply(list)
            .map(lambda trials: trials == list(range(1, 11)))).all()
    assert validators["cores"].dtype == "int64" and validators["seconds"].dtype == "float64"
    # The file's first lines are m,32,36 and m,32,33 (with CRLF line ends).
    assert validators.iloc[0].to_dict() == {"role": "validator", "op": "modify", "cores": 32,
                                            "trial": 1, "seconds": 36.0}
    assert validators.iloc[1]["trial"] == 2 and validators.iloc[1]["seconds"] == 33.0


def test_validator_throughput_at_32_cores_is_one_to_three_thousand(validators):
    summary = throughput_summary(throughput(validators, ops_per_trial=VALIDATOR_OPS_PER_TRIAL))
    assert len(summary) == 18 and (summary["trials"] == 10).all()
    modify = summary_row(summary, op="modify", cores=32)
    assert modify["mean_seconds"] == pytest.approx(33.9)
    assert modify["mean_ops_per_s"] == pytest.approx(100_000 / 33.9)  # ≈ 2950
    assert modify["min_ops_per_s"] == pytest.approx(100_000 / 36)
    assert modify["max_ops_per_s"] == pytest.approx(100_000 / 33)
    assert summary_row(summary, op="create", cores=32)["mean_ops_per_s"] == pytest.approx(
        100_000 / 44.7)
    assert summary_row(summary, op="delete", cores=32)["mean_ops_per_s"] == pytest.approx(
        1485.88, abs=0.01)
    assert summary_row(summary, op="modify", cores=1)["mean_ops_per_s"] == pytest.approx(
        100_000 / 342.0)
    at_32 = summary[summary["cores"] == 32]["mean_ops_per_s"]
    assert at_32.between(1000, 3000).all()
    # Validators benefit from parallelism: throughput grows with cores for every op.
    for _, group in summary.groupby("op"):
        assert group.sort_values("cores")["mean_ops_per_s"].is_monotonic_increasing


def test_archive_throughput_is_about_20_modify_and_10_delete_per_core(archives):
    assert len(archives) == 30 and set(archives["cores"]) == {1}
    assert set(archives["role"]) == {"archive"}
    summary = throughput_summary(throughput(archives, ops_per_trial=ARCHIVE_OPS_PER_TRIAL))
    assert summary_row(summary, op="modify")["mean_ops_per_s"] == pytest.approx(24.30, abs=0.01)
    assert summary_row(summary, op="create")["mean_ops_per_s"] == pytest.approx(24.63, abs=0.01)
    assert summary_row(summary, op="delete")["mean_ops_per_s"] == pytest.approx(12.44, abs=0.01)
    assert summary_row(summary, op="delete")["mean_seconds"] == pytest.approx(803.6)


def test_summary_mean_is_the_throughput_of_the_mean_trial(archives):
    trials = throughput(archives, ops_per_trial=ARCHIVE_OPS_PER_TRIAL)
    delete = trials[trials["op"] == "delete"]
    row = summary_row(throughput_summary(trials), op="delete")
    assert row["mean_ops_per_s"] == pytest.approx(10_000 / delete["seconds"].mean())
    # The mean of per-trial rates is larger (Jensen): the two must not be confused.
    assert delete["ops_per_s"].mean() > row["mean_ops_per_s"] + 0.01
    assert row["min_ops_per_s"] == pytest.approx(10_000 / 899)
    assert list(trials.columns) == [*TRIAL_COLUMNS, "ops_per_trial", "ops_per_s"]


def test_reader_accepts_str_and_path(validators):
    path = artifact(f"{LEDGER}/validators.csv")
    pd.testing.assert_frame_equal(read_trials_csv(str(path), role="validator"), validators)
    assert validators.attrs["source"] == str(path)


# --- Table 1: EDRAX and pointproofs ------------------------------------------------------------

def test_edrax_results():
    edrax = read_edrax(artifact(EDRAX))
    assert list(edrax.columns) == LATENCY_COLUMNS
    assert len(edrax) == 3000 and set(edrax["system"]) == {"edrax"}
    assert list(edrax["op"].unique()) == ["verify", "commit_update", "proof_update"]
    assert (edrax.groupby("op")["iteration"].max() == 1000).all()
    assert edrax.iloc[:3]["latency_us"].tolist() == [3130.0, 3135.0, 3133.0]
    assert edrax.attrs["errs"] == 1100
    assert edrax.attrs["calibration_100us_us"] == 159.0  # the timed 100 µs sleep
    verify = edrax[edrax["op"] == "verify"]["latency_us"]
    assert verify.median() == pytest.approx(3131, abs=1)  # 3132.0


def test_veccom_bench_results():
    veccom = read_veccom(artifact(VECCOM))
    assert list(veccom.columns) == LATENCY_COLUMNS
    assert veccom.attrs["iters"] == 1000
    assert len(veccom) == 10_000
    assert (veccom.groupby(["system", "op"]).size() == 1000).all()
    assert veccom.iloc[0][["system", "op", "iteration", "latency_us"]].tolist() == [
        "aardvark", "commit", 1, 38677.0]
    medians = veccom.groupby(["system", "op"])["latency_us"].median()
    assert medians[("aardvark", "verify")] == 4780.5
    assert medians[("aardvark", "commit")] == 43876.5
    assert medians[("aardvark", "proof_update")] == 69.0
    assert medians[("merkle", "commit")] == 1546.0
    assert medians[("merkle", "verify")] == 10.0
    assert medians[("merkle", "open")] == 0.0


def test_table1_summary(table1):
    assert len(table1) == 13_000
    assert list(table1["system"].unique()) == ["edrax", "aardvark", "merkle"]
    assert table1.attrs["iters"] == 1000 and table1.attrs["errs"] == 1100
    summary = latency_summary(table1)
    assert list(summary.columns) == ["system", "op", "median_us", "p5_us", "p95_us", "n"]
    assert len(summary) == 13 and (summary["n"] == 1000).all()
    assert (summary["p5_us"] <= summary["median_us"]).all()
    assert (summary["median_us"] <= summary["p95_us"]).all()
    verify = summary.set_index(["system", "op"]).loc[:, "median_us"]
    assert verify[("edrax", "verify")] == 3132.0
    edrax_verify = summary_row(summary, system="edrax", op="verify")
    assert (edrax_verify["p5_us"], edrax_verify["p95_us"]) == (3117.0, 3143.0)
    # Claim 1: Aardvark's commitments cost more than a Merkle tree, about as much as EDRAX's.
    assert verify[("merkle", "verify")] < verify[("aardvark", "verify")]
    assert 1 < verify[("aardvark", "verify")] / verify[("edrax", "verify")] < 2


# --- raw go test logs (constructed: no sample is shipped) ---------------------------------------

GO_LOG = """\
=== RUN   TestTimeWorkload
m time: 33.5s
c time: 44.7s
d time: 1m7.3s
m time: 34s
--- PASS: TestTimeWorkload (179.50s)
PASS
ok  \tgithub.com/algorand/go-algorand/ledger\t179.601s
"""


def test_go_log_validator_times(tmp_path):
    path = tmp_path / "out32.txt"
    path.write_text(GO_LOG)
    trials = read_go_test_times(path)
    assert list(trials.columns) == TRIAL_COLUMNS
    assert trials.values.tolist() == [
        ["validator", "modify", 32, 1, 33.5], ["validator", "create", 32, 1, 44.7],
        ["validator", "delete", 32, 1, 67.3], ["validator", "modify", 32, 2, 34.0]]


def test_go_log_archive_times(tmp_path):
    path = tmp_path / "aout1.txt"
    path.write_text("archive m time: 6m51.5s\narchive d time: 13m23.6s\nd time: 850ms\n")
    trials = read_go_test_times(path)
    assert trials["role"].tolist() == ["archive"] * 3
    assert trials["seconds"].tolist() == pytest.approx([411.5, 803.6, 0.85])
    assert set(trials["cores"]) == {1}


def test_go_log_explicit_role_and_cores(tmp_path):
    path = tmp_path / "run.log"
    path.write_text("    perf_test.go:321: m time: 1h2m3.5s\r\narchive c time: 2s\r\n")
    trials = read_go_test_times(path, role="archive", cores=4)
    assert trials[["role", "cores", "seconds"]].values.tolist() == [
        ["archive", 4, 3723.5], ["archive", 4, 2.0]]
    with pytest.raises(OutputError, match="core count") as info:
        read_go_test_times(path)
    assert info.value.field == "cores"


def test_go_log_role_conflict_and_no_timings(tmp_path):
    path = tmp_path / "out2.txt"
    path.write_text("=== RUN   TestTimeWorkload\narchive m time: 5s\n")
    with pytest.raises(OutputError) as info:
        read_go_test_times(path, role="validator")
    assert (info.value.line, info.value.field) == (2, "role")
    path.write_text(GO_LOG.replace(" time:", " elapsed:"))
    with pytest.raises(OutputError, match="no timing lines") as info:
        read_go_test_times(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("text, seconds", [
    ("850ms", 0.85), ("33.5s", 33.5), ("1m7.3s", 67.3), ("1h2m3.5s", 3723.5),
    ("1.5µs", 1.5e-6), ("1.5μs", 1.5e-6), ("1.5us", 1.5e-6), ("2ns", 2e-9), ("0", 0.0),
    (".5s", 0.5), ("-1.5s", -1.5), ("6m51.5s", 411.5), ("1h", 3600.0)])
def test_parse_go_duration(text, seconds):
    assert parse_go_duration(text) == pytest.approx(seconds, rel=1e-12)


@pytest.mark.parametrize("text", [
    "", "s", "1", "1.5", "1x", "1 s", "1.2.3s", "1e3s", "--1s", "nan", "inf", "1s2", "٣s",
    "1m 7s", "ms", "."])
def test_parse_go_duration_rejects_garbage(text):
    with pytest.raises(OutputError, match="not a Go duration") as info:
        parse_go_duration(text, file="out1.txt", line=7)
    assert (info.value.file, info.value.line, info.value.field) == ("out1.txt", 7, "time")


# --- malformed inputs --------------------------------------------------------------------------

def read_validators_csv(path: Path) -> pd.DataFrame:
    return read_trials_csv(path, role="validator")


CSV = read_validators_csv
MALFORMED = [
    # reader, file name, content, line, field
    (CSV, "v.csv", "", None, None),
    (CSV, "v.csv", "\r\n \n", None, None),
    (CSV, "v.csv", "m,32,36\nm,32\n", 2, None),
    (CSV, "v.csv", "m,32,36\nm,32,36,1\n", 2, None),
    (CSV, "v.csv", "m,32,36\n\nx,32,36\n", 3, "op"),
    (CSV, "v.csv", "m,32,abc\n", 1, "seconds"),
    (CSV, "v.csv", "m,32,-3\n", 1, "seconds"),
    (CSV, "v.csv", "m,32,0\n", 1, "seconds"),
    (CSV, "v.csv", "m,32,nan\n", 1, "seconds"),
    (CSV, "v.csv", "m,32,1e999\n", 1, "seconds"),
    (CSV, "v.csv", "m,thirty,36\n", 1, "cores"),
    (CSV, "v.csv", "m,0,36\n", 1, "cores"),
    (CSV, "v.csv", "m,99999999999999999999,36\n", 1, "cores"),
    (read_go_test_times, "out4.txt", "ok\nm time: fast\n", 2, "time"),
    (read_go_test_times, "out4.txt", "x time: 3s\n", 1, "op"),
    (read_go_test_times, "out4.txt", "m time: 0s\n", 1, "time"),
    (read_go_test_times, "out0.txt", "m time: 3s\n", None, "cores"),
    (read_edrax, "results", "verify,1,2,\ncommit_update,1,2,\nproof_update,1,2,\n100micros,1,\n",
     None, "errs"),
    (read_edrax, "results", "verify,1,x,\n", 1, "verify"),
    (read_edrax, "results", "verify,1,2,\nfoo,1,2,\n", 2, "name"),
    (read_edrax, "results", "verify,1,\nverify,1,\n", 2, "verify"),
    (read_edrax, "results", "verify,\n", 1, "verify"),
    (read_edrax, "results", "verify,1,2,\ncommit_update,1,\nproof_update,1,2,\n100micros,1,\n"
     "errs,0\n", 2, "commit_update"),
    (read_edrax, "results", "errs,1,2\n", 1, "errs"),
    (read_edrax, "results", "errs,-1\n", 1, "errs"),
    (read_veccom, "bench-results", "bench_pairing_verify,[1]\n", 1, "iters"),
    (read_veccom, "bench-results", "iters,0\n", 1, "iters"),
    (read_veccom, "bench-results", "iters,2\n\nbench_pairing_verify,[1, 2, 3]\n", 3,
     "bench_pairing_verify"),
    (read_veccom, "bench-results", "iters,2\nbench_merkle_open,1, 2\n", 2, "bench_merkle_open"),
    (read_veccom, "bench-results", "iters,2\nbench_merkle_open,[1, two]\n", 2,
     "bench_merkle_open"),
    (read_veccom, "bench-results", "iters,2\nbench_rsa_open,[1, 2]\n", 2, "name"),
    (read_veccom, "bench-results", "iters,2\nbench_merkle_open,[1, 2]\n", None,
     "bench_pairing_commit"),
]


@pytest.mark.parametrize("reader, name, content, line, field", MALFORMED)
def test_malformed_input_names_file_line_and_field(tmp_path, reader, name, content, line, field):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8", newline="")
    with pytest.raises(OutputError) as info:
        reader(path)
    message = str(info.value)
    assert str(path) in message
    assert (info.value.line, info.value.field) == (line, field)
    if line is not None:
        assert f"line {line}" in message


def test_veccom_length_error_names_row(tmp_path):
    text = artifact(VECCOM).read_text().replace("[38677, ", "[", 1)
    path = tmp_path / "bench-results"
    path.write_text(text)
    with pytest.raises(OutputError, match="999 values, but the first line says iters,1000") as info:
        read_veccom(path)
    assert (info.value.line, info.value.field) == (2, "bench_pairing_commit")


def test_unreadable_files(tmp_path):
    with pytest.raises(OutputError, match="cannot read") as info:
        read_edrax(tmp_path / "absent")
    assert str(tmp_path / "absent") in str(info.value)
    with pytest.raises(OutputError, match="cannot read"):
        read_veccom(tmp_path)
    path = tmp_path / "v.csv"
    path.write_bytes(b"m,1,3\nm,1,\xff\n")
    with pytest.raises(OutputError, match="UTF-8") as info:
        CSV(path)
    assert info.value.line == 2


def test_bad_parameters_and_frames(validators):
    with pytest.raises(ConfigError, match="role"):
        read_trials_csv(artifact(f"{LEDGER}/validators.csv"), role="validators")
    with pytest.raises(ConfigError, match="ops_per_trial"):
        throughput(validators, ops_per_trial=0)
    broken = validators.copy()
    broken.loc[5, "seconds"] = 0.0
    with pytest.raises(OutputError, match="trial 6 .*must be positive") as info:
        throughput(broken, ops_per_trial=VALIDATOR_OPS_PER_TRIAL)
    assert info.value.field == "seconds" and "validators.csv" in str(info.value)
    with pytest.raises(ValueError, match="throughput"):
        throughput_summary(validators)


# --- properties --------------------------------------------------------------------------------

@st.composite
def go_durations(draw) -> tuple[str, float]:
    """A Go duration string made of h/m/s/ms parts, and its value in seconds."""
    order = ["h", "m", "s", "ms"]
    parts = draw(st.lists(st.sampled_from(order), min_size=1, max_size=4, unique=True)
                 .map(lambda units: sorted(units, key=order.index)))
    text, seconds = "", 0.0
    for unit in parts:
        whole = draw(st.integers(0, 10_000 if unit == "h" else 999))
        digits = draw(st.text("0123456789", max_size=3))
        number = f"{whole}.{digits}" if digits else str(whole)
        text += number + unit
        seconds += float(number) * {"h": 3600, "m": 60, "s": 1, "ms": 1e-3}[unit]
    return text, seconds


@FUZZ
@given(go_durations())
def test_property_go_duration_round_trip(duration):
    text, seconds = duration
    assert math.isclose(parse_go_duration(text), seconds, rel_tol=1e-12, abs_tol=1e-12)


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("aardvark_fuzz")


noise_lines = st.text(st.characters(exclude_characters="\n", exclude_categories=("Cs",)), max_size=60).filter(
    lambda line: "time:" not in line)
timing_lines = st.tuples(st.booleans(), st.sampled_from("mcd"), go_durations()).filter(
    lambda timing: timing[2][1] > 0)


@FUZZ
@given(st.lists(st.one_of(noise_lines, timing_lines), max_size=30))
def test_property_timing_lines_found_among_noise(fuzz_dir, lines):
    path = fuzz_dir / "out8.txt"
    path.write_text("\n".join(line if isinstance(line, str) else
                              f"{'archive ' if line[0] else ''}{line[1]} time: {line[2][0]}"
                              for line in lines), encoding="utf-8")
    expected = [line for line in lines if isinstance(line, tuple)]
    try:
        trials = read_go_test_times(path)
    except OutputError as error:
        assert not expected, f"valid timing lines were rejected: {error}"
        assert "no timing lines" in str(error) or "empty" in str(error)
        return
    assert trials["op"].tolist() == [{"m": "modify", "c": "create", "d": "delete"}[x[1]]
                                     for x in expected]
    assert trials["seconds"].tolist() == pytest.approx([x[2][1] for x in expected], rel=1e-12)
    assert trials["role"].tolist() == ["archive" if x[0] else "validator" for x in expected]
    assert set(trials["cores"]) == {8}


TOKENS = ["verify", "commit_update", "proof_update", "100micros", "errs", "iters",
          "bench_pairing_verify", "bench_merkle_open", "m", "c", "d", "archive", " time: ",
          "1m7.3s", "33.5s", ",", ", ", "[", "]", "\n", "\r\n", "0", "1", "2", "32", "1000",
          "3.5", "-1", "nan", "1e999", " ", "x", "µ", "\x00", "\ufeff"]
contents = st.one_of(st.binary(max_size=200),
                     st.text(st.characters(exclude_categories=("Cs",)), max_size=200).map(lambda text: text.encode("utf-8")),
                     st.lists(st.sampled_from(TOKENS), max_size=60)
                     .map(lambda tokens: "".join(tokens).encode("utf-8")))
VECCOM_SAMPLE = "iters,2\n" + "\n".join(
    f"bench_{scheme}_{op},[1, 2]\n" for scheme in ("pairing", "merkle")
    for op in ("commit", "open", "verify", "commit_update", "proof_update"))
READERS = {  # reader, file name, a small valid input to mutate
    "csv": (CSV, "v.csv", "m,32,36\r\nc,1,3.5\r\nd,2,7\r\n"),
    "go": (read_go_test_times, "out4.txt", GO_LOG),
    "edrax": (read_edrax, "results",
              "verify,1,2,\ncommit_update,3,4,\nproof_update,5,6,\n100micros,159,160,\nerrs,0\n"),
    "veccom": (read_veccom, "bench-results", VECCOM_SAMPLE),
}


@st.composite
def mutated(draw, text: str) -> bytes:
    """A valid input with a few random deletions and insertions."""
    for _ in range(draw(st.integers(1, 4))):
        start = draw(st.integers(0, len(text)))
        end = start + draw(st.integers(0, 4))
        text = text[:start] + draw(st.sampled_from(["", *TOKENS])) + text[end:]
    return text.encode("utf-8")


@pytest.mark.parametrize("kind", sorted(READERS))
@FUZZ
@given(data=st.data())
def test_property_readers_raise_only_output_error(fuzz_dir, kind, data):
    reader, name, sample = READERS[kind]
    path = fuzz_dir / name
    path.write_bytes(data.draw(st.one_of(contents, mutated(sample))))
    try:
        frame = reader(path)
    except OutputError as error:
        assert str(path) in str(error)
        event("OutputError")
        return
    event("parsed")
    assert list(frame.columns) in (TRIAL_COLUMNS, LATENCY_COLUMNS)
    assert len(frame) > 0


def test_constants():
    assert (VALIDATOR_OPS_PER_TRIAL, ARCHIVE_OPS_PER_TRIAL) == (100_000, 10_000)
    assert aardvark.__doc__ and all(f.__doc__ for f in (
        parse_go_duration, read_trials_csv, read_go_test_times, read_edrax, read_veccom,
        read_table1, latency_summary, throughput, throughput_summary))
