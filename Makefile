# Developer tasks. `make test` is the README's test command; CI (.ci/run) runs lint,
# typecheck, the docs site and test in a fresh venv.
.PHONY: install test unit integration lint format typecheck docs docs-serve

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

docs:
	NO_MKDOCS_2_WARNING=1 $(PYTHON) -m mkdocs build --strict

docs-serve:
	NO_MKDOCS_2_WARNING=1 $(PYTHON) -m mkdocs serve
