# grstats developer commands. Every target creates and uses the local virtual environment .venv.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check
# Test processes (pytest-xdist workers). Most tests wait on timers, sockets and processes, so
# 3 workers keep 2 cores busier than 2 do: 8 min 55 s against 9 min 49 s (docs/benchmarks.md,
# "Test suite"; an earlier try with 3 failed two timing-sensitive tests, mended since). Each
# worker that runs Spark tests has its own JVM.
TEST_WORKERS ?= 3
PYTEST_PARALLEL := -n $(TEST_WORKERS) --dist loadgroup

.DEFAULT_GOAL := help
.PHONY: help install system-deps demo test test-release check lint format bench proto dist deb release clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

# The demo's environment: grstats and its Spark extra, nothing else, installed as a user
# installs it (not editable: setuptools' editable mode warns about this checkout's layout).
$(VENV)/.installed-demo: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "grstats needs Python >= 3.11: run make PYTHON=python3.11 ...")'
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet '.[spark]'
	@touch $@

# Everything the tests and the checks need besides.
$(VENV)/.installed: $(VENV)/.installed-demo pyproject.toml
	$(PIP) install --quiet -e '.[spark,test,dev]'
	@touch $@

$(VENV)/.installed-bench: $(VENV)/.installed
	$(PIP) install --quiet -e '.[spark,test,dev,bench]'
	@touch $@

install: $(VENV)/.installed ## create .venv and install grstats (editable, with Spark) and its test and dev tools

system-deps: ## install the system packages the tests need (MariaDB server and client, tmux, Prometheus, Alertmanager, npm, mysqld_exporter, iproute2, iptables, libfaketime, lintian, binutils, haproxy, chromium), if missing
	@missing=""; \
	command -v mariadbd >/dev/null || test -x /usr/sbin/mariadbd || missing="$$missing mariadb-server"; \
	command -v mariadb >/dev/null || missing="$$missing mariadb-client"; \
	command -v prometheus-mysqld-exporter >/dev/null || missing="$$missing prometheus-mysqld-exporter"; \
	command -v tmux >/dev/null || missing="$$missing tmux"; \
	command -v prometheus >/dev/null || missing="$$missing prometheus"; \
	command -v amtool >/dev/null || missing="$$missing prometheus-alertmanager"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	command -v ip >/dev/null || missing="$$missing iproute2"; \
	command -v iptables >/dev/null || missing="$$missing iptables"; \
	command -v lintian >/dev/null || missing="$$missing lintian"; \
	command -v objdump >/dev/null || missing="$$missing binutils"; \
	command -v haproxy >/dev/null || missing="$$missing haproxy"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	ls /usr/lib/*/faketime/libfaketimeMT.so.1 >/dev/null 2>&1 || missing="$$missing libfaketime"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing$$missing (the tests start a MariaDB server and a Prometheus of their own, read the agents' SQL endpoint with the mariadb client and mysqld_exporter, run the watch screen in tmux, check the probes with HAProxy, look at the reports in headless chromium, and put agents on test hosts in network namespaces with iptables and libfaketime)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "make test needs$$missing: run 'sudo apt-get install$$missing' (or make test as root)" >&2; \
	    exit 1; \
	  fi; \
	fi

demo: $(VENV)/.installed-demo ## the main job: a simulated 3-member group, a crash, a killed agent, collector, Spark report
	$(BIN)/grstats demo

# Grafana's published dashboard types, pinned: tests/deploy/test_grafana_schema.py checks the
# dashboards against them.
GRAFANA_SCHEMA := tests/deploy/grafana_schema/node_modules/.package-lock.json
$(GRAFANA_SCHEMA): tests/deploy/grafana_schema/package-lock.json | system-deps
	npm ci --prefix tests/deploy/grafana_schema --no-audit --no-fund

# The tests let Python keep what it compiles (__pycache__, and pytest's rewritten test
# modules) even where PYTHONDONTWRITEBYTECODE is set: otherwise each of the suite's hundreds of
# `python -m grstats` processes compiles grstats again (about 9 % of the CPU of the tests that
# start processes: docs/benchmarks.md, "Test suite").
KEEP_BYTECODE := env -u PYTHONDONTWRITEBYTECODE

test: $(VENV)/.installed system-deps $(GRAFANA_SCHEMA) ## run the test suite but the release files' proofs (about 10 minutes on 2 cores)
	$(KEEP_BYTECODE) $(BIN)/pytest $(PYTEST_PARALLEL) --ignore=tests/release --ignore=$(UPGRADE_PROOFS)

# The release files' proofs (tests/release: the single file and the Debian package built
# from this checkout, lintian, a bare root with every listener) and the upgrade proofs
# (the earlier release's processes beside this one's): minutes of PyInstaller on one worker,
# so CI runs them beside `make test` (.ci/run), as a step of their own.
UPGRADE_PROOFS := tests/upgrade/test_upgrade.py
test-release: $(VENV)/.installed system-deps ## build the release files and prove them, and upgrades and rollbacks against the earlier release (about 3 minutes)
	$(KEEP_BYTECODE) $(BIN)/pytest -n 2 --dist loadgroup tests/release $(UPGRADE_PROOFS)

check: lint ## lint, then the tests that need no Spark, no subprocess and no server (under 2 minutes): the loop while editing
	$(KEEP_BYTECODE) $(BIN)/pytest $(PYTEST_PARALLEL) -q --check

lint: $(VENV)/.installed ## ruff (lint and format check) and mypy --strict
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/mypy tests

format: $(VENV)/.installed ## apply ruff's formatter and safe fixes
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(VENV)/.installed-bench ## run the benchmarks (not part of make test); figures go in docs/benchmarks.md
	$(BIN)/pytest tests/benchmarks -p no:cacheprovider --benchmark-columns=min,median,max,rounds
	$(BIN)/python tests/benchmarks/bench_gtid.py --json bench-results/gtid.json
	$(BIN)/python tests/benchmarks/bench_simulator.py
	$(BIN)/python -m tests.benchmarks.bench_agent
	$(BIN)/python -m tests.benchmarks.bench_load
	$(BIN)/python -m tests.benchmarks.bench_status --own-core --json bench-results/status.json
	$(BIN)/python -m tests.benchmarks.bench_scrape --own-core --json bench-results/scrape.json
	$(BIN)/python -m tests.benchmarks.bench_sql --own-core --json bench-results/sql.json
	$(BIN)/python -m tests.benchmarks.bench_mysql_read
	$(BIN)/python -m tests.benchmarks.bench_soak --json bench-results/soak.json
	$(BIN)/python -m tests.benchmarks.bench_soak --rate 0 --json bench-results/soak-no-reads.json
	$(BIN)/python -m tests.benchmarks.bench_footprint --json bench-results/footprint.json
	$(BIN)/python tests/benchmarks/bench_spool.py
	$(BIN)/python -m tests.benchmarks.bench_collector_fleet --json bench-results/collector_fleet.json
	$(BIN)/python tests/benchmarks/bench_spark.py --json bench-results/spark.json
	$(BIN)/python tests/benchmarks/bench_fleet_spark.py --json bench-results/fleet_spark.json
	$(BIN)/python -m tests.benchmarks.bench_fleet_delta --json bench-results/fleet_delta.json
	$(MAKE) dist
	$(BIN)/python -m tests.benchmarks.bench_release --json bench-results/release.json
	$(BIN)/python -m tests.benchmarks.bench_cli --json bench-results/cli.json

proto: $(VENV)/.installed ## regenerate the committed gRPC code (grstats.proto) from proto/grstats.proto
	$(BIN)/python proto/generate.py

# The release files: the sdist, the wheel (built from the sdist) and, from that wheel, the
# single-file executable for this machine (no Python needed on the host; Spark stays in the
# wheel's extra). deploy/release/build-binary.sh freezes it with PyInstaller.
dist: $(VENV)/.installed ## the release files in dist/: the sdist, the wheel, and the single-file executable grstats-VERSION-linux-ARCH and, from the same build, the directory bundle grstats-VERSION-linux-ARCH.dir/
	rm -rf dist
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m build --outdir dist .
	PYTHON=$(BIN)/python bash deploy/release/build-binary.sh dist/grstats-*.whl dist

# The Debian package of the directory bundle the same build writes beside the executable
# (deploy/debian/build-deb.sh): /usr/lib/grstats (the bundle) and /usr/bin/grstats linking to
# it, the units of deploy/systemd, the user grstats, /etc/grstats's example configs (conffiles).
deb: dist ## the Debian package dist/grstats_VERSION_ARCH.deb of the directory bundle (deploy/README.md: the Debian package)
	bash deploy/debian/build-deb.sh dist/grstats-*-linux-"$$(uname -m)".dir dist

# A release of this commit (deploy/release/release.sh): the files of dist and deb, each the same
# bytes at every build of one commit (dated the commit's time, sorted, a fixed hash seed), and
# dist/SHA256SUMS. The version is git's: a commit tagged v0.2.0 is 0.2.0 (CHANGELOG.md).
release: $(VENV)/.installed ## the release files of this commit in dist/, built reproducibly, and their dist/SHA256SUMS (the tree must be the commit)
	PYTHON=$(BIN)/python bash deploy/release/release.sh dist

clean: ## remove the virtual environment and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .benchmarks *.egg-info
