#!/usr/bin/env python
"""Move the evaluation harness out of the library and the loose modules into named rooms.

Issue 30 items 1-2. Run once, from the repository root, on a clean work tree::

    python tools/restructure.py            # move, rewrite, format; then review and commit
    python tools/restructure.py --dry-run  # print the moves only

What it does:

1. ``git mv`` per :data:`FILE_MOVES` (explicit) and :data:`DIR_MOVES` (rules for whole folders, so
   files other branches added there meanwhile follow their folder: anything under
   ``meclear_integrations/bench/`` goes to ``meclear_bench/``).
2. Rewrites every reference: ``from ... import`` statements, relative ones included (parsed with
   libcst, re-expressed relative to the file's new home inside one top-level package and
   absolute across packages), then every dotted name (``meclear_integrations.bench.runner``
   in imports, strings, monkeypatch targets, entry points, docs) and every path
   (``meclear_integrations/bench/data``) in the tracked text files.
3. Splits the ``meclear`` command list: the harness's commands leave the library's list for
   ``meclear_bench.cli`` (found through the ``meclear.commands`` entry points).
4. Updates pyproject.toml (wheel packages, mypy packages, the entry point), installs the new
   architecture test, and runs ``ruff check --fix`` (import order) and ``ruff format``.

It refuses to run twice (``meclear_bench/`` exists) or on a dirty tree, and it fails on a loose
top-level module it has no room for (add it to :data:`FILE_MOVES`).
"""

from __future__ import annotations

import argparse
import io
import json
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import libcst as cst

ROOT = Path(__file__).resolve().parent.parent
LIB = "meclear_integrations"
HARNESS = "meclear_bench"

# Explicit moves (old path -> new path), relative to the repository root.
FILE_MOVES: dict[str, str] = {
    # runtime/: what bounds and accounts the model calls of live use.
    f"{LIB}/limiter.py": f"{LIB}/runtime/limiter.py",
    f"{LIB}/breaker.py": f"{LIB}/runtime/breaker.py",
    f"{LIB}/provider_retries.py": f"{LIB}/runtime/retries.py",
    f"{LIB}/usage.py": f"{LIB}/runtime/usage.py",
    f"{LIB}/cost.py": f"{LIB}/runtime/cost.py",
    f"{LIB}/preflight.py": f"{LIB}/runtime/preflight.py",
    f"{LIB}/loop_clients.py": f"{LIB}/runtime/loop_clients.py",
    f"{LIB}/payloads.py": f"{LIB}/runtime/payloads.py",
    f"{LIB}/hashing.py": f"{LIB}/runtime/hashing.py",
    # guard/: what runs around one clearance in production (framework-free).
    f"{LIB}/gate.py": f"{LIB}/guard/gate.py",
    f"{LIB}/gating.py": f"{LIB}/guard/gated_metadata.py",
    f"{LIB}/live_guard.py": f"{LIB}/guard/live_bounds.py",
    f"{LIB}/live_policy.py": f"{LIB}/guard/policy.py",
    # Prompts with the judges.
    f"{LIB}/prompts.py": f"{LIB}/judges/answer_prompts.py",
    f"{LIB}/memory_metadata.py": f"{LIB}/judges/memory_metadata.py",
    # One name, one meaning: four modules were called clearance.py.
    f"{LIB}/core/stages/clearance.py": f"{LIB}/core/stages/clearing.py",
    f"{LIB}/langchain/clearance.py": f"{LIB}/langchain/clearing_step.py",
    f"{LIB}/bench/methods/clearance.py": f"{HARNESS}/methods/deletions.py",
    # Admission: the features and prompts the library's readers use stay; baselines leave.
    f"{LIB}/admission/baselines/features.py": f"{LIB}/admission/features.py",
    f"{LIB}/admission/baselines/prompts.py": f"{LIB}/admission/feature_prompts.py",
    f"{LIB}/admission/bench.py": f"{HARNESS}/admission_eval.py",
    # Stand-ins only the benchmark uses.
    f"{LIB}/simulation/scale.py": f"{HARNESS}/scale_games.py",
    # Evaluation commands (operator commands stay: demo, ledger, worker, soak).
    **{
        f"{LIB}/cli/{name}.py": f"{HARNESS}/cli/{name}.py"
        for name in (
            "bench",
            "bench_dry_run",
            "bench_long",
            "bench_merge",
            "bench_real",
            "bench_redundancy",
            "bench_stream",
            "bench_sweep",
            "explain",
            "budget",
            "budget_scale",
            "admission_bench",
        )
    },
}
# Folder rules (old prefix -> new prefix) for every tracked file not moved explicitly.
DIR_MOVES: dict[str, str] = {
    f"{LIB}/bench/": f"{HARNESS}/",
    f"{LIB}/admission/baselines/": f"{HARNESS}/admission_baselines/",
    f"{LIB}/cli/bench_": f"{HARNESS}/cli/bench_",  # a new bench command of another branch
}
# Top-level modules that stay top-level.
TOP_LEVEL_KEPT = {f"{LIB}/__init__.py"}
# New packages (path -> docstring).
NEW_PACKAGES: dict[str, str] = {
    f"{LIB}/runtime/__init__.py": (
        "Live-use plumbing of model calls: limits, breaker, retries, usage, cost, payloads."
    ),
    f"{LIB}/guard/__init__.py": (
        "What runs around one clearance in production: gate, live bounds, component policy."
    ),
}
HARNESS_CLI_INIT = '''"""The harness's ``meclear`` commands (entry points ``meclear.commands``)."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["COMMANDS", "register"]

# Command modules, each with ``register(subparsers)``.
COMMANDS: list[str] = [
{commands}
]


def register(sub: Any) -> None:
    """Register the harness's commands on the ``meclear`` subparsers.

    Args:
        sub: The subparsers of the ``meclear`` parser.
    """
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
'''
TEXT_SUFFIXES = {".py", ".md", ".yml", ".yaml", ".toml", ".cfg", ".ini", ".txt", ".sh", ".rst"}
TEXT_NAMES = {"run", "Makefile"}
SKIP = {"CHANGELOG.md", "tools/restructure.py", "tools/architecture_test.py"}
SKIP_PREFIXES = ("tests/unit_tests/tools/",)


def git(*args: str) -> str:
    """Run git in the repository; fail loudly."""
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout


STARTED = False


def fail(message: str) -> None:
    """Stop with an error message."""
    print(f"restructure: {message}", file=sys.stderr)
    if STARTED:
        print("restructure: undo with: git reset --hard && git clean -fd", file=sys.stderr)
    raise SystemExit(1)


def plan(tracked: list[str]) -> dict[str, str]:
    """Every file move (old path -> new path)."""
    moves: dict[str, str] = {}
    for path in tracked:
        if path in FILE_MOVES:
            moves[path] = FILE_MOVES[path]
            continue
        for old, new in sorted(DIR_MOVES.items(), key=lambda kv: -len(kv[0])):
            if path.startswith(old):
                moves[path] = new + path[len(old) :]
                break
    missing = sorted(set(FILE_MOVES) - set(tracked))
    if missing:
        print(f"restructure: note: not present (skipped): {missing}", file=sys.stderr)
    loose = [
        p
        for p in tracked
        if p.startswith(f"{LIB}/") and p.count("/") == 1 and p.endswith(".py")
        if p not in moves and p not in TOP_LEVEL_KEPT
    ]
    if loose:
        fail(f"loose top-level modules without a room (add them to FILE_MOVES): {loose}")
    targets = list(moves.values())
    clash = sorted({t for t in targets if targets.count(t) > 1} | (set(targets) & set(tracked)))
    if clash:
        fail(f"two files would land on one path: {clash}")
    return moves


def module_of(path: str) -> str | None:
    """Dotted module of a .py path (packages: their folder)."""
    if not path.endswith(".py"):
        return None
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def module_map(moves: dict[str, str]) -> dict[str, str]:
    """Old dotted name -> new dotted name (modules and the folders moved whole)."""
    names: dict[str, str] = {}
    for old, new in moves.items():
        a, b = module_of(old), module_of(new)
        if a and b and a != b:
            names[a] = b
    for old, new in DIR_MOVES.items():
        if old.endswith("/"):
            names[old.rstrip("/").replace("/", ".")] = new.rstrip("/").replace("/", ".")
    return names


def path_map(moves: dict[str, str]) -> dict[str, str]:
    """Old path -> new path (files, their module-style spelling without .py, whole folders)."""
    paths = dict(moves)
    for old, new in moves.items():
        if old.endswith(".py") and new.endswith(".py"):
            paths[old[:-3]] = new[:-3]
    for old, new in DIR_MOVES.items():
        if old.endswith("/"):
            paths[old.rstrip("/")] = new.rstrip("/")
    return paths


def remap(name: str, table: dict[str, str], sep: str) -> str:
    """``name`` with its longest mapped prefix (on a component boundary) replaced."""
    parts = name.split(sep)
    for i in range(len(parts), 0, -1):
        head = sep.join(parts[:i])
        if head in table:
            return sep.join([table[head], *parts[i:]])
    return name


DOTTED = re.compile(r"(?<![\w.])meclear_integrations(?:\.[A-Za-z_]\w*)+")
PATHLIKE = re.compile(r"(?<![\w/.])meclear_integrations(?:/[\w.]+)+")


def rewrite_text(text: str, names: dict[str, str], paths: dict[str, str]) -> str:
    """Dotted names and paths of moved modules, anywhere in the text."""
    text = DOTTED.sub(lambda m: remap(m.group(0), names, "."), text)
    return PATHLIKE.sub(lambda m: remap(m.group(0), paths, "/"), text)


def _dotted(expr: cst.BaseExpression | None) -> str:
    if expr is None:
        return ""
    if isinstance(expr, cst.Name):
        return expr.value
    assert isinstance(expr, cst.Attribute)
    return f"{_dotted(expr.value)}.{expr.attr.value}"


def _expr(dotted: str) -> cst.Attribute | cst.Name:
    node: cst.Attribute | cst.Name = cst.Name(dotted.split(".")[0])
    for part in dotted.split(".")[1:]:
        node = cst.Attribute(value=node, attr=cst.Name(part))
    return node


class ImportRewriter(cst.CSTTransformer):
    """Rewrites ``from X import ...`` of one file for the moves."""

    def __init__(self, old_module: str, new_module: str, is_package: bool, names: dict[str, str]):
        self.old_package = old_module if is_package else old_module.rpartition(".")[0]
        self.new_package = new_module if is_package else new_module.rpartition(".")[0]
        self.names = names

    def _absolute(self, node: cst.ImportFrom) -> str:
        module = _dotted(node.module)
        if not node.relative:
            return module
        base = self.old_package.split(".")
        base = base[: len(base) - len(node.relative) + 1]
        return ".".join([*base, module] if module else base)

    def _spell(self, target: str, relative: bool) -> tuple[int, str]:
        """(dots, module) for ``target`` seen from the file's new package."""
        here = self.new_package.split(".")
        there = target.split(".")
        if not relative or here[0] != there[0]:
            return 0, target
        common = 0
        while common < min(len(here), len(there)) and here[common] == there[common]:
            common += 1
        return len(here) - common + 1, ".".join(there[common:])

    def leave_ImportFrom(
        self, original: cst.ImportFrom, updated: cst.ImportFrom
    ) -> cst.ImportFrom | cst.FlattenSentinel[cst.BaseSmallStatement]:
        """The statement with its module (and any moved module it names) in the new layout."""
        absolute = self._absolute(updated)
        if not absolute.startswith(("meclear_integrations", "meclear_bench")):
            return updated
        relative = bool(updated.relative)
        target = remap(absolute, self.names, ".")
        aliases = [] if isinstance(updated.names, cst.ImportStar) else list(updated.names)
        # ``from pkg import module`` where the module moved out of pkg: import it from its home.
        split: list[cst.ImportFrom] = []
        kept: list[cst.ImportAlias] = []
        for alias in aliases:
            name = _dotted(alias.name)
            full = f"{absolute}.{name}"
            moved = remap(full, self.names, ".")
            if moved != full and moved.rpartition(".")[0] != target:
                parent, _, leaf = moved.rpartition(".")
                asname = alias.asname or (cst.AsName(name=cst.Name(name)) if leaf != name else None)
                dots, module = self._spell(parent, relative)
                split.append(
                    cst.ImportFrom(
                        module=_expr(module) if module else None,
                        names=[cst.ImportAlias(name=cst.Name(leaf), asname=asname)],
                        relative=[cst.Dot()] * dots,
                    )
                )
            else:
                kept.append(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))
        if not split and target == absolute and not relative:
            return updated
        dots, module = self._spell(target, relative)
        if (
            not split
            and relative
            and dots == len(updated.relative)
            and module == _dotted(updated.module)
        ):
            return updated
        new = updated.with_changes(
            module=_expr(module) if module else None,
            relative=[cst.Dot()] * dots,
        )
        if not split:
            return new
        statements: list[cst.BaseSmallStatement] = []
        if kept:
            statements.append(new.with_changes(names=kept, lpar=None, rpar=None))
        statements.extend(split)
        return cst.FlattenSentinel(statements)


def rewrite_python(
    text: str, old_module: str, new_module: str, is_package: bool, names: dict[str, str]
) -> str:
    """Import statements first (relative ones resolved), as parsed source."""
    tree = cst.parse_module(text)
    return tree.visit(ImportRewriter(old_module, new_module, is_package, names)).code


def is_text(path: str) -> bool:
    """Whether the script rewrites this tracked file."""
    if path in SKIP or path.startswith(SKIP_PREFIXES):
        return False
    p = Path(path)
    return p.suffix in TEXT_SUFFIXES or p.name in TEXT_NAMES


def split_commands(harness_commands: list[str]) -> None:
    """Move the harness's command modules from the library's list to ``meclear_bench.cli``."""
    init = ROOT / LIB / "cli" / "__init__.py"
    text = init.read_text(encoding="utf-8")
    found = re.findall(rf'^\s*"({HARNESS}\.[\w.]+)",\n', text, flags=re.M)
    text = re.sub(rf'^\s*"{HARNESS}\.[\w.]+",\n', "", text, flags=re.M)
    init.write_text(text, encoding="utf-8")
    commands = found or harness_commands
    body = "\n".join(f'    "{c}",' for c in commands)
    (ROOT / HARNESS / "cli" / "__init__.py").write_text(
        HARNESS_CLI_INIT.replace("{commands}", body), encoding="utf-8"
    )


def update_pyproject() -> None:
    """Wheel packages, mypy packages and the harness's entry point."""
    path = ROOT / "pyproject.toml"
    text = path.read_text(encoding="utf-8")
    edits = [
        (
            f'packages = ["{LIB}"]\n\n[tool.pytest',
            f'packages = ["{LIB}", "{HARNESS}"]\n\n[tool.pytest',
        ),
        (
            f'[tool.mypy]\npython_version = "3.11"\npackages = ["{LIB}"]',
            f'[tool.mypy]\npython_version = "3.11"\npackages = ["{LIB}", "{HARNESS}"]',
        ),
        (
            "[tool.hatch.version]",
            '[project.entry-points."meclear.commands"]\n'
            "# The evaluation harness's commands (meclear bench, explain, budget, ...).\n"
            f'bench = "{HARNESS}.cli:register"\n\n[tool.hatch.version]',
        ),
    ]
    for old, new in edits:
        if text.count(old) != 1:
            fail(f"pyproject.toml: expected exactly one {old!r}")
        text = text.replace(old, new)
    text = re.sub(
        r'packages = \["meclear_integrations"\]', f'packages = ["{LIB}", "{HARNESS}"]', text
    )
    path.write_text(text, encoding="utf-8")


LIMIT = 100  # ruff's line-length


def long_lines() -> dict[str, list[int]]:
    """Lines over the limit (ruff E501), per file."""
    out = subprocess.run(
        ["ruff", "check", "--select", "E501", "--output-format", "json", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    found: dict[str, list[int]] = {}
    for item in json.loads(out or "[]"):
        found.setdefault(item["filename"], []).append(item["location"]["row"])
    return found


def _cut(text: str, limit: int) -> int:
    """The last space before ``limit`` outside backticks and braces (-1: none)."""
    best, ticks, depth = -1, 0, 0
    for i, ch in enumerate(text[:limit]):
        ticks += ch == "`"
        depth += (ch == "{") - (ch == "}")
        if ch == " " and ticks % 2 == 0 and depth == 0 and text[:i].strip():
            best = i
    return best


def _wrap_prose(line: str) -> str:
    """A prose line of a docstring or a comment, split at a space before the limit."""
    indent = line[: len(line) - len(line.lstrip())]
    body = line.rstrip("\n")
    stripped = body.strip()
    if stripped.startswith("import ") and ", " in stripped:  # code in a string: one per line
        names = stripped.removeprefix("import ").split(", ")
        return "".join(f"{indent}import {name}\n" for name in names)
    comment = body.find("# ")
    cut = _cut(body, LIMIT)
    if cut <= len(indent):
        return line
    if 0 <= comment < cut and body.lstrip().startswith("#"):
        return f"{body[:cut]}\n{indent}# {body[cut + 1 :]}\n"
    return f"{body[:cut]}\n{indent}{body[cut + 1 :]}\n"


def _split_literal(token: str, nested: bool, indent: str) -> str | None:
    """A one-line string literal as pieces (implicit concatenation; in parentheses if needed)."""
    match = re.match(r"(?i)([rbfu]*)(['\"])(.*)\2$", token, flags=re.S)
    if not match or "\\\n" in token:
        return None
    prefix, quote, body = match.groups()
    pieces: list[str] = []
    while len(body) > 60:
        cut = _cut(body, 60)
        if cut <= 0:
            break
        pieces.append(body[: cut + 1])
        body = body[cut + 1 :]
    if not pieces:
        return None
    pieces.append(body)
    literals = [f"{prefix}{quote}{p}{quote}" for p in pieces]
    if nested:  # inside brackets already: one piece per line
        return f"\n{indent}".join(literals)
    return "(" + " ".join(literals) + ")"


def wrap_long_lines() -> list[str]:
    """Split the lines the longer names pushed over the limit; returns those left over."""
    for path, rows in long_lines().items():
        text = Path(path).read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        for row in sorted(set(rows), reverse=True):
            line = lines[row - 1]
            strings = [
                t for t in tokens if t.type == tokenize.STRING and t.start[0] <= row <= t.end[0]
            ]
            comments = [t for t in tokens if t.type == tokenize.COMMENT and t.start[0] == row]
            if strings and strings[0].start[0] != strings[0].end[0]:
                lines[row - 1] = _wrap_prose(line)  # a line of a triple-quoted string
            elif comments and not strings:
                lines[row - 1] = _wrap_prose(line)
            elif len(strings) == 1:
                token = strings[0]
                depth = 0
                for t in tokens:
                    if t.start >= token.start:
                        break
                    if t.type == tokenize.OP and t.string in "([{":
                        depth += 1
                    elif t.type == tokenize.OP and t.string in ")]}":
                        depth -= 1
                split = _split_literal(token.string, depth > 0, " " * token.start[1])
                if split is not None:
                    a, b = token.start[1], token.end[1]
                    lines[row - 1] = line[:a] + split + line[b:]
        Path(path).write_text("".join(lines), encoding="utf-8")
    subprocess.run(["ruff", "format", "-q", "."], cwd=ROOT)
    return [f"{path}:{row}" for path, rows in long_lines().items() for row in rows]


def main(argv: list[str] | None = None) -> int:
    """Run the restructuring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print the moves only")
    parser.add_argument("--allow-dirty", action="store_true", help="skip the clean-tree check")
    args = parser.parse_args(argv)

    if (ROOT / HARNESS).exists():
        fail(f"{HARNESS}/ exists: the restructuring was applied already (it runs once)")
    if not (ROOT / LIB / "bench").is_dir():
        fail(f"{LIB}/bench/ is missing: not the layout this script moves")
    if not args.allow_dirty and git("status", "--porcelain").strip():
        fail("the work tree is not clean: commit or stash first")

    tracked = git("ls-files").splitlines()
    moves = plan(tracked)
    names = module_map(moves)
    paths = path_map(moves)
    for old, new in sorted(moves.items()):
        print(f"{old} -> {new}")
    if args.dry_run:
        return 0

    old_commands = [
        names[m] for m in (module_of(p) for p in moves if p.startswith(f"{LIB}/cli/")) if m in names
    ]

    # 1. Rewrite the contents (each file as it reads in its old place), then move.
    global STARTED
    STARTED = True
    for path in tracked:
        if not is_text(path) or not (ROOT / path).is_file():
            continue
        text = (ROOT / path).read_text(encoding="utf-8")
        new_path = moves.get(path, path)
        if path.endswith(".py"):
            old_module, new_module = module_of(path), module_of(new_path)
            assert old_module and new_module
            text = rewrite_python(text, old_module, new_module, path.endswith("__init__.py"), names)
        text = rewrite_text(text, names, paths)
        if text != (ROOT / path).read_text(encoding="utf-8"):
            (ROOT / path).write_text(text, encoding="utf-8")
    for old, new in sorted(moves.items()):
        (ROOT / new).parent.mkdir(parents=True, exist_ok=True)
        git("mv", old, new)

    # 2. New packages.
    for path, doc in NEW_PACKAGES.items():
        (ROOT / path).write_text(f'"""{doc}"""\n', encoding="utf-8")
    split_commands(old_commands)
    for folder in {Path(new).parent for new in moves.values() if new.endswith(".py")}:
        init = ROOT / folder / "__init__.py"
        if folder.parts[0] in (LIB, HARNESS) and not init.exists():
            fail(f"{folder}: a new folder without __init__.py (add it to NEW_PACKAGES)")
    for folder in (ROOT / LIB / "admission" / "baselines", ROOT / LIB / "bench"):
        if folder.exists():
            shutil.rmtree(folder / "__pycache__", ignore_errors=True)
            leftovers = [p for p in folder.rglob("*") if p.is_file()]
            if leftovers:
                fail(f"{folder}: untracked files left behind: {leftovers[:5]}")
            shutil.rmtree(folder)

    # 3. pyproject, the architecture test, formatting.
    update_pyproject()
    shutil.copyfile(
        ROOT / "tools" / "architecture_test.py",
        ROOT / "tests" / "unit_tests" / "test_architecture.py",
    )
    git("add", "-A", LIB, HARNESS, "tests", "pyproject.toml")
    if not shutil.which("ruff"):
        fail("ruff is not on PATH: run ruff check --fix --select I . && ruff format . yourself")
    subprocess.run(["ruff", "check", "--fix", "--select", "I", "-q", "."], cwd=ROOT)
    subprocess.run(["ruff", "format", "-q", "."], cwd=ROOT)
    left = wrap_long_lines()
    if left:
        left = wrap_long_lines()
    if left:
        print(f"restructure: lines still over {LIMIT} columns (split by hand): {left}")
        return 3
    print(
        "restructure: done. Check: ruff check . && mypy && python -m pytest "
        "(and pip install -e '.[dev]' once, for the new entry point)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
