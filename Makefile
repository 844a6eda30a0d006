# The two commands of the README: `make book` (set up, build the website) and `make test` (set up, run every test).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The authors' outputs: a local mirror if one sits beside the project (as in CI), else git fetches them.
export REPROBOOK_ARTIFACT_MIRROR ?= $(firstword $(wildcard $(CURDIR)/../shared/artifacts))

.PHONY: setup bytecode validators notebook-filter system-deps system-deps-unit book test test-fast lint-imports bench clean lab live-pesto live-pmlog live-aardvark live-verus-nr live-verus-alloc live-lmbench live-guest

setup: $(VENV)/.installed notebook-filter bytecode

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -c constraints.txt -e '.[test]'
	touch $@

# The library's bytecode, compiled ahead (seconds the first time, a tenth of one after): every `reprobook` process and
# test worker then starts from it, even where PYTHONDONTWRITEBYTECODE keeps Python from writing it itself.
bytecode: $(VENV)/.installed
	@$(BIN)/python -m compileall -q lib benchmarks tests/support >/dev/null

# Outputs never reach git: .gitattributes sends every notebook through reprobook.book.clean (no outputs, counts or
# session metadata), and the venv's Jupyter server gets the project's configuration (its post-save hook tells git's
# index that a save changed only what the filter drops), so a JupyterLab session leaves `git status` clean while the
# notebooks keep their outputs on disk.
notebook-filter:
	@if git rev-parse --git-dir >/dev/null 2>&1; then \
	  git config filter.reprobook-notebook.clean '$(BIN)/python -m reprobook.book.clean' && \
	  git config filter.reprobook-notebook.smudge cat; fi
	@install -D -m 644 lib/reprobook/book/jupyter_server_config.json $(VENV)/etc/jupyter/jupyter_server_config.json

system-deps:
	bash .ci/install-system-deps.sh

# Only what the unit tests run beyond a base system (git, ShellCheck), with apt when missing; at once when present.
system-deps-unit:
	bash .ci/install-system-deps.sh unit

book: setup
	$(BIN)/reprobook book

# Two xdist workers: the real builds on one, one after another, the site's tests and everything else on the
# other, longest first (tests/conftest.py says how the tests are grouped). PYTEST_WORKERS=0 runs them in one process.
PYTEST_WORKERS ?= 2
# The standard validators the tests hold the RO-Crates and CITATION.cff to (roc-validator, cffconvert): a venv of
# their own, since they pin versions of rich and jsonschema the project's cannot share (tests/support/validators.py).
VALIDATORS := .venv-validators
validators: $(VALIDATORS)/.installed

$(VALIDATORS)/.installed: tests/validators.txt
	$(PYTHON) -m venv $(VALIDATORS)
	$(VALIDATORS)/bin/pip install -q --disable-pip-version-check -r tests/validators.txt
	touch $@

test: setup validators system-deps lint-imports
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup --no-loadscope-reorder

# The developer's loop (a few minutes): the import rules, then every unit and parser test, two at a time. No sshd,
# browser or book build; `make test` runs those too. Of the system programs it installs only the unit tests' own.
test-fast: setup validators system-deps-unit lint-imports
	$(BIN)/pytest -q -n 2 -m "not slow and not ssh and not book and not browser" tests/unit

# The layers' import rules (pyproject.toml, [tool.importlinter]): no cycle, no upward import, no paper named by the engine.
lint-imports: setup
	$(BIN)/lint-imports --no-cache

# Opt-in, not part of `make test`: Pequin built from source (about 80 minutes on two cores the first time, minutes
# after) and every Pesto and Basil claim's rehearsal run through the authors' harness on loopback sshd hosts (up to
# fourteen, each in namespaces of its own; needs root).
live-pesto: setup system-deps
	REPROBOOK_LIVE_PESTO=1 $(BIN)/pytest -s tests/live/test_pesto_live.py

# Opt-in, not part of `make test`: Verus's persistent-memory log (Fig 13) at rehearsal scale, for real: verified-storage's
# benchmark built with cargo in a loopback guest and run with the persistent memory on tmpfs (about ten minutes; needs root).
live-pmlog: setup system-deps
	REPROBOOK_LIVE_PMLOG=1 $(BIN)/pytest -s tests/live/test_pmlog_live.py

# Opt-in, not part of `make test`: Verus-mimalloc (Fig 12) at rehearsal scale, for real: the allocator built the way
# Verus's compile pass builds it, the suite and mimalloc v1.7.7 from the git mirror, run on a loopback sshd host
# (needs root and cargo); then macro-stats' line counts of the mirrored case studies. About 15 minutes cold, 7 warm.
live-verus-alloc: setup system-deps
	REPROBOOK_LIVE_VERUS_ALLOC=1 $(BIN)/pytest -s tests/live/test_verus_alloc_live.py

# Opt-in, not part of `make test`: Aardvark's three claims at rehearsal scale, built from source (EDRAX and the vector
# commitments in Rust and C++, go-algorand's ledger in Go) on a loopback sshd host: about ten minutes idle on two cores.
live-aardvark: setup system-deps
	REPROBOOK_LIVE_AARDVARK=1 $(BIN)/pytest -s tests/integration/test_aardvark_rehearsal.py

# Opt-in, not part of `make test`: Ozz's LMBench (Table 5) baseline side for real: intel/lmbench cloned from the mirror,
# patched, built and run in the stand-in guest behind the host, the client cut off and the host's sshd restarted on
# the way (about five minutes on two idle cores).
live-lmbench: setup system-deps
	REPROBOOK_LIVE_LMBENCH=1 $(BIN)/pytest -s tests/integration/test_lmbench_live.py

# Opt-in, not part of `make test`: Verus's node replication (Fig 10) at rehearsal scale, for real: Verus-NR and the
# unverified NR built with cargo from the git mirror and crates.io on a loopback sshd host and run side by side at the
# host's thread counts, then 1 GiB huge pages asked for and given back (needs root).
live-verus-nr: setup system-deps
	REPROBOOK_LIVE_VERUS_NR=1 $(BIN)/pytest -s tests/live/test_verus_nr_live.py

# Opt-in, not part of `make test`: Ozz's LMBench (Table 5) at rehearsal scale in a real QEMU guest: a Debian 12 image
# made with debootstrap (once; kept in $REPROBOOK_LIVE_DIR), booted with Debian's kernel (TCG where KVM cannot run a
# standard guest), LMBench built and run in it over the engine's guest path (needs root and Debian's archive).
live-guest: setup system-deps
	REPROBOOK_LIVE_GUEST=1 $(BIN)/pytest -s tests/live/test_guest_live.py

bench: setup system-deps
	$(BIN)/python -m benchmarks

# --allow-root where the user is root (a fresh CloudLab node, a container): Jupyter refuses root without it
lab: setup
	$(BIN)/jupyter lab --KernelManager.transport_encryption=auto $(if $(filter 0,$(shell id -u)),--allow-root) notebooks/

clean:
	rm -rf _build
