"""ConMem admission off the write path for a LlamaIndex index.

:class:`BackgroundAdmissionWriter` acknowledges ``insert_nodes`` at once (one pending
:class:`~meclear_integrations.admission.background.AdmissionTicket` per node, no model call)
and decides each node in a durable ``admission`` job
(:class:`~meclear_integrations.admission.writer.AdmissionWriter`: the embedded SQLite job
table with in-process workers by default, ``jobs=ProcrastinateQueue(url)`` and
``meclear worker`` for several replicas). The node travels in the job (LlamaIndex's own
JSON form), so any worker can insert it:

- ``visibility="hidden"`` (default): a node is inserted into the index only once admitted,
  with ``metadata[metadata_key] = {"status": "admitted", ...decision}``; it is not
  retrievable before.
- ``visibility="pending"``: the node is inserted at once with ``{"status": "pending"}``
  (retrievable, marked); once admitted it is replaced by the admitted copy, once rejected
  it is deleted from the index and its docstore.

A node is written by id (an existing copy is replaced), so a decision applied twice leaves
one node.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

try:
    from llama_index.core.indices.base import BaseIndex
    from llama_index.core.schema import BaseNode
    from llama_index.core.storage.docstore.utils import doc_to_json, json_to_doc
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "meclear_integrations.llama_index needs llama-index-core: "
        "pip install 'meclear-integrations[llama-index]'"
    ) from exc

from ..admission.background_models import AdmissionJob, AdmissionTicket
from ..admission.engine import ConMemAdmitter
from ..admission.prompts import Context
from ..admission.writer import AdmissionWriter, Candidate

__all__ = ["BackgroundAdmissionWriter"]


class _IndexSink:
    """Inserts admitted nodes into a LlamaIndex index, replacing a copy with the same id."""

    def __init__(self, index: BaseIndex[Any], context_key: str, metadata_key: str) -> None:
        self.index = index
        self.context_key = context_key
        self.metadata_key = metadata_key

    def upsert(self, memory_id: str, job: AdmissionJob, status: dict[str, Any]) -> None:
        node = json_to_doc(job.payload["node"])
        node.metadata = {
            **{k: v for k, v in node.metadata.items() if k != self.context_key},
            self.metadata_key: status,
        }
        for keys in ("excluded_embed_metadata_keys", "excluded_llm_metadata_keys"):
            setattr(node, keys, sorted(set(getattr(node, keys)) | {self.metadata_key}))
        self.remove(memory_id)
        self.index.insert_nodes([node])

    def remove(self, memory_id: str) -> None:
        if memory_id in self.index.index_struct.nodes_dict:
            self.index.delete_nodes([memory_id], delete_from_docstore=True)


class BackgroundAdmissionWriter(AdmissionWriter):
    """Inserts nodes into ``index`` once ConMem admits them, deciding in a durable job.

    Args:
        index: The LlamaIndex index to write to (e.g. ``VectorStoreIndex``).
        admitter: The ConMem engine (its model makes every call, in a worker).
        **options: :class:`~meclear_integrations.admission.writer.AdmissionWriter`'s
            options: ``visibility``, ``jobs`` (default: the ledger's SQLite file),
            ``workers`` (in-process threads, default 2; 0 with ``meclear worker``),
            ``context_key``, ``metadata_key``, ``on_error``, ``listener``.
    """

    def __init__(self, index: BaseIndex[Any], admitter: ConMemAdmitter, **options: Any) -> None:
        self.index = index
        sink = _IndexSink(
            index,
            options.get("context_key", "historical_context"),
            options.get("metadata_key", "meclear_admission"),
        )
        super().__init__(sink, admitter, **options)

    def insert_nodes(
        self, nodes: Sequence[BaseNode], *, context: Context | None = None
    ) -> list[AdmissionTicket]:
        """Acknowledge every node now (no model call); decide and insert in a job.

        Args:
            nodes: The candidate nodes (their context under ``metadata[context_key]``,
                else ``context``).
            context: The historical context of nodes without their own.

        Returns:
            One ``pending`` ticket per node, in order.

        Raises:
            ConfigurationError: A node has no context and none was given.
        """
        candidates = (
            Candidate(
                node.get_content(),
                dict(node.metadata),
                node.node_id,
                extra={"node": doc_to_json(node)},
            )
            for node in nodes
        )
        return self.submit_candidates(
            candidates, context=context, noun="node", content_field="text"
        )
