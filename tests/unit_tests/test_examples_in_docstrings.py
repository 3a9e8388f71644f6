"""The ``Example:`` sections of the docstrings run and show what they claim."""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

# Subpackages whose docstring examples are checked here (no framework, database or plotting
# import is needed to run them).
PACKAGES = (
    "meclear_bench",
    "meclear_integrations.cli",
    "meclear_integrations.simulation",
    "meclear_integrations.ledger",
    "meclear_integrations.triggers",
    "meclear_integrations.telemetry",
)


def _modules_with_examples() -> list[str]:
    names = []
    for package in PACKAGES:
        module = importlib.import_module(package)
        found = [module.__name__]
        found += [
            info.name
            for info in pkgutil.walk_packages(module.__path__, prefix=f"{module.__name__}.")
        ]
        for name in found:
            spec = importlib.util.find_spec(name)
            if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
                continue
            with open(spec.origin, encoding="utf-8") as handle:
                if ">>> " in handle.read():
                    names.append(name)
    return names


MODULES = _modules_with_examples()


def test_examples_are_found() -> None:
    assert "meclear_integrations.triggers.policies" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} failing example(s) in {name}"
