"""Load a script of ``tools/`` as a module (the tools are scripts, not a package)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def loaded_tool(name: str) -> Iterator[ModuleType]:
    """``tools/<name>.py`` imported as ``<name>_tool`` for the caller's tests, then forgotten.

    Meant as the body of a module-scoped fixture: ``yield from loaded_tool("sync_twins")``.
    """
    spec = importlib.util.spec_from_file_location(f"{name}_tool", TOOLS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)
