"""Strict schemas of every structured model output, and the parser that enforces them.

An output parses when it is one JSON object (bare, or alone inside a single fenced code
block) that validates against the stage's schema: no extra keys, no type coercion, labels
from the closed sets (case and surrounding blanks are normalised, nothing else). Free text
is never mined for a label.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .labels import AttributionLabel, JudgePreference, RejectionReason

__all__ = [
    "AuditOutput",
    "JudgeOutput",
    "OutputParseError",
    "ProbeAuditOutput",
    "ProbeRepairOutput",
    "ProbeSetOutput",
    "ReasonOutput",
    "RoleCheckOutput",
    "TieBreakOutput",
    "parse_output",
    "parse_text_response",
]

_STRICT = ConfigDict(extra="forbid", strict=True, frozen=True)

T = TypeVar("T", bound=BaseModel)


class OutputParseError(ValueError):
    """A model output that does not satisfy its stage's schema."""


def _label(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


class ProbeSetOutput(BaseModel):
    """Probe generator output (App. B.1)."""

    model_config = _STRICT

    relevant: str = Field(min_length=1)
    """Future query where the memory gives non-redundant user-specific information."""
    irrelevant: str = Field(min_length=1)
    """Future query whose outcome should not depend on the memory."""
    risk: str = Field(min_length=1)
    """Future query with an observable entity, temporal or scope shift."""


class RoleCheckOutput(BaseModel):
    """Probe auditor verdict on one role."""

    model_config = _STRICT

    valid: bool
    """Whether the probe fulfils its role without leakage."""
    issue: str = ""
    """Semantic audit of the failure (empty when valid)."""


class ProbeAuditOutput(BaseModel):
    """Probe auditor output (App. B.2)."""

    model_config = _STRICT

    relevant: RoleCheckOutput
    """Verdict on the relevant probe."""
    irrelevant: RoleCheckOutput
    """Verdict on the irrelevant probe."""
    risk: RoleCheckOutput
    """Verdict on the risk probe."""


class ProbeRepairOutput(BaseModel):
    """Targeted single-role repair output (App. B.2)."""

    model_config = _STRICT

    query: str = Field(min_length=1)
    """The replacement query for the requested role."""


class JudgeOutput(BaseModel):
    """Blind pairwise judge output (App. B.4)."""

    model_config = _STRICT

    preference: JudgePreference
    """A, B or TIE."""
    explanation: str
    """Concise explanation."""

    @field_validator("preference", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value


class AuditOutput(BaseModel):
    """Attribution auditor output (App. B.5)."""

    model_config = _STRICT

    memory_used: bool
    """Whether the candidate memory was substantively used."""
    materially_changed: bool
    """Whether it materially changed the treatment response."""
    label: AttributionLabel
    """utility, unnecessary, neutral or risk."""
    explanation: str
    """Explanation of the label."""

    @field_validator("label", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return _label(value)


class TieBreakOutput(BaseModel):
    """Tie-break judge output (App. B.6)."""

    model_config = _STRICT

    decision: Literal["STORE", "DO_NOT_STORE"]
    """The admission judgement from the raw evidence."""
    explanation: str
    """Why."""

    @field_validator("decision", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value


class ReasonOutput(BaseModel):
    """Reason classifier output (App. B.7)."""

    model_config = _STRICT

    reason_type: RejectionReason
    """The primary failure category."""
    confidence: float = Field(ge=0.0, le=1.0)
    """Confidence in [0, 1]."""
    explanation: str
    """Short explanation."""

    @field_validator("reason_type", mode="before")
    @classmethod
    def _reason(cls, value: Any) -> Any:
        value = _label(value)
        # Sec. 4.5 spells it "identity_misinference", App. B.7 "identity_mis_inference".
        return "identity_mis_inference" if value == "identity_misinference" else value

    @field_validator("confidence", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        # JSON has one number type: accept an integer 0 or 1 as a float, nothing else.
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


_FENCE = re.compile(r"^```(?:json|JSON)?\s*\n(.*?)\n?```$", re.DOTALL)


def _json_object(text: str) -> dict[str, Any]:
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise OutputParseError(f"not a JSON object: {exc.msg} at char {exc.pos}") from exc
    if not isinstance(data, dict):
        raise OutputParseError(f"expected a JSON object, got {type(data).__name__}")
    return data


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(object)"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def parse_output(schema: type[T], output: Mapping[str, Any] | str) -> T:
    """Validate ``output`` (an object, or JSON text) against ``schema``; raise on any doubt."""
    data = dict(output) if isinstance(output, Mapping) else _json_object(str(output))
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise OutputParseError(_describe(exc)) from exc


def parse_text_response(output: str) -> str:
    """A free-text response: any non-blank string."""
    if not isinstance(output, str) or not output.strip():
        raise OutputParseError("empty response")
    return output.strip()
