# wattsched: `make demo` and `make test` work on a fresh Debian machine as root.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv system-deps test test-fast lint demo bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

# Debian packages the real-service tests use (Slurm, sshd, ipmitool, PostgreSQL, ...).
system-deps:
	bash .ci/apt-install.sh

test: system-deps venv
	$(PY) -m pytest -q

test-fast: venv
	$(PY) -m pytest -q -m "not slurm and not sge and not ssh and not ipmi and not postgres and not prometheus and not browser"

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy scheduler connectors daemon powerctl

demo: venv
	bash deploy/demo.sh

bench: venv
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache
