# connect-grpc developer commands. `make demo` runs the local pipeline; `make test` installs
# everything and runs every check and test (it is what CI runs, via .ci/run).

PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
# Re-install only when the package metadata changes; the install is editable, so code edits
# need no reinstall.
INSTALL_STAMP := $(VENV)/.install-stamp
BUF_VERSION := 1.75.0
BUF := .tools/node_modules/.bin/buf
BUF_STAMP := .tools/.buf-$(BUF_VERSION)

.DEFAULT_GOAL := help
.PHONY: help install demo test lint ruff mypy proto-check buf-lint hadolint unit integration \
	proto clean distclean

help:
	@echo "make demo         install, then run the local broker + a worker + a file->topic->file demo"
	@echo "make test         install everything, run all linters and all tests (what CI runs)"
	@echo "make install      create $(VENV) with $(PYTHON) and install the package with [dev]"
	@echo "make lint         ruff check, mypy, generated-code drift, buf lint, hadolint"
	@echo "make unit         unit tests (no broker)"
	@echo "make integration  integration tests (real broker, Spark, gRPC)"
	@echo "make proto        regenerate connect_grpc/v1 from proto/"
	@echo "make clean        remove caches and build output; distclean also removes $(VENV) and .tools"

install: $(INSTALL_STAMP)

$(INSTALL_STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-input -e '.[dev]'
	@touch $@

demo: install
	$(BIN)/connect-grpc dev

test: install lint
	$(BIN)/pytest -q tests

lint: ruff mypy proto-check buf-lint hadolint

ruff: install
	$(BIN)/ruff check .

mypy: install
	$(BIN)/mypy

proto-check: install
	PYTHON=$(BIN)/python bash scripts/gen_proto.sh --check

$(BUF_STAMP):
	npm install --silent --no-audit --no-fund --prefix .tools @bufbuild/buf@$(BUF_VERSION)
	@touch $@

buf-lint: $(BUF_STAMP)
	$(BUF) lint proto

hadolint: install
	$(BIN)/hadolint Dockerfile

unit: install
	$(BIN)/pytest -q tests/unit

integration: install
	$(BIN)/pytest -q tests/integration

proto: install
	PYTHON=$(BIN)/python bash scripts/gen_proto.sh

clean:
	rm -rf build dist .pytest_cache .mypy_cache .ruff_cache spark-warehouse metastore_db derby.log
	find . -path ./$(VENV) -prune -o -path ./.tools -prune -o -name __pycache__ -type d \
		-exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) .tools *.egg-info
