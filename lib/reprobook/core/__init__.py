"""The core: what a claim is and how it is judged, with no I/O to hosts.

``schema`` and ``model`` (the configuration as data and as frozen records), ``config`` (loading a
project and its papers), ``requirements`` (machine requirements: probes, comparisons, words),
``scales`` (scales, patches, adaptations, deviations), ``checks`` (the check kinds and verdicts),
``published`` (the paper's numbers as a table), ``loaders`` and ``inputs`` (the registries papers
fill), ``plugins`` (how the papers are found), ``runs`` and ``locks`` (the local run store),
``artifacts`` (the authors' shipped files), ``verdicts`` (verdicts recorded for the summary).

It imports only `reprobook.errors` and `reprobook.formats`; every other layer may import it.
"""
