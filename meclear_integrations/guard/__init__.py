"""What runs around one clearance in production: gate, live bounds, component policy.

Plumbing of the integrations: nothing here is called by users (``__all__`` is empty).
"""

__all__: list[str] = []
