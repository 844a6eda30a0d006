"""The website as a reader meets it (issue 31): every page, served from 127.0.0.1 with no network, in Chromium.

No script error and no failed request on any page; no serious or critical accessibility violation (axe-core,
shipped inside the ``axe-playwright-python`` wheel, so nothing is fetched) in the light and the dark mode,
the dark one as the system setting gives it; every plot with a sentence for its alt text and a caption; no
literal Markdown backticks in a page's text; at phone width no sideways scrolling and the verdict on the
first screen and every plot's smallest text at 9 px or more; a "not run" page saying what a run would take, with
working links.

Named to sort right after ``test_book.py``: the site group runs in file order on one worker, and this module's build
(the same pages, no run recorded) then finds nearly every page executed already instead of after the hostile site's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.web import browser, serve_directory, unfold

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
pytestmark = [pytest.mark.book, pytest.mark.browser]


@pytest.fixture(scope="module")
def site(mirror, tmp_path_factory):
    env = {**os.environ, "REPROBOOK_ROOT": str(ROOT), "REPROBOOK_ARTIFACT_MIRROR": str(mirror),
           "REPROBOOK_RUNS": str(tmp_path_factory.mktemp("runs"))}
    out = subprocess.run([sys.executable, "-m", "reprobook", "book"], cwd=ROOT, capture_output=True, text=True,
                         timeout=900, env=env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    with serve_directory(HTML) as base:
        yield base


def _pages() -> list[str]:
    pages = ["index.html", *(p.relative_to(HTML).as_posix() for p in sorted(HTML.glob("book/**/*.html"))),
             *(p.relative_to(HTML).as_posix() for p in sorted(HTML.glob("notebooks/**/*.html")))]
    assert len(pages) >= 30, pages  # the toc's pages: prose, summary, chapters, every claim
    return pages


def _content_pages() -> list[str]:
    """The pages with content: index.html only redirects to the introduction (a page of its own)."""
    return [p for p in _pages() if p != "index.html"]


def _claim_pages() -> list[str]:
    return [p for p in _pages() if p.startswith("notebooks/")]


def test_no_script_error_and_no_failed_request_on_any_page(site):
    problems = {}
    with browser() as b:
        for name in _pages():
            context = b.new_context()
            page = context.new_page()
            seen = []
            page.on("console", lambda m: seen.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: seen.append(f"script error: {e}"))
            page.on("requestfailed", lambda r: seen.append(f"request failed: {r.url} ({r.failure})"))
            page.on("response", lambda r: seen.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
            page.on("request", lambda r: None if r.url.startswith((site, "data:", "blob:"))
                    else seen.append(f"request leaving the site: {r.url}"))
            page.goto(site + name, wait_until="networkidle")
            if seen:
                problems[name] = seen
            context.close()
    assert not problems, problems


def _axe_violations(page) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe
    # preload off: axe would fetch the stylesheets' @imports itself, from the wrong base (404s that are its own)
    result = Axe().run(page, options={"resultTypes": ["violations"], "preload": False})
    return [f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes'][:3]]} "
            f"{v['nodes'][0].get('failureSummary', '')[:300]}"
            for v in result.response["violations"] if v["impact"] in ("serious", "critical")]


@pytest.mark.parametrize("mode", ["light", "dark"])
def test_no_serious_or_critical_accessibility_violation(site, mode):
    found = {}
    with browser() as b:
        context = b.new_context(color_scheme=mode)  # the system setting; the theme's default mode follows it
        page = context.new_page()
        for name in _content_pages():
            page.goto(site + name, wait_until="load")
            assert page.evaluate("document.documentElement.dataset.theme") == mode, name
            violations = _axe_violations(page)
            if violations:
                found[name] = violations
    assert not found, found


_PLOTS_JS = """() => Array.from(document.querySelectorAll("article img")).filter(i => i.src.includes("/_images/"))
    .map(i => ({src: i.getAttribute("src"), alt: i.alt,
                caption: (i.closest("figure") && i.closest("figure").querySelector("figcaption"))
                         ? i.closest("figure").querySelector("figcaption").innerText : ""}))"""


def test_every_plot_has_a_sentence_for_alt_text_and_a_caption(site):
    bad, plots = [], 0
    with browser() as b:
        page = b.new_page()
        for name in _claim_pages():
            page.goto(site + name, wait_until="load")
            for img in page.evaluate(_PLOTS_JS):
                plots += 1
                alt, file = img["alt"].strip(), img["src"].rsplit("/", 1)[-1]
                sentence = (len(alt.split()) >= 8 and alt.endswith(".") and file not in alt
                            and not alt.startswith(("_images", "../", "/")) and alt[0].isupper())
                if not sentence or len(img["caption"].split()) < 3:
                    bad.append((name, img["src"], alt[:120], img["caption"][:120]))
    assert plots >= 20, plots  # every claim page with a figure (23 when the issue was filed)
    assert not bad, bad


_TEXT_JS = """() => { const a = document.querySelector("article") || document.body; const c = a.cloneNode(true);
    c.querySelectorAll("code, pre, kbd, samp, script, style").forEach(e => e.remove()); return c.textContent; }"""


def test_no_literal_backtick_pair_in_any_pages_text(site):
    found = {}
    with browser() as b:
        page = b.new_page()
        for name in _content_pages():
            page.goto(site + name, wait_until="load")
            ticks = re.findall(r"`[^`\n]{1,200}`", page.evaluate(_TEXT_JS))
            if ticks:
                found[name] = ticks[:5]
    assert not found, found


def test_phone_width_no_sideways_scroll_and_the_verdict_on_the_first_screen(site, tmp_path):
    bad = {}
    with browser() as b:
        page = b.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=1)
        for name in _claim_pages():
            page.goto(site + name, wait_until="load")
            page.screenshot(path=str(tmp_path / (name.replace("/", "-") + ".png")))
            wide = page.evaluate("document.scrollingElement.scrollWidth")
            verdict = page.locator(".reprobook-top .reprobook-badge-verdict").first.bounding_box()
            if wide > 390 or verdict is None or verdict["y"] + verdict["height"] > 844:
                bad[name] = {"scroll_width": wide, "verdict": verdict}
    assert not bad, bad


def test_at_phone_width_every_plots_smallest_text_stays_readable(site):
    """Each plot is shown at least as wide as keeps its smallest text at 9 px (the PNG says how big that text is at
    its own size); a wider plot scrolls inside its cell, not the page."""
    from PIL import Image

    from reprobook.book.plots import TEXT_PX
    bad, seen = {}, 0
    with browser() as b:
        page = b.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=1)
        for name in _claim_pages():
            page.goto(site + name, wait_until="load")
            for img in page.evaluate("""() => [...document.querySelectorAll('figure.reprobook-plot img')].map(i => (
                {src: i.getAttribute('src'), shown: i.getBoundingClientRect().width, natural: i.naturalWidth}))"""):
                with Image.open((HTML / name).parent / img["src"]) as png:
                    smallest = float(png.text[TEXT_PX])
                seen += 1
                shown_px = smallest * img["shown"] / img["natural"]
                if shown_px < 9 - 0.05:
                    bad.setdefault(name, []).append(f"{img['src']}: smallest text {shown_px:.1f} px")
            assert page.evaluate("document.scrollingElement.scrollWidth") <= 390, name
    assert seen >= 10 and not bad, bad


def test_a_not_run_page_says_what_a_run_would_take(site):
    with browser() as b:
        page = b.new_page(viewport={"width": 1280, "height": 800})
        for name, command in [("notebooks/verus/page-table.html", "reprobook run verus/page-table --source live"),
                              ("notebooks/pesto/workloads.html", "reprobook run pesto/workloads --source live"),
                              ("notebooks/pesto/sample-runs.html", None)]:  # sample-runs: holds, from shipped data
            page.goto(site + name, wait_until="load")
            howto = page.locator(".reprobook-top + .reprobook-howto, .reprobook-top ~ .reprobook-howto")
            if command is None:
                assert page.locator(".reprobook-howto").count() == 0, name
                continue
            assert howto.count() == 1, name  # right under the verdict, at the top of the page
            text = howto.inner_text()
            assert "What it would take" in text and command in text and "make lab" in text, text
            assert "make book" in text and re.search(r"takes about \d+|gives no time", text), text
            assert "needs" in text or "by hand" in text, text
            links = howto.locator("a").evaluate_all("as => as.map(a => a.href)")
            assert any(link.endswith("book/getting-started.html") for link in links), links
            assert any(link.endswith("book/when-things-go-wrong.html") for link in links), links
            assert all(page.request.get(link).ok for link in links), links
            # the evidence (folded): one sentence instead of an empty table per check
            unfold(page)
            assert "Nothing was measured, so none of the" in page.locator("article").inner_text(), name
