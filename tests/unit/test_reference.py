"""The author's reference is generated from the schema, the registries and the docstrings, and says every key."""

from __future__ import annotations

import copy
import inspect
from importlib import import_module
from pathlib import Path

import yaml

from reprobook import reference
from reprobook.core import checks, requirements

ROOT = Path(__file__).resolve().parents[2]


def test_every_key_and_option_has_words():
    # a key without a description would be a key no author can learn of from the reference
    assert reference.undescribed() == []


def test_a_key_without_words_is_found():
    schema = copy.deepcopy(reference.paper_schema())
    del schema["$defs"]["plot"]["properties"]["hue"]["description"]
    del schema["$defs"]["claim"]["properties"]["parameters"]["additionalProperties"]["properties"]["help"][
        "description"]
    assert reference.undescribed(schema) == ["$defs.claim.parameters.<name>.help", "$defs.plot.hue"]


def test_the_reference_names_every_kind_option_key_and_function():
    text = reference.markdown()
    for k in checks.KINDS.values():
        assert f"### `{k.name}`" in text
        for opt in k.options:
            if opt not in ("kind", "what", "value"):
                assert f"| `{opt}` |" in text, (k.name, opt)
    schema = reference.paper_schema()
    for section in (schema["properties"], schema["$defs"]["claim"]["properties"], schema["$defs"]["plot"]["properties"],
                    schema["$defs"]["published_table"]["properties"]):
        for key, node in section.items():
            assert f"| `{key}` |" in text and " ".join(node["description"].split()).replace("|", "\\|") in text, key
    for name in requirements.names():
        assert f"| `{name}` |" in text
    for mod in reference.FORMATS:
        module = import_module(f"reprobook.formats.{mod}")
        for name, func in inspect.getmembers(module, inspect.isfunction):
            if not name.startswith("_") and func.__module__ == module.__name__:
                assert f"| `{name}(" in text, name
    # the loader's side: how to build Outputs in a test, and what `ratio` does not take
    assert 'Outputs(claim="mypaper/speedup", kind="live"' in text
    ratio = text[text.index("### `ratio`"):text.index("### `count`")]
    assert "takes no `slack`" in ratio and "| `aggregate` |" in ratio


def test_the_book_page_shows_it_when_sphinx_reads_it():
    page = (ROOT / "book" / "adding-a-paper.md").read_text()
    assert reference.MARKER in page
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert "reprobook.reference" in config["sphinx"]["extra_extensions"]
    source = [page]
    reference._source_read(None, "book/adding-a-paper", source)
    assert reference.MARKER not in source[0]
    # under the page's own heading "6. The reference": one level down, no second title
    assert "\n### Check kinds\n" in source[0] and "\n#### `within_factor`\n" in source[0]
    assert "The author's reference" not in source[0]
