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

from ..core.errors import InvalidRetrievalError
from ..core.memory import Memory
from ..pipeline.shaping import failed_metadata
from ..runtime.payloads import (
    assign_memory_ids,
)

__all__ = ["error_nodes", "node_ids", "to_memories"]


def _text(item: object) -> str | None:
    """The node's text, or None when ``item`` is not a usable ``NodeWithScore``."""
    if not isinstance(item, NodeWithScore):
        return None
    try:
        text = item.node.get_content(metadata_mode=MetadataMode.NONE)
    except Exception:  # a broken node is unusable, not a crash
        return None
    return text if isinstance(text, str) else None


def node_ids(nodes: Sequence[object]) -> list[str]:
    """The memory ids of ``nodes`` as :func:`to_memories` assigns them.

    Never raises: an unusable item gets ``invalid-<position>``.

    Args:
        nodes: The retrieved items.

    Returns:
        One id per item, in order.
    """
    items: list[tuple[str | None, str]] = []
    for i, n in enumerate(nodes):
        text = _text(n)
        if isinstance(n, NodeWithScore) and text is not None:
            items.append((n.node.node_id, text))
        else:
            items.append((f"invalid-{i}", ""))
    return assign_memory_ids(items)


def to_memories(nodes: Sequence[NodeWithScore]) -> tuple[list[Memory], list[str]]:
    """Memories for ``nodes`` and their ids, in retrieval order.

    Args:
        nodes: The retrieved nodes.

    Returns:
        The memories and their ids.

    Raises:
        InvalidRetrievalError: Naming the first item that is not a ``NodeWithScore`` with
            text.
    """
    texts = []
    for position, n in enumerate(nodes):
        text = _text(n)
        if text is None:
            raise InvalidRetrievalError(
                f"the retriever returned an unusable {type(n).__name__} at position "
                f"{position}; expected NodeWithScore objects whose node has text"
            )
        texts.append(text)
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


def error_nodes(
    nodes: Sequence[NodeWithScore], ids: Sequence[str], error: BaseException, *, key: str
) -> list[NodeWithScore]:
    """Every node, unchanged in content, marked with the clearance error (fail-open).

    The error text is redacted. An unusable item is returned as it came, unmarked.

    Args:
        nodes: The retrieved nodes.
        ids: Their memory ids.
        error: The failure that was absorbed.
        key: The metadata key of the per-memory results.

    Returns:
        New nodes in the original order.
    """
    return [
        _copy(n, key, failed_metadata(mid, error)) if _text(n) is not None else n
        for n, mid in zip(nodes, ids, strict=True)
    ]
