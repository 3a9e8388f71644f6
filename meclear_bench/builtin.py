"""The built-in case set shipped with the package (synthetic, simulated world).

``meclear bench`` runs on it when no case file and no LoCoMo data are given. The cases are
written for this package (no LoCoMo text): short conversation-like memory banks about a few
invented people, covering the direct, redundant, joint and clean structures, the three
fault types, a max-aggregation plateau case (ties broken per trial: a coin flip) and cases
whose reader samples (temperature > 0). As in the LoCoMo build, a background memory of
every case weakly supports the right answer and the reader abstains unless an answer's
support beats ``abstain_weight``; in four cases the gold memory alone is too thin and the
two supporting memories are needed, so deleting them needlessly makes the answer wrong.
Every case passes :func:`~meclear_bench.verify.verify_case`.
"""

from __future__ import annotations

from importlib.resources import files

from .cases import BenchCase, parse_case_lines

__all__ = ["BUILTIN_CASES_RESOURCE", "load_builtin_cases"]

BUILTIN_CASES_RESOURCE = "data/builtin_cases.jsonl"
"""Path of the case file inside the ``meclear_bench`` package."""


def load_builtin_cases() -> list[BenchCase]:
    """The shipped cases.

    Returns:
        The built-in cases.

    Raises:
        ValueError: The packaged file is corrupt.

    Example:
        >>> from meclear_bench import load_builtin_cases
        >>> len(load_builtin_cases()) > 0
        True
    """
    text = files(__package__).joinpath(BUILTIN_CASES_RESOURCE).read_text(encoding="utf-8")
    parsed = parse_case_lines(text.splitlines())
    if parsed.errors:
        lines = ", ".join(f"line {e.line}: {e.error}" for e in parsed.errors[:3])
        raise ValueError(f"corrupt built-in case file ({lines})")
    return parsed.cases
