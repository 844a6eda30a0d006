"""Steps: the job script of a live run, built so that a run can be resumed at the step that failed.

A live run is one detached job (see `reprobook.remote.jobs`) whose script checks out
the paper's repositories at their pinned commits and then runs the claim's
setup and run steps in order. Each step records its completion on the host,
in ``<run dir>/steps/<n>.done``, with a hash of the step's text. When a run
is launched again after it failed (same claim, host and parameters: the same
run id), the script skips every step already done with the same text, says
so in the log, and starts again at the first step that is not; once one step
runs, every later step runs too. Different parameters make a different run
id, and so start from scratch.

Parameters reach the steps as environment variables ``RB_<NAME>``, each value
quoted; the step commands in the paper file read them from there.

A step marked ``where: guest`` runs on the claim's *guest*: a virtual machine the host
boots, or any machine only the host can reach (QEMU's forwarded SSH port, for
instance). The host's job runs it over SSH, so the whole run stays one detached job on
the host, and the client may come and go. The guest is named by the claim's
parameters ``guest_port`` (required), ``guest_host`` (default ``localhost``),
``guest_user`` (default ``root``) and ``guest_key`` (a private key on the host; ``~/``
and paths relative to the host's workdir are allowed). The step's commands reach the
guest as they are, with the parameters exported as on the host; its ``cwd`` is a
directory on the guest (default: the guest user's home). Host steps can call
``rb_guest COMMAND...`` to run a command there too (to upload or copy back files with
``tar``), so that fetching the outputs stays a matter of the host. The guest's host key
is trusted on first use and kept in the run's directory (``guest_known_hosts``): a VM
image's key is the image's own, and it is the host, not the client, that connects. A host step
that boots a guest calls ``rb_guest_watchdog PID`` with its QEMU's pid: once the job's shell is
gone, however the job ended (done, failed, cancelled), the watchdog stops that process, so no
guest outlives its run.

A step with a ``role`` runs on every host of that role of the run's placement (see
`reprobook.remote.placement`) at once, each line of its output prefixed with the host's name;
the control host runs its share itself, the others are reached over SSH from the
control host by their names in ``hosts.yaml``, with the control host's own SSH
configuration (``RB_SSH_CONFIG`` in the host's ``env`` names another file) and its own
known hosts: the job never accepts a key it does not know. The step fails if it fails
on any host, and the log says on which.

A ``sweep`` step runs once per point of the claim's sweep: the product of its
list-valued parameters, in declaration order (``system × workload × clients``). Each
point sees its own values in ``RB_<NAME>`` (other steps see the whole list,
space-separated), tees its output to ``points/<step>-<point>.log`` and records its
completion on its own: a sweep cut in the middle resumes at the first unfinished
point and keeps what finished.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shlex
from typing import Any, Mapping, Sequence

from reprobook.core.config import Claim, HostSpec, Paper, Repository, Step
from reprobook.core.plan import RunPlan
from reprobook.core.requirements import Kvm
from reprobook.errors import ConfigError

STEP_MARKER = "### reprobook step"
"""The prefix of the log line that starts each step (`reprobook.remote.jobs` reads the last one as the current step)."""


_HELPERS = r"""
rb_where() { echo "${RB_HOST:-$(hostname)}"; }
rb_as_root() {  # command...: run it as root (this user is root, or has passwordless sudo)
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi
}
rb_need_root() {  # what how: go on when this user can act as root; else stop, naming the host, what and what to do
  if [ "$(id -u)" = 0 ] || sudo -n true 2>/dev/null; then return 0; fi
  echo "reprobook: on host $(rb_where), $1 needs root, and the user $(id -un) is neither root nor allowed" \
       "passwordless sudo ('sudo -n true' fails). $2, or give $(id -un) passwordless sudo on $(rb_where)," \
       "then start the run again (--resume picks it up at this step)." >&2
  exit 4
}
rb_apt_missing() {  # package...: those of them dpkg does not have fully installed (unknown ones included), one a line
  local p st have
  [ $# -gt 0 ] || return 0
  # one dpkg-query for them all (forty asked one by one took half a second); a name with an architecture alone
  have=$(dpkg-query -W -f '${db:Status-Status} ${Package}\n' "$@" 2>/dev/null | awk '$1 == "installed" {print $2}') || true
  for p in "$@"; do
    case "$p" in
      *:*) st=$(dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null) || st=""
           [ "$st" = installed ] || printf '%s\n' "$p" ;;
      *) case $'\n'"$have"$'\n' in *$'\n'"$p"$'\n'*) ;; *) printf '%s\n' "$p" ;; esac ;;
    esac
  done
}
rb_apt_install() {  # package...: install with apt-get those not installed, saying which; a clear stop when it cannot
  local missing log unknown release rc=0
  missing=$(rb_apt_missing "$@" | tr '\n' ' '); missing=${missing% }
  if [ -z "$missing" ]; then echo "Debian packages: all $# installed already"; return 0; fi
  echo "Debian packages to install on $(rb_where): $missing"
  rb_need_root "installing the Debian packages $missing" "Install them yourself (sudo apt-get install $missing)"
  log=$(mktemp "${TMPDIR:-/tmp}/reprobook-apt.XXXXXX")
  # an install cut off half way (apt killed, the host rebooted) leaves dpkg waiting to be finished first
  rb_as_root env DEBIAN_FRONTEND=noninteractive dpkg --configure -a >> "$log" 2>&1 || true
  # a fresh cloud node often runs unattended-upgrades at boot: wait for apt's lock rather than fail on it
  rb_as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq >> "$log" 2>&1 || rc=$?
  if [ "$rc" = 0 ]; then
    # shellcheck disable=SC2086  # one word per package
    rb_as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
      --no-install-recommends $missing >> "$log" 2>&1 || rc=$?
  fi
  if [ "$rc" != 0 ]; then
    tail -n 20 "$log" >&2
    unknown=$(sed -n -e "s/^E: Unable to locate package \(.*\)$/\1/p" \
                     -e "s/^E: Package '\([^']*\)' has no installation candidate$/\1/p" "$log" | tr '\n' ' ')
    release=$( (. /etc/os-release && echo "$PRETTY_NAME") 2>/dev/null || echo "this release")
    if [ -n "$unknown" ]; then
      echo "reprobook: on host $(rb_where), apt-get has no package ${unknown% } in $release (renamed or dropped in" \
           "this release?): install an equivalent by hand, or change the step's package list in the paper file," \
           "then start the run again." >&2
    else
      echo "reprobook: on host $(rb_where), apt-get could not install $missing (exit $rc; its last lines are above:" \
           "no network, a broken source list, or a full disk?). Fix that and start the run again." >&2
    fi
    rm -f "$log"; exit 1
  fi
  rm -f "$log"
  missing=$(rb_apt_missing "$@" | tr '\n' ' '); missing=${missing% }
  if [ -n "$missing" ]; then
    echo "reprobook: on host $(rb_where), apt-get ended well but $missing are still not installed" >&2; exit 1
  fi
  echo "Debian packages installed on $(rb_where): $*"
}
"""
"""Shell functions every step can call, on the run's host, on the hosts of a role and on a guest: ``rb_as_root
COMMAND...``, ``rb_need_root WHAT HOW`` (a stop that names the host, what needs root and what to do) and
``rb_apt_install PACKAGE...`` (installs those dpkg does not have, saying which; a host without root or passwordless
sudo, a package apt does not know, or a failing apt-get stop with a message naming the host and the packages)."""

_PRELUDE = r"""
rb_force=0
mkdir -p "$RB_RUN_DIR/steps"
# a directory for SSH control sockets the job's steps share: a step whose ssh names ControlPath=$RB_SSH_CM/%C uses
# the connection an earlier step opened to that host (and the job ends the masters left open)
RB_SSH_CM=$(mktemp -d /tmp/rb-ssh.XXXXXX) && export RB_SSH_CM
declare -A rb_cm_pid=()
trap 'for rb_s in "$RB_SSH_CM"/*; do [ -S "$rb_s" ] && ssh -F /dev/null -o ControlPath="$rb_s" -O exit rb-job >/dev/null 2>&1; done; [ ${#rb_cm_pid[@]} = 0 ] || kill "${rb_cm_pid[@]}" 2>/dev/null || true; rm -rf "$RB_SSH_CM"' EXIT
# the placement's other hosts: a connection to each is opened now, in the background, while the first steps run
# (a checkout, patches); the steps that reach them (rb_on, a step's own ssh naming that ControlPath, an artifact's
# harness through its wrappers) find it open rather than each connecting. A master that finds the socket taken
# (a step's ssh was first) carries nothing: the job ends it, as it ends every master, by its pid
rb_open_masters() {
  local v h
  for v in ${!RB_HOSTS_@}; do
    for h in ${!v}; do
      [ "$h" != "${RB_CONTROL_HOST:-}" ] && [ -z "${rb_cm_pid[$h]:-}" ] || continue
      ssh ${RB_SSH_CONFIG:+-F "$RB_SSH_CONFIG"} -N -o BatchMode=yes -o ConnectTimeout=20 -o ServerAliveInterval=30 \
          -o ServerAliveCountMax=10 -o ControlMaster=yes -o ControlPersist=no -o "ControlPath=$RB_SSH_CM/%C" \
          -- "$h" < /dev/null > /dev/null 2>&1 &
      rb_cm_pid[$h]=$!
    done
  done
}
rb_open_masters
rb_master() {  # host: while the job's connection to it is being opened (up to 20 s), wait for it
  local pid=${rb_cm_pid[$1]:-} i=0
  [ -n "$pid" ] || return 0
  while [ "$i" -lt 400 ] && kill -0 "$pid" 2>/dev/null; do
    ssh ${RB_SSH_CONFIG:+-F "$RB_SSH_CONFIG"} -o "ControlPath=$RB_SSH_CM/%C" -O check -- "$1" > /dev/null 2>&1 && return 0
    sleep 0.05; i=$((i + 1))
  done
  return 0
}
rb_done_as() {  # index hash: whether the step finished in an earlier attempt with this hash (bash's own read: no process)
  local rb_d=""
  { IFS= read -r rb_d < "$RB_RUN_DIR/steps/$1.done"; } 2>/dev/null || true
  [ "$rb_d" = "$2" ]
}
rb_begin() {  # index total name hash: 0 = run this step, 1 = skip it (done in an earlier attempt)
  if [ "$rb_force" = 0 ] && rb_done_as "$1" "$4"; then
    echo "### reprobook step $1/$2: $3 [skipped: done in an earlier attempt]"
    return 1
  fi
  rb_force=1
  rm -f "$RB_RUN_DIR/steps/$1.done" "$RB_RUN_DIR/steps/$1.secs"
  echo "### reprobook step $1/$2: $3"
  printf -v rb_t0 '%(%s)T' -1
  return 0
}
rb_end() {  # index hash
  local secs now; printf -v now '%(%s)T' -1; secs=$(( now - rb_t0 ))
  printf '%s\n' "$secs" > "$RB_RUN_DIR/steps/$1.secs"   # a sweep point's time: the progress line's estimate
  printf '%s\n' "$2" > "$RB_RUN_DIR/steps/$1.done"
  echo "### reprobook: step $1 done in $secs s"
}
rb_state() {  # in|out path...: one line a path, as a step's inputs or products are compared from run to run: a git
              # work tree (an input) its commit and its tracked files' changes, a file its content (an input of at most
              # 1 MiB) or its size and time, a directory its files' sizes and times; status 1 when a product is missing
  local how=$1 p top rc=0; shift
  # not the paths themselves: one may name the run's own directory ($RB_INPUTS), and the key has their text
  for p in "$@"; do
    if [ "$how" = in ] && [ -d "$p" ] && top=$(git -C "$p" rev-parse --show-toplevel 2>/dev/null) \
       && [ "$(cd "$p" && pwd -P)" = "$(cd "$top" && pwd -P)" ]; then
      printf 'git %s ' "$(git -C "$p" rev-parse HEAD 2>/dev/null)"
      git -C "$p" diff HEAD --submodule=diff --binary --no-ext-diff --no-textconv 2>/dev/null | sha256sum
    elif [ -d "$p" ]; then
      printf 'dir '; find "$p" -printf '%P %y %s %T@\n' 2>/dev/null | LC_ALL=C sort | sha256sum
    elif [ -f "$p" ] && [ "$how" = in ] && [ "$(stat -c %s -- "$p")" -le 1048576 ]; then
      printf 'file '; sha256sum < "$p"
    elif [ -e "$p" ]; then
      printf 'file %s\n' "$(find "$p" -maxdepth 0 -printf '%s %T@')"
    else
      echo missing; [ "$how" = in ] || rc=1
    fi
  done
  return "$rc"
}
rb_env() {  # name...: each variable as the step reads it
  local n
  for n in "$@"; do printf '%s=%s\n' "$n" "${!n-(unset)}"; done
}
rb_begin_u() {  # index total name hash stamp: rb_begin, or 1 (skip it) when the step's inputs and products ($rb_u_in,
                # $rb_u_out) are those its last successful run on this host left (its stamp), unless RB_FRESH=1
  local st=""
  if [ "$rb_force" = 0 ] && rb_done_as "$1" "$4"; then
    rb_begin "$@"; return
  fi
  if [ "${RB_FRESH:-0}" != 1 ] && [ -n "$rb_u_in" ] && [ -n "$rb_u_out" ]; then
    st=$(cat "$RB_WORKDIR/.reprobook/unchanged/$5" 2>/dev/null) || st=""
    if [ "${st% *}" = "$rb_u_in $rb_u_out" ]; then
      echo "### reprobook step $1/$2: $3 [unchanged since run ${st##* }: skipped]"
      printf '%s\n' "$4" > "$RB_RUN_DIR/steps/$1.done"
      return 1
    fi
  fi
  rm -f "$RB_WORKDIR/.reprobook/unchanged/$5"   # a run that fails or is cut off leaves no stamp
  rb_begin "$@"
}
rb_stamp() {  # stamp: after a successful run, what the next run compares with (not when the inputs changed while it ran)
  if [ -z "$rb_u_out" ]; then
    echo "reprobook: not all of this step's products are there after it ran: the next run runs it again"
  elif [ -n "$rb_u_in" ] && [ "$rb_u_now" = "$rb_u_in" ]; then
    mkdir -p "$RB_WORKDIR/.reprobook/unchanged"
    printf '%s %s %s\n' "$rb_u_in" "$rb_u_out" "${RB_RUN_DIR##*/}" > "$RB_WORKDIR/.reprobook/unchanged/$1.tmp"
    mv -f "$RB_WORKDIR/.reprobook/unchanged/$1.tmp" "$RB_WORKDIR/.reprobook/unchanged/$1"
  else
    echo "reprobook: this step's inputs changed while it ran: the next run runs it again"
  fi
}
rb_checkout() {  # url commit dir [excluded path pattern...]
  # already there: a whole checkout whose HEAD is the commit (detached, as this leaves it), its submodules at theirs
  local rb_head="" rb_subs_now=""
  if [ $# = 3 ] && [ -f "$3/.git/HEAD" ] && { read -r rb_head < "$3/.git/HEAD"; } 2>/dev/null && [ "$rb_head" = "$2" ] \
     && [ -z "$(git -C "$3" config --get-regexp '^(core\.sparsecheckout|submodule\.active)$' | grep -v '^core\.sparsecheckout false$')" ] \
     && rb_subs_now=$(rb_submodules "$3" 2>/dev/null) && ! grep -q '^[-+U]' <<< "$rb_subs_now"; then
    rb_missing_files "$1" "$2" "$3"
    rb_checked_out "$3" "$2" "$rb_subs_now"
    return
  fi
  if [ ! -d "$3/.git" ]; then git clone -q --no-checkout -- "$1" "$3"; fi  # after "--": a URL is never an option
  git -C "$3" cat-file -e "$2^{commit}" 2>/dev/null || git -C "$3" fetch -q -- origin "$2" 2>/dev/null || git -C "$3" fetch -q -- origin
  git -C "$3" config --unset-all submodule.active 2>/dev/null || true
  if [ $# -gt 3 ]; then  # a sparse checkout: everything but the excluded paths (their blobs may be absent)
    local rb_patterns=('/*') rb_p
    for rb_p in "${@:4}"; do
      rb_patterns+=("!/$rb_p")
      # a submodule under an excluded path is neither cloned nor checked out (its repository may be out of reach)
      git -C "$3" config --add submodule.active ":(exclude)$rb_p"
    done
    git -C "$3" sparse-checkout set --no-cone "${rb_patterns[@]}"
  elif [ "$(git -C "$3" config --get core.sparseCheckout 2>/dev/null)" = true ]; then
    git -C "$3" sparse-checkout disable   # a checkout an earlier run made sparse (another scale's) is whole again
  fi
  git -C "$3" checkout -q --detach "$2" 2> >(grep -v "^error: invalid object .* for '" >&2)
  if [ $# -gt 3 ]; then  # only the submodules the sparse checkout keeps: an excluded one is not cloned
    rb_missing_files "$1" "$2" "$3"
    local rb_subs=()
    mapfile -t rb_subs < <(git -C "$3" ls-files -s -t | sed -n 's/^H 160000 [0-9a-f]* [0-9]*\t//p')
    if [ ${#rb_subs[@]} -gt 0 ]; then git -C "$3" submodule update -q --init --recursive -- "${rb_subs[@]}"; fi
  else
    rb_missing_files "$1" "$2" "$3"
    if [ -f "$3/.gitmodules" ]; then git -C "$3" submodule update -q --init --recursive; fi
  fi
  rb_checked_out "$3" "$(git -C "$3" rev-parse HEAD)" "$(rb_submodules "$3")"
}
rb_submodules() {  # dir: git submodule status --recursive (nothing to ask git when there is no .gitmodules)
  if [ -f "$1/.gitmodules" ]; then git -C "$1" submodule status --recursive; fi
}
rb_missing_files() {  # url commit dir: stop when the checkout lacks files (git checks out a tree whose blobs it cannot
                      # read and still exits 0)
  local rb_missing
  rb_missing=$(git -C "$3" ls-files --deleted | head -n 5)
  if [ -n "$rb_missing" ]; then
    echo "reprobook: the checkout of $1 at $2 lacks files git could not read (objects missing from the" \
         "repository or mirror?): $(echo $rb_missing). If the experiment never uses them, list them under the" \
         "repository's 'exclude' in the paper file." >&2
    exit 3
  fi
}
rb_checked_out() {  # dir commit submodule-status: what the run uses, into checkout.txt
  local sha path rest
  echo "$1 $2" >> "$RB_RUN_DIR/checkout.txt"
  while read -r sha path rest; do
    case "$sha" in ""|-*) continue ;; esac  # not initialised: left out of a sparse checkout
    echo "$1/$path ${sha#[-+U ]}" >> "$RB_RUN_DIR/checkout.txt"
  done <<< "$3"
}
rb_guest_watchdog() {  # pid: stop that process (a guest's QEMU) once this job's shell is gone, however the job ended
  local comm i
  # the name it runs under: a process just started with `setsid prog ... &` is still the job's shell, then setsid, for
  # a moment before it becomes prog (on a busy host a watchdog that took that name stopped watching at once)
  for i in $(seq 100); do
    comm=$(cat "/proc/$1/comm" 2>/dev/null) || return 0
    case "$comm" in bash|sh|setsid) sleep 0.1 ;; *) break ;; esac
  done
  # in a session of its own, so that a stop of the job's process group does not take it along; it stops only a
  # process of the same name, never another that took the pid over
  # shellcheck disable=SC2016  # expanded by the watchdog's own shell
  setsid bash -c 'alive() { [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ]; }
    while kill -0 "$3" 2>/dev/null && alive "$1" "$2"; do sleep "$4"; done
    if alive "$1" "$2"; then kill "$1"; sleep 10; if alive "$1" "$2"; then kill -9 "$1"; fi; fi' \
    rb-guest-watchdog "$1" "$comm" "$$" "${RB_WATCHDOG_S:-5}" < /dev/null > /dev/null 2>&1 &
}
rb_guest() {  # command...: run it on the claim's guest (parameters guest_host, guest_port, guest_user, guest_key)
  local key=${RB_GUEST_KEY:-} rc=0
  case "$key" in "") ;; "~/"*) key="$HOME/${key#\~/}" ;; /*) ;; *) key="$RB_WORKDIR/$key" ;; esac
  ssh -F /dev/null -o BatchMode=yes -o ConnectTimeout=20 -o ServerAliveInterval=30 -o ServerAliveCountMax=10 \
      -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile="$RB_RUN_DIR/guest_known_hosts" \
      -o GlobalKnownHostsFile=/dev/null -o LogLevel=ERROR ${key:+-o IdentitiesOnly=yes -i "$key"} \
      -p "${RB_GUEST_PORT:?the claim names no guest_port}" -l "${RB_GUEST_USER:-root}" \
      -- "${RB_GUEST_HOST:-localhost}" "$@" || rc=$?
  if [ "$rc" = 255 ]; then
    echo "reprobook: ssh to the guest ${RB_GUEST_USER:-root}@${RB_GUEST_HOST:-localhost}:$RB_GUEST_PORT ended with 255:" \
         "the guest could not be reached (is it up?), or the command there exited 255" >&2
  fi
  return "$rc"
}
rb_on() {  # host script_b64: run a step's script on another host of the placement (the control host's ssh config)
  rb_master "$1"
  ssh ${RB_SSH_CONFIG:+-F "$RB_SSH_CONFIG"} -o BatchMode=yes -o ConnectTimeout=20 -o ServerAliveInterval=30 \
      -o ServerAliveCountMax=10 -o "ControlPath=$RB_SSH_CM/%C" -- "$1" "bash -c \"\$(echo $2 | base64 -d)\" reprobook-step" < /dev/null
}
rb_par_pids=(); rb_par_hosts=()
rb_par() {  # host script_b64: start the script on host (this one runs it itself), its lines prefixed with the host
  if [ "$1" = "$RB_CONTROL_HOST" ]; then
    ( set -o pipefail; bash -c "$(echo "$2" | base64 -d)" reprobook-step < /dev/null 2>&1 | awk -v p="[$1] " '{print p $0; fflush()}' ) &
  else
    ( set -o pipefail; rb_on "$1" "$2" 2>&1 | awk -v p="[$1] " '{print p $0; fflush()}' ) &
  fi
  rb_par_pids+=($!); rb_par_hosts+=("$1")
}
rb_par_wait() {  # wait for every host of the step; fail naming the hosts it failed on
  local i rc failed=""
  for i in "${!rb_par_pids[@]}"; do
    rc=0; wait "${rb_par_pids[$i]}" || rc=$?
    [ "$rc" = 0 ] || failed="$failed ${rb_par_hosts[$i]} (exit $rc)"
  done
  rb_par_pids=(); rb_par_hosts=()
  if [ -n "$failed" ]; then echo "reprobook: the step failed on:$failed" >&2; return 1; fi
}
rb_expect_submodule() {  # dir path commit
  got=$(git -C "$1/$2" rev-parse HEAD)
  if [ "$got" != "$3" ]; then echo "submodule $2 is at $got, expected $3" >&2; exit 3; fi
}
"""


_KVM = ("rb_kvm() {  # prints kvm=usable when this host's KVM can run a standard guest (else kvm=missing, denied or\n"
        "          # paravirtual): the kvm requirement's own probe (reprobook.core.requirements.Kvm)\n"
        + "\n".join("  " + line for line in Kvm.probe.splitlines()) + "\n}\n")
"""The shell function ``rb_kvm`` of every job script: a step that boots a guest with KVM asks it first."""


def packages_function(step: Step) -> str:
    """The shell function ``rb_packages`` of a step with a packages table: it prints the packages of the host's OS
    release (os-release's ``ID`` and ``VERSION_ID``, matched as the ``os`` requirement matches them:
    `reprobook.core.requirements.os_matches`), or stops (exit 3) naming the host, its release and those the table
    knows. ``RB_OS_RELEASE`` names another os-release file (a test host presents a release so). "" for a step
    without a table."""
    if not step.packages:
        return ""
    q = shlex.quote
    lines = ["rb_packages() {  # this step's packages for the host's OS release (its packages table in the paper file)",
             "  local f id='' ver='' pretty=''",
             '  for f in "${RB_OS_RELEASE:-/etc/os-release}" /usr/lib/os-release; do',
             '    if [ -r "$f" ]; then',
             '      eval "$(. "$f"; printf \'id=%q ver=%q pretty=%q\' "${ID:-}" "${VERSION_ID:-}" "${PRETTY_NAME:-}")"',
             "      break",
             "    fi",
             "  done",
             '  id=$(printf %s "$id" | tr \'A-Z\' \'a-z\')']
    for release, names in step.packages:
        family, _, version = release.partition(" ")
        lines.append(f'  if [ "$id" = {q(family.lower())} ]; then case "$ver." in {q(version.lower() + ".")}*) '
                     f"echo {q(' '.join(names))}; return 0 ;; esac; fi")
    known = " or ".join(step.releases)
    lines += [f'  echo "reprobook: on host $(rb_where), this step installs packages for {known} (its packages table in'
              f' the paper file), and the host runs ${{pretty:-an unknown OS}} (ID ${{id:-none}}, VERSION_ID'
              f' ${{ver:-none}}): run it on a host of {known}, or add a row for this release to the step\'s'
              f' packages" >&2',
              "  return 3", "}"]
    return "\n".join(lines) + "\n"


def _text(step: Step) -> str:
    """The step's shell as it runs: its packages function (when it has a table), then its own commands."""
    return packages_function(step) + step.run.rstrip()


def _env_value(val) -> str:
    if isinstance(val, (list, tuple)):
        return " ".join(_env_value(v) for v in val)
    return str(val).lower() if isinstance(val, bool) else str(val)


def param_env(plan: RunPlan) -> dict[str, str]:
    """``RB_<NAME>`` for each of the plan's parameters (resolved: defaults filled in, names and types checked).

    A sweep axis (a list) is its values, space-separated."""
    return {"RB_" + name.upper(): _env_value(val) for name, val in plan.params.items()}


def input_for(point: Mapping[str, Any], input_points: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The one input made for ``point`` (all the parameters its point names have the point's values), or None
    when none is or several are."""
    found = [name for name, made in input_points.items()
             if made and all(k in point and _env_value(point[k]) == _env_value(v) for k, v in made.items())]
    return found[0] if len(found) == 1 else None


def point_words(point: Mapping[str, object]) -> str:
    """``system=pesto clients=10``: a point as the log and the progress show it."""
    return " ".join(f"{k}={_env_value(v)}" for k, v in point.items())


def _checkout_lines(repo: Repository, workdir: str) -> list[str]:
    d = f"{workdir.rstrip('/')}/{repo.checkout}"
    q = shlex.quote
    lines = [" ".join([f"rb_checkout {q(repo.url)} {q(repo.commit)} {q(d)}", *map(q, repo.exclude)])]
    for sub, sha in repo.submodules.items():
        lines.append(f"rb_expect_submodule {q(d)} {q(sub)} {q(sha)}")
    return lines


def step_hash(name: str, cwd: str, body: str) -> str:
    """What identifies a step's work: its name, directory and commands (a changed step runs again)."""
    return hashlib.sha256("\0".join((name, cwd, body)).encode()).hexdigest()[:16]


GUEST_PARAMETERS = ("guest_host", "guest_port", "guest_user", "guest_key")
"""The claim parameters that name its guest (only ``guest_port`` is required)."""


def _guest_body(step: Step, env: Mapping[str, str]) -> str:
    """The host's command for a guest step: its script, with the parameters, run on the guest over SSH.

    The script travels base64-encoded on the SSH command line, so the guest's shell
    receives it byte for byte and its standard input stays free (a step that reads
    stdin gets end-of-file, not the rest of its own script).
    """
    q = shlex.quote
    lines = [f"export {k}={q(v)}" for k, v in env.items()] + ["set -euo pipefail", _HELPERS]
    if step.cwd:
        lines.append(f"cd {q(step.cwd)}")
    script = "\n".join(lines) + "\n" + _text(step) + "\n"
    b64 = base64.b64encode(script.encode()).decode()
    remote = f'bash -c "$(echo {b64} | base64 -d)" reprobook-guest-step'
    return f"rb_guest {q(remote)} < /dev/null"


def step_plan(paper: Paper, claim: Claim) -> list[tuple[str, Step | None]]:
    """The steps of a live run in order: the checkout (``None``), then setup and run steps."""
    repos = paper.repositories_for(claim)
    steps: list[tuple[str, Step | None]] = [("check out " + ", ".join(r.name for r in repos), None)] if repos else []
    return steps + [(s.name, s) for s in claim.setup + claim.run]


_STEP_NUMBER = re.compile(r"(\d+)(?:-\d+)?/(\d+)\b")


def expected_left_s(paper: Paper, plan: RunPlan, step: str, points_done: int = 0,
                    point_s: float | None = None) -> float | None:
    """Seconds a run is expected to need from its current ``step`` on (a job's step line, ``"5/10: …"`` or
    ``"10-2/10: …"``): that step in full (in a sweep, its points not done yet) and every later one, from
    the steps' ``expected_minutes``; ``point_s``, the measured mean time of the points done so far,
    stands for the sweep step's own guess once there is one. None when ``step`` names no step or no
    step says how long it takes.

    The claim's total counts every step as if it ran cold; a run whose first steps were skipped (done in
    an earlier attempt) or fast (a warm build) is expected to end this much after where it is now.
    """
    m = _STEP_NUMBER.match(step or "")
    steps = step_plan(paper, plan.claim)
    if not m or not 1 <= int(m[1]) <= len(steps) or not any(s and s.expected_minutes for _, s in steps):
        return None
    k, points = int(m[1]), len(plan.sweep)
    left = 0.0
    for i, (_, s) in enumerate(steps[k - 1:], k):
        if s is not None and s.sweep and point_s:
            left += point_s * max(points - (points_done if i == k else 0), 1)
        elif s is not None and s.expected_minutes:
            runs = max(points - (points_done if i == k else 0), 1) if s.sweep else 1
            left += s.expected_minutes * 60 * runs
    return left


def _role_body(step: Step, env: Mapping[str, str], hosts: Sequence[HostSpec]) -> str:
    """The control host's command for a step of a role: its script on each of the role's hosts, at once."""
    q = shlex.quote
    lines = []
    for h in hosts:
        cwd = step.cwd if step.cwd.startswith("/") else f"{h.workdir.rstrip('/')}/{step.cwd}".rstrip("/")
        script = "\n".join([f"export {k}={q(v)}" for k, v in {**env, "RB_WORKDIR": h.workdir, "RB_HOST": h.node_name}.items()]
                           + ["set -euo pipefail", _HELPERS, f"mkdir -p {q(h.workdir)}", f"cd {q(cwd)}",
                              _text(step)]) + "\n"
        lines.append(f"rb_par {q(h.node_name)} {base64.b64encode(script.encode()).decode()}")
    return "\n".join(lines + ["rb_par_wait"])


def _own_cwd(step: Step, host: HostSpec) -> str:
    """The directory a step the control host runs itself runs in."""
    return step.cwd if step.cwd.startswith("/") else f"{host.workdir.rstrip('/')}/{step.cwd}".rstrip("/")


def build_script(paper: Paper, run: RunPlan, host: HostSpec, remote_run_dir: str, *,
                 placement=None, members: Mapping[str, HostSpec] | None = None,
                 inputs: Mapping[str, bytes | str] | None = None,
                 input_points: Mapping[str, Mapping[str, Any]] | None = None, fresh: bool | None = None) -> str:
    """The job script: environment, checkouts at the pinned commits, then the setup and run steps, each resumable.

    A step with ``unchanged`` is skipped when its inputs and products are those its last successful run on the
    host left; ``fresh`` (by default: the environment's ``REPROBOOK_FRESH`` is 1) runs every step all the same.

    ``placement`` (a `reprobook.remote.placement.Placement`) gives the hosts of each role, and ``members`` their
    `HostSpec` (for their workdirs); without them, every role is ``host``. ``inputs`` are files made where
    reprobook runs (generated experiment configs): the job writes them into ``$RB_RUN_DIR/inputs/<name>``
    before its first step (``RB_INPUTS`` names the directory); ``input_points`` (name -> the sweep point it is
    made for, `reprobook.core.inputs.RunInput.point`) give a sweep step's point its ``RB_INPUT``, the one input
    made for it. The parameters are ``run.params``: a plan's
    (`reprobook.core.plan.make_plan`), as the hosts adapted them (`RunPlan.using`).
    """
    q = shlex.quote
    claim = run.claim
    from reprobook.remote.placement import Placement
    members = {host.name: host, **(members or {})}
    if placement is None:   # one host plays every role
        placement = Placement({r: (host.name,) for r in (claim.roles or [claim.control_role])}, claim.control_role)
    roles, placement_env = dict(placement.roles), placement.env()
    env = {"RB_RUN_DIR": remote_run_dir, "RB_WORKDIR": host.workdir, "RB_HOST": placement.node(host.name), **placement_env,
           **param_env(run)}
    git_config = [(f"url.{new}.insteadOf", old) for old, new in host.git_url_rewrites.items()]
    if any(new.startswith(("/", "file:")) for new in host.git_url_rewrites.values()):
        # a local mirror: let submodules be cloned from it too (git refuses file:// submodules by default)
        git_config.append(("protocol.file.allow", "always"))
    if git_config:
        env["GIT_CONFIG_COUNT"] = str(len(git_config))
        for i, (key, value) in enumerate(git_config):
            env[f"GIT_CONFIG_KEY_{i}"] = key
            env[f"GIT_CONFIG_VALUE_{i}"] = value
    env["GIT_TERMINAL_PROMPT"] = "0"
    if fresh if fresh is not None else os.environ.get("REPROBOOK_FRESH") == "1":
        env["RB_FRESH"] = "1"
    out = ["#!/bin/bash", f"# reprobook: {claim.key}", "set -euo pipefail"]
    out += [f"export {k}={q(str(v))}" for k, v in env.items()]
    out.append(_HELPERS + _PRELUDE + _KVM)
    out.append('export RB_INPUTS="$RB_RUN_DIR/inputs"')
    for name, data in (inputs or {}).items():
        if not name or name.startswith(("/", ".")) or "/" in name or "\0" in name:
            raise ConfigError(f"an input's name must be a plain file name, not {name!r}")
        raw = data.encode() if isinstance(data, str) else bytes(data)
        out.append(f'mkdir -p "$RB_INPUTS" && echo {base64.b64encode(raw).decode()} | base64 -d > "$RB_INPUTS"/{q(name)}')
    out.append(f"mkdir -p {q(host.workdir)} && cd {q(host.workdir)}")
    steps = step_plan(paper, claim)
    if any(step and step.where == "guest" for _, step in steps) and "guest_port" not in claim.parameters:
        raise ConfigError(f"{claim.key} has steps on a guest but no parameter guest_port to reach it by "
                          f"(the guest is named by the parameters {', '.join(GUEST_PARAMETERS)})")
    guest_env = param_env(run)
    points = run.sweep
    total = len(steps)
    for i, (name, step) in enumerate(steps, 1):
        minutes = f" (expected {step.expected_minutes:g} min)" if step and step.expected_minutes else ""
        sweep = points if step is not None and step.sweep else [None]
        for k, point in enumerate(sweep, 1):
            step_env = dict(guest_env)
            exports = ""
            if point is not None:
                point_env = {"RB_" + a.upper(): _env_value(v) for a, v in point.items()}
                point_env.update(RB_POINT=str(k), RB_POINT_NAME=point_words(point))
                made_for = input_for(point, input_points or {})
                if made_for:
                    point_env["RB_INPUT"] = made_for
                step_env.update(point_env)
                exports = "\n".join(f"export {a}={q(v)}" for a, v in point_env.items())
            role = (step.role if step is not None else "") or claim.control_role
            if step is None:
                body = "\n".join(line for repo in paper.repositories_for(claim) for line in _checkout_lines(repo, host.workdir))
                cwd = host.workdir
            elif step.where == "guest":
                cwd = step.cwd
                body = f"( cd {q(host.workdir)} && set -euo pipefail\n{exports}\n{_guest_body(step, step_env)}\n)"
            elif roles.get(role, (host.name,)) != (host.name,):
                # another role's hosts (or several): each runs the step, reached from this host
                cwd = f"{role}:{step.cwd}"
                targets = [members[n] for n in roles[role]]
                body = (f"( cd {q(host.workdir)} && set -euo pipefail\n"
                        f"{_role_body(step, {**placement_env, **step_env}, targets)}\n)")
            else:
                cwd = step.cwd if step.cwd.startswith("/") else f"{host.workdir.rstrip('/')}/{step.cwd}".rstrip("/")
                body = f"( cd {q(cwd)} && set -euo pipefail\n{exports}\n{_text(step)}\n)"
            h = step_hash(name, cwd, body)
            if step is not None and step.unchanged is not None:
                if point is not None or step.where == "guest" or cwd != _own_cwd(step, host):
                    raise ConfigError(f"step {name!r} of {claim.key}: 'unchanged' is for a step the control host "
                                      f"runs itself, once (not a sweep's, a guest's or another role's)")
                names = step.unchanged.env if step.unchanged.env is not None else sorted(param_env(run))
                stamp = step_hash(claim.paper, name, cwd)
                spec = hashlib.sha256(repr((step.unchanged.inputs, step.unchanged.products, names)).encode()).hexdigest()[:16]
                ins = (f"$(cd {q(cwd)} 2>/dev/null && {{ echo {h} {spec}; rb_env {' '.join(names)}; "
                       f"rb_state in {' '.join(step.unchanged.inputs)}; }} | sha256sum | cut -c1-64)")
                outs = f"$(cd {q(cwd)} 2>/dev/null && rb_state out {' '.join(step.unchanged.products)} | sha256sum | cut -c1-64)"
                out.append(f"rb_u_in={ins} || rb_u_in=\nrb_u_out={outs} || rb_u_out=\n"
                           f"if rb_begin_u {i} {total} {q(name + minutes)} {h} {stamp}; then\n{body}\nrb_end {i} {h}\n"
                           f"rb_u_now={ins} || rb_u_now=\nrb_u_out={outs} || rb_u_out=\nrb_stamp {stamp}\nfi")
            elif point is None:
                out.append(f"if rb_begin {i} {total} {q(name + minutes)} {h}; then\n{body}\nrb_end {i} {h}\nfi")
            else:
                label = f"{name}{minutes} [point {k}/{len(sweep)}: {point_words(point)}]"
                log = f'"$RB_RUN_DIR/points/{i}-{k}.log"'
                out.append(f"if rb_begin {i}-{k} {total} {q(label)} {h}; then\nmkdir -p \"$RB_RUN_DIR/points\"\n"
                           f"{body} 2>&1 | tee {log}\nrb_end {i}-{k} {h}\nfi")
    out.append('echo "### reprobook: all steps done"')
    return "\n".join(out) + "\n"
