"""``reprobook new PAPER``: the files a new paper needs, made valid from the start.

It writes, for a paper ``PAPER`` and its first claim ``CLAIM``:

* ``configs/papers/PAPER.yaml``: the paper, one published number and one claim with a check
  and a plot, valid against the schema (the paper file is loaded once it is written, so a
  scaffold that does not validate is a bug of this module, not of the author);
* ``lib/reprobook/papers/PAPER/``: the paper's package, with a loader that reads a CSV of
  ``benchmark,value`` rows and declares the columns it produces;
* ``notebooks/PAPER/CLAIM.ipynb``: the claim's page, the same public calls as every claim page;
* ``book/PAPER/index.ipynb`` and an entry in ``_toc.yml``: the paper's chapter on the website.

The author then edits three of them by hand: the YAML (the claim, its numbers and checks), the
loader (the artifact's real output format) and the prose (the page's and the chapter's words).
The book's page "Adding a paper" walks through it.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

from reprobook.errors import ConfigError

_ID = re.compile(r"^[a-z][a-z0-9-]{0,39}$")


def _module(paper: str) -> str:
    return paper.replace("-", "_")


PAPER_YAML = """\
# {title}: the claims of its artifact guide, as reprobook runs and judges them.
# Made by `reprobook new {paper}`; the book's page "Adding a paper" says what to change.
paper:
  id: {paper}
  title: "{title}"
  short: "{short}"
  venue: "{venue}"

# The artifact's repositories, pinned (a live run checks them out; shipped outputs are read from them):
#   artifact:
#     url: https://github.com/OWNER/REPO
#     commit: 0123456789abcdef0123456789abcdef01234567
repositories: {{}}

published:
  - id: {claim}-speedup
    what: the speed-up the paper reports (replace with the number your claim is about)
    value: 2.0
    unit: x
    source: "Figure 1 (replace with where the paper states it)"
    precision: exact

claims:
  - id: {claim}
    title: "{claim_title}"
    statement: >
      Replace with the claim in one or two sentences, in your own words: here, that the new system
      is at least twice as fast as the baseline on every benchmark.
    refs: ["Figure 1"]
    # Until the claim has steps to run on a host, its outputs come back with `reprobook import`.
    manual:
      - name: run the benchmark by hand
        run: ./run-benchmarks.sh > results.csv
    outputs:
      results: {{path: ., glob: "*.csv", description: "a CSV of benchmark,value rows"}}
    loader: {paper}.results
    published: [{claim}-speedup]
    checks:
      - kind: at_least
        what: every benchmark's speed-up is at least the paper's
        value: speedup
        min: {{published: {claim}-speedup}}
    plot: {{x: benchmark, y: speedup, xlabel: benchmark, ylabel: "speed-up over the baseline (x)"}}
"""

PACKAGE_INIT = '''"""{title}: the paper's loaders (and, as it grows, its output formats and input generators)."""

from reprobook.papers.{module} import loaders  # noqa: F401  (registers {paper}.*)
'''

LOADERS = '''"""{title}: its outputs as the tidy tables its claims judge.

Each loader is registered by name (the claim's ``loader:`` in ``configs/papers/{paper}.yaml``) and
declares the columns it produces: a check or plot naming another column is an error when the paper
file loads. Replace the format below with the artifact's own (``reprobook.formats`` has readers for
CSV/TSV, JSON, labelled numbers in text, LaTeX tables and ``go test -v``).
"""

from __future__ import annotations

import pandas as pd

from reprobook.core.loaders import loader
from reprobook.errors import OutputError
from reprobook.formats import tables


@loader("{paper}.results", columns=("benchmark", "speedup"))
def results(outputs) -> pd.DataFrame:
    """One row per benchmark: its speed-up, from every ``results`` CSV (``benchmark,value`` with a header)."""
    frames = []
    for path in outputs.files.get("results", ()):
        frame = tables.read_csv(path, required=["benchmark", "value"], types={{"value": "float"}})
        frames.append(frame.rename(columns={{"value": "speedup"}})[["benchmark", "speedup"]])
    if not frames:
        raise OutputError(f"no results file among the outputs of {{outputs.label}}")
    return pd.concat(frames, ignore_index=True)
'''

def _chapter(paper: str, claim: str, title: str, venue: str) -> nbformat.NotebookNode:
    """The paper's chapter page: its words, then the table of its claims made from its paper file."""
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook(cells=[
        md(f"# {title}\n\n*{title}*, {venue}. Replace this with what the paper shows and what its artifact lets an "
           f"evaluator check, in your own words."),
        md(f"## The claims\n\nThe table below is generated from `configs/papers/{paper}.yaml`."),
        code(f'from reprobook import report\nreport.paper_overview("{paper}")', metadata={"tags": ["remove-input"]}),
        md(f"- {{doc}}`../../notebooks/{paper}/{claim}`"),
    ])
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                   "language_info": {"name": "python"}}
    return nb


def _notebook(paper: str, claim: str, claim_title: str) -> nbformat.NotebookNode:
    """The claim's page: its story in Markdown, its parameters, then the same public calls as every claim page."""
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    cells = [
        md(f"# {claim_title}\n\nReplace with the claim's story in your own words: what the paper measures, on what, "
           f"and what an evaluator should see."),
        code('source: str = "auto"  # auto | reference | live | a run id: where the numbers come from\n'
             'host: str = "local"  # host name from configs/hosts.yaml; used when source is live\n'
             'new_run: bool = False  # live: start a fresh run instead of attaching to the earlier one\n'
             'allow_small_host: bool = False  # live: run even on a host below the claim\'s machine requirements',
             metadata={"tags": ["parameters", "hide-cell"]}),
        code(f'import matplotlib.pyplot as plt\nimport reprobook as rb\n\nclaim = rb.claim("{paper}/{claim}")\n'
             f'rb.describe(claim)', metadata={"tags": ["hide-input"]}),
        md("## Where the numbers come from"),
        code("outputs = rb.obtain(claim, source, host=host, new=new_run, allow_small_host=allow_small_host)\noutputs",
             metadata={"tags": ["hide-cell"]}),
        md("## The measured table"),
        code("measured = rb.load(claim, outputs)\nmeasured", metadata={"tags": ["hide-cell"]}),
        md("## Against the paper"),
        code("rb.plot(claim, measured)\nplt.show()", metadata={"tags": ["hide-input"]}),
        md("## Verdict"),
        code("verdict = rb.judge(claim, measured, outputs)\nverdict", metadata={"tags": ["hide-input"]}),
        md("The evidence behind each check:"),
        code("rb.evidence(verdict)", metadata={"tags": ["hide-cell"]}),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                   "language_info": {"name": "python"}}
    return nb


def new_paper(root: Path, paper: str, *, claim: str = "first-claim", title: str = "", venue: str = "",
              claim_title: str = "") -> list[Path]:
    """Write the files of a new paper under the project ``root``; the paths written, in order.

    Raises
    ------
    ConfigError
        ``paper`` or ``claim`` is not a lower-case id, or one of the files exists already
        (nothing is written then).
    """
    for what, value in (("paper", paper), ("claim", claim)):
        if not _ID.match(value):
            raise ConfigError(f"a {what} id is lower-case letters, digits and dashes, starting with a letter "
                              f"(at most 40), not {value!r}")
    root = Path(root)
    module = _module(paper)
    title = title or f"{paper} (replace with the paper's title)"
    claim_title = claim_title or f"{claim.replace('-', ' ').capitalize()} (replace with the claim's title)"
    fields = dict(paper=paper, module=module, claim=claim, title=title.replace('"', "'"), short=paper,
                  venue=(venue or "replace with the venue and year").replace('"', "'"),
                  claim_title=claim_title.replace('"', "'"))
    files = {
        root / "configs" / "papers" / f"{paper}.yaml": PAPER_YAML.format(**fields),
        root / "lib" / "reprobook" / "papers" / module / "__init__.py": PACKAGE_INIT.format(**fields),
        root / "lib" / "reprobook" / "papers" / module / "loaders.py": LOADERS.format(**fields),
        root / "notebooks" / paper / f"{claim}.ipynb": nbformat.writes(_notebook(paper, claim, claim_title)) + "\n",
        root / "book" / paper / "index.ipynb": nbformat.writes(_chapter(paper, claim, fields["title"],
                                                                         fields["venue"])) + "\n",
    }
    toc_path = root / "_toc.yml"
    if not toc_path.is_file():
        raise ConfigError(f"no _toc.yml in {root}: the website's table of contents, where the paper's chapter goes "
                          f"(nothing was written)")
    there = [p for p in files if p.exists()]
    if there:
        raise ConfigError(f"{paper} exists already: {', '.join(str(p.relative_to(root)) for p in there)} "
                          f"(nothing was written)")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    toc_path.write_text(toc_path.read_text().rstrip("\n") + "\n" + _toc_part(paper, claim, fields["venue"]))
    return [*files, toc_path]


def _toc_part(paper: str, claim: str, venue: str) -> str:
    """The ``_toc.yml`` lines of a paper's chapter (appended as text, so the file's comments stay)."""
    return (f"  - caption: \"{paper} ({venue})\"\n    chapters:\n      - file: book/{paper}/index\n"
            f"        sections:\n          - file: notebooks/{paper}/{claim}\n")
