"""Why a benchmark run stops early: a spent budget, or a provider that refuses every call.

A model call raises a :class:`RunStopped` subclass; the runner recognises it anywhere in
an exception's chain (the engine wraps evaluator errors), stops starting cases, keeps every
outcome already computed, and labels the results partial with the reason.
"""

from __future__ import annotations

from meclear_integrations.core.failures.faults import exception_chain

__all__ = ["BudgetReached", "EndpointUnreachable", "ProviderRejected", "RunStopped", "stop_cause"]


class RunStopped(Exception):
    """Stops the whole run (never recorded as one case's failure).

    Args:
        message: What stopped the run.
        reason: A short code (``max_calls``, ``max_tokens``, ``http_401``...).
    """

    fatal: bool = False
    """True when the run stops on an error the user must fix (not a budget)."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class BudgetReached(RunStopped):
    """``--max-calls`` or ``--max-tokens`` is spent: no further provider call starts."""


class ProviderRejected(RunStopped):
    """The provider refused a call in a way no retry heals.

    A bad key, an unknown model, a permission denied: every later call would fail the same way.
    """

    fatal = True


class EndpointUnreachable(RunStopped):
    """The model's endpoint cannot be reached and no call of the run ever reached it.

    A dead or mistyped ``--base-url``: every call would fail the same way.
    """

    fatal = True


def stop_cause(exc: BaseException) -> RunStopped | None:
    """The :class:`RunStopped` behind ``exc`` (itself or in its chain), if any.

    Args:
        exc: The error.

    Returns:
        The cause, or None.
    """
    for link in exception_chain(exc, depth=16):
        if isinstance(link, RunStopped):
            return link
    return None
