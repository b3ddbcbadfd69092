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
# The protoc plugins buf runs for the Go client (clients/go/buf.gen.yaml), from the Go module
# proxy. protoc-gen-go's version is also clients/go/go.mod's google.golang.org/protobuf.
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
GO_BIN := $(CURDIR)/.tools/go-bin
GO_PLUGINS_STAMP := .tools/.go-plugins-$(PROTOC_GEN_GO_VERSION)-$(PROTOC_GEN_GO_GRPC_VERSION)
# pytest-xdist processes (tests/conftest.py: each module on one of them; the modules that
# share fixed names or the shared test workers on the same one). 0 runs the tests in
# pytest's own process. Most of an integration module's time is waiting (on Kafka, Spark, a
# timeout it checks), not CPU: on the 2-core machine a fresh clone's pytest took 12:17 with
# 2 processes, 9:24-10:01 with 3 and 8:31 with 4, all passing, each process busy to the end
# (3 had taken longer than 2 while a worker's start cost ~40 % more CPU).
PYTEST_WORKERS ?= 4
PYTEST_PARALLEL := $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile)
GEN_PROTO := PYTHON=$(BIN)/python BUF=$(BUF) GO_BIN=$(GO_BIN) bash scripts/gen_proto.sh
# The JVM side (jvm/, a Maven project; docs/development.md). Rebuilt when its pom, its main
# sources or the task-host protocol's proto (its Java classes are generated from it at build
# time) change; Maven needs Maven Central the first time only, then its local repository.
# Its output is shown only when it fails: Debian's mvn 3.8 prints colour codes even with -B -q.
# The jar is built into a staging directory and renamed over jvm/target/connect-grpc-jvm.jar:
# a worker's running JVM keeps reading the jar it opened, where one rewritten in place under
# it fails its next class load ("invalid LOC header").
MVN := mvn -B -q
JVM_STAMP := jvm/target/.build-stamp
JVM_JAR := jvm/target/connect-grpc-jvm.jar
JVM_JAR_STAGING := jvm/target/jar-staging
JVM_SOURCES := $(shell find jvm/src/main proto/connect_grpc/host -type f 2>/dev/null)
JVM_TEST_LOG := .jvm-test.log

.DEFAULT_GOAL := help
.PHONY: help install java-plugins class-archive demo test pyc jvm-test lint ruff mypy import-contracts proto-check \
	buf-lint hadolint go-lint docs unit integration proto bench-table clean distclean

help:
	@echo "make demo         install, then run the local broker + a worker + a file->topic->file demo"
	@echo "make test         install everything, run all linters and all tests (what CI runs)"
	@echo "make install      create $(VENV) with $(PYTHON) and install the package with [dev];" \
		"fetch the Kafka Connect plugins tests use; build jvm/; dump the Spark driver's" \
		"class-data archive"
	@echo "make jvm-test     the JVM side's unit tests (jvm/, Maven)"
	@echo "make lint         ruff check, mypy, import contracts, generated-code drift, buf lint," \
		"hadolint, gofmt/go vet, docs"
	@echo "make import-contracts  the package's layering (pyproject.toml [tool.importlinter]," \
		"docs/architecture.md)"
	@echo "make docs         the user guide (mkdocs.yml) built into site/, links checked;" \
		"docs/reference/api.md up to date with proto/"
	@echo "make unit         unit tests (no broker)"
	@echo "make integration  integration tests (real broker, Spark, gRPC)"
	@echo "make proto        regenerate connect_grpc/v1, connect_grpc/host, clients/go/connectv1" \
		"and docs/reference/api.md from proto/"
	@echo "make bench-table  regenerate BENCHMARKS.md's headline table from bench/results/headline.json"
	@echo "make clean        remove caches and build output; distclean also removes $(VENV) and .tools"

install: $(INSTALL_STAMP) java-plugins $(JVM_STAMP) class-archive

# pip is quiet (its progress output would be thousands of lines): say what happens and how
# long it usually takes before, and how long it took after.
$(INSTALL_STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "==> installing Python dependencies into $(VENV) (first time about 1.5 min and" \
		"0.8 GB, most of it PySpark; pip prints nothing until it is done)"
	@start=$$(date +%s); \
		$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-input -e '.[dev]' \
		&& echo "==> installed into $(VENV) in $$(( $$(date +%s) - start )) s"
	@touch $@

# The Kafka Connect plugins the tests and the demo use (connect-file, Debezium PostgreSQL,
# MirrorMaker 2's connect-mirror), fetched from Maven Central into the cache once, as the
# broker's jars are (connect_grpc/java/plugin_jars.py); once they are there this only checks,
# in about a second.
java-plugins: $(INSTALL_STAMP)
	@$(BIN)/python -m connect_grpc.java.plugin_jars

# The Spark driver's class-data archive (JDK CDS, decision 0131), which halves the CPU of
# every worker's driver JVM at start: dumped into the cache once per PySpark install and JDK
# by a throwaway driver (about 45 s; 116 MB), then silent (about a second).
class-archive: $(INSTALL_STAMP)
	@$(BIN)/python -m connect_grpc.runtime.class_archive

$(JVM_STAMP): jvm/pom.xml $(JVM_SOURCES)
	@echo "==> building jvm/ with Maven (the first time about 2 min: Kafka's connect-runtime" \
		"and its dependencies from Maven Central; mvn -q prints nothing until it is done)"
	@start=$$(date +%s); rm -rf $(JVM_JAR_STAGING); \
		if out=$$($(MVN) -f jvm/pom.xml -DskipTests \
				-Dconnect.grpc.jar.directory="$(CURDIR)/$(JVM_JAR_STAGING)" package 2>&1); then \
			mv -f $(JVM_JAR_STAGING)/$(notdir $(JVM_JAR)) $(JVM_JAR) && rmdir $(JVM_JAR_STAGING) \
			&& echo "==> built jvm/ in $$(( $$(date +%s) - start )) s"; \
		else printf '%s\n' "$$out" >&2; exit 1; fi
	@touch $@

# Surefire's reports summed into one line, since mvn -q prints nothing when the tests pass
# (the tests' own output is in jvm/target/surefire-reports/*-output.txt).
jvm-test: install
	@rm -rf jvm/target/surefire-reports; start=$$(date +%s); \
		out=$$($(MVN) -f jvm/pom.xml test 2>&1); status=$$?; \
		if [ $$status -ne 0 ]; then printf '%s\n' "$$out"; fi; \
		cat jvm/target/surefire-reports/TEST-*.xml 2>/dev/null | awk -v took=$$(( $$(date +%s) - start )) \
			'/<testsuite / { for (i = 1; i <= NF; i++) if (split($$i, kv, "=") == 2) { \
				gsub(/[">]/, "", kv[2]); n[kv[1]] += kv[2] } } \
			END { printf "==> jvm/ unit tests: Tests run: %d, Failures: %d, Errors: %d, Skipped: %d, %d s\n", \
				n["tests"], n["failures"], n["errors"], n["skipped"], took }'; \
		grep -ho 'Assumption failed: [^]<]*' jvm/target/surefire-reports/TEST-*.xml 2>/dev/null \
			| sort -u | sed 's/^/    skipped: /'; \
		exit $$status

demo: install
	$(BIN)/connect-grpc dev

# The linters run beside the tests (about a minute and a half on a fresh clone, mostly
# mypy, the protoc plugins' build and go vet, while the tests mostly wait on Kafka and
# Spark): their output is shown when the tests end, and either failing fails the target.
LINT_LOG := .lint.log

test: install
	@$(MAKE) --no-print-directory pyc
	@$(MAKE) --no-print-directory lint >$(LINT_LOG) 2>&1 & lint=$$!; \
		$(MAKE) --no-print-directory jvm-test >$(JVM_TEST_LOG) 2>&1 & jvm=$$!; \
		$(BIN)/pytest -q $(PYTEST_PARALLEL) tests; tests=$$?; \
		wait $$jvm; jvm_tested=$$?; \
		echo "==> make jvm-test (ran beside the tests):"; cat $(JVM_TEST_LOG); \
		if [ $$jvm_tested -ne 0 ]; then echo "==> make jvm-test failed" >&2; fi; \
		wait $$lint; linted=$$?; \
		echo "==> make lint (ran beside the tests):"; cat $(LINT_LOG); \
		if [ $$linted -ne 0 ]; then echo "==> make lint failed" >&2; fi; \
		[ $$tests -eq 0 ] && [ $$jvm_tested -eq 0 ] && [ $$linted -eq 0 ]

# The package's bytecode, written once: the tests start hundreds of Python processes (workers,
# ctl calls, Spark's Python workers), each of which otherwise compiles every module it imports
# (about 0.6 s of CPU for a worker) when PYTHONDONTWRITEBYTECODE is set;
# Python checks each file against its source, so a stale one is never used.
pyc:
	@env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m compileall -q connect_grpc >/dev/null

lint: ruff mypy import-contracts proto-check buf-lint hadolint go-lint docs

ruff: install
	$(BIN)/ruff check .

mypy: install
	$(BIN)/mypy

# The layering as import contracts (pyproject.toml's [tool.importlinter], docs/architecture.md).
import-contracts: install
	$(BIN)/lint-imports --no-logo

proto-check: install $(BUF_STAMP) $(GO_PLUGINS_STAMP)
	$(GEN_PROTO) --check

$(BUF_STAMP):
	npm install --silent --no-audit --no-fund --prefix .tools @bufbuild/buf@$(BUF_VERSION)
	@touch $@

$(GO_PLUGINS_STAMP):
	GOBIN=$(GO_BIN) go install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(GO_BIN) go install \
		google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	@touch $@

buf-lint: $(BUF_STAMP)
	$(BUF) lint proto

go-lint:
	@unformatted=$$(gofmt -l clients/go); \
		if [ -n "$$unformatted" ]; then echo "not gofmt-formatted: $$unformatted" >&2; exit 1; fi
	cd clients/go && go vet ./... && go mod tidy -diff

hadolint: install
	$(BIN)/hadolint Dockerfile

# The user guide: the API reference generated from proto/ must be the committed one, and the
# site must build with every link and anchor checked (--strict), into site/.
docs: install
	$(BIN)/python scripts/proto_reference.py --check
	$(BIN)/mkdocs build --strict

unit: install pyc
	$(BIN)/pytest -q $(PYTEST_PARALLEL) tests/unit

integration: install pyc
	$(BIN)/pytest -q $(PYTEST_PARALLEL) tests/integration

proto: install $(BUF_STAMP) $(GO_PLUGINS_STAMP)
	$(GEN_PROTO)
	$(BIN)/python scripts/proto_reference.py

# The standard library only: no install needed, any Python 3.11 will do.
bench-table:
	$(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON)) bench/headline.py

clean:
	rm -rf build dist site .pytest_cache .mypy_cache .ruff_cache spark-warehouse metastore_db \
		derby.log $(LINT_LOG) $(JVM_TEST_LOG) jvm/target
	find . -path ./$(VENV) -prune -o -path ./.tools -prune -o -name __pycache__ -type d \
		-exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) .tools *.egg-info
