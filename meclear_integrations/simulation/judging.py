"""Simulated judges: the success signal an evaluator gives, from a gold reference or none.

Every signal needs nothing beyond a case's world, reference and frozen context, so any
case file runs under each. Normative semantics (seeded, so every run is reproducible):

- ``reference``: a verdict is normalised exact match of the answer with the reference.
- ``full:q`` (q in [0, 1]): a reference-free judge shown the whole retrieved context. Per
  query (seeded by the case id) it knows the true answer with probability q; otherwise it
  accepts the answer the whole context's evidence favours under the world's own rule
  (:meth:`EvidenceWorld.favoured`) and rejects every other one, so it is fooled exactly
  when the faults dominate the context.
- ``noisy:e`` (e in [0, 1]): a judge that knows the true answer but whose every call's
  verdict is flipped independently with probability e. The flip is seeded by what the call
  is about (question, normalised answer, the coalition the agent saw, the trial index and
  the run's seed), never by the order of the calls, so a run gives the same verdicts at any
  concurrency; a later trial of the same coalition is a fresh verdict.
- ``persistent:e``: a judge at temperature 0 that repeats its mistakes. The verdict on a
  given question and normalised answer is wrong with probability e and the same on every
  call (seeded by question, answer and run seed): asking again never fixes it.
- ``mixed:p:e``: both, a persistent error with probability p and on top of it a fresh
  per-call flip with probability e.
- ``coalition``: a reference-free judge shown only the coalition. It knows the true
  answer when the coalition holds a memory that states it (a claim of the reference);
  otherwise it accepts the answer the coalition's own evidence favours. Deleting the
  evidence against an answer therefore makes that answer pass.

A judge is consulted as a user would pay for it (:meth:`SimulatedJudge.key`): a judge whose
input does not depend on the coalition (``reference``, ``full``) is asked once per distinct
normalised answer; ``coalition`` once per (answer, coalition); ``persistent`` once per
distinct normalised answer (its verdict never changes); ``noisy`` and ``mixed`` on every
evaluation, one call per distinct (answer, coalition, trial) (caching a sampled judge's
verdict would freeze its errors for the whole query: one flip on the right answer would
fail every coalition that gives it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..core.errors import ConfigurationError
from .world import EvidenceWorld, exact_match_score, normalize_answer

__all__ = ["JUDGE_SIGNALS", "JudgeKind", "JudgeSignal", "SimulatedJudge"]

JudgeKind = Literal["reference", "full", "noisy", "persistent", "mixed", "coalition"]
JUDGE_SIGNALS: tuple[str, ...] = (
    "reference",
    "full:Q",
    "noisy:E",
    "persistent:E",
    "mixed:P:E",
    "coalition",
)
"""The signal syntax accepted by :meth:`JudgeSignal.parse`."""


class JudgeSignal(BaseModel):
    """Which simulated judge scores the answers (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: JudgeKind = "reference"
    """The judge's semantics."""
    level: float | None = Field(default=None, ge=0.0, le=1.0)
    """q of ``full``, e of ``noisy`` and ``persistent``, p (the persistent error) of
    ``mixed``; None for ``reference`` and ``coalition``."""
    per_call: float | None = Field(default=None, ge=0.0, le=1.0)
    """e of ``mixed`` (the per-call flip on top of the persistent error); None otherwise."""

    @model_validator(mode="after")
    def _level_matches_kind(self) -> JudgeSignal:
        needs = self.kind in ("full", "noisy", "persistent", "mixed")
        if needs and self.level is None:
            raise ValueError(f"judge {self.kind!r} needs a level in [0, 1] ({self.kind}:X)")
        if not needs and self.level is not None:
            raise ValueError(f"judge {self.kind!r} takes no level")
        if (self.kind == "mixed") != (self.per_call is not None):
            raise ValueError("only judge 'mixed' takes a per-call level (mixed:P:E)")
        return self

    @property
    def persistent_error(self) -> float:
        """Probability that the verdict on a (question, answer) is wrong on every call."""
        return (self.level or 0.0) if self.kind in ("persistent", "mixed") else 0.0

    @property
    def call_error(self) -> float:
        """Probability that one call's verdict is flipped afresh."""
        if self.kind == "noisy":
            return self.level or 0.0
        return (self.per_call or 0.0) if self.kind == "mixed" else 0.0

    @property
    def per_evaluation(self) -> bool:
        """Each evaluation (answer, coalition, trial) gets its own verdict (a sampled judge)."""
        return self.call_error > 0 or self.kind == "noisy"

    @classmethod
    def parse(cls, text: str) -> JudgeSignal:
        """Parse a judge signal (``reference``, ``full:q``, ``noisy:e``, ``persistent:e``, ...).

        The signals: ``reference``, ``full:q``, ``noisy:e``, ``persistent:e``, ``mixed:p:e``,
        ``coalition``.

        Args:
            text: The signal as written on the command line.

        Returns:
            The signal.

        Raises:
            ConfigurationError: The text names no signal or its level is not a number in
                [0, 1] (a ``ValueError``; pydantic's ``ValidationError`` when the level is
                missing or not allowed).

        Example:
            >>> JudgeSignal.parse("noisy:0.1").level
            0.1
        """
        kind, sep, level = text.strip().partition(":")
        if kind not in ("reference", "full", "noisy", "persistent", "mixed", "coalition"):
            raise ConfigurationError(
                f"unknown judge {text!r}; expected one of {', '.join(JUDGE_SIGNALS)}"
            )
        if not sep:
            return cls(kind=kind)  # type: ignore[arg-type]
        parts = level.split(":")
        if len(parts) != (2 if kind == "mixed" else 1):
            raise ConfigurationError(f"judge {text!r}: expected one of {', '.join(JUDGE_SIGNALS)}")
        try:
            values = [float(x) for x in parts]
        except ValueError:
            raise ConfigurationError(
                f"judge {text!r}: {level!r} is not a number in [0, 1]"
            ) from None
        if kind == "mixed":
            return cls(kind="mixed", level=values[0], per_call=values[1])
        return cls(kind=kind, level=values[0])  # type: ignore[arg-type]

    def __str__(self) -> str:
        if self.level is None:
            return self.kind
        if self.per_call is not None:
            return f"{self.kind}:{self.level:g}:{self.per_call:g}"
        return f"{self.kind}:{self.level:g}"

    @property
    def reference_free(self) -> bool:
        """The judge decides what is true without the gold reference (``full``, ``coalition``).

        Accepting two different answers to one query contradicts itself.
        """
        return self.kind in ("full", "coalition")


def _unit(*parts: object) -> float:
    """A seeded draw in [0, 1) from ``parts``."""
    key = "\x1f".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "little") / 2.0**64


class SimulatedJudge:
    """The verdicts of one query's simulated judge under ``signal``.

    Args:
        world: The evidence world (what the judge may know of the truth).
        reference: The gold answer.
        case_id: The case's id (part of the verdict seed).
        context_ids: The ids of the full retrieved context.
        signal: The judge's semantics (see the module docstring).
        question: The question asked (seeds the judge's errors; None: the case id).
        seed: The run's seed (part of every error's seed).
    """

    def __init__(
        self,
        world: EvidenceWorld,
        reference: str,
        *,
        case_id: str,
        context_ids: Iterable[str],
        signal: JudgeSignal,
        question: str | None = None,
        seed: int = 0,
    ) -> None:
        self.world = world
        self.reference = reference
        self.case_id = case_id
        self.context_ids = tuple(context_ids)
        self.signal = signal
        self.question = question if question is not None else case_id
        self.seed = int(seed)
        self._truth = normalize_answer(reference)
        self._fooled_by: str | None = None
        if signal.kind == "full" and _unit(case_id, "full-judge-knows") >= (signal.level or 0.0):
            self._fooled_by = normalize_answer(world.favoured(self.context_ids, case_id=case_id))
        self._states_truth = frozenset(
            mid
            for mid, claim in world.claims.items()
            if normalize_answer(claim.answer) == self._truth
        )

    @property
    def fooled(self) -> bool:
        """``full``: this query's judge does not know the true answer."""
        return self._fooled_by is not None

    def key(self, answer: str, coalition: Iterable[str], trial: int) -> Hashable:
        """What the judge's verdict depends on: one model call per distinct key.

        Args:
            answer: The agent's answer.
            coalition: The ids of the memories the agent saw.
            trial: The trial index of the evaluation (read by a per-call noisy judge only).

        Returns:
            The cache key of the verdict.
        """
        norm = normalize_answer(answer)
        if self.signal.per_evaluation:
            return (norm, frozenset(coalition), int(trial))
        if self.signal.kind == "coalition":
            return (norm, frozenset(coalition))
        return norm

    def persistent_flip(self, answer: str) -> bool:
        """Whether this judge is wrong on ``answer`` on every call (``persistent``, ``mixed``).

        Args:
            answer: The agent's answer.

        Returns:
            True when the verdict on the (question, normalised answer) is always flipped.
        """
        rate = self.signal.persistent_error
        if rate <= 0:
            return False
        draw = _unit(self.seed, self.question, normalize_answer(answer), "persistent-judge")
        return draw < rate

    def call_flip(self, answer: str, coalition: Iterable[str], trial: int) -> bool:
        """Whether this one call's verdict is flipped afresh (``noisy``, ``mixed``).

        Seeded by content (question, answer, coalition, trial, run seed), never by call order.

        Args:
            answer: The agent's answer.
            coalition: The ids of the memories the agent saw.
            trial: The trial index of the evaluation.

        Returns:
            True when the call's verdict is flipped.
        """
        rate = self.signal.call_error
        if rate <= 0:
            return False
        present = "\x1e".join(sorted(set(coalition)))
        draw = _unit(
            self.seed,
            self.question,
            self.case_id,
            normalize_answer(answer),
            present,
            int(trial),
            "noisy-judge-flip",
        )
        return draw < rate

    def accepts(self, answer: str, coalition: Iterable[str], trial: int) -> bool:
        """The verdict on ``answer`` given by the agent on ``coalition`` at trial ``trial``.

        Args:
            answer: The agent's answer.
            coalition: The ids of the memories the agent saw.
            trial: The trial index of the evaluation.

        Returns:
            Whether the judge accepts the answer.
        """
        norm = normalize_answer(answer)
        kind = self.signal.kind
        if kind == "reference":
            return bool(exact_match_score(answer, self.reference))
        if kind == "full":
            return norm == (self._fooled_by if self._fooled_by is not None else self._truth)
        if kind in ("noisy", "persistent", "mixed"):
            flip = self.persistent_flip(answer) != self.call_flip(answer, coalition, trial)
            return (norm == self._truth) != flip
        present = sorted(set(coalition))
        if self._states_truth.intersection(present):
            return norm == self._truth
        return norm == normalize_answer(self.world.favoured(present, case_id=self.case_id))
