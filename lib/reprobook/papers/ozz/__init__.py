"""Ozz (SOSP '24): OEMU's overhead on LMBench; its loaders and LMBench's output formats."""

from reprobook.papers.ozz import loaders  # noqa: F401  (registers ozz.*)
