# Two entry points, both creating .venv themselves: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin

.PHONY: demo test lint bench cases rbac

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/workload-doctor diagnose --snapshot sandbox/snapshots/demo.json
	$(BIN)/workload-doctor digest --snapshot sandbox/snapshots/digest.json

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
	$(BIN)/python bench/scale.py
	$(BIN)/python bench/accuracy.py
	$(BIN)/python bench/digest.py
	$(BIN)/python bench/osmo_fuzz.py
	$(BIN)/python bench/runai_fuzz.py

# The RBAC deploy/base renders, kept beside the sandbox, which enforces it (no kubectl needed to run it);
# tests/sandbox/test_sandbox_rbac.py checks it still equals what kubectl renders.
rbac:
	kubectl kustomize deploy/base | $(PYTHON) sandbox/render_rbac.py > sandbox/rbac.yaml
