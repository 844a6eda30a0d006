"""The project's rules for a paper file, in the words the tests and ``reprobook check-paper`` share.

A rule here is one a paper file can break while loading cleanly: what the schema and the registries cannot see
because it is about what a run would be judged on. Each rule is a sentence (`SMALL_IMPORT`) and a function that
names every claim and check breaking it; the tests assert it of every paper, ``reprobook check-paper PAPER``
says it to an author, and the page ``reprobook new`` writes states it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from reprobook.core.checks import Verdict, applies, check_claim

if TYPE_CHECKING:
    from reprobook.core.config import Claim, Paper

SMALL_MACHINE = {"cpus": 1, "os": "Debian 12", "os_id": "debian", "os_version": "12", "mem_gib": 1.0, "smt": "on",
                 "numa_nodes": 1, "physical_cores_per_socket": 1}
"""The facts of a small machine (one CPU, 1 GiB, Debian 12), as an import with ``--cores 1 --os "Debian 12"
--memory-gib 1 --smt on --numa-nodes 1 --physical-cores-per-socket 1`` records them."""

SMALL_IMPORT = ("a run imported from a small machine (1 CPU, 1 GiB) leaves every check inconclusive, saying what "
                "the machine lacks, unless the check declares where it may be judged (judged_at: [...] with why)")
"""The rule: a claim's numbers are judged only on a machine like the one they are about. A claim says so with machine
needs a small machine lacks (``requires: {cores: 8, memory_gib: 16}``; ``commands`` alone are not probed on an
imported run, so they do not say it), or a check says why its comparison holds anywhere (two systems measured side
by side in one run)."""


def _stand_in(claim: Claim) -> pd.DataFrame:
    """One row of the columns the checks judge: the rule is about where a check is judged, not about numbers."""
    return pd.DataFrame({spec.value: [1.0] for spec in claim.checks})


def small_import_problems(claim: Claim, measured: pd.DataFrame | None = None) -> list[str]:
    """How ``claim`` breaks `SMALL_IMPORT`: one sentence per check judged on a small machine's imported run.

    ``measured``: the data to judge (default: a stand-in row; the rule does not depend on the numbers).
    """
    scale = "rehearsal" if "rehearsal" in claim.scales else None
    stand_in = measured is None or measured.empty
    data = _stand_in(claim) if stand_in else measured
    verdict = check_claim(claim, data, source="imported", scale=scale, host_facts=SMALL_MACHINE, imported=True)
    specs = [spec for spec in claim.checks if applies(spec, scale)]
    out = []
    for spec, result in zip(specs, verdict.checks):
        declared = bool(spec.needs and spec.needs.judged_at and (scale or "paper") in spec.needs.allowed
                        and not spec.needs.requires)
        if declared:
            if not spec.needs.judged_why:
                out.append(f"{claim.key}: check {spec.what!r} is judged at {scale or 'paper'} scale on any machine "
                           f"but does not say why (why: ...)")
            continue
        if result.verdict is not Verdict.INCONCLUSIVE or not result.reason.startswith("cannot be judged on this run"):
            # on a stand-in row the verdict says nothing about the claim (its columns are not the loader's): only
            # that the check would be judged, not left inconclusive for the machine
            judged = ("would be judged there, not left inconclusive for what the machine lacks" if stand_in else
                      f"is {result.verdict} there ({result.reason})")
            out.append(f"{claim.key}: check {spec.what!r} breaks the rule that {SMALL_IMPORT}: on such a run it "
                       f"{judged}. Give the claim machine needs a small machine lacks (requires: {{cores: 8, "
                       f"memory_gib: 16}}; commands alone are not probed on an imported run), or the check "
                       f"judged_at: [{scale or 'paper'}] with why")
    return out


def paper_problems(paper: Paper) -> list[str]:
    """Every rule every claim of ``paper`` breaks, one sentence each (empty: it keeps them all)."""
    return [p for claim in paper.claims.values() for p in small_import_problems(claim)]
