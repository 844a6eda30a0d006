"""Loaders: a claim's outputs -> the measured table its checks and plot use.

A claim names its loader in its paper file as ``<module>.<function>`` (e.g.
``aardvark.validators``); the function receives the `Outputs` and returns a
tidy DataFrame with units in its column names. Loaders accept both the
authors' shipped outputs and the raw files of a live run.
"""

from __future__ import annotations

import importlib

import pandas as pd

from ..config import Claim
from ..errors import ConfigError


def get_loader(name: str):
    """The loader function named ``module.function``."""
    module, _, func = name.rpartition(".")
    try:
        mod = importlib.import_module(f"{__name__}.{module}")
        return getattr(mod, func)
    except (ImportError, AttributeError):
        raise ConfigError(f"no loader {name!r} (expected a function {func!r} in reprobook/loaders/{module}.py)") from None


def load(claim: Claim, outputs) -> pd.DataFrame:
    """The measured table of ``claim`` from ``outputs`` (empty if nothing was obtained)."""
    if outputs is None or not outputs.available:
        return pd.DataFrame()
    return get_loader(claim.loader)(outputs)
