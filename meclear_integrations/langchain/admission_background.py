"""ConMem admission off the write path for a LangChain vector store.

:class:`BackgroundAdmissionGate` acknowledges ``add_documents`` at once (one
:class:`~meclear_integrations.admission.background.AdmissionTicket` per document, no model
call) and decides each document in a worker of
:class:`~meclear_integrations.admission.background.BackgroundAdmission`:

- ``visibility="hidden"`` (default): a document reaches the store only once admitted, as a
  copy whose ``metadata[metadata_key]`` holds ``{"status": "admitted", ...decision}``; it is
  not retrievable before.
- ``visibility="pending"``: the document is added at once with ``{"status": "pending",
  "job_id"}`` (retrievable, marked); an admitted one is re-added under the same id with
  ``status="admitted"`` (vector stores upsert by id), a rejected one is deleted.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from ._imports import require_langchain

require_langchain()

from langchain_core.documents import Document  # noqa: E402
from langchain_core.vectorstores import VectorStore  # noqa: E402

from ..admission.background import (  # noqa: E402
    AdmissionExecutor,
    AdmissionJob,
    AdmissionRecord,
    AdmissionTicket,
    BackgroundAdmission,
    BackgroundAdmissionEvent,
    Visibility,
)
from ..admission.engine import ConMemAdmitter  # noqa: E402
from ..admission.hook import OnError  # noqa: E402
from ..admission.prompts import Context  # noqa: E402
from ..core.errors import ConfigurationError  # noqa: E402

__all__ = ["BackgroundAdmissionGate"]


class BackgroundAdmissionGate:
    """Adds documents to ``vectorstore`` once ConMem admits them, deciding in the background.

    Args:
        vectorstore: The LangChain vector store to guard.
        admitter: The ConMem engine (its model makes every call, in a worker).
        visibility: ``hidden`` (not retrievable until admitted) or ``pending``
            (retrievable at once, marked pending; rejected documents are deleted).
        executor: Where decisions run (default: two in-process threads).
        context_key: The metadata key holding a document's historical context.
        metadata_key: The metadata key of the admission status on stored documents.
        on_error: ``admit`` stores a document whose decision failed; ``reject`` /
            ``raise`` keep it out.
        listener: Receives every acknowledged / decided / failed event.

    Example:
        >>> from langchain_core.documents import Document
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> from meclear_integrations.admission import ConMemAdmitter
        >>> from meclear_integrations.admission.scripted import ScriptedAdmissionModel
        >>> store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
        >>> gate = BackgroundAdmissionGate(store, ConMemAdmitter(ScriptedAdmissionModel()))
        >>> context = "user: I'm allergic to shellfish, never suggest shrimp."
        >>> tickets = gate.add_documents(
        ...     [Document(id="m1", page_content="User is allergic to shellfish.")],
        ...     context=context,
        ... )
        >>> [t.status for t in tickets], store.get_by_ids(["m1"])
        (['pending'], [])
        >>> gate.drain(timeout=30)
        True
        >>> store.get_by_ids(["m1"])[0].metadata["meclear_admission"]["status"]
        'admitted'
        >>> gate.close()
    """

    def __init__(
        self,
        vectorstore: VectorStore,
        admitter: ConMemAdmitter,
        *,
        visibility: Visibility = "hidden",
        executor: AdmissionExecutor | None = None,
        context_key: str = "historical_context",
        metadata_key: str = "meclear_admission",
        on_error: OnError = "reject",
        listener: Callable[[BackgroundAdmissionEvent], Any] | None = None,
    ) -> None:
        self.vectorstore = vectorstore
        self.context_key = context_key
        self.metadata_key = metadata_key
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

    # -- store callbacks -------------------------------------------------------------
    def _doc(self, job: AdmissionJob, status: dict[str, Any]) -> Document:
        return Document(
            id=job.payload["id"],
            page_content=job.candidate,
            metadata={**job.payload.get("metadata", {}), self.metadata_key: status},
        )

    def _write_pending(self, job: AdmissionJob, record: AdmissionRecord) -> None:
        doc = self._doc(job, {"status": "pending", "job_id": job.job_id})
        self.vectorstore.add_documents([doc], ids=[job.payload["id"]])

    def _admit(self, job: AdmissionJob, record: AdmissionRecord) -> None:
        status = {"status": "admitted", "job_id": job.job_id, **(record.decision or {})}
        self.vectorstore.add_documents([self._doc(job, status)], ids=[job.payload["id"]])

    def _reject(self, job: AdmissionJob, record: AdmissionRecord) -> None:
        if self.background.visibility == "pending":
            self.vectorstore.delete(ids=[job.payload["id"]])

    # -- API -----------------------------------------------------------------------
    def add_documents(
        self, documents: Sequence[Document], *, context: Context | None = None
    ) -> list[AdmissionTicket]:
        """Acknowledge every document now (no model call); decide and write in the background.

        Args:
            documents: The candidate documents (their context under
                ``metadata[context_key]``, else ``context``). A document without an id
                gets a random one (the ticket's ``candidate_id``).
            context: The historical context of documents without their own.

        Returns:
            One ``pending`` ticket per document, in order.

        Raises:
            ConfigurationError: A document has no context and none was given.
        """
        if isinstance(documents, Document):
            documents = [documents]
        tickets = []
        for i, doc in enumerate(documents):
            ctx = doc.metadata.get(self.context_key, context)
            if ctx is None:
                raise ConfigurationError(
                    f"document {i} has no metadata[{self.context_key!r}] and no context"
                )
            doc_id = doc.id or uuid.uuid4().hex
            metadata = {k: v for k, v in doc.metadata.items() if k != self.context_key}
            tickets.append(
                self.background.submit(
                    doc.page_content,
                    ctx,
                    candidate_id=doc_id,
                    payload={"id": doc_id, "metadata": metadata},
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
        """Wait until every queued document is decided.

        Args:
            timeout: Seconds to wait at most (None: no bound).

        Returns:
            Whether every document was decided in time.
        """
        return self.background.drain(timeout)

    def close(self, wait: bool = True) -> None:
        """Stop the default executor.

        Args:
            wait: Let queued decisions finish first.
        """
        self.background.close(wait)
