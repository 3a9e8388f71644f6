"""Verifying one removal, M minus ``cleared`` against M (Eq. 18-19), under the run's rule.

The run's rule (``core.verification.rule``) verifies; the prior and framing stages verify
their single candidates here.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 18-20.
"""

from __future__ import annotations

from ..verification.rule import verifier
from .steps import Run, Steps, evaluated

__all__ = ["scoped_admits", "verifier", "verify_removal"]


def verify_removal(
    run: Run, cleared: list[int], trials_first: bool = False
) -> Steps[tuple[bool, bool]]:
    """Verify M minus ``cleared`` against M (Eq. 18-19): (recovered, admissible).

    ``trials_first``: T trials before the rule's first ask (a put-back that fails is
    settled there; one that passes goes on to the rule's recovery test). For a scoped
    candidate (``run.prior_first``) recovery admits it (``core.prior``).
    """
    selection = yield from evaluated(run.rule.removal(run.game, cleared, trials_first))
    passed = bool(selection.recovered[1])
    return passed, (
        scoped_admits(run, cleared, passed) if run.prior_first else selection.selected == 1
    )


def scoped_admits(run: Run, cleared: list[int], passed: bool) -> bool:
    """A scoped candidate: M minus it recovers, or every member is settled (``core.prior``)."""
    return passed or (bool(cleared) and set(cleared) <= run.prior_settled)
