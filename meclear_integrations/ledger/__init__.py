"""The harm ledger: an append-only database of clearance decisions (SQLite or PostgreSQL).

Needs the ``ledger`` extra (SQLAlchemy); PostgreSQL also needs ``postgres`` (psycopg 3)::

    pip install 'meclear-integrations[ledger]'      # SQLite file
    pip install 'meclear-integrations[postgres]'    # PostgreSQL shared by replicas

See :class:`HarmLedger` for what is recorded and how it is used (scoped harm and prior
candidates, feedback, restores, review), ``scope`` for which questions a verified harm
applies to, ``migrations`` for the versioned schema and ``database`` for concurrent
writers.
"""

try:
    import sqlalchemy  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "the harm ledger needs SQLAlchemy: pip install 'meclear-integrations[ledger]'"
    ) from exc

from ..runtime.hashing import content_hash
from .migrations import SchemaVersionError
from .records import FeedbackRecord, MemoryHistory, MemoryRecord, RunMode, RunRecord, SuccessSignal
from .replay import (
    ReplayError,
    ReplayResult,
    areplay_feedback,
    replay_feedback,
    replay_pending,
)
from .review import ReviewProposal
from .scope import ScopedHarm
from .store import HarmLedger, LedgerLookupError

__all__ = [
    "FeedbackRecord",
    "HarmLedger",
    "LedgerLookupError",
    "MemoryHistory",
    "MemoryRecord",
    "ReplayError",
    "ReplayResult",
    "ReviewProposal",
    "RunMode",
    "RunRecord",
    "SchemaVersionError",
    "ScopedHarm",
    "SuccessSignal",
    "areplay_feedback",
    "content_hash",
    "replay_feedback",
    "replay_pending",
]
