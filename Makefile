# The two commands of the README: `make book` (set up, build the website) and `make test` (set up, run every test).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The authors' outputs: a local mirror if one sits beside the project (as in CI), else git fetches them.
export REPROBOOK_ARTIFACT_MIRROR ?= $(firstword $(wildcard $(CURDIR)/../shared/artifacts))

.PHONY: setup system-deps book test bench clean lab

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -c constraints.txt -e '.[test]'
	touch $@

system-deps:
	bash .ci/install-system-deps.sh

book: setup
	$(BIN)/reprobook book

test: setup system-deps
	$(BIN)/pytest

bench: setup system-deps
	$(BIN)/python -m benchmarks

lab: setup
	$(BIN)/jupyter lab --KernelManager.transport_encryption=auto notebooks/

clean:
	rm -rf _build
