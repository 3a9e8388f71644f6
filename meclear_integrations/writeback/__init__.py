"""Reviews written back: an accepted review retires the memory from your store, reversibly.

The ledger proposes (``HarmLedger.review``); a person decides (:func:`accept_review` /
:func:`reject_review`, ``meclear ledger accept`` / ``reject``, or an annotation in
LangSmith, Phoenix or Langfuse read by :mod:`.annotations`); :func:`apply_reviews`
(``meclear ledger apply``, ``--dry-run`` first) applies the accepted ones to the store as a
soft delete: the memory leaves the store (no retriever returns it) and is kept whole in a
tombstone in the ledger with who, when, why and the evidence runs;
:func:`restore_memory` (``meclear ledger restore --store``) puts it back byte for byte
under its id. Nothing is hard-deleted without a tombstone; the ledger's audit trail is
``ledger.tombstones``.

Stores: a LangChain ``VectorStore`` (:mod:`.vectorstore`), a LangGraph ``BaseStore``
(:mod:`.graph_store`), a LlamaIndex ``VectorStoreIndex`` (:mod:`.index`), or any
:class:`StoreAdapter`. Each imports its framework only when used. Needs the ``ledger``
extra.

Example:
    >>> from langchain_core.documents import Document
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_core.vectorstores import InMemoryVectorStore
    >>> from meclear_integrations.ledger import HarmLedger
    >>> from meclear_integrations.writeback import accept_review, apply_reviews
    >>> store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    >>> _ = store.add_documents([Document(id="stale", page_content="Ana lives in Rome")])
    >>> with HarmLedger("sqlite://") as ledger:
    ...     _ = accept_review(ledger, "stale", actor="ana", require_proposal=False)
    ...     [o.action for o in apply_reviews(ledger, store)]
    ['retired']
"""

from .apply import (
    WritebackOutcome,
    aapply_reviews,
    accept_review,
    apply_reviews,
    arestore_memory,
    reject_review,
    restore_memory,
)
from .base import StoreAdapter, StoredMemory
from .stores import adapter_for

__all__ = [
    "StoreAdapter",
    "StoredMemory",
    "WritebackOutcome",
    "aapply_reviews",
    "accept_review",
    "adapter_for",
    "apply_reviews",
    "arestore_memory",
    "reject_review",
    "restore_memory",
]
