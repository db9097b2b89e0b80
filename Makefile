# Two commands: `make run` (set up, open the app on the bundled sample) and `make test`.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.perftriage-installed
SAMPLE ?= sample_traces/webserver

.PHONY: run test setup system bench eval fuzz clean-venv

run: setup
	$(PY) -m perftriage open $(SAMPLE)

test: setup
	@tools/setup-system.sh --test
	@# one test process more than cores: the app tests wait for their analysing child and for
	@# the screen much of their time (2 cores: 456 s with 2 processes, 396 s with 3)
	$(PY) -m pytest -q -n $$(( $$(nproc) + 1 )) --dist worksteal

setup: system $(STAMP)

system:
	@tools/setup-system.sh

$(STAMP): pyproject.toml setup.py analysis/growbuf.h analysis/ctf/_decode.c analysis/requests/_walk.c tools/setup-venv.sh
	tools/setup-venv.sh

bench: setup
	$(PY) -m benchmarks

eval: setup
	$(PY) -m evaluations

# thousands of damaged inputs per class (make test runs a few hundred); FUZZ_EXAMPLES=N to change
FUZZ_EXAMPLES ?= 1000
fuzz: setup
	$(PY) -m fuzzing --examples $(FUZZ_EXAMPLES) --keep fuzz-failures

clean-venv:
	rm -rf $(VENV)
