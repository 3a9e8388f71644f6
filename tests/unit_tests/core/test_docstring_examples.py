"""The ``Example:`` sections of the engine's docstrings run as written."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import meclear_integrations.core

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(
        meclear_integrations.core.__path__, prefix="meclear_integrations.core."
    )
)


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} example(s) failed in {name}"


def test_examples_exist() -> None:
    finder = doctest.DocTestFinder()
    examples = sum(
        len(test.examples)
        for name in MODULES
        for test in finder.find(importlib.import_module(name))
    )
    assert examples >= 10
