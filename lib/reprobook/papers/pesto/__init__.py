"""Pesto (SOSP '25) and Basil on the Pequin artifact: loaders, the client and stats parsers, and the
generators of the authors' experiment configs (``pequin.configs``, ``pequin.cluster``)."""

from reprobook.papers.pesto import loaders, pequin  # noqa: F401  (registers pesto.* and pequin.*)
