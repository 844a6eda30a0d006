"""A claim page's "latest rehearsal" section (``rb.rehearsal``): the newest live run at the rehearsal scale, whatever
its other parameters, shown with its own verdict beside the page's; a run at the paper's scale, an imported one or
one whose files changed is not taken for it; without one, the page says how to make one."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from reprobook import api, sources
from reprobook.core.plan import make_plan
from reprobook.core.runs import RunStore

COMMIT = "31b2256b06413c71245baf4b2bec9cea5b20e51b"


def _results(mirror: Path) -> list[Path]:
    d = mirror / "github.com/microsoft/verified-storage" / COMMIT / "artifact_eval/experiment/example_dram_results"
    return sorted(d.glob("results_*.csv"))


def _run(store, claim, run_id: str, files: list[Path], *, scale: str, created: str, **params):
    given = {"scale": scale, **params}
    run = store.create(claim, run_id, source="live", host="h", status="succeeded", scale=scale, created=created,
                       ended=created, parameters=dict(make_plan(claim, given).params),
                       deviations=[d.as_dict() for d in claim.deviations_for(given)])
    recorded = []
    for f in files:
        data = f.read_bytes()
        rel = f"outputs/results/{f.name}"
        (run.path / rel).parent.mkdir(parents=True, exist_ok=True)
        (run.path / rel).write_bytes(data)
        recorded.append({"output": "results", "path": rel, "size": len(data),
                         "sha256": hashlib.sha256(data).hexdigest()})
    run.update(files=recorded)
    return run


@pytest.fixture
def shown(monkeypatch):
    """What `rb.rehearsal` displays, in order (its figure is closed, not shown)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out = []
    monkeypatch.setattr("IPython.display.display", lambda *objs, **kw: out.extend(objs))
    yield out
    plt.close("all")


def _text(objs) -> str:
    return "\n".join(getattr(o, "data", None) or o.to_string() for o in objs)


def test_the_newest_rehearsal_is_shown_with_its_own_verdict(mirror, shown):
    claim = api.claim("verus/pm-log")
    store = RunStore(api.project().settings.runs_dir)
    files = _results(mirror)
    _run(store, claim, "old-rehearsal", files[:4], scale="rehearsal", created="2026-01-01T00:00:00+00:00")
    _run(store, claim, "new-rehearsal", files, scale="rehearsal", created="2026-02-01T00:00:00+00:00",
         iterations=3)
    _run(store, claim, "paper-run", files, scale="paper", created="2026-03-01T00:00:00+00:00")
    # the newest at that scale, other parameters aside
    assert sources.latest_rehearsal(api.project(), claim).run_id == "new-rehearsal"
    api.rehearsal(claim)
    text = _text(shown)
    assert "**The rehearsal:** run new\\-rehearsal on host" in text and "**Its own verdict:**" in text  # escaped text
    assert "**Scale:** rehearsal" in text and "*persistent memory*:" in text
    table = shown[2]
    assert len(table) == 27 and set(table["iterations"]) == {10}


def test_a_run_whose_files_changed_is_passed_over(mirror, shown):
    claim = api.claim("verus/pm-log")
    store = RunStore(api.project().settings.runs_dir)
    files = _results(mirror)
    _run(store, claim, "good", files, scale="rehearsal", created="2026-01-01T00:00:00+00:00")
    bad = _run(store, claim, "changed", files, scale="rehearsal", created="2026-02-01T00:00:00+00:00")
    (bad.path / "outputs/results/results_128.csv").write_text("pmdk,oops,\n")
    assert sources.latest_rehearsal(api.project(), claim).run_id == "good"
    # the page names the run it passed over, and why, before the one it shows
    api.rehearsal(claim)
    passed = shown[0].data   # escaped Markdown: the run's words are text
    assert passed.startswith("Passed over: run changed skipped\\: its outputs cannot be loaded")
    assert "results\\_128\\.csv\\: content differs from the sha256 in the manifest" in passed
    assert "**The rehearsal:** run good on host" in _text(shown)


def test_without_a_rehearsal_the_page_says_how_to_make_one(shown):
    claim = api.claim("aardvark/archive-throughput")
    api.rehearsal(claim)
    (md,) = shown
    assert md.data.startswith("No readable rehearsal of this claim is recorded in the run store.")
    assert "`reprobook run aardvark/archive-throughput --source live --host HOST -p scale rehearsal" in md.data
    api.rehearsal(api.claim("verus/page-table"))
    assert shown[-1].data == "This claim has no rehearsal scale."


def test_a_page_that_draws_its_own_figure_passes_it_and_a_claim_without_a_plot_is_named(mirror, shown, monkeypatch):
    """pesto/failures draws its figure itself (no `plot` entry): its rehearsal section crashed with KeyError 'x' once a
    rehearsal was in the run store, and the whole site failed to build. The page's drawing is called with the
    rehearsal's table instead of the claim's plot; asking a claim without a plot for its plot names it."""
    from reprobook.errors import ReprobookError
    claim = api.claim("verus/pm-log")
    store = RunStore(api.project().settings.runs_dir)
    _run(store, claim, "r", _results(mirror), scale="rehearsal", created="2026-01-01T00:00:00+00:00")
    drawn, plotted = [], []
    with monkeypatch.context() as m:
        m.setattr(api, "plot", lambda *a, **k: plotted.append(a))
        api.rehearsal(claim, draw=drawn.append)
        assert len(drawn) == 1 and len(drawn[0]) == 27 and not plotted
        api.rehearsal(claim)
        assert len(plotted) == 1
    failures = api.claim("pesto/failures")
    assert not failures.plots
    with pytest.raises(ReprobookError, match="pesto/failures declares no plot"):
        api.plot(failures, shown[2])
