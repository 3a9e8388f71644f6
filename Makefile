# Developer tasks. `make test` is the README's test command; CI (.ci/run) runs lint,
# typecheck and test in a fresh venv.
.PHONY: install test unit integration lint format typecheck

PYTHON ?= python

install:
	$(PYTHON) -m pip install -e ".[dev]"

test:
	$(PYTHON) -m pytest

unit:
	$(PYTHON) -m pytest tests/unit_tests

integration:
	$(PYTHON) -m pytest tests/integration_tests

lint:
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .

format:
	$(PYTHON) -m ruff format .
	$(PYTHON) -m ruff check --fix .

typecheck:
	$(PYTHON) -m mypy
