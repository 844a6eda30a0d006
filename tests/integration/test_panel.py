"""The control panel in a real JupyterLab, driven by headless Chromium, against a loopback sshd host.

A throwaway project (`make_project`: a FIXTURE claim whose benchmark takes ``duration`` seconds) and
a temporary notebook calling ``rb.panel(claim)``; ``jupyter lab`` serves it on a free port with a
token; Chromium opens the notebook, runs it, fills the form, launches on ``node1``, watches the
progress bar and the log move, cancels, and sees the run cancelled (on the page and on disk); then
a short run goes to its end and the plot and the verdict appear.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.conftest import _wait_for, unavailable
from tests.support.lab import lab as start_lab
from tests.support.web import CHROMIUM

pytestmark = [pytest.mark.ssh, pytest.mark.browser, pytest.mark.timeout(240)]

NOTEBOOK = {
    "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
               "source": ["import reprobook as rb\n", "rb.panel(\"fixture/validator-throughput\", poll_s=0.5)"]}],
    "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                 "language_info": {"name": "python"}},
    "nbformat": 4, "nbformat_minor": 5,
}


@pytest.fixture
def lab(fixture, tmp_path):
    """``jupyter lab`` on the fixture project (its environment is the kernel's): yields (url, token)."""
    if not Path(CHROMIUM).is_file():
        unavailable(f"no Chromium at {CHROMIUM} (install it with .ci/install-system-deps.sh)")
    (fixture.root / "panel.ipynb").write_text(json.dumps(NOTEBOOK))
    with start_lab(fixture.root, tmp_path) as (url, token):
        yield url, token


def test_launch_watch_cancel_then_a_run_to_its_verdict(lab, fixture):
    from reprobook.core.config import load_project
    from reprobook.core.runs import RunStore
    from tests.support.web import browser
    url, token = lab
    store = RunStore(load_project(fixture.root).settings.runs_dir)
    with browser() as b:
        page = b.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(f"{url}/lab/tree/panel.ipynb?token={token}", wait_until="domcontentloaded", timeout=60_000)
        page.wait_for_function("() => window.jupyterapp && document.querySelector('.jp-Notebook')", timeout=60_000)
        # run the notebook as a reader would (Run > Run All Cells), once its kernel is up
        page.wait_for_function("""() => {
            const w = window.jupyterapp.shell.currentWidget;
            return w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel
                   && w.sessionContext.session.kernel.connectionStatus === 'connected'; }""", timeout=60_000)
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        panel = page.locator(".reprobook-panel")
        panel.wait_for(timeout=90_000)

        # the form comes from the claim; the host picker from hosts.yaml
        assert page.locator(".reprobook-host select option").all_inner_texts()[:2] == ["node1", "node2"]
        assert "not checked yet" in page.locator(".reprobook-host-check").inner_text()
        duration = page.locator(".reprobook-param-duration input")
        duration.fill("abc")
        duration.press("Enter")
        page.locator(".reprobook-param-error").wait_for(timeout=10_000)
        assert "duration" in page.locator(".reprobook-param-error").inner_text()
        duration.fill("40")
        duration.press("Enter")
        page.wait_for_function("() => !document.querySelector('.reprobook-param-error')", timeout=10_000)
        page.locator(".reprobook-host select").select_option("node1")
        page.locator("button.reprobook-check").click()  # reach it and judge it against the claim
        page.wait_for_function("() => /by a check from the panel/.test(document.querySelector('.reprobook-host-check')"
                               "?.innerText || '')", timeout=60_000)
        assert "meets the requirements" in page.locator(".reprobook-host-check").inner_text()
        hosts = page.locator(".reprobook-host select").inner_text().replace("\xa0", " ")
        assert "node1 — meets the requirements" in hosts  # beside its name in the picker

        # launch: the run appears, the bar moves and the log's steps show while it goes on
        page.locator("button.reprobook-launch").click()
        page.wait_for_function("() => /fixture step [1-4]\\/4/.test(document.querySelector('.reprobook-log')"
                               "?.innerText || '')", timeout=90_000)
        run_id = page.locator(".reprobook-status code").first.inner_text()
        assert store.load(run_id).manifest["parameters"]["duration"] == 40
        assert "running" in page.locator(".reprobook-step").inner_text()
        width = "() => parseFloat(document.querySelector('.reprobook-progress .progress-bar').style.width) || 0"
        first = page.evaluate(width)
        page.wait_for_function(f"() => ({width})() > {first}", timeout=30_000)  # the bar moves with the run

        # cancel: the job stops on the host, the panel and the run store say so
        page.locator("button.reprobook-cancel").click()
        page.wait_for_function("() => /cancelled/.test(document.querySelector('.reprobook-status')?.innerText || '')",
                               timeout=60_000)
        assert _wait_for(lambda: store.load(run_id).status == "cancelled" or None, timeout=30, what="run cancelled")
        remote = fixture.workdirs["node1"] / ".reprobook" / "runs" / run_id
        assert (remote / "cancelled").exists()

        # attach to the recorded run: it is over, and the panel says how it ended
        page.wait_for_function("() => !document.querySelector('button.reprobook-attach').disabled", timeout=30_000)
        page.wait_for_function("() => document.querySelectorAll('.reprobook-runs select option').length > 0",
                               timeout=30_000)
        runs = [t.replace("\xa0", " ") for t in page.locator(".reprobook-runs select option").all_inner_texts()]
        assert len(runs) == 1 and runs[0].startswith(f"{run_id} — cancelled, node1")  # the newest is chosen
        page.evaluate("() => { document.querySelector('.reprobook-status .widget-html-content').innerHTML = ''; }")
        page.locator("button.reprobook-attach").click()
        page.wait_for_function("() => /cancelled/.test(document.querySelector('.reprobook-status')?.innerText || '')",
                               timeout=60_000)
        assert run_id in page.locator(".reprobook-status").inner_text()

        # a short run to its end: the plot and the verdict appear, as on the claim's page
        page.wait_for_function("() => !document.querySelector('button.reprobook-launch').disabled", timeout=30_000)
        duration.fill("1")
        duration.press("Enter")
        page.locator("button.reprobook-launch").click()
        page.locator(".reprobook-result img").wait_for(timeout=120_000)
        page.locator(".reprobook-result .reprobook-verdict").wait_for(timeout=30_000)
        assert "holds" in page.locator(".reprobook-status").inner_text()
        done = [r for r in store.runs() if r.id != run_id]
        assert [r.status for r in done] == ["succeeded"] and done[0].manifest["parameters"]["duration"] == 1
        assert "meets the requirements" in page.locator(".reprobook-host-check").inner_text()
        page.screenshot(path=str(fixture.root.parent / "panel.png"))
