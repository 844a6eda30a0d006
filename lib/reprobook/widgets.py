"""A small JupyterLab panel (ipywidgets) to flip a claim between its sources and see the verdict change.

    import reprobook.widgets
    reprobook.widgets.explore("aardvark/validator-throughput")

The dropdown lists ``reference`` and every successful recorded run of the
claim; choosing one re-obtains, re-loads, re-plots and re-checks with the same
calls as the claim's notebook.
"""

from __future__ import annotations

import ipywidgets as w
import matplotlib.pyplot as plt
from IPython.display import display

from . import api
from .runs import RunStore


def sources_for(claim) -> list[str]:
    """``reference`` (if the authors ship outputs) and the ids of the claim's successful recorded runs, newest first."""
    store = RunStore(api.project().settings.runs_dir)
    runs = [r.id for r in reversed(store.runs(claim))
            if r.manifest.get("source") in ("live", "import") and r.status == "succeeded"]
    return (["reference"] if claim.reference else []) + runs


def explore(key: str) -> w.VBox:
    """A dropdown of sources, and below it the plot and verdict for the chosen one."""
    claim = api.claim(key)
    choice = w.Dropdown(options=sources_for(claim) or ["auto"], description="source")
    out = w.Output()

    def show(_=None):
        out.clear_output(wait=True)
        with out:
            outputs = api.obtain(claim, choice.value, progress=False)
            measured = api.load(claim, outputs)
            verdict = api.check(claim, measured, outputs)
            if claim.plots:
                api.plot(claim, measured)
                plt.show()
            display(verdict)

    choice.observe(show, names="value")
    show()
    return w.VBox([w.HTML(f"<b>{claim.title}</b>"), choice, out])
