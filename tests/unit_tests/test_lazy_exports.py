"""Packages that load their names on first use (PEP 562, ``core.lazy.lazy_exports``).

Every name of a lazy ``__all__`` imports (``from package import name``), is the defining
module's object, and is not shadowed by a submodule of the same name.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

LAZY_PACKAGES = [
    "meclear_integrations.admission",
    "meclear_integrations.core",
    "meclear_integrations.core.estimators",
    "meclear_integrations.judges",
    "meclear_integrations.pipeline",
    "meclear_integrations.runtime",
    "meclear_integrations.triggers",
]


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_lazy_name_imports_from_its_module(package: str) -> None:
    module = importlib.import_module(package)
    lazy = module._LAZY
    assert set(lazy) <= set(module.__all__), set(lazy) - set(module.__all__)
    submodules = {info.name for info in pkgutil.iter_modules(module.__path__)}
    assert not set(lazy) & submodules, "a lazy name a submodule would shadow"
    for name, where in lazy.items():
        defining = importlib.import_module(importlib.util.resolve_name(where, package))
        assert getattr(module, name) is getattr(defining, name), name
    for name in module.__all__:
        assert hasattr(module, name), name
        assert name in dir(module), name
    with pytest.raises(AttributeError):
        _ = module.no_such_name


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_name_imports_in_a_fresh_interpreter(package: str) -> None:
    """``from package import name`` for each name of ``__all__``, nothing loaded before."""
    names = importlib.import_module(package).__all__
    code = "\n".join(f"from {package} import {name}" for name in names)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_lazy_numpy_stand_in_is_numpy_once_read() -> None:
    import numpy

    from meclear_integrations.core.lazy import LazyModule

    stand_in = LazyModule("numpy")
    assert stand_in.zeros is numpy.zeros
    assert "zeros" in vars(stand_in)  # kept: the next read is a plain attribute
    with pytest.raises(AttributeError):
        _ = stand_in.no_such_function


def test_the_configuration_loads_no_numpy() -> None:
    """``ClearanceConfig()`` with its default estimators imports numpy only once it computes."""
    code = (
        "import sys\n"
        "from meclear_integrations.core import ClearanceConfig\n"
        "ClearanceConfig()\n"
        "assert 'numpy' not in sys.modules, 'numpy imported'\n"
        "from meclear_integrations.core.estimators import KernelShapley\n"
        "rng = KernelShapley(seed=3).rng\n"
        "import numpy\n"
        "assert rng.random() == numpy.random.default_rng(3).random()\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_a_lazy_pattern_is_the_compiled_pattern_once_read() -> None:
    import re

    from meclear_integrations.core.lazy import lazy_compile

    pattern = lazy_compile(r"(?<=\d),(?=\d{3}\b)", re.IGNORECASE)
    assert "sub" not in vars(pattern)  # nothing compiled yet
    assert pattern.sub("", "1,000 and 2,50") == "1000 and 2,50"
    assert pattern.pattern == r"(?<=\d),(?=\d{3}\b)" and pattern.flags & re.IGNORECASE
