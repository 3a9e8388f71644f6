"""Per-memory scores and review proposals as LangSmith feedback on the traced run.

Teams review runs in LangSmith: feedback shows beside the run, filters runs (e.g. every
run where a memory was cleared), feeds annotation queues and online evaluators. One
clearance writes, on its traced run (the ``ClearingRetriever`` / compressor run, or the
ledger's recorded ``trace_run_id``):

- one ``meclear.memory_harm`` feedback per memory: ``score`` = harm (``-psi_i``), ``value``
  = the verdict, ``comment`` = a one-line summary, ``extra`` = the memory's id, position,
  content hash, Shapley interval and LOO effect (never its text);
- one ``meclear.clearance`` feedback: ``score`` 1 when the returned context verifiably
  answers, ``value`` = the run's status, ``extra`` = the cleared ids.

:func:`langsmith_proposals` writes the ledger's review proposals as
``meclear.review_proposal`` feedback (score = the Wilson lower bound) on every traced run
that holds a proposal's evidence, so a reviewer finds them from the runs themselves.

Needs ``langsmith`` (installed with ``langchain-core``); the client defaults to one from
the environment (``LANGSMITH_API_KEY``, ``LANGSMITH_ENDPOINT``). Pass ``session_id`` (the
project's id) as LangSmith asks for it on feedback (without it the client warns).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from .scores import memory_scores

__all__ = ["HARM_KEY", "PROPOSAL_KEY", "RUN_KEY", "langsmith_proposals", "langsmith_scores"]

HARM_KEY = "meclear.memory_harm"
"""Feedback key of the per-memory harm scores."""
RUN_KEY = "meclear.clearance"
"""Feedback key of the run-level result."""
PROPOSAL_KEY = "meclear.review_proposal"
"""Feedback key of a review proposal."""


def _client(client: Any) -> Any:
    if client is not None:
        return client
    try:
        from langsmith import Client
    except ImportError as exc:  # pragma: no cover - langsmith comes with langchain-core
        raise ImportError(
            "LangSmith export needs langsmith: pip install 'meclear-integrations[langchain]'"
        ) from exc
    return Client()


def langsmith_scores(
    source: Any,
    run_id: str | uuid.UUID | None = None,
    *,
    client: Any = None,
    session_id: str | uuid.UUID | None = None,
    harm_key: str = HARM_KEY,
    run_key: str = RUN_KEY,
) -> list[str]:
    """Write one clearance's per-memory scores as feedback on its traced run.

    Args:
        source: A ``ClearanceReport`` or a ledger ``RunRecord``.
        run_id: The LangSmith run (None: the ledger run's ``trace_run_id``).
        client: A ``langsmith.Client`` (default: one from the environment).
        session_id: The LangSmith project (tracing session) of the run.
        harm_key: The per-memory feedback key.
        run_key: The run-level feedback key.

    Returns:
        The ids of the feedback written, per memory then the run's.

    Raises:
        ValueError: No run id is given and the ledger run has no traced run id.
    """
    target = run_id if run_id is not None else getattr(source, "trace_run_id", None)
    if target is None:
        raise ValueError("run_id is required (the ledger run records no trace_run_id)")
    ls = _client(client)
    scores = memory_scores(source)
    project = {"session_id": session_id} if session_id is not None else {}
    written: list[str] = []
    for score in scores:
        feedback_id = uuid.uuid4()
        ls.create_feedback(
            target,
            key=harm_key,
            score=score.harm,
            value=score.verdict,
            comment=score.comment(),
            extra=score.fields(),
            feedback_id=feedback_id,
            source_info={"meclear": "memory_scores"},
            **project,
        )
        written.append(str(feedback_id))
    feedback_id = uuid.uuid4()
    first = scores[0] if scores else None
    ls.create_feedback(
        target,
        key=run_key,
        score=1.0 if (first.recovered if first else False) else 0.0,
        value=first.run_status if first else "empty",
        comment=f"cleared {[s.memory_id for s in scores if s.verdict == 'cleared']}",
        extra={"cleared": [s.memory_id for s in scores if s.verdict == "cleared"]},
        feedback_id=feedback_id,
        source_info={"meclear": "clearance"},
        **project,
    )
    written.append(str(feedback_id))
    return written


def langsmith_proposals(
    ledger: Any,
    proposals: Sequence[Any],
    *,
    client: Any = None,
    session_id: str | uuid.UUID | None = None,
    key: str = PROPOSAL_KEY,
) -> list[str]:
    """Write review proposals as feedback on the traced runs that hold their evidence.

    Args:
        ledger: The ``HarmLedger`` the proposals come from.
        proposals: Its ``review()`` proposals.
        client: A ``langsmith.Client`` (default: one from the environment).
        session_id: The LangSmith project (tracing session) of the runs.
        key: The feedback key.

    Returns:
        The ids of the feedback written (runs without a LangChain-traced run id are
        skipped).
    """
    ls = _client(client)
    project = {"session_id": session_id} if session_id is not None else {}
    written: list[str] = []
    for p in proposals:
        for ledger_run in p.run_ids:
            run = ledger.find_run(ledger_run)
            if not run.trace_run_id or run.trace_system not in (None, "langchain"):
                continue  # not a LangSmith run (e.g. a LlamaIndex trace)
            feedback_id = uuid.uuid4()
            ls.create_feedback(
                run.trace_run_id,
                key=key,
                score=p.lower_bound,
                value="propose_removal",
                comment=(
                    f"memory {p.memory_id}: harmful on {p.harmful_queries} queries, helpful on "
                    f"{p.beneficial_queries} (rank {p.rank}; proposals only, a person decides)"
                ),
                extra={
                    "memory_id": p.memory_id,
                    "content_hash": p.content_hash,
                    "rank": p.rank,
                    "harmful_queries": p.harmful_queries,
                    "beneficial_queries": p.beneficial_queries,
                    "lower_bound": p.lower_bound,
                    "ledger_run_id": run.run_id,
                },
                feedback_id=feedback_id,
                source_info={"meclear": "review_proposal"},
                **project,
            )
            written.append(str(feedback_id))
    return written
