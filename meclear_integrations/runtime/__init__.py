"""Live-use plumbing of model calls: limits, breaker, retries, usage, cost, payloads.

What a user passes in is the shared limiter and the circuit breaker; the rest is imported
from its own module by the integrations.
"""

from .breaker import CircuitBreaker
from .limiter import CallLimiter

__all__ = ["CallLimiter", "CircuitBreaker"]
