"""The pieces behind issue 31's pages, without building the book: words for plots, pruned assets, the lifted blocks."""

from __future__ import annotations

import base64

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from docutils import nodes  # noqa: E402
from docutils.frontend import get_default_settings  # noqa: E402
from docutils.parsers.rst import Parser  # noqa: E402
from docutils.utils import new_document  # noqa: E402
from sphinx.builders.html._assets import _CascadingStyleSheet, _JavaScript  # noqa: E402

from reprobook.book import plots, sphinxext  # noqa: E402
from reprobook.book.pages import HOWTO_END, HOWTO_START  # noqa: E402
from reprobook.core.checks import BADGE_END, BADGE_START  # noqa: E402


def test_a_plain_figure_is_described_from_its_axes():
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4], marker="o", label="Pesto (measured)")
    ax.plot([1, 2], [2, 5], marker="s", label="Basil (published)")
    ax.set(xlabel="throughput (tx/s)", ylabel="latency (ms)", title="TPCC")
    ax.legend()
    alt, caption = plots.figure_words(fig)
    assert alt == "A plot of TPCC: latency (ms) against throughput (tx/s), series Pesto (measured) and Basil (published)."
    assert caption == "TPCC."
    plt.close(fig)


def test_a_claim_figure_says_what_was_measured_against_what_was_published(tmp_path, mirror):
    import reprobook as rb
    claim = rb.claim("aardvark/validator-throughput")
    measured = rb.load(claim, rb.obtain(claim, "reference", progress=False))  # the authors' shipped outputs
    fig = rb.plot(claim, measured)
    alt, caption = plots.figure_words(fig)
    assert alt.startswith("Throughput") and f"{len(measured)} measured points, from 146 to 2,950" in alt, alt
    assert "2 published values" in alt and "shaded where measured: accepted (1000–3000)" in alt, alt
    assert alt.endswith(".") and "one colour and marker per op (create, delete and modify)" in alt, alt
    assert caption.startswith(claim.title) and "hollow diamonds" in caption, caption
    png = base64.b64decode(plots.figure_png(fig))  # the words travel inside the PNG, for the website
    path = tmp_path / "plot.png"
    path.write_bytes(png)
    assert sphinxext.png_words(path) == (alt, caption)
    plt.close(fig)
    empty = rb.plot(claim, pd.DataFrame())
    assert "nothing was measured (not run)" in plots.figure_words(empty)[0]
    plt.close(empty)


def _doc() -> nodes.document:
    return new_document("page", get_default_settings(Parser))


def test_each_plot_becomes_a_figure_with_alt_text_and_caption(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([1, 2], [1, 2], label="a")
    ax.set(xlabel="x", ylabel="y", title="T")
    ax.legend()
    (tmp_path / "p.png").write_bytes(base64.b64decode(plots.figure_png(fig)))
    plt.close(fig)
    (tmp_path / "other.png").write_bytes(b"\x89PNG not ours")
    doc = _doc()
    doc += nodes.image(uri="p.png")
    doc += nodes.image(uri="other.png")
    assert sphinxext.caption_plots(doc, lambda uri: tmp_path / uri) == 1
    figure = next(iter(doc.findall(nodes.figure)))
    image = figure[0]
    assert image["alt"] == "A plot of T: y against x, series a." and figure[1].astext() == "T."
    assert figure["ids"] and "reprobook-plot" in figure["classes"]


def test_assets_loaded_for_nothing_are_dropped():
    thebe_config = _JavaScript(None, body='const THEBE_JS_URL = "https://unpkg.com/thebe"')
    widgets = {"https://cdn.example/require.min.js": {}, "https://cdn.example/embed-amd.js": {}}
    scripts = [_JavaScript("doctools.js"), thebe_config, _JavaScript("sphinx-thebe.js"),
               _JavaScript(None, type="application/vnd.jupyter.widget-state+json", body="{}"),
               *(_JavaScript(u) for u in widgets)]
    css = [_CascadingStyleSheet("sphinx-thebe.css"), _CascadingStyleSheet("reprobook.css")]
    sphinxext.prune_assets(scripts, css, "<p>no widget here</p>", widgets)
    assert [s.filename for s in scripts] == ["doctools.js"] and [c.filename for c in css] == ["reprobook.css"]
    # a page that does render a widget keeps its state and the scripts that draw it
    scripts = [_JavaScript(None, type="application/vnd.jupyter.widget-state+json", body="{}"),
               *(_JavaScript(u) for u in widgets)]
    sphinxext.prune_assets(scripts, [], '<script type="application/vnd.jupyter.widget-view+json">', widgets)
    assert len(scripts) == 3


def test_the_way_forward_follows_the_badge_to_the_top():
    doc = _doc()
    section = nodes.section()
    section += nodes.title("", "Page")
    section += nodes.paragraph("", "intro")
    section += nodes.raw("", f"x{BADGE_START}<div class='reprobook-badge'>v</div>{BADGE_END}y", format="html")
    section += nodes.raw("", f"{HOWTO_START}<div class='reprobook-howto'>w</div>{HOWTO_END}", format="html")
    doc += section
    assert sphinxext.lift_badge(doc)
    raws = [n.astext() for n in section.children[1:3]]
    assert "reprobook-badge" in raws[0] and "reprobook-howto" in raws[1]
    assert all("reprobook-howto" not in n.astext() for n in section.children[3:])


def test_the_site_answers_a_browsers_favicon_request_with_an_image():
    import io

    from PIL import Image
    image = Image.open(io.BytesIO(sphinxext.favicon_png()))
    image.load()
    assert image.size == (16, 16)


def test_a_pesto_not_run_box_names_the_rehearsal_and_the_cloudlab_profile_and_the_reason_fits_any_page():
    from reprobook import api, sources
    from reprobook.core.config import load_project
    project = load_project(sphinxext.Path(__file__).resolve().parents[2])
    claim = project.claim("pesto/workloads")
    box = api.way_forward_html(claim)
    assert "reprobook run pesto/workloads --source live --host CLUSTER -p scale rehearsal" in box
    assert "reprobook cloudlab profile pesto/workloads -o profile.py" in box and "m510" in box
    assert "cloudlab import manifest.xml --cluster CLUSTER --claim pesto/workloads" in box
    by_hand = api.way_forward_html(project.claim("verus/ironkv"))   # run by hand: neither
    assert "cloudlab profile" not in by_hand and "scale rehearsal" not in by_hand
    # the not-run reason is shown on the claim's own page and in the summary: it points at the box by its name
    reason = sources._no_outputs(claim, None)
    assert "on its page" not in reason and "What it would take" in reason
