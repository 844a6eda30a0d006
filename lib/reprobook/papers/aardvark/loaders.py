"""Aardvark (USENIX Security '22): Table 1, validator and archive throughput."""

from __future__ import annotations

from reprobook.errors import OutputError
from reprobook.papers.aardvark import parsers as parse
from reprobook.core.loaders import loader
from reprobook.lazy import lazy

pd = lazy("pandas")

PAPER_TXNS_PER_BLOCK = parse.ARCHIVE_OPS_PER_TRIAL
"""Operations per block at the paper's scale (``txnsPerBlock`` in ledger/perf_test.go); an archive trial times one block."""
PAPER_WORKLOAD_BLOCKS = parse.VALIDATOR_OPS_PER_TRIAL // parse.ARCHIVE_OPS_PER_TRIAL
"""Blocks a validator trial times at the paper's scale (``numBlocksWorkload``): the authors' CSVs were measured so."""


WORDS = {"system": "system", "op": "operation", "median_us": ("median latency", "µs"),
         "p5_us": ("5th percentile", "µs"), "p95_us": ("95th percentile", "µs"), "n": "samples", "role": "role",
         "cores": "cores", "mean_ops_per_s": ("throughput", "ops/s"), "min_ops_per_s": ("slowest trial", "ops/s"),
         "max_ops_per_s": ("fastest trial", "ops/s"), "trials": "trials", "mean_seconds": ("time per trial", "s"),
         "ops_per_s_per_core": ("throughput per core", "ops/s")}
"""What the columns of Aardvark's tables are, to a reader (`reprobook.core.loaders.column_words`)."""


def _sizes(outputs) -> tuple[int, int]:
    """(operations per block, blocks per validator trial) of the run: its parameters (a rehearsal's are smaller),
    else the paper's (the authors' shipped outputs)."""
    params = getattr(outputs, "parameters", None) or {}
    return (int(params.get("txns_per_block", PAPER_TXNS_PER_BLOCK)),
            int(params.get("workload_blocks", PAPER_WORKLOAD_BLOCKS)))


@loader("aardvark.table1", words=WORDS)
def table1(outputs) -> pd.DataFrame:
    """Median latency per system and operation: EDRAX, Aardvark's pairing commitments, a Merkle tree.

    Columns: ``system``, ``op``, ``median_us``, ``p5_us``, ``p95_us``, ``n``. ``attrs`` keeps the
    readers' ``errs`` (EDRAX's failed verify calls: the artifact's behaviour, reported on the page),
    ``iters`` and ``calibration_100us_us``.
    """
    edrax = outputs.one("edrax")
    veccom = outputs.one("veccom")
    raw = parse.read_table1(edrax, veccom)
    summary = parse.latency_summary(raw)
    summary.attrs.update({k: raw.attrs[k] for k in ("errs", "iters", "calibration_100us_us", "source") if k in raw.attrs})
    summary.attrs["edrax_verify_calls"] = int((raw["system"].eq("edrax") & raw["op"].eq("verify")).sum())
    return summary


def _trials(outputs, role: str, csv_name: str) -> pd.DataFrame:
    if outputs.has(csv_name):
        return parse.read_trials_csv(outputs.one(csv_name), role=role)
    logs = outputs.files.get("logs", [])
    if not logs:
        raise OutputError(f"neither the authors' {csv_name}.csv nor any go test log was fetched",
                          file=outputs.location)
    return pd.concat([parse.read_go_test_times(p, role=role) for p in logs], ignore_index=True)


@loader("aardvark.validators", words=WORDS)
def validators(outputs) -> pd.DataFrame:
    """Validator throughput per operation and core count (a trial times 10 blocks, 100,000 operations, at the paper's scale).

    Columns: ``role``, ``op``, ``cores``, ``mean_ops_per_s``, ``min_ops_per_s``, ``max_ops_per_s``, ``trials``.
    """
    trials = _trials(outputs, "validator", "validators")
    txns, blocks = _sizes(outputs)
    ops = txns * blocks
    rates = parse.throughput(trials, ops_per_trial=ops)
    return _with_trials(parse.throughput_summary(rates), rates)


@loader("aardvark.archives", words=WORDS)
def archives(outputs) -> pd.DataFrame:
    """Archive throughput per core (a trial is one block: 10,000 operations at the paper's scale), adding ``ops_per_s_per_core``."""
    trials = _trials(outputs, "archive", "archives")
    rates = parse.throughput(trials, ops_per_trial=_sizes(outputs)[0])
    summary = parse.throughput_summary(rates)
    summary["ops_per_s_per_core"] = summary["mean_ops_per_s"] / summary["cores"]
    return _with_trials(summary, rates)


def _with_trials(summary: pd.DataFrame, rates: pd.DataFrame) -> pd.DataFrame:
    """``summary`` carrying its trials (``attrs["trials"]``), so that the checks judge each point over them with an
    interval (`reprobook.core.checks`): one row per trial, its rate under the summary's column names, and the
    statistic that gives the summary's value (total operations over total time: the harmonic mean of the rates)."""
    per = rates.drop(columns=["seconds"]).rename(columns={"ops_per_s": "mean_ops_per_s"})
    per["ops_per_s_per_core"] = per["mean_ops_per_s"] / per["cores"]
    summary.attrs["trials"] = {"column": "trial", "statistic": "hmean", "rows": per.to_dict("records")}
    return summary
