"""Nodes in, memories for the engine, new nodes out (inputs never mutated).

Memory id = node id (``node.node_id``); the same node retrieved twice gets ``#2``
(``payloads.assign_memory_ids``). A memory's content is the node's text without metadata
(``MetadataMode.NONE``). Returned nodes are copies whose ``metadata[key]`` holds the
per-memory results (``payloads.memory_metadata``); ``key`` is excluded from the LLM and
embedding views of the node, so the response synthesizer does not show it to the LLM.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import MetadataMode, NodeWithScore

from ..core.memory import Memory
from ..core.report import ClearanceReport
from ..payloads import EdgeCasePolicy, assign_memory_ids, exception_summary, kept_metadata

__all__ = ["annotate", "error_nodes", "to_memories"]


def to_memories(nodes: Sequence[NodeWithScore]) -> tuple[list[Memory], list[str]]:
    """Memories for ``nodes`` and their ids, in retrieval order."""
    texts = [n.node.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]
    ids = assign_memory_ids((n.node.node_id, t) for n, t in zip(nodes, texts, strict=True))
    memories = [
        Memory(id=mid, content=text, metadata=dict(n.node.metadata))
        for mid, text, n in zip(ids, texts, nodes, strict=True)
    ]
    return memories, ids


def _copy(node: NodeWithScore, key: str, value: dict[str, Any]) -> NodeWithScore:
    inner = node.node
    update = {
        "metadata": {**inner.metadata, key: value},
        "excluded_llm_metadata_keys": [*inner.excluded_llm_metadata_keys, key],
        "excluded_embed_metadata_keys": [*inner.excluded_embed_metadata_keys, key],
    }
    return NodeWithScore(node=inner.model_copy(update=update), score=node.score)


def annotate(
    nodes: Sequence[NodeWithScore],
    ids: Sequence[str],
    report: ClearanceReport,
    *,
    key: str,
    policy: EdgeCasePolicy,
) -> list[NodeWithScore]:
    """The kept nodes, original order, as new objects with metadata under ``key``."""
    if len(nodes) != len(ids):
        raise ValueError("one id per node is needed")
    return [_copy(nodes[i], key, meta) for i, meta in kept_metadata(ids, report, policy)]


def error_nodes(
    nodes: Sequence[NodeWithScore], ids: Sequence[str], error: BaseException, *, key: str
) -> list[NodeWithScore]:
    """Every node, unchanged in content, marked with the clearance error (fail-open; the
    error text is redacted)."""
    failure = exception_summary(error)
    meta = {"error": failure["error"], "cleared": False, "status": "failed", "failure": failure}
    return [_copy(n, key, {"memory_id": mid, **meta}) for n, mid in zip(nodes, ids, strict=True)]
