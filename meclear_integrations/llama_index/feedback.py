"""Feedback replays through a ``MeClearPostprocessor`` (the LlamaIndex side of the loop).

A user's verdict is recorded on the ledger (``HarmLedger.feedback``); :func:`replay_feedback`
replays it with its correction as reference using the postprocessor's own agent (its LLM or
response synthesizer) and judge, reading the nodes back from your store by id
(``get_nodes``, e.g. ``index.docstore.get_nodes`` or ``vector_store.get_nodes``) and checking
their texts against the recorded content hashes. The replay is a verified clearance: its
harm is settled for the question and questions like it, so the next ask tries it before
the early exit even when the live judge is reference-free and fooled. When the ledger
keeps no query texts and no ``query=`` is given, ``trace_query(run) -> text`` reads the
question from your own trace store (the ledger records each run's trace id).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle, TextNode

from .nodes import to_memories
from .reference import query_reference

__all__ = ["replay_feedback", "reverify_settlements"]


def replay_feedback(
    postprocessor: Any,
    ledger: Any,
    feedback: Any,
    *,
    get_nodes: Callable[[list[str]], Sequence[BaseNode | NodeWithScore]] | None = None,
    query: str | None = None,
    trace_query: Callable[[Any], str | None] | None = None,
) -> Any:
    """Replay ``feedback`` through ``postprocessor``'s agent and judge, the correction as reference.

    Args:
        postprocessor: The ``MeClearPostprocessor`` whose agent and judge replay it.
        ledger: The ``HarmLedger`` holding the feedback.
        feedback: A feedback record or its id.
        get_nodes: Reads the nodes back from your store by id (checked against the
            recorded hashes). None: the texts the ledger kept (``store_text=True``, the
            default), as text nodes without their metadata.
        query: The query text, when the ledger did not keep it.
        trace_query: ``trace_query(run) -> text | None``: the question from the original
            run's trace, when neither the ledger nor ``query`` has it.

    Returns:
        The ``ledger.ReplayResult``.

    Raises:
        ReplayError: No correction, no question text, or nodes missing or not matching the
            recorded hashes.

    Example:
        ```python
        from meclear_integrations.llama_index.feedback import replay_feedback

        record = ledger.feedback(run_id, correct=False, correction="in March")
        result = replay_feedback(
            postprocessor, ledger, record, get_nodes=index.docstore.get_nodes
        )
        print(result.report.cleared_ids)
        ```
    """
    from ..ledger.replay import replay_feedback as replay

    resolve, evaluator_for = _replay_tools(postprocessor, get_nodes)
    return replay(
        ledger,
        feedback,
        evaluator_for=evaluator_for,
        query=query,
        resolve=resolve,
        config=postprocessor._engine_config(),
        trace_query=trace_query,
    )


def reverify_settlements(
    postprocessor: Any,
    ledger: Any,
    *,
    get_nodes: Callable[[list[str]], Sequence[BaseNode | NodeWithScore]] | None = None,
    trace_query: Callable[[Any], str | None] | None = None,
) -> list[Any]:
    """Re-verify every pending challenged settlement through ``postprocessor``'s agent and judge.

    A challenge is a run that withheld a settled harm the live judge did not confirm
    (``ledger.reverify``): each is judged against its settlement's own evidence (the trusted
    correction), which upholds or lifts it. Arguments as in :func:`replay_feedback`.

    Args:
        postprocessor: The ``MeClearPostprocessor`` whose agent and judge re-verify.
        ledger: The ``HarmLedger``.
        get_nodes: Reads the nodes back from your store by id (None: the ledger's texts).
        trace_query: ``trace_query(run) -> text | None`` when the ledger keeps no question.

    Returns:
        One ``ledger.reverify.ReverifyResult`` (or ``ReplayError``) per pending challenge.
    """
    from ..ledger.reverify import reverify_pending

    resolve, evaluator_for = _replay_tools(postprocessor, get_nodes)
    return list(
        reverify_pending(
            ledger,
            evaluator_for=evaluator_for,
            resolve=resolve,
            config=postprocessor._engine_config(),
            trace_query=trace_query,
        )
    )


def _replay_tools(
    postprocessor: Any,
    get_nodes: Callable[[list[str]], Sequence[BaseNode | NodeWithScore]] | None,
) -> tuple[Any, Any]:
    """``(resolve, evaluator_for)`` of a replay through ``postprocessor`` (None: ledger texts)."""
    nodes: dict[str, NodeWithScore] = {}

    def resolve(ids: Sequence[str]) -> dict[str, str]:
        assert get_nodes is not None  # only passed with a reader
        for item in get_nodes(list(ids)):
            found = item if isinstance(item, NodeWithScore) else NodeWithScore(node=item)
            nodes[found.node.node_id] = found
        return {i: n.node.get_content() for i, n in nodes.items() if i in set(ids)}

    def evaluator_for(text: str, reference: str, memories: list[Any]) -> Any:
        shown = [
            nodes.get(m.id) or NodeWithScore(node=TextNode(id_=m.id, text=m.content))
            for m in memories
        ]
        rebuilt, _ = to_memories(shown)
        with query_reference(reference):
            return postprocessor._task(
                QueryBundle(text),
                shown,
                rebuilt,
                postprocessor._resolved_llm(),
                asynchronous=False,
            )

    return (resolve if get_nodes is not None else None), evaluator_for
