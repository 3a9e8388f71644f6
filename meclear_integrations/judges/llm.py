"""LLM judges over the neutral :class:`~.model.TextModel` interface.

Framework adapters only have to turn their model into a ``TextModel`` (optionally with the
JSON-schema calls); prompting, structured output and verdict reading live here.

- :class:`ReferenceLLMJudge`: question + gold reference + answer -> correct or not.
- :class:`ReferenceFreeLLMJudge`: for production, where no gold answer exists: question +
  the memories the agent saw + answer -> correct and consistent or not. It can catch answers
  that contradict the memories, that assert unsupported facts, non-answers when the answer
  is present, and (given the conflicting memories) answers that side with the weaker
  evidence. It cannot catch an error the memories agree on (every memory shown is stale or
  wrong in the same way), world knowledge beyond the memories, or subtle errors the judge
  model itself misreads; its verdicts are only as good as the judge model.

Security: the question, answer, reference and memories are fenced as data in the prompt
(``judges.prompts``), and the verdict is read only from the judge's own output structure,
never from the data (:mod:`.parsing`): the ``correct`` field of a structured reply, or, on
the free-text path, the final verdict line bound to a nonce that is fresh for every call
and written into the prompt after all the data (:mod:`.protocol`). No answer or memory can
know the nonce, so none can forge the verdict line, however the judge quotes it.

With a structured-output model the verdict is requested as :data:`VERDICT_SCHEMA`; a model
without it goes through :func:`~.protocol.parse_verdict` (a structured call answered with
text is read only when the whole reply is one JSON object). Every call that yields no
verdict raises :class:`~.errors.VerdictParseError`; so does a reply holding conflicting
verdicts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from ..core.errors import ConfigurationError
from ..core.memory import Memory
from ..core.step_driver import Call, Steps, arun_steps, run_steps
from ..core.workers import check_call_allowed
from .base import JudgeVerdict
from .errors import MissingReferenceError, VerdictParseError
from .model import TextModel, as_text_model, supports_structured_output
from .parsing import VERDICT_SCHEMA, verdict_from_object, verdict_from_text
from .prompts import reference_free_prompt, reference_prompt
from .protocol import new_nonce, parse_verdict

__all__ = ["LLMJudge", "ReferenceFreeLLMJudge", "ReferenceLLMJudge"]


class LLMJudge:
    """Shared core: build the prompt, ask the model, read the verdict.

    Args:
        model: A :class:`TextModel` or a function ``prompt -> str``.
        structured_output: None uses JSON-schema replies when the model offers them; True
            requires them.
        metadata_keys: Memory metadata (dates, source) rendered, fenced as data, with each
            memory shown to the judge (``prompts.render_memory``).

    Raises:
        ConfigurationError: ``structured_output=True`` for a model without ``complete_json``.
    """

    requires_reference = False

    def __init__(
        self,
        model: TextModel | Callable[[str], str | Awaitable[str]],
        *,
        structured_output: bool | None = None,
        metadata_keys: Sequence[str] = (),
    ) -> None:
        self.model = as_text_model(model)
        self.metadata_keys = tuple(metadata_keys)
        supported = supports_structured_output(self.model)
        if structured_output and not supported:
            raise ConfigurationError("structured_output=True but the model has no complete_json")
        self.structured = supported if structured_output is None else structured_output

    def build_prompt(
        self,
        question: str,
        answer: str,
        reference: str | None,
        context: Sequence[Memory] | None,
        *,
        structured: bool,
        nonce: str | None = None,
    ) -> str:
        """The judge prompt for one answer.

        Args:
            question: The user's question.
            answer: The agent's answer.
            reference: The gold answer, when there is one.
            context: The memories the agent was shown.
            structured: Whether the verdict comes back as structured output.
            nonce: The free-text verdict nonce (a fresh one when None).

        Returns:
            The prompt text.
        """
        raise NotImplementedError

    def _prompt(
        self, question: str, answer: str, reference: str | None, context: Any
    ) -> tuple[str, str | None]:
        nonce = None if self.structured else new_nonce()
        prompt = self.build_prompt(
            question, answer, reference, context, structured=self.structured, nonce=nonce
        )
        return prompt, nonce

    def _verdict(
        self, question: str, answer: str, reference: str | None, context: Any
    ) -> Steps[JudgeVerdict]:
        """One judgement, written once: the drivers make the model call."""
        prompt, nonce = self._prompt(question, answer, reference, context)
        check_call_allowed()
        if nonce is None:
            reply = yield Call(
                lambda: self.model.complete_json(prompt, VERDICT_SCHEMA),  # type: ignore[attr-defined]
                lambda: self.model.acomplete_json(prompt, VERDICT_SCHEMA),  # type: ignore[attr-defined]
            )
            return _read_structured(reply)
        text = yield Call(lambda: self.model.complete(prompt), lambda: self.model.acomplete(prompt))
        return parse_verdict(text, nonce)

    def score(
        self,
        question: str,
        answer: str,
        *,
        reference: str | None = None,
        context: Sequence[Memory] | None = None,
    ) -> JudgeVerdict:
        """Score ``answer`` to ``question`` (as :meth:`Judge.score`)."""
        return run_steps(self._verdict(question, answer, reference, context))

    async def ascore(
        self,
        question: str,
        answer: str,
        *,
        reference: str | None = None,
        context: Sequence[Memory] | None = None,
    ) -> JudgeVerdict:
        """Score ``answer`` to ``question`` on the event loop (as :meth:`Judge.score`)."""
        return await arun_steps(self._verdict(question, answer, reference, context))


def _read_structured(reply: Mapping[str, Any] | str | Any) -> JudgeVerdict:
    """The verdict of a structured call: the reply object, or text holding one object."""
    if isinstance(reply, str):
        return verdict_from_text(reply)
    if hasattr(reply, "model_dump"):
        reply = reply.model_dump()
    if isinstance(reply, Mapping):
        return verdict_from_object(reply, repr(dict(reply))[:2000], structured=True)
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
        nonce: str | None = None,
    ) -> str:
        """The judge prompt for one answer.

        Args:
            question: The user's question.
            answer: The agent's answer.
            reference: The gold answer, when there is one.
            context: The memories the agent was shown.
            structured: Whether the verdict comes back as structured output.
            nonce: The free-text verdict nonce (a fresh one when None).

        Returns:
            The prompt text.
        """
        if reference is None:
            raise MissingReferenceError(
                "ReferenceLLMJudge needs a reference answer; pass reference=... or use "
                "ReferenceFreeLLMJudge"
            )
        return reference_prompt(question, answer, reference, structured=structured, nonce=nonce)


class ReferenceFreeLLMJudge(LLMJudge):
    """Reference-free judge: is ``answer`` correct and consistent given ``context``?

    ``context`` is what the judge is shown: by default every retrieved memory (the task
    evaluator's ``judge_context="full"``), so removing evidence cannot make an answer look
    supported (an empty context is allowed: then only non-answers and self-contradictions
    can be caught). A reference, if passed, is ignored.
    """

    def build_prompt(
        self,
        question: str,
        answer: str,
        reference: str | None,
        context: Sequence[Memory] | None,
        *,
        structured: bool,
        nonce: str | None = None,
    ) -> str:
        """The judge prompt for one answer.

        Args:
            question: The user's question.
            answer: The agent's answer.
            reference: The gold answer, when there is one.
            context: The memories the agent was shown.
            structured: Whether the verdict comes back as structured output.
            nonce: The free-text verdict nonce (a fresh one when None).

        Returns:
            The prompt text.
        """
        return reference_free_prompt(
            question,
            answer,
            tuple(context or ()),
            structured=structured,
            nonce=nonce,
            metadata_keys=self.metadata_keys,
        )
