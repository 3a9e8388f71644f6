"""Strict schemas of every structured model output, and the parser that enforces them.

An output parses when it is one JSON object (bare, or alone inside a single fenced code
block) that validates against the stage's schema: no extra keys, no type coercion, labels
from the closed sets (case and surrounding blanks are normalised, nothing else). Free text
is never mined for a label.

Model output is untrusted (it can echo a hostile candidate): text is decoded by
:func:`~meclear_integrations.core.bounded_json.load_object` (linear time, at most
:data:`MAX_OUTPUT_CHARS` characters and :data:`MAX_OUTPUT_DEPTH` levels, duplicate keys
rejected), and every failure of decoding or validation, whatever its type (an
``OverflowError`` on a 400-digit number included), is an :class:`OutputParseError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..core.bounded_json import BoundedJSONError, load_object
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
        if isinstance(value, int) and not isinstance(value, bool):
            if value not in (0, 1):
                raise ValueError("a confidence must be a number in [0, 1]")
            return float(value)
        return value


MAX_OUTPUT_CHARS = 64_000
"""Longest model output decoded; a longer one does not parse."""
MAX_OUTPUT_DEPTH = 6
"""Deepest JSON nesting decoded (the deepest schema, the probe audit, is 2 levels)."""


def _json_object(text: str) -> dict[str, Any]:
    try:
        return load_object(text, max_chars=MAX_OUTPUT_CHARS, max_depth=MAX_OUTPUT_DEPTH)
    except BoundedJSONError as exc:
        raise OutputParseError(f"not one JSON object: {exc}") from None


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(object)"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def parse_output(schema: type[T], output: Mapping[str, Any] | str) -> T:
    """Validate ``output`` (an object, or JSON text) against ``schema``.

    Args:
        schema: The pydantic model the output must match.
        output: A decoded object, or the model's JSON text.

    Returns:
        The validated ``schema`` instance.

    Raises:
        OutputParseError: On any doubt (never any other exception).
    """
    if isinstance(output, Mapping):
        data = dict(output)
    elif isinstance(output, str):
        data = _json_object(output)
    else:
        raise OutputParseError(f"expected an object or JSON text, got {type(output).__name__}")
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise OutputParseError(_describe(exc)) from None
    except Exception as exc:  # a validator that failed otherwise (OverflowError, ...)
        raise OutputParseError(f"{type(exc).__name__} while validating: {exc}"[:300]) from None


def parse_text_response(output: str) -> str:
    """A free-text response: any non-blank string of at most :data:`MAX_OUTPUT_CHARS`.

    Args:
        output: The model's reply.

    Returns:
        The reply.

    Raises:
        OutputParseError: The reply is blank or too long.
    """
    if not isinstance(output, str) or not output.strip():
        raise OutputParseError("empty response")
    if len(output) > MAX_OUTPUT_CHARS:
        raise OutputParseError(f"a response of {len(output)} characters exceeds the cap")
    return output.strip()
