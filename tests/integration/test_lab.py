"""The project's notebooks in a real JupyterLab, as `make lab` starts it, driven by headless Chromium.

A fresh clone of the project with what `make setup` installs (the notebook filter, and the Jupyter server
configuration the venv's plain ``jupyter lab`` reads); Lab serves its ``notebooks/``, as root where the tests
run as root. First a Pesto claim page (with ``REPROBOOK_LAB_ALL=1`` an Aardvark and a Verus one too) is
opened (nothing to save yet), run from top to bottom, autosaved and closed: it keeps its outputs on disk,
``git status`` stays clean, closing asks nothing and ``git checkout`` of another commit works. Then a notebook
showing the
control panel: ``hosts.yaml`` is edited while its kernel runs and a fresh panel lists the new host; bad values
typed into every numeric field each get their own message, and launch stays disabled until all are fixed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.integration.conftest import ROOT, unavailable
from tests.support.lab import lab, open_notebook, run_all
from tests.support.web import CHROMIUM, browser

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

# make test opens the Pesto page (a minute and a half on two busy cores); REPROBOOK_LAB_ALL=1 adds two more papers
CLAIM_PAGES = ["pesto/sample-runs.ipynb"] + (["aardvark/archive-throughput.ipynb", "verus/macro-stats.ipynb"]
                                             if os.environ.get("REPROBOOK_LAB_ALL") == "1" else [])
PANEL = {
    "cells": [{"cell_type": "code", "execution_count": None, "id": "panel", "metadata": {}, "outputs": [],
               "source": ["import reprobook as rb\n", "rb.panel(\"aardvark/validator-throughput\")"]}],
    "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                 "language_info": {"name": "python"}},
    "nbformat": 4, "nbformat_minor": 5,
}


@pytest.fixture(scope="module")
def checkout(tmp_path_factory, mirror):
    """A fresh clone set up as `make setup` does it, and plain `jupyter lab` on its notebooks/."""
    if not Path(CHROMIUM).is_file():
        unavailable(f"no Chromium at {CHROMIUM} (install it with .ci/install-system-deps.sh)")
    base = tmp_path_factory.mktemp("lab")
    clone = base / "reprobook"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    subprocess.run(["make", "-s", "-C", str(clone), "notebook-filter", f"VENV={sys.prefix}"], check=True, timeout=60)
    hosts = base / "hosts.yaml"
    hosts.write_text(yaml.safe_dump({"hosts": {"node1": {"ssh": "node1", "workdir": "/w"}}}))
    env = {"REPROBOOK_ROOT": str(clone), "REPROBOOK_HOSTS": str(hosts), "REPROBOOK_RUNS": str(base / "runs"),
           "REPROBOOK_ARTIFACT_MIRROR": str(mirror), "REPROBOOK_ARTIFACT_CACHE": str(base / "cache"),
           # the CloudLab import writes an SSH config: here, never the user's ~/.ssh/config
           "REPROBOOK_SSH_CONFIG": str(base / "ssh_config")}
    # Lab's autosave starts its next save on a timer without waiting for the one in flight: a save that takes longer
    # than the interval (on two busy cores, a big page and the index refresh after it) races the next one, which then
    # finds the file newer than it knew and asks "File Changed". Users keep the 120 s default; 10 s here leaves room.
    settings = {"@jupyterlab/docmanager-extension:plugin": {"autosave": True, "autosaveInterval": 10}}
    with lab(clone / "notebooks", base, cwd=clone, env=env, settings=settings) as (url, token):
        yield clone, hosts, url, token


def _git_status(clone: Path) -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True,
                          check=True).stdout


def test_run_all_autosave_and_close_leave_the_checkout_clean_and_ask_nothing(checkout):
    clone, _, url, token = checkout
    with browser() as b:
        for name in CLAIM_PAGES:
            page_file = clone / "notebooks" / name
            before = page_file.stat().st_mtime_ns
            page = open_notebook(b, url, token, name)
            page.wait_for_timeout(1500)   # the kernel's info has arrived: Lab wrote what it reports into the model
            assert not page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.dirty"), \
                f"{name}: opening it left something to save"
            run_all(page)
            assert page.locator(".jp-OutputArea-output").count() > 3   # the page ran: tables, plot, verdict
            # autosave (every 10 s here): the model is clean again and the file was written, outputs and all
            page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty",
                                   timeout=60_000)
            assert page_file.stat().st_mtime_ns != before, f"Lab never saved {name}"
            saved = json.loads(page_file.read_text())
            assert saved["nbformat_minor"] >= 5 and all("id" in c for c in saved["cells"])
            assert any(c.get("outputs") for c in saved["cells"]), f"{name}: the working copy lost its outputs"
            page.evaluate("() => window.jupyterapp.commands.execute('application:close')")
            page.wait_for_timeout(1500)
            assert page.locator(".jp-Dialog").count() == 0, page.locator(".jp-Dialog").inner_text()
            assert page.locator(".jp-NotebookPanel").count() == 0, "the notebook did not close"
            page.close()
    status = _git_status(clone)
    diff = subprocess.run(["git", "diff"], cwd=clone, capture_output=True, text=True).stdout
    assert status == "", f"Lab's session left changes in git:\n{status}{diff[:3000]}"
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True).stdout.strip()
    for commit in ("HEAD~1", head):   # another commit and back: nothing in the working copy blocks it
        out = subprocess.run(["git", "checkout", "-q", commit], cwd=clone, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr


def test_a_fresh_panel_sees_a_host_added_while_the_kernel_runs(checkout):
    clone, hosts, url, token = checkout
    (clone / "notebooks" / "panel.ipynb").write_text(json.dumps(PANEL))
    with browser() as b:
        page = open_notebook(b, url, token, "panel.ipynb")
        run_all(page)
        page.locator(".reprobook-panel").wait_for(timeout=60_000)
        assert "node9" not in page.locator(".reprobook-host select option").all_inner_texts()
        hosts.write_text(yaml.safe_dump({"hosts": {"node1": {"ssh": "node1", "workdir": "/w"},
                                                   "node9": {"ssh": "node9", "workdir": "/w"}}}))
        run_all(page)   # the same kernel, a fresh panel
        page.wait_for_function("() => [...document.querySelectorAll('.reprobook-host select option')]"
                               ".some(o => o.textContent.startsWith('node9'))", timeout=30_000)


def test_bad_values_in_every_field_each_get_a_message_and_launch_waits(checkout):
    clone, _, url, token = checkout
    from reprobook.core.config import load_project
    claim = load_project(clone).claim("aardvark/validator-throughput")
    numeric = [n for n, p in claim.parameters.items()
               if isinstance(p.default[0] if isinstance(p.default, (list, tuple)) else p.default, (int, float))
               and not isinstance(p.default, bool)]
    assert len(numeric) >= 3
    with browser() as b:
        page = open_notebook(b, url, token, "panel.ipynb")
        run_all(page)
        page.locator(".reprobook-panel").wait_for(timeout=60_000)
        launch = page.locator("button.reprobook-launch")
        assert launch.is_enabled()
        good = {}
        for name in numeric:
            field = page.locator(f".reprobook-param-{name} input, .reprobook-param-{name} textarea").first
            good[name] = field.input_value()
            field.fill("abc")
            field.press("Tab")
        page.wait_for_function(f"() => document.querySelectorAll('.reprobook-param-error').length === {len(numeric)}",
                               timeout=30_000)
        said = page.locator(".reprobook-param-error").all_inner_texts()
        assert all(any(f"parameter {n} " in s for s in said) for n in numeric), said
        assert launch.is_disabled()
        for name in numeric:
            field = page.locator(f".reprobook-param-{name} input, .reprobook-param-{name} textarea").first
            field.fill(good[name])
            field.press("Tab")
        page.wait_for_function("() => document.querySelectorAll('.reprobook-param-error').length === 0", timeout=30_000)
        assert launch.is_enabled()


CLOUDLAB = {**PANEL, "cells": [{**PANEL["cells"][0], "id": "cloudlab",
                                "source": ["import reprobook as rb\n", "rb.cloudlab_panel(\"pesto/sample-runs\")"]}]}
MANIFEST = ROOT.parent / "shared" / "cloudlab" / "manifests" / "utah-1-node-m510.xml"


def test_the_cloudlab_panel_gives_a_profile_to_download_and_takes_a_manifest_upload(checkout):
    """As an evaluator does it in Lab: the profile's download link, then the portal's manifest uploaded through
    the browser's file chooser, written into hosts.yaml with every other host kept, and the check's report."""
    clone, hosts, url, token = checkout
    if not MANIFEST.is_file():
        unavailable(f"no real manifest at {MANIFEST}")
    (clone / "notebooks" / "cloudlab.ipynb").write_text(json.dumps(CLOUDLAB))
    with browser() as b:
        page = open_notebook(b, url, token, "cloudlab.ipynb")
        run_all(page)
        page.locator(".reprobook-cloudlab").wait_for(timeout=60_000)
        page.locator("button.reprobook-cloudlab-profile").click()
        link = page.locator(".reprobook-cloudlab-download a")
        link.wait_for(timeout=60_000)
        assert link.get_attribute("download") == "pesto-sample-runs-paper.py"
        assert link.get_attribute("href").startswith("data:text/x-python;base64,")
        assert "m510" in page.locator(".reprobook-cloudlab-nodes").inner_text()
        with page.expect_file_chooser() as chooser:   # the upload button opens the browser's file chooser
            page.locator(".reprobook-cloudlab-upload").click()
        chooser.value.set_files(str(MANIFEST))
        page.locator("button.reprobook-cloudlab-import").click()
        report = page.locator(".reprobook-cloudlab-report")
        page.wait_for_function("() => (document.querySelector('.reprobook-cloudlab-report') || {}).textContent"
                               "?.includes('hosts answered')", timeout=120_000)
        assert "cluster cloudlab: 1 hosts written" in report.inner_text()
    written = yaml.safe_load(hosts.read_text())
    assert "cloudlab" in written["clusters"] and "node1" in written["hosts"]
    ssh_config = hosts.parent / "ssh_config"
    assert "Include" in ssh_config.read_text(), "the import did not write the SSH config it was given"
