# memspec — the two Quick start commands set themselves up on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: run test lint typecheck clauses bench variants selftest clean scale-check slow-check

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "memspec needs Python 3.11+ (set PYTHON=...)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

## make run: the main job — the conformance suite against the bundled store
run: $(STAMP)
	$(BIN)/memspec run --profile ci

## make test: the whole test suite (set HYPOTHESIS_PROFILE=quick|ci|deep)
test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2
	$(BIN)/memspec clauses --check > /dev/null || ($(BIN)/memspec clauses | grep -E 'UNCOVERED|cited but not defined'; exit 1)

lint: $(STAMP)
	$(BIN)/ruff check reference conformance tests benchmarks
	$(BIN)/ruff format --check reference conformance tests benchmarks

## make typecheck: mypy --strict on reference/, conformance/, tests/, benchmarks/ ([tool.mypy] files)
typecheck: $(STAMP)
	$(BIN)/mypy

## make scale-check: the slow checks of tests/scale (~1 min): the wheel installed in a fresh venv
## and run from a temp dir; 4 shard processes against 4 bundled stores merged = the unsharded run
scale-check: $(STAMP)
	MEMSPEC_SCALE_TEST=1 $(BIN)/python -m pytest -q -p no:randomly -s tests/scale/test_scale_wheel.py \
	  tests/scale/test_scale_shards.py::test_four_shard_processes_against_four_stores_merge_to_the_unsharded_run

## make slow-check: the tests marked slow (whole runs compared across windows and worker
## processes, machines shrinking to their end, every hostile mode; ~5 min), which make test skips
slow-check: $(STAMP)
	MEMSPEC_SLOW_TESTS=1 $(BIN)/python -m pytest -q -n 2 -m slow

clauses: $(STAMP)
	$(BIN)/memspec clauses

## make variants: every allowed variant (both protocols), whole corpus + the ci machine profile (slow)
variants: $(STAMP)
	MEMSPEC_VARIANTS_PROFILE=ci $(BIN)/python -m pytest -q -n 2 tests/embedded/test_memory_variants.py \
	  tests/harness/test_ledger_variants.py tests/harness/test_contract.py

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
