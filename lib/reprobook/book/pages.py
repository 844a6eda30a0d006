"""How a claim page reads: the result first, the machinery folded, tables that fit.

A claim notebook tells its story top to bottom (parameters, the claim, launch, load, compare,
plot, verdict). On the website the reader wants the verdict, the claim and the plot; the
parameters, the code and the evidence tables stay one click away. Two things do that here:

- `fold`: the MyST-NB cell tags of every code cell, given by one rule (`tags_for`) from what
  the cell does, so no notebook is tagged by hand: ``python -m reprobook.book.pages
  notebooks/*/*.ipynb`` tags every code cell that has no layout tag yet (metadata only;
  sources and outputs are left alone). A cell tagged on purpose (a note the reader should
  see, say) keeps its tag. A test (``tests/unit/test_pages.py``) checks that every code cell
  of every notebook has exactly one layout tag. In JupyterLab the tags change nothing: the
  notebook stays complete.
- `table_html`: a DataFrame is shown without pandas' index (a default ``RangeIndex`` is
  dropped, a named one becomes columns), inside a block that scrolls sideways when the table
  is wider than the page. `show_tables` registers it with IPython; ``reprobook.api`` does so
  when a notebook imports it.

The verdict badge at the top of each page is the website's side (`reprobook.book.sphinxext`).
"""

from __future__ import annotations

import re
import sys
from html import escape
from pathlib import Path

FOLD = "hide-cell"
"""Machinery: input and output folded behind one toggle."""
RESULT = "hide-input"
"""A result (the claim, a plot, the verdict, the comparison): its output shown, its code folded."""
ALL_TAGS = (FOLD, RESULT, "hide-output", "remove-input", "remove-output", "remove-cell")
"""The layout tags: a code cell has exactly one."""

# What makes a cell a result: it describes the claim, draws a figure, states or compares the verdict.
_RESULTS = re.compile(r"rb\.describe\(|rb\.plot\(|plt\.show\(|plt\.subplots\(|glue_verdict\(|rb\.judge\(|rb\.compare\("
                      r"|rb\.deviations\(|rb\.evidence\(")


HOWTO_START, HOWTO_END = "<!-- reprobook-howto -->", "<!-- /reprobook-howto -->"
"""Around what a *not run* claim would take (`reprobook.api.way_forward_html`): the book moves it under the verdict."""


def tags_for(cell: dict) -> str:
    """The layout tag the rule gives a code cell: the parameters and the machinery folded, results shown."""
    if "parameters" in cell.get("metadata", {}).get("tags", []):
        return FOLD
    return RESULT if _RESULTS.search("".join(cell.get("source") or "")) else FOLD


def _layout(cell: dict) -> list[str]:
    return [t for t in cell.get("metadata", {}).get("tags", []) if t in ALL_TAGS]


def fold(nb: dict) -> bool:
    """Tag each code cell of ``nb`` (a dict as in the ``.ipynb`` file) that has no layout tag by the rule; True if any."""
    changed = False
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code" or _layout(cell):
            continue
        meta = cell.setdefault("metadata", {})
        meta["tags"] = [*meta.get("tags", []), tags_for(cell)]
        changed = True
    return changed


def misfolded(nb: dict) -> list[str]:
    """The code cells of ``nb`` without exactly one layout tag, as ``cell N: has [...] (the rule gives ...)``."""
    out = []
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") == "code" and len(_layout(cell)) != 1:
            out.append(f"cell {i}: has {_layout(cell)} (the rule gives {tags_for(cell)})")
    return out


def table_html(frame) -> str:
    """A DataFrame as HTML for a page: no index column, scrolling sideways inside its cell when wide."""
    import pandas as pd
    if frame.empty:
        cols = ", ".join(escape(str(c)) for c in frame.columns)
        return ("<p class='reprobook-empty'><i>No rows" + (f" (columns: {cols})" if cols else "") + ".</i></p>")
    index = frame.index
    unnamed = all(n is None for n in index.names)
    if not (isinstance(index, pd.RangeIndex) and unnamed):
        frame = frame.reset_index(drop=unnamed and isinstance(index, pd.RangeIndex))
    infinite = [c for c in frame.columns if frame[c].dtype.kind == "f" and frame[c].abs().eq(float("inf")).any()]
    if infinite:  # a margin with no bound (nothing to compare against) reads as a symbol, not "inf"
        frame = frame.astype({c: object for c in infinite})
        for c in infinite:
            frame[c] = frame[c].map(lambda x: "∞" if x == float("inf") else "−∞" if x == float("-inf") else x)
    html = frame.to_html(index=False, na_rep="—", border=0, classes="reprobook-table",
                         max_rows=pd.get_option("display.max_rows"), max_cols=pd.get_option("display.max_columns"))
    return f"<div class='reprobook-scroll'>{html}</div>"


def show_tables() -> None:
    """In an IPython kernel, show every DataFrame through `table_html` (outside IPython, nothing happens)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with the kernel
        return
    shell = get_ipython()
    if shell is None:
        return
    import pandas as pd
    shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, table_html)


def show_figures() -> None:
    """In an IPython kernel, show every matplotlib figure as a PNG that carries its alt text and caption.

    `reprobook.book.plots.figure_png` writes them into the PNG; the book's Sphinx extension reads them
    back. The inline backend registers its own PNG formatter when it is first imported, so it is
    imported here first, and this one replaces it (outside IPython, nothing happens).
    """
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with the kernel
        return
    shell = get_ipython()
    if shell is None:
        return
    import contextlib

    from matplotlib.figure import Figure

    from reprobook.book.plots import figure_png
    with contextlib.suppress(ImportError):  # not a Jupyter kernel's backend (a terminal IPython): formats as is
        import matplotlib_inline.backend_inline  # noqa: F401 - its import registers its formatter: ours must follow
    shell.display_formatter.formatters["image/png"].for_type(Figure, figure_png)


def main(argv: list[str] | None = None) -> int:
    """``python -m reprobook.book.pages [--check] NOTEBOOK…``: give each notebook its layout tags (or list the misfits)."""
    import argparse

    import nbformat
    parser = argparse.ArgumentParser(prog="python -m reprobook.book.pages",
                                     description="Give each claim notebook its layout tags (which cells fold on the "
                                                 "website), or with --check list the cells that lack them.")
    parser.add_argument("--check", action="store_true", help="list the misfits and exit 1 if any; change nothing")
    parser.add_argument("notebooks", nargs="+", type=Path, metavar="NOTEBOOK")
    opts = parser.parse_args(sys.argv[1:] if argv is None else argv)
    check, paths = opts.check, opts.notebooks
    bad = 0
    for path in paths:
        if not path.is_file():
            print(f"{path}: no such notebook", file=sys.stderr)
            return 2
        nb = nbformat.read(str(path), as_version=nbformat.NO_CONVERT)
        if check:
            for line in misfolded(nb):
                print(f"{path}: {line}")
                bad += 1
        elif fold(nb):
            nbformat.write(nb, str(path))  # the notebook's own version: metadata changed, nothing else
            print(f"{path}: tags updated")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
