"""The requirements of a claim that boots virtual machines: KVM usable by the user, and files at given paths."""

from __future__ import annotations

import subprocess

import pytest

from reprobook.errors import ConfigError
from reprobook.core.requirements import Requirements, facts_from, parse_requirements, probe_script, shortfalls


@pytest.mark.parametrize("line, usable, detail", [
    ("kvm=usable", True, "/dev/kvm can be read and written by the user"),
    ("kvm=missing", False, "there is no /dev/kvm (no hardware virtualisation here, or the kvm module is not loaded)"),
    ("kvm=denied crw-rw---- root kvm", False, "/dev/kvm exists (crw-rw---- root kvm) but the user cannot read and "
                                             "write it (add the user to its group, usually kvm)"),
    ("", False, "not probed")])
def test_kvm_is_usable_only_when_the_user_can_open_it(line, usable, detail):
    f = facts_from(line)
    assert (f.kvm, f.kvm_detail) == (usable, detail)
    assert shortfalls(f, Requirements(kvm=True)) == ([] if usable else [f"needs KVM usable by the user; {detail}"])
    assert shortfalls(f, Requirements(kvm=False)) == []


def test_files_are_probed_where_the_claim_says_home_workdir_or_absolute(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    (home / "ozz" / "scripts").mkdir(parents=True)
    (home / "ozz" / "scripts" / "run_qemu.sh").write_text("#!/bin/sh\n")
    (work / "data").mkdir(parents=True)
    (work / "data" / "image.img").write_text("x")
    absent = tmp_path / "nowhere" / "bzImage"
    reqs = Requirements(files=["~/ozz/scripts/run_qemu.sh", "data/image.img", "~/ozz", str(absent)])
    other = Requirements(files=["data/image.img"], cores=1)  # asked twice: probed once
    script = probe_script([reqs, other])
    assert script.count("rb_file data/image.img;") == 1
    out = subprocess.run(["bash", "--norc", "--noprofile", "-c", script, "probe", str(work)], capture_output=True,
                         text=True, timeout=60, env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, check=True).stdout
    f = facts_from(out)
    assert f.files == {"~/ozz/scripts/run_qemu.sh": "file", "data/image.img": "file", "~/ozz": "dir",
                       str(absent): "missing"}
    assert shortfalls(f, reqs) == [f"needs the file {absent} (not there)"]
    assert shortfalls(f, other) == []
    assert shortfalls(facts_from(""), Requirements(files=["a", "b"])) == \
        ["needs the files a (not looked for) and b (not looked for)"]
    assert f.as_dict()["files"] == f.files  # kept in a run's manifest as plain JSON


def test_kvm_and_files_are_validated_and_described():
    reqs = parse_requirements({"kvm": True, "files": ["~/ozz/x"]}, file="p.yaml", key="claims[0].requires")
    assert reqs.describe() == ["KVM (/dev/kvm) usable by the user", "~/ozz/x present on the host"]
    with pytest.raises(ConfigError, match=r"p\.yaml: claims\[0\]\.requires\.files: .*list of paths"):
        parse_requirements({"files": "~/ozz/x"}, file="p.yaml", key="claims[0].requires")
    with pytest.raises(ConfigError, match=r"requires\.kvm: .*true or false"):
        parse_requirements({"kvm": "yes"}, file="p.yaml", key="claims[0].requires")
