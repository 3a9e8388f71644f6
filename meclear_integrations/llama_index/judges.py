"""LlamaIndex adapters of the neutral LLM judges (thin: the core lives in ``judges``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.llms import LLM

from ..judges import Judge, ReferenceFreeLLMJudge, ReferenceLLMJudge
from ..judges.llm import resolve_judge as resolve
from .model import as_text_model

__all__ = ["LlamaIndexReferenceFreeJudge", "LlamaIndexReferenceJudge", "resolve_judge"]


class LlamaIndexReferenceJudge(ReferenceLLMJudge):
    """Reference-based LLM judge over a LlamaIndex LLM.

    Function-calling LLMs are asked for the verdict as structured output (a required tool
    call, ``structured_output=None``); other LLMs answer with the nonce-bound verdict line
    (``judges.protocol``); a reply without the tool call is read only when it is one JSON
    object. An unreadable verdict raises ``VerdictParseError``.

    Args:
        llm: The judge model.
        chat: None follows ``llm.metadata.is_chat_model``.
        structured_output: None uses structured output when the LLM supports function
            calling; True requires it.
        metadata_keys: Memory metadata (dates, source) rendered, fenced as data, with each
            memory shown to the judge.

    Example:
        ```python
        from meclear_integrations.llama_index import LlamaIndexReferenceJudge, SimulatedLLM
        from meclear_integrations.simulation import redundant_harm_example

        case = redundant_harm_example()  # SIMULATED
        judge = LlamaIndexReferenceJudge(SimulatedLLM.from_case(case))
        verdict = judge.score(case.query, "December 2023", reference=case.reference)
        print(verdict.score)  # 1.0
        ```
    """

    def __init__(
        self,
        llm: LLM,
        *,
        chat: bool | None = None,
        structured_output: bool | None = None,
        metadata_keys: Sequence[str] = (),
    ) -> None:
        super().__init__(
            as_text_model(llm, chat=chat, structured_output=structured_output),
            metadata_keys=metadata_keys,
        )
        self.llm = llm


class LlamaIndexReferenceFreeJudge(ReferenceFreeLLMJudge):
    """Reference-free LLM judge over a LlamaIndex LLM.

    Structured output as in :class:`LlamaIndexReferenceJudge`; see
    ``ReferenceFreeLLMJudge`` for what it can and cannot catch.

    Args:
        llm: The judge model.
        chat: None follows ``llm.metadata.is_chat_model``.
        structured_output: None uses structured output when the LLM supports function
            calling; True requires it.
        metadata_keys: Memory metadata (dates, source) rendered, fenced as data, with each
            memory shown to the judge.
    """

    def __init__(
        self,
        llm: LLM,
        *,
        chat: bool | None = None,
        structured_output: bool | None = None,
        metadata_keys: Sequence[str] = (),
    ) -> None:
        super().__init__(
            as_text_model(llm, chat=chat, structured_output=structured_output),
            metadata_keys=metadata_keys,
        )
        self.llm = llm


def resolve_judge(
    judge: Any, llm: LLM | None, reference: str | None, *, metadata_keys: Sequence[str] = ()
) -> Judge:
    """The judge of one query.

    ``judge`` may be a :class:`~meclear_integrations.judges.Judge` (anything with
    ``score`` / ``ascore``), a LlamaIndex ``LLM``, a plain or coroutine function
    (:class:`~meclear_integrations.judges.CallableJudge`), or None (then ``llm``). An LLM
    becomes a reference judge when the query has a reference, reference-free otherwise.

    Args:
        judge: A judge, a LlamaIndex ``LLM``, a function, or None.
        llm: The component's LLM, used when ``judge`` is None.
        reference: The query's reference answer, if any.
        metadata_keys: Metadata keys a reference-free LLM judge is shown.

    Returns:
        The judge.

    Raises:
        ConfigurationError: Neither ``judge`` nor ``llm`` is given.
        ConfigurationTypeError: ``judge`` is none of the accepted kinds.
    """
    return resolve(
        judge,
        llm,
        reference,
        is_model=lambda model: isinstance(model, LLM),
        reference_judge=LlamaIndexReferenceJudge,
        free_judge=lambda model, keys: LlamaIndexReferenceFreeJudge(model, metadata_keys=keys),
        metadata_keys=metadata_keys,
        missing="no judge: pass judge=... or llm=... (or set Settings.llm)",
    )
