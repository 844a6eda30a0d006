"""``python -m reprobook.book.render [--jobs N] ARGS``: ``jupyter-book ARGS``, started lighter, writing in parallel.

Jupyter Book validates ``_config.yml`` with ``jsonschema``, whose import builds the grammars of its optional
``format`` checkers (RFC 3987's alone takes a second and more); Jupyter Book checks no format. `reprobook book`
renders through this module, which imports ``jsonschema`` without them first
(`reprobook.core.schema.jsonschema_module`) and then runs Jupyter Book's own command line unchanged.

``--jobs N`` (before Jupyter Book's arguments) gives Sphinx N processes, as ``sphinx-build -j N`` does; Jupyter
Book's command line has no such option. Sphinx then writes the pages' HTML in N - 1 processes while its main one
builds the search index; it still reads the pages one at a time (`reprobook.book.sphinxext`).
"""

from __future__ import annotations

import functools
import os
import sys


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    jobs = 1
    if args[:1] == ["--jobs"] and len(args) > 1 and args[1].isdigit():
        jobs, args = max(1, int(args[1])), args[2:]
    from reprobook.core.schema import jsonschema_module
    jsonschema_module()
    if jobs > 1:
        import jupyter_book.sphinx
        jupyter_book.sphinx.build_sphinx = functools.partial(jupyter_book.sphinx.build_sphinx, jobs=jobs)
    from jupyter_book.cli.main import main as jupyter_book
    sys.argv[:] = ["jupyter-book", *args]
    try:
        jupyter_book()
        code = 0
    except SystemExit as exc:
        code = exc.code
    if not isinstance(code, int):
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    # the site is written and every file closed: end without tearing down what Sphinx built in memory (about half
    # a second, while `reprobook book` waits)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
