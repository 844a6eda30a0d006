"""What every benchmark shares: the run context (testbed of real sshd hosts, scratch space, mode),
timing helpers and the `Result` record.

Each benchmark module has ``run(ctx) -> list[Result]``. A `Result` compares reprobook with the plain
tool measured in the same run on the same hosts, and says whether the target is met.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Mapping

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # tests/support is a namespace package found from the project root
    sys.path.insert(0, str(ROOT))

MIB = 1 << 20
GIB = 1 << 30


def default_mirror() -> Path:
    """The authors' outputs: ``REPROBOOK_ARTIFACT_MIRROR``, else ``../shared/artifacts`` beside the project."""
    env = os.environ.get("REPROBOOK_ARTIFACT_MIRROR")
    return Path(env) if env else ROOT.parent / "shared" / "artifacts"


# --------------------------------------------------------------------------- results


@dataclass
class Result:
    """One measured comparison.

    ``figures`` is the measurement in words (``reprobook 3.1 s (330 MiB/s), rsync 2.8 s``);
    ``comparison`` the ratio in words (``90% of rsync``); ``target`` the goal in the same terms
    (``>= 80%``). ``passed`` is ``None`` for a figure given for information only.
    """

    bench: str
    name: str
    figures: str
    value: float | None = None
    unit: str = ""
    plain_tool: str | None = None
    plain_value: float | None = None
    ratio: float | None = None
    comparison: str = ""
    target: str = ""
    passed: bool | None = None
    notes: list[str] = field(default_factory=list)
    samples: dict = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        if self.passed is None:
            return "info"
        return "PASS" if self.passed else "MISS"

    def line(self) -> str:
        out = f"{self.name}: {self.figures}"
        if self.comparison:
            out += f" -> {self.comparison}"
        if self.target:
            out += f" (target {self.target}): {self.verdict}"
        elif self.passed is not None:
            out += f": {self.verdict}"
        return out

    def as_dict(self) -> dict:
        d = asdict(self)
        d["verdict"] = self.verdict
        return d


def error_result(bench: str, exc: BaseException) -> Result:
    return Result(bench, f"{bench} (did not complete)", f"{type(exc).__name__}: {exc}", passed=False,
                  notes=["the benchmark raised; see the traceback above"])


# --------------------------------------------------------------------------- timing


@dataclass(frozen=True)
class Samples:
    """Repeated measurements (seconds unless said otherwise); the median is the figure reported."""

    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def min(self) -> float:
        return min(self.values)

    @property
    def max(self) -> float:
        return max(self.values)

    def as_dict(self) -> dict:
        return {"median": self.median, "min": self.min, "max": self.max, "n": len(self.values),
                "values": list(self.values)}


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def interleaved(contenders: Mapping[str, Callable[[], object]], repeats: int, *,
                setup: Callable[[str], None] | None = None, warmup: int = 0,
                log: Callable[[str], None] | None = None) -> dict[str, Samples]:
    """Time each contender ``repeats`` times, taking turns (a, b, a, b, ...), so that a drift of the
    machine during the run affects them alike. ``setup(name)`` runs untimed before each call."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for i in range(warmup + repeats):
        for name, fn in contenders.items():
            if setup:
                setup(name)
            took, _ = timed(fn)
            if i >= warmup:
                times[name].append(took)
        if log and i >= warmup:
            log(f"repetition {i - warmup + 1}/{repeats}: "
                + ", ".join(f"{n} {t[-1]:.3f} s" for n, t in times.items()))
    return {name: Samples(tuple(v)) for name, v in times.items()}


def machine_busy_s() -> float:
    """Core-seconds the whole machine has spent busy since boot (every process, from /proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


@dataclass
class CpuMeter:
    """CPU used during a block: by this process (all threads) and by the whole machine."""

    process_s: float = 0.0
    machine_s: float = 0.0
    wall_s: float = 0.0

    @contextlib.contextmanager
    def measure(self) -> Iterator["CpuMeter"]:
        p0, m0, w0 = time.process_time(), machine_busy_s(), time.perf_counter()
        try:
            yield self
        finally:
            self.process_s += time.process_time() - p0
            self.machine_s += machine_busy_s() - m0
            self.wall_s += time.perf_counter() - w0


def fmt_s(seconds: float) -> str:
    if seconds < 0.1:
        return f"{seconds * 1000:.1f} ms"
    if seconds < 10:
        return f"{seconds:.2f} s"
    return f"{seconds:.1f} s"


def fmt_size(nbytes: int) -> str:
    if nbytes >= GIB and nbytes % GIB == 0:
        return f"{nbytes // GIB} GiB"
    if nbytes >= MIB:
        return f"{nbytes / MIB:g} MiB"
    return f"{nbytes / 1024:.1f} KiB"


@contextlib.contextmanager
def _patched(owner, attr: str, make_wrapper) -> Iterator[None]:
    """Replace ``owner.attr`` by ``make_wrapper(original)`` inside the block; a missing name is left alone."""
    original = getattr(owner, attr, None)
    if original is None:
        yield
        return
    setattr(owner, attr, make_wrapper(original))
    try:
        yield
    finally:
        setattr(owner, attr, original)


class Phases:
    """Exclusive wall time spent inside chosen functions, found by wrapping them for a while.

    >>> ph = Phases()                                          # doctest: +SKIP
    >>> with ph.wrap(SshHost, "_open", "connect"): perform(...)  # doctest: +SKIP

    Nested wrapped calls are subtracted from their caller, so the phases add up to at most the total.
    A name the library no longer has is skipped: the breakdown loses a line, the benchmark still runs.
    """

    def __init__(self):
        self.totals: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.counts: dict[str, int] = {}
        self._stack: list[list[float]] = []

    def wrap(self, owner, attr: str, label: str) -> contextlib.AbstractContextManager[None]:
        """Time the calls of ``owner.attr`` under ``label``, less the wrapped calls nested in them."""
        phases = self

        def timing(original):
            def wrapper(*args, **kwargs):
                phases._stack.append([0.0])
                t0 = time.perf_counter()
                try:
                    return original(*args, **kwargs)
                finally:
                    took = time.perf_counter() - t0
                    inner = phases._stack.pop()[0]
                    phases.totals[label] = phases.totals.get(label, 0.0) + took - inner
                    phases.calls[label] = phases.calls.get(label, 0) + 1
                    if phases._stack:
                        phases._stack[-1][0] += took
            return wrapper

        return _patched(owner, attr, timing)

    def count(self, owner, attr: str, label: str) -> contextlib.AbstractContextManager[None]:
        """Only count the calls of ``owner.attr`` (under ``label``), leaving its time to its callers."""
        phases = self

        def counting(original):
            def wrapper(*args, **kwargs):
                phases.counts[label] = phases.counts.get(label, 0) + 1
                return original(*args, **kwargs)
            return wrapper

        return _patched(owner, attr, counting)

    def reset(self) -> None:
        self.totals.clear()
        self.calls.clear()
        self.counts.clear()


# --------------------------------------------------------------------------- context


class Context:
    """One run of the suite: options, scratch directory, and a testbed of real sshd hosts on loopback.

    Hosts ``node1`` .. ``node9`` listen on 127.0.0.2 .. 127.0.0.10, each its own sshd, reached through
    one throwaway client key and ``ssh_config`` (``ssh -F cfg nodeN``), each with its own workdir.
    """

    def __init__(self, *, quick: bool = False, full: bool = False, repeats: int | None = None,
                 keep: bool = False, mirror: Path | None = None):
        self.quick, self.full, self.keep = quick, full, keep
        self.repeats_override = repeats
        self.mirror = Path(mirror) if mirror else default_mirror()
        self.tmp = Path(tempfile.mkdtemp(prefix="reprobook-bench-"))
        self._bed = None
        self._env_saved: dict[str, str | None] = {}
        self.bench = "suite"

    @property
    def mode(self) -> str:
        return "quick" if self.quick else ("full" if self.full else "default")

    def repeats(self, default: int, quick: int) -> int:
        if self.repeats_override:
            return self.repeats_override
        return quick if self.quick else default

    def log(self, message: str) -> None:
        print(f"  [{self.bench}] {message}", flush=True)

    # -- testbed

    @property
    def bed(self):
        if self._bed is None:
            from tests.support.sshd import SshTestbed
            self._bed = SshTestbed(self.tmp / "ssh")
            self._setenv("REPROBOOK_SSH_CONFIG", str(self._bed.ssh_config_path))
            self._setenv("REPROBOOK_HOSTS", None)
        return self._bed

    @property
    def ssh_config(self) -> Path:
        return self.bed.ssh_config_path

    def node(self, i: int, *, startup_files: bool = True) -> str:
        """The alias of host ``node<i>`` (127.0.0.<i+1>), its sshd started on first use.

        Its login shell reads this user's startup files, as sshd always has it. With
        ``startup_files=False`` the host is ``lean<i>`` (127.0.0.<i+21>), whose sshd hands sessions
        ``SHLVL=1`` so that bash skips ``~/.bashrc`` for remote commands: what a stock Debian or
        Ubuntu ``~/.bashrc`` (which returns at once when not interactive) costs on a testbed node.
        """
        alias = f"node{i}" if startup_files else f"lean{i}"
        if alias not in self.bed.servers:
            self.bed.add_host(alias, f"127.0.0.{i + 1 if startup_files else i + 21}",
                              extra_config=() if startup_files else ["SetEnv SHLVL=1"])
            self.workdir(alias).mkdir(parents=True, exist_ok=True)
        return alias

    def workdir(self, alias: str) -> Path:
        """The host's workdir (the hosts are this machine, so it is a local path too)."""
        return self.tmp / "remote" / alias

    def host_spec(self, alias: str):
        from reprobook.core.config import HostSpec
        return HostSpec(name=alias, ssh=alias, workdir=str(self.workdir(alias)))

    def ssh_host(self, alias: str):
        """A fresh, not yet connected `reprobook.remote.hosts.SshHost` for ``alias``."""
        from reprobook.remote.hosts import SshHost
        return SshHost(self.host_spec(alias), ssh_config=self.ssh_config)

    def ssh_argv(self, alias: str) -> list[str]:
        return ["ssh", "-F", str(self.ssh_config), alias]

    def accepted_logins(self, alias: str) -> int:
        """SSH logins sshd accepted so far on ``alias`` (``Accepted publickey`` lines in its log)."""
        return self.bed.servers[alias].log_text().count("Accepted publickey")

    def testbed_cpu_s(self, settle_s: float = 0.1) -> float:
        """CPU core-seconds used so far by the testbed's hosts: each listening sshd, and every session and
        remote command it has reaped (a session counts once its connection has closed)."""
        time.sleep(settle_s)  # let the listeners reap sessions that just ended
        tick = os.sysconf("SC_CLK_TCK")
        total = 0.0
        for server in self.bed.servers.values():
            if server.pid is None:
                continue
            with open(f"/proc/{server.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
        return total

    # -- projects

    def write_project(self, name: str, hosts: list[str], paper: dict) -> Path:
        """A minimal project root: hosts.yaml for ``hosts`` (ssh alias = name), one paper, a run store."""
        root = self.tmp / "projects" / name
        (root / "configs" / "papers").mkdir(parents=True, exist_ok=True)
        (root / "_config.yml").write_text("title: reprobook benchmark project\n")
        hosts_yaml = {"hosts": {h: {"ssh": h, "workdir": str(self.workdir(h))} for h in hosts}}
        (root / "configs" / "hosts.yaml").write_text(yaml.safe_dump(hosts_yaml))
        (root / "configs" / "reprobook.yaml").write_text(yaml.safe_dump({"runs_dir": str(root / "runs")}))
        paper_file = root / "configs" / "papers" / f"{paper['paper']['id']}.yaml"
        paper_file.write_text(yaml.safe_dump(paper, sort_keys=False))
        return root

    # -- environment

    def _setenv(self, key: str, value: str | None) -> None:
        if key not in self._env_saved:
            self._env_saved[key] = os.environ.get(key)
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value

    @contextlib.contextmanager
    def env(self, **values: str | None) -> Iterator[None]:
        saved = {k: os.environ.get(k) for k in values}
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def close(self) -> None:
        try:
            if self._bed is not None:
                self._bed.close()
        finally:
            for k, v in self._env_saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            if self.keep:
                print(f"scratch directory kept: {self.tmp}")
            else:
                shutil.rmtree(self.tmp, ignore_errors=True)


def library_fingerprint() -> str:
    """A hash of lib/ (to notice when someone edits it while a benchmark runs)."""
    h = hashlib.sha256()
    for p in sorted((ROOT / "lib").rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def run_quiet(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    """Run a plain tool; raise with its stderr if it fails (a failed baseline is not a fast baseline)."""
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, **kwargs)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:6])} ... exited {p.returncode}: {p.stderr.strip()[-500:]}")
    return p


def interpreter_start(code: str, repeats: int) -> Samples:
    """Wall time of ``python -c code`` in a fresh interpreter of this venv."""
    times = []
    for _ in range(repeats):
        took, _ = timed(lambda: run_quiet([sys.executable, "-c", code], cwd=ROOT))
        times.append(took)
    return Samples(tuple(times))
