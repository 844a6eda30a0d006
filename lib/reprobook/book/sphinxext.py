"""The website's side of a claim page: the verdict badge first, and styles that let tables and code fit.

A Sphinx extension, named in ``_config.yml`` (``sphinx.extra_extensions``). When a page is read,
the verdict block its notebook displayed (`reprobook.core.checks.ClaimVerdict`, between
`~reprobook.core.checks.BADGE_START` and `~reprobook.core.checks.BADGE_END`) is moved right under the
page's title, so a reader sees the claim and its verdict (with margin, source and any caution)
before anything else; the checks table stays where the notebook put it. The badge comes from
the page's own output, so it can never disagree with the page, whichever way the book was built.
Nothing changes in JupyterLab, where the notebook shows it in order.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes

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
        return True
    return False


def _doctree_read(app, doctree) -> None:
    lift_badge(doctree)


def _config_inited(app, config) -> None:
    config.html_static_path.append(str(STATIC))


def setup(app):
    app.connect("config-inited", _config_inited)
    app.connect("doctree-read", _doctree_read)
    app.add_css_file("reprobook.css")
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
