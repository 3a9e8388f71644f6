"""Trigger policies: when a query's retrieved context is cleared (framework-free).

``Always()``, ``WhenJudgeFails()`` (today's early exit, explicit), ``Sampling(rate)``,
``EveryN(n)``, ``EverySeconds(t)``, ``TokenBudget(max_tokens)``, ``OnNegativeFeedback(...)``
and ``OnKnownHarm(ledger)`` compose with ``|`` and ``&``. A declined query costs no model
call and comes back unchanged with ``status="skipped"`` (:func:`skipped_report`).
"""

from .base import AllOf, AnyOf, Trigger, TriggerContext, TriggerDecision
from .feedback import OnKnownHarm, OnNegativeFeedback
from .policies import Always, EveryN, EverySeconds, Sampling, WhenJudgeFails
from .skip import skipped_report
from .token_budget import BudgetFit, TokenBudget, approximate_tokens, fit_to_budget

__all__ = [
    "AllOf",
    "Always",
    "AnyOf",
    "BudgetFit",
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
    "approximate_tokens",
    "fit_to_budget",
    "skipped_report",
]
