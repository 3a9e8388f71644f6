"""Framework-neutral payloads shared by the LangChain and LlamaIndex integrations.

Per-memory metadata
    Every returned document / node is a new object whose metadata holds, under one key
    (:data:`DEFAULT_METADATA_KEY`, ``"meclear"``, configurable), the dict built by
    :func:`memory_metadata`: ``memory_id``, ``loo_effect`` (d_i, Eq. 7), ``loo_label``,
    ``shapley`` (psi_i, Eq. 3 / 11), ``shapley_interval`` ([lo, hi], Eq. 13), ``rank``
    (1 = most negative), ``harmful`` (psi_i < -tau, Eq. 14), ``cleared``, ``recovered``
    (the run's verified recovery, Eq. 19) and ``early_exit`` (the full context already
    succeeded, so no attribution ran and the numeric fields are None). Other metadata keys
    are copied unchanged.

Stage events
    :func:`stage_event_payload` turns an engine ``StageEvent`` into the payload of the
    ``meclear.<stage>`` event: ``stage``, ``phase``, ``query_id`` and the engine's payload
    (ids and numbers only, never memory texts), capped at ``max_bytes`` of JSON; when the
    cap is hit, per-memory maps keep the lowest-ranked (most harmful) memories first and
    ``truncated`` is set. :func:`report_summary` is the bounded report of a whole run
    (what a tracing backend stores as the clearance step's output).

Memory ids
    :func:`assign_memory_ids` gives every item of a retrieved context a distinct id: its
    own id when it has one, else :func:`content_memory_id` (``mc-`` + 16 hex of the
    SHA-256 of the text), stable across processes. A repeated id (two items with the same
    id, or identical texts without ids) gets ``#2``, ``#3``... in retrieval order.

Failures (fail-open)
    When the engine could not finish (``report.status == "failed"``) or the integration
    caught an error while failing open, every retrieved item is returned unchanged in
    content, and its metadata dict also holds ``status: "failed"`` and ``failure``
    (:func:`failure_summary`: ``reason``, ``stage``, ``error_type``, redacted ``error``,
    ``estimates_usable``, ``failed_count``); ``cleared`` is False everywhere. Event
    payloads, report summaries and error texts pass through
    :func:`~meclear_integrations.core.redaction.redact_payload` (no API keys or
    authorization headers) and are capped in size.

Edge cases (:class:`EdgeCasePolicy`)
    - Empty retrieval: returned unchanged (empty); no model call, no engine run; one
      ``meclear.clearance`` event with ``skipped: "empty"``.
    - Every memory cleared: this happens only when the empty context was verified to
      recover the answer (Theorem 2). ``all_cleared="return_empty"`` (default) honours
      the verified decision; ``"keep_all"`` returns the full context instead (with metadata
      saying what the engine decided) for pipelines that cannot take an empty context.
    - Identical texts: each copy is a separate player (the agent saw each copy, and two
      copies of a fault are exactly the redundant harm leave-one-out misses); copies get
      distinct ids as above and are cleared or kept individually.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..core.events import StageEvent
from ..core.failures.kind import failure_kind
from ..core.instructions import is_instruction_like
from ..core.redaction import redact, redact_payload
from ..core.report import ClearanceReport
from ..core.text import utf8_safe

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "DEFAULT_METADATA_KEY",
    "EVENT_PREFIX",
    "PROGRESS_EVENT_NAME",
    "EdgeCasePolicy",
    "assign_memory_ids",
    "bounded",
    "content_memory_id",
    "event_name",
    "exception_summary",
    "failure_summary",
    "kept_metadata",
    "memory_metadata",
    "model_calls_summary",
    "report_summary",
    "shadow_metadata",
    "stage_event_name",
    "stage_event_payload",
]

DEFAULT_METADATA_KEY = "meclear"
"""Metadata key under which per-memory results are stored on returned documents / nodes."""
EVENT_PREFIX = "meclear."
"""Custom events are named ``meclear.screening``, ``meclear.attribution``, ..."""
PROGRESS_EVENT_NAME = "meclear.progress"
"""The custom event of the engine's ``progress`` events (any stage)."""
DEFAULT_MAX_EVENT_BYTES = 16_384
"""Default JSON size cap of one event payload or report summary."""


class EdgeCasePolicy(BaseModel):
    """What an integration does in the edge cases (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    all_cleared: Literal["return_empty", "keep_all"] = "return_empty"
    """When the verified clearance removes every memory: return nothing, or everything."""


NO_ANSWER_REASON = "judge_accepts_no_answer"
"""``status_reason`` of a run that abstained because the judge also accepted an empty or
"I don't know" answer (``judges.task``)."""
NO_ANSWER_HINT = (
    'clearance abstained: the judge (reference-free) accepts an empty or "I don\'t know" '
    "answer as well as the context's answer, so no clearance can be verified; pass a "
    "reference answer (LangChain: reference_config(...) / documents.reference_key; "
    "LlamaIndex: query_reference(...)) or a judge that scores a non-answer 0 "
    "(judge=...), or use a feedback correction (HarmLedger.feedback) for this question"
)
"""What the items' metadata (``hint``) and the component's one warning say about it."""


def event_name(stage: str) -> str:
    """``meclear.<stage>``.

    Args:
        stage: The engine stage (``screening``, ``attribution``, ...).

    Returns:
        The custom event name.

    Example:
        >>> from meclear_integrations.runtime.payloads import event_name
        >>> event_name("screening")
        'meclear.screening'
    """
    return f"{EVENT_PREFIX}{stage}"


def stage_event_name(event: StageEvent) -> str:
    """The custom event name of an engine event.

    Args:
        event: The engine's stage event.

    Returns:
        ``meclear.progress`` for a ``progress`` event, else ``meclear.<stage>``.
    """
    return PROGRESS_EVENT_NAME if event.phase == "progress" else event_name(event.stage)


def content_memory_id(text: str) -> str:
    """A stable id from the text: ``mc-`` + the first 16 hex digits of its SHA-256.

    Args:
        text: The memory's text.

    Returns:
        The id.
    """
    return "mc-" + hashlib.sha256(utf8_safe(text).encode("utf-8")).hexdigest()[:16]


def assign_memory_ids(items: Iterable[tuple[str | None, str]]) -> list[str]:
    """Distinct ids for ``(own_id or None, text)`` items, in order (module docstring).

    Identical texts without ids of their own get ``#2``, ``#3``... suffixes.

    Args:
        items: ``(own_id or None, text)`` per item, in retrieval order.

    Returns:
        One distinct id per item.

    Example:
        >>> from meclear_integrations.runtime.payloads import assign_memory_ids
        >>> assign_memory_ids([(None, "a"), (None, "a"), ("x", "b")])
        ['mc-ca978112ca1bbdca', 'mc-ca978112ca1bbdca#2', 'x']
    """
    seen: Counter[str] = Counter()
    ids: list[str] = []
    for own, text in items:
        base = utf8_safe(own) if own else content_memory_id(text)  # as Memory stores it
        seen[base] += 1
        ids.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
    taken = set()
    for i, mid in enumerate(ids):  # a suffixed id could collide with a real one: re-suffix
        while mid in taken:
            mid += "#"
        taken.add(mid)
        ids[i] = mid
    return ids


def failure_summary(report: ClearanceReport) -> dict[str, Any] | None:
    """Why a failed (fail-open) run stopped, bounded and redacted; None for a complete run.

    Args:
        report: The engine's report.

    Returns:
        The reason, stage and redacted error, or None.
    """
    failure = getattr(report, "failure", None)
    if failure is None:
        return None
    summary: dict[str, Any] = {
        "reason": failure.reason,
        "kind": failure.kind,
        "stage": failure.stage,
        "error_type": failure.error_type,
        "error": redact(failure.error)[:500],
        "estimates_usable": failure.estimates_usable,
        "failed_count": len(failure.failed_coalitions),
    }
    rejected = rejected_memory_ids(failure.failed_coalitions)
    if rejected is not None:
        summary["rejected_memory_ids"] = rejected
    return summary


def rejected_memory_ids(failed: Sequence[Any]) -> list[str] | None:
    """The memories whose content a provider refused (``content_rejected``), if any.

    The smallest refused coalition (the fewest memories to look at), in retrieval order.

    Args:
        failed: A report's failed coalitions.

    Returns:
        Memory ids (redacted), or None when no call was refused for its content.
    """
    refused = [f for f in failed if getattr(f, "kind", None) == "content_rejected"]
    if not refused:
        return None
    smallest = min(refused, key=lambda f: len(f.memory_ids))
    return [redact(m) for m in smallest.memory_ids]


def exception_summary(error: BaseException, *, stage: str = "integration") -> dict[str, Any]:
    """:func:`failure_summary` for an error an integration caught while failing open.

    Args:
        error: The caught error.
        stage: Where it was caught.

    Returns:
        The same fields as :func:`failure_summary` (error redacted).
    """
    return {
        "reason": "integration_error",
        "kind": failure_kind(error),
        "stage": stage,
        "error_type": type(error).__name__,
        "error": redact(f"{type(error).__name__}: {error}")[:500],
        "estimates_usable": False,
        "failed_count": 0,
    }


def memory_metadata(report: ClearanceReport, memory_id: str) -> dict[str, Any]:
    """The per-memory dict stored under the metadata key.

    When the run stopped before attribution (the full context already succeeded: early
    exit) the numeric fields are None, ``harmful`` and ``cleared`` are False and
    ``early_exit`` is True. ``status`` is always there: ``complete`` for a finished run; a
    failed run (fail-open) has ``status: "failed"`` and ``failure``; an abstaining
    (``unverified``) or declined (``skipped``) run has its ``status`` and ``status_reason``
    (the context is unchanged). An instruction-like memory (``core.instructions``) has
    ``suspect: True``; when the run cleared memories but kept suspects, every memory's dict
    lists them under ``suspects_kept``.

    Args:
        report: The engine's report.
        memory_id: The memory's id.

    Returns:
        The per-memory results (LOO effect, Shapley value and interval, rank, harmful,
        cleared, recovered, early exit).
    """
    meta = _memory_metadata(report, memory_id)
    memory = next((m for m in (*report.kept, *report.cleared) if m.id == memory_id), None)
    if memory is not None and is_instruction_like(memory.content):
        meta["suspect"] = True  # carries instructions to the model (core.instructions)
    kept_suspects = report.suspects_kept
    if kept_suspects:  # the fix left instruction-like memories in the context
        meta["suspects_kept"] = [redact(i) for i in kept_suspects]
    if getattr(report, "carrier_status", None) is not None:  # the carriers search ran
        meta["carrier"] = memory_id in report.carrier_ids
        meta["withheld"] = memory_id in report.withheld_ids
    failure = failure_summary(report)
    if failure is not None:
        meta["status"] = "failed"
        meta["error"] = failure["error"]
        meta["failure"] = failure
    elif report.status in ("unverified", "skipped"):
        meta["status"] = report.status
        meta["status_reason"] = report.status_reason
        if report.status_reason == NO_ANSWER_REASON:
            meta["hint"] = NO_ANSWER_HINT
    else:
        meta["status"] = report.status  # "complete": every item says how its run ended
    calls = model_calls_summary(report)
    if calls is not None:
        meta["model_calls"] = calls
    return meta


def model_calls_summary(report: ClearanceReport) -> dict[str, Any] | None:
    """``{"agent", "judge", "total"}`` model calls of the run.

    ``tokens`` per role is added when the provider reported usage.

    Args:
        report: The engine's report.

    Returns:
        The calls, or None when the evaluator was not a task evaluator.
    """
    cost = report.cost
    total = cost.model_calls
    if total is None:
        return None
    out: dict[str, Any] = {"agent": cost.agent_calls, "judge": cost.judge_calls, "total": total}
    tokens = {
        role: usage.model_dump()
        for role, usage in (("agent", cost.agent_tokens), ("judge", cost.judge_tokens))
        if usage is not None
    }
    if tokens:
        out["tokens"] = tokens
    return out


def shadow_metadata(
    ids: Sequence[str], report: ClearanceReport
) -> list[tuple[int, dict[str, Any]]]:
    """(position, metadata) of every memory in shadow mode: nothing is dropped.

    Each memory's metadata says what clearance decided (``cleared``: the memory would have
    been removed) and carries ``mode: "shadow"``.

    Args:
        ids: The memory ids in retrieval order.
        report: The engine's report.

    Returns:
        ``(position, metadata)`` for every memory.
    """
    out: list[tuple[int, dict[str, Any]]] = []
    for position, mid in enumerate(ids):
        meta = memory_metadata(report, mid)
        meta["mode"] = "shadow"
        out.append((position, meta))
    return out


def kept_metadata(
    ids: Sequence[str], report: ClearanceReport, policy: EdgeCasePolicy
) -> list[tuple[int, dict[str, Any]]]:
    """(position, metadata) of every memory to return, in retrieval order.

    The kept memories of the report; when the clearance removed every memory and the
    policy says ``keep_all``, every memory, marked ``kept_by_policy``. Integrations copy
    their documents / nodes at these positions with the metadata under their key.

    Args:
        ids: The memory ids in retrieval order.
        report: The engine's report.
        policy: What to do when every memory was cleared.

    Returns:
        ``(position, metadata)`` pairs in retrieval order.
    """
    kept = set(report.kept_ids)
    keep_all = bool(ids) and not kept and policy.all_cleared == "keep_all"
    out: list[tuple[int, dict[str, Any]]] = []
    for position, mid in enumerate(ids):
        if mid in kept or keep_all:
            meta = memory_metadata(report, mid)
            if keep_all:
                meta["kept_by_policy"] = True
            out.append((position, meta))
    return out


def _memory_metadata(report: ClearanceReport, memory_id: str) -> dict[str, Any]:
    early_exit = bool(getattr(report, "early_exit", False))
    try:
        a = report.attribution(memory_id)
    except KeyError:
        if memory_id not in report.kept_ids + report.cleared_ids + report.withheld_ids:
            raise
        return {
            "memory_id": memory_id,
            "loo_effect": None,
            "loo_label": None,
            "shapley": None,
            "shapley_interval": None,
            "rank": None,
            "harmful": False,
            "cleared": memory_id in report.cleared_ids + report.withheld_ids,
            "recovered": report.recovered,
            "early_exit": early_exit,
        }
    return {
        "memory_id": a.memory_id,
        "loo_effect": a.loo_effect,
        "loo_label": a.loo_label,
        "shapley": a.shapley,
        "shapley_interval": [a.shapley_interval[0], a.shapley_interval[1]],
        "rank": a.rank,
        "harmful": a.harmful,
        "cleared": a.cleared,
        "recovered": report.recovered,
        "early_exit": early_exit,
    }


def _size(obj: Any) -> int:
    return len(json.dumps(obj, default=str))


def bounded(payload: dict[str, Any], max_bytes: int, rank: dict[str, int] | None = None):
    """``payload`` cut down to at most ``max_bytes`` of JSON.

    Dicts keyed by memory id are trimmed to the memories with the lowest ``rank`` (most
    harmful first; retrieval order without ranks), long lists are shortened; ``truncated``
    is set whenever something was dropped. Scalars are kept (strings cut to 256
    characters only when the containers alone could not meet the cap), so the cap holds
    for any payload with a bounded number of scalar entries.

    Args:
        payload: The JSON-able payload.
        max_bytes: The cap in bytes of its JSON.
        rank: Memory id -> rank, to keep the most harmful memories first.

    Returns:
        The bounded payload (a new dict).
    """
    if _size(payload) <= max_bytes:
        return payload
    out = dict(payload)
    order = rank or {}
    keep = max((len(v) for v in out.values() if isinstance(v, dict | list)), default=0)
    while keep > 0 and _size(out) > max_bytes:
        keep //= 2
        for key, value in payload.items():
            if isinstance(value, dict) and len(value) > keep:
                ordered = sorted(value, key=lambda k: order.get(k, 10**9))
                out[key] = {k: value[k] for k in ordered[:keep]}
            elif isinstance(value, list) and len(value) > keep:
                out[key] = value[:keep]
        out["truncated"] = True
    if _size(out) > max_bytes:  # long scalar strings: cut them
        out = {k: v[:256] if isinstance(v, str) else v for k, v in out.items()}
        out["truncated"] = True
    return out


def stage_event_payload(
    event: StageEvent, *, query_id: str | None = None, max_bytes: int = DEFAULT_MAX_EVENT_BYTES
) -> dict[str, Any]:
    """The payload of the ``meclear.<stage>`` event for an engine stage event.

    Args:
        event: The engine's stage event.
        query_id: The id of the clearance run.
        max_bytes: The size cap of the payload's JSON.

    Returns:
        ``stage``, ``phase``, ``query_id`` and the stage's bounded data.
    """
    body = {"stage": event.stage, "phase": event.phase, "query_id": query_id, **event.payload}
    ranks = {mid: int(v.get("rank", 0)) for mid, v in event.payload.get("shapley", {}).items()}
    return bounded(redact_payload(body), max_bytes, ranks)


def report_summary(
    report: ClearanceReport, *, max_bytes: int = DEFAULT_MAX_EVENT_BYTES
) -> dict[str, Any]:
    """A bounded, text-free summary of a whole run (ids and numbers).

    Args:
        report: The engine's report.
        max_bytes: The size cap of the summary's JSON.

    Returns:
        The bounded summary (contributions, candidates, cleared and kept ids, recovery,
        cost).
    """
    summary = {
        "baseline_value": report.baseline_value,
        "final_value": report.final_value,
        "recovered": report.recovered,
        "cleared_ids": report.cleared_ids,
        "kept_ids": report.kept_ids,
        "harmful_ids": report.harmful_ids,
        **(
            {"carrier_ids": report.carrier_ids, "withheld_ids": report.withheld_ids}
            if report.carrier_status is not None
            else {}
        ),
        "contributions": {
            a.memory_id: {
                "loo_effect": a.loo_effect,
                "loo_label": a.loo_label,
                "shapley": a.shapley,
                "shapley_interval": [a.shapley_interval[0], a.shapley_interval[1]],
                "rank": a.rank,
                "harmful": a.harmful,
                "cleared": a.cleared,
            }
            for a in report.attributions
        },
        "candidates": [
            {
                "size": c.size,
                "memory_ids": c.memory_ids,
                "value": c.value,
                "gain": c.gain,
                "recovered": c.recovered,
                "admissible": c.admissible,
            }
            for c in report.candidates
        ],
        "cost": report.cost.model_dump(),
        "estimator": getattr(report, "estimator", None) or report.config.estimator_name,
        "early_exit": bool(getattr(report, "early_exit", False)),
        "status": getattr(report, "status", "complete"),
        "status_reason": getattr(report, "status_reason", None),
        "model_calls": model_calls_summary(report),
    }
    failure = failure_summary(report)
    if failure is not None:
        summary["failure"] = failure
    ranks = {a.memory_id: a.rank for a in report.attributions}
    return bounded(redact_payload(summary), max_bytes, ranks)
