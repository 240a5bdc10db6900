# Two entry points, both creating .venv themselves: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin

.PHONY: demo test lint bench cases

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/workload-doctor diagnose --snapshot sandbox/snapshots/demo.json

lint: $(BIN)/.installed
	$(BIN)/ruff check bot handlers diagnosis sandbox tests bench
	$(BIN)/ruff format --check bot handlers diagnosis sandbox tests bench
	$(BIN)/mypy

test: lint
	$(BIN)/pytest -q

cases: $(BIN)/.installed
	../shared/tools/run-cases --cli $(BIN)/workload-doctor ../shared/cases

bench: $(BIN)/.installed
	$(BIN)/python bench/diagnose.py
	$(BIN)/python bench/slack.py
	$(BIN)/python bench/accuracy.py
	$(BIN)/python bench/digest.py
	$(BIN)/python bench/osmo_fuzz.py
	$(BIN)/python bench/runai_fuzz.py
