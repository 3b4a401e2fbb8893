# GNU make. Every target bootstraps what it needs: a fresh clone only needs
# python3 (3.11+), node/npm and access to PyPI + the npm registry.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-builtin-rules

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Two stamps: `make run` needs only the runtime (the three distributions and their pinned
# dependencies, as the container image has them); lint and test add the developer toolchain.
RUNTIME_STAMP := $(VENV)/.installed-runtime
INSTALL_STAMP := $(VENV)/.installed-dev
# The image's exact runtime versions (tests/deploy checks them against requirements-dev.txt).
CONSTRAINTS := deploy/constraints.txt

# buf comes from the npm registry (package ships the binary), installed locally.
BUF_VERSION := 1.75.0
TOOLS := .tools
BUF := $(TOOLS)/node_modules/.bin/buf
BUF_STAMP := $(TOOLS)/node_modules/.buf-$(BUF_VERSION).installed

PY_SOURCES := client_sdk server bots tests tools
PYPROJECTS := client_sdk/pyproject.toml server/pyproject.toml bots/pyproject.toml

.PHONY: help install-runtime install buf protos variations web browser cluster-tools cluster node-client engine solver lint contract test run demo demo-tournament bench-engine bench-solver bench-search bench-expert bench-server bench-cluster bench-soak bench-ratings mutation fmt clean

help: ## list targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

# The local distributions are named by path (./client_sdk, not spades-sdk), so pip never takes
# a package of the same name from an index (spades-sdk on PyPI is not ours). The SDK comes with
# its terminal extra (textual): `spades-play` beside `make run` works without a second install.
$(RUNTIME_STAMP): $(CONSTRAINTS) $(PYPROJECTS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	@# spades-bot moved from spades-bots to the SDK: in an older venv, pip's uninstall of the old
	@# spades-bots, after it wrote the new SDK, would remove the script again. Remove it first.
	$(PY) -m pip uninstall --yes --quiet spades-bots
	$(PY) -m pip install --constraint $(CONSTRAINTS) -e './client_sdk[terminal]' -e ./server -e ./bots
	touch $@

$(INSTALL_STAMP): $(RUNTIME_STAMP) requirements-dev.txt
	$(PY) -m pip install --constraint $(CONSTRAINTS) -r requirements-dev.txt
	touch $@

install-runtime: $(RUNTIME_STAMP) ## create .venv with the three packages (editable) and their runtime only

install: $(INSTALL_STAMP) ## create .venv with the runtime + the dev tools (lint, test, protos)

$(BUF_STAMP):
	npm install --prefix $(TOOLS) --no-save --no-package-lock --no-audit --no-fund \
		@bufbuild/buf@$(BUF_VERSION)
	$(BUF) --version
	touch $@

buf: $(BUF_STAMP) ## install the pinned buf (BUF_VERSION, npm @bufbuild/buf) into .tools/

protos: $(INSTALL_STAMP) ## regenerate the Python code of protos/ (tools/gen_protos.py)
	$(PY) tools/gen_protos.py

# The mypyc build of the engine's hot modules (tools/build_engine.py): extension modules beside
# the sources, used by spades.engine only while its stamp matches them (spades/engine/compiled.py).
# Optional: without it (a pip install of the SDK) the pure-Python engine runs. mypyc comes with
# mypy (requirements-dev.txt). Rebuilt when any engine source changes.
ENGINE_DIR := client_sdk/src/spades/engine
ENGINE_STAMP := $(ENGINE_DIR)/compiled-build.json
$(ENGINE_STAMP): $(INSTALL_STAMP) $(wildcard $(ENGINE_DIR)/*.py) tools/build_engine.py
	$(PY) tools/build_engine.py

engine: $(ENGINE_STAMP) ## compile the engine's hot modules with mypyc (optional: the sources run without it)

# The double-dummy solver's search (spades.solver; tools/build_solver.py): one C extension module
# compiled in place by setuptools with the machine's C compiler and the Python headers (gcc and
# python3-dev on Debian; nothing is downloaded). Rebuilt when the C source or the script changes.
SOLVER_DIR := client_sdk/src/spades/solver
SOLVER_STAMP := $(SOLVER_DIR)/_search-build.json
$(SOLVER_STAMP): $(INSTALL_STAMP) $(wildcard $(SOLVER_DIR)/*.c) tools/build_solver.py
	$(PY) tools/build_solver.py

solver: $(SOLVER_STAMP) ## compile the double-dummy solver's C search (spades.solver) with the machine's C compiler

# The web client: TypeScript stubs from protos/ (buf + protoc-gen-es, from the npm registry) in
# client_sdk/typescript, and the web app (vite) in server/web, built into server/web/dist, which
# spades-server serves on its web port. Rebuilt when a proto or a source file changes.
TS_CLIENT := client_sdk/typescript
WEB_APP := server/web
WEB_SOURCES := $(wildcard protos/spades/v1/*.proto $(TS_CLIENT)/src/*.ts $(WEB_APP)/src/*) \
	$(TS_CLIENT)/package.json $(TS_CLIENT)/buf.gen.yaml $(WEB_APP)/package.json \
	$(WEB_APP)/index.html $(WEB_APP)/vite.config.ts
WEB_STAMP := $(WEB_APP)/dist/index.html

# The form's controls come from the table of rule variations (tools/gen_variations.py, which
# also writes docs/rules.md's list): written again first, so the build always has the table's.
VARIATIONS_TABLE := $(ENGINE_DIR)/variations.py tools/gen_variations.py

$(WEB_STAMP): $(WEB_SOURCES) $(VARIATIONS_TABLE) $(RUNTIME_STAMP)
	$(PY) tools/gen_variations.py
	npm ci --prefix $(TS_CLIENT) --no-audit --no-fund
	npm run --prefix $(TS_CLIENT) generate
	npm run --prefix $(TS_CLIENT) check
	npm ci --prefix $(WEB_APP) --no-audit --no-fund
	npm run --prefix $(WEB_APP) build

web: $(WEB_STAMP) ## build the web client (TypeScript from protos/, vite) into server/web/dist

variations: $(RUNTIME_STAMP) ## write the web form's controls and docs/rules.md's list from the table of rule variations
	$(PY) tools/gen_variations.py

# The browser tests drive Debian's chromium (Playwright with the system browser: no download).
CHROMIUM ?= /usr/bin/chromium
browser: ## install Debian's chromium for the browser tests (needs root, as on CI)
	@test -x $(CHROMIUM) || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq chromium; }
	@$(CHROMIUM) --version

# `make cluster` and the cluster tests (tests/cluster) run Debian's own daemons, natively: a
# private PostgreSQL and NATS, haproxy, Prometheus (promtool comes with it) and Alertmanager.
CLUSTER_PACKAGES := postgresql nats-server haproxy prometheus prometheus-alertmanager
CLUSTER_COMMANDS := /usr/sbin/nats-server /usr/sbin/haproxy /usr/bin/prometheus /usr/bin/promtool \
	/usr/bin/prometheus-alertmanager
cluster-tools: ## install the cluster's Debian packages when missing (needs root, as on CI)
	@missing=0; for command in $(CLUSTER_COMMANDS); do test -x $$command || missing=1; done; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing=1; \
	if [ $$missing = 1 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends $(CLUSTER_PACKAGES); fi

# Ctrl-C (or SIGTERM) stops every process it started; data and logs stay in var/cluster/.
CLUSTER_ARGS ?=
cluster: $(INSTALL_STAMP) cluster-tools ## PostgreSQL, NATS, 2 replicas, haproxy, Prometheus, Alertmanager, in the foreground (var/cluster/)
	$(PY) tools/spades_cluster.py $(CLUSTER_ARGS)

# The Node client check (tests/node_client): a client of spades.v1 written from protos/ and
# docs/ alone, on @grpc/grpc-js and @grpc/proto-loader from the npm registry (pinned by its lock).
NODE_CLIENT := tests/node_client
NODE_CLIENT_STAMP := $(NODE_CLIENT)/node_modules/.package-lock.json
$(NODE_CLIENT_STAMP): $(NODE_CLIENT)/package.json $(NODE_CLIENT)/package-lock.json
	npm ci --prefix $(NODE_CLIENT) --no-audit --no-fund

node-client: $(NODE_CLIENT_STAMP) ## install the Node client check's packages (tests/node_client, npm)

# The wire contract we keep: buf's image of protos/ as released, committed. `make lint` fails
# on any change to protos/ that breaks a client built against it (buf breaking, FILE rules);
# after a release that adds to the contract, `make contract` records the new image.
CONTRACT := protos/contract.binpb

lint: $(INSTALL_STAMP) $(BUF_STAMP) ## ruff check + ruff format --check + mypy + buf lint + buf breaking
	$(VENV)/bin/ruff check $(PY_SOURCES)
	$(VENV)/bin/ruff format --check $(PY_SOURCES)
	$(PY) -m mypy
	$(BUF) lint
	$(BUF) breaking --against $(CONTRACT)

contract: $(BUF_STAMP) ## record protos/ as the wire contract `make lint` checks breaking changes against
	$(BUF) build -o $(CONTRACT)

# The suite runs as two pytest processes side by side, one a core: the slow, fault and cluster
# suites (marks `slow`, `faults`, `cluster`: real processes, the commands run as a person runs
# them, servers killed, the deployment's daemons; much of their time is other processes' or
# waiting) beside the rest (the quick run and the browser's pages, then the pure-Python pass).
# The two marks' expressions split the suite in two with nothing left out.
# The slow run's report goes to var/test-slow.log and is printed after the rest's;
# the target fails if either run (or the pure-Python pass) fails. A shell starts a command in
# the background with SIGINT ignored, which its processes would inherit (a test's Ctrl-C of a
# spades-bot it started would do nothing): GNU env gives the slow run SIGINT back.
TEST_BESIDE := slow or faults or cluster
TEST_BESIDE_LOG := var/test-slow.log
test: lint web browser cluster-tools node-client engine solver ## lint, build the web client, the engine and the solver, then pytest (saying why each skipped test was skipped)
	@mkdir -p $(dir $(TEST_BESIDE_LOG))
	@status=0; \
	env --default-signal=INT $(PY) -m pytest -rs -m "$(TEST_BESIDE)" >$(TEST_BESIDE_LOG) 2>&1 & \
	beside=$$!; \
	trap 'kill $$beside 2>/dev/null || true' EXIT; \
	$(PY) -m pytest -rs -m "not ($(TEST_BESIDE))" || status=1; \
	echo "the engine's tests and examples again, on the pure-Python engine (SPADES_ENGINE=python):"; \
	SPADES_ENGINE=python $(PY) -m pytest -rs tests/engine tests/test_doctests.py \
		--deselect tests/engine/test_compiled.py::test_the_compiled_and_the_pure_engine_agree_move_for_move \
		|| status=1; \
	wait $$beside || status=1; trap - EXIT; \
	echo "the slow, fault and cluster suites (-m \"$(TEST_BESIDE)\"), run beside the rest ($(TEST_BESIDE_LOG)):"; \
	cat $(TEST_BESIDE_LOG); \
	exit $$status

# The server's settings can also come from SPADES_* environment variables (README: "Operating
# the server"); `make run RUN_ARGS='--log-format json'` passes flags through.
RUN_DB ?= $(or $(SPADES_DATABASE),var/spades.db)
RUN_ARGS ?=
run: $(RUNTIME_STAMP) $(WEB_STAMP) ## start the table service on var/spades.db (127.0.0.1:50051, web :8080, metrics :9464)
	mkdir -p $(dir $(RUN_DB))
	$(VENV)/bin/spades-server --database $(RUN_DB) $(RUN_ARGS)

# `make demo DEMO_ARGS='--target 300 --max-hands 20'`; records go to the git-ignored records/.
DEMO_ARGS ?=
demo: $(RUNTIME_STAMP) ## a server on a temporary log, four heuristic bots, one match told hand by hand
	$(PY) -m spades_server.app.demo $(DEMO_ARGS)

# `make demo-tournament TOURNAMENT_ARGS='--entrants 6 --boards 1'`; the record goes to records/.
TOURNAMENT_ARGS ?=
demo-tournament: $(RUNTIME_STAMP) ## a short duplicate tournament of bot accounts, standings live (rich), its record written
	$(PY) -m spades_server.app.tournament_demo $(TOURNAMENT_ARGS)

# The SDK's optional `benchmark` extra: OpenSpiel, which bench-engine measures beside the engine.
BENCH_STAMP := $(VENV)/.installed-benchmark
$(BENCH_STAMP): $(INSTALL_STAMP) client_sdk/pyproject.toml
	$(PY) -m pip install --constraint $(CONSTRAINTS) -e './client_sdk[benchmark]'
	touch $@

bench-engine: $(BENCH_STAMP) $(ENGINE_STAMP) ## engine micro-benchmark: the mypyc build vs OpenSpiel (installs the benchmark extra)
	$(PY) tests/benchmarks/bench_engine.py

# Our double-dummy solver against DDS (endplay, in requirements-dev.txt) on the same deals in one
# run: trick 1 medians and their ratio, and the p95 of a whole hand in both objectives over 100
# hands (about a minute and a half); e.g. SOLVER_BENCH_ARGS="--deals 20 --hands 10" for a quick look.
SOLVER_BENCH_ARGS ?=
bench-solver: $(INSTALL_STAMP) $(ENGINE_STAMP) $(SOLVER_STAMP) ## double-dummy solver vs DDS: trick 1 (ours / DDS) and a whole hand's p95 (SOLVER_BENCH_ARGS=--help)
	$(PY) tests/benchmarks/bench_solver.py $(SOLVER_BENCH_ARGS)

# The search bot against the heuristic (issue 12's benchmark: target >= 75% of the matches, at
# 100 ms a decision), on the mypyc build; e.g. SEARCH_ARGS="--matches 200 --jobs 2 --seed s1"
# (the arguments replace the defaults: give them all).
SEARCH_ARGS ?= --matches 1000 --jobs 2
bench-search: $(INSTALL_STAMP) $(ENGINE_STAMP) ## search bot vs heuristic, 1,000 duplicate matches at 100 ms a decision (SEARCH_ARGS=...)
	$(VENV)/bin/spades-arena --team-a search --team-b heuristic $(SEARCH_ARGS)

# The expert bot against the search bot and the heuristic (issue 24's benchmark: targets 60% and
# 90% of the matches), on the mypyc engine and the C solver; e.g. EXPERT_ARGS="--matches 40
# --jobs 2 --minutes 60 --seed e1" (the arguments replace the defaults: give them all).
EXPERT_ARGS ?= --matches 200 --jobs 2
bench-expert: $(INSTALL_STAMP) $(ENGINE_STAMP) $(SOLVER_STAMP) ## expert vs search and vs heuristic, 200 duplicate matches each, Wilson 95% intervals (EXPERT_ARGS=...)
	$(PY) tests/benchmarks/bench_expert.py $(EXPERT_ARGS)

# e.g. BENCH_ARGS="--backends sqlite,postgres --tables 16 --seconds 5"
BENCH_ARGS ?=
bench-server: $(INSTALL_STAMP) ## server benchmark: SQLite vs PostgreSQL 1/2/4 replicas, N=1,16,64 (BENCH_ARGS=--help)
	$(PY) tests/benchmarks/bench_server.py $(BENCH_ARGS)

# e.g. CLUSTER_BENCH_ARGS="--replicas 1,2,3 --tables 16 --seconds 20 --failover-tables 6"
CLUSTER_BENCH_ARGS ?=
bench-cluster: $(INSTALL_STAMP) cluster-tools ## the cluster (make cluster) with 1, 2, 3 replicas behind haproxy: actions/s, CPU per action, failover (CLUSTER_BENCH_ARGS=--help)
	$(PY) tests/benchmarks/bench_cluster.py $(CLUSTER_BENCH_ARGS)

# e.g. SOAK_ARGS="--backends sqlite,postgres --matches 3000 --history 100000"
SOAK_ARGS ?=
bench-soak: $(INSTALL_STAMP) ## soak: server RSS per 1,000 finished tables; start-up with 100,000 finished (SOAK_ARGS=--help)
	$(PY) tests/benchmarks/bench_soak.py $(SOAK_ARGS)

# e.g. RATINGS_ARGS="--matches 500 --every 100"
RATINGS_ARGS ?=
bench-ratings: $(INSTALL_STAMP) ## ratings: heuristic vs random accounts over 300 rated matches, both ratings with intervals (RATINGS_ARGS=--help)
	$(PY) tests/benchmarks/bench_ratings.py $(RATINGS_ARGS)

# Mutation testing (tools/mutation.py, mutmut): the engine's legality, tricks and scoring, the
# server's decisions and seat checks and the journal, each mutant judged by the fast tests that
# reach it, on the engine's sources, under nice, one process at a time. It runs in var/mutation,
# which keeps each result until its function changes: MUTATION_ARGS='run NAME...' runs those
# mutants again (after a new test), '--fresh run' forgets every result; docs/testing.md.
MUTATION_ARGS ?= run
mutation: $(INSTALL_STAMP) ## mutation testing of the rules, the decisions and the journal (mutmut; docs/testing.md)
	$(PY) tools/mutation.py $(MUTATION_ARGS)
	$(PY) tools/mutation.py summary

fmt: $(INSTALL_STAMP) ## ruff format + ruff check --fix
	$(VENV)/bin/ruff format $(PY_SOURCES)
	$(VENV)/bin/ruff check --fix $(PY_SOURCES)

clean: ## remove .venv, .tools/node_modules, tests/node_client/node_modules, caches and build artifacts (keeps generated stubs)
	rm -rf $(VENV) $(TOOLS)/node_modules $(NODE_CLIENT)/node_modules .pytest_cache .mypy_cache .ruff_cache .hypothesis
	rm -rf build dist */build */dist */src/*.egg-info
	rm -f client_sdk/src/*.so $(ENGINE_DIR)/*.so $(ENGINE_STAMP) $(SOLVER_DIR)/*.so $(SOLVER_STAMP)
	find . -path ./.git -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
