"""Rule judges against a reference: normalised exact match and token F1 (no LLM)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

from ..core.errors import ConfigurationError
from ..core.memory import Memory
from .base import BaseJudge, JudgeVerdict
from .equivalence import normalize_answer
from .errors import MissingReferenceError

__all__ = ["ExactMatchJudge", "TokenF1Judge", "token_f1"]


def _require(reference: str | None, judge: str) -> str:
    if reference is None:
        raise MissingReferenceError(
            f"{judge} needs a reference answer; pass reference=... (or use a reference-free judge)"
        )
    return reference


class ExactMatchJudge(BaseJudge):
    """1 when the SQuAD-normalised answer equals the normalised reference, else 0.

    ``mode="contains"`` instead scores 1 when the normalised reference occurs, on word
    boundaries, inside the normalised answer (for agents that answer in a sentence).

    Args:
        mode: ``"exact"`` or ``"contains"``.

    Example:
        >>> from meclear_integrations.judges import ExactMatchJudge
        >>> ExactMatchJudge().score("When?", "December 2023.", reference="december 2023").score
        1.0
    """

    requires_reference = True

    def __init__(self, *, mode: Literal["exact", "contains"] = "exact") -> None:
        self.mode = mode

    def score(
        self,
        question: str,
        answer: str,
        *,
        reference: str | None = None,
        context: Sequence[Memory] | None = None,
    ) -> JudgeVerdict:
        """Score ``answer`` to ``question`` (as :meth:`Judge.score`)."""
        ref = normalize_answer(_require(reference, "ExactMatchJudge"))
        got = normalize_answer(answer)
        contained = bool(ref) and f" {ref} " in f" {got} "
        hit = got == ref if self.mode == "exact" else contained
        return JudgeVerdict(score=1.0 if hit else 0.0, parsed_by="rule")


def token_f1(answer: str, reference: str) -> float:
    """SQuAD token F1 between the normalised answer and reference.

    Args:
        answer: The agent's answer.
        reference: The gold answer.

    Returns:
        The F1 in [0, 1].

    Example:
        >>> from meclear_integrations.judges.match import token_f1
        >>> token_f1("in December 2023", "December 2023")
        0.8
    """
    got, ref = normalize_answer(answer).split(), normalize_answer(reference).split()
    if not got or not ref:
        return float(got == ref)
    common = sum((Counter(got) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(got), common / len(ref)
    return 2 * precision * recall / (precision + recall)


class TokenF1Judge(BaseJudge):
    """Token F1 (SQuAD) as the score; ``threshold`` turns it into 0/1 when set.

    Args:
        threshold: Scores at or above it become 1, below it 0; None keeps the F1.

    Raises:
        ConfigurationError: ``threshold`` is outside [0, 1].

    Example:
        >>> from meclear_integrations.judges import TokenF1Judge
        >>> TokenF1Judge().score("When?", "in December 2023", reference="December 2023").score
        0.8
    """

    requires_reference = True

    def __init__(self, *, threshold: float | None = None) -> None:
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise ConfigurationError("threshold must lie in [0, 1]")
        self.threshold = threshold

    def score(
        self,
        question: str,
        answer: str,
        *,
        reference: str | None = None,
        context: Sequence[Memory] | None = None,
    ) -> JudgeVerdict:
        """Score ``answer`` to ``question`` (as :meth:`Judge.score`)."""
        f1 = token_f1(answer, _require(reference, "TokenF1Judge"))
        if self.threshold is not None:
            f1 = 1.0 if f1 >= self.threshold else 0.0
        return JudgeVerdict(score=f1, parsed_by="rule")
