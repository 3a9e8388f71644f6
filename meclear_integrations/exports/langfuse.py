"""Per-memory scores as Langfuse scores on the trace (or the retriever observation).

Langfuse shows scores beside the trace and filters and charts by them. One clearance
writes, per memory, a ``meclear_memory_harm`` NUMERIC score (harm = ``-psi_i``) and a
``meclear_memory_verdict`` CATEGORICAL score (``cleared`` / ``harmful`` / ``kept`` /
``unattributed``), each with the memory's id, position, content hash and interval as
metadata (never its text), and one ``meclear_recovered`` BOOLEAN score for the run.

Needs the ``langfuse`` extra (``pip install 'meclear-integrations[langfuse]'``); the
client defaults to ``langfuse.get_client()`` (``LANGFUSE_PUBLIC_KEY`` /
``LANGFUSE_SECRET_KEY`` / ``LANGFUSE_BASE_URL``). Scores are sent in the background;
:func:`langfuse_scores` flushes them before it returns.
"""

from __future__ import annotations

from typing import Any

from .scores import memory_scores

__all__ = ["langfuse_scores"]


def _client(client: Any) -> Any:
    if client is not None:
        return client
    try:
        from langfuse import get_client
    except ImportError as exc:
        raise ImportError(
            "Langfuse export needs the langfuse extra: pip install 'meclear-integrations[langfuse]'"
        ) from exc
    return get_client()


def langfuse_scores(
    source: Any,
    trace_id: str,
    *,
    observation_id: str | None = None,
    client: Any = None,
    prefix: str = "meclear",
    flush: bool = True,
) -> int:
    """Write one clearance's per-memory scores on a Langfuse trace.

    Args:
        source: A ``ClearanceReport`` or a ledger ``RunRecord``.
        trace_id: The Langfuse trace (32 hex characters).
        observation_id: The retriever's observation (span) in that trace, if known.
        client: A ``langfuse.Langfuse`` client (default: ``get_client()``).
        prefix: The score names' prefix.
        flush: Send the scores before returning.

    Returns:
        The number of scores written.
    """
    lf = _client(client)
    scores = memory_scores(source)
    where: dict[str, Any] = {"trace_id": trace_id}
    if observation_id is not None:
        where["observation_id"] = observation_id
    written = 0
    for score in scores:
        metadata = score.fields()
        if score.harm is not None:
            lf.create_score(
                name=f"{prefix}_memory_harm",
                value=score.harm,
                data_type="NUMERIC",
                comment=score.comment(),
                metadata=metadata,
                **where,
            )
            written += 1
        lf.create_score(
            name=f"{prefix}_memory_verdict",
            value=score.verdict,
            data_type="CATEGORICAL",
            comment=score.comment(),
            metadata=metadata,
            **where,
        )
        written += 1
    if scores:
        lf.create_score(
            name=f"{prefix}_recovered",
            value=1.0 if scores[0].recovered else 0.0,
            data_type="BOOLEAN",
            comment=f"run {scores[0].run_status}",
            **where,
        )
        written += 1
    if flush:
        lf.flush()
    return written
