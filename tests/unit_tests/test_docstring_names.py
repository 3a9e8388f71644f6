"""Every dotted name a docstring cites as a path of this package resolves.

A docstring of ``meclear_integrations`` that cites ````core.prior````,
````ledger.store.HarmLedger```` or ````ClearanceConfig.failure```` must still name something
after a rename: the name is resolved by import and attribute lookup (pydantic and dataclass
fields, annotations and what ``__init__`` sets on ``self`` included). A cited name counts as
a path of the package when its first part is ``meclear_integrations`` / ``meclear_bench``, a
subpackage of the package (``core``, ``ledger``, ``stages``...), a sibling module of the
citing module that the module's code does not also use as a variable and no class declares as
a field (``verification.recovery_rate`` is a setting's field), or a class the package
defines. A name a module lacks may be a member of a class it defines (``report.candidates``:
the report's). Anything else (``asyncio.gather``, ``gen_ai.operation.name``,
``config.max_concurrency``, a third-party module such as ``langsmith.Client``) is not checked.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import itertools
import re
from functools import cache
from pathlib import Path
from typing import Any, get_args, get_origin

import pytest

import meclear_integrations

PACKAGE = Path(meclear_integrations.__file__).parent
ROOT = PACKAGE.parent
CITED = re.compile(r"``([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(\))?``")
"""A double-backticked dotted name (an optional ``()`` after it)."""


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
PACKAGES = {_module_name(p) for p in PACKAGE.rglob("__init__.py")}
SUBPACKAGES: dict[str, list[str]] = {}
for _name in PACKAGES - {"meclear_integrations"}:
    SUBPACKAGES.setdefault(_name.rsplit(".", 1)[1], []).append(_name)


@cache
def _tree(module: str) -> ast.Module:
    return ast.parse(MODULES[module].read_text(encoding="utf-8"))


@cache
def _classes() -> dict[str, list[str]]:
    """Class name -> the modules of the package that define it at top level."""
    found: dict[str, list[str]] = {}
    for module in MODULES:
        for node in _tree(module).body:
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(module)
    return found


@cache
def _third_party() -> frozenset[str]:
    """Top-level modules the package imports from outside itself (``langsmith``...)."""
    roots: set[str] = set()
    for module in MODULES:
        for node in ast.walk(_tree(module)):
            if isinstance(node, ast.Import):
                roots.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots.add(node.module.split(".")[0])
    return frozenset(roots - {"meclear_integrations", "meclear_bench"})


@cache
def _fields() -> frozenset[str]:
    """Names the package's classes declare as fields (``verification``, ``documents``...)."""
    return frozenset(
        item.target.id
        for module in MODULES
        for node in ast.walk(_tree(module))
        if isinstance(node, ast.ClassDef)
        for item in node.body
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
    )


@cache
def _identifiers(module: str) -> frozenset[str]:
    """Every name the module's code uses: variables, parameters, attributes, fields."""
    names: set[str] = set()
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
    return frozenset(names)


def _docstrings(module: str) -> list[tuple[int, str]]:
    """(line, text) of the module's, classes', functions' and attributes' docstrings."""
    out = []
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            first = body[0] if body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                out.append((first.lineno, first.value.value))
            for before, after in itertools.pairwise(body):  # attribute docstrings
                if (
                    isinstance(before, ast.Assign | ast.AnnAssign)
                    and isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)
                ):
                    out.append((after.lineno, after.value.value))
    return out


def _member(owner: Any, name: str) -> tuple[bool, Any]:
    """(found, what to look further into) for ``owner.name``: attributes, fields, members
    a class's ``__init__`` sets on ``self``."""
    if hasattr(owner, name):
        return True, getattr(owner, name)
    if not inspect.isclass(owner):
        return False, None
    fields = getattr(owner, "model_fields", None)
    if isinstance(fields, dict) and name in fields:
        return True, _class_of(fields[name].annotation)
    if dataclasses.is_dataclass(owner) and name in {f.name for f in dataclasses.fields(owner)}:
        return True, None
    for klass in owner.__mro__:
        if name in getattr(klass, "__annotations__", {}):
            return True, None
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        if re.search(rf"\bself\.{name}\b\s*(:[^=\n]*)?=", source):
            return True, None
    return False, None


def _class_of(annotation: Any) -> Any:
    """The class a field holds (``X | None`` -> X), else None (nothing further is checked)."""
    if inspect.isclass(annotation) and get_origin(annotation) is None:
        return annotation
    classes = [a for a in get_args(annotation) if inspect.isclass(a) and a is not type(None)]
    return classes[0] if len(classes) == 1 else None


def _resolves(dotted: str) -> bool:
    """Whether ``dotted`` (a full path) names a module or something inside one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):  # the longest importable module first
        module_name = ".".join(parts[:cut])
        try:
            if importlib.util.find_spec(module_name) is None:
                continue
        except (ImportError, ValueError):
            continue
        obj: Any = importlib.import_module(module_name)
        rest = parts[cut:]
        if rest and not hasattr(obj, rest[0]):  # ``report.candidates``: its class's member
            owners = [
                c
                for _, c in inspect.getmembers(obj, inspect.isclass)
                if c.__module__ == obj.__name__
            ]
            return any(_follows(owner, rest) for owner in owners)
        return _follows(obj, rest)
    return False


def _follows(obj: Any, names: list[str]) -> bool:
    """Whether ``obj.a.b...`` exists for ``names`` [a, b...]."""
    for name in names:
        if obj is None:
            return True  # a field of a type this check does not follow
        found, obj = _member(obj, name)
        if not found:
            return False
    return True
    return False


def _candidates(module: str, cited: str) -> list[str] | None:
    """The full paths ``cited`` may stand for in ``module``; None when it is not a path of
    the package (module docstring)."""
    first, _, rest = cited.partition(".")
    if first in ("meclear_integrations", "meclear_bench"):
        return [cited]
    if first in _third_party():  # ``langsmith.Client``, ``llama_index.llms.openai``
        return None
    if first in SUBPACKAGES:
        return [f"{package}.{rest}" for package in SUBPACKAGES[first]]
    package = module if module in PACKAGES else module.rsplit(".", 1)[0]
    sibling = f"{package}.{first}"
    if (
        sibling in MODULES
        and sibling != module
        and first not in _identifiers(module)
        and first not in _fields()  # ``verification.recovery_rate``: a setting's field
    ):
        return [f"{package}.{cited}"]
    if first in _classes():
        return [f"{where}.{cited}" for where in _classes()[first]]
    return None


def _citations() -> list[tuple[str, int, str]]:
    out = []
    for module in MODULES:
        for line, text in _docstrings(module):
            for match in CITED.finditer(text):
                out.append((module, line, match.group(1)))
    return out


def test_the_matcher_reads_paths_and_leaves_other_names() -> None:
    module = "meclear_integrations.ledger.store"
    assert _candidates(module, "core.prior") == ["meclear_integrations.core.prior"]
    assert _candidates(module, "scope_state.load_active") == [
        "meclear_integrations.ledger.scope_state.load_active"
    ]
    assert _candidates(module, "asyncio.gather") is None
    assert _candidates(module, "gen_ai.operation.name") is None
    assert any(_resolves(c) for c in _candidates(module, "ClearanceConfig.failure") or [])
    assert any(_resolves(c) for c in _candidates(module, "ledger.store.HarmLedger.record") or [])
    assert not any(_resolves(c) for c in _candidates(module, "core.prior.no_such_name") or [])
    assert not any(_resolves(c) for c in _candidates(module, "ClearanceConfig.on_failure") or [])


def test_every_cited_package_path_resolves() -> None:
    citations = _citations()
    assert len(citations) > 100  # the matcher sees the docstrings
    stale = []
    for module, line, cited in citations:
        candidates = _candidates(module, cited)
        if candidates is not None and not any(_resolves(c) for c in candidates):
            stale.append(f"{MODULES[module].relative_to(ROOT)}:{line}: ``{cited}``")
    if stale:
        pytest.fail("docstrings cite names that do not resolve:\n" + "\n".join(stale))
