"""Live-use plumbing of model calls: limits, breaker, retries, usage, cost, payloads.

What a user passes in is the shared limiter and the circuit breaker; the rest is imported
from its own module by the integrations.
"""

from typing import TYPE_CHECKING

from ..core.lazy import lazy_exports

if TYPE_CHECKING:
    from .breaker import CircuitBreaker
    from .limiter import CallLimiter

__all__ = ["CallLimiter", "CircuitBreaker"]

_LAZY = {
    "CircuitBreaker": ".breaker",
    "CallLimiter": ".limiter",
}
"""Each lazily exported name's module."""

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
