"""Live-use plumbing of model calls: limits, breaker, retries, usage, cost, payloads."""
