"""ClearingStore: MeClear clearance and ConMem admission around any LangGraph ``BaseStore``.

``ClearingStore(store, llm=llm, mode="background", loop=Loop(ledger=ledger))`` behaves as
``store`` for every operation (``get``, ``list_namespaces``, deletes, TTLs, ``batch``) except
two:

- a **search with a query** (``search`` / ``asearch``, or a ``SearchOp`` with ``query`` in
  ``batch``) returns the items clearance keeps for that query, in the store's order. The
  items become documents (:mod:`.items`: the id is the namespace and key, the text the
  value's text field) and go through a ``MeClearCompressor``: same engine, modes, ledger,
  triggers, events and fail-open policy as ``ClearingRetriever``. ``mode="background"``
  (recommended for a store: no model call on the search path) withholds what the ledger
  verified harmful for this query or ones like it and queues the audit; ``"clear"`` clears
  inline (the search then costs the clearance's model calls: fine for offline jobs and
  evaluation, slow on an agent's hot path); ``"shadow"`` drops nothing. A search without a
  query (listing by namespace and filter) is never cleared: there is no question to clear
  for.
- a **put** (``put`` / ``aput`` / a ``PutOp``) passes the ConMem admission gate when
  ``admission`` is set: a value is written only when admitted. Its historical context is
  ``value[context_key]`` (removed from what is stored), else ``context``; a put with
  neither raises ``ConfigurationError`` before any op of its batch is written. Deletes
  (``value=None``) are never gated.

The question of a search is its ``query``. Inside a LangGraph run the clearance's run and
events nest under the node that searched (the run's config is read with
``langgraph.config.get_config``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.store.base import BaseStore, Op, PutOp, Result, SearchItem, SearchOp, TTLConfig

from ..admission.decision import AdmissionDecision
from ..admission.engine import ConMemAdmitter
from ..admission.hook import OnError, admits
from ..admission.prompts import Context
from ..core.concurrency.step_driver import Call, Steps, arun_steps, fan_out, run_steps
from ..core.errors import ConfigurationError
from ..langchain.admission import AdmissionRunnable
from ..langchain.compressor import MeClearCompressor, compression
from .items import DEFAULT_TEXT_FIELDS, item_text, kept_items, memory_id, to_documents

__all__ = ["ClearingStore"]

logger = logging.getLogger(__name__)


def _callbacks() -> Callbacks:
    try:
        return get_config().get("callbacks")
    except RuntimeError:  # outside a runnable context
        return None


class ClearingStore(BaseStore):
    """A LangGraph store whose searches are cleared and whose writes may pass admission.

    Setup:
        Install the ``langgraph`` extra (``langgraph-postgres`` for ``PostgresStore``).

        ```bash
        pip install -U "meclear-integrations[langgraph]"
        ```

    Args:
        store: The wrapped store (``InMemoryStore``, ``PostgresStore``, any ``BaseStore``).
        clearing: A ready ``MeClearCompressor`` (instead of ``**settings``).
        admission: A ``ConMemAdmitter`` (or an ``AdmissionRunnable``) gating every put;
            None: puts are written as given.
        context: The historical context of a put whose value has no ``context_key``.
        context_key: The value key holding a put's historical context (not stored).
        on_error: A failed admission decision: ``reject`` (default), ``admit`` or ``raise``.
        text_fields: Value fields read as a memory's text (the first string found), else
            the value as sorted JSON.
        annotate: Copy each kept item's clearance results into its value under the
            metadata key (``documents.metadata_key``, default ``"meclear"``); default off:
            items come back as the store returned them.
        **settings: ``MeClearCompressor`` settings (``llm``, ``judge``, ``mode``, ``loop``,
            ``clearance``...), checked strictly; none and no ``clearing``: searches are
            not cleared.

    Example:
        ```python
        from langgraph.store.memory import InMemoryStore

        from meclear_integrations.langchain import SimulatedChatModel
        from meclear_integrations.langgraph import ClearingStore
        from meclear_integrations.simulation import redundant_harm_example

        case = redundant_harm_example()  # SIMULATED: two stale memories say January
        store = ClearingStore(InMemoryStore(), llm=SimulatedChatModel.from_case(case))
        for m in case.memories:
            store.put(("memories", "john"), m.id, {"content": m.content})
        ```

    Usage (the reference answer, when you have one, comes with the run's config, as
    inside a graph compiled with ``compile(store=store)``):

        ```python
        from langchain_core.runnables import RunnableLambda

        from meclear_integrations.langchain import reference_config

        recall = RunnableLambda(lambda q: store.search(("memories", "john"), query=q))
        items = recall.invoke(case.query, config=reference_config(case.reference))
        print([item.key for item in items])  # ['g1', 'b1', 'b2', 'b3']
        print(len(store.search(("memories", "john"))))  # 6
        ```
    """

    def __init__(
        self,
        store: BaseStore,
        *,
        clearing: MeClearCompressor | None = None,
        admission: ConMemAdmitter | AdmissionRunnable | None = None,
        context: Context | None = None,
        context_key: str = "historical_context",
        on_error: OnError = "reject",
        text_fields: Sequence[str] = DEFAULT_TEXT_FIELDS,
        annotate: bool = False,
        **settings: Any,
    ) -> None:
        if not isinstance(store, BaseStore):
            raise ConfigurationError(
                f"ClearingStore wraps a LangGraph BaseStore, not {type(store).__name__}"
            )
        if clearing is not None and settings:
            raise ConfigurationError(
                f"ClearingStore: pass clearing= or its settings, not both ({sorted(settings)})"
            )
        self.store = store
        if clearing is None and settings:
            clearing = MeClearCompressor(**settings)
        self.clearing = clearing
        if isinstance(admission, ConMemAdmitter):
            admission = AdmissionRunnable(admitter=admission, context_key=context_key)
        self.admission = admission
        self.context = context
        self.context_key = context_key
        self.on_error: OnError = on_error
        self.text_fields = tuple(text_fields)
        self.annotate = annotate

    @property
    def supports_ttl(self) -> bool:  # type: ignore[override]
        """Whether the wrapped store supports TTLs."""
        return bool(self.store.supports_ttl)

    @property
    def ttl_config(self) -> TTLConfig | None:  # type: ignore[override]
        """The wrapped store's TTL configuration."""
        return self.store.ttl_config

    # ------------------------------------------------------------------ admission
    def _candidates(self, ops: Sequence[Op]) -> list[tuple[int, PutOp, Document]]:
        """The puts to decide: (position, op, candidate document with its context)."""
        if self.admission is None:
            return []
        out = []
        for position, op in enumerate(ops):
            if not isinstance(op, PutOp) or op.value is None:
                continue
            value = dict(op.value)
            ctx = value.pop(self.context_key, self.context)
            if ctx is None:
                raise ConfigurationError(
                    f"put {memory_id(op.namespace, op.key)!r} has no value[{self.context_key!r}]"
                    " and the store no context=: the admission gate needs the conversation "
                    "the memory came from"
                )
            document = Document(
                page_content=item_text(value, self.text_fields),
                id=memory_id(op.namespace, op.key),
                metadata={self.admission.context_key: ctx},  # where the gate reads it
            )
            out.append((position, op._replace(value=value), document))
        return out

    def _gated(
        self,
        ops: list[Op],
        candidates: list[tuple[int, PutOp, Document]],
        decisions: list[AdmissionDecision],
    ) -> list[Op | None]:
        """``ops`` with each rejected put replaced by None (and its context removed)."""
        plan: list[Op | None] = list(ops)
        for (position, op, _), decision in zip(candidates, decisions, strict=True):
            if admits(decision, self.on_error):
                plan[position] = op
            else:
                plan[position] = None
                logger.info("MeClear admission rejected %s", decision.candidate_id)
        return plan

    # ------------------------------------------------------------------ clearance
    def _to_clear(self, op: Op | None, result: Result) -> bool:
        return (
            self.clearing is not None
            and isinstance(op, SearchOp)
            and bool(op.query)
            and isinstance(result, list)
            and bool(result)
        )

    def _kept(self, items: list[SearchItem], kept: Sequence[Document]) -> list[SearchItem]:
        assert self.clearing is not None
        key = self.clearing.documents.metadata_key
        return kept_items(items, kept, key=key, annotate=self.annotate)

    def _clearing(self, op: Op | None, result: Result) -> Steps[Result]:
        """One op's result: a search with a query cleared, any other result as it is."""
        if not self._to_clear(op, result):
            return result
        assert self.clearing is not None and isinstance(op, SearchOp) and op.query is not None
        items: list[SearchItem] = result  # type: ignore[assignment]
        documents = to_documents(items, self.text_fields)
        kept = yield compression(self.clearing, documents, op.query, _callbacks())
        return self._kept(items, kept)

    @staticmethod
    def _merge(plan: list[Op | None], results: list[Result]) -> list[Result]:
        """One result per planned op (None for a rejected put), in order."""
        returned = iter(results)
        return [None if op is None else next(returned) for op in plan]

    def _batching(self, ops: list[Op]) -> Steps[list[Result]]:
        """:meth:`batch`'s steps: the gate's decisions, the store's batch, the clearances."""
        candidates = self._candidates(ops)
        decisions: list[AdmissionDecision] = []
        if candidates and self.admission is not None:
            docs = [c[2] for c in candidates]
            config: RunnableConfig = {"callbacks": _callbacks()}
            decisions = yield Call(
                partial(self.admission.invoke, docs, config=config),
                partial(self.admission.ainvoke, docs, config=config),
            )
        plan = self._gated(ops, candidates, decisions)
        forwarded = [op for op in plan if op is not None]
        returned: list[Result] = []
        if forwarded:
            returned = yield Call(
                partial(self.store.batch, forwarded), partial(self.store.abatch, forwarded)
            )
        results = self._merge(plan, returned)
        # searches cleared in turn on the sync path, concurrently on the async one (the
        # first failure cancels the other searches' clearances: no call outlives it)
        clearings = (self._clearing(op, r) for op, r in zip(plan, results, strict=True))
        cleared: list[Result] = yield fan_out(clearings)
        return cleared

    # ------------------------------------------------------------------ BaseStore
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` on the wrapped store: puts gated, searches with a query cleared.

        Args:
            ops: The operations.

        Returns:
            One result per operation, in order (None for a put the gate rejected).
        """
        return run_steps(self._batching(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async :meth:`batch` (same arguments and result; searches cleared concurrently)."""
        return await arun_steps(self._batching(list(ops)))

    # ------------------------------------------------------------------ lifecycle
    def run_audits(self, *, limit: int | None = None) -> Any:
        """Run the due background audits now (``ClearingComponent.run_audits``).

        Args:
            limit: The most audits to run.

        Returns:
            Their outcomes.

        Raises:
            ConfigurationError: Searches are not cleared in ``mode="background"``.
        """
        if self.clearing is None:
            raise ConfigurationError('run_audits() needs clearance in mode="background"')
        return self.clearing.run_audits(limit=limit)

    def close(self) -> None:
        """Stop the background audit workers the clearing component started."""
        if self.clearing is not None:
            self.clearing.close()
