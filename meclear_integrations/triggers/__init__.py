"""Trigger policies: when a query's retrieved context is cleared (framework-free).

``Always()``, ``WhenJudgeFails()`` (today's early exit, explicit), ``Sampling(rate)``,
``EveryN(n)``, ``EverySeconds(t)``, ``TokenBudget(max_tokens)``, ``OnNegativeFeedback(...)``
and ``OnKnownHarm(ledger)`` compose with ``|`` and ``&``. A declined query costs no model
call and comes back unchanged with ``status="skipped"`` (:func:`skipped_report`).
"""

from typing import TYPE_CHECKING

from ..core.lazy import lazy_exports

if TYPE_CHECKING:
    from .base import AllOf, AnyOf, Trigger, TriggerContext, TriggerDecision
    from .feedback import OnKnownHarm, OnNegativeFeedback
    from .policies import Always, EveryN, EverySeconds, Sampling, WhenJudgeFails
    from .token_budget import TokenBudget

__all__ = [
    "AllOf",
    "Always",
    "AnyOf",
    "EveryN",
    "EverySeconds",
    "OnKnownHarm",
    "OnNegativeFeedback",
    "Sampling",
    "TokenBudget",
    "Trigger",
    "TriggerContext",
    "TriggerDecision",
    "WhenJudgeFails",
]

_LAZY = {
    **dict.fromkeys(
        [
            "AllOf",
            "AnyOf",
            "Trigger",
            "TriggerContext",
            "TriggerDecision",
        ],
        ".base",
    ),
    **dict.fromkeys(
        [
            "OnKnownHarm",
            "OnNegativeFeedback",
        ],
        ".feedback",
    ),
    **dict.fromkeys(
        [
            "Always",
            "EveryN",
            "EverySeconds",
            "Sampling",
            "WhenJudgeFails",
        ],
        ".policies",
    ),
    "TokenBudget": ".token_budget",
}
"""Each lazily exported name's module."""

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
