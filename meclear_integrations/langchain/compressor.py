"""MeClear as a ``BaseDocumentCompressor`` for ``ContextualCompressionRetriever`` users.

Same fields, run tree, events, metadata and edge-case policy as ``ClearingRetriever``;
the documents come from the compression retriever's base retriever. The reference answer
comes from the config metadata of the enclosing run (``reference_config``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ConfigDict

from ..core.concurrency.step_driver import Call
from .clearing_step import ClearanceSettings

__all__ = ["MeClearCompressor"]


class MeClearCompressor(ClearanceSettings, BaseDocumentCompressor):
    """Verified clearance of the retrieved documents (returns new documents, kept only).

    The ``BaseDocumentCompressor`` form of :class:`ClearingRetriever`, for
    ``ContextualCompressionRetriever`` users: same fields, run tree, events, metadata and
    failure policy; the documents come from the compression retriever's base retriever and
    the reference answer from the enclosing run's config metadata (``reference_config``).

    Setup:
        Install the ``langchain`` extra and ``langchain-classic`` (which holds
        ``ContextualCompressionRetriever``).

        ```bash
        pip install -U "meclear-integrations[langchain]" langchain-classic
        ```

    Key init args:
        llm: Runnable | None
            The task agent behind the default answer prompt and, unless ``judge`` is set,
            the judge.
        agent: Runnable | None
            Your own answer chain instead of ``llm``.
        judge: Judge | Runnable | Callable | None
            A ``meclear_integrations.judges`` judge, a model or a function.
        clearance: ClearanceConfig
            The engine settings; bounded at 60 s per query unless
            ``max_wall_seconds`` is set explicitly.
        limits: Limits
            ``circuit_breaker`` (skips clearance for a cool-down after consecutive
            provider failures; default ``CircuitBreaker()``: 3 failures, 30 s; None: off),
            ``limiter`` (bounds the model calls in flight across queries; share one
            instance to bound several components) or ``max_calls_in_flight=N`` (a limiter
            of its own), ``max_event_bytes`` (``meclear_integrations.pipeline.settings``).
        on_failure: "open" | "closed" | None
            Fail open or raise on transient failures.

    Instantiate:
        ```python
        from langchain_classic.retrievers import ContextualCompressionRetriever
        from langchain_core.documents import Document
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_core.vectorstores import InMemoryVectorStore

        from meclear_integrations.langchain import (
            MeClearCompressor,
            SimulatedChatModel,
            reference_config,
        )
        from meclear_integrations.simulation import redundant_harm_example

        case = redundant_harm_example()  # SIMULATED: two stale memories say January
        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
        store.add_documents([Document(page_content=m.content, id=m.id) for m in case.memories])
        compressor = MeClearCompressor(llm=SimulatedChatModel.from_case(case))
        retriever = ContextualCompressionRetriever(
            base_compressor=compressor,
            base_retriever=store.as_retriever(search_kwargs={"k": 6}),
        )
        ```

    Usage:
        ```python
        config = reference_config(case.reference)  # the gold answer, when you have one
        kept = retriever.invoke(case.query, config=config)
        print(sorted(d.id for d in kept))  # ['b1', 'b2', 'b3', 'g1']
        ```

    Use within a chain:
        The compression retriever is a retriever: use it as ``ClearingRetriever`` is used
        (``{"context": retriever | format_docs, "question": RunnablePassthrough()} | ...``).

    Async:
        ```python
        import asyncio

        kept = asyncio.run(retriever.ainvoke(case.query, config=config))
        print(sorted(d.id for d in kept))  # ['b1', 'b2', 'b3', 'g1']
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Clear ``documents`` for ``query``: the kept ones, as new documents.

        Args:
            documents: The retrieved documents.
            query: The query they were retrieved for.
            callbacks: The callbacks of the enclosing run.

        Returns:
            The kept documents in their original order, results under ``metadata_key``.
        """
        return self._clear_documents(query, list(documents), callbacks)

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Async :meth:`compress_documents` (same arguments and result; agent and judge awaited)."""
        return await self._aclear_documents(query, list(documents), callbacks)


def compression(
    compressor: MeClearCompressor,
    documents: Sequence[Document],
    query: str,
    callbacks: Callbacks | None,
) -> Call:
    """The step of a flow that clears ``documents`` for ``query`` (a store's, a middleware's).

    ``compress_documents`` on the sync path, ``acompress_documents`` on the event loop
    (:mod:`~meclear_integrations.core.concurrency.step_driver`).
    """
    return Call(
        partial(compressor.compress_documents, documents, query, callbacks=callbacks),
        partial(compressor.acompress_documents, documents, query, callbacks=callbacks),
    )
