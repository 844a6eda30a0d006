"""reprobook: artifact guides of systems papers as an executable book.

A claim notebook needs only these names::

    import reprobook as rb
    claim = rb.claim("aardvark/validator-throughput")
    outputs = rb.obtain(claim, source="auto")
    measured = rb.load(claim, outputs)
    verdict = rb.check(claim, measured, outputs)
"""

from __future__ import annotations

__version__ = "0.1.0"

from .api import check, claim, describe, evaluate, glue_verdict, load, obtain, project, published  # noqa: E402
from .checks import ClaimVerdict, Verdict  # noqa: E402
from .errors import (ConfigError, ExperimentError, OutputError, ReprobookError,  # noqa: E402
                     TestbedError)
from . import plots  # noqa: E402

__all__ = ["__version__", "check", "claim", "describe", "evaluate", "glue_verdict", "load", "obtain", "project", "published",
           "plots", "ClaimVerdict", "Verdict", "ConfigError", "ExperimentError", "OutputError", "ReprobookError",
           "TestbedError"]
