"""reprobook: artifact guides of systems papers as an executable book.

A claim notebook needs only these names::

    import reprobook as rb
    claim = rb.claim("aardvark/validator-throughput")
    outputs = rb.obtain(claim, source="auto")
    measured = rb.load(claim, outputs)
    rb.plot(claim, measured)
    verdict = rb.check(claim, measured, outputs)
"""

from __future__ import annotations

__version__ = "0.1.0"

# Names are imported on first use (PEP 562): the command line and the run machinery start
# without loading pandas, matplotlib and seaborn.
_LAZY = {**{name: "api" for name in ("check", "claim", "compare", "describe", "deviations", "evaluate", "evidence",
                                     "glue_verdict", "judge",
                                     "import_run", "facts_script", "load", "obtain", "plan", "plot", "project", "published",
                                     "rehearsal",
                                     "tolerance")},
         **{name: "core.checks" for name in ("ClaimVerdict", "Verdict")},
         "run_all": "pool",
         "panel": "widgets",
         "cloudlab_panel": "widgets",
         **{name: "errors" for name in ("ConfigError", "ExperimentError", "OutputError", "ReprobookError",
                                        "TestbedError")}}

__all__ = ["__version__", "plots", *_LAZY]


def __getattr__(name: str):
    import importlib

    if name == "plots":
        return importlib.import_module(".book.plots", __name__)
    if name in _LAZY:
        value = getattr(importlib.import_module("." + _LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'reprobook' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
