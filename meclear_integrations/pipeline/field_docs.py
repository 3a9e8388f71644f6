"""Field descriptions from attribute docstrings, read from the module's parsed source.

The settings of the clearing components are documented by a docstring under each field.
pydantic's ``use_attribute_docstrings`` turns those into the fields' descriptions, but on
Python < 3.13 it finds a class's source by walking the stack and calling
``inspect.getmodule`` on every frame, which resolves the file of every loaded module: once
LangChain or LlamaIndex is loaded (about a thousand modules) that made each component
class cost tens of milliseconds at import. :func:`describe_fields` gives the same
descriptions (pydantic's rule: a string statement right after an annotated assignment)
from the class's block of its module's source.

A model that uses it sets ``defer_build=True`` (its schema is built on first use, after the
descriptions are in place) and calls :func:`describe_fields` on itself and on each
subclass (``__pydantic_init_subclass__``).
"""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import re
import sys
from typing import Any

from pydantic import BaseModel

__all__ = ["attribute_docstrings", "describe_fields"]


class _DocstringVisitor(ast.NodeVisitor):
    """pydantic's rule for attribute docstrings (``_internal._docs_extraction``)."""

    def __init__(self) -> None:
        super().__init__()
        self.target: str | None = None
        self.attrs: dict[str, str] = {}
        self.previous_node_type: type[ast.AST] | None = None

    def visit(self, node: ast.AST) -> Any:
        result = super().visit(node)
        self.previous_node_type = type(node)
        return result

    def visit_AnnAssign(self, node: ast.AnnAssign) -> Any:
        if isinstance(node.target, ast.Name):
            self.target = node.target.id

    def visit_Expr(self, node: ast.Expr) -> Any:
        if (
            isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            and self.previous_node_type is ast.AnnAssign
        ):
            if self.target:
                self.attrs[self.target] = inspect.cleandoc(node.value.value)
            self.target = None

    # Nested classes and functions: their attributes are not the class's.
    def visit_ClassDef(self, node: ast.ClassDef) -> Any:
        pass

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        pass

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> Any:
        pass


@functools.cache
def _module_tree(filename: str) -> ast.Module | None:
    source = "".join(linecache.getlines(filename))
    try:
        return ast.parse(source) if source else None
    except SyntaxError:  # pragma: no cover - a loaded module's source parses
        return None


def _class_node(tree: ast.Module, qualname: str) -> ast.ClassDef | None:
    body: list[ast.stmt] = tree.body
    node: ast.ClassDef | None = None
    for part in qualname.split("."):
        node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
        if node is None:
            return None
        body = node.body
    return node


_INDENTED = (" ", "\t", "\n", "\r", "#", "")
"""How a line inside a top-level class block starts (or a blank or comment line)."""


def _top_level_class(filename: str, name: str) -> ast.ClassDef | None:
    """The class statement ``class <name>`` of a module, parsing only its block.

    None when the module has no such line or more than one (then the whole module is
    parsed instead).
    """
    lines = linecache.getlines(filename)
    starts = [i for i, line in enumerate(lines) if re.match(rf"class {name}\b", line)]
    if len(starts) != 1:
        return None
    first = starts[0]
    while first > 0 and lines[first - 1].startswith("@"):  # its decorators
        first -= 1
    # The block ends at the next line that starts in column 0 (a string's continuation line
    # there cuts it short: it does not parse, and the whole module is parsed instead).
    end = next(
        (i for i in range(starts[0] + 1, len(lines)) if lines[i][:1] not in _INDENTED),
        len(lines),
    )
    try:
        node = ast.parse("".join(lines[first:end])).body[0]
    except (SyntaxError, IndexError):
        return None
    return node if isinstance(node, ast.ClassDef) and node.name == name else None


def attribute_docstrings(cls: type[Any]) -> dict[str, str]:
    """The docstrings under the annotated attributes of ``cls`` (its own source only).

    Args:
        cls: A class defined at module level (or nested in such a class).

    Returns:
        Each attribute's cleaned docstring, by attribute name; ``{}`` when the source
        cannot be read.
    """
    if "<locals>" in cls.__qualname__:
        # Defined in a function: only pydantic's frame walk finds it.
        from pydantic._internal._docs_extraction import extract_docstrings_from_cls

        return extract_docstrings_from_cls(cls)
    filename = getattr(sys.modules.get(cls.__module__), "__file__", None)
    if not filename:
        return {}
    node = _top_level_class(filename, cls.__qualname__) if "." not in cls.__qualname__ else None
    if node is None:
        tree = _module_tree(filename)
        node = _class_node(tree, cls.__qualname__) if tree is not None else None
    if node is None:
        return {}
    visitor = _DocstringVisitor()
    visitor.generic_visit(node)
    return visitor.attrs


def describe_fields(cls: type[BaseModel]) -> None:
    """Give each field of ``cls`` without a description its attribute docstring.

    What ``use_attribute_docstrings=True`` does, for a model built with
    ``defer_build=True`` (its schema, built on first use, then carries them).

    Args:
        cls: The pydantic model class.
    """
    docs = attribute_docstrings(cls)
    for name, field in cls.__pydantic_fields__.items():
        if field.description is None and name in docs:
            field.description = docs[name]
