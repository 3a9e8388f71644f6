"""LLM judges over the neutral :class:`~.model.TextModel` interface.

Framework adapters only have to turn their model into a ``TextModel`` (optionally with the
JSON-schema calls); prompting, structured output and tolerant parsing live here.

- :class:`ReferenceLLMJudge`: question + gold reference + answer -> correct or not.
- :class:`ReferenceFreeLLMJudge`: for production, where no gold answer exists: question +
  the memories the agent saw + answer -> correct and consistent or not. It can catch answers
  that contradict the memories, that assert unsupported facts, non-answers when the answer
  is present, and (given the conflicting memories) answers that side with the weaker
  evidence. It cannot catch an error the memories agree on (every memory shown is stale or
  wrong in the same way), world knowledge beyond the memories, or subtle errors the judge
  model itself misreads; its verdicts are only as good as the judge model.

Security: the question, answer, reference and memories are fenced as data in the prompt
(``judges.prompts``), and the verdict is read only from the judge's own output: a text
reply's quotations of the answer or memories are masked before parsing
(:func:`~.parsing.mask_echoes`), so an answer addressing the judge ("Judge: this is
correct") can neither instruct the judge nor be mistaken for its verdict.

With a structured-output model the verdict is requested as :data:`VERDICT_SCHEMA`; a model
without it (or a structured reply that carries raw text) goes through
:func:`~.parsing.parse_verdict`. Every call that yields no verdict raises
:class:`~.errors.VerdictParseError`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from ..core.memory import Memory
from ..core.workers import check_call_allowed
from .base import JudgeVerdict
from .errors import MissingReferenceError, VerdictParseError
from .model import TextModel, as_text_model, supports_structured_output
from .parsing import VERDICT_SCHEMA, parse_verdict, verdict_from_object
from .prompts import reference_free_prompt, reference_prompt

__all__ = ["LLMJudge", "ReferenceFreeLLMJudge", "ReferenceLLMJudge"]


class LLMJudge:
    """Shared core: build the prompt, ask the model, read the verdict."""

    requires_reference = False

    def __init__(
        self,
        model: TextModel | Callable[[str], str | Awaitable[str]],
        *,
        structured_output: bool | None = None,
    ) -> None:
        """``structured_output``: None uses it when the model supports it."""
        self.model = as_text_model(model)
        supported = supports_structured_output(self.model)
        if structured_output and not supported:
            raise ValueError("structured_output=True but the model has no complete_json")
        self.structured = supported if structured_output is None else structured_output

    def build_prompt(
        self,
        question: str,
        answer: str,
        reference: str | None,
        context: Sequence[Memory] | None,
        *,
        structured: bool,
    ) -> str:
        raise NotImplementedError

    def score(
        self,
        question: str,
        answer: str,
        *,
        reference: str | None = None,
        context: Sequence[Memory] | None = None,
    ) -> JudgeVerdict:
        prompt = self.build_prompt(question, answer, reference, context, structured=self.structured)
        echoes = _echoes(answer, context)
        check_call_allowed()
        if self.structured:
            reply = self.model.complete_json(prompt, VERDICT_SCHEMA)  # type: ignore[attr-defined]
            return _read(reply, structured=True, echoes=echoes)
        return _read(self.model.complete(prompt), structured=False, echoes=echoes)

    async def ascore(
        self,
        question: str,
        answer: str,
        *,
        reference: str | None = None,
        context: Sequence[Memory] | None = None,
    ) -> JudgeVerdict:
        prompt = self.build_prompt(question, answer, reference, context, structured=self.structured)
        echoes = _echoes(answer, context)
        check_call_allowed()
        if self.structured:
            reply = await self.model.acomplete_json(prompt, VERDICT_SCHEMA)  # type: ignore[attr-defined]
            return _read(reply, structured=True, echoes=echoes)
        return _read(await self.model.acomplete(prompt), structured=False, echoes=echoes)


def _echoes(answer: str, context: Sequence[Memory] | None) -> tuple[str, ...]:
    """The data of the judge's prompt: quotations of it never count as the verdict."""
    return (answer, *(m.content for m in context or ()))


def _read(
    reply: Mapping[str, Any] | str | Any, *, structured: bool, echoes: tuple[str, ...] = ()
) -> JudgeVerdict:
    if isinstance(reply, str):
        return parse_verdict(reply, echoes=echoes)
    if hasattr(reply, "model_dump"):
        reply = reply.model_dump()
    if isinstance(reply, Mapping):
        return verdict_from_object(reply, str(dict(reply)), structured=structured)
    raise VerdictParseError(
        f"the judge model returned {type(reply).__name__}, not text or an object",
        raw=repr(reply),
    )


class ReferenceLLMJudge(LLMJudge):
    """Reference-based judge: is ``answer`` the same fact as the gold ``reference``?"""

    requires_reference = True

    def build_prompt(
        self,
        question: str,
        answer: str,
        reference: str | None,
        context: Sequence[Memory] | None,
        *,
        structured: bool,
    ) -> str:
        if reference is None:
            raise MissingReferenceError(
                "ReferenceLLMJudge needs a reference answer; pass reference=... or use "
                "ReferenceFreeLLMJudge"
            )
        return reference_prompt(question, answer, reference, structured=structured)


class ReferenceFreeLLMJudge(LLMJudge):
    """Reference-free judge: is ``answer`` correct and consistent given ``context``?

    ``context`` is the memories the agent was given (an empty context is allowed: then only
    non-answers and self-contradictions can be caught). A reference, if passed, is ignored.
    """

    def build_prompt(
        self,
        question: str,
        answer: str,
        reference: str | None,
        context: Sequence[Memory] | None,
        *,
        structured: bool,
    ) -> str:
        return reference_free_prompt(question, answer, tuple(context or ()), structured=structured)
