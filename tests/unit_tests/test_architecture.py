"""The package's layers (docs "Architecture"), read from the source (lazy imports included).

Each part of the library imports only its own layer or the layers below it; the library never
imports the evaluation harness (``meclear_bench``), which depends on the library; no import
circle between modules (a walk over the import graph: module-level and function-level imports,
``TYPE_CHECKING`` blocks left out since they never run).
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

import pytest

import meclear_integrations

PACKAGE = Path(meclear_integrations.__file__).parent
ROOT = PACKAGE.parent
HARNESS = ROOT / "meclear_bench"

# Lowest first. A part is a subpackage or a top-level module of meclear_integrations.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("core", frozenset({"core"})),
    (
        "services",
        frozenset(
            {
                "judges",
                "simulation",
                "runtime",
                "telemetry",
                "triggers",
                "ledger",
                "guard",
                "admission",
                "pipeline",
                "jobs",
            }
        ),
    ),
    ("integrations", frozenset({"langchain", "langgraph", "llama_index", "exports", "writeback"})),
    ("cli", frozenset({"cli"})),
)
RANK = {part: rank for rank, (_, parts) in enumerate(LAYERS) for part in parts}

# Imports between parts of one layer that would tangle it.
FORBIDDEN = {
    ("judges", "simulation"),  # production judges never lean on the stand-in world
    ("langchain", "llama_index"),
    ("llama_index", "langchain"),
    ("llama_index", "langgraph"),
    ("langgraph", "llama_index"),
}
# The one import of an outer layer from core: ``core.tracing.hooks.start_trace`` imports the
# OpenTelemetry-backed spans lazily, once the application has loaded OpenTelemetry.
ALLOWED = {("core/tracing/hooks.py", "telemetry")}
# Third-party imports the engine may make (besides the standard library).
CORE_THIRD_PARTY = {"numpy", "pydantic", "pydantic_core", "tenacity"}
STDLIB = set(sys.stdlib_module_names) | {"__future__"}
FRAMEWORKS = {
    "langchain",
    "langchain_core",
    "langgraph",
    "langsmith",
    "llama_index",
    "openai",
    "matplotlib",
}


def _part(relative: Path) -> str:
    return relative.parts[0].removesuffix(".py")


def _module(path: Path) -> tuple[str, bool]:
    """(dotted module name, whether it is a package) of a source file."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


@functools.cache
def _parse(path: Path) -> ast.Module:
    """A source file's syntax tree, parsed once per run (several checks walk every file)."""
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def _nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of a source file's tree in ``ast.walk`` order, walked once per run."""
    return tuple(ast.walk(_parse(path)))


def _imports(path: Path, with_names: bool = False, typing_too: bool = False) -> list[str]:
    """Absolute module names imported by ``path`` (relative imports resolved).

    ``TYPE_CHECKING`` blocks are left out unless ``typing_too``. ``with_names`` adds
    ``module.name`` for each name of a ``from module import name`` (a name may be a submodule).
    """
    return list(_read_imports(path, typing_too)[1 if with_names else 0])


@functools.cache
def _read_imports(path: Path, typing_too: bool = False) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(imports, imports with names) of :func:`_imports`, read in one walk per file and run."""
    module, is_package = _module(path)
    package = module.split(".") if is_package else module.split(".")[:-1]
    typing_only: set[int] = set()
    for node in _nodes(path):
        if typing_too:
            break
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only.update(id(n) for statement in node.body for n in ast.walk(statement))
    names: list[str] = []
    with_names: list[str] = []
    for node in _nodes(path):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
            with_names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            names.append(name)
            with_names.append(name)
            with_names.extend(f"{name}.{alias.name}" for alias in node.names)
    return tuple(names), tuple(with_names)


def _sources(root: Path = PACKAGE) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


@functools.cache
def _graph(typing_too: bool = False) -> dict[str, set[str]]:
    """Module -> the modules it imports (a package's own submodules left out).

    ``typing_too``: imports made for type checking only count too.
    """
    files = _sources(PACKAGE) + (_sources(HARNESS) if HARNESS.is_dir() else [])
    modules = {_module(p)[0]: p for p in files}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for imported in _imports(path, with_names=True, typing_too=typing_too):
            parts = imported.split(".")
            for i in range(1, len(parts) + 1):  # importing a.b.c runs a and a.b too
                target = ".".join(parts[:i])
                if target in modules and target != name and not target.startswith(f"{name}."):
                    targets.add(target)
        graph[name] = targets
    return graph


def _circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_every_part_has_a_layer() -> None:
    """Every part of the library has a layer."""
    parts = {_part(p.relative_to(PACKAGE)) for p in _sources()} - {"__init__", "__main__"}
    unclassified = parts - set(RANK)
    assert not unclassified, f"give these a layer in LAYERS (and the docs): {unclassified}"


def test_no_loose_top_level_modules() -> None:
    """Every module of the library lives in a named subpackage."""
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert not loose, f"put these in a subpackage: {loose}"


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_respect_the_layers(path: Path) -> None:
    """A module imports its own layer or the layers below, never the harness."""
    relative = path.relative_to(PACKAGE)
    source = _part(relative)
    if source in {"__init__", "__main__"}:
        return
    wrong: list[str] = []
    for name in _imports(path):
        top, *rest = name.split(".")
        if top == "meclear_bench":
            wrong.append(f"{name} (the library never imports the harness)")
            continue
        if top != "meclear_integrations":
            if source == "core" and top not in CORE_THIRD_PARTY | STDLIB:
                wrong.append(f"{name} (core imports only {sorted(CORE_THIRD_PARTY)})")
            if RANK.get(source, 0) < RANK["langchain"] and top in FRAMEWORKS:
                wrong.append(f"{name} (a framework, below the integrations)")
            continue
        target = rest[0] if rest else "__init__"
        if target == source or target == "__init__":
            if target == "__init__" and source == "core":
                wrong.append(f"{name} (core imports nothing of the package outside core)")
            continue
        if (relative.as_posix(), target) in ALLOWED:
            continue
        if target not in RANK:
            wrong.append(f"{name} (unclassified part {target!r})")
        elif RANK[target] > RANK[source]:
            wrong.append(f"{name} (layer {LAYERS[RANK[target]][0]} above {source})")
        elif (source, target) in FORBIDDEN:
            wrong.append(f"{name} ({source} must not import {target})")
    assert not wrong, f"{relative}: " + "; ".join(wrong)


def _strings(path: Path) -> list[str]:
    """String constants of a module's code (docstrings left out)."""
    docstrings: set[int] = set()
    for node in _nodes(path):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            docstrings.add(id(body[0].value))
    return [
        node.value
        for node in _nodes(path)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if id(node) not in docstrings
    ]


def test_the_library_names_the_harness_only_through_its_plugin_seam() -> None:
    """Code of the library names ``meclear_bench`` only where it loads the optional harness."""
    seam = {PACKAGE / "cli" / name for name in ("plugins.py", "worker.py", "ledger_replay.py")}
    naming = [
        str(p.relative_to(ROOT))
        for p in _sources()
        if p not in seam and any("meclear_bench" in s for s in _strings(p))
    ]
    assert not naming, f"the library names the harness: {naming}"
    assert any("meclear_bench" in s for s in _strings(PACKAGE / "cli" / "plugins.py"))


def test_the_harness_is_a_package_of_its_own() -> None:
    """The harness is a top-level package that depends on the library."""
    assert (HARNESS / "__init__.py").is_file()
    assert not (PACKAGE / "bench").exists()
    assert any(
        n.startswith("meclear_integrations") for p in _sources(HARNESS) for n in _imports(p)
    ), "the harness depends on the library"


def test_no_import_circles() -> None:
    """No circle in the import graph of the library and the harness."""
    circles = [sorted(c) for c in _circles(_graph())]
    assert not circles, f"import circles: {circles}"


def test_no_import_circles_even_for_type_checking() -> None:
    """No circle either once ``TYPE_CHECKING`` imports count: two modules that need each
    other's types are one concept split in two, or want a protocol (``jobs.claim.JobTable``,
    ``core.estimators.base.EstimatorSettings``)."""
    circles = [sorted(c) for c in _circles(_graph(typing_too=True))]
    assert not circles, f"import circles through type-only imports: {circles}"


def test_the_circle_finder_finds_circles() -> None:
    """The walk sees a planted circle (guards against a vacuous pass)."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [frozenset({"a", "b", "c"})]
    assert "meclear_integrations.core.memory" in _graph()["meclear_integrations.core.engine"]


def test_one_name_one_module_among_the_named_rooms() -> None:
    """The names the issue found ambiguous (four ``clearance.py``) are gone or used once.

    The last ``clearance.py`` (the candidate families) joined ``core/verification/rule.py``.
    """
    names = [p.name for p in _sources(PACKAGE) + _sources(HARNESS)]
    assert "clearance.py" not in names
    assert "gating.py" not in names and "live_guard.py" not in names


def test_the_reader_resolves_relative_imports() -> None:
    """The import reader resolves relative imports (guards against a vacuous pass)."""
    names = _imports(PACKAGE / "core" / "engine.py")
    assert any(n.startswith("meclear_integrations.core.") for n in names)
    assert "meclear_integrations.telemetry.spans" in _imports(
        PACKAGE / "core" / "tracing" / "hooks.py"
    )


def _longest(paths: list[Path]) -> tuple[int, str]:
    return max(
        (len(p.read_text(encoding="utf-8").splitlines()), str(p.relative_to(ROOT))) for p in paths
    )


def test_no_library_file_over_800_lines_and_no_ledger_file_over_600() -> None:
    """Rooms stay small enough to read (issue 41 item 4): a file past its bound is split."""
    lines, name = _longest(_sources(PACKAGE))
    assert lines <= 800, f"{name} has {lines} lines (at most 800)"
    lines, name = _longest(_sources(PACKAGE / "ledger"))
    assert lines <= 600, f"{name} has {lines} lines (at most 600 in the ledger)"
