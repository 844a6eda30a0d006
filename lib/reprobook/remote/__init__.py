"""Running on hosts: SSH connections, detached jobs, transfers, steps, placement and live runs.

``hosts`` (connections, host keys, commands), ``trust`` (a host's key first seen), ``group`` (the
one fan-out over several hosts), ``jobs`` (detached idempotent jobs), ``listing`` and ``transfer``
(a host's outputs listed and fetched), ``steps`` (a live run's job script), ``placement`` (roles
to hosts), ``live`` (perform and follow a run).

It knows nothing of any paper: it imports `reprobook.core` and below.
"""
