#!/usr/bin/env python
"""Sync/async twins: a ``def`` and its ``async def`` twin in one module and class.

Twins are named alike: ``name`` / ``aname``, ``_name`` / ``_aname``, ``name_sync`` /
``name_async``, ``sync_name`` / ``async_name``. Prints the pairs and the lines both sides
span, and their share of the package's lines::

    python tools/sync_twins.py                 # meclear_integrations
    python tools/sync_twins.py --list          # every pair, longest first
    python tools/sync_twins.py --under langchain --under pipeline
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "meclear_integrations"


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


def twins(path: Path) -> list[tuple[int, str, str]]:
    """The twin pairs of one module: (lines of both, sync name, async name)."""
    tree = ast.parse(path.read_text())
    owners = _owner(tree)
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    found, used = [], set()
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
                found.append((lines, twin.name, node.name))
                break
    return found


def main(argv: list[str] | None = None) -> int:
    """Print the twins' count and lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--under", action="append", default=[], help="a subfolder (repeatable)")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    roots = [PACKAGE / u for u in args.under] or [PACKAGE]
    files = sorted({p for root in roots for p in root.rglob("*.py")} if roots else set())
    pairs, total = [], 0
    for path in files:
        total += len(path.read_text().splitlines())
        for lines, sync, asynchronous in twins(path):
            pairs.append((lines, f"{path.relative_to(PACKAGE)}: {sync} / {asynchronous}"))
    pairs.sort(reverse=True)
    if args.list:
        for lines, where in pairs:
            print(f"{lines:5d}  {where}")
    twin_lines = sum(lines for lines, _ in pairs)
    print(
        f"{len(pairs)} twin pairs, {twin_lines} lines of {total} ({100 * twin_lines / total:.1f}%)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
