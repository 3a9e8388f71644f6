"""HarmLedger: the append-only record of every clearance decision, and what it is used for.

``HarmLedger()`` opens (and creates) an SQLite file, ``HarmLedger("postgresql://...")`` a
PostgreSQL database shared by many replicas (see ``database``); the schema is brought up to
date on open (``migrations``). Every method is safe to call from many threads and
processes at once; ``a``-prefixed twins run the same work in a worker thread for asyncio
callers.

What it records (:meth:`record`): per decision the time, the query id (a hash) and, unless
``store_text=False`` (the privacy switch), the redacted query and memory texts, every
memory's id, content hash, LOO effect, Shapley value and interval, harmful and cleared
flags, the verified candidates, recovery, the success signal, model names, cost and the
tracing run id. Texts (queries, corrections, reasons, model names, free-form extras) pass
through ``core.redaction`` first: no API keys.

What it is used for: :meth:`scoped_harm` (memories verified harmful for this question or
one like it, read in O(K) from state kept up to date on write, ``scope_state``) and
:meth:`prior_candidate` (the same, offered to the engine as a prior candidate),
:meth:`feedback`, :meth:`restore` and :meth:`exonerate`, :meth:`review` (proposals for a
person) and :meth:`history`. The history tables are append-only; only the derived state
table is updated in place. Nothing is ever deleted, neither in the ledger nor in any
memory store.

The concerns live in their own modules, composed here: ``recording`` (writing decisions),
``harm`` (scoped harm and prior candidates), ``feedback`` (feedback, restores,
exonerations), ``reviewing`` (review proposals), ``lookups`` (runs, history, counts), over
the shared state of ``base``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from os import PathLike
from typing import Any

from ..core.errors import ConfigurationError
from .base import Clock, LedgerLookupError
from .database import create_ledger_engine, display_url, ledger_url
from .feedback import FeedbackLog
from .harm import HarmLookups
from .lookups import Lookups
from .migrations import check_version, migrate
from .recording import Recording
from .reviewing import Reviewing
from .scope import EMBEDDING_THRESHOLD, LEXICAL_THRESHOLD
from .settlement import REVERIFY_QUIET_SECONDS

__all__ = ["HarmLedger", "LedgerLookupError"]


class HarmLedger(Recording, FeedbackLog, Reviewing, Lookups, HarmLookups):
    """The harm ledger (module docstring).

    Args:
        url: A SQLAlchemy URL, a path (SQLite) or None (``MECLEAR_LEDGER_URL``, else
            ``./meclear-ledger.db``).
        namespace: Separates stores or applications sharing one database (memory ids are
            only unique within a store).
        store_text: Keep the redacted query and memory texts (the default), so review shows
            each memory's text and its questions and a feedback replays from its run alone.
            False is the privacy switch: only hashes are kept; review then reads texts from
            your store (``get_documents=``) and replay needs ``query=`` (or the trace) and
            your store's texts.
        query_key: Keys the query hash (HMAC) so short questions cannot be guessed back.
        create: False refuses a database that is not at the current schema version instead
            of migrating it.
        clock: Returns the current UTC time (inject it in tests).
        lexical_threshold: Jaccard of two questions' content words at or above which a
            harm verified on one applies to the other, when their names also agree
            (``scope``).
        embedding_threshold: The cosine threshold when both questions have embeddings.
        reverify_quiet_seconds: After an ``upheld`` verdict, the question's challenges on
            the same context within this many seconds are covered by it (default a day;
            ``settlement.pending_challenges``): the routine replay, the stats and the
            background worker's re-verification read it.
        **engine_kwargs: Passed to SQLAlchemy's ``create_engine``.

    Raises:
        ConfigurationError: ``namespace`` is empty, a threshold is outside (0, 1], or
            ``reverify_quiet_seconds`` is negative.
        SchemaVersionError: The database is at another schema version and cannot be
            migrated (or ``create=False``).

    Example:
        >>> from meclear_integrations.ledger import HarmLedger
        >>> with HarmLedger("sqlite://", namespace="support-bot") as ledger:  # in memory
        ...     ledger.namespace
        'support-bot'
    """

    def __init__(
        self,
        url: str | PathLike[str] | None = None,
        *,
        namespace: str = "default",
        store_text: bool = True,
        query_key: bytes | str | None = None,
        create: bool = True,
        clock: Clock | None = None,
        lexical_threshold: float = LEXICAL_THRESHOLD,
        embedding_threshold: float = EMBEDDING_THRESHOLD,
        reverify_quiet_seconds: float = REVERIFY_QUIET_SECONDS,
        **engine_kwargs: Any,
    ) -> None:
        if not namespace:
            raise ConfigurationError("namespace must be a non-empty string")
        for name, value in (
            ("lexical_threshold", lexical_threshold),
            ("embedding_threshold", embedding_threshold),
        ):
            if not 0.0 < float(value) <= 1.0:
                raise ConfigurationError(f"{name} must be in (0, 1]")
        self.lexical_threshold = float(lexical_threshold)
        self.embedding_threshold = float(embedding_threshold)
        if not float(reverify_quiet_seconds) >= 0.0:
            raise ConfigurationError("reverify_quiet_seconds must be at least 0")
        self.reverify_quiet_seconds = float(reverify_quiet_seconds)
        self.url = ledger_url(url)
        self.namespace = namespace
        self.store_text = store_text
        self._query_key = query_key
        self._clock: Clock = clock or (lambda: datetime.now(UTC))
        self.engine = create_ledger_engine(self.url, **engine_kwargs)
        try:
            if create:
                migrate(self.engine)
            else:
                check_version(self.engine)
        except BaseException:
            self.engine.dispose()
            raise

    def __repr__(self) -> str:
        return f"HarmLedger({display_url(self.url)!r}, namespace={self.namespace!r})"

    def close(self) -> None:
        """Release the database connections."""
        self.engine.dispose()

    def __enter__(self) -> HarmLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
