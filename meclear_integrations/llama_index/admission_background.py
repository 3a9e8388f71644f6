"""ConMem admission off the write path for a LlamaIndex index.

:class:`BackgroundAdmissionWriter` acknowledges ``insert_nodes`` at once (one pending
:class:`~meclear_integrations.admission.background.AdmissionTicket` per node, no model call)
and decides each node in a worker of
:class:`~meclear_integrations.admission.background.BackgroundAdmission`:

- ``visibility="hidden"`` (default): a node is inserted into the index only once admitted,
  with ``metadata[metadata_key] = {"status": "admitted", ...decision}``; it is not
  retrievable before.
- ``visibility="pending"``: the node is inserted at once with ``{"status": "pending"}``
  (retrievable, marked); once admitted it is replaced by the admitted copy, once rejected
  it is deleted from the index and its docstore.

Each node's decision is also emitted as the ``listener``'s
:class:`~meclear_integrations.admission.background.BackgroundAdmissionEvent` s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

try:
    from llama_index.core.indices.base import BaseIndex
    from llama_index.core.schema import BaseNode
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "meclear_integrations.llama_index needs llama-index-core: "
        "pip install 'meclear-integrations[llama-index]'"
    ) from exc

from ..admission.background import (
    AdmissionExecutor,
    AdmissionJob,
    AdmissionRecord,
    AdmissionTicket,
    BackgroundAdmission,
    BackgroundAdmissionEvent,
    Visibility,
)
from ..admission.engine import ConMemAdmitter
from ..admission.hook import OnError
from ..admission.prompts import Context
from ..core.errors import ConfigurationError

__all__ = ["BackgroundAdmissionWriter"]


class BackgroundAdmissionWriter:
    """Inserts nodes into ``index`` once ConMem admits them, deciding in the background.

    Args:
        index: The LlamaIndex index to write to (e.g. ``VectorStoreIndex``).
        admitter: The ConMem engine (its model makes every call, in a worker).
        visibility: ``hidden`` (not retrievable until admitted) or ``pending``
            (retrievable at once, marked pending; rejected nodes are deleted).
        executor: Where decisions run (default: two in-process threads).
        context_key: The metadata key holding a node's historical context.
        metadata_key: The metadata key of the admission status on inserted nodes.
        on_error: ``admit`` inserts a node whose decision failed; ``reject`` / ``raise``
            keep it out.
        listener: Receives every acknowledged / decided / failed event.
    """

    def __init__(
        self,
        index: BaseIndex[Any],
        admitter: ConMemAdmitter,
        *,
        visibility: Visibility = "hidden",
        executor: AdmissionExecutor | None = None,
        context_key: str = "historical_context",
        metadata_key: str = "meclear_admission",
        on_error: OnError = "reject",
        listener: Callable[[BackgroundAdmissionEvent], Any] | None = None,
    ) -> None:
        self.index = index
        self.context_key = context_key
        self.metadata_key = metadata_key
        self._nodes: dict[str, BaseNode] = {}
        self.background = BackgroundAdmission(
            admitter,
            executor=executor,
            visibility=visibility,
            on_write=self._write_pending,
            on_store=self._admit,
            on_reject=self._reject,
            listener=listener,
            on_error=on_error,
        )

    def _copy(self, job: AdmissionJob, status: dict[str, Any]) -> BaseNode:
        node = self._nodes[job.payload["id"]].model_copy(deep=True)
        node.metadata = {
            **{k: v for k, v in node.metadata.items() if k != self.context_key},
            self.metadata_key: status,
        }
        keys = set(node.excluded_embed_metadata_keys) | {self.metadata_key}
        node.excluded_embed_metadata_keys = sorted(keys)
        node.excluded_llm_metadata_keys = sorted(
            set(node.excluded_llm_metadata_keys) | {self.metadata_key}
        )
        return node

    def _write_pending(self, job: AdmissionJob, record: AdmissionRecord) -> None:
        self.index.insert_nodes([self._copy(job, {"status": "pending", "job_id": job.job_id})])

    def _admit(self, job: AdmissionJob, record: AdmissionRecord) -> None:
        node_id = job.payload["id"]
        if self.background.visibility == "pending":
            self.index.delete_nodes([node_id], delete_from_docstore=True)
        status = {"status": "admitted", "job_id": job.job_id, **(record.decision or {})}
        self.index.insert_nodes([self._copy(job, status)])
        self._nodes.pop(node_id, None)

    def _reject(self, job: AdmissionJob, record: AdmissionRecord) -> None:
        node_id = job.payload["id"]
        if self.background.visibility == "pending":
            self.index.delete_nodes([node_id], delete_from_docstore=True)
        self._nodes.pop(node_id, None)

    def insert_nodes(
        self, nodes: Sequence[BaseNode], *, context: Context | None = None
    ) -> list[AdmissionTicket]:
        """Acknowledge every node now (no model call); decide and insert in the background.

        Args:
            nodes: The candidate nodes (their context under ``metadata[context_key]``,
                else ``context``).
            context: The historical context of nodes without their own.

        Returns:
            One ``pending`` ticket per node, in order.

        Raises:
            ConfigurationError: A node has no context and none was given.
        """
        tickets = []
        for i, node in enumerate(nodes):
            ctx = node.metadata.get(self.context_key, context)
            if ctx is None:
                raise ConfigurationError(
                    f"node {i} has no metadata[{self.context_key!r}] and no context"
                )
            self._nodes[node.node_id] = node
            tickets.append(
                self.background.submit(
                    node.get_content(),
                    ctx,
                    candidate_id=node.node_id,
                    payload={"id": node.node_id},
                )
            )
        return tickets

    def record(self, job_id: str) -> AdmissionRecord:
        """The job's record (``pending`` until decided).

        Args:
            job_id: A ticket's job id.

        Returns:
            The record.
        """
        return self.background.record(job_id)

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every queued node is decided.

        Args:
            timeout: Seconds to wait at most (None: no bound).

        Returns:
            Whether every node was decided in time.
        """
        return self.background.drain(timeout)

    def close(self, wait: bool = True) -> None:
        """Stop the default executor.

        Args:
            wait: Let queued decisions finish first.
        """
        self.background.close(wait)
