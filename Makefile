# Roost: `make run` and `make test` work from a fresh clone (python3.11 + pip only).
# With DATABASE_URL / REDIS_URL unset they start an embedded PostgreSQL and Redis.

PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?= -q
RUN_ARGS ?=

.PHONY: venv run test test-stress fuzz soak lint format schema bench clean clean-data graphiql

venv: $(STAMP)

# Create the virtualenv; without ensurepip (Debian's python3 without python3-venv),
# create it bare and install pip into it with the system pip (`pip --python`, pip >= 22.3).
$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV) && $(PYTHON) -m venv --without-pip $(VENV) \
	  && $(PYTHON) -m pip --python $(BIN)/python install --quiet pip; }

# Reinstall only when pyproject.toml changed since the last install.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	$(BIN)/python -m app.graphiql fetch
	touch $@

# GraphiQL's assets (React, GraphiQL), so the page works offline: npm pack, else the CDN.
graphiql: venv
	$(BIN)/python -m app.graphiql fetch --force

# `make run RUN_ARGS=--no-load` starts without loading the real graph.
run: venv
	$(BIN)/roost run $(RUN_ARGS)

test: venv
	$(BIN)/python -m app.testrun $(PYTEST_ARGS)

# The suite with every core kept busy by a Python busy loop (tests/stress.py starts and
# stops them): tests synchronise on state, never on the wall clock, so it stays green.
test-stress: venv
	$(BIN)/python -m tests.stress $(PYTEST_ARGS)

# Schemathesis's GraphQL mode against a real API (tests/e2e/test_fuzz.py): FUZZ_EXAMPLES
# examples per root field (10 by default), check not_a_server_error; CI runs it.
FUZZ_EXAMPLES ?= 10
fuzz: venv
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m app.testrun -q -m fuzz -p no:cacheprovider

# A bounded soak (tools/soak): SOAK_USERS virtual users (40) for SOAK_SECONDS (360) against
# `roost serve --workers 2` + `roost worker` on embedded servers of a scratch folder,
# while the worker and an API process are SIGKILLed, PostgreSQL stopped -m immediate and
# Redis flushed (SOAK_ARGS="--each 3": of each kind); prints the fault table and the
# audit, exits 1 when a check fails (the folder, with every log, is then kept).
SOAK_SECONDS ?= 360
SOAK_USERS ?= 40
SOAK_ARGS ?=
soak: venv
	SOAK_SECONDS=$(SOAK_SECONDS) SOAK_USERS=$(SOAK_USERS) $(BIN)/python -m tools.soak $(SOAK_ARGS)

# Type checks: mypy as configured in pyproject.toml (strict on domain/).
lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy

format: venv
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Rewrite the committed SDL and type map from the code (a test fails when they differ).
schema: venv
	$(BIN)/python -m app.print_schema

# Each bench/<name>.py runs as `python -m bench.<name>`: it uses DATABASE_URL when set,
# else starts its own embedded server (with durable settings, unlike `make test`).
# Each writes bench/results/<name>.txt (what it printed) and <name>.png (matplotlib, the
# optional `bench` extra installed here). One of them, with options:
#   make bench BENCH=feed_vs_postgraphile BENCH_ARGS="--keep-db roost_bench_slashdot"
BENCH ?= [!_]*
BENCH_ARGS ?=
bench: venv
	$(BIN)/python -m pip install --quiet -e ".[dev,bench]"
	@set -e; for f in bench/$(BENCH).py; do \
	  [ -e "$$f" ] || { echo "no benchmarks in bench/ match $(BENCH)"; exit 0; }; \
	  m=$$(basename $$f .py); echo "== bench.$$m"; $(BIN)/python -m bench.$$m $(BENCH_ARGS); \
	done

clean:
	rm -rf build dist *.egg-info .pytest_cache .ruff_cache .import_linter_cache
	find . -name __pycache__ -type d -not -path "./$(VENV)/*" -prune -exec rm -rf {} +

# Deletes the `make run` database and Redis snapshot (stop `make run` first): the next
# `make run` starts from scratch (loads the graph and seeds posts again).
clean-data:
	rm -rf .data
