"""Benchmark cases: the JSONL contract and a parser that reports every bad line.

One JSON object per line::

    {"case_id": str, "cluster": str, "query_id": str, "query": str, "reference": str,
     "structure": "direct" | "redundant" | "joint" | "clean" | <other>,
     "fault_type": str | null,
     "memories": [{"id": str, "text": str, "metadata": {}}],
     "targets": [memory ids],
     "world": {"claims": {memory_id: {"answer": str, "weight": float}},
               "temperature": float, "abstain": str, "aggregate": "sum" | "max"}}

``memories`` is the frozen retrieved context in retrieval order; ``targets`` the verified
harmful set (empty for clean cases); ``world`` follows the simulated-world semantics of
:mod:`meclear_integrations.simulation` (``aggregate`` optional, default ``"sum"``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from meclear_integrations.core.memory import Memory
from meclear_integrations.simulation import EvidenceWorld, SimulatedEvaluator

__all__ = [
    "BenchCase",
    "CaseLineError",
    "CaseMemory",
    "CaseParseResult",
    "dump_cases",
    "load_cases",
    "parse_case_lines",
]


class CaseMemory(BaseModel):
    """One memory of a case's frozen context."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    """The memory's id, unique within the case."""
    text: str
    """The memory's text."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form metadata (e.g. ``position``, session date)."""


class BenchCase(BaseModel):
    """One benchmark case (see the module docstring for the JSON contract)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: str = Field(min_length=1)
    """The case's unique id."""
    cluster: str = Field(min_length=1)
    """The conversation, the outer level of the cluster bootstrap."""
    query_id: str = Field(min_length=1)
    """The query, the inner level of the cluster bootstrap."""
    query: str
    """The question."""
    reference: str
    """The gold answer."""
    structure: str = Field(min_length=1)
    """``direct``, ``redundant``, ``joint`` or ``clean``."""
    fault_type: str | None = None
    """The injected fault's type (None for a clean case)."""
    memories: list[CaseMemory]
    """The frozen context, in retrieval order."""
    targets: list[str]
    """Ids of the verified harmful memories (empty for a clean case)."""
    world: EvidenceWorld
    """The simulated evidence world that answers on this context."""

    @model_validator(mode="after")
    def _consistent(self) -> BenchCase:
        ids = [m.id for m in self.memories]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate memory ids {dupes}")
        unknown = sorted(set(self.targets) - set(ids))
        if unknown:
            raise ValueError(f"targets {unknown} are not memory ids of the case")
        if len(set(self.targets)) != len(self.targets):
            raise ValueError("duplicate ids in targets")
        stray = sorted(set(self.world.claims) - set(ids))
        if stray:
            raise ValueError(f"world.claims names {stray}, which are not memory ids of the case")
        return self

    def context(self) -> list[Memory]:
        """The frozen context as engine memories, retrieval order."""
        return [Memory(id=m.id, content=m.text, metadata=dict(m.metadata)) for m in self.memories]

    def evaluator(self) -> SimulatedEvaluator:
        """The simulated-world evaluator of this case (simulated, not a real model)."""
        return SimulatedEvaluator(self.world, self.reference, case_id=self.case_id)


class CaseLineError(BaseModel):
    """A line that could not be read as a case."""

    model_config = ConfigDict(frozen=True)

    line: int
    """1-based line number in the file."""
    error: str
    """Why the line is not a valid case."""


class CaseParseResult(BaseModel):
    """Every valid case of a file, and every bad line with its number."""

    cases: list[BenchCase]
    """The valid cases, in file order."""
    errors: list[CaseLineError]
    """Every bad line, with its number and error."""

    @property
    def ok(self) -> bool:
        """True when no line of the file was rejected."""
        return not self.errors


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(case)"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def parse_case_lines(lines: Iterable[str]) -> CaseParseResult:
    """Parse JSONL lines; blank lines are skipped, bad ones are reported, never raised.

    Args:
        lines: The lines of a case file.

    Returns:
        The valid cases and every bad line with its number.

    Example:
        >>> from meclear_bench import parse_case_lines
        >>> result = parse_case_lines(["", "not json", "{}"])
        >>> len(result.cases), [error.line for error in result.errors]
        (0, [2, 3])
    """
    cases: list[BenchCase] = []
    errors: list[CaseLineError] = []
    seen: set[str] = set()
    for number, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text:
            continue
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            errors.append(CaseLineError(line=number, error=f"invalid JSON: {exc.msg}"))
            continue
        if not isinstance(data, dict):
            errors.append(CaseLineError(line=number, error="expected a JSON object"))
            continue
        try:
            case = BenchCase.model_validate(data)
        except ValidationError as exc:
            errors.append(CaseLineError(line=number, error=_describe(exc)))
            continue
        if case.case_id in seen:
            errors.append(CaseLineError(line=number, error=f"duplicate case_id {case.case_id!r}"))
            continue
        seen.add(case.case_id)
        cases.append(case)
    return CaseParseResult(cases=cases, errors=errors)


def load_cases(path: str | Path) -> CaseParseResult:
    """Parse a JSONL case file (UTF-8).

    Args:
        path: The case file.

    Returns:
        The valid cases and every bad line with its number.
    """
    with open(path, encoding="utf-8") as handle:
        return parse_case_lines(handle)


def dump_cases(cases: Iterable[BenchCase], path: str | Path) -> None:
    """Write cases as JSONL, one object per line.

    Args:
        cases: The cases.
        path: The file written (UTF-8).
    """
    with open(path, "w", encoding="utf-8") as handle:
        for case in cases:
            handle.write(case.model_dump_json(exclude_none=False) + "\n")


def iter_case_dicts(cases: Iterable[BenchCase]) -> Iterator[dict[str, Any]]:
    """The cases as JSON-ready dicts (the JSONL contract), in order.

    Args:
        cases: The cases.

    Yields:
        One dict per case.
    """
    for case in cases:
        yield case.model_dump(mode="json")
