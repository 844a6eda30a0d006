"""Aardvark (USENIX Security '22): its loaders and the parsers of its Rust and Go benchmark outputs."""

from reprobook.papers.aardvark import loaders  # noqa: F401  (registers aardvark.*)
