"""One query's simulated agent and judge, run and paid for as a user would.

:class:`SimulatedQuery` is an engine evaluator ``evaluate(coalition, trial) -> score``
whose model calls go through the package's per-query :class:`~..core.judging.dispatch.AnswerCache`:
a deterministic reader (:attr:`EvidenceWorld.deterministic`) answers each prompt once
across trials, and the judge is asked once per distinct key of its signal
(:meth:`SimulatedJudge.key`; a ``noisy`` or ``mixed`` judge on every evaluation, its
verdict seeded by the evaluation's content, so any concurrency gives the same verdicts).
``agent_calls`` and ``judge_calls`` are what a user pays.

A reference-free judge (``full``, ``coalition``) that accepts two different normalised
answers to the query contradicts itself; from then on every evaluation raises
:class:`~..core.errors.InconsistentVerdictsError` (reason ``"accepted_two_answers"``), as
the package's task evaluator does, so the engine abstains. A reference judge (``reference``,
``noisy``) never raises: it may rightly accept several phrasings of the reference, and its
noise is for the verification rule to absorb.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from ..core.answers import note_answer
from ..core.errors import InconsistentVerdictsError
from ..core.judging.dispatch import AnswerCache
from ..core.memory import Memory
from .evaluator import same_answer
from .judging import JudgeSignal, SimulatedJudge
from .reader import TextReader
from .standin import StandInModel
from .world import EvidenceWorld, normalize_answer

__all__ = ["SimulatedQuery"]


class SimulatedQuery:
    """Evaluator of one query on the simulated world with a simulated judge (simulated).

    Agent answers and verdicts are cached per query, as the integrations cache them, and
    counted (:attr:`agent_calls`, :attr:`judge_calls`, :attr:`model_calls`).

    Args:
        world: The evidence world that answers.
        reference: The gold answer.
        case_id: The case's id (part of the seeds).
        context_ids: The ids of the full retrieved context.
        signal: The success signal (None: the reference judge).
        question: The question asked (seeds the judge's errors; None: the case id).
        seed: The run's seed (part of the judge's error seeds).
    """

    def __init__(
        self,
        world: EvidenceWorld,
        reference: str,
        *,
        case_id: str,
        context_ids: Iterable[str],
        signal: JudgeSignal | None = None,
        question: str | None = None,
        seed: int = 0,
    ) -> None:
        self.world = world
        self.reference = reference
        self.case_id = case_id
        self.signal = signal if signal is not None else JudgeSignal()
        self.judge = SimulatedJudge(
            world,
            reference,
            case_id=case_id,
            context_ids=context_ids,
            signal=self.signal,
            question=question,
            seed=seed,
        )
        self.model = StandInModel(TextReader(world, {}, case_id=case_id))
        """The world-mode stand-in agent."""
        self.cache = AnswerCache(deterministic=world.deterministic)
        self.other_calls = 0
        """Model calls made for the query outside agent and judge (e.g. a filter call)."""
        self.accepted: set[str] = set()
        """Normalised answers the judge has accepted."""
        self._lock = threading.Lock()

    def answer(self, ids: tuple[str, ...], trial: int) -> str:
        """The agent's answer on the coalition ``ids`` (deduplicated).

        Args:
            ids: The ids of the memories the agent sees.
            trial: The trial index.

        Returns:
            The answer (one agent call per distinct prompt and trial).
        """
        prompt = "\x1f".join(sorted(ids))
        return self.cache.answer(prompt, trial, lambda: self.model.read(ids, trial))

    def __call__(self, coalition: tuple[Memory, ...], trial: int) -> float:
        """Score ``coalition`` on trial ``trial``.

        Args:
            coalition: The memories kept in the context.
            trial: The trial index (seeds the sampled answer).

        Returns:
            The success signal's verdict, 0.0 or 1.0 (agent and judge calls counted).
        """
        ids = tuple(m.id for m in coalition)
        text = self.answer(ids, trial)
        note_answer(text, same=same_answer)  # as the package's task evaluator does
        key = self.judge.key(text, ids, trial)
        verdict = self.cache.judge(key, lambda: float(self.judge.accepts(text, ids, trial)))
        if self.signal.reference_free:
            self._check_consistent(text, verdict)
        return verdict

    def _check_consistent(self, answer: str, verdict: float) -> None:
        with self._lock:
            if verdict > 0:
                self.accepted.add(normalize_answer(answer))
            accepted = sorted(self.accepted)
        if len(accepted) > 1:
            raise InconsistentVerdictsError(
                f"the judge accepted {len(accepted)} different answers to one query",
                reason="accepted_two_answers",
            )

    @property
    def agent_calls(self) -> int:
        """Agent calls made (distinct agent prompts)."""
        return self.cache.stats.agent_calls

    @property
    def judge_calls(self) -> int:
        """Judge calls made (distinct verdict keys)."""
        return self.cache.stats.judge_calls

    def charge(self, calls: int) -> None:
        """Count model calls a method made for this query outside agent and judge.

        Args:
            calls: The number of calls (a one-call filter: 1).
        """
        with self._lock:
            self.other_calls += int(calls)

    @property
    def model_calls(self) -> int:
        """Agent, judge and other calls made (what a user pays for this query)."""
        return self.agent_calls + self.judge_calls + self.other_calls
