"""ClearingRetriever: drop-in verified clearance for any LangChain retriever.

``ClearingRetriever(retriever=retriever, llm=llm)`` retrieves once, freezes that context
(Eq. 6), runs the MeClear engine with ``llm`` (or your ``agent`` chain) as the task agent
and a judge, and returns the kept documents in their original order as new objects with
the per-memory results under ``metadata["meclear"]``. See ``clearance`` for the run tree,
the events and the agent's input, and ``meclear_integrations.runtime.payloads`` for the metadata
fields and the edge-case policy. The reference answer of a query, if any, comes through
the invoke config's metadata (``reference_config``).

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 6.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import ConfigDict, Field

from .clearing_step import ClearanceSettings

if TYPE_CHECKING:
    from ..core.concurrency.step_driver import Steps

__all__ = ["ClearingRetriever"]


class ClearingRetriever(ClearanceSettings, BaseRetriever):
    """A retriever that returns only the documents that do not hurt the answer.

    It retrieves once, freezes that context (Eq. 6), runs the MeClear engine with ``llm``
    (or your ``agent`` chain) as the task agent and a judge, and returns the kept documents
    in their original order as new ``Document`` objects with the per-memory results
    (memory id, LOO effect, Shapley value and interval, rank, harmful, cleared, recovered)
    under ``metadata["meclear"]``. Sync and async are both native: ``ainvoke`` awaits the
    inner retriever, the agent and the judge on the event loop.

    Setup:
        Install the ``langchain`` extra. No API key is needed for the simulated model used
        below; a real model needs its provider package and key (e.g. ``langchain-openai``
        and ``OPENAI_API_KEY``).

        ```bash
        pip install -U "meclear-integrations[langchain]"
        ```

    Key init args:
        retriever: BaseRetriever | Runnable[str, list[Document]]
            The wrapped retriever.
        llm: Runnable | None
            The task agent behind the default answer prompt and, unless ``judge`` is set,
            the judge.
        agent: Runnable | None
            Your own answer chain instead of ``llm``: it receives ``{"question",
            "context", "documents"}`` and returns text, a message or ``{"answer": ...}``.
        judge: Judge | Runnable | Callable | None
            A ``meclear_integrations.judges`` judge, a model or a function (default:
            ``llm``, against the query's reference when there is one).
        clearance: ClearanceConfig
            The engine settings (``ClearanceConfig.paper()`` for the paper's); bounded at
            60 s per query unless ``max_wall_seconds`` is set explicitly.
        limits: Limits
            ``circuit_breaker`` (skips clearance for a cool-down after consecutive
            provider failures; default ``CircuitBreaker()``: 3 failures, 30 s; None: off),
            ``limiter`` (bounds the model calls in flight across queries; share one
            instance to bound several components) or ``max_calls_in_flight=N`` (a limiter
            of its own), ``max_event_bytes`` (``meclear_integrations.pipeline.settings``).
        k: int | None
            Documents to retrieve (passed to a ``BaseRetriever`` and enforced).
        on_failure: "open" | "closed" | None
            Fail open (documents unchanged, a ``FailOpenWarning``) or raise on transient
            failures; None follows ``clearance.on_failure``.
        mode: "clear" | "shadow" | "background"
            ``"shadow"`` annotates and emits events but drops nothing; ``"background"``
            makes no model call on the request path and audits in the background.
        loop: Loop
            ``trigger`` (when to clear, ``meclear_integrations.triggers``; None clears
            every query), ``ledger`` (a ``HarmLedger``: records every decision and offers
            the memories verified harmful before), ``audit_queue`` and ``audit_workers``
            (background mode).
        documents: Documents
            ``metadata_key`` (where the results go), ``metadata_keys`` (document metadata
            shown to the agent and the judge), ``judge_context`` (``"full"``: every
            retrieved document, default; ``"coalition"``), ``edge_cases``,
            ``reference_key`` (the config-metadata key of the reference).

    Instantiate:
        ```python
        from langchain_core.documents import Document
        from langchain_core.runnables import RunnableLambda

        from meclear_integrations.langchain import (
            ClearingRetriever,
            SimulatedChatModel,
            reference_config,
        )
        from meclear_integrations.simulation import redundant_harm_example

        case = redundant_harm_example()  # SIMULATED: two stale memories say January
        docs = [Document(page_content=m.content, id=m.id) for m in case.memories]
        llm = SimulatedChatModel.from_case(case)  # e.g. ChatOpenAI(model=...)
        retriever = ClearingRetriever(
            retriever=RunnableLambda(lambda query: docs),  # any BaseRetriever
            llm=llm,
        )
        ```

    Usage:
        ```python
        config = reference_config(case.reference)  # the gold answer, when you have one
        kept = retriever.invoke(case.query, config=config)
        print([d.id for d in kept])  # ['g1', 'b1', 'b2', 'b3']
        print(kept[0].metadata["meclear"]["cleared"])  # False
        ```

    Use within a chain:
        ```python
        from langchain_core.output_parsers import StrOutputParser
        from langchain_core.prompts import ChatPromptTemplate
        from langchain_core.runnables import RunnablePassthrough

        prompt = ChatPromptTemplate.from_template(
            "Answer from the memories. Memories: {context} Question: {question}"
        )


        def format_docs(documents):
            return " ".join(d.page_content for d in documents)


        chain = (
            {"context": retriever | format_docs, "question": RunnablePassthrough()}
            | prompt
            | llm
            | StrOutputParser()
        )
        print(chain.invoke(case.query, config=config))  # December 2023
        ```

    Async:
        ```python
        import asyncio

        kept = asyncio.run(retriever.ainvoke(case.query, config=config))
        print([d.id for d in kept])  # ['g1', 'b1', 'b2', 'b3']
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    retriever: Runnable[str, list[Document]]
    """The wrapped retriever (any ``BaseRetriever`` or ``Runnable[str, list[Document]]``)."""
    k: int | None = Field(default=None, ge=1)
    """Documents to retrieve: passed to a ``BaseRetriever`` inner retriever as ``k`` and
    enforced by truncation; clearance may then return fewer."""

    def _k(self, k: int | None) -> int | None:
        return k if k is not None else self.k

    def _inner_kwargs(self, k: int | None) -> dict[str, Any]:
        return {"k": k} if k is not None and isinstance(self.retriever, BaseRetriever) else {}

    def _retrieving(
        self,
        query: str,
        run_manager: CallbackManagerForRetrieverRun | AsyncCallbackManagerForRetrieverRun,
        k: int | None,
    ) -> Steps[list[Document]]:
        """The retrieval's steps: the inner retriever's call, then the clearance of its top k."""
        from ..core.concurrency.step_driver import Call

        k = self._k(k)
        config: RunnableConfig = {"callbacks": run_manager.get_child()}
        options = self._inner_kwargs(k)
        found = yield Call(
            partial(self.retriever.invoke, query, config=config, **options),
            partial(self.retriever.ainvoke, query, config=config, **options),
        )
        documents = list(found)[:k] if k is not None else list(found)
        child = run_manager.get_child()
        kept: list[Document] = yield Call(
            partial(self._clear_documents, query, documents, child),
            partial(self._aclear_documents, query, documents, child),
        )
        return kept

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        from ..core.concurrency.step_driver import run_steps

        return run_steps(self._retrieving(query, run_manager, k))

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
    ) -> list[Document]:
        from ..core.concurrency.step_driver import arun_steps

        return await arun_steps(self._retrieving(query, run_manager, k))
