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
  verdict is flipped independently with probability e, seeded by (query, answer, call);
  the n-th call about an answer is call n, so asking again gives a fresh verdict.
- ``coalition``: a reference-free judge shown only the coalition. It knows the true
  answer when the coalition holds a memory that states it (a claim of the reference);
  otherwise it accepts the answer the coalition's own evidence favours. Deleting the
  evidence against an answer therefore makes that answer pass.

A judge is consulted as a user would pay for it (:meth:`SimulatedJudge.key`): a judge whose
input does not depend on the coalition (``reference``, ``full``) is asked once per distinct
normalised answer; ``coalition`` once per (answer, coalition); ``noisy`` on every evaluation
(caching a sampled judge's verdict would freeze its errors for the whole query: one flip on
the right answer would fail every coalition that gives it), the n-th call about an answer
being call n.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..core.errors import ConfigurationError
from .world import EvidenceWorld, exact_match_score, normalize_answer

__all__ = ["JUDGE_SIGNALS", "JudgeKind", "JudgeSignal", "SimulatedJudge"]

JudgeKind = Literal["reference", "full", "noisy", "coalition"]
JUDGE_SIGNALS: tuple[str, ...] = ("reference", "full:Q", "noisy:E", "coalition")
"""The signal syntax accepted by :meth:`JudgeSignal.parse`."""


class JudgeSignal(BaseModel):
    """Which simulated judge scores the answers (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: JudgeKind = "reference"
    """The judge's semantics."""
    level: float | None = Field(default=None, ge=0.0, le=1.0)
    """q of ``full``, e of ``noisy``; None for ``reference`` and ``coalition``."""

    @model_validator(mode="after")
    def _level_matches_kind(self) -> JudgeSignal:
        needs = self.kind in ("full", "noisy")
        if needs and self.level is None:
            raise ValueError(f"judge {self.kind!r} needs a level in [0, 1] ({self.kind}:X)")
        if not needs and self.level is not None:
            raise ValueError(f"judge {self.kind!r} takes no level")
        return self

    @classmethod
    def parse(cls, text: str) -> JudgeSignal:
        """Parse a judge signal: ``reference``, ``full:q``, ``noisy:e`` or ``coalition``.

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
        if kind not in ("reference", "full", "noisy", "coalition"):
            raise ConfigurationError(
                f"unknown judge {text!r}; expected one of {', '.join(JUDGE_SIGNALS)}"
            )
        if not sep:
            return cls(kind=kind)  # type: ignore[arg-type]
        try:
            value = float(level)
        except ValueError:
            raise ConfigurationError(
                f"judge {text!r}: {level!r} is not a number in [0, 1]"
            ) from None
        return cls(kind=kind, level=value)  # type: ignore[arg-type]

    def __str__(self) -> str:
        return self.kind if self.level is None else f"{self.kind}:{self.level:g}"

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
        signal: The judge's semantics (reference, full, noisy or coalition).
    """

    def __init__(
        self,
        world: EvidenceWorld,
        reference: str,
        *,
        case_id: str,
        context_ids: Iterable[str],
        signal: JudgeSignal,
    ) -> None:
        self.world = world
        self.reference = reference
        self.case_id = case_id
        self.context_ids = tuple(context_ids)
        self.signal = signal
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

    def key(self, answer: str, coalition: Iterable[str], call: int) -> Hashable:
        """What the judge's verdict depends on.

        One model call per distinct key (``call``: the index of this call about the answer, which
        only ``noisy`` reads).

        Args:
            answer: The agent's answer.
            coalition: The ids of the memories the agent saw.
            call: The index of this call about the answer.

        Returns:
            The cache key of the verdict.
        """
        norm = normalize_answer(answer)
        if self.signal.kind == "noisy":
            return (norm, int(call))
        if self.signal.kind == "coalition":
            return (norm, frozenset(coalition))
        return norm

    def accepts(self, answer: str, coalition: Iterable[str], call: int) -> bool:
        """The verdict on ``answer`` given by the agent on ``coalition``.

        ``call`` is the index of this call about the answer.

        Args:
            answer: The agent's answer.
            coalition: The ids of the memories the agent saw.
            call: The index of this call about the answer.

        Returns:
            Whether the judge accepts the answer.
        """
        norm = normalize_answer(answer)
        kind = self.signal.kind
        if kind == "reference":
            return bool(exact_match_score(answer, self.reference))
        if kind == "full":
            return norm == (self._fooled_by if self._fooled_by is not None else self._truth)
        if kind == "noisy":
            draw = _unit(self.case_id, norm, int(call), "noisy-judge-flip")
            flip = draw < (self.signal.level or 0.0)
            return (norm == self._truth) != flip
        present = sorted(set(coalition))
        if self._states_truth.intersection(present):
            return norm == self._truth
        return norm == normalize_answer(self.world.favoured(present, case_id=self.case_id))
