"""Verus (SOSP '24): its loaders and the parsers of the artifact's verifier timings and statistics."""

from reprobook.papers.verus import loaders  # noqa: F401  (registers verus.*)
