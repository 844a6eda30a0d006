"""The website's side of a claim page: the verdict badge first, and styles that let tables and code fit.

A Sphinx extension, named in ``_config.yml`` (``sphinx.extra_extensions``). When a page is read,
the verdict block its notebook displayed (`reprobook.core.checks.ClaimVerdict`, between
`~reprobook.core.checks.BADGE_START` and `~reprobook.core.checks.BADGE_END`) is moved right under the
page's title, so a reader sees the claim and its verdict (with margin, source and any caution)
before anything else, and the cell showing the evidence (`reprobook.book.evidence`: the plot, the table of
what the checks compared, the details folded) follows it; the checks table stays where the notebook put it. The badge comes from
the page's own output, so it can never disagree with the page, whichever way the book was built.
Nothing changes in JupyterLab, where the notebook shows it in order.

Each page also loses what it would load for nothing (`prune_assets`): sphinx-thebe's scripts (the
book has no launch button, and the theme wrote its configuration script twice, a script error on
every page) and, on a page that renders no widget, the widgets' saved state and the two scripts
MyST-NB fetches from CDNs to show it (the control panel's HTML fallback is what the website shows).
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes

from reprobook.book import assets
from reprobook.book import gate as gate_module
from reprobook.book.evidence import START as EVIDENCE_START
from reprobook.book.pages import HOWTO_END, HOWTO_START
from reprobook.core.checks import BADGE_END, BADGE_START

STATIC = Path(__file__).parent / "static"


def lift_badge(doctree: nodes.document) -> bool:
    """Move the first verdict badge of ``doctree`` under its first title; True if there was one."""
    for raw in list(doctree.findall(nodes.raw)):
        text = raw.astext()
        if "html" not in raw.get("format", "") or BADGE_START not in text or BADGE_END not in text:
            continue
        start, end = text.index(BADGE_START), text.index(BADGE_END) + len(BADGE_END)
        raw.parent.replace(raw, nodes.raw("", text[:start] + text[end:], format=raw["format"]))
        badge = nodes.raw("", f"<div class='reprobook-top'>{text[start:end]}</div>", format="html")
        section = next(iter(doctree.findall(nodes.section)), None)
        if section is not None and section.children and isinstance(section[0], nodes.title):
            section.insert(1, badge)
        else:
            doctree.insert(0, badge)
        howto = _take(doctree, HOWTO_START, HOWTO_END)
        if howto:  # a "not run" page: what it would take, right under the verdict
            badge.parent.insert(badge.parent.index(badge) + 1, nodes.raw("", howto, format="html"))
        return True
    return False


def lift_evidence(doctree: nodes.document) -> bool:
    """Move the cell that shows the claim's evidence (`reprobook.book.evidence`: the plot, the table of what the
    checks compared, the details) right under the verdict badge (and the *not run* box); True if it moved."""
    top = next((r for r in doctree.findall(nodes.raw) if "class='reprobook-top'" in r.astext()), None)
    mark = next((r for r in doctree.findall(nodes.raw)
                 if "html" in r.get("format", "") and EVIDENCE_START in r.astext()), None)
    if top is None or mark is None:
        return False
    cell = mark
    while cell is not None and not (isinstance(cell, nodes.container) and "cell" in cell.get("classes", [])):
        cell = cell.parent
    if cell is None or cell.parent is None:
        return False
    where = cell.parent
    here = where.index(cell)
    where.remove(cell)
    # where the notebook shows it, the page says where it went (its story stays: the marks it explains)
    pointer = nodes.paragraph(classes=["reprobook-moved"])
    pointer += nodes.emphasis(text="The plot, the table of what the checks compared and how each was judged are at "
                                   "the top of this page, under the verdict.")
    where.insert(here, pointer)
    parent = top.parent
    at = parent.index(top) + 1
    while at < len(parent) and isinstance(parent[at], nodes.raw) and HOWTO_START in parent[at].astext():
        at += 1
    parent.insert(at, cell)
    return True


def _take(doctree: nodes.document, start: str, end: str) -> str:
    """Cut the first block between ``start`` and ``end`` out of the raw HTML of ``doctree``; return it ("" if none)."""
    for raw in list(doctree.findall(nodes.raw)):
        text = raw.astext()
        if "html" not in raw.get("format", "") or start not in text or end not in text:
            continue
        i, j = text.index(start), text.index(end) + len(end)
        raw.parent.replace(raw, nodes.raw("", text[:i] + text[j:], format=raw["format"]))
        return text[i:j]
    return ""


def png_words(path: Path) -> tuple[str, str] | None:
    """The ``(alt, caption)`` a PNG carries (`reprobook.book.plots.figure_png`), or None."""
    text = _png_text(path)
    alt, caption = text.get("Description", "").strip(), text.get("Title", "").strip()
    return (alt, caption) if alt else None


def _png_text(path: Path) -> dict:
    try:
        from PIL import Image
        with Image.open(path) as image:
            return {**dict(getattr(image, "text", {}) or {}), "width": str(image.width)}
    except (OSError, ValueError, ImportError):
        return {}


def caption_plots(doctree: nodes.document, locate) -> int:
    """Give each notebook plot of ``doctree`` its alt text and a caption, from the words its PNG carries.

    ``locate(uri)`` is the image's file. The image becomes a figure (class ``reprobook-plot``) with the
    caption under it. Returns how many plots were captioned.
    """
    done = 0
    for image in list(doctree.findall(nodes.image)):
        if isinstance(image.parent, nodes.figure):
            continue
        path = locate(image.get("uri", ""))
        words = png_words(path) if path else None
        if not words:
            continue
        alt, caption = words
        image["alt"] = alt
        figure = nodes.figure("", classes=["reprobook-plot"])
        figure["ids"].append(f"plot-{done + 1}")  # Sphinx numbers figures (numfig): each needs an id
        image.replace_self(figure)
        figure += image
        if caption:
            figure += nodes.caption(caption, caption)
        done += 1
    return done


def _doctree_read(app, doctree) -> None:
    lift_badge(doctree)
    lift_evidence(doctree)
    srcdir = Path(app.srcdir)
    here = Path(app.env.doc2path(app.env.docname)).parent

    def locate(uri: str) -> Path | None:
        if not uri or "://" in uri or uri.startswith("data:"):
            return None
        for path in ((srcdir / uri.lstrip("/")) if uri.startswith("/") else here / uri, srcdir / uri):
            if path.suffix.lower() == ".png" and path.is_file():
                return path
        return None

    caption_plots(doctree, locate)
    if getattr(app.builder, "format", "") == "html":
        # the page's plots shrunk now, in the background, while other pages are read (and notebooks execute):
        # not all at the end, when the site waits for them (`assets.lighten` then finds them done)
        for image in doctree.findall(nodes.image):
            path = locate(image.get("uri", ""))
            if path is not None:
                _early_plots().submit(path)


class _Plots:
    """The plots being shrunk (`assets.quantize_png`) while Sphinx reads; `wait` before they are copied."""

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reprobook-plots")
        self.started: dict[Path, object] = {}

    def submit(self, path: Path) -> None:
        if path not in self.started:
            self.started[path] = self.pool.submit(assets.quantize_png, path)

    def wait(self) -> None:
        for future in self.started.values():
            future.exception()   # a plot that cannot be shrunk stays as it is (lighten tries it again)


_PLOTS: _Plots | None = None


def _early_plots() -> _Plots:
    global _PLOTS
    if _PLOTS is None:
        _PLOTS = _Plots()
    return _PLOTS


def _plots_done(app, env) -> None:
    if _PLOTS is not None:
        _PLOTS.wait()


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


DESIGN_ASSETS = ("sphinx-design.min.css", "design-tabs.js")
"""sphinx-design's style and script, which a page without its components (no ``sd-`` class) loads for nothing."""


def _unused(asset, *, widgets_shown: bool, widget_scripts, design_shown: bool = True) -> bool:
    name = str(getattr(asset, "filename", "") or "")
    attrs = getattr(asset, "attributes", {}) or {}
    if "thebe" in name or "THEBE_JS_URL" in str(attrs.get("body", "")):
        return True
    if not design_shown and name.rsplit("/", 1)[-1].split("?")[0] in DESIGN_ASSETS:
        return True
    if widgets_shown:
        return False
    return attrs.get("type") == WIDGET_STATE or name in widget_scripts


def prune_assets(script_files: list, css_files: list, body: str, widget_scripts=()) -> list[str]:
    """Drop from a page's assets (in place) what it loads for nothing; return what was dropped.

    Thebe's scripts and style always; the widget state and the scripts that render it (``widget_scripts``,
    MyST-NB's ``nb_ipywidgets_js``) when ``body`` shows no widget view; sphinx-design's when it shows none of its
    components.
    """
    shown = WIDGET_VIEW in body
    design = bool(re.search(r'class="[^"]*\bsd-', body))
    dropped = []
    for files in (script_files, css_files):
        for asset in list(files):
            if _unused(asset, widgets_shown=shown, widget_scripts=set(widget_scripts), design_shown=design):
                files.remove(asset)
                dropped.append(str(getattr(asset, "filename", "") or "inline script"))
    return dropped


def _page_context(app, pagename, templatename, context, doctree) -> None:
    if "script_files" in context and "css_files" in context:
        prune_assets(context["script_files"], context["css_files"], context.get("body", ""),
                     getattr(app.config, "nb_ipywidgets_js", {}) or {})


def favicon_png(size: int = 16, rgb: tuple[int, int, int] = (26, 127, 55)) -> bytes:
    """A small square icon (the colour of *holds*) as PNG bytes, made here so the book ships no binary file."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    row = b"\x00" + bytes(rgb) * size
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(row * size)) + chunk(b"IEND", b""))


def _build_finished(app, exception) -> None:
    if exception is None and getattr(app.builder, "format", "") == "html":
        assets.lighten(app.outdir, favicon_png())   # the theme's assets trimmed to what the pages use
        # a browser asks every site for /favicon.ico (the root's redirect page names no icon): answer it, not a 404
        icon = Path(app.outdir) / "favicon.ico"
        if not icon.exists():
            icon.write_bytes(favicon_png())


def _config_inited(app, config) -> None:
    config.html_static_path.append(str(STATIC))


def _serial_read(app, env, docnames) -> None:
    """Sphinx reads one page at a time, whatever ``--jobs`` says; it writes with them (`_parallel_again`).

    Two of Jupyter Book's own extensions do not say whether reading in parallel is safe, so Sphinx would read
    serially anyway, with a warning (an error under ``-W``); and pages read while the notebooks execute (`gate`)
    are read by the one process that reads the gate.
    """
    if app.parallel > 1:
        app.reprobook_jobs = app.parallel
        app.parallel = 1


def _parallel_again(app, env) -> None:
    jobs = getattr(app, "reprobook_jobs", None)
    if jobs:
        app.parallel = jobs


def _connect_gate(app, gate) -> None:
    """Read each page once its notebook is in the cache (`reprobook.book.gate`)."""
    def guarded(step):
        def handler(*args):
            try:
                step(*args)
            except gate_module.Closed as exc:
                gate_module.stop(str(exc))
        return handler

    app.connect("env-before-read-docs", guarded(lambda app, env, docnames: gate.order(docnames)), priority=900)
    app.connect("source-read", guarded(lambda app, docname, source: gate.before_read(docname)), priority=100)
    app.connect("doctree-read", guarded(lambda app, doctree: gate.after_read(app.env.docname)), priority=900)


def setup(app):
    app.connect("env-before-read-docs", _serial_read)
    app.connect("env-updated", _parallel_again)
    app.connect("env-updated", _plots_done)
    gate = gate_module.Gate.from_env()
    if gate is not None:
        _connect_gate(app, gate)
    app.connect("config-inited", _config_inited)
    app.connect("doctree-read", _doctree_read)
    app.connect("build-finished", _build_finished)
    app.connect("html-page-context", _page_context, priority=900)  # after MyST-NB adds the page's scripts
    app.add_css_file("reprobook.css")
    app.add_js_file("reprobook.js", loading_method="defer")
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
