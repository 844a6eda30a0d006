"""Aardvark (USENIX Security '22): Table 1, validator and archive throughput."""

from __future__ import annotations

import pandas as pd

from ..errors import OutputError
from ..parsers import aardvark as parse
from . import loader


@loader("aardvark.table1")
def table1(outputs) -> pd.DataFrame:
    """Median latency per system and operation: EDRAX, Aardvark's pairing commitments, a Merkle tree.

    Columns: ``system``, ``op``, ``median_us``, ``p5_us``, ``p95_us``, ``n``.
    """
    edrax = outputs.one("edrax")
    veccom = outputs.one("veccom")
    return parse.latency_summary(parse.read_table1(edrax, veccom))


def _trials(outputs, role: str, csv_name: str) -> pd.DataFrame:
    if outputs.has(csv_name):
        return parse.read_trials_csv(outputs.one(csv_name), role=role)
    logs = outputs.files.get("logs", [])
    if not logs:
        raise OutputError(f"neither the authors' {csv_name}.csv nor any go test log was fetched",
                          file=outputs.location)
    return pd.concat([parse.read_go_test_times(p, role=role) for p in logs], ignore_index=True)


@loader("aardvark.validators")
def validators(outputs) -> pd.DataFrame:
    """Validator throughput per operation and core count (a trial is 100,000 operations).

    Columns: ``role``, ``op``, ``cores``, ``mean_ops_per_s``, ``min_ops_per_s``, ``max_ops_per_s``, ``trials``.
    """
    trials = _trials(outputs, "validator", "validators")
    return parse.throughput_summary(parse.throughput(trials, ops_per_trial=parse.VALIDATOR_OPS_PER_TRIAL))


@loader("aardvark.archives")
def archives(outputs) -> pd.DataFrame:
    """Archive throughput per core (a trial is 10,000 operations), adding ``ops_per_s_per_core``."""
    trials = _trials(outputs, "archive", "archives")
    summary = parse.throughput_summary(parse.throughput(trials, ops_per_trial=parse.ARCHIVE_OPS_PER_TRIAL))
    summary["ops_per_s_per_core"] = summary["mean_ops_per_s"] / summary["cores"]
    return summary
