"""The requirements of a claim that boots virtual machines: KVM that can run a standard guest, and files at given paths."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from reprobook.errors import ConfigError
from reprobook.core.requirements import Requirements, facts_from, parse_requirements, probe_script, shortfalls


PARAVIRTUAL = ("/dev/kvm is there and usable, but the CPU shows no virtualisation extensions (no vmx or svm flag in "
               "/proc/cpuinfo): a paravirtual KVM, which cannot run a standard guest (QEMU with -enable-kvm fails or "
               "hangs); QEMU can still emulate a guest without it (TCG), many times slower")


@pytest.mark.parametrize("line, usable, detail", [
    ("kvm=usable", True, "/dev/kvm can be read and written by the user, and the CPU has its virtualisation extensions"),
    ("kvm=missing", False, "there is no /dev/kvm (no hardware virtualisation here, or the kvm module is not loaded)"),
    ("kvm=denied crw-rw---- root kvm", False, "/dev/kvm exists (crw-rw---- root kvm) but the user cannot read and "
                                             "write it (add the user to its group, usually kvm)"),
    ("kvm=paravirtual", False, PARAVIRTUAL),
    ("", False, "not probed")])
def test_kvm_is_judged_by_whether_it_can_run_a_standard_guest(line, usable, detail):
    f = facts_from(line)
    assert (f.kvm, f.kvm_detail) == (usable, detail)
    assert shortfalls(f, Requirements(kvm=True)) == \
        ([] if usable else [f"needs KVM that can run a standard guest; {detail}"])
    assert shortfalls(f, Requirements(kvm=False)) == []


def _fake_machine(tmp_path, *, arch: str, flags: str):
    """A PATH whose uname says ``arch`` and whose grep reads a cpuinfo with ``flags`` for /proc/cpuinfo."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nflags\t\t: fpu vme {flags} sse2\n\nprocessor\t: 1\nflags\t\t: fpu {flags}\n")
    (bin_dir / "uname").write_text(f"#!/bin/sh\n[ \"$1\" = -m ] && echo {arch} || exec /bin/uname \"$@\"\n")
    # the probe's own reads, sent to the fakes: /proc/cpuinfo and /dev/kvm
    (bin_dir / "grep").write_text(f"#!/bin/bash\nargs=(\"${{@/\\/proc\\/cpuinfo/{cpuinfo}}}\")\nexec /bin/grep \"${{args[@]}}\"\n")
    for tool in ("uname", "grep"):
        (bin_dir / tool).chmod(0o755)
    return bin_dir


@pytest.mark.parametrize("arch, flags, state", [
    ("x86_64", "vmx ssse3", "usable"), ("x86_64", "svm sse4a", "usable"),
    ("x86_64", "hypervisor ssse3 vmmcall", "paravirtual"),   # this machine's: a paravirtual /dev/kvm
    ("aarch64", "fp asimd", "usable")])                      # judged by the device alone off x86
def test_the_kvm_probe_reads_the_cpus_virtualisation_flags(tmp_path, arch, flags, state):
    from reprobook.core.requirements import Kvm
    bin_dir = _fake_machine(tmp_path, arch=arch, flags=flags)
    dev = tmp_path / "kvm"
    dev.write_text("")
    probe = Kvm.probe.replace("/dev/kvm", str(dev))
    out = subprocess.run(["bash", "--norc", "-c", probe], capture_output=True, text=True, timeout=30,
                         env={"PATH": f"{bin_dir}:/usr/bin:/bin"}, check=True).stdout
    assert out == f"kvm={state}\n"
    assert facts_from(out).kvm == (state == "usable")
    dev.unlink()
    out = subprocess.run(["bash", "--norc", "-c", probe], capture_output=True, text=True, timeout=30,
                         env={"PATH": f"{bin_dir}:/usr/bin:/bin"}, check=True).stdout
    assert out == "kvm=missing\n"


def test_on_this_machine_the_kvm_is_said_to_be_paravirtual_when_the_cpu_lacks_the_flags():
    """The real probe on the real machine: a /dev/kvm without vmx/svm is not a KVM that can run a standard guest."""
    import os
    from reprobook.core.requirements import Kvm
    out = subprocess.run(["bash", "--norc", "-c", Kvm.probe], capture_output=True, text=True, timeout=30,
                         check=True).stdout
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if not os.path.exists("/dev/kvm"):
        assert out == "kvm=missing\n"
    elif not os.access("/dev/kvm", os.R_OK | os.W_OK):
        assert out.startswith("kvm=denied ")
    elif os.uname().machine == "x86_64" and not re.search(r"\b(vmx|svm)\b", flags):
        assert out == "kvm=paravirtual\n"
        assert facts_from(out).kvm_detail == PARAVIRTUAL
    else:
        assert out == "kvm=usable\n"


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
    assert reqs.describe() == ["KVM (/dev/kvm) that can run a standard guest", "~/ozz/x present on the host"]
    with pytest.raises(ConfigError, match=r"p\.yaml: claims\[0\]\.requires\.files: .*list of paths"):
        parse_requirements({"files": "~/ozz/x"}, file="p.yaml", key="claims[0].requires")
    with pytest.raises(ConfigError, match=r"requires\.kvm: .*true or false"):
        parse_requirements({"kvm": "yes"}, file="p.yaml", key="claims[0].requires")
