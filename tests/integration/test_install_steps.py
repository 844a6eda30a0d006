"""Every step of the project that installs software, run as the engine generates it on a host where none of it is.

The host is this machine behind a real sshd on loopback. It is made bare by its ``PATH``: the programs the steps
install (cmake, g++, make, ...) are left out of it, and Debian's package tools are stand-ins that report nothing
installed and record their calls: ``dpkg-query``/``dpkg -s`` know only the packages "installed" during the test,
``apt-get install`` "installs" (records) what it is given, or fails as apt does for a package it does not know or
after an install cut off half way; ``sudo`` runs the stand-ins and only records any other command (nothing on
this machine changes); ``id`` says the user is ``evaluator`` (uid 1000), not root. With ``sudo`` refusing, the
same host is one without root or passwordless sudo.

Each step's script is `reprobook.remote.steps.build_script`'s, preamble included, for the claim the step belongs
to (without its checkouts). A step that runs on the hosts of a role is run as the script the job carries for such a
host. A new install step in a paper file fails `test_every_install_step_is_covered` until it is given a case here.
"""

from __future__ import annotations

import base64
import dataclasses
import re
import shlex
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from reprobook.core.plan import make_plan
from reprobook.core.config import HostSpec, load_project
from reprobook.remote.hosts import open_host
from reprobook.remote.placement import Placement
from reprobook.remote.steps import build_script

pytestmark = pytest.mark.ssh
ROOT = Path(__file__).resolve().parents[2]
INSTALLS = re.compile(r"\b(apt-get|apt|dpkg|rb_apt_install|rb_need_root|rb_as_root|sudo)\b")

# Each install step by name: what it installs and how ("apt": Debian packages through rb_apt_install; "libraries":
# built from source into /usr/local; "script": the authors' set-up script run as root; "deb": a .deb by dpkg -i).
CASES = {
    "install build dependencies (apt; skipped when they are all there)": "apt",
    "Debian packages for the build and the harness (skipped when all are installed)": "apt",
    "the Debian packages on the servers": "apt",
    "the Debian packages on the clients": "apt",
    "install the build and plotting dependencies (apt)": "apt",
    "PostgreSQL on the servers (Postgres, Postgres-PB)": "apt",
    "Apache Ant on the control host (BFT-SMaRt's build)": "apt",
    "the libraries Debian lacks, from their repositories, into /usr/local (skipped when installed)": "libraries",
    "Set 1 machine set-up: Docker CE and SMT off (setup/cloudlab-1.sh; skipped when the host is already so)": "script",
    "Set 1 machine set-up for rust=container: Docker CE and SMT off (setup/cloudlab-1.sh; skipped for rust=host or "
    "when already so)": "script",
    "install the libssl 1.1 that Linear Dafny needs (skipped when installed)": "deb",
    "install the build dependencies (apt): urcu, hwloc and libclang for bindgen": "apt",
    "install the suite's build and run dependencies (apt; skipped when all are there)": "apt",
}
NOT_RUN_HERE = {
    # copies into /usr/local/lib of the other hosts, over SSH, what the step before built here: it needs a placement
    # of several hosts, and is run by the Pesto rehearsal's own tests
    "ship the libraries built here, the keys and the harness's directories to the servers and clients",
    # copies the keys the ship step sent into the authors' paths (/usr/local/etc, /mnt/extra) on a host of the paper's
    # cluster: the authors' image has them; `test_the_authors_paths_step_*` runs it
    "put the keys and the experiment directory where the authors' configs name them (skipped when there)",
    "put the keys and the experiment directory where the authors' configs name them, on the clients (skipped when "
    "there)",
    # the persistent-memory log's steps drive a guest (a VM the host boots, or a machine already up): `make live-pmlog`
    # runs them on a loopback guest where the packages step installs for real (llvm-dev and clang, the first time);
    # booting the guide's VM (guest=qemu) needs the Ubuntu cloud image from the internet
    "boot the guide's VM (guest=qemu), or check the running guest",
    "in the guest: the packages the build needs, and Rust (rustup's 1.76.0, or the guest's own)",
    "reserve the persistent memory: memmap=8G!4G and a reboot (guest=qemu), or check the device or directory",
    "in the guest: append with the three logs, `iterations` times, at one append size (run.sh's loop)",
    "copy the results from the guest to the host; shut the VM down (guest=qemu)",
    # makes a Debian guest image as root (debootstrap, mkfs.ext4 -d) once its packages are in: `make live-guest` runs
    # it for real, its apt install included (QEMU, debootstrap)
    "guest=debian: make the Debian 12 guest image (debootstrap, Debian's kernel), or find it made",
    # installs nothing: with pages=huge it reserves 1 GiB huge pages as root and gives them back; `make live-verus-nr`
    # runs it both ways
    "run both benchmarks at each thread count and share of writes (bench.py's loop, the host's thread counts)",
}
# programs a bare host lacks until the steps install them (left out of the PATH)
ABSENT = {"cmake", "g++", "c++", "make", "autoconf", "automake", "libtoolize", "numactl", "protoc", "docker",
          "shellcheck", "curl", "wget", "git", "rustup", "cargo"}
USR_LOCAL_LIBS = {"taopq": "/usr/local/include/tao/pq.hpp", "BLAKE3": "/usr/local/lib/libblake3.so",
                  "ed25519-donna": "/usr/local/lib/libed25519_donna.so", "libcount": "/usr/local/lib/libcount.a",
                  "libpg_query": "/usr/local/lib/libpg_query.a"}

STUBS = {
    "dpkg-query": r"""
echo "dpkg-query $*" >> "$RB_FAKE/calls"
fmt='${Package}\t${Version}\n'; pkgs=(); rc=0
while [ $# -gt 0 ]; do
  case "$1" in -f|--showformat) fmt=$2; shift ;; -*) ;; *) pkgs+=("$1") ;; esac; shift
done
for p in "${pkgs[@]}"; do
  if grep -qxF "$p" "$RB_FAKE/installed"; then
    out=${fmt//'${Package}'/$p}; out=${out//'${db:Status-Status}'/installed}; out=${out//'${Version}'/1.0}
    printf '%b' "$out"
  else
    echo "dpkg-query: no packages found matching $p" >&2; rc=1
  fi
done
exit $rc
""",
    "dpkg": r"""
echo "dpkg $*" >> "$RB_FAKE/calls"
case "$1" in
  -s|--status)
    if grep -qxF "$2" "$RB_FAKE/installed"; then printf 'Package: %s\nStatus: install ok installed\n' "$2"
    else echo "dpkg-query: package '$2' is not installed and no information is available" >&2; exit 1; fi ;;
  --configure) rm -f "$RB_FAKE/interrupted" ;;
esac
""",
    "apt-get": r"""
echo "apt-get $*" >> "$RB_FAKE/calls"
args=()
while [ $# -gt 0 ]; do case "$1" in -o) shift ;; -*) ;; *) args+=("$1") ;; esac; shift; done
[ "${args[0]}" = install ] || exit 0
if [ -f "$RB_FAKE/interrupted" ]; then
  echo "E: dpkg was interrupted, you must manually run 'dpkg --configure -a' to correct the problem." >&2; exit 100
fi
rc=0
for p in "${args[@]:1}"; do
  if grep -qxF "$p" "$RB_FAKE/unknown"; then echo "E: Unable to locate package $p" >&2; rc=100; fi
done
[ "$rc" = 0 ] || exit "$rc"
if [ -f "$RB_FAKE/die-once" ]; then   # killed half way: dpkg is left to be finished
  rm -f "$RB_FAKE/die-once"; touch "$RB_FAKE/interrupted"; kill -9 $$
fi
printf '%s\n' "${args[@]:1}" >> "$RB_FAKE/installed"
case " ${args[*]} " in *" protobuf-compiler "*)
  printf '#!/bin/sh\necho libprotoc 3.21.12\n' > "$RB_FAKE/bin/protoc"; chmod +x "$RB_FAKE/bin/protoc" ;;
esac
""",
    "sudo": r"""
echo "sudo $*" >> "$RB_FAKE/calls"
[ "${1:-}" = -n ] && shift
if [ ! -f "$RB_FAKE/sudo-ok" ]; then echo "sudo: a password is required" >&2; exit 1; fi
case "$1" in true|env|apt-get|dpkg|dpkg-query) exec "$@" ;; esac
[ -t 0 ] || cat > /dev/null   # anything else would change this machine: recorded only (its input read)
""",
    "id": r"""
case "$*" in -u) echo 1000 ;; -un|"-u -n"|-nu) echo evaluator ;; *) exec /usr/bin/id "$@" ;; esac
""",
    "git": r"""
echo "git $*" >> "$RB_FAKE/calls"
if [ "$1" = clone ]; then mkdir -p "${@: -1}"; fi
""",
    "wget": 'echo "wget $*" >> "$RB_FAKE/calls"; : > "$(basename "${@: -1}")"',
    "cmake": 'echo "cmake $*" >> "$RB_FAKE/calls"',
    "docker": 'echo "Cannot connect to the Docker daemon" >&2; exit 1',
}


@pytest.fixture(scope="module")
def project():
    return load_project(ROOT)


def _install_steps(project):
    """{step name: (claim, step)}: every setup or run step of the project that installs, first claim that has it."""
    out = {}
    for base in project.all_claims():
        for claim in (base, *(base.at_scale(s) for s in base.variants)):   # a scale's own steps too
            for step in claim.setup + claim.run:
                if INSTALLS.search(step.run):
                    out.setdefault(step.name, (claim, step))
    return out


def test_every_install_step_is_covered(project):
    found = set(_install_steps(project))
    assert found - set(CASES) - NOT_RUN_HERE == set(), "install steps without a case in this test"
    assert set(CASES) - found == set(), "cases for steps the paper files no longer have"


RELEASES = {"Debian 12": ("debian", "12", "Debian GNU/Linux 12 (bookworm)"),
            "Ubuntu 22.04": ("ubuntu", "22.04", "Ubuntu 22.04.5 LTS"), "Ubuntu 20.04": ("ubuntu", "20.04", "Ubuntu 20.04.6 LTS"),
            "Ubuntu 18.04": ("ubuntu", "18.04", "Ubuntu 18.04.6 LTS"), "Fedora 40": ("fedora", "40", "Fedora Linux 40")}


def _packages(step, release: str = "Debian 12") -> list[str]:
    """The packages ``step`` installs on ``release``: its table's row (every install step has a table)."""
    assert step.packages, f"the install step {step.name!r} has no packages table"
    return list(step.packages_for(release))


@dataclasses.dataclass
class Bare:
    """The loopback host with nothing installed, and what its stand-ins recorded."""
    root: Path
    host: object

    @property
    def fake(self) -> Path:
        return self.root / "fake"

    def calls(self) -> list[str]:
        path = self.fake / "calls"
        return path.read_text().splitlines() if path.exists() else []

    release: str = "Debian 12"

    def present(self, release: str) -> None:
        """The host says it runs ``release`` (its os-release, as the steps read it)."""
        os_id, version, pretty = RELEASES[release]
        (self.fake / "os-release").write_text(f'PRETTY_NAME="{pretty}"\nID={os_id}\nVERSION_ID="{version}"\n')
        self.release = release

    def run(self, script: str, name: str = "job.sh"):
        path = self.root / name
        path.write_text(script)
        env = {"PATH": f"{self.fake / 'bin'}:{self.root / 'sysbin'}", "RB_FAKE": str(self.fake), "USER": "evaluator",
               "RB_OS_RELEASE": str(self.fake / "os-release")}
        return self.host.run(f"bash {shlex.quote(str(path))} < /dev/null", env=env, check=False, timeout=120)


@pytest.fixture
def bare(bed, tmp_path):
    bed.add_host("bare", "127.0.0.2")
    fake = tmp_path / "fake"
    (fake / "bin").mkdir(parents=True)
    for name in ("installed", "unknown", "calls"):
        (fake / name).touch()
    (fake / "sudo-ok").touch()
    for name, body in STUBS.items():
        (fake / "bin" / name).write_text("#!/bin/bash\n" + body.lstrip())
        (fake / "bin" / name).chmod(0o755)
    sysbin = tmp_path / "sysbin"   # this machine's programs, less those a bare host lacks
    sysbin.mkdir()
    for d in ("/usr/local/bin", "/usr/bin", "/usr/sbin"):
        for p in sorted(Path(d).iterdir()):
            if p.name not in ABSENT and not (sysbin / p.name).exists():
                (sysbin / p.name).symlink_to(p)
    spec = HostSpec(name="bare", ssh="bare", workdir=str(tmp_path / "work"))
    with open_host(spec, SimpleNamespace(ssh_config=bed.ssh_config_path)) as host:
        b = Bare(tmp_path, host)
        b.present("Debian 12")
        yield b


def _script(project, claim, step, bare: Bare) -> str:
    """The job script of ``claim`` cut to ``step`` (no checkouts); for a step of another role, the script the
    job carries for that role's host."""
    # variants={}: the claim as it is here (a scale's own steps included), not put back to its scales' fields
    one = dataclasses.replace(claim, setup=(step,), run=(), repositories=("(none)",), variants={})
    paper = project.paper(claim.paper)
    params = {"guest_port": 2222} if "guest_port" in claim.parameters else {}
    work = str(bare.root / "work")
    if not step.role or step.role == claim.control_role:
        return build_script(paper, make_plan(one, params), HostSpec("bare", "bare", work), str(bare.root / "rd"))
    members = {n: HostSpec(n, n, work) for n in ("control", "bare")}   # the role's host is the bare one
    roles = {r: ("control",) if r == claim.control_role else ("bare",) for r in claim.roles}
    job = build_script(paper, make_plan(one, params), members["control"], str(bare.root / "rd"),
                       placement=Placement(roles, claim.control_role), members=members)
    carried = re.findall(r"rb_par bare ([A-Za-z0-9+/=]+)", job)
    assert len(carried) == 1, "the job carries one script for the role's host"
    return base64.b64decode(carried[0]).decode()


def _release(claim, step) -> str:
    """The release a generic case presents: Debian 12, or for a PostgreSQL step the one of the claim's version."""
    version = make_plan(claim, {}).params.get("postgres_version")
    return next((r for r in step.releases if version and step.packages_for(r) == (f"postgresql-{version}",)),
                "Debian 12")


def _cases(kind: str):
    return [pytest.param(name, id=re.sub(r"\W+", "-", name)[:60]) for name, k in CASES.items() if k == kind]


@pytest.mark.parametrize("name", _cases("apt"))
def test_a_package_step_installs_what_is_missing(project, bare, name):
    claim, step = _install_steps(project)[name]
    bare.present(_release(claim, step))
    pkgs = _packages(step, bare.release)
    res = bare.run(_script(project, claim, step, bare))
    installs = [c for c in bare.calls() if c.startswith("apt-get") and " install " in f"{c} "]
    assert installs == ["apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends " + " ".join(pkgs)], \
        res.tail(30)
    assert f"Debian packages to install on bare: {' '.join(pkgs)}" in res.stdout
    assert all(c.startswith("sudo -n ") for c in bare.calls() if c.startswith("sudo")), "sudo never waits for a password"
    # what follows the install on the bare host runs too (e.g. Pesto's libjvm line and toolchain versions)
    assert res.exited == 0, res.tail(30)
    # a second run finds everything installed and installs nothing
    before = len(bare.calls())
    again = bare.run(_script(project, claim, step, bare).replace("rb_force=0", "rb_force=1"), "again.sh")
    assert again.exited == 0 and not [c for c in bare.calls()[before:] if c.startswith("apt-get")], again.tail(20)


@pytest.mark.parametrize("name", _cases("apt"))
def test_a_package_step_without_root_says_what_to_do(project, bare, name):
    claim, step = _install_steps(project)[name]
    bare.present(_release(claim, step))
    pkgs = _packages(step, bare.release)
    (bare.fake / "sudo-ok").unlink()
    res = bare.run(_script(project, claim, step, bare))
    assert res.exited != 0
    assert not [c for c in bare.calls() if c.startswith("apt-get")]
    msg = " ".join(res.stderr.split())
    assert "on host bare" in msg and "passwordless sudo" in msg and "evaluator" in msg, res.stderr
    assert f"sudo apt-get install {' '.join(pkgs)}" in msg, res.stderr
    assert "Traceback" not in res.stderr and "unbound variable" not in res.stderr


def test_a_package_the_release_lacks_is_named(project, bare):
    claim, step = _install_steps(project)["install build dependencies (apt; skipped when they are all there)"]
    (bare.fake / "unknown").write_text("libgmp3-dev\n")
    res = bare.run(_script(project, claim, step, bare))
    assert res.exited != 0
    msg = " ".join(res.stderr.split())
    assert "on host bare, apt-get has no package libgmp3-dev in" in msg, res.stderr


def test_an_install_cut_off_half_way_finishes_when_the_run_is_resumed(project, bare):
    claim, step = _install_steps(project)["Debian packages for the build and the harness (skipped when all are "
                                          "installed)"]
    (bare.fake / "die-once").touch()
    script = _script(project, claim, step, bare)
    first = bare.run(script)
    assert first.exited != 0 and (bare.fake / "interrupted").exists(), first.tail(20)
    assert "apt-get could not install" in " ".join(first.stderr.split())
    again = bare.run(script)   # the same job script: --resume launches it again, and it starts at this step
    assert again.exited == 0, again.tail(30)
    assert not (bare.fake / "interrupted").exists()
    calls = bare.calls()
    assert any(c.startswith("dpkg --configure -a") for c in calls)
    assert "all steps done" in again.stdout


def test_the_libraries_step_reaches_its_first_install_or_says_what_to_do(project, bare):
    claim, step = _install_steps(project)[next(n for n, k in CASES.items() if k == "libraries")]
    missing = [name for name, path in USR_LOCAL_LIBS.items() if not Path(path).exists()]
    res = bare.run(_script(project, claim, step, bare))
    if not missing:
        assert res.exited == 0 and "installed already" in res.stdout
        return
    assert f"libraries to build and install into /usr/local on bare: {' '.join(missing)}" in res.stdout
    assert any(c.startswith("git clone") for c in bare.calls()), res.tail(20)   # reached its first build
    if "taopq" in missing:
        assert "sudo -n cmake --install taopq/build" in bare.calls(), res.tail(20)
    (bare.fake / "sudo-ok").unlink()
    (bare.fake / "calls").write_text("")
    res = bare.run(_script(project, claim, step, bare), "nosudo.sh")
    msg = " ".join(res.stderr.split())
    assert res.exited != 0 and "on host bare" in msg and "passwordless sudo" in msg and " ".join(missing) in msg
    assert not any(c.startswith("git") for c in bare.calls())


@pytest.mark.parametrize("name", _cases("script"))
def test_the_machine_set_up_script_is_run_as_root_or_says_what_to_do(project, bare, name):
    claim, step = _install_steps(project)[name]
    (bare.root / "work" / step.cwd / "setup").mkdir(parents=True)
    res = bare.run(_script(project, claim, step, bare))
    assert "sudo -n bash setup/cloudlab-1.sh evaluator" in bare.calls(), res.tail(20)
    # Docker is still not usable here (the script only ran in the record): the step says to log in again
    assert res.exited != 0 and "log in again" in res.stderr
    (bare.fake / "sudo-ok").unlink()
    (bare.fake / "calls").write_text("")
    res = bare.run(_script(project, claim, step, bare), "nosudo.sh")
    msg = " ".join(res.stderr.split())
    assert res.exited != 0 and "on host bare" in msg and "cloudlab-1.sh" in msg and "passwordless sudo" in msg
    assert "sudo -n bash setup/cloudlab-1.sh evaluator" not in bare.calls()


def test_the_libssl_step_installs_the_deb_or_says_what_to_do(project, bare):
    claim, step = _install_steps(project)[next(n for n, k in CASES.items() if k == "deb")]
    res = bare.run(_script(project, claim, step, bare))
    assert res.exited == 0, res.tail(20)
    assert "sudo -n dpkg -i libssl1.1_1.1.0g-2ubuntu4_amd64.deb" in bare.calls()
    (bare.fake / "sudo-ok").unlink()
    (bare.fake / "calls").write_text("")
    shutil.rmtree(bare.root / "rd")   # a new run (this one's step is done)
    res = bare.run(_script(project, claim, step, bare), "nosudo.sh")
    msg = " ".join(res.stderr.split())
    assert res.exited != 0 and "on host bare" in msg and "libssl1.1" in msg and "passwordless sudo" in msg
    assert not [c for c in bare.calls() if c.startswith(("wget", "sudo -n dpkg"))]


# --------------------------------------------------------------------------- a paper-scale plan, from the profile's image

PAPER_SCALE = ("pesto/sample-runs", "pesto/workloads", "aardvark/vector-commitments")


def _profile_os(project, claim) -> dict[str, str]:
    """Role -> the system of the image the claim's paper-scale CloudLab profile asks for."""
    from reprobook.cloudlab import nodes_for_claim, os_of_image
    return {rn.role: os_of_image(rn.disk_image) for rn in nodes_for_claim(project, claim, "paper")}


@pytest.mark.parametrize("key", PAPER_SCALE)
def test_a_paper_scale_plan_installs_builds_and_ships_from_the_profiles_image(project, bare, key):
    claim = project.claim(key)
    plan = make_plan(claim, {"scale": "paper"} if claim.scales else {}, paper=project.paper(claim.paper), source="live")
    names = [n for n, _, _ in plan.steps]
    assert any(n.startswith(("Debian packages", "install build dependencies")) for n in names), names
    assert any(n.startswith("build") for n in names), names
    if claim.roles:   # the servers and clients get their packages and what the control host built
        assert {"the Debian packages on the servers", "the Debian packages on the clients"} <= set(names), names
        assert any(n.startswith("ship the libraries built here") for n in names), names
    at = plan.claim
    oses = _profile_os(project, claim)
    steps = [s for s in at.setup + at.run if s.packages and s.where != "guest"]
    assert steps, "the plan installs packages"
    for step in steps:
        release = oses[step.role or at.control_role]
        assert release in step.releases, (step.name, release)
        bare.present(release)
        (bare.fake / "installed").write_text("")
        (bare.fake / "calls").write_text("")
        shutil.rmtree(bare.root / "rd", ignore_errors=True)
        res = bare.run(_script(project, at, step, bare))
        installs = [c for c in bare.calls() if c.startswith("apt-get") and " install " in f"{c} "]
        pkgs = list(step.packages_for(release))
        assert installs == ["apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "
                            + " ".join(pkgs)], (step.name, release, res.tail(30))


def test_a_host_of_a_release_the_table_lacks_is_told_which_it_knows(project, bare):
    claim, step = _install_steps(project)["Debian packages for the build and the harness (skipped when all are "
                                          "installed)"]
    bare.present("Fedora 40")
    res = bare.run(_script(project, claim, step, bare))
    assert res.exited == 3, res.tail(20)
    assert not [c for c in bare.calls() if c.startswith("apt-get")]
    msg = " ".join(res.stderr.split())
    assert ("on host bare, this step installs packages for Debian 12 or Ubuntu 22.04 (its packages table in the paper "
            "file), and the host runs Fedora Linux 40 (ID fedora, VERSION_ID 40)") in msg, res.stderr


def test_a_postgres_version_the_release_does_not_package_is_named(project, bare):
    claim, step = _install_steps(project)["PostgreSQL on the servers (Postgres, Postgres-PB)"]
    assert make_plan(claim, {}).params["postgres_version"] == 14   # the paper scale's: Ubuntu 22.04's
    bare.present("Debian 12")
    res = bare.run(_script(project, claim, step, bare))
    assert res.exited == 2 and not [c for c in bare.calls() if c.startswith("apt-get")], res.tail(20)
    assert "run with -p postgres_version 15" in " ".join(res.stderr.split()), res.stderr


def test_the_pesto_packages_differ_by_release_only_where_the_release_does(project, bare):
    claim, step = _install_steps(project)["Debian packages for the build and the harness (skipped when all are "
                                          "installed)"]
    debian, ubuntu = step.packages_for("Debian 12"), step.packages_for("Ubuntu 22.04")
    assert set(debian) ^ set(ubuntu) == {"postgresql-server-dev-15", "postgresql-server-dev-14"}
    assert "parallel" in debian   # the authors' upload script's; a stock image lacks it
    bare.present("Ubuntu 22.04")
    res = bare.run(_script(project, claim, step, bare))
    assert f"Debian packages to install on bare: {' '.join(ubuntu)}" in res.stdout, res.tail(20)


def test_the_authors_paths_step_puts_the_keys_there_or_says_what_to_do(project, bare):
    claim = project.claim("pesto/sample-runs")
    step = next(s for s in claim.setup if s.name.startswith("put the keys") and s.role == "server")
    res = bare.run(_script(project, claim, step, bare))
    calls = bare.calls()
    assert "sudo -n mkdir -p /usr/local/etc/indicus-keys/donna /mnt/extra" in calls, res.tail(20)
    assert "sudo -n chmod 1777 /mnt/extra" in calls, res.tail(20)
    (bare.fake / "sudo-ok").unlink()
    (bare.fake / "calls").write_text("")
    res = bare.run(_script(project, claim, step, bare), "nosudo.sh")
    msg = " ".join(res.stderr.split())
    assert res.exited != 0 and "on host bare" in msg and "/usr/local/etc/indicus-keys/donna" in msg, res.stderr
