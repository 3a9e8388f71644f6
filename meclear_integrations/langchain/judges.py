"""LangChain adapters of the neutral LLM judges (thin: the core lives in ``judges``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import Runnable

from ..judges import (
    Judge,
    ReferenceFreeLLMJudge,
    ReferenceLLMJudge,
)
from ..judges.llm import resolve_judge as resolve
from .model import as_text_model

__all__ = ["LangChainReferenceFreeJudge", "LangChainReferenceJudge", "resolve_judge"]


class LangChainReferenceJudge(ReferenceLLMJudge):
    """Reference-based LLM judge over a LangChain chat model / LLM.

    Uses ``with_structured_output`` when the model supports it (``structured_output=None``),
    the nonce-bound verdict line otherwise (``judges.protocol``); an unreadable verdict
    raises ``VerdictParseError``, never a default score.

    Setup:
        Install the ``langchain`` extra (``pip install -U "meclear-integrations[langchain]"``).

    Key init args:
        llm: Runnable
            The judge model (a chat model, an LLM, ``llm.with_retry(...)``...).
        structured_output: bool | None
            None uses structured output when the model supports it; True requires it.
        method: str | None
            The ``with_structured_output`` method (e.g. ``"json_schema"``), when set.
        metadata_keys: Sequence[str]
            Memory metadata (dates, source) rendered, fenced as data, with each memory.

    Instantiate:
        ```python
        from meclear_integrations.langchain import LangChainReferenceJudge, SimulatedChatModel
        from meclear_integrations.simulation import redundant_harm_example

        case = redundant_harm_example()  # SIMULATED
        judge = LangChainReferenceJudge(SimulatedChatModel.from_case(case))
        ```

    Usage:
        ```python
        verdict = judge.score(case.query, "December 2023", reference=case.reference)
        print(verdict.score, verdict.parsed_by)  # 1.0 label
        ```

    Async:
        ```python
        import asyncio

        verdict = asyncio.run(judge.ascore(case.query, "January 2023", reference="December 2023"))
        print(verdict.score)  # 0.0
        ```
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
    """Reference-free LLM judge over a LangChain model.

    It checks that the answer is correct and consistent with the memories the agent was
    shown (see ``ReferenceFreeLLMJudge`` for what it can and cannot catch: not an error all
    the shown memories agree on).

    Args:
        llm: The judge model.
        structured_output: None uses structured output when the model supports it; True
            requires it.
        method: The ``with_structured_output`` method, when set.
        metadata_keys: Memory metadata (dates, source) rendered, fenced as data, with each
            memory shown to the judge.

    Example:
        ```python
        from meclear_integrations.langchain import (
            LangChainReferenceFreeJudge,
            SimulatedChatModel,
        )
        from meclear_integrations.simulation import redundant_harm_example

        case = redundant_harm_example()  # SIMULATED
        judge = LangChainReferenceFreeJudge(SimulatedChatModel.from_case(case))
        verdict = judge.score(case.query, "December 2023", context=case.memories[:1])
        print(verdict.score)  # 1.0
        ```
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


def resolve_judge(
    judge: Any,
    llm: Runnable | None,
    reference: str | None,
    *,
    metadata_keys: Sequence[str] = (),
) -> Judge:
    """The judge of one query.

    A model becomes a reference judge when the query has a reference and a reference-free
    judge otherwise, shown the memories' ``metadata_keys``.

    Args:
        judge: A :class:`~meclear_integrations.judges.Judge`, a LangChain runnable model, a
            plain function (:class:`~meclear_integrations.judges.CallableJudge`), or None
            (then ``llm``).
        llm: The component's model, used when ``judge`` is None.
        reference: The query's reference answer, if any.
        metadata_keys: Metadata keys a reference-free model judge is shown.

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
        is_model=lambda model: isinstance(model, Runnable),
        reference_judge=LangChainReferenceJudge,
        free_judge=lambda model, keys: LangChainReferenceFreeJudge(model, metadata_keys=keys),
        metadata_keys=metadata_keys,
    )
