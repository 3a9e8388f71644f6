"""The simulated evidence world: a documented stand-in for an LLM task agent.

This is a simulation, not a model. A world maps memory ids to claims
``{answer, weight}``; memories without a claim are background. For a coalition S the
reader computes support(a) over the present memories claiming a (sum of weights, or their
maximum when ``aggregate == "max"``), then:

- no support at all: it answers ``abstain``;
- ``temperature == 0``: it answers argmax support, ties broken uniformly at random;
- ``temperature > 0``: it samples a with probability proportional to exp(support(a) / T).

Randomness is seeded from (case, coalition, trial), so every run is reproducible. Scores
come from :func:`exact_match_score`: 1 when the normalised answer equals the normalised
reference, else 0.
"""

from __future__ import annotations

import hashlib
import math
import re
import string
from collections.abc import Iterable, Mapping
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Claim", "EvidenceWorld", "exact_match_score", "normalize_answer"]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """Lower-case, drop punctuation and articles, collapse white space (SQuAD-style)."""
    text = text.lower().translate(_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match_score(answer: str, reference: str) -> float:
    """1.0 when the normalised answer equals the normalised reference, else 0.0."""
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

    def support(self, memory_ids: Iterable[str]) -> dict[str, float]:
        """support(a) for every answer claimed by a present memory."""
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

    def distribution(self, memory_ids: Iterable[str]) -> dict[str, float]:
        """The reader's answer distribution for a coalition (exact, no sampling)."""
        support = self.support(memory_ids)
        if not support:
            return {self.abstain: 1.0}
        answers = sorted(support)
        if self.temperature == 0:
            top = max(support.values())
            winners = [a for a in answers if math.isclose(support[a], top, abs_tol=1e-12)]
            return {a: 1.0 / len(winners) for a in winners}
        logits = np.array([support[a] / self.temperature for a in answers])
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        return {a: float(p) for a, p in zip(answers, probs, strict=True)}

    def answer(self, memory_ids: Iterable[str], *, case_id: str = "", trial: int = 0) -> str:
        """One simulated agent answer, seeded by (case, coalition, trial)."""
        ids = sorted(set(memory_ids))
        dist = self.distribution(ids)
        if len(dist) == 1:
            return next(iter(dist))
        answers = list(dist)
        rng = np.random.default_rng(_seed(case_id, ids, trial))
        return str(answers[int(rng.choice(len(answers), p=list(dist.values())))])

    def expected_score(self, memory_ids: Iterable[str], reference: str) -> float:
        """E[score] of a coalition under the exact-match judge."""
        return sum(
            p for a, p in self.distribution(memory_ids).items() if exact_match_score(a, reference)
        )

    @classmethod
    def from_claims(
        cls, claims: Mapping[str, tuple[str, float]], **kwargs: object
    ) -> EvidenceWorld:
        """Build from ``{memory_id: (answer, weight)}``."""
        return cls(
            claims={mid: Claim(answer=a, weight=w) for mid, (a, w) in claims.items()},
            **kwargs,  # type: ignore[arg-type]
        )


def _seed(case_id: str, ids: list[str], trial: int) -> int:
    key = "\x1f".join([case_id, *ids, str(trial)]).encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "little")
