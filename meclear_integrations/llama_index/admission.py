"""ConMem admission for LlamaIndex: a ``TransformComponent`` for an ``IngestionPipeline``.

:class:`AdmissionTransform` decides every incoming node with ConMem, drops do-not-store
nodes (unless ``keep_rejected``) and returns copies of the kept nodes whose
``metadata[metadata_key]`` holds the decision summary (excluded from embedding and LLM
metadata). It emits instrumentation events: :class:`AdmissionStartEvent`, one
:class:`AdmissionDecisionEvent` per node, and :class:`AdmissionEndEvent` (always, also when
the batch raises). A node's historical context comes from ``metadata[context_key]`` or the
transform's ``context``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

try:
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.events import BaseEvent
    from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "meclear_integrations.llama_index needs llama-index-core: "
        "pip install 'meclear-integrations[llama-index]'"
    ) from exc
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from ..admission.decision import AdmissionDecision
from ..admission.engine import ConMemAdmitter
from ..admission.hook import OnError, admits
from ..admission.prompts import Context
from ..core.concurrency.workers import gather_or_cancel
from ..core.errors import ConfigurationError
from ..core.redaction import redact
from ..core.strict import accepted_names, reject_unknown
from ..runtime.limiter import CallLimiter, resolve_limiter

__all__ = [
    "AdmissionDecisionEvent",
    "AdmissionEndEvent",
    "AdmissionStartEvent",
    "AdmissionTransform",
]

dispatcher = get_dispatcher(__name__)


class AdmissionStartEvent(BaseEvent):
    """A batch of candidate nodes enters the admission gate."""

    n_candidates: int = Field(description="Nodes in the batch.")

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearAdmissionStartEvent"


class AdmissionDecisionEvent(BaseEvent):
    """ConMem's decision on one node (summary only: no texts)."""

    candidate_id: str = Field(description="The node id.")
    decision: str | None = Field(description="store / do_not_store, None when a stage failed.")
    kept: bool = Field(description="Whether the node continues down the pipeline.")
    summary: dict[str, Any] = Field(
        description=(
            "``AdmissionDecision.summary()`` (CMTE, score, labels, reason, tie-break, error)."
        ),
    )

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearAdmissionDecisionEvent"


class AdmissionEndEvent(BaseEvent):
    """The batch is done (or failed: ``error`` is set)."""

    n_kept: int = Field(description="Nodes passed on.")
    n_dropped: int = Field(description="Nodes dropped.")
    n_errors: int = Field(description="Nodes whose decision failed.")
    error: str | None = Field(default=None, description="Exception that aborted the batch, if any.")

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearAdmissionEndEvent"


class AdmissionTransform(TransformComponent):
    """Drops nodes ConMem would not store; records decisions in the kept nodes' metadata.

    A ``TransformComponent`` for an ``IngestionPipeline``; every field carries its
    description (``AdmissionTransform.model_fields``).

    Args:
        admitter: The ConMem engine (its model makes every call).
        context: The historical context of nodes without ``metadata[context_key]``.
        context_key: The metadata key holding a node's own context.
        metadata_key: The metadata key of the decision summary on kept nodes.
        on_error: Failed decisions: ``reject`` drops the node, ``admit`` keeps it,
            ``raise`` raises.
        keep_rejected: Keep do-not-store nodes too (annotated).
        max_concurrent_candidates: Nodes decided at once on the async path.
        limiter: Bounds the model calls in flight (a ``CallLimiter``; share one instance
            with other components to bound the process; None: the admitter's own).
        max_calls_in_flight: Shorthand for a limiter of this transform's own.

    Example:
        ```python
        from llama_index.core.ingestion import IngestionPipeline
        from llama_index.core.schema import TextNode

        from meclear_integrations.admission import ConMemAdmitter
        from meclear_integrations.admission.scripted import ScriptedAdmissionModel
        from meclear_integrations.llama_index.admission import AdmissionTransform

        conversation = [
            {"role": "user", "content": "I'm allergic to shellfish, so never suggest "
             "shrimp dishes to me. What's a quick weeknight dinner?"},
            {"role": "assistant", "content": "Try a lemon-garlic chicken traybake."},
        ]
        admitter = ConMemAdmitter(ScriptedAdmissionModel())  # SCRIPTED, not an LLM
        pipeline = IngestionPipeline(
            transformations=[AdmissionTransform(admitter=admitter, context=conversation)]
        )
        nodes = pipeline.run(
            nodes=[
                TextNode(id_="m1", text="User is allergic to shellfish."),
                TextNode(id_="m3", text="User is strictly vegetarian."),
            ]
        )
        print([n.node_id for n in nodes])  # ['m1']
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    admitter: ConMemAdmitter = Field(exclude=True, description="The ConMem engine.")
    context_key: str = Field(
        default="historical_context",
        description="Metadata key holding a node's historical context.",
    )
    context: Context | None = Field(
        default=None,
        description="Context for nodes without ``metadata[context_key]``.",
    )
    metadata_key: str = Field(
        default="meclear_admission",
        description="Metadata key of the decision summary on kept nodes.",
    )
    on_error: OnError = Field(
        default="reject",
        description=(
            "Failed decisions: ``reject`` drops the node, ``admit`` keeps it, ``raise`` raises."
        ),
    )
    keep_rejected: bool = Field(
        default=False,
        description="Keep do-not-store nodes too (annotated) instead of dropping them.",
    )
    max_concurrent_candidates: int = Field(
        default=4,
        ge=1,
        description="Nodes decided at once by ``acall``.",
    )
    limiter: CallLimiter | None = Field(
        default=None,
        exclude=True,
        description=(
            "Bounds the model calls in flight across every decision of this transform (and of "
            "any component given the same instance: "
            "``meclear_integrations.runtime.limiter``); None: "
            "the admitter's own ``limiter``, if any."
        ),
    )
    max_calls_in_flight: int | None = Field(
        default=None,
        ge=1,
        description="Shorthand for a limiter of this transform's own (not with ``limiter``).",
    )

    _limiter: CallLimiter | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _known_settings(cls, data: Any) -> Any:
        reject_unknown(cls.__name__, data, [*accepted_names(cls), "class_name"])
        return data

    def model_post_init(self, context: Any, /) -> None:
        """Resolve the limiter (``limiter`` or ``max_calls_in_flight``)."""
        super().model_post_init(context)
        self._limiter = resolve_limiter(self.limiter, self.max_calls_in_flight)

    @classmethod
    def class_name(cls) -> str:
        """The stable name LlamaIndex serialises this class under."""
        return "MeClearAdmissionTransform"

    def _context(self, node: BaseNode) -> Context:
        ctx = node.metadata.get(self.context_key, self.context)
        if ctx is None:
            raise ConfigurationError(
                f"node {node.node_id} has no metadata[{self.context_key!r}] and no default "
                "context was given"
            )
        return ctx

    def _requests(self, nodes: Sequence[BaseNode]) -> list[tuple[str, Context]]:
        """Every node's text and context, all checked before any model call."""
        out = []
        for i, node in enumerate(nodes):
            ctx = self._context(node)
            text = node.get_content(metadata_mode=MetadataMode.NONE)
            own = self.context_key in node.metadata
            self.admitter.validate(
                text,
                ctx,
                candidate_id=node.node_id,
                prefix=f"nodes[{i}]",
                candidate_field="text",
                context_field=f"metadata[{self.context_key!r}]" if own else "context",
            )
            out.append((text, ctx))
        return out

    def _annotate(self, node: BaseNode, decision: AdmissionDecision) -> BaseNode:
        key = self.metadata_key
        return node.model_copy(
            update={
                "metadata": {**node.metadata, key: decision.summary()},
                "excluded_embed_metadata_keys": [*node.excluded_embed_metadata_keys, key],
                "excluded_llm_metadata_keys": [*node.excluded_llm_metadata_keys, key],
            }
        )

    def _route(
        self, nodes: Sequence[BaseNode], decisions: Sequence[AdmissionDecision]
    ) -> tuple[list[BaseNode], list[AdmissionDecisionEvent]]:
        kept, events = [], []
        for node, d in zip(nodes, decisions, strict=True):
            keep = admits(d, self.on_error) or (self.keep_rejected and d.ok)
            if keep:
                kept.append(self._annotate(node, d))
            events.append(
                AdmissionDecisionEvent(
                    candidate_id=node.node_id, decision=d.decision, kept=keep, summary=d.summary()
                )
            )
        return kept, events

    @staticmethod
    def _end(kept: int, decisions: Sequence[AdmissionDecision], error: str | None) -> BaseEvent:
        return AdmissionEndEvent(
            n_kept=kept,
            n_dropped=len(decisions) - kept,
            n_errors=sum(1 for d in decisions if not d.ok),
            error=error,
        )

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[BaseNode]:
        """Decide every node and return the ones to store.

        Args:
            nodes: The candidate nodes.
            **kwargs: Ignored (the ``TransformComponent`` signature).

        Returns:
            The admitted nodes (and, with ``keep_rejected``, the rejected ones, annotated).

        Raises:
            ConfigurationError: A node has no historical context and no default is set.
            InvalidCandidateError: A node's text or context is empty, not text, too long
                or malformed (``field`` names it); raised before any model call.
            AdmissionFailedError: A decision failed and ``on_error="raise"``.
        """
        dispatcher.event(AdmissionStartEvent(n_candidates=len(nodes)))
        decisions: list[AdmissionDecision] = []
        kept: list[BaseNode] = []
        error: str | None = None
        try:
            for node, (text, ctx) in zip(nodes, self._requests(nodes), strict=True):
                decisions.append(
                    self.admitter.decide(
                        text, ctx, candidate_id=node.node_id, limiter=self._limiter
                    )
                )
            kept, events = self._route(nodes, decisions)
            for event in events:
                dispatcher.event(event)
            return kept
        except BaseException as exc:
            error = redact(f"{type(exc).__name__}: {exc}")[:500]
            raise
        finally:
            dispatcher.event(self._end(len(kept), decisions, error))

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[BaseNode]:
        """Async ``__call__``: up to ``max_concurrent_candidates`` nodes decided at once.

        Args:
            nodes: The candidate nodes.
            **kwargs: Ignored (the ``TransformComponent`` signature).

        Returns:
            The admitted nodes (and, with ``keep_rejected``, the rejected ones, annotated).

        Raises:
            ConfigurationError: A node has no historical context and no default is set.
            InvalidCandidateError: A node's text or context is empty, not text, too long
                or malformed (``field`` names it); raised before any model call.
            AdmissionFailedError: A decision failed and ``on_error="raise"``.
        """
        await dispatcher.aevent(AdmissionStartEvent(n_candidates=len(nodes)))
        gate = asyncio.Semaphore(self.max_concurrent_candidates)
        decisions: list[AdmissionDecision] = []
        kept: list[BaseNode] = []
        error: str | None = None

        async def one(node: BaseNode, text: str, ctx: Context) -> AdmissionDecision:
            async with gate:
                return await self.admitter.adecide(
                    text, ctx, candidate_id=node.node_id, limiter=self._limiter
                )

        try:
            requests = self._requests(nodes)  # every node checked before any model call
            # the first failure cancels the other nodes' decisions (no call outlives it)
            decisions = await gather_or_cancel(
                one(n, *r) for n, r in zip(nodes, requests, strict=True)
            )
            kept, events = self._route(nodes, decisions)
            for event in events:
                await dispatcher.aevent(event)
            return kept
        except BaseException as exc:
            error = redact(f"{type(exc).__name__}: {exc}")[:500]
            raise
        finally:
            await dispatcher.aevent(self._end(len(kept), decisions, error))
