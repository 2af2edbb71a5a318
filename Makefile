# sowsched: every target does its own set-up (virtual environment, install, protobuf code).
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PROTO_SRC := $(wildcard proto/sowsched/v1/*.proto)
PROTO_STAMP := server/gen/.generated

.PHONY: setup proto demo test bench lint clean

setup: $(STAMP) $(PROTO_STAMP)

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,ray]'
	touch $(STAMP)

$(PROTO_STAMP): $(STAMP) $(PROTO_SRC) scripts/gen_proto.py
	$(BIN)/python scripts/gen_proto.py
	touch $(PROTO_STAMP)

proto: $(PROTO_STAMP)

demo: setup
	$(BIN)/python -m cli.demo

test: setup
	$(BIN)/python -m pytest -q

bench: setup
	@echo 'benchmarks:'
	$(BIN)/sowsched bench core --out bench-core.json
	$(BIN)/sowsched bench hpc --out bench-hpc.json
	$(BIN)/sowsched bench grpc --out bench-grpc.json
	$(BIN)/sowsched bench history --out bench-history.json
	$(BIN)/sowsched bench solvers --time-limit 20 --out bench-solvers.json
	$(BIN)/sowsched bench welfare --workload overload --loads 0.5,1,2 --seeds 2 --time-limit 5 --out bench-out/welfare

lint: setup
	$(BIN)/ruff check mechanism models server clients cli benchmarks tests
	$(BIN)/mypy mechanism models server clients cli benchmarks tests

clean:
	rm -rf $(VENV) server/gen build *.egg-info
