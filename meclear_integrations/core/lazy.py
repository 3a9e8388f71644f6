"""Imports on first use: lazy package exports (PEP 562) and numpy.

Importing one integration class (``from meclear_integrations.langchain import
ClearingRetriever``) should cost little next to importing the framework piece it extends
(``tools/import_cost.py``). Two tools keep the import path short:

- :func:`lazy_exports`: a package ``__init__`` maps each of its ``__all__`` names to its
  module (``_LAZY``) and imports them under ``TYPE_CHECKING`` only (so mypy and the API
  docs see them); ``from package import Name`` imports that name's module at that moment::

      _LAZY = {"MeClearEngine": ".engine"}
      __getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)

  A lazy name must not be the name of one of the package's submodules (a submodule
  imported first would shadow it).
- :data:`np`: numpy, imported when one of its attributes is first read. The configuration
  (``ClearanceConfig``) and the integrations' classes import the estimator, recency and
  similarity modules for their types and defaults; numpy is needed once a clearance
  computes. Those modules import it as::

      if TYPE_CHECKING:
          import numpy as np
      else:
          from .lazy import np
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from importlib import import_module
from typing import Any, cast

__all__ = ["LazyModule", "lazy_compile", "lazy_exports", "np"]


def lazy_exports(
    package: str, where: Mapping[str, str], names: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's module ``__getattr__`` and ``__dir__`` for names imported on first use.

    Args:
        package: The package's ``__name__``.
        where: Each lazy name's (relative or absolute) module.
        names: The package's ``__all__``.

    Returns:
        ``(__getattr__, __dir__)``: ``__getattr__`` imports a name's module, keeps the
        value in the package's namespace and returns it (``AttributeError`` for any other
        name); ``__dir__`` adds the lazy names to the loaded ones.
    """
    public = sorted(set(names))
    namespace = vars(import_module(package))

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *public})

    return __getattr__, __dir__


class LazyModule:
    """A stand-in for a module that imports it when one of its attributes is first read.

    Each attribute read is then kept on the stand-in, so later reads cost what a module
    attribute costs.
    """

    def __init__(self, name: str) -> None:
        self.__name = name

    def __getattr__(self, attribute: str) -> Any:
        value = getattr(import_module(self.__name), attribute)
        setattr(self, attribute, value)
        return value

    def __repr__(self) -> str:
        return f"<lazy module {self.__name!r}>"


np = LazyModule("numpy")
"""numpy, imported when one of its attributes is first read."""


class _LazyPattern:
    """A regular expression compiled when one of its attributes (``sub``, ``search``) is read."""

    def __init__(self, pattern: str, flags: int) -> None:
        self.__args = (pattern, flags)

    def __getattr__(self, attribute: str) -> Any:
        value = getattr(re.compile(*self.__args), attribute)
        setattr(self, attribute, value)
        return value


def lazy_compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(pattern, flags)``, compiled on first use instead of on import.

    For module-level patterns of modules the integrations import but use only in a query
    (a large alternation costs milliseconds to compile).

    Args:
        pattern: The regular expression.
        flags: ``re`` flags.

    Returns:
        A stand-in with the compiled pattern's attributes (``sub``, ``search``...).
    """
    return cast("re.Pattern[str]", _LazyPattern(pattern, flags))
