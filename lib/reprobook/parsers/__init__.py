"""Parsers: one module per output format family."""
