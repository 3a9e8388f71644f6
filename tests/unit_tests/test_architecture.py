"""The package's layers (README "Architecture"): each part imports only its own layer or
the layers below it, read from the source (lazy imports inside functions included)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import meclear_integrations

PACKAGE = Path(meclear_integrations.__file__).parent

# Lowest first. A part is a subpackage or a top-level module of meclear_integrations.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("core", frozenset({"core"})),
    (
        "services",
        frozenset(
            {
                "judges",
                "simulation",
                "prompts",
                "payloads",
                "hashing",
                "telemetry",
                "triggers",
                "ledger",
                "gate",
                "gating",
                "live_policy",
                "admission",
                "cost",
                "usage",
                "memory_metadata",
                "breaker",
                "limiter",
                "provider_retries",
                "live_guard",
                "preflight",
                "loop_clients",
                "pipeline",
                "jobs",
            }
        ),
    ),
    ("integrations", frozenset({"langchain", "llama_index", "exports"})),
    ("bench", frozenset({"bench"})),
    ("cli", frozenset({"cli"})),
)
RANK = {part: rank for rank, (_, parts) in enumerate(LAYERS) for part in parts}

# Imports between parts of one layer that would tangle it.
FORBIDDEN = {
    ("judges", "simulation"),  # production judges never lean on the stand-in world
    ("langchain", "llama_index"),
    ("llama_index", "langchain"),
}
# The one import of an outer layer from core: ``core.tracing.start_trace`` imports the
# OpenTelemetry-backed spans lazily, once the application has loaded OpenTelemetry.
ALLOWED = {
    ("core/tracing.py", "telemetry"),
    ("bench/cli_args.py", "cli"),  # the engine flags, until the harness leaves the package
}

# Third-party imports the engine may make (besides the standard library).
CORE_THIRD_PARTY = {"numpy", "pydantic", "pydantic_core", "tenacity"}
STDLIB = set(sys.stdlib_module_names) | {"__future__"}
FRAMEWORKS = {"langchain", "langchain_core", "langsmith", "llama_index", "openai", "matplotlib"}


def _part(relative: Path) -> str:
    return relative.parts[0].removesuffix(".py")


def _imports(path: Path) -> list[str]:
    """Absolute module names imported by ``path`` (relative imports resolved)."""
    relative = path.relative_to(PACKAGE.parent)
    package = list(relative.with_suffix("").parts)[:-1]  # the package holding the file
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                names.append(".".join([*base, node.module] if node.module else base))
            elif node.module:
                names.append(node.module)
    return names


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_part_has_a_layer() -> None:
    parts = {_part(p.relative_to(PACKAGE)) for p in _sources()} - {"__init__", "__main__"}
    unclassified = parts - set(RANK)
    assert not unclassified, f"give these a layer in LAYERS (and the README): {unclassified}"


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_respect_the_layers(path: Path) -> None:
    relative = path.relative_to(PACKAGE)
    source = _part(relative)
    if source in {"__init__", "__main__"}:
        return
    wrong: list[str] = []
    for name in _imports(path):
        top, *rest = name.split(".")
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


def test_the_reader_resolves_relative_imports() -> None:
    """The import reader resolves relative imports (guards against a vacuous pass)."""
    names = _imports(PACKAGE / "core" / "engine.py")
    assert any(n.startswith("meclear_integrations.core.") for n in names)
    assert "meclear_integrations.telemetry.spans" in _imports(PACKAGE / "core" / "tracing.py")
