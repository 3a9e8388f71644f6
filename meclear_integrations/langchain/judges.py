"""LangChain adapters of the neutral LLM judges (thin: the core lives in ``judges``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.runnables import Runnable

from ..judges import (
    CallableJudge,
    Judge,
    ReferenceFreeLLMJudge,
    ReferenceLLMJudge,
)
from .model import as_text_model

__all__ = ["LangChainReferenceFreeJudge", "LangChainReferenceJudge", "resolve_judge"]


class LangChainReferenceJudge(ReferenceLLMJudge):
    """Reference-based LLM judge over a LangChain chat model / LLM.

    Uses ``with_structured_output`` when the model supports it (``structured_output=None``),
    the nonce-bound verdict line otherwise (``judges.protocol``); an unreadable verdict
    raises ``VerdictParseError``.
    """

    def __init__(
        self,
        llm: Runnable,
        *,
        structured_output: bool | None = None,
        method: str | None = None,
        metadata_keys: Sequence[str] = (),
    ) -> None:
        super().__init__(
            as_text_model(llm, structured_output=structured_output, method=method),
            metadata_keys=metadata_keys,
        )
        self.llm = llm


class LangChainReferenceFreeJudge(ReferenceFreeLLMJudge):
    """Reference-free LLM judge over a LangChain model (see ``ReferenceFreeLLMJudge``)."""

    def __init__(
        self,
        llm: Runnable,
        *,
        structured_output: bool | None = None,
        method: str | None = None,
        metadata_keys: Sequence[str] = (),
    ) -> None:
        super().__init__(
            as_text_model(llm, structured_output=structured_output, method=method),
            metadata_keys=metadata_keys,
        )
        self.llm = llm


def resolve_judge(
    judge: Any,
    llm: Runnable | None,
    reference: str | None,
    *,
    metadata_keys: Sequence[str] = (),
) -> Judge:
    """The judge of one query.

    ``judge`` may be a :class:`~meclear_integrations.judges.Judge`, a LangChain runnable
    model, a plain function (:class:`~meclear_integrations.judges.CallableJudge`), or None
    (then ``llm``). A model becomes a reference judge when the query has a reference and a
    reference-free judge otherwise, shown the memories' ``metadata_keys``.
    """
    if judge is None:
        judge = llm
    if judge is None:
        raise ValueError("no judge: pass judge=... or llm=...")
    if callable(getattr(judge, "score", None)) and callable(getattr(judge, "ascore", None)):
        return judge  # type: ignore[no-any-return]
    if isinstance(judge, Runnable):
        if reference is not None:
            return LangChainReferenceJudge(judge)
        return LangChainReferenceFreeJudge(judge, metadata_keys=metadata_keys)
    if callable(judge):
        fn: Callable[..., Any] = judge
        return CallableJudge(fn)
    raise TypeError(f"cannot use {type(judge).__name__} as a judge")
