"""The job's package helper ``rb_apt_missing`` (`reprobook.remote.steps`): which of the packages dpkg does not have
fully installed, asked of dpkg-query once for all of them (a step's forty packages one by one took half a second on
every host, at every run), with a stand-in dpkg-query that records its calls."""

from __future__ import annotations

import subprocess

from reprobook.remote.steps import _HELPERS

STUB = r"""#!/bin/bash
echo "$*" >> "$CALLS"
fmt=''; pkgs=(); rc=0
while [ $# -gt 0 ]; do case "$1" in -f) fmt=$2; shift ;; -*) ;; *) pkgs+=("$1") ;; esac; shift; done
for p in "${pkgs[@]}"; do
  case "$p" in
    gcc|make|libfoo:amd64) st=installed ;;
    half) st=half-installed ;;
    *) echo "dpkg-query: no packages found matching $p" >&2; rc=1; continue ;;
  esac
  out=${fmt//'${Package}'/${p%%:*}}; printf '%b' "${out//'${db:Status-Status}'/$st}"
done
exit $rc
"""


def _missing(tmp_path, *packages: str) -> tuple[list[str], list[str]]:
    (tmp_path / "dpkg-query").write_text(STUB)
    (tmp_path / "dpkg-query").chmod(0o755)
    calls = tmp_path / "calls"
    calls.write_text("")
    script = f"set -euo pipefail\n{_HELPERS}\nrb_apt_missing \"$@\"\n"
    out = subprocess.run(["bash", "-c", script, "t", *packages], capture_output=True, text=True, check=True,
                         env={"PATH": f"{tmp_path}:/usr/bin:/bin", "CALLS": str(calls)})
    return out.stdout.split(), calls.read_text().splitlines()


def test_the_packages_missing_are_those_not_fully_installed_asked_in_one_call(tmp_path):
    missing, calls = _missing(tmp_path, "gcc", "unknown-pkg", "make", "half", "gc")
    assert missing == ["unknown-pkg", "half", "gc"]   # in the order asked; a name's prefix is not the package
    assert len(calls) == 1 and calls[0].endswith("gcc unknown-pkg make half gc"), calls


def test_a_name_with_an_architecture_is_asked_alone_and_none_asks_nothing(tmp_path):
    missing, calls = _missing(tmp_path, "libfoo:amd64", "libbar:i386", "make")
    assert missing == ["libbar:i386"] and len(calls) == 3, calls
    assert _missing(tmp_path) == ([], [])
