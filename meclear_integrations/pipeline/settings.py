"""Grouped settings of the clearing components, shared by both integrations.

``ClearingRetriever``, ``MeClearCompressor`` (LangChain) and ``MeClearPostprocessor``
(LlamaIndex) keep their everyday settings flat (``llm``, ``judge``, ``clearance``, ...) and
take the rest in nested groups defined here once, framework-free:

- :class:`Limits` (``limits=``): the circuit breaker, the shared call limiter and the
  size cap of event payloads.
- :class:`Loop` (``loop=``): the production loop around the queries: the trigger, the
  harm ledger and the background audits' queue and workers (``mode`` stays on the
  component: it is the one switch of the loop most users set).
- :class:`Documents` (``documents=``): how the items are read and returned: the metadata
  key of the results, the metadata rendered for the agent and the judge, what the judge
  sees, the edge-case policy and (LangChain) the config-metadata key of the reference.

The old flat spellings (``circuit_breaker=``, ``trigger=``, ``metadata_key=`` ... on the
component) are rejected with a hint naming the new one (:data:`MOVED`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..core.strict import StrictSettings
from ..judges.answer_prompts import validate_metadata_keys
from ..runtime.breaker import CircuitBreaker
from ..runtime.limiter import CallLimiter
from ..runtime.payloads import DEFAULT_MAX_EVENT_BYTES, DEFAULT_METADATA_KEY, EdgeCasePolicy
from ..triggers.base import Trigger
from .field_docs import describe_fields

__all__ = ["DEFAULT_REFERENCE_KEY", "MOVED", "Documents", "Limits", "Loop"]

DEFAULT_REFERENCE_KEY = "meclear_reference"
"""Config-metadata key of a query's reference answer (LangChain, ``reference_config``)."""


class Limits(StrictSettings):
    """Bounds of a clearing component: breaker, call limiter, event size.

    Pass as ``limits=Limits(...)`` (or a mapping of these settings) to ``ClearingRetriever``,
    ``MeClearCompressor`` or ``MeClearPostprocessor``. A breaker or limiter instance given
    here is used as is, so one instance passed to several components is shared by them.

    Example:
        >>> from meclear_integrations.pipeline.settings import Limits
        >>> Limits(max_calls_in_flight=4).max_calls_in_flight
        4
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", defer_build=True)

    circuit_breaker: CircuitBreaker | None = Field(default_factory=CircuitBreaker, exclude=True)
    """Skips clearance (``status="skipped"``, reason ``circuit_open``) for a cool-down
    after consecutive provider failures (``meclear_integrations.runtime.breaker``; default: 3
    failures, 30 s). Pass one instance to several components to share it; None: off."""
    limiter: CallLimiter | None = Field(default=None, exclude=True)
    """Bounds the model calls in flight (agent and judge, each call one slot) across every
    query of the component (``meclear_integrations.runtime.limiter``); pass one instance to
    several components to bound the process. None: no bound beyond each query's
    ``clearance.budget.max_concurrency``."""
    max_calls_in_flight: int | None = Field(default=None, ge=1)
    """Shorthand for a limiter of the component's own: ``CallLimiter(max_calls_in_flight)``
    (not together with ``limiter``)."""
    max_event_bytes: int = Field(default=DEFAULT_MAX_EVENT_BYTES, ge=512)
    """Size cap (JSON bytes) of each event payload (and of a LangChain clearance run's
    outputs)."""


class Loop(StrictSettings):
    """The production loop of a clearing component: trigger, ledger, background audits.

    Pass as ``loop=Loop(...)`` (or a mapping of these settings) to ``ClearingRetriever``,
    ``MeClearCompressor`` or ``MeClearPostprocessor``; the component's ``mode`` chooses
    how the loop runs (``"background"`` needs ``ledger``).

    Example:
        >>> from meclear_integrations.pipeline import Loop
        >>> Loop(audit_workers=0).audit_workers
        0
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", defer_build=True)

    trigger: Trigger | None = Field(default=None, exclude=True)
    """When to clear (``meclear_integrations.triggers``, e.g. ``WhenJudgeFails() |
    TokenBudget(2000)``); a declined query returns its items unchanged with
    ``status: "skipped"`` and no model call. None clears every query."""
    ledger: Any = Field(default=None, exclude=True)
    """A ``HarmLedger``: every decision is recorded, and memories it verified harmful
    before are tried first (ledger-guided repeat clearances). Needed by
    ``mode="background"``."""
    audit_queue: Any = Field(default=None, exclude=True)
    """Background mode: where audits go (``jobs.JobStore``, ``jobs.ProcrastinateQueue``);
    None: a job table beside the ledger (same database)."""
    audit_workers: int = Field(default=1, ge=0)
    """Background mode: audit worker threads started with the component (0: none; run
    ``meclear worker`` instead)."""
    audits_per_question_per_day: int = Field(default=3, ge=1)
    """Background mode: audits queued per question (its ledger query id) per UTC day at
    most; a question asked again while its audit is pending joins it
    (``jobs.audit_gate``)."""
    audit_backoff_seconds: float = Field(default=600.0, ge=0.0)
    """Background mode: after an audit finishes, the next one of that question waits this
    long, doubled for every audit in a row that did not fix it (no verified run)."""
    audit_pending_seconds: float = Field(default=3600.0, gt=0.0)
    """Background mode: a pending audit the queue cannot report on stops blocking new
    audits of its question after this long (a lost job)."""
    withhold_carriers: bool = True
    """With a ``ledger``: clear with ``clearance_scope="complete"``, so the served context
    withholds every copy of a verified harm (its carriers: alone each gives the harmful
    answer) and the ledger withholds them with it for that question scope. A minimal
    clearance that leaves one of three stale copies beside the current fact serves an
    answer that hangs on the model's tie-break; the carrier search costs at most one call
    per kept memory plus one on a failing context. False: clear as ``clearance`` says."""


class Documents(StrictSettings):
    """How a clearing component reads its items and returns them.

    Pass as ``documents=Documents(...)`` (or a mapping of these settings) to
    ``ClearingRetriever``, ``MeClearCompressor`` or ``MeClearPostprocessor``.

    Example:
        >>> from meclear_integrations.pipeline import Documents
        >>> Documents(metadata_keys=["date"]).metadata_keys
        ('date',)
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    metadata_key: str = DEFAULT_METADATA_KEY
    """Metadata key of the per-memory results on the returned documents / nodes."""
    metadata_keys: tuple[str, ...] | None = None
    """Item metadata rendered, fenced as data, with each memory for the (default) agent and
    the reference-free judge; None: ``answer_prompts.DEFAULT_METADATA_KEYS`` (common time
    and source keys: ``date``, ``timestamp``, ``created_at``, ``source``, ``speaker``,
    ``file_name``...); ``()``: none."""
    judge_context: Literal["full", "coalition"] = "full"
    """What the judge sees as context: every retrieved item (default; removing evidence
    then cannot make an answer look supported, and each distinct answer is judged once per
    query), or only the coalition the agent saw (opt-in; without a reference its verdicts
    reward deleting the evidence against an answer)."""
    edge_cases: EdgeCasePolicy = Field(default_factory=EdgeCasePolicy)
    """Policy when every item is cleared (``meclear_integrations.runtime.payloads``)."""
    reference_key: str = DEFAULT_REFERENCE_KEY
    """LangChain: the config-metadata key holding the query's reference answer. The
    LlamaIndex postprocessor takes the reference from ``reference=`` or
    ``query_reference(...)`` and rejects another key here."""

    @field_validator("metadata_keys", mode="before")
    @classmethod
    def _renderable_keys(cls, keys: Any) -> Any:
        return validate_metadata_keys(keys)


# The field docstrings are the descriptions (``use_attribute_docstrings``, read without its
# frame walk: pipeline.field_docs); each schema is built on first use.
for _group in (Limits, Loop, Documents):
    describe_fields(_group)


def _moved(group: str, cls: type[BaseModel]) -> dict[str, str]:
    return {
        name: (
            f"{name} moved into {group}: pass {group}={cls.__name__}({name}=...) "
            f"(from meclear_integrations.pipeline import {cls.__name__}) "
            f"or {group}={{{name!r}: ...}}"
        )
        for name in cls.model_fields
    }


MOVED: dict[str, str] = {
    **_moved("limits", Limits),
    **_moved("loop", Loop),
    **_moved("documents", Documents),
}
"""Hints for the old flat spellings of the grouped settings, by old name."""
