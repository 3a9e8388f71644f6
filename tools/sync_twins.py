#!/usr/bin/env python
"""Sync/async twins: a ``def`` and its ``async def`` twin in one module and class.

Twins are named alike: ``name`` / ``aname``, ``_name`` / ``_aname``, ``name_sync`` /
``name_async``, ``sync_name`` / ``async_name``. Prints the pairs and the lines both sides
span, and their share of the package's lines::

    python tools/sync_twins.py                 # meclear_integrations
    python tools/sync_twins.py --list          # every pair, longest first
    python tools/sync_twins.py --under langchain --under pipeline
    python tools/sync_twins.py --duplicated    # only pairs whose bodies repeat each other

``--duplicated`` keeps a pair only when its two bodies really repeat each other. Each
body is normalised first: the docstring dropped; ``await`` removed; ``async for`` /
``async with`` made ``for`` / ``with``; a worker-thread hop (``asyncio.to_thread(f, ...)``,
``in_worker(f, ...)``, ``loop.run_in_executor(None, f, ...)``) made the plain call
``f(...)``; and every async-side name whose sync twin name (the naming rules above) occurs
in the sync body renamed to it (``self._aget`` -> ``self._get``). The two normalised
bodies are split into tokens and compared with :class:`difflib.SequenceMatcher`; the pair
counts when the ratio is at least ``--threshold`` (0.75) and the shorter body has at least
``--min-statements`` statements (4, nested ones included), so one-line delegates
(``async def aname(...): return await to_thread(name, ...)``), twin one-liners
(``return self.x.get(k)`` / ``return await self.x.aget(k)``) and the 1-3 statement drivers
of a flow written once (``return run_steps(flow(...))`` / ``return await
arun_steps(flow(...))``, :mod:`meclear_integrations.core.concurrency.step_driver`) are not
duplicated logic.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "meclear_integrations"

THRESHOLD = 0.75
"""Token similarity of the normalised bodies from which a pair repeats itself."""
MIN_STATEMENTS = 4
"""Statements the shorter normalised body needs for its pair to count as duplicated logic."""

_THREAD_HOPS = {"to_thread", "in_worker"}
"""Calls whose first argument is the function they run in a worker thread."""
_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class Twin:
    """One sync/async pair of a module.

    Args:
        lines: lines both definitions span.
        sync: the ``def``.
        asynchronous: the ``async def``.
    """

    lines: int
    sync: ast.FunctionDef
    asynchronous: ast.AsyncFunctionDef

    @property
    def names(self) -> tuple[str, str]:
        """The sync and the async name."""
        return self.sync.name, self.asynchronous.name

    def similarity(self) -> float:
        """Token similarity (0-1) of the two normalised bodies."""
        sync, asynchronous = normalised(self.sync, self.asynchronous)
        left, right = _TOKEN.findall(sync), _TOKEN.findall(asynchronous)
        return difflib.SequenceMatcher(None, left, right, autojunk=False).ratio()

    def duplicated(
        self, threshold: float = THRESHOLD, min_statements: int = MIN_STATEMENTS
    ) -> bool:
        """True when the bodies repeat each other (see the module's docstring)."""
        shorter = min(_statements(self.sync), _statements(self.asynchronous))
        return shorter >= min_statements and self.similarity() >= threshold


def _owner(tree: ast.Module) -> dict[int, str]:
    owners: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                owners[id(item)] = node.name
    return owners


def _sync_names(name: str) -> set[str]:
    names = {name.replace("_async", "_sync"), name.replace("async", "sync")}
    names |= {name.replace("_async", ""), name.replace("async_", "")}
    if name.startswith("a"):
        names.add(name[1:])
    if name.startswith("_a"):
        names.add("_" + name[2:])
    return names - {name}


def _body(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    body = list(node.body)
    first = body[0] if body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        body = body[1:]
    return body


def _statements(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Statements of the body (nested ones included), the docstring left out."""
    return sum(isinstance(n, ast.stmt) for s in _body(node) for n in ast.walk(s))


def _identifiers(nodes: list[ast.stmt]) -> set[str]:
    found: set[str] = set()
    for statement in nodes:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name):
                found.add(node.id)
            elif isinstance(node, ast.Attribute):
                found.add(node.attr)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found.add(node.name)
            elif isinstance(node, ast.arg):
                found.add(node.arg)
    return found


def _callee_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


class _Desync(ast.NodeTransformer):
    """Rewrites an async body into the shape its sync twin would have."""

    def __init__(self, renames: dict[str, str]) -> None:
        self.renames = renames

    def visit_Await(self, node: ast.Await) -> ast.AST:
        return self.visit(node.value)

    def visit_AsyncFor(self, node: ast.AsyncFor) -> ast.AST:
        self.generic_visit(node)
        return ast.For(
            target=node.target,
            iter=node.iter,
            body=node.body,
            orelse=node.orelse,
            type_comment=None,
        )

    def visit_AsyncWith(self, node: ast.AsyncWith) -> ast.AST:
        self.generic_visit(node)
        return ast.With(items=node.items, body=node.body, type_comment=None)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        self.generic_visit(node)
        return ast.FunctionDef(
            name=self.renames.get(node.name, node.name),
            args=node.args,
            body=node.body,
            decorator_list=node.decorator_list,
            returns=node.returns,
            type_comment=None,
        )

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        name = _callee_name(node.func)
        if name in _THREAD_HOPS and node.args:
            return ast.Call(func=node.args[0], args=node.args[1:], keywords=node.keywords)
        if name == "run_in_executor" and len(node.args) >= 2:
            return ast.Call(func=node.args[1], args=node.args[2:], keywords=node.keywords)
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Name(id=self.renames.get(node.id, node.id), ctx=node.ctx)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        return ast.Attribute(
            value=node.value, attr=self.renames.get(node.attr, node.attr), ctx=node.ctx
        )


def normalised(sync: ast.FunctionDef, asynchronous: ast.AsyncFunctionDef) -> tuple[str, str]:
    """The two bodies as source text, normalised for comparison (module docstring)."""
    sync_body, async_body = _body(sync), _body(asynchronous)
    known = _identifiers(sync_body) | {sync.name}
    renames = {asynchronous.name: sync.name}
    for name in _identifiers(async_body) - known:
        match = sorted(_sync_names(name) & known)
        if match:
            renames[name] = match[0]
    desync = _Desync(renames)
    rewritten = [ast.fix_missing_locations(desync.visit(s)) for s in async_body]
    return (
        "\n".join(ast.unparse(s) for s in sync_body),
        "\n".join(ast.unparse(s) for s in rewritten),
    )


def twin_pairs(source: str) -> list[Twin]:
    """The twin pairs of one module's source."""
    tree = ast.parse(source)
    owners = _owner(tree)
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    found: list[Twin] = []
    used: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.AsyncFunctionDef):
            continue
        names = _sync_names(node.name)
        for twin in functions:
            same_owner = owners.get(id(twin)) == owners.get(id(node))
            if id(twin) not in used and twin.name in names and same_owner:
                used.add(id(twin))
                lines = (twin.end_lineno or twin.lineno) - twin.lineno + 1
                lines += (node.end_lineno or node.lineno) - node.lineno + 1
                found.append(Twin(lines, twin, node))
                break
    return found


def twins(path: Path) -> list[tuple[int, str, str]]:
    """The twin pairs of one module: (lines of both, sync name, async name)."""
    return [(t.lines, *t.names) for t in twin_pairs(path.read_text())]


def tally(
    roots: list[Path] | None = None,
    *,
    duplicated: bool = False,
    threshold: float = THRESHOLD,
    minimum: int = MIN_STATEMENTS,
) -> tuple[list[tuple[int, str, float]], int]:
    """The pairs under ``roots`` and the lines of the files read (what :func:`main` prints).

    Args:
        roots: Folders to read (default: the package).
        duplicated: Keep only the pairs whose bodies repeat each other.
        threshold: Token similarity from which a pair is duplicated.
        minimum: Statements the shorter body needs to count as duplicated.

    Returns:
        ``(lines of both, "module: sync / async", similarity)`` per pair, longest first,
        and the total lines.
    """
    files = sorted({p for root in roots or [PACKAGE] for p in root.rglob("*.py")})
    pairs: list[tuple[int, str, float]] = []
    total = 0
    for path in files:
        source = path.read_text()
        total += len(source.splitlines())
        for twin in twin_pairs(source):
            if duplicated and not twin.duplicated(threshold, minimum):
                continue
            sync, asynchronous = twin.names
            where = f"{path.relative_to(PACKAGE)}: {sync} / {asynchronous}"
            pairs.append((twin.lines, where, twin.similarity()))
    pairs.sort(reverse=True)
    return pairs, total


def share(pairs: list[tuple[int, str, float]], total: int) -> float:
    """The pairs' lines as a percentage of ``total`` lines."""
    return 100 * sum(lines for lines, _, _ in pairs) / total


def main(argv: list[str] | None = None) -> int:
    """Print the twins' count and lines."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--under", action="append", default=[], help="a subfolder (repeatable)")
    parser.add_argument("--list", action="store_true", help="every pair, longest first")
    parser.add_argument(
        "--duplicated",
        action="store_true",
        help="count only the pairs whose normalised bodies repeat each other",
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=THRESHOLD,
        help=f"token similarity from which a pair is duplicated (default {THRESHOLD})",
    )
    parser.add_argument(
        "--min-statements",
        type=int,
        default=MIN_STATEMENTS,
        help=f"statements the shorter body needs to count (default {MIN_STATEMENTS})",
    )
    args = parser.parse_args(argv)
    roots = [PACKAGE / u for u in args.under] or [PACKAGE]
    limits = {"threshold": args.threshold, "minimum": args.min_statements}
    pairs, total = tally(roots, duplicated=args.duplicated, **limits)
    if args.list:
        for lines, where, similarity in pairs:
            print(f"{lines:5d}  {similarity:4.2f}  {where}")
    twin_lines = sum(lines for lines, _, _ in pairs)
    kind = "duplicated twin pairs" if args.duplicated else "twin pairs"
    print(f"{len(pairs)} {kind}, {twin_lines} lines of {total} ({share(pairs, total):.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
