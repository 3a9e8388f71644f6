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
(``judges.protocol``), and the verdict is read only from the judge's own output structure,
never from the data (:mod:`.parsing`): the ``correct`` field of a structured reply, or, on
the free-text path, the final verdict line bound to a nonce that is fresh for every call
and written into the prompt after all the data (:mod:`.protocol`). No answer or memory can
know the nonce, so none can forge the verdict line, however the judge quotes it.

Output formats are negotiated per endpoint (:mod:`.model`): the verdict is requested as
:data:`VERDICT_SCHEMA` (JSON schema or a tool call), then in JSON mode with
:data:`~.parsing.GRAMMAR_VERDICT_SCHEMA` (a grammar on llama.cpp servers), then as text; an
endpoint that rejects or ignores a format is asked in the next one at once, and remembered.
On the text path the nonce-bound line is asked for first (:func:`~.protocol.parse_verdict`);
a model that cannot write it gets one short second call asking for exactly one word
(:mod:`.protocol`, which explains why this cannot be forged). A structured call
answered with text is read only when the whole reply is one JSON object. Every judgement
that yields no verdict raises :class:`~.errors.VerdictParseError` (the engine counts it as
an unreadable reply); so does a reply holding conflicting verdicts.

Which judge a query gets (:func:`resolve_judge`): both integrations accept the same kinds of
judge, a :class:`~.base.Judge` (anything with ``score`` / ``ascore``), a model of their
framework, a plain or coroutine function (:class:`~.callable.CallableJudge`), or None (then
the component's ``llm``). A model becomes a :class:`ReferenceLLMJudge` when the query has a
reference and a :class:`ReferenceFreeLLMJudge` otherwise, shown the memories' metadata keys;
an integration passes how to recognise and wrap its framework's models.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..core.concurrency.step_driver import Call, Steps, arun_steps, run_steps
from ..core.concurrency.workers import check_call_allowed
from ..core.errors import ConfigurationError, ConfigurationTypeError
from ..core.memory import Memory
from .base import Judge, JudgeVerdict
from .callable import CallableJudge
from .errors import MissingReferenceError, VerdictParseError
from .model import (
    ENDPOINT_FORMATS,
    FormatLadder,
    OutputFormat,
    TextModel,
    as_text_model,
    endpoint_of,
    is_prose,
    request,
    supports_json_object,
    supports_structured_output,
)
from .parsing import GRAMMAR_VERDICT_SCHEMA, VERDICT_SCHEMA, read_structured, with_cut_note
from .protocol import (
    carries_verdict_word,
    new_nonce,
    parse_short_verdict,
    parse_verdict,
    reference_free_prompt,
    reference_prompt,
)

__all__ = ["LLMJudge", "ReferenceFreeLLMJudge", "ReferenceLLMJudge", "resolve_judge"]


class LLMJudge:
    """Shared core: build the prompt, negotiate the output format, read the verdict.

    Args:
        model: A :class:`TextModel` or a function ``prompt -> str``.
        structured_output: None uses the structured formats the model offers (JSON schema,
            JSON mode) and falls back to text when the endpoint rejects them; True requires
            a structured format (no text fallback); False asks for text only.
        metadata_keys: Memory metadata (dates, source) rendered, fenced as data, with each
            memory shown to the judge (``answer_prompts.render_memory``).

    Raises:
        ConfigurationError: ``structured_output=True`` for a model without structured calls.
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
        supported = supports_structured_output(self.model) or supports_json_object(self.model)
        if structured_output and not supported:
            raise ConfigurationError("structured_output=True but the model has no complete_json")
        self.structured = supported if structured_output is None else structured_output
        self.text_fallback = structured_output is not True
        self.endpoint = endpoint_of(self.model)

    def build_prompt(
        self,
        question: str,
        answer: str,
        reference: str | None,
        context: Sequence[Memory] | None,
        *,
        structured: bool,
        nonce: str | None = None,
        short: bool = False,
    ) -> str:
        """The judge prompt for one answer.

        Args:
            question: The user's question.
            answer: The agent's answer.
            reference: The gold answer, when there is one.
            context: The memories the agent was shown.
            structured: Whether the verdict comes back as structured output.
            nonce: The free-text verdict nonce (a fresh one when None).
            short: Ask for the one-word verdict (``judges.protocol``).

        Returns:
            The prompt text.
        """
        raise NotImplementedError

    def judged_data(self, answer: str, context: Sequence[Memory] | None) -> list[str]:
        """The untrusted texts the prompt shows the judge (the answer; memories if shown).

        Args:
            answer: The agent's answer.
            context: The memories the agent was shown.

        Returns:
            The texts a one-word verdict must not be a quotation of.
        """
        return [answer]

    def output_formats(self) -> list[OutputFormat]:
        """The formats this judge will try, strongest first (``judges.model``).

        Returns:
            The formats not yet rejected by the endpoint.
        """
        return self._ladder().formats

    def _ladder(self) -> FormatLadder:
        return FormatLadder(
            self.model, structured=self.structured, text_fallback=self.text_fallback
        )

    def _verdict(
        self, question: str, answer: str, reference: str | None, context: Any
    ) -> Steps[JudgeVerdict]:
        """One judgement, written once: the drivers make the model calls."""
        ladder = self._ladder()
        for fmt in ladder.formats:
            if fmt == "text":
                verdict = yield from self._text_verdict(question, answer, reference, context)
            else:
                prompt = self.build_prompt(question, answer, reference, context, structured=True)
                schema = VERDICT_SCHEMA if fmt == "json_schema" else GRAMMAR_VERDICT_SCHEMA
                check_call_allowed()
                try:
                    reply = yield Call(*request(self.model, fmt, prompt, schema))
                    if is_prose(reply):
                        raise ladder.ignored(fmt, reply)
                except Exception as exc:
                    if ladder.failed(fmt, exc):
                        continue
                    raise
                verdict = read_structured(reply)
            ladder.succeeded(fmt)
            return verdict
        raise ladder.exhausted()

    def _text_verdict(
        self, question: str, answer: str, reference: str | None, context: Any
    ) -> Steps[JudgeVerdict]:
        """The nonce-line reply, then (when unreadable) the one-word verdict call."""
        quoted = carries_verdict_word(self.judged_data(answer, context))
        first: VerdictParseError | None = None
        if not ENDPOINT_FORMATS.short_only(self.endpoint) or quoted:
            nonce = new_nonce()
            prompt = self.build_prompt(
                question, answer, reference, context, structured=False, nonce=nonce
            )
            check_call_allowed()
            text = yield Call(
                lambda: self.model.complete(prompt), lambda: self.model.acomplete(prompt)
            )
            try:
                return parse_verdict(text, nonce)
            except VerdictParseError as exc:
                first = with_cut_note(exc, text)
            if quoted:
                raise VerdictParseError(
                    f"{first}; the one-word verdict call is not made: the judged answer or "
                    "memories hold a verdict word, so a one-word reply could be a quotation",
                    raw=first.raw,
                ) from None
        prompt = self.build_prompt(
            question, answer, reference, context, structured=False, short=True
        )
        check_call_allowed()
        text = yield Call(lambda: self.model.complete(prompt), lambda: self.model.acomplete(prompt))
        try:
            verdict = parse_short_verdict(text)
        except VerdictParseError as exc:
            second = with_cut_note(exc, text)
            if first is None:
                raise second from None
            raise VerdictParseError(f"{first}; then {second}", raw=second.raw) from None
        if first is not None:
            ENDPOINT_FORMATS.rescued_by_short(self.endpoint)
        return verdict

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
        short: bool = False,
    ) -> str:
        """The judge prompt for one answer.

        Args:
            question: The user's question.
            answer: The agent's answer.
            reference: The gold answer, when there is one.
            context: The memories the agent was shown.
            structured: Whether the verdict comes back as structured output.
            nonce: The free-text verdict nonce (a fresh one when None).
            short: Ask for the one-word verdict (``judges.protocol``).

        Returns:
            The prompt text.
        """
        if reference is None:
            raise MissingReferenceError(
                "ReferenceLLMJudge needs a reference answer; pass reference=... or use "
                "ReferenceFreeLLMJudge"
            )
        return reference_prompt(
            question, answer, reference, structured=structured, nonce=nonce, short=short
        )


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
        short: bool = False,
    ) -> str:
        """The judge prompt for one answer.

        Args:
            question: The user's question.
            answer: The agent's answer.
            reference: The gold answer, when there is one.
            context: The memories the agent was shown.
            structured: Whether the verdict comes back as structured output.
            nonce: The free-text verdict nonce (a fresh one when None).
            short: Ask for the one-word verdict (``judges.protocol``).

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
            short=short,
        )

    def judged_data(self, answer: str, context: Sequence[Memory] | None) -> list[str]:
        """The answer and the memories shown (see :meth:`LLMJudge.judged_data`).

        Args:
            answer: The agent's answer.
            context: The memories the judge is shown.

        Returns:
            Their texts.
        """
        return [answer, *(str(m.content) for m in context or ())]


def resolve_judge(
    judge: Any,
    llm: Any,
    reference: str | None,
    *,
    is_model: Callable[[Any], bool],
    reference_judge: Callable[[Any], Judge],
    free_judge: Callable[[Any, Sequence[str]], Judge],
    metadata_keys: Sequence[str] = (),
    missing: str = "no judge: pass judge=... or llm=...",
) -> Judge:
    """The judge of one query.

    Args:
        judge: A judge, a model of the framework, a function, or None.
        llm: The component's model, used when ``judge`` is None.
        reference: The query's reference answer, if any.
        is_model: Whether an object is a model of the framework.
        reference_judge: Wraps a model as a reference judge.
        free_judge: Wraps a model as a reference-free judge shown ``metadata_keys``.
        metadata_keys: Metadata keys a reference-free model judge is shown.
        missing: The message when neither ``judge`` nor ``llm`` is given.

    Returns:
        The judge.

    Raises:
        ConfigurationError: Neither ``judge`` nor ``llm`` is given.
        ConfigurationTypeError: ``judge`` is none of the accepted kinds.
    """
    if judge is None:
        judge = llm
    if judge is None:
        raise ConfigurationError(missing)
    if callable(getattr(judge, "score", None)) and callable(getattr(judge, "ascore", None)):
        neutral: Judge = judge  # anything with score / ascore
        return neutral
    if is_model(judge):
        if reference is not None:
            return reference_judge(judge)
        return free_judge(judge, metadata_keys)
    if callable(judge):
        fn: Callable[..., Any] = judge
        return CallableJudge(fn)
    raise ConfigurationTypeError(f"cannot use {type(judge).__name__} as a judge")
