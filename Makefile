# memspec — the two Quick start commands set themselves up on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: run test lint typecheck clauses bench selftest clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "memspec needs Python 3.11+ (set PYTHON=...)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

## make run: the main job — the conformance suite against the bundled store
run: $(STAMP)
	$(BIN)/memspec run --profile ci

## make test: the whole test suite (set HYPOTHESIS_PROFILE=dev|ci|deep)
test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2
	$(BIN)/memspec clauses --check > /dev/null || ($(BIN)/memspec clauses | grep -E 'UNCOVERED|cited but not defined'; exit 1)

lint: $(STAMP)
	$(BIN)/ruff check reference conformance tests benchmarks
	$(BIN)/ruff format --check reference conformance tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

clauses: $(STAMP)
	$(BIN)/memspec clauses

bench: $(STAMP)
	$(BIN)/python -m benchmarks

## make selftest: the whole catalogue (unaltered store, every allowed variant, every mutant),
## corpus + machines at profile ci, in parallel over the cores (the test suite runs only the
## fast subset; see conformance/commands/selftest.py).  Exit 1 if a mutant survives or a
## variant fails.  SELFTEST_ARGS="--machines-only" measures the machines alone.
selftest: $(STAMP)
	$(BIN)/memspec selftest --profile ci $(SELFTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis memspec-report
