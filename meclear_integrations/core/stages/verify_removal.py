"""Verifying one removal, M minus ``cleared`` against M (Eq. 18-19), under the run's rule.

The rule is the paper's (T trials, Eq. 18-19 and Eq. 20's admissibility) or the sequential
one (``core.verification``); the prior, recency and framing stages verify their single
candidates here, and the clearing stage builds its rule with :func:`verifier`.

References:
    MeClear (Yang, Sun et al., 2026, arXiv:2609.09115), Eq. 18-20.
"""

from __future__ import annotations

from ..clearance import candidate_coalition, select_candidate
from ..config import ClearanceConfig
from ..verification import SequentialVerifier
from .steps import Evaluate, Run, Steps, want

__all__ = ["scoped_admits", "verifier", "verify_removal"]


def verifier(config: ClearanceConfig) -> SequentialVerifier:
    """The sequential verification rule of ``config``.

    Args:
        config: the run's settings (``trials``, ``max_trials``, ``success_threshold``,
            ``recovery_rate``, ``delta``, ``exit_rate``).

    Returns:
        The verifier.
    """
    return SequentialVerifier(
        trials=config.trials,
        max_trials=config.verification.max_trials,
        success_threshold=config.verification.success_threshold,
        recovery_rate=config.verification.recovery_rate,
        delta=config.verification.delta,
        exit_rate=config.verification.exit_rate,
    )


def verify_removal(
    run: Run, cleared: list[int], trials_first: bool = False
) -> Steps[tuple[bool, bool]]:
    """Verify M minus ``cleared`` against M (Eq. 18-19): (recovered, admissible).

    ``trials_first``: T trials before the rule's first ask (a put-back that fails is
    settled there; one that passes goes on to the rule's recovery test). For a scoped
    candidate (``run.prior_first``) recovery admits it (``core.prior``).
    """
    cfg, game = run.config, run.game
    everything = game.full
    coalition = candidate_coalition(game.k, cleared)
    if cfg.verification.rule == "sequential":
        rule = verifier(cfg)
        if trials_first and game.trials_of(coalition) < cfg.trials:
            yield Evaluate([(coalition, cfg.trials)])
        while plan := rule.plan(game, [everything, coalition]):
            yield Evaluate(plan)
        selection = rule.select(game, [everything, coalition])
        passed = bool(selection.recovered[1])
        return passed, (
            scoped_admits(run, cleared, passed) if run.prior_first else selection.selected == 1
        )
    yield Evaluate(want(([everything, coalition], cfg.trials)))
    _, _, recovered, admissible = select_candidate(
        game, [[], cleared], cfg.verification.success_threshold
    )
    passed = bool(recovered[1])
    return passed, (scoped_admits(run, cleared, passed) if run.prior_first else admissible[1])


def scoped_admits(run: Run, cleared: list[int], passed: bool) -> bool:
    """A scoped candidate: M minus it recovers, or every member is settled (``core.prior``)."""
    return passed or (bool(cleared) and set(cleared) <= run.prior_settled)
