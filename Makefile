# `make demo` lints the bundled sample models; `make test` runs the test suite.
# Both create .venv/ at the repo root first (Python 3.11, torch 2.13.0 CPU, executorch 1.5.1).

PYTHON ?= python3.11
VENV := .venv
STAMP := $(VENV)/.xferlint-installed

.PHONY: demo test venv bench clean bytecode

venv: $(STAMP) bytecode

# The package's bytecode, compiled ahead: where PYTHONDONTWRITEBYTECODE is set (as on CI
# machines) Python would otherwise compile every module of the editable install at each
# start, 0.1-0.2 s of a `.pte` check. Stale files are recompiled, the others left alone.
bytecode: $(STAMP)
	@$(VENV)/bin/python -m compileall -q xferlint

$(STAMP): pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

# Findings make `xferlint check` exit 1; the demo shows them and succeeds. A sample that
# fails to load (exit 2) still fails the demo.
demo: $(STAMP) bytecode
	@$(VENV)/bin/xferlint check sample_models; rc=$$?; test $$rc -le 1

test: $(STAMP) bytecode
	$(VENV)/bin/python -m pytest -q -n 2 tests

bench: $(STAMP) bytecode
	$(VENV)/bin/python benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info
