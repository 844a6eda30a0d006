"""A run's record as an RO-Crate (Process Run Crate): read back, it gives each output's sha256, the parameters and the
verdict; with redaction on it names no host; `reprobook export` packs it. roc-validator passes it in
tests/unit/test_report_paths.py (with every paper's report) and tests/integration/test_live_ssh.py (a live run)."""

from __future__ import annotations

import json
import zipfile

import pytest
import yaml

import reprobook as rb
from reprobook.cli import main
from reprobook.core import provenance

def _graph(crate: dict) -> dict[str, dict]:
    return {e["@id"]: e for e in crate["@graph"]}


def _listed(value) -> list:
    return value if isinstance(value, list) else [value]


LOG = ("=== RUN   TestTimeArchive\narchive d time: 13m20s\narchive m time: 6m40s\narchive c time: 6m40s\n"
       "--- PASS: TestTimeArchive\n")


def _imported(tmp_path, **kw):
    """A run of aardvark/archive-throughput brought back by hand (one core's go test log), with its machine's facts."""
    claim = rb.claim("aardvark/archive-throughput")
    log = tmp_path / "given" / "aout1.txt"
    log.parent.mkdir(exist_ok=True)
    log.write_text(LOG)
    return claim, rb.import_run(claim, [log], machine="lab box knot-7, i9-10885H", who="alice",
                                params={"trials": 1}, facts={"cpus": 16, "os": "Debian 12", "hostname": "knot-7"},
                                **kw)


def test_an_imported_run_reads_back_with_its_sha256_parameters_and_verdict(tmp_path):
    claim, run = _imported(tmp_path)
    crate = json.loads((run.path / provenance.CRATE).read_text())   # written by the import itself
    g = _graph(crate)
    assert crate["@context"][0] == provenance.CONTEXT and g["./"]["conformsTo"] == {"@id": provenance.PROCESS_RUN}
    action = g["#run"]
    assert "not judged yet" in action["description"] and action["actionStatus"].endswith("CompletedActionStatus")
    results = {r["@id"] for r in _listed(action["result"])}
    for f in run.manifest["files"]:   # each output, with the sha256 the manifest recorded
        assert f["path"] in results and g[f["path"]]["sha256"] == f["sha256"], f
        assert g[f["path"]]["contentSize"] == str(f["size"]) and f["path"] in {p["@id"] for p in
                                                                              _listed(g["./"]["hasPart"])}
    params = {g[o["@id"]]["name"]: g[o["@id"]]["value"] for o in _listed(action["object"])
              if g[o["@id"]]["@type"] == "PropertyValue"}
    assert params["trials"] == "1" and params == {k: v if isinstance(v, str) else json.dumps(v)
                                                  for k, v in run.manifest["parameters"].items()}
    assert {e["@id"] for e in map(g.get, (i["@id"] for i in _listed(action["instrument"])))} == {"#notebook",
                                                                                             "#reprobook"}
    assert g["#reprobook"]["softwareVersion"] == rb.__version__
    assert g["#notebook"]["name"] == "notebooks/aardvark/archive-throughput.ipynb"
    host = next(e for e in g.values() if e.get("@type") == "Thing")
    facts = {g[p["@id"]]["name"]: g[p["@id"]]["value"] for p in _listed(host["additionalProperty"])}
    assert host["name"] == "lab box knot-7, i9-10885H" and facts["cpus"] == "16" and facts["os"] == "Debian 12"
    # judged (as `reprobook run` and `run --all` do once the notebook has its verdict): the verdict and each check
    outputs = rb.obtain(claim, run.id)
    verdict = rb.check(claim, rb.load(claim, outputs), outputs)
    provenance.write_for(rb.project(), run, verdict=verdict.as_dict())
    g = _graph(json.loads((run.path / provenance.CRATE).read_text()))
    results = {r["@id"] for r in _listed(g["#run"]["result"])}
    assert g["#verdict"]["value"] == str(verdict.verdict) and g["#verdict"]["description"] == verdict.reason
    assert "not judged yet" not in g["#run"]["description"] and f"verdict: {verdict.verdict}" in g["#run"]["description"]
    assert "#verdict" in results and "#check-1" in results
    assert [g[f"#check-{i}"]["value"] for i in range(1, len(verdict.checks) + 1)] == [
        str(c.verdict) for c in verdict.checks]
    assert g["#importer"]["name"] == "alice" and g["#run"]["agent"] == {"@id": "#importer"}


def test_with_redaction_on_the_crate_names_no_host(tmp_path, monkeypatch, capsys):
    """The hosts of hosts.yaml, the machine an import described, its hostname fact and the user who imported: none is
    in the crate, nor any local path; the files that name them by nature stay out of it and of the export."""
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text(yaml.safe_dump({"hosts": {"bench-node3": {"ssh": "carol@bench-node3.example.org", "workdir": "/srv/rb"}}}))
    monkeypatch.setenv("REPROBOOK_HOSTS", str(hosts))
    monkeypatch.setenv("REPROBOOK_REDACT_HOSTS", "1")
    claim, run = _imported(tmp_path, note="ran on bench-node3 too")
    provenance.write_for(rb.project(), run)
    text = (run.path / provenance.CRATE).read_text()
    for name in ("knot-7", "lab box", "alice", "bench-node3", "carol", str(tmp_path), str(rb.project().root)):
        assert name.lower() not in text.lower(), name
    g = _graph(json.loads(text))
    host = next(e for e in g.values() if e.get("@type") == "Thing")
    facts = {g[p["@id"]]["name"]: g[p["@id"]]["value"] for p in _listed(host["additionalProperty"])}
    assert host["name"] == "the machine the files came from" and facts["hostname"] == "(withheld)"
    assert facts["cpus"] == "16"   # a fact that names nothing stays
    assert not set(provenance.WITHHELD_FILES) & {p["@id"] for p in _listed(g["./"]["hasPart"])}
    assert main(["export", run.id, "-o", str(tmp_path / "run.zip")]) == 0
    assert "redacted" in capsys.readouterr().out
    with zipfile.ZipFile(tmp_path / "run.zip") as z:
        assert sorted(z.namelist()) == ["outputs/logs/aout1.txt", provenance.CRATE]
        assert "knot-7" not in z.read(provenance.CRATE).decode()


def test_export_packs_the_crate_and_its_files_and_refuses_what_it_cannot(tmp_path, capsys):
    _, run = _imported(tmp_path)
    zipped = tmp_path / "out" / "run.zip"
    assert main(["export", run.id, "-o", str(zipped)]) == 0
    assert f"wrote {zipped}" in capsys.readouterr().out
    with zipfile.ZipFile(zipped) as z:
        names = set(z.namelist())
        crate = json.loads(z.read(provenance.CRATE))
        assert z.read("outputs/logs/aout1.txt") == LOG.encode()
    assert names == {provenance.CRATE, "outputs/logs/aout1.txt", "manifest.json"}
    assert {p["@id"] for p in _listed(_graph(crate)["./"]["hasPart"])} == names - {provenance.CRATE}
    # a record naming a file outside the run (a damaged or hostile manifest) is neither described nor packed
    (tmp_path / "secret.txt").write_text("not the run's")
    run.update(files=[*run.manifest["files"], {"output": "logs", "path": "../../../../secret.txt", "sha256": "0"},
                      {"output": "logs", "path": str(tmp_path / "secret.txt"), "sha256": "0"}])
    provenance.export_run(rb.project(), run, tmp_path / "again.zip")
    with zipfile.ZipFile(tmp_path / "again.zip") as z:
        assert set(z.namelist()) == names and "secret" not in z.read(provenance.CRATE).decode()
    for argv, words in ((["export", "nope", "-o", str(tmp_path / "x.zip")], "neither a paper"),
                        (["export", run.id, "-o", str(tmp_path / "x.tar")], "ending in .zip"),
                        (["export", run.id, "-o", str(tmp_path / "dir.zip")], "is a directory")):
        (tmp_path / "dir.zip").mkdir(exist_ok=True)
        assert main(argv) == 2
        assert words in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:   # no -o: argparse's own words, exit 2
        main(["export", run.id])
    assert info.value.code == 2 and "-o" in capsys.readouterr().err
    assert not (tmp_path / "x.zip").exists() and not (tmp_path / "x.tar").exists()
