"""Machine requirements: validation, merging, probe output parsing and each comparison, without a host."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from reprobook.core import requirements as rq
from reprobook.errors import ConfigError
from reprobook.core.requirements import (HostFacts, Requirements, facts_from, names, os_matches, parse_requirements,
                                    probe_script, shortfalls)

ROOT = Path(__file__).resolve().parents[2]

# The probe's real output on a Debian 12 VM with 2 CPUs, no SMT, one NUMA node, a docker
# command and no Docker daemon (the docker CLI still prints the empty version it was asked for).
DEBIAN_VM = """\
hostname=vm
kernel=6.18.44-fc-v669
arch=x86_64
cpu_model=AMD EPYC
cpus=2
cpu_topology=0:0 0:1 
mem_kib=24684084
disk_path=/srv
disk_free_kib=80825572
numa_nodes=1
smt_active=0
smt_control=notsupported
docker_rc=1
docker_out=server-version= Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?
os=Debian GNU/Linux 12 (bookworm)
os_id=debian
os_version=12
cmd_git=yes
cmd_numactl=no
"""

# A two-socket server: 2 x 10 cores, SMT on (40 CPUs), 2 NUMA nodes, Ubuntu 22.04, Docker answering.
SERVER = {
    "hostname": "node0", "kernel": "5.15.0-91-generic", "arch": "x86_64", "cpu_model": "Intel(R) Xeon(R) Silver 4114",
    "cpus": "40",
    "cpu_topology": " ".join(f"{p}:{c},{c + 20}" for p in (0, 1) for c in range(p * 10, p * 10 + 10)),
    "mem_kib": str(192 * 2**20), "disk_path": "/mydata", "disk_free_kib": str(50 * 2**20),
    "numa_nodes": "2", "smt_active": "1", "smt_control": "on",
    "docker_rc": "0", "docker_out": "server-version=24.0.7",
    "os": "Ubuntu 22.04.3 LTS", "os_id": "ubuntu", "os_version": "22.04",
}


def server(**changes) -> HostFacts:
    kv = {**SERVER, **changes}
    return facts_from("".join(f"{k}={v}\n" for k, v in kv.items() if v is not None))


# --------------------------------------------------------------------------- parsing the probe

def test_real_probe_output_parses_to_the_facts_of_that_machine():
    f = facts_from(DEBIAN_VM)
    assert (f.hostname, f.cpus, f.physical_cores, f.physical_cores_per_socket, f.sockets) == ("vm", 2, 2, 2, 1)
    assert f.smt == "off" and "control: notsupported" in f.smt_detail
    assert f.mem_gib == pytest.approx(23.54) and f.numa_nodes == 1
    assert f.disk_path == "/srv" and f.disk_free_gib == pytest.approx(77.08)
    assert (f.os, f.os_id, f.os_version) == ("Debian GNU/Linux 12 (bookworm)", "debian", "12")
    assert f.docker is False
    assert f.docker_detail == ("docker command found but the daemon does not answer: Cannot connect to the Docker "
                               "daemon at unix:///var/run/docker.sock. Is the docker daemon running?")
    assert dict(f.commands) == {"git": True, "numactl": False}


def test_as_dict_keeps_the_manifest_keys_and_adds_the_new_ones():
    d = facts_from(DEBIAN_VM).as_dict()
    old = {"hostname", "kernel", "arch", "cpu_model", "cpus", "physical_cores", "smt", "numa_nodes", "mem_gib", "os",
           "docker", "commands"}
    new = {"os_id", "os_version", "physical_cores_per_socket", "sockets", "disk_free_gib", "disk_path", "docker_detail",
           "smt_detail"}
    assert old | new <= set(d)
    assert d["commands"] == {"git": True, "numactl": False} and type(d["commands"]) is dict
    assert pickle.loads(pickle.dumps(facts_from(DEBIAN_VM))).as_dict() == d


def test_two_socket_topology_counts_cores_per_socket_and_smt():
    f = server()
    assert (f.cpus, f.physical_cores, f.physical_cores_per_socket, f.sockets) == (40, 20, 10, 2)
    assert f.smt == "on" and f.mem_gib == 192 and f.disk_free_gib == 50
    assert f.docker is True and "24.0.7" in f.docker_detail


def test_uneven_sockets_report_the_largest():
    f = server(cpu_topology="0:0 0:1 0:2 0:3 1:4 1:5", cpus="6")
    assert (f.physical_cores, f.physical_cores_per_socket, f.sockets) == (6, 4, 2)


def test_cpuinfo_fallback_topology_and_smt_inferred_without_sysfs_smt():
    # /proc/cpuinfo form (package:core id): 4 cores, 8 CPUs online, no /sys/devices/system/cpu/smt
    f = server(cpu_topology="0:0 0:1 0:2 0:3", cpus="8", smt_active="", smt_control="")
    assert (f.physical_cores, f.physical_cores_per_socket, f.sockets) == (4, 4, 1)
    assert f.smt == "on" and f.smt_detail == "inferred from the CPU topology: 8 CPUs online on 4 physical cores"
    assert server(cpu_topology="0:0 0:1", cpus="2", smt_active=None, smt_control=None).smt == "off"


def test_unreadable_topology_and_smt_are_unknown_not_guessed():
    f = server(cpu_topology="", smt_active="", smt_control="")
    assert f.physical_cores is None and f.physical_cores_per_socket is None and f.sockets is None
    assert f.smt == "unknown" and "could be read" in f.smt_detail


@pytest.mark.parametrize("rc, out, usable, detail", [
    ("none", None, False, "docker command not found"),
    ("0", "server-version=24.0.7", True, "daemon answers (server 24.0.7)"),
    ("0", "WARNING: No swap limit support server-version=20.10.21", True, "daemon answers (server 20.10.21)"),
    ("124", "", False, "docker command found but the daemon does not answer within 5 s"),
    ("1", "server-version= permission denied while trying to connect to the Docker daemon socket", False,
     "docker command found but the daemon does not answer: permission denied while trying to connect to the "
     "Docker daemon socket"),
    ("0", "server-version=", False, "docker command found but the daemon does not answer: docker info exited with 0"),
])
def test_docker_is_usable_only_when_the_daemon_answers(rc, out, usable, detail):
    f = server(docker_rc=rc, docker_out=out)
    assert f.docker is usable and f.docker_detail == detail


# --------------------------------------------------------------------------- each comparison

@pytest.mark.parametrize("name, value, facts, sentence", [
    ("cores", 40, {}, None),
    ("cores", 64, {}, "needs 64 cores (CPUs online), has 40"),
    ("cores", 2, {"cpus": ""}, "needs 2 cores (CPUs online); the host's CPU count could not be read"),
    ("physical_cores_per_socket", 10, {}, None),
    ("physical_cores_per_socket", 16, {},
     "needs 16 physical cores on one socket, has 10 (the most on any of its 2 sockets)"),
    ("physical_cores_per_socket", 8, {"cpu_topology": "0:0 0:1", "cpus": "2"},
     "needs 8 physical cores on one socket, has 2"),
    ("physical_cores_per_socket", 1, {"cpu_topology": ""},
     "needs 1 physical cores on one socket; the host's CPU topology could not be read"),
    ("memory_gib", 192, {}, None),
    ("memory_gib", 200, {"mem_kib": str(int(191 * 2**20))}, None),  # within what MemTotal leaves out
    ("memory_gib", 256, {}, "needs 256 GiB of memory, has 192.0"),
    ("disk_gib", 50, {}, None),
    ("disk_gib", 80, {}, "needs 80 GiB free in the workdir, has 50 GiB free at /mydata"),
    ("disk_gib", 1, {"disk_free_kib": ""},
     "needs 1 GiB free in the workdir; the free space at /mydata could not be read"),
    ("numa_nodes", 2, {}, None),
    ("numa_nodes", 4, {}, "needs 4 NUMA nodes, has 2"),
    ("numa_nodes", 2, {"numa_nodes": "0"}, "needs 2 NUMA nodes, has 1"),  # no node directories: one node
    ("smt", "on", {}, None),
    ("smt", "off", {}, "needs SMT off, it is on"),
    ("smt", "on", {"smt_active": "0"}, "needs SMT on, it is off"),
    ("smt", "off", {"cpu_topology": "", "smt_active": "", "smt_control": ""},
     "needs SMT off, but the host's SMT state is unknown (neither /sys/devices/system/cpu/smt/active nor the CPU "
     "topology could be read)"),
    ("docker", True, {}, None),
    ("docker", False, {"docker_rc": "none"}, None),  # false asks for nothing
    ("docker", True, {"docker_rc": "none"}, "needs Docker usable by the user; docker command not found"),
    ("docker", True, {"docker_rc": "1", "docker_out": "Cannot connect to the Docker daemon"},
     "needs Docker usable by the user; docker command found but the daemon does not answer: Cannot connect to the "
     "Docker daemon"),
    ("os", ["Ubuntu 22.04"], {}, None),
    ("os", ["Ubuntu 20.04", "Ubuntu 22.04"], {}, None),
    ("os", ["Ubuntu 20.04", "Debian 12"], {},
     "needs Ubuntu 20.04 or Debian 12, runs Ubuntu 22.04.3 LTS (ID ubuntu, VERSION_ID 22.04)"),
    ("os", ["Ubuntu 22.04"], {"os": "Linux", "os_id": "", "os_version": ""},
     "needs Ubuntu 22.04, runs Linux (no ID in /etc/os-release)"),
])
def test_each_requirement_meets_or_falls_short_in_words(name, value, facts, sentence):
    got = shortfalls(server(**facts), Requirements({name: value}))
    assert got == ([sentence] if sentence else [])


def test_commands_are_judged_from_the_claims_own_list_only():
    facts = facts_from(DEBIAN_VM)  # git found, numactl missing (another claim asked for it)
    assert shortfalls(facts, Requirements(commands=["git"])) == []
    assert shortfalls(facts, Requirements(cores=1)) == []
    assert shortfalls(facts, Requirements(commands=["git", "numactl"])) == ["needs the command 'numactl' on PATH"]


def test_a_command_that_was_not_looked_for_is_a_shortfall_not_a_pass():
    got = shortfalls(facts_from(DEBIAN_VM), Requirements(commands=["numactl", "go"]))
    assert got == ["needs the commands 'numactl' and 'go' on PATH ('go' not looked for)"]


def test_every_shortfall_of_a_claim_is_listed_in_registry_order():
    reqs = Requirements(cores=8, os=["Debian 12"], docker=True, numa_nodes=2, why="fixture")
    assert shortfalls(facts_from(DEBIAN_VM), reqs) == [
        "needs 8 cores (CPUs online), has 2",
        "needs 2 NUMA nodes, has 1",
        "needs Docker usable by the user; docker command found but the daemon does not answer: Cannot connect to "
        "the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
    ]


def test_shortfalls_accept_facts_read_back_from_a_manifest():
    stored = server().as_dict()
    assert shortfalls(stored, Requirements(cores=64)) == ["needs 64 cores (CPUs online), has 40"]


def test_shortfalls_accept_a_plain_mapping_validated_like_a_paper_file():
    got = shortfalls(facts_from(DEBIAN_VM), {"cores": 4, "os": ["Debian 12"]})
    assert got == ["needs 4 cores (CPUs online), has 2"]
    with pytest.raises(ConfigError, match="unknown requirement"):
        shortfalls(facts_from(DEBIAN_VM), {"gpus": 1})


# --------------------------------------------------------------------------- OS family and release

@pytest.mark.parametrize("wanted, os_id, version, ok", [
    ("Debian 12", "debian", "12", True),
    ("Debian 12", "debian", "12.5", True),
    ("Debian 12", "debian", "120", False),
    ("Debian 12", "debian", "1.2", False),
    ("Debian 12", "ubuntu", "12", False),
    ("debian 12", "debian", "12", True),
    ("Ubuntu 22.04", "ubuntu", "22.04", True),
    ("Ubuntu 22.04", "ubuntu", "22.04.3", True),  # component prefix: a point release still matches
    ("Ubuntu 22.04", "ubuntu", "22.10", False),
    ("Ubuntu 22.04", "ubuntu", "22", False),
    ("Ubuntu 22", "ubuntu", "22.04", True),
    ("Ubuntu", "ubuntu", "18.04", True),
    ("Ubuntu", "debian", "12", False),
    ("Ubuntu 22.04", "", "", False),
    ("rhel 9", "rhel", "9.3", True),
])
def test_os_family_is_the_id_and_release_matches_at_component_boundaries(wanted, os_id, version, ok):
    assert os_matches(wanted, os_id, version) is ok


def test_debian_12_is_met_by_bookworm_whose_pretty_name_differs():
    assert shortfalls(facts_from(DEBIAN_VM), Requirements(os=["Debian 12"])) == []
    assert shortfalls(facts_from(DEBIAN_VM), Requirements(os=["Debian 11"])) == [
        "needs Debian 11, runs Debian GNU/Linux 12 (bookworm) (ID debian, VERSION_ID 12)"]


# --------------------------------------------------------------------------- configuration

def test_names_list_every_requirement_then_the_free_text():
    assert names() == ["cores", "physical_cores_per_socket", "memory_gib", "disk_gib", "numa_nodes", "smt", "docker",
                       "os", "commands", "kvm", "files", "cloudlab", "testbed", "why"]


def test_claim_wins_per_key_over_the_papers_machine():
    machine = parse_requirements({"os": ["Ubuntu 20.04"], "disk_gib": 1.2, "commands": ["git", "make"],
                                  "testbed": "a 64-core machine"}, file="p.yaml", key="machine")
    claim = parse_requirements({"cores": 32, "commands": ["go"], "why": "32 validators"}, machine,
                               file="p.yaml", key="claims[1].requires")
    assert claim.as_dict() == {"cores": 32, "disk_gib": 1.2, "os": ["Ubuntu 20.04"], "commands": ["go"],
                               "testbed": "a 64-core machine", "why": "32 validators"}
    assert machine.commands == ("git", "make") and claim.commands == ("go",)
    assert parse_requirements(None, machine, file="p.yaml", key="claims[0].requires") == machine


def test_values_are_stored_typed_and_unset_ones_read_as_nothing():
    r = Requirements(cores=8.0, memory_gib=64, os=["Ubuntu 22.04"])
    assert r.cores == 8 and type(r.cores) is int and r.memory_gib == 64.0 and type(r.memory_gib) is float
    assert r.os == ("Ubuntu 22.04",) and r.get("os") == ("Ubuntu 22.04",)
    assert r.numa_nodes is None and r.commands == () and r.testbed == "" and r.why == "" and r.docker is None
    assert dict(r.items()) == {"cores": 8, "memory_gib": 64.0, "os": ("Ubuntu 22.04",)}
    with pytest.raises(AttributeError):
        r.cores = 4
    with pytest.raises(KeyError):
        r.get("gpus")
    assert not hasattr(r, "gpus")
    assert r == Requirements(os=("Ubuntu 22.04",), memory_gib=64.0, cores=8) and hash(r) == hash(Requirements(
        os=("Ubuntu 22.04",), memory_gib=64.0, cores=8))
    assert pickle.loads(pickle.dumps(r)) == r


def test_describe_gives_a_phrase_per_requirement_for_the_page():
    r = Requirements(cores=8, physical_cores_per_socket=8, memory_gib=64, disk_gib=20, numa_nodes=2, smt="off",
                     docker=True, os=["Ubuntu 20.04", "Ubuntu 22.04"], commands=["git", "make", "numactl"],
                     testbed="CloudLab c6525-100g", why="the paper's setup")
    assert r.describe() == ["at least 8 cores (CPUs online)", "at least 8 physical cores on one socket",
                            "at least 64 GiB of memory", "at least 20 GiB free in the workdir", "at least 2 NUMA nodes",
                            "SMT (hyper-threading) off", "Docker usable by the user", "Ubuntu 20.04 or Ubuntu 22.04",
                            "git, make and numactl on PATH"]
    assert Requirements(docker=False).describe() == [] and Requirements().describe() == []


def test_unknown_requirement_names_the_file_the_key_and_the_known_names():
    with pytest.raises(ConfigError) as err:
        parse_requirements({"cores": 4, "gpus": 2}, file="configs/papers/x.yaml", key="claims[2].requires")
    e = err.value
    assert e.file == "configs/papers/x.yaml" and e.key == "claims[2].requires.gpus"
    assert str(e).startswith("configs/papers/x.yaml: claims[2].requires.gpus: unknown requirement (known: cores, ")
    assert "physical_cores_per_socket" in str(e) and "testbed, why)" in str(e)


@pytest.mark.parametrize("name, value, key, words", [
    ("cores", "8", "machine.cores", ["'8' is not of type 'integer'", "e.g. cores: 8"]),
    ("cores", 0, "machine.cores", ["less than the minimum of 1"]),
    ("cores", True, "machine.cores", ["True is not of type 'integer'"]),
    ("cores", 2.5, "machine.cores", ["2.5 is not of type 'integer'"]),
    ("memory_gib", "lots", "machine.memory_gib", ["'lots' is not of type 'number'"]),
    ("disk_gib", -1, "machine.disk_gib", ["less than the minimum of 0"]),
    ("smt", "yes", "machine.smt", ["'yes' is not one of ['on', 'off']", 'expected "on" or "off"']),
    ("docker", "yes", "machine.docker", ["'yes' is not of type 'boolean'"]),
    ("os", "Ubuntu 22.04", "machine.os", ["'Ubuntu 22.04' is not of type 'array'", "Family Release"]),
    ("os", ["Ubuntu 22.04", "Debian GNU/Linux 12"], "machine.os[1]", ["'Debian GNU/Linux 12' does not match",
                                                                       "VERSION_ID"]),
    ("os", [], "machine.os", ["should be non-empty"]),
    ("commands", ["git", "rm -rf /"], "machine.commands[1]", ["'rm -rf /' does not match", "program names"]),
    ("testbed", 64, "machine.testbed", ["expected free text"]),
    ("numa_nodes", None, "machine.numa_nodes", ["None is not of type 'integer'"]),
])
def test_ill_typed_values_name_the_file_and_the_key(name, value, key, words):
    with pytest.raises(ConfigError) as err:
        parse_requirements({name: value}, file="p.yaml", key="machine")
    assert err.value.file == "p.yaml" and err.value.key == key
    for w in words:
        assert w in str(err.value)


def test_a_requires_that_is_not_a_mapping_is_refused():
    with pytest.raises(ConfigError) as err:
        parse_requirements(["cores"], file="p.yaml", key="claims[0].requires")
    assert err.value.key == "claims[0].requires" and "expected a mapping" in str(err.value)


def test_the_projects_paper_files_parse():
    for path in sorted((ROOT / "configs" / "papers").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        machine = parse_requirements(data.get("machine"), file=path, key="machine")
        for i, c in enumerate(data["claims"]):
            parse_requirements(c.get("requires"), machine, file=path, key=f"claims[{i}].requires")
    aardvark = yaml.safe_load((ROOT / "configs" / "papers" / "aardvark.yaml").read_text())
    machine = parse_requirements(aardvark["machine"], file="aardvark.yaml", key="machine")
    assert "Ubuntu 18.04 or Ubuntu 20.04" in machine.describe() and machine.get("disk_gib") == 1.2


def test_schema_is_valid_json_schema_and_agrees_with_the_registry():
    from reprobook.core.config import jsonschema_module
    js = jsonschema_module()
    js.Draft202012Validator.check_schema(rq.schema())
    v = js.Draft202012Validator(rq.schema())
    assert v.is_valid({"cores": 4, "os": ["Debian 12"], "why": "x"})
    assert not v.is_valid({"gpus": 1}) and not v.is_valid({"smt": "maybe"})
    assert set(rq.schema()["properties"]) == set(names())


# --------------------------------------------------------------------------- the probe script

def test_probe_script_has_each_probe_once_and_each_claims_commands_once_quoted():
    a = Requirements(commands=["git", "g++"])
    b = Requirements(commands=["git", "numactl"], cores=4)
    script = probe_script([a, b])
    assert script.count("getconf _NPROCESSORS_ONLN") == 1
    assert "docker info" not in script   # Docker is asked of the daemon only when a claim needs it
    assert probe_script([a, Requirements(docker=True)]).count("docker info") == 2  # with and without `timeout`
    probed = [line.split()[3] for line in script.splitlines() if line.startswith("if command -v ")]
    assert probed == ["git", "g++", "numactl"]
    assert probe_script(a) == probe_script([a])
    assert "cmd_" not in probe_script([Requirements(cores=2)]).replace("printf 'cmd_%s", "")


def test_probe_script_runs_with_bash_and_every_fact_is_read(tmp_path):
    """The script itself, on this machine (no SSH): every fact key comes back, the command probe quotes."""
    missing = tmp_path / "not" / "yet"
    out = subprocess.run(["bash", "--norc", "--noprofile", "-c",
                          probe_script([Requirements(commands=["bash", "no-such-cmd-xyz", "g++"])]), "probe",
                          str(missing)], capture_output=True, text=True, timeout=60, check=True).stdout
    f = facts_from(out)
    assert f.disk_path == str(tmp_path) and f.disk_free_gib is not None and f.disk_free_gib > 0
    assert f.commands["bash"] is True and f.commands["no-such-cmd-xyz"] is False and "g++" in f.commands
    assert f.cpus >= 1 and f.kernel and f.os and f.smt in ("on", "off", "unknown")


def _sh(cmd: str) -> str:
    return subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=30).stdout.strip()


def test_the_probe_reads_with_bash_alone_and_agrees_with_the_programs_it_replaced(tmp_path):
    """On 100 hosts at once the probe is what a check costs: bash's own read and globs, no grep/awk/sort.

    With only ``id``, ``df`` and ``uname`` on PATH every fact still comes back, equal to what the
    programs the probe used to start (getconf, awk, grep, ls | wc) read on this machine.
    """
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for prog in ("id", "df", "uname"):
        (bin_dir / prog).symlink_to(shutil.which(prog))
    out = subprocess.run(["/bin/bash", "--norc", "--noprofile", "-c", probe_script([Requirements()]), "probe",
                          str(tmp_path / "a" / "b" / "")], capture_output=True, text=True, timeout=60,
                         env={"PATH": str(bin_dir), "HOME": str(tmp_path)})
    assert out.returncode == 0 and "command not found" not in out.stderr, out.stderr
    f = facts_from(out.stdout)
    assert f.cpus == int(_sh("getconf _NPROCESSORS_ONLN"))
    assert f.mem_gib == round(int(_sh("awk '/^MemTotal:/ {print $2}' /proc/meminfo")) / 2**20, 2)
    assert f.cpu_model == _sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'")
    assert f.numa_nodes == max(1, int(_sh("ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l")))
    assert f.kernel == _sh("uname -r") and f.hostname == _sh("hostname") and f.arch == _sh("uname -m")
    old_topology = _sh("awk '{n=split(FILENAME, a, \"/\"); c=a[n-2]; if (a[n] == \"physical_package_id\") p[c]=$0; "
                       "else s[c]=$0} END {for (c in s) print p[c] \":\" s[c]}' "
                       "/sys/devices/system/cpu/cpu[0-9]*/topology/physical_package_id "
                       "/sys/devices/system/cpu/cpu[0-9]*/topology/thread_siblings_list")
    old = facts_from("cpu_topology=" + old_topology.replace("\n", " "))
    assert f.physical_cores and (f.physical_cores, f.sockets, f.physical_cores_per_socket) == (
        old.physical_cores, old.sockets, old.physical_cores_per_socket)
    assert f.disk_path == str(tmp_path) and f.disk_free_gib > 0
    assert f.docker is None and "not probed" in f.docker_detail


@pytest.mark.parametrize("workdir, nearest", [
    ("{t}/a/b", "{t}"), ("{t}/a/b/", "{t}"), ("{t}//a//b//", "{t}"), ("{t}", "{t}"), ("/no-such-dir-rb/x", "/"),
    ("no-such-rel-rb/x/y", "."), ("no-such-rel-rb", "."), ("~/no-such-rb/x", "{t}")])
def test_the_disk_probe_measures_at_the_nearest_existing_parent_as_dirname_would(tmp_path, workdir, nearest):
    script = probe_script([Requirements(disk_gib=1)])
    out = subprocess.run(["bash", "--norc", "--noprofile", "-c", script, "probe", workdir.format(t=tmp_path)],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path,
                         env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)}).stdout
    assert facts_from(out).disk_path == nearest.format(t=tmp_path)
