# sowsched: every target does its own set-up (virtual environment, locked install, protobuf code).
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCK := requirements.lock
EXTRAS := .[dev,ray]
PROTO_SRC := $(wildcard proto/sowsched/v1/*.proto)
PROTO_STAMP := server/gen/.generated
LINTED := mechanism models server clients cli benchmarks tests

.PHONY: setup proto demo demo-cluster test bench lint upgrade clean

setup: $(STAMP) $(PROTO_STAMP)

# Exactly the versions in requirements.lock (the set the suite last passed with): a constraints file, so pip
# installs what pyproject.toml asks for at the locked versions and nothing newer.
$(STAMP): pyproject.toml $(LOCK)
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c $(LOCK) -e '$(EXTRAS)'
	touch $(STAMP)

$(PROTO_STAMP): $(STAMP) $(PROTO_SRC) scripts/gen_proto.py
	$(BIN)/python scripts/gen_proto.py
	touch $(PROTO_STAMP)

proto: $(PROTO_STAMP)

demo: setup
	$(BIN)/python -m cli.demo

# The Slurm test bed (scripts/slurm-up, as root), a wall-clock server, the agent and pipelines of real commands.
demo-cluster: setup
	$(BIN)/python -m cli.demo_cluster

# Two workers (pytest-xdist): the suite is mostly one process waiting on its own servers and subprocesses, so a
# second worker halves its time on two cores; the tests that share the Slurm test bed or time wall-clock rounds
# run in one worker, in order (tests/conftest.py). TEST_WORKERS=0 runs everything in this process.
TEST_WORKERS ?= 2
test: setup
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

bench: setup
	@echo 'benchmarks:'
	$(BIN)/sowsched bench cli --out bench-cli.json
	$(BIN)/sowsched bench core --out bench-core.json
	$(BIN)/sowsched bench hpc --out bench-hpc.json
	$(BIN)/sowsched bench grpc --out bench-grpc.json
	$(BIN)/sowsched bench agent --out bench-agent.json
	$(BIN)/sowsched bench writer --out bench-writer.json
	$(BIN)/sowsched bench scale --out bench-scale.json
	$(BIN)/sowsched bench history --out bench-history.json
	$(BIN)/sowsched bench solvers --time-limit 20 --out bench-solvers.json
	$(BIN)/sowsched bench welfare --workload overload --loads 0.5,1,2 --seeds 2 --time-limit 5 --out bench-out/welfare
	$(BIN)/sowsched bench predict --out bench-predict.json
	$(BIN)/sowsched bench backfill --jobs 15000 --out bench-backfill.json
	$(BIN)/sowsched bench forecast --out bench-forecast.json
	$(BIN)/sowsched bench cuc --out bench-cuc.json
	$(BIN)/sowsched bench cuc_bound --out bench-cuc-bound.json
	$(BIN)/sowsched bench cuc_jobs --out bench-cuc-jobs.json
	$(BIN)/sowsched bench planning --out bench-planning.json
	$(BIN)/sowsched bench capacity --workloads overload --seeds 16 --offline-seeds 1 --out bench-capacity.json

lint: setup
	$(BIN)/ruff check $(LINTED)
	$(BIN)/mypy $(LINTED)

# Refresh the lock on purpose: the newest versions pyproject.toml allows, in a scratch environment; the lock is
# rewritten only if the whole suite and the linters pass there. The next `make` then reinstalls .venv from it.
upgrade:
	rm -rf .venv-upgrade
	$(PYTHON) -m venv .venv-upgrade
	.venv-upgrade/bin/python -m pip install -q --upgrade pip
	.venv-upgrade/bin/python -m pip install -q -e '$(EXTRAS)'
	.venv-upgrade/bin/python scripts/gen_proto.py
	.venv-upgrade/bin/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup
	.venv-upgrade/bin/ruff check $(LINTED)
	.venv-upgrade/bin/mypy $(LINTED)
	{ head -n 1 $(LOCK); .venv-upgrade/bin/python -m pip freeze --exclude-editable | grep -v '^-e '; } > $(LOCK).new
	mv $(LOCK).new $(LOCK)
	rm -rf .venv-upgrade
	@echo "requirements.lock updated; commit it with the test run's result"

clean:
	rm -rf $(VENV) .venv-upgrade server/gen build *.egg-info
