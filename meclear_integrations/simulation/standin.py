"""The one offline stand-in model: a prompt in, a reply out (a simulation, not an LLM).

:class:`StandInModel` is the single framework-free object behind every offline model of the
package: the LangChain chat model and the LlamaIndex LLM
(:class:`~meclear_integrations.langchain.SimulatedChatModel`,
:class:`~meclear_integrations.llama_index.SimulatedLLM`) only convert messages to a prompt and
back; the simulated evaluators, the scripted admission model, the soak's fault injector, the
benchmark's offline text reader and its OpenAI-compatible server are configurations of it.
Its reply to a prompt, in order:

1. *Faults* (optional, :mod:`.faults`): a call the fault plan picks raises the fault's
   exception or returns its text instead of a reply.
2. *Script* (optional): a prompt the script handles (the ConMem admission tasks: probes,
   validation, responses, A/B judge, auditor, baselines' features;
   :class:`~meclear_integrations.admission.scripted.AdmissionScript`) gets the script's reply.
3. *Judge*: a prompt with a ``<candidate_answer>`` block is one of the package's judge
   prompts; the reader grades the candidate, and the verdict is written in the judges'
   protocol (a reason, then ``VERDICT <nonce>: CORRECT`` / ``INCORRECT`` with the prompt's
   nonce, :mod:`meclear_integrations.judges.protocol`), or, for a structured-output judge
   prompt (no nonce), as the JSON object ``{"reason", "correct"}``.
4. *Answer*: any other prompt is answered by the reader.

The reader decides what the model knows. Two exist:

- *World mode* (:meth:`StandInModel.from_case`, :class:`~.reader.TextReader`): it recognises
  which known memory texts a prompt contains and answers as the simulated evidence world
  (:class:`~.world.EvidenceWorld`) would on them. Tests, cookbooks, ``meclear demo`` /
  ``soak`` and the simulated benchmark use it.
- *Text-reading mode* (``meclear_bench.text_reader.TextReading``): it reads only the prompt's
  text (question words, stated answers, a vote) and knows no world. The text reader is a mode
  of this model rather than a world it reads from because it has no world to read: a world
  is what decides answers from memory ids, and the text reader decides from the words. It
  stays in the benchmark package (``meclear bench --agent-model meclear-text-reader``) since
  its reading rules (lemmas, declarative templates) are the harness's, not the library's,
  and the library never imports the harness; the dispatch and the reply formats it shares
  with world mode live here.

Every figure it produces is SIMULATED (or SCRIPTED for the admission script).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..judges.protocol import read_nonce, verdict_reply
from .faults import Faults
from .reader import TextReader, fenced_block

if TYPE_CHECKING:
    from .world import EvidenceWorld

__all__ = ["CoalitionReader", "Reader", "Reply", "Script", "StandInModel", "WorldCase"]


class WorldCase(Protocol):
    """What :meth:`StandInModel.from_case` reads of a case (``SimulatedCase`` is one)."""

    @property
    def case_id(self) -> str:
        """The case's id."""
        ...

    @property
    def world(self) -> EvidenceWorld:
        """The evidence world that decides every answer."""
        ...

    @property
    def texts(self) -> dict[str, str]:
        """Memory id -> memory text."""
        ...


@dataclass(frozen=True)
class Reply:
    """What the stand-in replies to one prompt."""

    text: str
    """The reply text (an answer, a verdict in the judges' protocol, a script's JSON)."""
    verdict: bool | None = None
    """For a judge prompt: the verdict (:meth:`structured` is built from it)."""
    reason: str = ""
    """For a judge prompt: the one-line reason."""

    def structured(self) -> str:
        """The JSON object of a structured-output judge reply: ``{"reason", "correct"}``."""
        return json.dumps({"reason": self.reason, "correct": bool(self.verdict)})


@runtime_checkable
class Reader(Protocol):
    """What the stand-in knows: answers to answer prompts, verdicts on judge prompts."""

    def answer(self, prompt: str) -> str:
        """The answer to a prompt that is not a judge prompt.

        Args:
            prompt: The prompt.

        Returns:
            The answer text.
        """
        ...

    def judge(self, prompt: str, candidate: str) -> tuple[bool, str]:
        """The verdict on ``candidate``, the candidate answer of the judge prompt ``prompt``.

        Args:
            prompt: The judge prompt.
            candidate: The text of its ``<candidate_answer>`` block.

        Returns:
            (the verdict, its one-line reason).
        """
        ...


@runtime_checkable
class CoalitionReader(Reader, Protocol):
    """A reader that also answers on memory ids directly (world mode)."""

    def read(self, memory_ids: Iterable[str], trial: int) -> str:
        """The answer on the memories ``memory_ids`` at trial ``trial``.

        Args:
            memory_ids: The ids of the memories seen.
            trial: The trial index.

        Returns:
            The answer text.
        """
        ...


class Script(Protocol):
    """Fixed replies to a family of prompts (e.g. the ConMem admission tasks)."""

    def handles(self, prompt: str) -> bool:
        """Whether ``prompt`` is one of the script's prompts.

        Args:
            prompt: The prompt.

        Returns:
            True when :meth:`reply` answers it.
        """
        ...

    def reply(self, prompt: str) -> str:
        """The script's reply to ``prompt``.

        Args:
            prompt: The prompt.

        Returns:
            The reply text.

        Raises:
            ValueError: The prompt is none of the script's prompts.
        """
        ...


class StandInModel:
    """The offline stand-in model (module docstring): ``reply(prompt) -> str``, sync and async.

    Args:
        reader: What the model knows (world mode: a :class:`~.reader.TextReader`). None: only
            the script answers (every other prompt is an error).
        script: Fixed replies to a family of prompts, tried before the reader (None: none).
        faults: Which calls fault and how (None: none). With faults, :meth:`areply` first
            yields to the event loop once, so concurrent calls interleave as at a provider.

    Raises:
        ValueError: Neither a reader nor a script is given.

    Example:
        >>> from meclear_integrations.simulation import StandInModel, redundant_harm_example
        >>> case = redundant_harm_example()
        >>> model = StandInModel.from_case(case)
        >>> shown = " ".join(m.content for m in case.memories if m.id == "g1")
        >>> model.reply(f"Memories: {shown} Question: {case.query}")
        'December 2023'
    """

    def __init__(
        self,
        reader: Reader | None = None,
        *,
        script: Script | None = None,
        faults: Faults | None = None,
    ) -> None:
        if reader is None and script is None:
            raise ValueError("a stand-in model needs a reader or a script")
        self.reader = reader
        self.script = script
        self.faults = faults
        self._coalition = reader if isinstance(reader, CoalitionReader) else None
        self._calls = 0
        self._faults_injected = 0
        self._lock = threading.Lock()

    @classmethod
    def from_case(cls, case: WorldCase, *, faults: Faults | None = None) -> StandInModel:
        """The world-mode stand-in of a simulated case (its world, memory texts and id).

        Args:
            case: A case such as ``redundant_harm_example()``.
            faults: Which calls fault (None: none).

        Returns:
            The model.
        """
        reader = TextReader(case.world, case.texts, case_id=case.case_id)
        return cls(reader, faults=faults)

    @property
    def calls(self) -> int:
        """Prompts received so far (faulted ones included)."""
        return self._calls

    @property
    def faults_injected(self) -> int:
        """Faults injected so far."""
        return self._faults_injected

    def respond(self, prompt: str) -> Reply:
        """The reply to ``prompt`` with its verdict when it is a judge prompt.

        Args:
            prompt: The prompt.

        Returns:
            The reply.

        Raises:
            BaseException: The fault drawn for this call, when it is an exception.
            ValueError: Only a script answers and ``prompt`` is none of its prompts.
        """
        with self._lock:
            self._calls += 1
            number = self._calls
        fault = self.faults.draw(prompt, number) if self.faults is not None else None
        if fault is not None:
            with self._lock:
                self._faults_injected += 1
            if isinstance(fault, BaseException):
                raise fault
            return Reply(text=fault)
        return self._respond(prompt)

    def _respond(self, prompt: str) -> Reply:
        if self.script is not None and (self.reader is None or self.script.handles(prompt)):
            return Reply(text=self.script.reply(prompt))
        assert self.reader is not None  # the constructor requires a reader or a script
        candidate = fenced_block("candidate_answer", prompt)
        if candidate is None:
            return Reply(text=self.reader.answer(prompt))
        correct, reason = self.reader.judge(prompt, candidate)
        reply = Reply(text="", verdict=correct, reason=reason)
        nonce = read_nonce(prompt)
        text = reply.structured() if nonce is None else verdict_reply(nonce, correct, reason=reason)
        return Reply(text=text, verdict=correct, reason=reason)

    def reply(self, prompt: str) -> str:
        """The reply text to ``prompt`` (module docstring).

        Args:
            prompt: The prompt.

        Returns:
            The reply text.
        """
        return self.respond(prompt).text

    async def areply(self, prompt: str) -> str:
        """:meth:`reply` on the event loop.

        Args:
            prompt: The prompt.

        Returns:
            The reply text.
        """
        if self.faults is not None:
            await asyncio.sleep(0)
        return self.reply(prompt)

    def complete(self, prompt: str) -> str:
        """:meth:`reply` under the package's text-model name (``TextModel.complete``).

        Args:
            prompt: The prompt text.

        Returns:
            The reply text.
        """
        return self.reply(prompt)

    async def acomplete(self, prompt: str) -> str:
        """:meth:`areply` under the package's text-model name (``TextModel.acomplete``).

        It answers through :meth:`complete`, so a subclass that overrides :meth:`complete`
        (a slow model, say) changes both paths.

        Args:
            prompt: The prompt text.

        Returns:
            The reply text.
        """
        if self.faults is not None:
            await asyncio.sleep(0)
        return self.complete(prompt)

    def read(self, memory_ids: Iterable[str], trial: int) -> str:
        """World mode: the answer on the memories ``memory_ids`` at trial ``trial`` (no prompt).

        Args:
            memory_ids: The ids of the memories seen.
            trial: The trial index (seeds the sampled answer).

        Returns:
            The answer text.

        Raises:
            TypeError: The reader answers from prompts only (not world mode).
        """
        if self._coalition is None:
            raise TypeError("only a world-mode stand-in answers on memory ids")
        return self._coalition.read(memory_ids, trial)
