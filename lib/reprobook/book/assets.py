"""The built website made light: what the theme ships trimmed to what the pages use (a step after the build).

A claim page used to load 2.5 MB, most of it the theme's Font Awesome script (1.45 MB, every icon of the set, to
draw the fifteen the pages show). After Jupyter Book has written ``_build/html``, `lighten`:

- draws each icon a page shows (``<i class="fa-solid fa-bars">``, or a ``<span>``) as the inline SVG the script would have made
  of it, taken from the script's own icon data, and drops the script from every page (and the site);
- drops from the theme's stylesheet the glyph rules of the icons no page shows (``.fa-x:before{content:...}``);
- drops the search index and its scripts from every page but the search page, which is the one that reads them;
- saves three requests per page: the theme's ``theme.css`` (one ``@import`` of ``basic.css``) gives way to
  ``basic.css`` itself, Sphinx's ``documentation_options.js`` (half a kilobyte) is written into the page, and the
  site's icon is named in the page as a data URI (a browser asks every site for ``/favicon.ico`` otherwise);
- stores each plot as a PNG of 256 colours (a plot's flat colours and anti-aliased edges fit in them), keeping
  the words a plot carries (its alt text, caption and text size).

Each step is idempotent: a rebuild that rewrites some pages and copies the theme's files again gets the same site.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

FONTAWESOME = "_static/scripts/fontawesome.js"
THEME_CSS = "_static/styles/pydata-sphinx-theme.css"
STYLES = {"fa-solid": "fas", "fas": "fas", "fa-regular": "far", "far": "far", "fa-brands": "fab", "fab": "fab"}
_ICON_TAG = re.compile(r'<(i|span)(\s[^>]*?class="([^"]*\bfa[srb]?-?[^"]*)"[^>]*)>\s*</\1>')
_ATTR = re.compile(r'\s([\w:-]+)="([^"]*)"')
_PACK = re.compile(r'\b\w{1,3}\("(fa[a-z])",\w{1,3}\)')
_SEARCH_SCRIPTS = re.compile(r'\s*<script[^>]*\ssrc="[^"]*(?:searchindex|searchtools|language_data)\.js[^"]*"[^>]*>'
                             r'\s*</script>')
_FA_SCRIPT = re.compile(r'\s*<script[^>]*\ssrc="[^"]*scripts/fontawesome\.js[^"]*"[^>]*>\s*</script>')
_THEME_CSS_LINK = re.compile(r'(href=")([^"]*?)_static/styles/theme\.css(?:\?[^"]*)?"')
_OPTIONS_SCRIPT = re.compile(r'<script([^>]*?)\ssrc="[^"]*_static/documentation_options\.js[^"]*"([^>]*)>\s*</script>')
ICON_LINK = '<link rel="icon" type="image/png" href="data:image/png;base64,{}" />'
_GLYPH_RULE = re.compile(r'((?:\.fa-[\w-]+::?before,?)+)\{content:"[^"]*"\}')


def icon_names(tag_classes: str) -> tuple[str, str] | None:
    """(pack, icon) of an ``<i>``'s classes (``fa-solid fa-bars fa-lg``: ``("fas", "bars")``), or None."""
    classes = tag_classes.split()
    pack = next((STYLES[c] for c in classes if c in STYLES), None)
    if pack is None:
        return None
    modifiers = {"fa-lg", "fa-xs", "fa-sm", "fa-xl", "fa-2xl", "fa-fw", "fa-spin", "fa-pulse", "fa-border",
                 "fa-inverse", "fa-li", "fa-ul", "fa-stack", "fa-flip"} | {f"fa-{n}x" for n in range(1, 11)}
    names = [c[3:] for c in classes if c.startswith("fa-") and c not in STYLES and c not in modifiers]
    return (pack, names[-1]) if names else None


def icon_data(script: str, wanted: set[tuple[str, str]]) -> dict[tuple[str, str], tuple[int, int, str]]:
    """(pack, icon) -> (width, height, SVG path) for each of ``wanted`` found in Font Awesome's script."""
    packs, start = [], 0
    for m in _PACK.finditer(script):   # each pack's icons are defined before the call that registers the pack
        packs.append((m.group(1), start, m.start()))
        start = m.end()
    found = {}
    for pack, name in wanted:
        for p, a, b in packs:
            if p != pack:
                continue
            m = _icon_at(script, name, a, b)
            if m:
                found[(pack, name)] = (int(m.group(1)), int(m.group(2)), m.group(3))
                break
    return found


_ICON_BODY = re.compile(r'\[(\d+),(\d+),\[[^\]]*\],"[^"]*","((?:[^"\\]|\\.)*)"\]')


def _icon_at(script: str, name: str, start: int, end: int) -> re.Match | None:
    """The first definition of icon ``name`` (``"name":[...]`` or ``name:[...]`` not part of a longer name) in
    ``script[start:end]``: found by plain text search, then its body matched there (a regular expression that
    starts with a choice of names and a look-behind searches the megabyte of the script far more slowly)."""
    best = None
    for needle, quoted in ((f'"{name}":', True), (f"{name}:", False)):
        at = script.find(needle, start, end)
        while at != -1:
            before = script[at - 1] if at > 0 else ""
            if quoted or not (before.isalnum() or before in '_"-'):
                m = _ICON_BODY.match(script, at + len(needle), end)
                if m:
                    if best is None or at < best[0]:
                        best = (at, m)
                    break
            at = script.find(needle, at + 1, end)
    return best[1] if best else None


def svg_for(attrs: str, classes: str, pack: str, name: str, data: tuple[int, int, str]) -> str:
    """The inline SVG Font Awesome's script makes of an ``<i>`` (its other attributes kept)."""
    width, height, path = data
    kept = "".join(f' {k}="{v}"' for k, v in _ATTR.findall(attrs) if k not in ("class", "aria-hidden"))
    return (f'<svg class="svg-inline--fa {html.escape(" ".join(classes.split()))}"{kept} aria-hidden="true" '
            f'focusable="false" data-prefix="{pack}" data-icon="{name}" xmlns="http://www.w3.org/2000/svg" '
            f'viewBox="0 0 {width} {height}"><path fill="currentColor" d="{path}"></path></svg>')


def inline_icons(page: str, icons: dict) -> str:
    """``page`` with each Font Awesome ``<i>`` whose icon is in ``icons`` drawn as inline SVG."""
    def swap(m: re.Match) -> str:
        names = icon_names(m.group(3))
        if not names or names not in icons:
            return m.group(0)
        return svg_for(m.group(2), m.group(3), *names, icons[names])
    return _ICON_TAG.sub(swap, page)


def used_icons(pages: list[str]) -> set[tuple[str, str]]:
    return {n for page in pages for m in _ICON_TAG.finditer(page) if (n := icon_names(m.group(3)))}


def trim_glyph_rules(css: str, used: set[str]) -> str:
    """``css`` without the glyph rules (``.fa-x:before{content:...}``) of icons not in ``used``."""
    def keep(m: re.Match) -> str:
        names = set(re.findall(r"\.fa-([\w-]+)::?before", m.group(1)))
        return m.group(0) if names & used else ""
    return _GLYPH_RULE.sub(keep, css)


def fewer_requests(page: str, options_js: str | None, icon_png: bytes) -> str:
    """``page`` with ``theme.css`` linked as the ``basic.css`` it imports, ``documentation_options.js`` inline (when
    ``options_js`` is its text) and the site's icon as a data URI."""
    import base64
    page = _THEME_CSS_LINK.sub(lambda m: f'{m.group(1)}{m.group(2)}_static/basic.css"', page)
    if options_js is not None and "</script" not in options_js:
        page = _OPTIONS_SCRIPT.sub(lambda m: f"<script{m.group(1)}{m.group(2)}>{options_js.strip()}</script>", page)
    if 'rel="icon"' not in page and "</head>" in page:
        page = page.replace("</head>", ICON_LINK.format(base64.b64encode(icon_png).decode()) + "\n</head>", 1)
    return page


def quantize_png(path: Path) -> bool:
    """Store the PNG at ``path`` in 256 colours, its text chunks and resolution kept; True if that made it smaller."""
    import io

    from PIL import Image, PngImagePlugin
    with Image.open(path) as image:
        if image.mode == "P":
            return False
        info = PngImagePlugin.PngInfo()
        for key, value in (getattr(image, "text", {}) or {}).items():
            info.add_text(key, value)
        small = image.convert("RGBA").quantize(256, method=Image.Quantize.FASTOCTREE)
        out = io.BytesIO()
        small.save(out, "PNG", compress_level=9, pnginfo=info, dpi=image.info.get("dpi", (72, 72)))
    data = out.getvalue()
    if len(data) >= path.stat().st_size:
        return False
    # whole or not at all: the book's extension may read the plot's words while it is being shrunk
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return True


def lighten(outdir: str | Path, icon_png: bytes = b"") -> dict[str, int]:
    """Trim the built site at ``outdir`` (`reprobook.book.sphinxext` runs it when a build finishes); what it did.

    ``icon_png``: the site's icon, named in each page (none: pages are left without one).
    """
    out = Path(outdir)
    done = {"pages": 0, "icons": 0, "plots": 0}
    files = sorted(out.rglob("*.html"))
    pages = {p: p.read_text(encoding="utf-8") for p in files}
    script = out / FONTAWESOME
    wanted = used_icons(list(pages.values()))
    icons = icon_data(script.read_text(encoding="utf-8"), wanted) if script.is_file() and wanted else {}
    every_icon_drawn = set(icons) == wanted
    options = out / "_static" / "documentation_options.js"
    options_js = options.read_text(encoding="utf-8") if options.is_file() else None
    for path, text in pages.items():
        new = inline_icons(text, icons)
        new = fewer_requests(new, options_js, icon_png) if icon_png else new
        if every_icon_drawn:   # an icon the script's data lacks keeps the script (it draws that icon)
            new = _FA_SCRIPT.sub("", new)
        if path.name != "search.html":
            new = _SEARCH_SCRIPTS.sub("", new)
        if new != text:
            path.write_text(new, encoding="utf-8")
            done["pages"] += 1
    done["icons"] = len(icons)
    if every_icon_drawn and script.is_file():
        for leftover in (script, script.with_name(script.name + ".map")):
            leftover.unlink(missing_ok=True)
    css = out / THEME_CSS
    if css.is_file():
        text = css.read_text(encoding="utf-8")
        trimmed = trim_glyph_rules(text, {name for _, name in wanted})
        if trimmed != text:
            css.write_text(trimmed, encoding="utf-8")
    # Pillow compresses without the GIL: the plots two (or more) at a time, one per core
    from concurrent.futures import ThreadPoolExecutor
    pngs = sorted((out / "_images").glob("*.png"))
    with ThreadPoolExecutor(max_workers=max(1, min(len(pngs), os.cpu_count() or 1))) as pool:
        done["plots"] = sum(pool.map(quantize_png, pngs))
    return done
