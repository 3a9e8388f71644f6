"""Each subpackage's ``__all__`` is a short, documented list of what a user calls.

The API reference (docs/api/*.md, mkdocstrings ``filters: public``) renders exactly these
names, so every one of them must carry a docstring; plumbing stays importable from its own
module but is not re-exported.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import itertools
import pkgutil
from pathlib import Path

import pytest

import meclear_integrations

# The most names each subpackage's ``__all__`` may list (issue 30 item 4: core at most 30).
# langchain, llama_index and pipeline each re-export the components' setting groups
# (Limits, Loop, Documents: issue 30 item 3), so a user imports them beside the component.
# langchain adds MeClearMiddleware (issue 39 item 1); langgraph holds ClearingStore (item 2);
# llama_index adds MeClearMemoryBlock (item 3).
MAX_EXPORTS = {
    "admission": 16,
    "cli": 2,
    "core": 30,
    "exports": 3,
    "guard": 0,
    "jobs": 8,
    "judges": 18,
    "langchain": 17,
    "langgraph": 1,
    "ledger": 17,
    "llama_index": 17,
    "pipeline": 11,
    "runtime": 2,
    "simulation": 13,
    "telemetry": 5,
    "triggers": 13,
    "writeback": 10,
}

PACKAGE_DIR = Path(meclear_integrations.__file__).parent
SUBPACKAGES = sorted(info.name for info in pkgutil.iter_modules([str(PACKAGE_DIR)]) if info.ispkg)


def test_every_subpackage_has_a_size_pin() -> None:
    assert sorted(MAX_EXPORTS) == SUBPACKAGES


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_subpackage_all_is_short(name: str) -> None:
    module = importlib.import_module(f"meclear_integrations.{name}")
    exported = list(module.__all__)
    assert len(exported) == len(set(exported)), f"{name}: duplicate names"
    assert len(exported) <= MAX_EXPORTS[name], f"{name}: {len(exported)} names"


def _attribute_docstring(obj_module: str, attr: str) -> str | None:
    """Return the string literal right after ``attr = ...`` in ``obj_module``'s source."""
    source = inspect.getsource(importlib.import_module(obj_module))
    body = ast.parse(source).body
    for node, after in itertools.pairwise(body):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        named = any(isinstance(t, ast.Name) and t.id == attr for t in targets)
        if named and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            value = after.value.value
            return value if isinstance(value, str) else None
    return None


def _defining_module(package: str, attr: str) -> str | None:
    """Return the module ``package/__init__.py`` imports ``attr`` from (or the package).

    A name the package loads on first use (PEP 562) is found in its ``_LAZY`` map.
    """
    init = importlib.import_module(package)
    lazy = getattr(init, "_LAZY", {})
    if attr in lazy:
        return importlib.util.resolve_name(lazy[attr], package)
    tree = ast.parse(inspect.getsource(init))
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any(
            (a.asname or a.name) == attr for a in node.names
        ):
            return importlib.util.resolve_name("." * node.level + (node.module or ""), package)
    return package


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_every_exported_name_is_documented(name: str) -> None:
    package = f"meclear_integrations.{name}"
    module = importlib.import_module(package)
    undocumented = []
    for attr in module.__all__:
        obj = getattr(module, attr)
        if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismethod(obj):
            doc = obj.__doc__
        else:  # a constant or alias: its attribute docstring in the defining module
            where = _defining_module(package, attr)
            doc = _attribute_docstring(where, attr) if where else None
        if not (doc and doc.strip()):
            undocumented.append(attr)
    assert not undocumented, f"{package}: no docstring for {undocumented}"
