# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv when missing.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test check lint typecheck pytest clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,openai,anthropic,gemini,postgres,tokens,mcp]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m agentsession.demo

check: lint typecheck

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

# The PostgreSQL store's tests need a server: .ci/with-postgres installs one when missing,
# starts a throwaway cluster for this run and stops it afterwards, whatever the outcome.
pytest: $(STAMP)
	bash .ci/with-postgres $(BIN)/pytest -q

test: check pytest

clean:
	rm -rf $(VENV) build dist *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
