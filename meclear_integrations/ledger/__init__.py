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

from ..hashing import content_hash, query_hash
from .database import DEFAULT_LEDGER_URL, LEDGER_URL_ENV, display_url, ledger_url
from .migrations import SCHEMA_VERSION, SchemaVersionError
from .records import (
    CandidateRecord,
    FeedbackRecord,
    MemoryEvent,
    MemoryHistory,
    MemoryObservation,
    MemoryRecord,
    RunMode,
    RunRecord,
    SuccessSignal,
)
from .replay import (
    ReplayError,
    ReplayResult,
    areplay_feedback,
    replay_feedback,
    replay_pending,
)
from .review import ReviewProposal, proposals_csv, proposals_json, wilson_lower_bound
from .scope import EMBEDDING_THRESHOLD, LEXICAL_THRESHOLD, ScopedHarm
from .store import HarmLedger, LedgerLookupError

__all__ = [
    "DEFAULT_LEDGER_URL",
    "EMBEDDING_THRESHOLD",
    "LEDGER_URL_ENV",
    "LEXICAL_THRESHOLD",
    "SCHEMA_VERSION",
    "CandidateRecord",
    "FeedbackRecord",
    "HarmLedger",
    "LedgerLookupError",
    "MemoryEvent",
    "MemoryHistory",
    "MemoryObservation",
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
    "display_url",
    "ledger_url",
    "proposals_csv",
    "proposals_json",
    "query_hash",
    "replay_feedback",
    "replay_pending",
    "wilson_lower_bound",
]
