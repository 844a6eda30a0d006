"""The author's reference, generated from the code that enforces it, so that it cannot drift.

What a paper file may hold comes from its JSON schema (``reprobook/core/schemas/paper.json``, every key with
its ``description``); the check kinds and their options from the check registry (`reprobook.core.checks.KINDS`);
the machine requirements from theirs (`reprobook.core.requirements`); the loader's side (`Outputs`, the
`loader` decorator, the functions of `reprobook.formats`) from their signatures and docstrings. `markdown`
writes it all as one Markdown text; the book's page *Adding a paper* shows it through the Sphinx directive
``reprobook-reference`` (this module is also a Sphinx extension, named in ``_config.yml``), and
``reprobook reference`` prints it.
"""

from __future__ import annotations

import inspect
import json
from importlib import import_module, resources
from pathlib import Path
from typing import Any, Iterator

from reprobook.core import checks, requirements
from reprobook.core.loaders import loader
from reprobook.sources import Outputs

FORMATS = ("tables", "text", "jsonfmt", "latex", "gotest")
"""The modules of `reprobook.formats` a loader composes (``terminal`` prints run data; a loader has no use for it)."""


def paper_schema() -> dict:
    """The paper file's JSON schema."""
    return json.loads(resources.files("reprobook.core.schemas").joinpath("paper.json").read_text())


def undescribed(schema: dict | None = None) -> list[str]:
    """Every key of the paper file's schema, and every option of a check kind, that has no ``description``.

    The reference is made of those descriptions: a key without one would be a key no author can learn of.
    """
    schema = paper_schema() if schema is None else schema
    out: list[str] = []

    def walk(node: Any, path: str) -> None:
        if not isinstance(node, dict):
            return
        for key, sub in (node.get("properties") or {}).items():
            if isinstance(sub, dict) and "description" not in sub:
                out.append(f"{path}.{key}".lstrip("."))
            walk(sub, f"{path}.{key}")
        for key in ("additionalProperties", "items"):
            walk(node.get(key), f"{path}.<name>" if key == "additionalProperties" else f"{path}[]")
        for key in ("oneOf", "anyOf"):
            for sub in node.get(key) or ():
                walk(sub, path)
        for name, sub in (node.get("$defs") or {}).items():
            walk(sub, f"$defs.{name}")
    walk(schema, "")
    for k in checks.KINDS.values():
        out += [f"checks: {k.name}.{opt}" for opt, frag in k.options.items() if "description" not in frag]
    return out


# --------------------------------------------------------------------------- words for a schema fragment

def _cell(text: str) -> str:
    """``text`` as one cell of a Markdown table."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _type_words(node: dict, defs: dict) -> str:
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        target = _ref(node["$ref"], defs)
        if isinstance(target, dict) and target.get("properties") and target.get("type") == "object":
            return f"a {name.replace('_', ' ')} (below)"
        return _type_words(target, defs) if isinstance(target, dict) else name
    if "enum" in node:
        return "one of " + ", ".join(f"`{v}`" for v in node["enum"])
    if "oneOf" in node:
        return " or ".join(dict.fromkeys(_type_words(x, defs) for x in node["oneOf"]))
    kind = node.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind else []
    words = []
    for t in kinds:
        if t == "array":
            items = node.get("items")
            inner = _type_words(items, defs) if isinstance(items, dict) and items else ""
            words.append(f"a list of ({inner})" if " or " in inner else f"a list of {inner}" if inner else "a list")
        elif t == "object":
            props = node.get("properties")
            words.append("`{" + ", ".join(f"{p}: …" for p in props) + "}`" if props and len(props) <= 3
                         else "a mapping")
        else:
            words.append({"string": "text", "integer": "a whole number", "number": "a number",
                          "boolean": "true or false", "null": "null"}.get(t, t))
    text = " or ".join(words) or "any value"
    if "pattern" in node and node.get("type") == "string":
        text += " (a pattern applies)"
    if "minimum" in node:
        text += f", at least {node['minimum']}"
    if "exclusiveMinimum" in node:
        text += f", above {node['exclusiveMinimum']}"
    return text


def _ref(ref: str, defs: dict) -> Any:
    node: Any = {"$defs": defs}
    for part in ref.lstrip("#/").split("/"):
        node = node[part]
    return node


def _sections(schema: dict) -> Iterator[tuple[str, str, dict]]:
    """(title, intro, object schema) for the top level and each object the paper file nests, in reading order."""
    defs = schema.get("$defs", {})
    seen_defs: set[str] = set()
    queue: list[tuple[str, dict]] = [("the top level", schema)]
    while queue:
        title, node = queue.pop(0)
        yield title, node.get("description", ""), node
        for key, sub in (node.get("properties") or {}).items():
            path = key if title == "the top level" else f"{title}.{key}"
            for where, inner in _nested(sub, path, defs):
                if inner.get("$ref"):
                    name = inner["$ref"].rsplit("/", 1)[-1]
                    target = _ref(inner["$ref"], defs)
                    # a reference into a definition (a scale's inputs: the claim's) is the same keys again
                    if inner["$ref"].count("/") > 2 or name in seen_defs or not isinstance(target, dict) \
                            or not target.get("properties"):
                        continue
                    seen_defs.add(name)
                    queue.append((where, target))
                elif inner.get("properties"):
                    queue.append((where, inner))


def _nested(node: Any, path: str, defs: dict) -> Iterator[tuple[str, dict]]:
    """The objects inside ``node`` worth a section of their own, with the path a reader writes them at."""
    if not isinstance(node, dict):
        return
    if node.get("$ref") or node.get("properties"):
        yield path, node
        return
    forms = [sub for sub in node.get("oneOf") or () if isinstance(sub, dict) and sub.get("properties")]
    for i, sub in enumerate(node.get("oneOf") or ()):
        one = f"{path} (form {forms.index(sub) + 1} of {len(forms)})" if len(forms) > 1 and sub in forms else path
        yield from _nested(sub, one, defs)
    if isinstance(node.get("items"), dict):
        yield from _nested(node["items"], f"{path}[]", defs)
    if isinstance(node.get("additionalProperties"), dict):
        yield from _nested(node["additionalProperties"], f"{path}.<name>", defs)


def _table(props: dict, required: list, defs: dict) -> list[str]:
    lines = ["| key | holds | required | what it means |", "|---|---|---|---|"]
    for key, sub in props.items():
        lines.append(f"| `{key}` | {_cell(_type_words(sub, defs))} | {'yes' if key in required else ''} | "
                     f"{_cell(sub.get('description', ''))} |")
    return lines


# --------------------------------------------------------------------------- the parts

def paper_file() -> str:
    """The paper file's keys, object by object, from the schema."""
    schema = paper_schema()
    defs = schema.get("$defs", {})
    out = ["## The paper file's keys", "",
           "Every key a paper file (`configs/papers/<paper>.yaml`) may hold; an unknown key, a missing required key "
           "or a value of the wrong kind stops the file from loading, naming the file and the key path.", ""]
    for title, intro, node in _sections(schema):
        if title.endswith("plot") or title.endswith("plot[]"):
            continue   # the plot's options have a section of their own
        out += [f"### `{title}`" if title != "the top level" else "### The top level", ""]
        if intro:
            out += [intro, ""]
        out += [*_table(node["properties"], node.get("required", []), defs), ""]
    return "\n".join(out)


def plot_options() -> str:
    """The options of a claim's ``plot:`` (one mapping, or a list of them), from the schema."""
    schema = paper_schema()
    plot = schema["$defs"]["plot"]
    return "\n".join(["## Plot options", "",
                      "A claim's `plot:` is one mapping of these, or a list of them (one plot each). The measured "
                      "values are drawn solid, the published ones hollow, with the band the checks accept.", "",
                      *_table(plot["properties"], plot.get("required", []), schema["$defs"]), ""])


def check_kinds() -> str:
    """Every check kind with every option, from the registry."""
    out = ["## Check kinds", "",
           "A claim's `checks:` is a list of these. Each judges the rows of the measured column `value` and "
           "holds, fails or is inconclusive with a margin. These options apply to every kind:", "",
           "| option | holds | what it means |", "|---|---|---|"]
    for opt, frag in checks._COMMON.items():
        if opt in ("kind", "what", "value"):
            continue
        out.append(f"| `{opt}` | {_cell(_type_words(frag, {}))} | {_cell(frag.get('description', ''))} |")
    out.append("")
    for k in checks.KINDS.values():
        doc = inspect.getdoc(k.judge) or k.doc
        out += [f"### `{k.name}`", "", _cell(doc.split("\n\n")[0]), ""]
        needs = [f"needs {', '.join(f'`{o}`' for o in k.required)}" if k.required else "",
                 f"exactly one of {', '.join(f'`{o}`' for o in k.one_of)}" if k.one_of else "",
                 f"at least one of {', '.join(f'`{o}`' for o in k.any_of)}" if k.any_of else ""]
        if any(needs):
            out += [f"{'An' if k.name[0] in 'aeiou' else 'A'} `{k.name}` check " + "; ".join(n for n in needs if n) + ".", ""]
        own = {o: f for o, f in k.options.items() if o not in checks._COMMON}
        if "slack" not in own:
            out += [f"It takes no `slack`: write the bound you mean.", ""] if any(o in own for o in ("min", "max")) \
                else []
        out += ["| option | holds | required | what it means |", "|---|---|---|---|"]
        for opt, frag in own.items():
            flag = "yes" if opt in k.required else ""
            out.append(f"| `{opt}` | {_cell(_type_words(frag, {}))} | {flag} | {_cell(frag.get('description', ''))} |")
        out.append("")
    return "\n".join(out)


def machine_requirements() -> str:
    """The keys of ``machine:``, ``requires:`` and a role's or a check's ``needs``, from the requirement registry."""
    out = ["## Machine requirements", "",
           "The keys of `machine:` (the paper's), `requires:` (a claim's, a role's, a scale's) and a check's "
           "`needs:`. A host is probed for its facts over SSH before a run; an imported run is judged on the facts "
           "given with `reprobook import --facts FILE` (or `--cores`, `--os`, ...).", "",
           "| key | a value is | example | facts it reads |", "|---|---|---|---|"]
    for name in requirements.names():
        req = requirements._REGISTRY.get(name)
        if req is None:
            out.append(f"| `{name}` | text: said on the page, not probed | | |")
            continue
        facts = ", ".join(f"`{f}`" for f in req.facts)
        out.append(f"| `{name}` | {_cell(req.expects)} | `{_cell(req.example)}` | {facts} |")
    return "\n".join([*out, ""])


class _Shown:
    """A default value as a signature shows it: its repr, or ``...`` when that is longer than a phrase."""

    def __init__(self, value: Any):
        self.text = repr(value) if len(repr(value)) <= 30 else "..."

    def __repr__(self) -> str:
        return self.text


def _signature(func) -> str:
    """``name(a, *, b=1)``: the parameters as a call writes them (annotations left to the docstring)."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return func.__name__
    params = [p.replace(annotation=inspect.Parameter.empty,
                        default=_Shown(p.default) if p.default is not p.empty else p.empty)
              for p in sig.parameters.values() if p.name != "self"]
    return f"{func.__name__}{sig.replace(parameters=params, return_annotation=inspect.Signature.empty)}"


def _first_paragraph(obj) -> str:
    doc = inspect.getdoc(obj) or ""
    return _cell(doc.split("\n\n")[0])


def loader_api() -> str:
    """What a loader receives and may call: `Outputs`, `loader`, and the functions of `reprobook.formats`."""
    outputs_doc = inspect.getdoc(Outputs) or ""
    out = ["## The loader API", "",
           "A loader is a function of the run's outputs that returns one tidy table. It is registered by name "
           "with the decorator below and named by a claim's `loader:`.", "",
           f"### `reprobook.core.loaders.{_signature(loader)}`", "", inspect.getdoc(loader) or "", "",
           "### `reprobook.sources.Outputs`", "", "```text", outputs_doc, "```", "",
           "| method | what it does |", "|---|---|"]
    for name in ("has", "one", "name"):
        out.append(f"| `{_signature(getattr(Outputs, name))}` | {_first_paragraph(getattr(Outputs, name))} |")
    out += ["", "### `reprobook.formats`", "",
            _cell((inspect.getdoc(import_module("reprobook.formats")) or "").split("\n\n")[0]), ""]
    for mod_name in FORMATS:
        mod = import_module(f"reprobook.formats.{mod_name}")
        out += [f"#### `reprobook.formats.{mod_name}`", "", _cell((inspect.getdoc(mod) or "").split("\n\n")[0]), "",
                "| function | what it does |", "|---|---|"]
        for name, func in inspect.getmembers(mod, inspect.isfunction):
            if name.startswith("_") or func.__module__ != mod.__name__:
                continue
            out.append(f"| `{_cell(_signature(func))}` | {_first_paragraph(func)} |")
        out.append("")
    return "\n".join(out)


def markdown() -> str:
    """The whole reference as Markdown (MyST): the paper file, check kinds, plot options, requirements, loader API."""
    return "\n".join(["# The author's reference", "",
                      "Generated from the schema, the registries and the docstrings that reprobook itself "
                      "enforces and calls; `reprobook reference` prints it.", "",
                      check_kinds(), plot_options(), paper_file(), machine_requirements(), loader_api()])


# --------------------------------------------------------------------------- the Sphinx side

MARKER = "<!-- reprobook-reference -->"
"""The line of a book page that the reference replaces when Sphinx reads the page (the page gives the heading)."""


def _source_read(app, docname: str, source: list) -> None:
    if MARKER in source[0]:
        body = markdown().split("\n", 2)[2]   # without the title: the page has its own heading
        # one level down: the reference's sections sit under the page's own heading for it
        body = "\n".join("#" + line if line.startswith("#") else line for line in body.splitlines())
        source[0] = source[0].replace(MARKER, body)


def _always_read(app, env, added, changed, removed) -> list:
    """The pages holding the reference are read on every build: the code it comes from is not a Sphinx input."""
    again = []
    for doc in sorted(env.found_docs - set(added) - set(changed)):
        try:
            if MARKER in Path(env.doc2path(doc)).read_text(errors="replace"):
                again.append(doc)
        except OSError:
            continue
    return again


def setup(app):
    """Put the reference where a page holds `MARKER`, and read that page again on every build."""
    app.connect("source-read", _source_read)
    app.connect("env-get-outdated", _always_read)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
