#!/usr/bin/env bash
# Install the system programs the tests need, with apt, only when some are missing.
#
#   install-system-deps.sh        everything `make test` needs (below)
#   install-system-deps.sh unit   only what `make test-fast` needs: the programs the unit tests run beyond a
#                                 Debian base system (git, ShellCheck); bash, tar, perl and coreutils are always there
#
# Everything: a real OpenSSH server and client, rsync, Debian's chromium, git and a font,
# libtirpc-dev, which the patched LMBench of the Ozz claim's live test builds against, and what the Aardvark
# rehearsal builds from source with (cmake, g++, GMP, autotools for libsodium, numactl for the guide's pinning),
# and Debian's numpy and gnuplot for the Pequin harness (run_multiple_experiments.py, tested with stand-in binaries),
# ShellCheck, which checks every step script the engine generates, and Debian's PostgreSQL 15, for the real
# Postgres-PB test (a primary and a streaming backup; installed without Debian's default cluster).
# Idempotent: when everything is already there it only makes sure /run/sshd
# exists (sshd refuses to start as root without it; /run is a tmpfs, so it
# vanishes at every boot) and returns at once.
set -euo pipefail

mode=${1:-all}
case "$mode" in
    all|unit) ;;
    *) echo "install-system-deps: unknown set '$mode': give none (everything make test needs) or 'unit'" >&2; exit 2 ;;
esac

if [ "$(id -u)" -eq 0 ]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo -n)
else
    as_root=()
fi

missing=()
if [ "$mode" = unit ]; then
    packages=(git shellcheck)
    for c in git shellcheck; do
        command -v "$c" >/dev/null 2>&1 || missing+=("$c")
    done
    present="git and shellcheck present"
else
    packages=(openssh-server openssh-client rsync chromium git fonts-dejavu-core libtirpc-dev
              cmake g++ make libgmp-dev autoconf automake libtool numactl python3-numpy gnuplot-nox shellcheck
              postgresql-15 openjdk-17-jdk-headless)
    for f in /usr/sbin/sshd /usr/bin/chromium /usr/lib/postgresql/15/bin/pg_ctl; do
        [ -x "$f" ] || missing+=("$f")
    done
    for c in ssh ssh-keygen rsync git cmake g++ make autoconf automake libtoolize numactl gnuplot shellcheck javac; do
        command -v "$c" >/dev/null 2>&1 || missing+=("$c")
    done
    [ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || missing+=("DejaVuSans.ttf")
    [ -f /usr/include/tirpc/rpc/rpc.h ] || missing+=("tirpc/rpc/rpc.h")
    [ -f /usr/include/gmp.h ] || [ -f /usr/include/x86_64-linux-gnu/gmp.h ] || missing+=("gmp.h")
    /usr/bin/python3 -c 'import numpy' 2>/dev/null || missing+=("python3-numpy")
    present="sshd, ssh, ssh-keygen, rsync, chromium, git, fonts, libtirpc and GMP headers, build tools, numpy, gnuplot, shellcheck, PostgreSQL 15, JDK 17 present"
fi

if [ "${#missing[@]}" -eq 0 ]; then
    did="nothing to install ($present)"
else
    if [ "$(id -u)" -ne 0 ] && [ "${#as_root[@]}" -eq 0 ]; then
        echo "install-system-deps: missing ${missing[*]}; not root and no sudo, cannot install ${packages[*]}" >&2
        exit 1
    fi
    if [ "$mode" = all ]; then
        # no cluster of Debian's own: the tests make theirs in their directories
        "${as_root[@]}" mkdir -p /etc/postgresql-common/createcluster.d
        echo "create_main_cluster = false" | "${as_root[@]}" tee /etc/postgresql-common/createcluster.d/reprobook.conf >/dev/null
    fi
    # another apt-get (another job on the machine) may hold dpkg's lock: wait for it, as the engine's steps do
    "${as_root[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
    did="installed ${packages[*]} (missing were: ${missing[*]})"
fi

# Only a root sshd needs the privilege separation directory.
if [ "$mode" = all ] && [ ! -d /run/sshd ] && { [ "$(id -u)" -eq 0 ] || [ "${#as_root[@]}" -gt 0 ]; }; then
    "${as_root[@]}" mkdir -p -m 0755 /run/sshd
    did="$did; created /run/sshd"
fi

echo "install-system-deps: $did"
