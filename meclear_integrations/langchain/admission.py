"""ConMem admission for LangChain: a gate in front of a vector store, and a runnable.

- :class:`AdmissionRunnable` maps candidate ``Document`` s to ``AdmissionDecision`` s and
  dispatches one ``meclear.admission`` custom event per decision, with the run manager's
  child callbacks (see NOTES: a bare ``on_custom_event`` would not reach handlers).
- :class:`AdmissionGate` runs the runnable and adds only the admitted documents to a
  ``VectorStore``; it returns every decision and the ids the store assigned.

A candidate's historical context is read from ``metadata[context_key]`` (text or a list of
``{"role", "content"}`` turns), or given once for the whole batch. Input documents are never
mutated: admitted documents are copies whose ``metadata[metadata_key]`` holds the decision
summary. Models: wrap a LangChain chat model with
:func:`meclear_integrations.langchain.model.as_text_model` (or pass it directly).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, TypeVar

from ._imports import require_langchain

require_langchain()

from langchain_core.callbacks import (  # noqa: E402
    AsyncCallbackManagerForChainRun,
    CallbackManagerForChainRun,
    adispatch_custom_event,
    dispatch_custom_event,
)
from langchain_core.documents import Document  # noqa: E402
from langchain_core.runnables import Runnable, RunnableConfig, RunnableSerializable  # noqa: E402
from langchain_core.vectorstores import VectorStore  # noqa: E402
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator  # noqa: E402

from ..admission.decision import AdmissionDecision  # noqa: E402
from ..admission.engine import ConMemAdmitter  # noqa: E402
from ..admission.hook import OnError, admits  # noqa: E402
from ..admission.prompts import Context  # noqa: E402
from ..core.concurrency.step_driver import (  # noqa: E402
    Call,
    Steps,
    arun_steps,
    fan_out,
    run_steps,
)
from ..core.errors import ConfigurationError  # noqa: E402
from ..core.strict import accepted_names, reject_unknown, strict_init  # noqa: E402
from ..runtime.limiter import CallLimiter, resolve_limiter  # noqa: E402
from .model import as_text_model  # noqa: E402

__all__ = [
    "ADMISSION_EVENT",
    "AdmissionGate",
    "AdmissionRunnable",
    "GateResult",
    "admitter_from_langchain",
]

T = TypeVar("T")

ADMISSION_EVENT = "meclear.admission"
"""Name of the custom event dispatched once per decision."""


def admitter_from_langchain(llm: Runnable, **kwargs: Any) -> ConMemAdmitter:
    """A :class:`ConMemAdmitter` over a LangChain chat model or LLM.

    Args:
        llm: The chat model or LLM that makes every ConMem call.
        **kwargs: Passed to :class:`ConMemAdmitter` (e.g. ``config=``).

    Returns:
        The admitter.
    """
    return ConMemAdmitter(as_text_model(llm), **kwargs)


async def _holding(gate: asyncio.Semaphore, call: Callable[[], Awaitable[T]]) -> T:
    """``await call()`` while holding ``gate``."""
    async with gate:
        return await call()


def _event_payload(decision: AdmissionDecision) -> dict[str, Any]:
    return {"candidate_id": decision.candidate_id, **decision.summary()}


class AdmissionRunnable(RunnableSerializable[Sequence[Document], list[AdmissionDecision]]):
    """Candidate documents -> ConMem decisions (one per document, same order).

    Each decision is also dispatched as a ``meclear.admission`` custom event (reaching
    callback handlers and ``astream_events``). A document's historical context is read
    from ``metadata[context_key]``, else ``context``; a document with neither raises
    ``ConfigurationError``.

    Setup:
        Install the ``langchain`` extra. The scripted stand-in model below needs no key
        (its decisions are SCRIPTED, not an LLM's); for a real chat model wrap it with
        :func:`admitter_from_langchain` (e.g. ``ChatOpenAI`` and ``OPENAI_API_KEY``).

        ```bash
        pip install -U "meclear-integrations[langchain]"
        ```

    Key init args:
        admitter: ConMemAdmitter
            The ConMem engine (its model makes every call).
        context: str | list[dict] | None
            The historical context of documents without ``metadata[context_key]``.
        context_key: str
            The metadata key holding a document's own context.
        max_concurrent_candidates: int
            Documents decided at once on the async path.
        limiter: CallLimiter | None
            Bounds the model calls in flight (share one instance with other components to
            bound the process); ``max_calls_in_flight=N`` makes one of its own.

    Instantiate:
        ```python
        from langchain_core.documents import Document

        from meclear_integrations.admission import ConMemAdmitter
        from meclear_integrations.admission.scripted import ScriptedAdmissionModel
        from meclear_integrations.langchain import AdmissionRunnable

        conversation = [
            {"role": "user", "content": "I'm allergic to shellfish, so never suggest "
             "shrimp dishes to me. What's a quick weeknight dinner?"},
            {"role": "assistant", "content": "Try a lemon-garlic chicken traybake."},
        ]
        admitter = ConMemAdmitter(ScriptedAdmissionModel())  # or admitter_from_langchain(llm)
        docs = [
            Document(id="m1", page_content="User is allergic to shellfish."),
            Document(id="m3", page_content="User is strictly vegetarian."),
        ]
        runnable = AdmissionRunnable(admitter=admitter, context=conversation)
        ```

    Usage:
        ```python
        decisions = runnable.invoke(docs)
        print([d.decision for d in decisions])  # ['store', 'do_not_store']
        ```

    Use within a chain:
        ```python
        from langchain_core.runnables import RunnableLambda

        admitted = runnable | RunnableLambda(
            lambda decisions: [d.candidate_id for d in decisions if d.decision == "store"]
        )
        print(admitted.invoke(docs))  # ['m1']
        ```

    Async:
        ```python
        import asyncio

        decisions = asyncio.run(runnable.ainvoke(docs))  # candidates decided concurrently
        print([d.decision for d in decisions])  # ['store', 'do_not_store']
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    admitter: ConMemAdmitter
    """The ConMem engine (its model does every call)."""
    context_key: str = "historical_context"
    """Metadata key holding a document's historical context."""
    context: Context | None = None
    """Context for documents without ``metadata[context_key]``."""
    max_concurrent_candidates: int = Field(default=4, ge=1)
    """Documents decided at once on the async path."""
    limiter: CallLimiter | None = None
    """Bounds the model calls in flight across every decision of this runnable (and of any
    component given the same instance: ``meclear_integrations.runtime.limiter``); None: the
    admitter's own ``limiter``, if any."""
    max_calls_in_flight: int | None = Field(default=None, ge=1)
    """Shorthand for a limiter of this runnable's own (not together with ``limiter``)."""

    _limiter: CallLimiter | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _known_settings(cls, data: Any) -> Any:
        reject_unknown(cls.__name__, data, accepted_names(cls))
        return data

    def model_post_init(self, context: Any, /) -> None:
        """Resolve the limiter (``limiter`` or ``max_calls_in_flight``)."""
        super().model_post_init(context)
        self._limiter = resolve_limiter(self.limiter, self.max_calls_in_flight)

    def _requests(self, docs: Sequence[Document]) -> list[tuple[str, Context, str]]:
        if isinstance(docs, Document):
            docs = [docs]
        out = []
        for i, doc in enumerate(docs):
            ctx = doc.metadata.get(self.context_key, self.context)
            if ctx is None:
                raise ConfigurationError(
                    f"document {i} has no metadata[{self.context_key!r}] and no default "
                    "context was given"
                )
            own = self.context_key in doc.metadata
            self.admitter.validate(
                doc.page_content,
                ctx,
                candidate_id=doc.id,
                prefix=f"documents[{i}]",
                candidate_field="page_content",
                context_field=f"metadata[{self.context_key!r}]" if own else "context",
            )
            out.append((doc.page_content, ctx, doc.id or f"doc-{i}"))
        return out

    def _deciding(
        self,
        docs: Sequence[Document],
        run_manager: CallbackManagerForChainRun | AsyncCallbackManagerForChainRun,
    ) -> Steps[list[AdmissionDecision]]:
        """:meth:`invoke`'s steps: every candidate's decision and event (:meth:`_one`).

        The candidates are decided in turn on the sync path and concurrently on the async
        one, at most ``max_concurrent_candidates`` at once; the first failure cancels the
        other candidates' decisions (no call outlives it).
        """
        child: RunnableConfig = {"callbacks": run_manager.get_child()}
        gate = asyncio.Semaphore(self.max_concurrent_candidates)  # the async path's bound
        requests = self._requests(docs)  # raises before any model call
        decisions: list[AdmissionDecision] = yield fan_out(
            self._one(text, ctx, cid, child, gate) for text, ctx, cid in requests
        )
        return decisions

    def _one(
        self, text: str, ctx: Context, cid: str, child: RunnableConfig, gate: asyncio.Semaphore
    ) -> Steps[AdmissionDecision]:
        """One candidate's steps: its decision, then its ``meclear.admission`` event."""
        options: dict[str, Any] = {"candidate_id": cid, "limiter": self._limiter}
        decide = partial(self.admitter.decide, text, ctx, **options)
        adecide = partial(self.admitter.adecide, text, ctx, **options)
        decision: AdmissionDecision = yield Call(decide, partial(_holding, gate, adecide))
        payload = _event_payload(decision)
        yield Call(
            partial(dispatch_custom_event, ADMISSION_EVENT, payload, config=child),
            partial(adispatch_custom_event, ADMISSION_EVENT, payload, config=child),
        )
        return decision

    def _decide(
        self,
        docs: Sequence[Document],
        run_manager: CallbackManagerForChainRun,
        config: RunnableConfig,
    ) -> list[AdmissionDecision]:
        return run_steps(self._deciding(docs, run_manager))

    async def _adecide(
        self,
        docs: Sequence[Document],
        run_manager: AsyncCallbackManagerForChainRun,
        config: RunnableConfig,
    ) -> list[AdmissionDecision]:
        return await arun_steps(self._deciding(docs, run_manager))

    def invoke(
        self, input: Sequence[Document], config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[AdmissionDecision]:
        """Decide every document of ``input`` (one ``admission`` run).

        Args:
            input: The candidate documents (their historical context under
                ``metadata[context_key]``, else ``context``).
            config: The runnable config.
            **kwargs: Ignored (the ``Runnable`` signature).

        Returns:
            One decision per document, in order.

        Raises:
            InvalidCandidateError: A document is empty, not text, too long or malformed;
                raised before any model call.
        """
        return self._call_with_config(self._decide, input, config, run_type="chain")

    async def ainvoke(
        self, input: Sequence[Document], config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[AdmissionDecision]:
        """Async :meth:`invoke` (same arguments, result and errors; decided concurrently)."""
        return await self._acall_with_config(self._adecide, input, config, run_type="chain")


class GateResult(BaseModel):
    """What the gate did with one batch."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    decisions: list[AdmissionDecision]
    """One decision per input document, input order."""
    admitted: list[Document]
    """The documents written to the store (copies carrying the decision summary)."""
    added_ids: list[str]
    """Ids the vector store returned for the admitted documents."""


class AdmissionGate:
    """Adds only ConMem-admitted documents to ``vectorstore``.

    Admitted documents are stored as copies whose ``metadata[metadata_key]`` holds the
    decision summary; the inputs are never mutated.

    Setup:
        Install the ``langchain`` extra. The scripted stand-in model below needs no key
        (its decisions are SCRIPTED, not an LLM's); for a real chat model wrap it with
        :func:`admitter_from_langchain` (e.g. ``ChatOpenAI`` and ``OPENAI_API_KEY``).

        ```bash
        pip install -U "meclear-integrations[langchain]"
        ```

    Args:
        vectorstore: The LangChain vector store to guard.
        admitter: The ConMem engine (e.g. :func:`admitter_from_langchain` over a chat
            model).
        context_key: The metadata key holding a document's historical context.
        metadata_key: The metadata key of the decision summary on stored documents.
        on_error: What happens to a document whose decision failed (a stage that never
            parsed): ``reject`` (default) keeps it out, ``admit`` stores it, ``raise``
            raises :class:`~meclear_integrations.admission.decision.AdmissionFailedError`.
        max_concurrent_candidates: Documents decided at once by ``aadd_documents``.
        limiter: Bounds the model calls in flight (a ``CallLimiter``; share one instance
            with other components to bound the process; None: off).
        max_calls_in_flight: Shorthand for a limiter of this gate's own.

    Instantiate:
        ```python
        from langchain_core.documents import Document
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_core.vectorstores import InMemoryVectorStore

        from meclear_integrations.admission import ConMemAdmitter
        from meclear_integrations.admission.scripted import ScriptedAdmissionModel
        from meclear_integrations.langchain import AdmissionGate

        conversation = [
            {"role": "user", "content": "I'm allergic to shellfish, so never suggest "
             "shrimp dishes to me. What's a quick weeknight dinner?"},
            {"role": "assistant", "content": "Try a lemon-garlic chicken traybake."},
        ]
        admitter = ConMemAdmitter(ScriptedAdmissionModel())  # or admitter_from_langchain(llm)
        docs = [
            Document(id="m1", page_content="User is allergic to shellfish."),
            Document(id="m3", page_content="User is strictly vegetarian."),
        ]
        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
        gate = AdmissionGate(store, admitter)
        ```

    Usage:
        ```python
        result = gate.add_documents(docs, context=conversation)
        print(result.added_ids)  # ['m1']
        print([d.decision for d in result.decisions])  # ['store', 'do_not_store']
        ```

    Async:
        ```python
        import asyncio

        result = asyncio.run(gate.aadd_documents(docs, context=conversation))
        print(result.added_ids)  # ['m1']
        ```
    """

    @strict_init
    def __init__(
        self,
        vectorstore: VectorStore,
        admitter: ConMemAdmitter,
        *,
        context_key: str = "historical_context",
        metadata_key: str = "meclear_admission",
        on_error: OnError = "reject",
        max_concurrent_candidates: int = 4,
        limiter: CallLimiter | None = None,
        max_calls_in_flight: int | None = None,
    ) -> None:
        self.vectorstore = vectorstore
        self.metadata_key = metadata_key
        self.on_error = on_error
        self.runnable = AdmissionRunnable(
            admitter=admitter,
            context_key=context_key,
            max_concurrent_candidates=max_concurrent_candidates,
            limiter=limiter,
            max_calls_in_flight=max_calls_in_flight,
        )

    def _select(
        self, docs: Sequence[Document], decisions: list[AdmissionDecision]
    ) -> list[Document]:
        return [
            Document(
                id=doc.id,
                page_content=doc.page_content,
                metadata={**doc.metadata, self.metadata_key: d.summary()},
            )
            for doc, d in zip(docs, decisions, strict=True)
            if admits(d, self.on_error)
        ]

    def _runnable(self, context: Context | None) -> AdmissionRunnable:
        return (
            self.runnable
            if context is None
            else self.runnable.model_copy(update={"context": context})
        )

    def _adding(
        self,
        docs: list[Document],
        context: Context | None,
        config: RunnableConfig | None,
        kwargs: dict[str, Any],
    ) -> Steps[GateResult]:
        """:meth:`add_documents`'s steps: the decisions' run, then the store's write."""
        runnable = self._runnable(context)
        decide = Call(
            partial(runnable.invoke, docs, config=config),
            partial(runnable.ainvoke, docs, config=config),
        )
        decisions = yield decide
        admitted = self._select(docs, decisions)
        store = self.vectorstore
        write = Call(
            partial(store.add_documents, admitted, **kwargs),
            partial(store.aadd_documents, admitted, **kwargs),
        )
        ids = (yield write) if admitted else []
        return GateResult(decisions=decisions, admitted=admitted, added_ids=list(ids))

    def add_documents(
        self,
        documents: Sequence[Document],
        *,
        context: Context | None = None,
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> GateResult:
        """Decide every document and add the admitted ones to the store.

        Args:
            documents: The candidate documents.
            context: The historical context of documents without
                ``metadata[context_key]`` (for this call).
            config: The runnable config of the decisions' run.
            **kwargs: Passed to ``vectorstore.add_documents``.

        Returns:
            Every decision, the admitted documents and the ids the store assigned.

        Raises:
            ConfigurationError: A document has no historical context.
            InvalidCandidateError: A document's text or context is empty, not text, too
                long or malformed (``field`` names it); raised before any model call.
            AdmissionFailedError: A decision failed and ``on_error="raise"``.
        """
        return run_steps(self._adding(list(documents), context, config, kwargs))

    async def aadd_documents(
        self,
        documents: Sequence[Document],
        *,
        context: Context | None = None,
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> GateResult:
        """Async :meth:`add_documents` (same arguments, result and errors; decided concurrently)."""
        return await arun_steps(self._adding(list(documents), context, config, kwargs))
