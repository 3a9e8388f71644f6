"""Feedback from LangSmith users into the harm ledger, and replays through a retriever.

:func:`langsmith_feedback` records a verdict on the ledger (found by the traced run id the
ledger recorded for the query) and sends the same verdict to LangSmith as feedback on that
run (``key``, score 1 / 0, the correction as ``{"answer": ...}``), so both hold one
history. The ledger is written first: an unknown run or memory id fails before anything
is sent, and a LangSmith outage after it leaves the ledger's record (with the LangSmith
feedback id it was meant to have) for a retry of the send alone.

:func:`replay_feedback` replays a feedback with its correction as reference using a
``ClearingRetriever``'s own agent and judge (``ledger.replay_feedback``), reading the
memories back from your vector store by id (``get_by_ids``) and checking their texts
against the recorded content hashes. When the ledger keeps no query texts and no ``query=``
is given, the question is read from the traced run's inputs (:func:`langsmith_trace_query`,
with a ``langsmith.Client``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.documents import Document

from ..core.redaction import redact

__all__ = [
    "langsmith_feedback",
    "langsmith_trace_query",
    "replay_feedback",
    "reverify_settlements",
]


def langsmith_feedback(
    ledger: Any,
    run_id: str | uuid.UUID,
    *,
    correct: bool,
    correction: str | None = None,
    memory_ids: Sequence[str] = (),
    comment: str | None = None,
    key: str = "correctness",
    session_id: str | uuid.UUID | None = None,
    client: Any = None,
) -> Any:
    """Record feedback on ``ledger`` and send it to LangSmith; returns the ledger record.

    ``run_id``: the LangSmith run the user judged (the ledger finds its query by the traced
    run id it recorded). ``session_id``: the LangSmith project (tracing session) of the
    run, which LangSmith asks for. ``client``: a ``langsmith.Client`` (default: one from
    the environment, ``LANGSMITH_API_KEY`` / ``LANGSMITH_ENDPOINT``).

    Args:
        ledger: The ``HarmLedger``.
        run_id: The LangSmith run the user judged.
        correct: Whether the answer was correct.
        correction: The right answer, when the user gave one.
        memory_ids: The memories the user blamed, if any.
        comment: A free-text comment (redacted before it is sent).
        key: The LangSmith feedback key.
        session_id: The LangSmith project (tracing session) of the run.
        client: A ``langsmith.Client`` (default: one from the environment).

    Returns:
        The ledger's feedback record.
    """
    feedback_id = uuid.uuid4()
    record = ledger.feedback(
        str(run_id),
        correct=correct,
        correction=correction,
        memory_ids=memory_ids,
        source="langsmith",
        source_id=str(feedback_id),
        comment=comment,
    )
    if client is None:
        from langsmith import Client

        client = Client()
    client.create_feedback(
        run_id,
        key=key,
        score=1.0 if correct else 0.0,
        correction={"answer": redact(correction)} if correction else None,
        comment=redact(comment) if comment else None,
        feedback_id=feedback_id,
        source_info={"meclear_ledger_feedback_id": record.feedback_id},
        **({"session_id": session_id} if session_id is not None else {}),
    )
    return record


_QUESTION_KEYS = ("query", "question", "input")


def langsmith_trace_query(client: Any) -> Callable[[Any], str | None]:
    """A ``trace_query`` reading a recorded run's question from its LangSmith trace.

    The ledger records the trace (root run) id of each clearance; the question is the first
    text among the root run's ``query``, ``question`` and ``input`` inputs (a retriever or
    a chain invoked with a string has one of them), or its only text input.

    Args:
        client: A ``langsmith.Client`` (anything with ``read_run(run_id)``).

    Returns:
        ``trace_query(run) -> text | None`` for :func:`replay_feedback`.
    """

    def trace_query(run: Any) -> str | None:
        if not run.trace_run_id:
            return None
        inputs = getattr(client.read_run(run.trace_run_id), "inputs", None) or {}
        if not isinstance(inputs, dict):
            return None
        for key in _QUESTION_KEYS:
            if isinstance(inputs.get(key), str):
                return str(inputs[key])
        texts = [v for v in inputs.values() if isinstance(v, str)]
        return texts[0] if len(texts) == 1 else None

    return trace_query


def replay_feedback(
    retriever: Any,
    ledger: Any,
    feedback: Any,
    *,
    get_documents: Callable[[Sequence[str]], list[Document]] | None = None,
    query: str | None = None,
    client: Any = None,
    trace_query: Callable[[Any], str | None] | None = None,
) -> Any:
    """Replay ``feedback`` through ``retriever``'s agent and judge, the correction as reference.

    Args:
        retriever: The ``ClearingRetriever`` (or compressor) whose agent and judge replay it.
        ledger: The ``HarmLedger`` holding the feedback.
        feedback: A feedback record or its id.
        get_documents: Reads the memories back from your store by id (e.g.
            ``vector_store.get_by_ids``; checked against the recorded hashes). None: the
            texts the ledger kept (``store_text=True``, the default), as documents without
            their metadata.
        query: The query text, when the ledger did not keep it.
        client: A ``langsmith.Client``: without ``query`` and query texts in the ledger, the
            question is read from the run's trace (:func:`langsmith_trace_query`).
        trace_query: Your own ``trace_query(run) -> text | None`` instead.

    Returns:
        The ``ledger.ReplayResult``.

    Raises:
        ReplayError: No ``query``, no text in the ledger and none in the trace (or the
            feedback cannot be replayed for another reason).
    """
    from ..ledger.replay import replay_feedback as replay

    resolve, evaluator_for = _replay_tools(retriever, get_documents)
    if trace_query is None and client is not None:
        trace_query = langsmith_trace_query(client)
    return replay(
        ledger,
        feedback,
        evaluator_for=evaluator_for,
        query=query,
        resolve=resolve,
        config=retriever._engine_config(),
        trace_query=trace_query,
    )


def reverify_settlements(
    retriever: Any,
    ledger: Any,
    *,
    get_documents: Callable[[Sequence[str]], list[Document]] | None = None,
    client: Any = None,
    trace_query: Callable[[Any], str | None] | None = None,
) -> list[Any]:
    """Re-verify every pending challenged settlement through ``retriever``'s agent and judge.

    A challenge is a run that withheld a settled harm the live judge did not confirm
    (``ledger.reverify``): each is judged against its settlement's own evidence (the trusted
    correction), which upholds or lifts it. Arguments as in :func:`replay_feedback`.

    Args:
        retriever: The ``ClearingRetriever`` (or compressor) whose agent and judge re-verify.
        ledger: The ``HarmLedger``.
        get_documents: Reads the memories back from your store by id (None: the ledger's).
        client: A ``langsmith.Client`` to read questions from traces.
        trace_query: Your own ``trace_query(run) -> text | None`` instead.

    Returns:
        One ``ledger.reverify.ReverifyResult`` (or ``ReplayError``) per pending challenge.
    """
    from ..ledger.reverify import reverify_pending

    resolve, evaluator_for = _replay_tools(retriever, get_documents)
    if trace_query is None and client is not None:
        trace_query = langsmith_trace_query(client)
    return list(
        reverify_pending(
            ledger,
            evaluator_for=evaluator_for,
            resolve=resolve,
            config=retriever._engine_config(),
            trace_query=trace_query,
        )
    )


def _replay_tools(
    retriever: Any, get_documents: Callable[[Sequence[str]], list[Document]] | None
) -> tuple[Any, Any]:
    """``(resolve, evaluator_for)`` of a replay through ``retriever`` (None: ledger texts)."""
    from .documents import to_memories

    documents: dict[str, Document] = {}

    def resolve(ids: Sequence[str]) -> dict[str, str]:
        assert get_documents is not None  # only passed with a reader
        found = [d for d in get_documents(list(ids)) if d.id is not None]
        documents.update({str(d.id): d for d in found})
        return {str(d.id): d.page_content for d in found}

    def evaluator_for(text: str, reference: str, memories: list[Any]) -> Any:
        docs = [documents.get(m.id) or Document(page_content=m.content, id=m.id) for m in memories]
        rebuilt, _ = to_memories(docs)
        return retriever._task(text, docs, rebuilt, reference, asynchronous=False)

    return (resolve if get_documents is not None else None), evaluator_for
