"""ConMem admission off the write path for a LangChain vector store.

:class:`BackgroundAdmissionGate` acknowledges ``add_documents`` at once (one
:class:`~meclear_integrations.admission.background.AdmissionTicket` per document, no model
call) and decides each document in a durable ``admission`` job
(:class:`~meclear_integrations.admission.writer.AdmissionWriter`: the embedded SQLite job
table with in-process workers by default, ``jobs=ProcrastinateQueue(url)`` and
``meclear worker`` for several replicas):

- ``visibility="hidden"`` (default): a document reaches the store only once admitted, as a
  copy whose ``metadata[metadata_key]`` holds ``{"status": "admitted", ...decision}``; it is
  not retrievable before.
- ``visibility="pending"``: the document is added at once with ``{"status": "pending",
  "job_id"}`` (retrievable, marked); an admitted one is re-added under the same id with
  ``status="admitted"`` (vector stores upsert by id), a rejected one is deleted.

A document without an id is stored under its content hash, so a decision applied twice
(a worker killed after writing) leaves one document.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._imports import require_langchain

require_langchain()

from langchain_core.documents import Document  # noqa: E402
from langchain_core.vectorstores import VectorStore  # noqa: E402

from ..admission.background_models import AdmissionJob, AdmissionTicket  # noqa: E402
from ..admission.engine import ConMemAdmitter  # noqa: E402
from ..admission.prompts import Context  # noqa: E402
from ..admission.writer import AdmissionWriter, Candidate  # noqa: E402

__all__ = ["BackgroundAdmissionGate"]


class _VectorStoreSink:
    """Writes admitted documents to a LangChain vector store by id."""

    def __init__(self, vectorstore: VectorStore, metadata_key: str) -> None:
        self.vectorstore = vectorstore
        self.metadata_key = metadata_key

    def upsert(self, memory_id: str, job: AdmissionJob, status: dict[str, Any]) -> None:
        metadata = {**job.payload.get("metadata", {}), self.metadata_key: status}
        doc = Document(id=memory_id, page_content=job.candidate, metadata=metadata)
        self.vectorstore.add_documents([doc], ids=[memory_id])

    def remove(self, memory_id: str) -> None:
        self.vectorstore.delete(ids=[memory_id])


class BackgroundAdmissionGate(AdmissionWriter):
    """Adds documents to ``vectorstore`` once ConMem admits them, deciding in a durable job.

    Args:
        vectorstore: The LangChain vector store to guard.
        admitter: The ConMem engine (its model makes every call, in a worker).
        **options: :class:`~meclear_integrations.admission.writer.AdmissionWriter`'s
            options: ``visibility``, ``jobs`` (default: the ledger's SQLite file),
            ``workers`` (in-process threads, default 2; 0 with ``meclear worker``),
            ``context_key``, ``metadata_key``, ``on_error``, ``listener``.

    Example:
        >>> from langchain_core.documents import Document
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> from meclear_integrations.admission import ConMemAdmitter
        >>> from meclear_integrations.admission.scripted import ScriptedAdmissionModel
        >>> import os, tempfile
        >>> jobs = os.path.join(tempfile.mkdtemp(), "jobs.db")  # default: the ledger file
        >>> store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
        >>> gate = BackgroundAdmissionGate(
        ...     store, ConMemAdmitter(ScriptedAdmissionModel()), jobs=jobs
        ... )
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

    def __init__(self, vectorstore: VectorStore, admitter: ConMemAdmitter, **options: Any) -> None:
        self.vectorstore = vectorstore
        key = options.get("metadata_key", "meclear_admission")
        super().__init__(_VectorStoreSink(vectorstore, key), admitter, **options)

    def add_documents(
        self, documents: Sequence[Document], *, context: Context | None = None
    ) -> list[AdmissionTicket]:
        """Acknowledge every document now (no model call); decide and write in a job.

        Args:
            documents: The candidate documents (their context under
                ``metadata[context_key]``, else ``context``). A document without an id
                is stored under its content hash (the ticket's ``candidate_id``).
            context: The historical context of documents without their own.

        Returns:
            One ``pending`` ticket per document, in order.

        Raises:
            ConfigurationError: A document has no context and none was given.
        """
        if isinstance(documents, Document):
            documents = [documents]
        candidates = (Candidate(d.page_content, dict(d.metadata), d.id) for d in documents)
        return self.submit_candidates(
            candidates, context=context, noun="document", content_field="page_content"
        )
