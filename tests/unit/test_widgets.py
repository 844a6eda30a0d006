"""The JupyterLab panel lists the claim's sources and shows the same verdict as the notebook."""

from __future__ import annotations

from reprobook.core.plan import resolve

import matplotlib

matplotlib.use("Agg")


def test_explore_lists_sources_and_builds_panel(mirror):
    from reprobook import widgets
    box = widgets.explore("aardvark/archive-throughput")
    title, dropdown, out = box.children
    assert "Archive throughput" in title.value
    assert list(dropdown.options) == ["reference"]
    assert dropdown.value == "reference"


# ---------------------------------------------------------------------------- the control panel (rb.panel)

import pytest  # noqa: E402
import yaml  # noqa: E402


def test_the_form_is_made_from_the_claim_and_checks_types_with_the_help():
    import reprobook as rb
    form = rb.panel("aardvark/validator-throughput").form
    claim = form.claim
    assert list(form.fields) == list(claim.parameters)
    assert form.fields["trials"].tooltip == claim.parameters["trials"].help
    assert form.values() == {"scale": "paper"}  # nothing changed: the scale's values
    form.fields["trials"].value = "abc"
    assert "takes a int" in form.errors["trials"].value and "trials per core count" in form.errors["trials"].value
    with pytest.raises(rb.ConfigError, match="parameter trials"):
        form.values()
    form.fields["trials"].value = "5"
    assert form.errors["trials"].value == "" and form.values() == {"trials": 5, "scale": "paper"}
    form.fields["scale"].value = "rehearsal"  # the fields show the scale's values; only changes are sent
    rehearsal = resolve(claim, {"scale": "rehearsal"})
    assert form.fields["core_counts"].value == rehearsal["core_counts"] and form.values() == {"scale": "rehearsal"}


def test_every_bad_field_gets_its_own_message_and_launch_waits_for_all_of_them():
    import reprobook as rb
    panel = rb.panel("aardvark/validator-throughput")
    form = panel.form
    def numeric(p):
        v = p.default[0] if isinstance(p.default, (list, tuple)) else p.default
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    texts = [n for n, p in form.claim.parameters.items() if numeric(p)]   # every field that takes a number
    assert len(texts) >= 2 and not panel.launch_button.disabled
    for name in texts:
        form.fields[name].value = "not a value"
    bad = [n for n in texts if "reprobook-param-error" in form.errors[n].value]
    assert bad == texts, {n: form.errors[n].value for n in texts}   # one message per field, each naming it
    assert all(f"parameter {n} " in form.errors[n].value for n in texts)
    assert panel.launch_button.disabled and "fix the parameters" in panel.launch_button.tooltip
    base = resolve(form.claim, {})
    for name in texts[:-1]:
        form.fields[name].value = "\n".join(map(str, base[name])) if isinstance(base[name], tuple) else str(base[name])
    assert panel.launch_button.disabled   # one bad field left
    last = texts[-1]
    form.fields[last].value = "\n".join(map(str, base[last])) if isinstance(base[last], tuple) else str(base[last])
    assert not panel.launch_button.disabled and all(e.value == "" for e in form.errors.values())


def test_hosts_yaml_edited_while_the_kernel_runs_is_seen_by_a_fresh_panel(tmp_path, monkeypatch):
    import reprobook as rb
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text(yaml.safe_dump({"hosts": {"node1": {"ssh": "node1", "workdir": "/w"}}}))
    monkeypatch.setenv("REPROBOOK_HOSTS", str(hosts))
    assert "node9" not in [v for _, v in rb.panel("aardvark/validator-throughput").host.options]
    hosts.write_text(yaml.safe_dump({"hosts": {"node1": {"ssh": "node1", "workdir": "/w"},
                                               "node9": {"ssh": "node9", "workdir": "/w"}}}))
    assert "node9" in [v for _, v in rb.panel("aardvark/validator-throughput").host.options]


def test_a_sweep_is_one_value_per_line():
    import reprobook as rb
    form = rb.panel("pesto/sample-runs").form
    assert form.fields["configs"].value.splitlines() == list(form.claim.parameters["configs"].default)
    form.fields["configs"].value = "a.json\n\nwith condition/b.json\n"
    # the claim has scales: the form says which one, the paper's unless chosen
    assert form.values() == {"scale": "paper", "configs": ["a.json", "with condition/b.json"]}
    form.fields["configs"].value = ""
    with pytest.raises(rb.ConfigError, match="sweep axis and needs at least one value"):
        form.values()


def test_hosts_and_clusters_with_their_last_recorded_check(tmp_path, monkeypatch):
    import reprobook as rb
    from reprobook.core.runs import RunStore
    hosts = {"hosts": {"node1": {"ssh": "node1", "workdir": "/w", "description": "a test node"},
                       "node2": {"ssh": "node2", "workdir": "/w"}},
             "clusters": {"pair": {"roles": {"control": ["node1"]}}}}
    (tmp_path / "hosts.yaml").write_text(yaml.safe_dump(hosts))
    monkeypatch.setenv("REPROBOOK_HOSTS", str(tmp_path / "hosts.yaml"))
    claim = rb.project().claim("aardvark/validator-throughput")
    RunStore(rb.project().settings.runs_dir).create(
        claim, "aardvark-validator-throughput-0123456789", source="live", host="node1", status="failed",
        host_facts={"node1": {"cpus": 2}}, requirement_shortfalls=["needs 32 cores (CPUs online), has 2"])
    panel = rb.panel(claim)
    # each with its last check beside its name
    assert list(panel.host.options) == [("node1 — falls short", "node1"), ("node2", "node2"), ("pair", "pair"),
                                        ("local", "local")]
    assert panel.host.value == "node1"
    note = panel.host_note.value
    assert "a test node" in note and "falls short" in note and "needs 32 cores" in note
    assert "run aardvark-validator-throughput-0123456789" in note
    panel.host.value = "node2"
    assert "not checked yet" in panel.host_note.value
    panel.host.value = "pair"
    assert "cluster: control = node1" in panel.host_note.value
    assert [v for _, v in panel.runs.options] == ["aardvark-validator-throughput-0123456789"]


def test_a_host_that_cannot_take_a_claims_roles_falls_short_and_is_not_called_unreachable():
    """`local` gives one server where pesto/workloads needs six: the check says that, not "unreachable"."""
    from reprobook import widgets
    import reprobook as rb
    project = rb.project()
    check = widgets.check_now(project, project.claim("pesto/workloads"), "local")
    assert check.state == "falls short" and not check.error, check
    assert "'server' takes 6 hosts" in check.words() and "gives it 1" in check.words()


def test_without_a_kernel_the_panel_is_a_note(root):
    import reprobook as rb
    from reprobook.widgets import NOTE
    bundle = rb.panel("aardvark/archive-throughput")._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle  # JupyterLab renders the widget
    assert NOTE in bundle["text/plain"] and NOTE in bundle["text/html"] and "make lab" in NOTE
    # the website has no kernel: its HTML builder prefers the note to the widget's view
    sphinx = yaml.safe_load((root / "_config.yml").read_text())["sphinx"]["config"]
    html = {m: p for b, m, p in sphinx["nb_mime_priority_overrides"] if b == "html"}
    assert html["text/html"] < 10  # myst-nb's priority of application/vnd.jupyter.widget-view+json


def test_checking_a_host_judges_it_against_the_claim_and_labels_it():
    import reprobook as rb
    panel = rb.panel("aardvark/validator-throughput")  # 32 cores wanted
    panel.host.value = "local"
    panel.check_host().join(60)
    note = panel.host_note.value
    assert "by a check from the panel" in note, note
    import os
    if (os.cpu_count() or 0) < 32:
        assert "falls short" in note and "needs 32 cores" in note
        assert ("local — falls short", "local") in panel.host.options
    assert panel.host.value == "local"
