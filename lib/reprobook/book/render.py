"""``python -m reprobook.book.render ARGS``: ``jupyter-book ARGS``, started lighter.

Jupyter Book validates ``_config.yml`` with ``jsonschema``, whose import builds the grammars of its optional
``format`` checkers (RFC 3987's alone takes a second and more); Jupyter Book checks no format. `reprobook book`
renders through this module, which imports ``jsonschema`` without them first
(`reprobook.core.schema.jsonschema_module`) and then runs Jupyter Book's own command line unchanged.
"""

from __future__ import annotations

import sys


def main() -> None:
    from reprobook.core.schema import jsonschema_module
    jsonschema_module()
    from jupyter_book.cli.main import main as jupyter_book
    sys.argv[0] = "jupyter-book"
    jupyter_book()


if __name__ == "__main__":
    main()
