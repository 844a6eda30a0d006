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

Everything is checked before anything is written: the ids (lower-case, and the paper's a Python package name that
is no keyword, neither id a word YAML reads as a boolean or null, the paper not one the project has already), the
title and venue (one line of text each; they reach the YAML through the YAML library, never by formatting). A
failure once writing has begun (a full disk, or a paper file that does not load: a bug of this module) removes
what was written and puts ``_toc.yml`` back as it was.
"""

from __future__ import annotations

import keyword
import re
import shutil
from pathlib import Path
from typing import Any, Callable

import nbformat
import yaml

from reprobook.book.clean import kernel_metadata
from reprobook.errors import ConfigError

_ID = re.compile(r"[a-z][a-z0-9-]{0,39}")
# the words YAML 1.1 (PyYAML, Jupyter Book) or 1.2 reads as a boolean or null: as an id, `id: no` is False
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "nil"})


def _module(paper: str) -> str:
    return paper.replace("-", "_")


PAPER_YAML = """\
# {paper}: the claims of its artifact guide, as reprobook runs and judges them.
# Made by `reprobook new {paper}`; the book's page "Adding a paper" says what to change.
paper:
  id: {paper}
  title: {title}
  short: {short}
  venue: {venue}

# The artifact's repositories, pinned (a live run checks them out; shipped outputs are read from them):
#   artifact:
#     url: https://github.com/OWNER/REPO
#     commit: 0123456789abcdef0123456789abcdef01234567
repositories: {{}}

# How to cite the paper (the evaluator's report and its RO-Crate cite it so): as the paper's own page gives it.
citation:
  authors: ["Replace with the first author", "and each other author, as the paper lists them"]
  # year: 2025
  # doi: 10.1145/0000000.0000000      (the paper's DOI, without https://doi.org/; the artifact's is artifact_doi)
  # url: https://www.usenix.org/conference/...

published:
  - id: {claim}-speedup
    what: the speed-up the paper reports (replace with the number your claim is about)
    value: 2.0
    unit: x
    source: "Figure 1 (replace with where the paper states it)"
    precision: exact

claims:
  - id: {claim}
    title: {claim_title}
    statement: >
      Replace with the claim in one or two sentences, in your own words: here, that the new system
      is at least twice as fast as the baseline on every benchmark.
    refs: ["Figure 1"]
    # Until the claim has steps to run on a host, its outputs come back with `reprobook import`.
    manual:
      - name: run the benchmark by hand
        run: ./run-benchmarks.sh > results.csv
    # `reprobook import {paper}/{claim} DIR` gives each file under DIR to the output whose glob matches its name.
    outputs:
      results: {{path: ., glob: "*.csv", description: "a CSV of benchmark,value rows"}}
    loader: {paper}.results
    published: [{claim}-speedup]
    # Every key and check kind, with every option: the book's page "Adding a paper", section "The reference"
    # (or `reprobook reference`). `reprobook check-paper {paper}` checks the project's rules on this file.
    checks:
      - kind: at_least
        what: every benchmark's speed-up is at least the paper's
        value: speedup
        min: {{published: {claim}-speedup}}
        # The project's rule: a run imported from a small machine leaves a check inconclusive unless the check says
        # where it may be judged. A speed-up over a baseline measured side by side holds on any machine, so this
        # check says so. A claim about absolute numbers (throughput on a 32-core machine) says instead what the
        # machine needs (requires: {{cores: 32, memory_gib: 64}}); an import then states its machine (--facts).
        judged_at: [paper]
        why: the system and its baseline run side by side on one machine, so their ratio does not depend on which
    plot: {{x: benchmark, y: speedup, xlabel: benchmark, ylabel: "speed-up over the baseline (x)"}}
"""

PACKAGE_INIT = '''"""The paper {paper}: its loaders (and, as it grows, its output formats and input generators)."""

from reprobook.papers.{module} import loaders  # noqa: F401  (registers {paper}.*)
'''

LOADERS = '''"""The paper {paper}: its outputs as the tidy tables its claims judge.

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


@loader("{paper}.results", columns=("benchmark", "speedup"), words={{"speedup": ("speed-up", "×")}})
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

LOADER_TEST = '''"""The loaders of {paper} on sample outputs: tests/unit/data/{paper}/<output>/ holds each output's files.

Replace the sample with the artifact's real outputs (the authors' shipped files, or a run of yours) and say where
they come from in tests/unit/data/{paper}/README.md; this test then reads them as a run hands them over. It checks
what every loader promises (rows, the columns it declares, numbers in its value columns), so it needs no edit when
the loader changes.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reprobook.core.config import load_paper
from reprobook.core.loaders import columns, get_loader
from reprobook.sources import Outputs

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data" / "{paper}"


def test_each_claims_loader_reads_the_sample_outputs():
    paper = load_paper(ROOT / "configs" / "papers" / "{paper}.yaml")
    for claim in paper.claims.values():
        files = {{name: tuple(sorted(p for p in (DATA / name).rglob("*") if p.is_file())) for name in claim.outputs}}
        assert any(files.values()), f"no sample output for {{claim.key}} under {{DATA}}/<output name>/"
        table = get_loader(claim.loader)(Outputs(claim=claim.key, kind="live", label="the sample outputs",
                                                 files=files))
        assert isinstance(table, pd.DataFrame) and not table.empty, claim.key
        declared = columns(claim.loader) or tuple(table.columns)
        assert set(declared) <= set(table.columns), (claim.key, declared, list(table.columns))
        for spec in claim.checks:
            assert pd.api.types.is_numeric_dtype(table[spec.value]), (claim.key, spec.value)
'''

SAMPLE_README = """# Sample outputs of {paper}

One directory per output the paper file declares (`outputs:` of a claim), holding files as the artifact writes them.
`tests/unit/test_loaders_{module}.py` reads them through each claim's loader.

- `results/results.csv`: written by `reprobook new` as a stand-in. Replace it with a real output and say here where
  it comes from (the authors' shipped file at `owner/repo@commit:path`, or a run of yours: machine, date, command).

The same directory imports as a run: `reprobook import {paper}/{claim} tests/unit/data/{paper} --machine "..."`.
"""


_VENUE_YEAR = re.compile(r"(.*?)\s*(?:'(\d{2})|((?:19|20)\d{2}))")


def year_of(venue: str) -> int | None:
    """The year ``venue`` ends in (``SOSP 2024``, ``EuroSys '24``), else None.

    >>> year_of("SOSP 2024"), year_of("EuroSys '24"), year_of("USENIX ATC")
    (2024, 2024, None)
    """
    m = _VENUE_YEAR.fullmatch(venue.strip())
    return None if not m else int(m[3]) if m[3] else 2000 + int(m[2])


def house_style(name: str, venue: str, year: int | None) -> tuple[str, str]:
    """The venue with its year, and the paper's short name as the book writes it: ``Aardvark (USENIX Security '22)``.

    ``venue`` may end in its year (``SOSP 2024``); ``year`` gives it otherwise. Without a year the short name is
    ``Name (venue)``.

    >>> house_style("Aardvark", "USENIX Security", 2022)
    ('USENIX Security 2022', "Aardvark (USENIX Security '22)")
    >>> house_style("Verus", "SOSP 2024", None)
    ('SOSP 2024', "Verus (SOSP '24)")

    Raises
    ------
    ConfigError
        ``year`` is not the one ``venue`` ends in.
    """
    m = _VENUE_YEAR.fullmatch(venue.strip())
    bare = m[1] if m and m[1] else venue.strip()
    said = year_of(venue) if m and m[1] else None
    if year is not None and said is not None and year != said:
        raise ConfigError(f"the venue {venue!r} says {said} but the year given is {year}: give one of them "
                          f"(nothing was written)")
    year = said if year is None else year
    if year is None:
        return bare, f"{name} ({bare})" if bare else name
    return f"{bare} {year}", f"{name} ({bare} '{year % 100:02d})"


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
    nb.metadata = kernel_metadata()  # as Lab writes it: opening the page changes nothing
    return nb


def _notebook(paper: str, claim: str, claim_title: str) -> nbformat.NotebookNode:
    """The claim's page: its story in Markdown, its parameters, then the same public calls as every claim page,
    the published numbers cell by cell, and the project's rule on where its checks are judged."""
    from reprobook.core.rules import SMALL_IMPORT
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
        md("## Verdict"),
        code("verdict = rb.judge(claim, measured, outputs)\nverdict", metadata={"tags": ["hide-input"]}),
        md("## Against the paper\n\nThe run against the paper's numbers (solid markers measured, hollow the paper's, "
           "shaded what the checks accept), then what the checks compared, point by point, and how each was judged "
           "(folded). On the website this comes right under the verdict."),
        code("rb.evidence(claim, measured, verdict)", metadata={"tags": ["hide-input"]}),
        md("## Against the paper, number by number\n\nEach published number (and each cell of a published table) "
           "beside the measured value of the rows it speaks of, their ratio, and the verdict of the check that "
           "judged it."),
        code("rb.compare(claim, measured, verdict)", metadata={"tags": ["hide-input"]}),
        md("## Where the checks are judged\n\n"
           f"The project's rule: {SMALL_IMPORT}. A run is judged on its machine's facts: those probed on a live "
           f"host, or those given with `reprobook import --facts FILE` (or `--cores`, `--os`, ...). "
           f"`reprobook check-paper {paper}` checks this claim against the rule."),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = kernel_metadata()  # as Lab writes it: opening the page changes nothing
    return nb


def _scalar(value: str) -> str:
    """``value`` as a YAML scalar, made by the YAML library (double-quoted, on one line): whatever it holds, it is
    that string when read back, never a key or a line of its own."""
    return yaml.safe_dump(value, default_style='"', width=10**9, allow_unicode=True).rstrip("\n")


def check_id(what: str, value: str) -> None:
    """Refuse an id that is not lower-case letters, digits and dashes (at most 40), or that YAML reads as a boolean
    or null."""
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise ConfigError(f"a {what} id is lower-case letters, digits and dashes, starting with a letter "
                          f"(at most 40), not {value!r} (nothing was written)")
    if value in _YAML_WORDS or yaml.safe_load(value) != value:
        raise ConfigError(f"a {what} id cannot be {value!r}: YAML reads it as {yaml.safe_load(value)!r}, not as a "
                          f"name (nothing was written)")


def _check_paper(root: Path, paper: str) -> None:
    """The paper's id is a Python package name that is no keyword, and names no paper the project has."""
    module = _module(paper)
    if not module.isidentifier() or keyword.iskeyword(module) or keyword.issoftkeyword(module):
        raise ConfigError(f"a paper id cannot be {paper!r}: its package, reprobook.papers.{module}, would not be "
                          f"a Python name one can import (a keyword) (nothing was written)")
    from importlib.metadata import entry_points
    from reprobook.core.plugins import GROUP
    known = {p.stem for p in (root / "configs" / "papers").glob("*.yaml")}
    known |= {_module(p.name) for p in (root / "lib" / "reprobook" / "papers").iterdir()
              if p.is_dir() or p.suffix == ".py"} if (root / "lib" / "reprobook" / "papers").is_dir() else set()
    known |= {ep.name for ep in entry_points(group=GROUP)}
    if paper in known or module in known:
        raise ConfigError(f"{paper} exists already: the project has a paper (or a package) of that name "
                          f"(nothing was written)")


def _one_line(what: str, value: str) -> None:
    if not value.isprintable():
        raise ConfigError(f"the {what} is one line of text, not {value!r}: it holds a line break or another control "
                          f"character (nothing was written)")


def new_paper(root: Path, paper: str, *, claim: str = "first-claim", title: str = "", venue: str = "",
              claim_title: str = "", check: Callable[[Path], Any] | None = None, name: str = "",
              year: int | None = None) -> list[Path]:
    """Write the files of a new paper under the project ``root``; the paths written, in order.

    ``name`` is the paper's short name (default: the title's part before its colon, else the id), ``year`` the
    year it appeared (default: from the end of ``venue``); the chapter's caption and ``short:`` read
    ``Name (VENUE 'YY)`` (`house_style`). ``check`` is called with the paper file once everything is written (the
    command line loads it); if it raises, or writing fails, what was written is removed and ``_toc.yml`` put back.

    Raises
    ------
    ConfigError
        An id, the title or the venue is refused (see the module doc), the paper exists already, or one of
        the files exists already (nothing is written then).
    """
    check_id("paper", paper)
    check_id("claim", claim)
    for what, value in (("title", title), ("venue", venue), ("claim title", claim_title), ("name", name)):
        _one_line(what, value)
    if year is not None and not (1950 <= year <= 2100):
        raise ConfigError(f"the year is the one the paper appeared in, e.g. 2024, not {year} (nothing was written)")
    if year is not None and not venue.strip():
        raise ConfigError(f"a year ({year}) without a venue: give the venue too, e.g. --venue 'USENIX ATC' "
                          f"(nothing was written)")
    root = Path(root)
    _check_paper(root, paper)
    module = _module(paper)
    name = name or (title.split(":", 1)[0].strip() if ":" in title else "") or paper
    venue, short = house_style(name, venue, year) if venue else ("replace with the venue and year", name)
    title = title or f"{paper} (replace with the paper's title)"
    claim_title = claim_title or f"{claim.replace('-', ' ').capitalize()} (replace with the claim's title)"
    fields = dict(paper=paper, module=module, claim=claim, title=_scalar(title), short=_scalar(short),
                  venue=_scalar(venue), claim_title=_scalar(claim_title))
    paper_yaml = PAPER_YAML.format(**fields)
    doc = yaml.safe_load(paper_yaml)   # what is written reads back as given: the values are the YAML library's
    assert (doc["paper"]["title"], doc["paper"]["venue"], doc["claims"][0]["title"]) == (title, venue, claim_title)
    files = {
        root / "configs" / "papers" / f"{paper}.yaml": paper_yaml,
        root / "lib" / "reprobook" / "papers" / module / "__init__.py": PACKAGE_INIT.format(**fields),
        root / "lib" / "reprobook" / "papers" / module / "loaders.py": LOADERS.format(**fields),
        root / "notebooks" / paper / f"{claim}.ipynb": nbformat.writes(_notebook(paper, claim, claim_title)) + "\n",
        root / "book" / paper / "index.ipynb": nbformat.writes(_chapter(paper, claim, title, venue)) + "\n",
        root / "tests" / "unit" / f"test_loaders_{module}.py": LOADER_TEST.format(**fields),
        root / "tests" / "unit" / "data" / paper / "results" / "results.csv": "benchmark,value\nsort,2.4\nscan,2.1\n",
        root / "tests" / "unit" / "data" / paper / "README.md": SAMPLE_README.format(**fields),
    }
    toc_path = root / "_toc.yml"
    if not toc_path.is_file():
        raise ConfigError(f"no _toc.yml in {root}: the website's table of contents, where the paper's chapter goes "
                          f"(nothing was written)")
    there = [p for p in files if p.exists()]
    if there:
        raise ConfigError(f"{paper} exists already: {', '.join(str(p.relative_to(root)) for p in there)} "
                          f"(nothing was written)")
    toc = toc_path.read_bytes()
    made: list[Path] = []   # the files and the directories this call created, in order
    try:
        for path, text in files.items():
            missing = [d for d in (path.parent, *path.parent.parents) if not d.exists()]
            for d in reversed(missing):
                d.mkdir()
                made.append(d)
            made.append(path)
            path.write_text(text)
        toc_path.write_text(toc.decode().rstrip("\n") + "\n" + _toc_part(paper, claim, short))
        if check is not None:
            check(root / "configs" / "papers" / f"{paper}.yaml")
    except BaseException:
        toc_path.write_bytes(toc)
        for path in reversed(made):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        raise
    return [*files, toc_path]


def _toc_part(paper: str, claim: str, short: str) -> str:
    """The ``_toc.yml`` lines of a paper's chapter (appended as text, so the file's comments stay; the caption, the
    paper's short name in the house style, made by the YAML library)."""
    return (f"  - caption: {_scalar(short)}\n    chapters:\n      - file: book/{paper}/index\n"
            f"        sections:\n          - file: notebooks/{paper}/{claim}\n")
