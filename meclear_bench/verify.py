"""Causal verification of a case (the paper's Appendix D protocol).

A case is verified on its own evaluator (the simulated world's) or on any evaluator given
(real models).

With ``G`` the context without the targets and two trials per coalition:

- every case: ``G`` is correct in both trials (removing the targets recovers the answer);
- ``clean``: no targets, and the full context is correct in both trials;
- ``direct`` (one target F): ``G + F`` is incorrect in both trials;
- ``redundant`` (F1, F2): ``G + F1`` and ``G + F2`` each fail (not correct in both trials:
  each fault alone sustains the failure) and ``G + F1 + F2`` fails;
- ``joint`` (F1, F2): ``G + F1`` and ``G + F2`` are each correct in both trials, while
  ``G + F1 + F2`` fails.

"Fails" is the negation of the recovery predicate (both trials correct), so a flat plateau
(a tie answered right in one trial of two) counts as a failure, as in the paper's Table 1.
The memory texts must also be distinguishable: none may contain another, so a reader that
recognises memories by their text (:class:`~meclear_integrations.simulation.TextReader`)
sees exactly the coalition.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Appendix D.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from meclear_integrations.core.memory import Memory

from .cases import BenchCase

__all__ = ["VERIFY_TRIALS", "Verification", "Verifier", "verify_case", "verify_each"]

VERIFY_TRIALS = 2
"""Trials per coalition, as in the paper ("correct in both trials")."""


class Verification(BaseModel):
    """Outcome of verifying one case."""

    model_config = ConfigDict(frozen=True)

    ok: bool
    """Whether the case shows its structure's causal signature."""
    reason: str | None = None
    """Why it does not (a short snake_case code), ``None`` when ``ok``."""
    signature: dict[str, float] = Field(default_factory=dict)
    """Mean score over the trials of G, G+F1, G+F2 and G+M (where they apply)."""


def _ambiguous_texts(case: BenchCase) -> bool:
    texts = [m.text for m in case.memories]
    return any(
        i != j and (not a or a in b) for i, a in enumerate(texts) for j, b in enumerate(texts)
    )


def verify_case(
    case: BenchCase,
    *,
    trials: int = VERIFY_TRIALS,
    evaluate: Callable[[tuple[Memory, ...], int], float] | None = None,
) -> Verification:
    """Check that ``case`` shows the causal signature of its ``structure``.

    Coalitions are scored by ``evaluate`` (default: the case's simulated world with the
    exact-match judge).

    Args:
        case: The case to verify.
        trials: The trials per coalition.
        evaluate: ``evaluate(coalition, trial) -> score`` (None: the simulated world).

    Returns:
        Whether the signature holds, with the scores that decided it.

    Example:
        >>> from meclear_bench import load_builtin_cases, verify_case
        >>> verify_case(load_builtin_cases()[0]).ok
        True
    """
    evaluate = evaluate if evaluate is not None else case.evaluator()
    context = case.context()

    def scores(drop: set[str]) -> list[float]:
        coalition: tuple[Memory, ...] = tuple(m for m in context if m.id not in drop)
        return [evaluate(coalition, t) for t in range(trials)]

    targets = list(case.targets)
    signature: dict[str, float] = {}

    def mean(name: str, values: list[float]) -> list[float]:
        signature[name] = sum(values) / len(values)
        return values

    def verdict(reason: str | None) -> Verification:
        return Verification(ok=reason is None, reason=reason, signature=signature)

    if _ambiguous_texts(case):
        return verdict("ambiguous_texts")
    clean = mean("G", scores(set(targets)))
    full = mean("G+M", scores(set()))
    if not all(s == 1.0 for s in clean):
        return verdict("clean_incorrect")
    structure = case.structure
    expected = {"clean": 0, "direct": 1, "redundant": 2, "joint": 2}
    if structure not in expected:
        return verdict("unknown_structure")
    if len(targets) != expected[structure]:
        return verdict("wrong_target_count")
    if structure == "clean":
        return verdict(None if all(s == 1.0 for s in full) else "clean_incorrect")
    if structure == "direct":
        return verdict(None if not any(full) else "direct_not_failing")
    first, second = targets
    alone = [
        mean("G+F1", scores({second})),
        mean("G+F2", scores({first})),
    ]
    passes = [all(s == 1.0 for s in values) for values in alone]
    if all(s == 1.0 for s in full):
        return verdict(f"{structure}_pair_harmless")
    if structure == "redundant":
        return verdict(None if not any(passes) else "redundant_fault_alone_harmless")
    return verdict(None if all(passes) else "joint_fault_alone_harmful")


Verifier = Callable[[Sequence[BenchCase]], list[Verification]]
"""Verifies a batch of cases (in order); a builder hands it as many cases as it can."""


def verify_each(cases: Sequence[BenchCase]) -> list[Verification]:
    """:func:`verify_case` on each case with its simulated world (the default verifier).

    Args:
        cases: The cases.

    Returns:
        One verification per case.
    """
    return [verify_case(case) for case in cases]
