"""The simulated evidence world: a documented stand-in for an LLM task agent.

This is a simulation, not a model. A world maps memory ids to claims
``{answer, weight}``; memories without a claim are background. For a coalition S the
reader computes support(a) over the present memories claiming a (sum of weights, or their
maximum when ``aggregate == "max"``), then:

- no support at all: it answers ``abstain``;
- with ``abstain_weight`` set, ``abstain`` also competes as one more answer with that
  support (a reader that will not answer from thin evidence);
- ``temperature == 0``: it answers argmax support; a tie is broken uniformly at random,
  afresh for every trial (``ties="trial"``) or once per coalition (``ties="prompt"``: the
  same prompt always gets the same answer, as from a temperature-0 model);
- ``temperature > 0``: it samples a with probability proportional to exp(support(a) / T).

Randomness is seeded from (case, coalition, trial) (from (case, coalition) for a
deterministic reader), so every run is reproducible. Scores come from
:func:`exact_match_score`: 1 when the normalised answer equals the normalised reference,
else 0.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import math
from collections.abc import Iterable, Mapping
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..judges.equivalence import normalize_answer

__all__ = ["Claim", "EvidenceWorld", "exact_match_score", "normalize_answer"]


def exact_match_score(answer: str, reference: str) -> float:
    """1.0 when the normalised answer equals the normalised reference, else 0.0.

    Args:
        answer: The agent's answer.
        reference: The gold answer.

    Returns:
        1.0 or 0.0.

    Example:
        >>> exact_match_score("December 2023.", "december 2023")
        1.0
    """
    return 1.0 if normalize_answer(answer) == normalize_answer(reference) else 0.0


class Claim(BaseModel):
    """What one memory asserts about the query's answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    answer: str
    """The answer this memory supports."""
    weight: float = Field(default=1.0, ge=0.0)
    """Strength of the support."""


class EvidenceWorld(BaseModel):
    """Claims of the memories of one query, and how the simulated reader aggregates them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    claims: dict[str, Claim] = Field(default_factory=dict)
    """Memory id -> claim; memories not listed are background."""
    temperature: float = Field(default=0.0, ge=0.0)
    """0: argmax reader; > 0: softmax sampling over support."""
    abstain: str = "I don't know"
    """Answer given when no present memory makes a claim."""
    aggregate: Literal["sum", "max"] = "sum"
    """How weights of memories claiming the same answer combine."""
    abstain_weight: float | None = Field(default=None, ge=0.0)
    """Support of ``abstain`` once some memory makes a claim: the reader answers only when
    an answer's support beats it (argmax), or samples ``abstain`` with it (temperature >
    0). None: ``abstain`` only when no present memory makes a claim."""
    ties: Literal["trial", "prompt"] = "trial"
    """Tie-breaking at temperature 0: a fresh draw per trial, or one per coalition (a
    deterministic reader: every trial of a prompt gets the same answer)."""

    @property
    def deterministic(self) -> bool:
        """Every trial of a coalition gets the same answer (temperature 0, ties by prompt)."""
        return self.temperature == 0 and self.ties == "prompt"

    def support(self, memory_ids: Iterable[str]) -> dict[str, float]:
        """The support of every answer claimed by a present memory.

        Args:
            memory_ids: The ids of the memories present in the coalition.

        Returns:
            support(a) per answer a.
        """
        support: dict[str, float] = {}
        for mid in memory_ids:
            claim = self.claims.get(mid)
            if claim is None:
                continue
            if self.aggregate == "max":
                support[claim.answer] = max(support.get(claim.answer, 0.0), claim.weight)
            else:
                support[claim.answer] = support.get(claim.answer, 0.0) + claim.weight
        return support

    def _competing(self, memory_ids: Iterable[str]) -> dict[str, float]:
        """Support of every answer the reader may give (``abstain`` included when it competes).

        Empty when no present memory makes a claim.
        """
        support = self.support(memory_ids)
        if support and self.abstain_weight is not None:
            support[self.abstain] = support.get(self.abstain, 0.0) + self.abstain_weight
        return support

    def distribution(self, memory_ids: Iterable[str]) -> dict[str, float]:
        """The reader's answer distribution for a coalition (exact, no sampling).

        Args:
            memory_ids: The ids of the memories present.

        Returns:
            Answer -> probability (the abstention when nothing is claimed).
        """
        support = self._competing(memory_ids)
        if not support:
            return {self.abstain: 1.0}
        if self.temperature == 0:
            return _argmax(support)
        answers = sorted(support)
        logits = np.array([support[a] / self.temperature for a in answers])
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        return {a: float(p) for a, p in zip(answers, probs, strict=True)}

    def answer(self, memory_ids: Iterable[str], *, case_id: str = "", trial: int = 0) -> str:
        """One simulated agent answer, seeded by (case, coalition, trial).

        The seed is (case, coalition) alone when the reader is :attr:`deterministic`.

        Args:
            memory_ids: The ids of the memories present.
            case_id: The case's id (part of the seed).
            trial: The trial index.

        Returns:
            The answer.
        """
        ids = sorted(set(memory_ids))
        return _draw(self.distribution(ids), case_id, ids, None if self.deterministic else trial)

    def favoured(self, memory_ids: Iterable[str], *, case_id: str = "") -> str:
        """The answer the coalition's evidence favours under the world's rule.

        Argmax support (``abstain`` when nothing is claimed or, with ``abstain_weight``, when no
        answer beats it), a tie broken once per coalition, whatever the temperature.

        Args:
            memory_ids: The ids of the memories present.
            case_id: The case's id (breaks ties).

        Returns:
            The favoured answer.
        """
        ids = sorted(set(memory_ids))
        support = self._competing(ids)
        dist = _argmax(support) if support else {self.abstain: 1.0}
        return _draw(dist, case_id, ids, None)

    def favours(self, memory_ids: Iterable[str], reference: str) -> bool:
        """Whether the coalition's evidence favours ``reference`` outright (no tie).

        The reference's support (normalised answers) is strictly larger than every other
        answer's, ``abstain`` included when it competes; a context with no claim favours
        nothing. Unlike a sampled answer this does not move with the reader's temperature.

        Args:
            memory_ids: The ids of the memories present.
            reference: The gold answer.

        Returns:
            True when the reference alone has the largest support.
        """
        support: dict[str, float] = {}
        for answer, weight in self._competing(set(memory_ids)).items():
            norm = normalize_answer(answer)
            support[norm] = support.get(norm, 0.0) + weight
        truth = normalize_answer(reference)
        if truth not in support:
            return False
        return all(w < support[truth] - 1e-12 for a, w in support.items() if a != truth)

    def expected_score(self, memory_ids: Iterable[str], reference: str) -> float:
        """E[score] of a coalition under the exact-match judge (over the reader's draws).

        Args:
            memory_ids: The ids of the memories present.
            reference: The gold answer.

        Returns:
            The probability that a draw matches ``reference``.
        """
        return sum(
            p for a, p in self.distribution(memory_ids).items() if exact_match_score(a, reference)
        )

    def correct_probability(
        self, memory_ids: Iterable[str], reference: str, *, case_id: str = ""
    ) -> float:
        """P(a fresh trial on the coalition answers ``reference``).

        :meth:`expected_score`, or 0 / 1 for a deterministic reader, whose answer to a prompt is
        fixed.

        Args:
            memory_ids: The ids of the memories present.
            reference: The gold answer.
            case_id: The case's id (part of the seed of a deterministic reader).

        Returns:
            The probability, in [0, 1].
        """
        ids = sorted(set(memory_ids))
        if self.deterministic:
            return exact_match_score(self.answer(ids, case_id=case_id), reference)
        return self.expected_score(ids, reference)

    @classmethod
    def from_claims(
        cls, claims: Mapping[str, tuple[str, float]], **kwargs: object
    ) -> EvidenceWorld:
        """Build from ``{memory_id: (answer, weight)}``.

        Args:
            claims: Memory id -> (the answer it supports, its weight).
            **kwargs: The other fields of :class:`EvidenceWorld`.

        Returns:
            The world.

        Example:
            >>> world = EvidenceWorld.from_claims({"g": ("Paris", 1.0), "f": ("Rome", 2.0)})
            >>> world.answer(["g", "f"]), world.answer(["g"])
            ('Rome', 'Paris')
        """
        return cls(
            claims={mid: Claim(answer=a, weight=w) for mid, (a, w) in claims.items()},
            **kwargs,  # type: ignore[arg-type]
        )


def _argmax(support: dict[str, float]) -> dict[str, float]:
    top = max(support.values())
    winners = sorted(a for a in support if math.isclose(support[a], top, abs_tol=1e-12))
    return {a: 1.0 / len(winners) for a in winners}


def _draw(dist: dict[str, float], case_id: str, ids: list[str], trial: int | None) -> str:
    if len(dist) == 1:
        return next(iter(dist))
    answers = list(dist)
    probs = list(dist.values())
    if any(p < 0 for p in probs) or abs(math.fsum(probs) - 1.0) > _P_TOLERANCE:
        # numpy's own checks and errors (never reached from the world's distributions)
        rng = np.random.default_rng(_seed(case_id, ids, trial))
        return str(answers[int(rng.choice(len(answers), p=probs))])
    return str(answers[_choice(probs, _uniform(case_id, tuple(ids), trial))])


@functools.lru_cache(maxsize=1 << 15)
def _uniform(case_id: str, ids: tuple[str, ...], trial: int | None) -> float:
    """The uniform draw seeded by (case, coalition, trial), kept for the next ask.

    A benchmark asks the same coalition again (each method, each repeat): building the
    seeded generator is most of a draw's cost.
    """
    return float(np.random.default_rng(_seed(case_id, list(ids), trial)).random())


_P_TOLERANCE = 1e-9
"""Well inside numpy's ``sqrt(eps)`` tolerance: a distribution passing it passes numpy's."""


def _choice(probs: list[float], uniform: float) -> int:
    """``Generator.choice(len(probs), p=probs)`` given the uniform draw it takes, in Python.

    numpy draws one ``random()`` and returns ``searchsorted(cdf, u, side="right")`` with
    ``cdf = cumsum(p) / cumsum(p)[-1]``; the running sum below adds in the same order, so
    the index (and every seeded answer) is the same, at half the cost of the call (the
    world draws once per evaluator call).
    """
    cdf = list(itertools.accumulate(probs))  # left to right, as numpy's cumsum adds
    return bisect.bisect_right([c / cdf[-1] for c in cdf], uniform)


def _seed(case_id: str, ids: list[str], trial: int | None) -> int:
    tail = [] if trial is None else [str(trial)]
    key = "\x1f".join([case_id, *ids, *tail]).encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "little")
