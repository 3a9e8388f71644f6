"""Admission benchmark cases: the JSONL contract, a line-numbered parser, the shipped sample.

One JSON object per line::

    {"id": str, "candidate_memory": str,
     "historical_context": str | [{"role": str, "content": str}, ...],
     "label": "store" | "do_not_store", "reason_type": str}

``reason_type`` is ``directly_relevant`` for store cases and one of the paper's rejection
reasons otherwise (App. B.7).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..core.errors import ConfigurationError
from .labels import REJECTION_REASONS, Decision, ReasonType

__all__ = [
    "AdmissionCase",
    "AdmissionCaseParse",
    "CaseTurn",
    "load_admission_cases",
    "parse_admission_lines",
    "sample_cases_path",
]


class CaseTurn(BaseModel):
    """One message of the historical context."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: str = Field(min_length=1)
    """``user`` or ``assistant``."""
    content: str
    """The message text."""


class AdmissionCase(BaseModel):
    """One labelled candidate memory."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    """Case id."""
    candidate_memory: str = Field(min_length=1)
    """The candidate memory M."""
    historical_context: str | list[CaseTurn]
    """The conversation C it was extracted from."""
    label: Decision
    """Gold storage decision."""
    reason_type: ReasonType
    """Gold reason: ``directly_relevant`` for store, a rejection reason otherwise."""

    @model_validator(mode="after")
    def _consistent(self) -> AdmissionCase:
        if self.label == "store" and self.reason_type != "directly_relevant":
            raise ConfigurationError("a store case has reason_type 'directly_relevant'")
        if self.label == "do_not_store" and self.reason_type not in REJECTION_REASONS:
            raise ConfigurationError("a do_not_store case needs a rejection reason_type")
        return self

    def context(self) -> str | list[dict[str, str]]:
        """The historical context in the engine's input form.

        Returns:
            The context text, or its ``{"role", "content"}`` turns.
        """
        if isinstance(self.historical_context, str):
            return self.historical_context
        return [t.model_dump() for t in self.historical_context]


class AdmissionCaseParse(BaseModel):
    """Every valid case and every bad line (1-based line number, message)."""

    cases: list[AdmissionCase]
    errors: list[tuple[int, str]]


def parse_admission_lines(lines: Iterable[str]) -> AdmissionCaseParse:
    """Parse JSONL lines; blank lines are skipped, bad lines and duplicate ids reported.

    Args:
        lines: The JSONL lines.

    Returns:
        The cases and the problems found.
    """
    cases: list[AdmissionCase] = []
    errors: list[tuple[int, str]] = []
    seen: set[str] = set()
    for number, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text:
            continue
        try:
            case = AdmissionCase.model_validate(json.loads(text))
        except json.JSONDecodeError as exc:
            errors.append((number, f"invalid JSON: {exc.msg}"))
            continue
        except ValidationError as exc:
            msg = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(case)'}: {e['msg']}"
                for e in exc.errors()
            )
            errors.append((number, msg))
            continue
        if case.id in seen:
            errors.append((number, f"duplicate id {case.id!r}"))
            continue
        seen.add(case.id)
        cases.append(case)
    return AdmissionCaseParse(cases=cases, errors=errors)


def sample_cases_path() -> Path:
    """Path of the shipped hand-written sample (32 cases across the paper's reason types).

    Returns:
        The path.
    """
    return Path(str(resources.files(__package__).joinpath("data", "sample_cases.jsonl")))


def load_admission_cases(path: str | Path | None = None) -> AdmissionCaseParse:
    """Parse a JSONL case file (UTF-8); the shipped sample when ``path`` is None.

    Args:
        path: The JSONL file, or None for the shipped sample.

    Returns:
        The cases and the problems found.
    """
    with open(path or sample_cases_path(), encoding="utf-8") as handle:
        return parse_admission_lines(handle)
