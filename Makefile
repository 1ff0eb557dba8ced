# bzrk developer entry points. `make dev` and `make test` are the only two a newcomer needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DATA_DIR ?= $(CURDIR)/.bzrk-data
PYTEST_ARGS ?=

UI_WEB := src/bzrk/ui/web
UI_STAMP := $(UI_WEB)/node_modules/.package-lock.json
UI_BUILT := src/bzrk/ui/static/index.html
UI_SOURCES := $(shell find $(UI_WEB)/src $(UI_WEB)/scripts -type f 2>/dev/null) $(UI_WEB)/index.html $(UI_WEB)/vite.config.ts $(UI_WEB)/tsconfig.json

.PHONY: install ui dev test test-slow lint format typecheck bench bench-quick conformance proto mcp-conformance clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

## install: create .venv, install bzrk with its development dependencies, build the web UI
install: $(STAMP) ui

# npm ci only when node_modules is missing or older than the lockfile (npm writes
# node_modules/.package-lock.json on every install).
$(UI_STAMP): $(UI_WEB)/package-lock.json $(UI_WEB)/package.json
	cd $(UI_WEB) && npm ci --no-audit --no-fund --loglevel=error
	touch $(UI_STAMP)

$(UI_BUILT): $(UI_STAMP) $(UI_SOURCES)
	cd $(UI_WEB) && npm run --silent build

## ui: build the web UI (TypeScript + Vite) into src/bzrk/ui/static (needs Node.js 20+ and npm)
ui: $(UI_BUILT)

## dev: start the whole system on 127.0.0.1 with demo data
dev: install
	$(BIN)/bzrk dev --demo --data-dir $(DATA_DIR)

## test: run every test (creates .venv if needed)
test: install
	$(BIN)/python -m pytest -n 2 $(PYTEST_ARGS)

## test-slow: the long suites kept out of `make test` (fuzzing, crash tests)
test-slow: install
	$(BIN)/python -m pytest -m slow $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

format: install
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

typecheck: install
	$(BIN)/mypy src/bzrk/kql src/bzrk/engine src/bzrk/auth

## conformance: run the KQL conformance corpora from ../shared/kql-conformance and write a report
conformance: install
	$(BIN)/python -m bzrk.engine.conformance --report conformance-report

## proto: regenerate the gRPC code under src/bzrk/api/grpc/_pb from proto/
proto: install
	$(BIN)/python -m bzrk.api.grpc.codegen

## bench: the full benchmark run (20 M rows); bench-quick: about 1 M rows
bench: install
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python -m bench --rows 20000000

bench-quick: install
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python -m bench --rows 1000000

## mcp-conformance: official MCP conformance suite + MCP Inspector CLI against a real bzrk dev
mcp-conformance: install
	PYTHON=$(CURDIR)/$(BIN)/python scripts/mcp_conformance.sh

clean:
	rm -rf $(UI_WEB)/node_modules src/bzrk/ui/static
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache build dist src/*.egg-info
