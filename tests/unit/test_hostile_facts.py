"""Hostile inputs, second round: the machine facts an evaluator states with ``reprobook import --facts``.

Facts are a typed record (`reprobook.core.requirements.facts_schema`, assembled from what the probe and each
requirement record): a fact of the wrong type, out of range, not finite or unknown is refused at import with
exit 2, naming the key and what it expects, and nothing is stored. Whatever is stored, the claim's page parts
and the evaluator's report render without error (a Hypothesis test over arbitrary JSON).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import reprobook as rb
from reprobook import api, cli, report
from reprobook.core.config import load_project
from reprobook.core.requirements import facts_schema, validate_facts
from reprobook.errors import ConfigError
from tests.support.artifacts import VERUS

CLAIM = "verus/ironkv"   # its file is small; its authors' machine states a CPU model, cores per socket and memory
RAW = Path(VERUS) / "ironkv/recording/raw-data.txt"
KNOWN = sorted(facts_schema()["properties"])


def _cli(argv: list[str], project) -> tuple[int, str]:
    """``reprobook ARGV`` in this process (the project loaded once): its exit code and stderr."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        old, cli._project = cli._project, lambda: project
        try:
            code = cli._main(argv)
        finally:
            cli._project = old
    return code, err.getvalue()


@pytest.fixture
def raw(mirror, tmp_path) -> Path:
    dest = tmp_path / "raw-data.txt"
    dest.write_bytes((Path(os.environ["REPROBOOK_ARTIFACT_MIRROR"]) / RAW).read_bytes())
    return dest


@pytest.fixture
def project():
    """The project, loaded once per test (with this test's run store)."""
    return load_project()


def _stored() -> list[Path]:
    return sorted(Path(os.environ["REPROBOOK_RUNS"]).glob("*/*/*/manifest.json"))


@pytest.mark.parametrize("key, value, expects", [
    ("mem_gib", "<i>64</i>", "a number from 0"),
    ("os", ["Ubuntu", "20.04"], "one line of text"),
    ("commands", "git make", "an object of program name"),
    ("physical_cores_per_socket", "8", "a whole number from 1"),
    ("os_id", 20, "one line of text"),
    ("cpus", math.nan, "a whole number from 1"),
    ("cpus", 0, "a whole number from 1"),
    ("mem_gib", math.inf, "a number from 0"),
    ("smt", "yes", "'on', 'off' or 'unknown'"),
    ("os", "Ubuntu\x1b]52;c;aGk=\x07\x1b[2J", "no control characters"),
    ("cpu_count", 8, "known facts: arch"),
])
def test_each_fact_of_the_wrong_kind_is_refused_naming_the_key_storing_nothing(raw, tmp_path, key, value, expects):
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"cpus": 8, key: value}))
    code, err = _cli(["import", CLAIM, str(raw), "--machine", "a laptop", "--facts", str(facts)], load_project())
    assert code == 2, err
    assert f"'{key}'" in err and expects in err and str(facts) in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert _stored() == []
    # the library refuses the same mapping, before anything is stored
    with pytest.raises(ConfigError, match=key):
        rb.import_run(rb.claim(CLAIM), [raw], machine="a laptop", facts={key: value})
    assert _stored() == []


def test_valid_facts_are_stored_typed_and_the_page_and_report_read_them(raw, tmp_path):
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"cpus": 16, "physical_cores_per_socket": 8.0, "mem_gib": 31.2, "os": "Windows 11",
                                 "os_id": "windows", "cpu_model": "Intel(R) Core(TM) i9-10885H", "smt": "on",
                                 "commands": {"git": True, "dotnet": False}}))
    code, err = _cli(["import", CLAIM, str(raw), "--machine", "a laptop", "--facts", str(facts)], load_project())
    assert code == 0, err
    (manifest,) = _stored()
    stored = json.loads(manifest.read_text())["host_facts"]["imported"]
    assert stored["physical_cores_per_socket"] == 8 and isinstance(stored["physical_cores_per_socket"], int)
    _render(stored)
    assert validate_facts({"cpus": None, "smt": "unknown"}) == {"cpus": None, "smt": "unknown"}


def _render(facts) -> None:
    """The claim's page parts and the evaluator's report from the run just imported: no error, facts as stated."""
    claim = rb.claim(CLAIM)
    ev = api.evaluate(claim)
    assert ev.outputs.kind == "import" and dict(ev.outputs.host_facts) == facts
    ev.outputs._repr_html_()
    ev.verdict.badge_html()
    with contextlib.redirect_stdout(io.StringIO()):
        api.evidence(claim, ev.measured, ev.verdict)
    proj = load_project()
    verus = proj.paper("verus")
    only = dataclasses.replace(proj, papers={"verus": dataclasses.replace(verus, claims={"ironkv": claim})})
    old, report.project = report.project, lambda *a: only
    try:
        data = report.paper_report("verus")
    finally:
        report.project = old
    report.validate_report(data)
    report.report_markdown(data)


# --------------------------------------------------------------------------- arbitrary JSON

_SCALARS = (st.none() | st.booleans() | st.integers(min_value=-2 ** 70, max_value=2 ** 70)
            | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12)
            | st.sampled_from(["on", "off", "unknown", "Ubuntu 20.04", "<i>64</i>", "8", "\x1b[2J"]))
_JSON = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=8) | st.sampled_from(["git", "dotnet"]), inner, max_size=3),
                     max_leaves=6)
_PLAUSIBLE = st.integers(min_value=-1, max_value=200) | st.floats(min_value=-1, max_value=200) | st.text(max_size=20)


def _near(schema: dict):
    """Values near what ``schema`` (one fact's) allows: mostly of its type, now and then just out of range."""
    kinds = schema.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if "enum" in schema:
        return st.sampled_from([*schema["enum"], "yes"])
    if "integer" in kinds:
        return st.none() | st.integers(min_value=-1, max_value=schema["maximum"] + 1) | st.just(8.0)
    if "number" in kinds:
        return st.none() | st.floats(min_value=-1, max_value=schema["maximum"] * 2)
    if "boolean" in kinds:
        return st.none() | st.booleans()
    if "object" in kinds:
        return st.dictionaries(st.text(max_size=12), st.booleans() | st.sampled_from(["file", "dir", "missing"]),
                               max_size=3)
    return st.text(max_size=40) | st.sampled_from(["Ubuntu 20.04", "Windows 11", "<i>64</i>", "x" * 201])


_TYPED = st.fixed_dictionaries({}, optional={k: _near(v) for k, v in facts_schema()["properties"].items()})
_FACTS = st.one_of(_TYPED, st.dictionaries(st.sampled_from(KNOWN) | st.text(max_size=10), _PLAUSIBLE | _JSON,
                                           max_size=6), _JSON)


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=_FACTS)
def test_any_json_is_stored_and_rendered_or_refused_with_exit_2(raw, tmp_path, project, data):
    """Every JSON document given as ``--facts``: exit 0 and the page parts and the report render, or exit 2 and
    nothing stored; never a traceback."""
    for m in _stored():   # each example starts from an empty store
        shutil.rmtree(m.parent)
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(data, allow_nan=True))
    code, err = _cli(["import", CLAIM, str(raw), "--machine", "a laptop", "--facts", str(facts)], project)
    assert "Traceback" not in err
    if code == 2:
        assert err.startswith("reprobook: error: ") and _stored() == [], err
        return
    assert code == 0, err
    (manifest,) = _stored()
    _render(json.loads(manifest.read_text())["host_facts"]["imported"])
