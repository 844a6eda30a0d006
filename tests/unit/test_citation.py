"""How to cite reprobook: CITATION.cff valid against its schema (cffconvert), codemeta.json saying the same, both at
the version reprobook reports."""

from __future__ import annotations

import json
import tomllib

import reprobook
from tests.integration.conftest import unavailable
from tests.support import validators

ROOT = validators.ROOT


def test_citation_cff_is_valid_and_codemeta_says_the_same():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    ours = json.loads((ROOT / "codemeta.json").read_text())
    assert ours["version"] == project["version"] == reprobook.__version__
    assert ours["softwareRequirements"] == project["dependencies"]
    assert ours["runtimePlatform"] == f"Python {project['requires-python']}"
    if not validators.available():
        unavailable(f"cffconvert is not installed in {validators.VENV} (make validators)")
    valid = validators.cffconvert("--validate", "-i", "CITATION.cff", cwd=ROOT)
    assert valid.returncode == 0 and "valid" in valid.stdout, valid.stdout + valid.stderr
    made = validators.cffconvert("-f", "codemeta", "-i", "CITATION.cff", cwd=ROOT)
    assert made.returncode == 0, made.stderr
    theirs = json.loads(made.stdout)   # CITATION.cff as codemeta, by cffconvert
    for key in ("@context", "@type", "name", "description", "keywords", "license", "version"):
        assert ours[key] == theirs[key], key
    assert [a["name"] for a in ours["author"]] == [a["name"] for a in theirs["author"]]


def test_reprobook_new_writes_a_citation_block_the_schema_checks_and_the_report_cites(tmp_path, monkeypatch):
    """The paper file `reprobook new` writes has a citation block; the schema takes it, checks each key (a year as
    text, a DOI as a URL, an unknown key are refused, naming it), and the report and its RO-Crate cite the paper."""
    import shutil

    import pytest
    import yaml

    from reprobook.core.config import load_paper
    from reprobook.core.provenance import report_crate
    from reprobook.core.schema import load_yaml
    from reprobook.errors import ConfigError
    from reprobook.scaffold import new_paper
    shutil.copy(ROOT / "_toc.yml", tmp_path / "_toc.yml")
    (tmp_path / "configs" / "papers").mkdir(parents=True)
    new_paper(tmp_path, "toy", claim="speedup", title="Toy", venue="NoConf 2026")
    written = load_yaml(tmp_path / "configs/papers/toy.yaml", "paper")   # checked against the paper file's schema
    assert written["citation"]["authors"] and set(written["citation"]) == {"authors"}   # year, doi, url: shown, commented

    aardvark = yaml.safe_load((ROOT / "configs/papers/aardvark.yaml").read_text())
    given = {"authors": ["Derek Leung", "Yossi Gilad", "Sergey Gorbunov", "Leonid Reyzin", "Nickolai Zeldovich"],
             "year": 2022, "doi": "10.5555/aardvark.example", "url": "https://www.usenix.org/conference/x"}
    path = tmp_path / "aardvark.yaml"
    for bad, key in (({**given, "year": "2022"}, "citation.year"), ({**given, "doi": "https://doi.org/10.1/x"},
                                                                   "citation.doi"),
                     ({**given, "isbn": "x"}, "citation.isbn"), ({"year": 2022}, "citation.authors")):
        path.write_text(yaml.safe_dump({**aardvark, "citation": bad}, sort_keys=False))
        with pytest.raises(ConfigError) as info:
            load_paper(path)
        assert key in str(info.value), (key, str(info.value))
    path.write_text(yaml.safe_dump({**aardvark, "citation": given}, sort_keys=False))
    paper = load_paper(path)
    assert list(paper.citation["authors"]) == given["authors"] and paper.citation["year"] == 2022

    data = {"paper": {"id": "aardvark", "title": paper.title, "venue": paper.venue, "guide": paper.guide,
                      "artifact_doi": None, "citation": given},   # as paper_report gives it (test_report_paths: valid)
            "generated": "2026-11-29T04:00:00+00:00", "stamp": "s", "reprobook": "0.1.0", "repositories": [],
            "claims": []}
    crate = report_crate([("aardvark-report.md", "aardvark-report.json", data)])
    cited = {e["@id"]: e for e in crate["@graph"]}["https://doi.org/10.5555/aardvark.example"]
    assert cited["@type"] == "ScholarlyArticle" and cited["creditText"].startswith("Derek Leung, Yossi Gilad")
    assert cited["datePublished"] == "2022" and cited["url"] == given["url"]
    assert crate["@graph"][1]["citation"] == {"@id": "https://doi.org/10.5555/aardvark.example"}
