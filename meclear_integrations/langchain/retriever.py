"""ClearingRetriever: drop-in verified clearance for any LangChain retriever.

``ClearingRetriever(retriever=retriever, llm=llm)`` retrieves once, freezes that context
(Eq. 6), runs the MeClear engine with ``llm`` (or your ``agent`` chain) as the task agent
and a judge, and returns the kept documents in their original order as new objects with
the per-memory results under ``metadata["meclear"]``. See ``clearance`` for the run tree,
the events and the agent's input, and ``meclear_integrations.payloads`` for the metadata
fields and the edge-case policy. The reference answer of a query, if any, comes through
the invoke config's metadata (``reference_config``).
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable
from pydantic import ConfigDict, Field

from .clearance import ClearanceSettings

__all__ = ["ClearingRetriever"]


class ClearingRetriever(ClearanceSettings, BaseRetriever):
    """A retriever that returns only the documents that do not hurt the answer.

    Sync and async are both native: ``ainvoke`` awaits the inner retriever, the agent and
    the judge on the event loop.
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

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        k = self._k(k)
        documents = self.retriever.invoke(
            query, config={"callbacks": run_manager.get_child()}, **self._inner_kwargs(k)
        )
        documents = list(documents)[:k] if k is not None else list(documents)
        return self._clear_documents(query, documents, run_manager.get_child())

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
    ) -> list[Document]:
        k = self._k(k)
        documents = await self.retriever.ainvoke(
            query, config={"callbacks": run_manager.get_child()}, **self._inner_kwargs(k)
        )
        documents = list(documents)[:k] if k is not None else list(documents)
        return await self._aclear_documents(query, documents, run_manager.get_child())
