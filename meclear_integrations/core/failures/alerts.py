"""Warnings a user sees when clearance quietly did less than asked.

Every warning is a :class:`MeClearWarning` (a ``UserWarning``), so the standard
``warnings`` filters silence or escalate them::

    import warnings
    from meclear_integrations.core.failures.alerts import FailOpenWarning

    warnings.filterwarnings("ignore", category=FailOpenWarning)  # silence
    warnings.filterwarnings("error", category=FailOpenWarning)   # raise instead

- :class:`FailOpenWarning`: a query failed open (the context came back unchanged)
  because of a transient failure (timeouts, 429, 5xx, an unreadable reply after retries,
  a budget, the circuit breaker). Issued once per reason per component instance; every
  occurrence is also logged at WARNING on ``meclear_integrations``.
- :class:`ReferenceKeyWarning`: a query's config carries what looks like a reference
  answer under a key the integration does not read, so it ran reference-free.

:class:`WarnOnce` keeps the "once per reason" memory of one component instance.
"""

from __future__ import annotations

import logging
import threading
import warnings

__all__ = ["FailOpenWarning", "MeClearWarning", "ReferenceKeyWarning", "WarnOnce"]

logger = logging.getLogger("meclear_integrations")


class MeClearWarning(UserWarning):
    """Base class of every warning issued by meclear-integrations."""


class FailOpenWarning(MeClearWarning):
    """A query failed open: its context was returned unchanged (see ``reason``)."""


class ReferenceKeyWarning(MeClearWarning):
    """A likely reference answer sits under a key the integration does not read."""


class WarnOnce:
    """Issues each (category, key) warning at most once for its owner (thread-safe)."""

    def __init__(self) -> None:
        self._seen: set[tuple[type[Warning], str]] = set()
        self._lock = threading.Lock()

    def __call__(
        self,
        key: str,
        message: str,
        category: type[Warning] = FailOpenWarning,
        *,
        log: bool = True,
        stacklevel: int = 3,
    ) -> bool:
        """Log ``message`` (always, unless ``log=False``) and warn on the first ``key``.

        Returns True when the warning was issued now.
        """
        if log:
            logger.warning(message)
        with self._lock:
            first = (category, key) not in self._seen
            self._seen.add((category, key))
        if first:
            warnings.warn(message, category, stacklevel=stacklevel)
        return first

    def reset(self) -> None:
        """Forget what was warned (the next occurrence of each key warns again)."""
        with self._lock:
            self._seen.clear()
