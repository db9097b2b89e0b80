# Two commands: `make run` (set up, open the app on the bundled sample) and `make test`.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.perftriage-installed
SAMPLE ?= sample_traces/webserver

.PHONY: run test setup system bench eval clean-venv

run: setup
	$(PY) -m perftriage open $(SAMPLE)

test: setup
	$(PY) -m pytest -q

setup: system $(STAMP)

system:
	@tools/setup-system.sh

$(STAMP): pyproject.toml tools/setup-venv.sh
	tools/setup-venv.sh

bench: setup
	$(PY) -m benchmarks

eval: setup
	$(PY) -m evaluations

clean-venv:
	rm -rf $(VENV)
