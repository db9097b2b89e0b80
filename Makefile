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
	@# one test process per core: with one more (3 on 2 cores: 390-396 s instead of 440-460 s)
	@# the timing tests failed under the load (q quit in 1.10 s; 0.09-0.13 s on a quiet machine)
	$(PY) -m pytest -q -n auto --dist worksteal

setup: system $(STAMP)

system:
	@tools/setup-system.sh

$(STAMP): pyproject.toml setup.py analysis/growbuf.h analysis/ctf/_decode.c analysis/requests/_walk.c analysis/threads/_fm.c tools/setup-venv.sh
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
